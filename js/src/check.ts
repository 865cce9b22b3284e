/**
 * The programmatic API: `check(scenarioPath)` loads a scenario, builds its world, hands the
 * engine the bounds and invariants, and runs what the engine plans until it has a verdict.
 * The CLI and the tests are thin callers of this. Loading happens in Node whatever the runtime;
 * the exploration (`explore.ts`) runs here, or inside workerd with `runtime: "workerd"`.
 */

import { createEngine, type EngineStrategy } from "./engine.ts";
import { InputError } from "./errors.ts";
import { type CheckResult, explore, type ResolvedBounds, type SchemaFile, type Shard } from "./explore.ts";
import { loadScenario } from "./load/scenario.ts";
import { readSchema } from "./load/schema.ts";
import { type Progress, watchRuns } from "./progress.ts";
import "./sim/node-globals.ts";
import { inUtc } from "./sim/globals.ts";
import { buildWorld, type World } from "./sim/world.ts";
import { withWorkerRejections } from "./worker-rejections.ts";

export type { CheckResult, ResolvedBounds } from "./explore.ts";

export type Runtime = "node" | "workerd";
export const RUNTIMES: readonly Runtime[] = ["node", "workerd"];
export const STRATEGIES: readonly EngineStrategy[] = ["exhaustive", "random", "pct", "auto"];

export interface CheckOptions {
  /** Overrides the scenario's seed. */
  readonly seed?: string;
  /** Runs exactly this run seed (printed by an earlier VIOLATED report) instead of exploring. */
  readonly replay?: string;
  /** Overrides the scenario's `bounds.budgetMs`. */
  readonly budgetMs?: number;
  /** Explores shard `index` (from 0) of `count` of the tree; merge the results with `mergeResults`. */
  readonly shard?: Shard;
  /** Where the Worker code runs: Node (default) or workerd, through Miniflare. */
  readonly runtime?: Runtime;
  /**
   * How the tree of schedules is explored (default `auto`): `exhaustive` (depth first with
   * partial-order reduction), `random` (seeded random walks), `pct` (Probabilistic Concurrency
   * Testing), `auto` (exhaustive, switching to PCT when the tree is clearly larger than the budget
   * covers). Sampling never answers BOUNDED.
   */
  readonly strategy?: EngineStrategy;
  /** PCT's bug depth d (default 3): d - 1 priority change points per run. */
  readonly pctDepth?: number;
  /** Partial-order reduction in exhaustive search (default true); off only to compare. */
  readonly partialOrderReduction?: boolean;
  /**
   * Called after every run with how far the check has come, for a progress display. It runs
   * between runs, outside the simulation, and must not throw. Not called with workerd.
   */
  readonly onProgress?: (p: Progress) => void;
}

export const DEFAULT_BOUNDS: ResolvedBounds = {
  maxFaultsPerRun: 1,
  maxRedeliveries: 3,
  maxConcurrentInvocations: 1,
  budgetMs: 10_000,
};

/**
 * The check this process ran last, which the next one waits for. While a run is active it owns the
 * process's globals (the clock, randomness, timers, `fetch`, `console` and the zone: sim/globals.ts),
 * and runs yield at every await: two checks at once (`Promise.all`, vitest's `describe.concurrent`)
 * would each run the other's Workers' calls and scripts, and answer with the other's errors or a
 * nondeterminism neither has. So checks in one process take turns; each one's budget starts when
 * its turn does. (A `--workers` thread is a realm of its own, with globals of its own.)
 */
let lastCheck: Promise<unknown> = Promise.resolve();

export function check(scenarioPath: string, options: CheckOptions = {}): Promise<CheckResult> {
  const turn = lastCheck.then(() => inUtc(() => checkNow(scenarioPath, options)));
  lastCheck = turn.catch(() => {});
  return turn;
}

async function checkNow(scenarioPath: string, options: CheckOptions): Promise<CheckResult> {
  // The options are checked before the scenario is loaded, which takes a bundle and an import.
  const runtime = options.runtime ?? "node";
  if (!RUNTIMES.includes(runtime)) {
    throw new InputError(undefined, `--runtime ${runtime}: the runtimes are ${RUNTIMES.join(" and ")}`);
  }
  const strategy = options.strategy ?? "auto";
  if (!STRATEGIES.includes(strategy)) {
    throw new InputError(undefined, `--strategy ${strategy}: the strategies are ${STRATEGIES.join(", ")}`);
  }
  const pctDepth = options.pctDepth ?? 3;
  if (!Number.isInteger(pctDepth) || pctDepth < 1 || pctDepth > 16) {
    throw new InputError(undefined, `--pct-depth must be a whole number from 1 to 16, not ${pctDepth}`);
  }
  const loaded = await loadScenario(scenarioPath);
  const { scenario } = loaded;
  const bounds: ResolvedBounds = {
    ...DEFAULT_BOUNDS,
    ...scenario.bounds,
    ...(options.budgetMs === undefined ? {} : { budgetMs: options.budgetMs }),
  };
  if (!Number.isSafeInteger(bounds.budgetMs) || bounds.budgetMs <= 0) {
    throw new InputError(
      undefined,
      `the budget must be a positive whole number of milliseconds, not ${bounds.budgetMs}`,
    );
  }
  const world = await buildWorld(loaded);
  const exploration = {
    world,
    seed: options.seed ?? scenario.seed ?? scenario.name,
    bounds,
    replay: options.replay,
    shard: options.shard,
    search: { strategy, pctDepth, partialOrderReduction: options.partialOrderReduction ?? true },
    schemas: readSchemas(world),
  };
  if (runtime === "workerd") {
    // Loaded only when asked for: Miniflare takes most of a second to import.
    const { exploreInWorkerd } = await import("./workerd/miniflare.ts");
    return exploreInWorkerd(exploration);
  }
  return withWorkerRejections((inRun) =>
    explore({ ...exploration, createEngine: watchRuns(createEngine, options.onProgress), inRun }),
  );
}

/** The SQL files of every `d1Schema` step, read here so that the exploration never reads files. */
function readSchemas(world: World): Map<string, SchemaFile[]> {
  const schemas = new Map<string, SchemaFile[]>();
  for (const step of world.scenario.setup ?? []) {
    if (step.kind !== "d1Schema" || schemas.has(step.file)) continue;
    schemas.set(step.file, readSchema(step.file));
  }
  return schemas;
}
