/**
 * The programmatic API: `check(scenarioPath)` loads a scenario, builds its world, hands the
 * engine the bounds and invariants, and runs what the engine plans until it has a verdict.
 * The CLI and the tests are thin callers of this.
 */

import { readFileSync } from "node:fs";
import type { Bounds } from "./cloudflare.ts";
import { httpEvents } from "./drivers/http.ts";
import { createEngine, type Engine, type EngineConfig, type FaultReport } from "./engine.ts";
import { InputError, shown } from "./errors.ts";
import { loadScenario } from "./load/scenario.ts";
import { activate, real } from "./sim/globals.ts";
import { Run } from "./sim/run.ts";
import { workersModule } from "./sim/workers-module.ts";
import { buildWorld, type World } from "./sim/world.ts";

export interface CheckOptions {
  /** Overrides the scenario's seed. */
  readonly seed?: string;
  /** Runs exactly this run seed (printed by an earlier VIOLATED report) instead of exploring. */
  readonly replay?: string;
  /** Overrides the scenario's `bounds.budgetMs`. */
  readonly budgetMs?: number;
}

export type ResolvedBounds = Required<Bounds>;

export const DEFAULT_BOUNDS: ResolvedBounds = {
  maxFaultsPerRun: 1,
  maxRedeliveries: 3,
  maxConcurrentInvocations: 1,
  budgetMs: 10_000,
};

/** Hard limits that hold whatever the budget: a check always ends. */
const RUNS_MAX = 1_000_000;
const SHRINK_RUNS_MAX = 2_000;

interface CheckHeader {
  readonly scenario: string;
  readonly file: string;
  readonly seed: string;
  readonly bounds: ResolvedBounds;
  readonly elapsedMs: number;
}

export type CheckResult = CheckHeader &
  (
    | { readonly verdict: "BOUNDED"; readonly runs: number }
    | { readonly verdict: "INCOMPLETE"; readonly runs: number; readonly reason: "budget" | "runs" }
    | {
        readonly verdict: "VIOLATED";
        readonly runs: number;
        readonly shrinkRuns: number;
        readonly invariant: string;
        readonly message: string;
        readonly runSeed: string;
        readonly eventsKept: readonly string[];
        readonly faults: readonly FaultReport[];
        readonly trace: readonly string[];
      }
    | { readonly verdict: "HELD"; readonly runSeed: string; readonly trace: readonly string[] }
  );

export async function check(scenarioPath: string, options: CheckOptions = {}): Promise<CheckResult> {
  const loaded = await loadScenario(scenarioPath);
  const { scenario } = loaded;
  const bounds: ResolvedBounds = {
    ...DEFAULT_BOUNDS,
    ...scenario.bounds,
    ...(options.budgetMs === undefined ? {} : { budgetMs: options.budgetMs }),
  };
  if (bounds.maxConcurrentInvocations !== 1) {
    throw new InputError(
      shown(loaded.file),
      `bounds.maxConcurrentInvocations is ${bounds.maxConcurrentInvocations}, but this version of eutaxy explores one invocation at a time: use 1`,
    );
  }
  const world = await buildWorld(loaded);
  const seed = options.seed ?? scenario.seed ?? scenario.name;
  const events = httpEvents(scenario.drive, `${world.main.name}.example.workers.dev`);

  const engine = startEngine(options, {
    seed,
    events: events.map((e) => e.id),
    maxFaultsPerRun: bounds.maxFaultsPerRun,
    maxRedeliveries: bounds.maxRedeliveries,
    budgetMs: bounds.budgetMs,
    runsMax: RUNS_MAX,
    shrinkRunsMax: SHRINK_RUNS_MAX,
    replay: options.replay,
    invariants: scenario.invariants.map((inv) => ({
      kind: inv.kind,
      name: inv.name,
      db: inv.rows.db,
      table: inv.rows.table,
      columns: inv.columns,
    })),
  });
  try {
    setUpDatabases(engine, world);
    probeModules(engine, world);

    const started = real.monotonicMs();
    for (;;) {
      const plan = engine.nextRun(real.monotonicMs() - started);
      if (!plan) break;
      await new Run(engine, world, events).execute(plan);
      engine.endRun();
    }
    const header: CheckHeader = {
      scenario: scenario.name,
      file: loaded.file,
      seed,
      bounds,
      elapsedMs: real.monotonicMs() - started,
    };
    const verdict = engine.verdict();
    switch (verdict.kind) {
      case "bounded":
        return { ...header, verdict: "BOUNDED", runs: verdict.runs };
      case "incomplete":
        return { ...header, verdict: "INCOMPLETE", runs: verdict.runs, reason: verdict.reason };
      case "held":
        return { ...header, verdict: "HELD", runSeed: verdict.runSeed, trace: verdict.trace };
      case "violated": {
        const { kind: _kind, ...rest } = verdict;
        return { ...header, verdict: "VIOLATED", ...rest };
      }
    }
  } finally {
    engine.free();
  }
}

/** Creates the engine; a run seed it cannot read is bad input, named as the option it came in. */
function startEngine(options: CheckOptions, config: EngineConfig): Engine {
  try {
    return createEngine(config);
  } catch (error) {
    if (options.replay !== undefined && /run seed/.test((error as Error).message)) {
      throw new InputError(undefined, `--replay: ${(error as Error).message}`);
    }
    throw error;
  }
}

/** Opens every D1 database, applies the scenario's schemas, and seals the post-setup state. */
function setUpDatabases(engine: Engine, world: World): void {
  for (const db of world.databases) engine.d1Open(db);
  for (const step of world.scenario.setup ?? []) {
    if (step.kind !== "d1Schema") continue;
    let sql: string;
    try {
      sql = readFileSync(step.file, "utf8");
    } catch {
      throw new InputError(shown(step.file), "no such file (named by d1Schema in the scenario)");
    }
    try {
      engine.d1Setup(step.db, sql);
    } catch (error) {
      throw new InputError(
        shown(step.file),
        `SQL error applying it to D1 ${step.db}: ${(error as Error).message}`,
      );
    }
  }
  try {
    engine.seal();
  } catch (error) {
    throw new InputError(shown(world.file), (error as Error).message);
  }
}

/** Loads every Worker module once before exploring, so one that throws at import is bad input. */
function probeModules(engine: Engine, world: World): void {
  const clockMs = engine.nowMs();
  const deactivate = activate({
    fillRandom: (buf) => engine.fillRandom("probe", buf),
    nowMs: () => clockMs,
  });
  try {
    for (const worker of world.workers) {
      let exports: Record<string, unknown>;
      try {
        exports = worker.module.instantiate({ "cloudflare:workers": workersModule(() => ({})) });
      } catch (error) {
        const what = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
        throw new InputError(shown(worker.entry), `the Worker threw at import: ${what}`);
      }
      if (worker === world.main && !hasFetch(exports.default)) {
        throw new InputError(
          shown(worker.entry),
          "the default export has no fetch handler, which the scenario's http driver calls",
        );
      }
    }
  } finally {
    deactivate();
  }
}

function hasFetch(value: unknown): boolean {
  if (typeof value === "function")
    return typeof (value.prototype as { fetch?: unknown })?.fetch === "function";
  return typeof (value as { fetch?: unknown } | undefined)?.fetch === "function";
}
