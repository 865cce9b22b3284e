/**
 * The wasm boundary, seen from the host. This is the only module that imports the engine built
 * by wasm-pack into `pkg/`; everything else in the host talks to the engine through the types
 * below. Every decision and every piece of per-run state (the decision tree, the schedule, the
 * random streams, the virtual clock, the D1 databases, the trace) lives in the engine; the host
 * only executes JavaScript and turns binding calls into effects.
 */

import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** What the engine is told once per check. */
export interface EngineConfig {
  /** The check's seed text; every run's random streams derive from it. */
  readonly seed: string;
  /** Event ids in the driver's order (`req-1`, `req-2`, …); events are addressed by index. */
  readonly events: readonly string[];
  readonly maxFaultsPerRun: number;
  readonly maxRedeliveries: number;
  readonly budgetMs: number;
  /** Upper bound on the runs a check makes, budget aside. */
  readonly runsMax: number;
  /** Upper bound on the runs the shrinker makes. */
  readonly shrinkRunsMax: number;
  /** A run seed: run exactly that schedule once instead of exploring. */
  readonly replay?: string | undefined;
  readonly invariants: readonly InvariantSpec[];
  /**
   * How many invocations of driver events may be live at once (default 1, at most 64). Above 1
   * the host calls `choose` before every step, and `decide` only for the step just chosen.
   */
  readonly maxConcurrentInvocations?: number | undefined;
  /**
   * How the tree of schedules is explored (default `exhaustive`): `exhaustive` (depth first,
   * with partial-order reduction), `random` (seeded random walks), `pct` (Probabilistic
   * Concurrency Testing), or `auto` (exhaustive; at two thirds of the budget, PCT if the tree
   * is clearly larger than the budget covers). Sampling never answers `bounded`.
   */
  readonly strategy?: EngineStrategy | undefined;
  /** PCT's bug depth d (default 3, 1 to 16): d - 1 priority change points per run. */
  readonly pctDepth?: number | undefined;
  /** Explore one shard of the tree; merge the shards' verdicts with `mergeVerdicts`. */
  readonly shard?: ShardSpec | undefined;
  /** Partial-order reduction in exhaustive search (default true); off only to compare. */
  readonly partialOrderReduction?: boolean | undefined;
  /**
   * Every binding call's answer a step of its own in interleaved runs (`RunOptions.answers`
   * `all`), which the run seeds say; a replay takes it from its run seed.
   */
  readonly splitAnswers?: boolean | undefined;
}

export type EngineStrategy = "exhaustive" | "random" | "pct" | "auto";

/** The strategy a verdict came from; `auto` reports the one it ended with. */
export type StrategyName = "exhaustive" | "random" | "pct";

/** Shard `index` (from 0) of `count`. */
export interface ShardSpec {
  readonly index: number;
  readonly count: number;
}

/**
 * One resource a step may touch. For D1, `d1Footprint` answers table-level resources
 * `D1:<db>:<table>`; the host picks the names of the others (one name per piece of state).
 */
export interface FootprintEntry {
  readonly resource: string;
  readonly write: boolean;
}

/**
 * A pending step at a scheduling point: the next effect of a parked invocation, or the delivery
 * of the next event. Steps with footprints that do not conflict (different resources, or both
 * reads) are not permuted needlessly; an empty or absent footprint conflicts with everything.
 */
export interface StepOption {
  /** What the step is: `req-1#1 effect #2 (D1:DB run)`, `deliver req-2#1`. Compared between runs. */
  readonly label: string;
  /** The invocation the step belongs to (for a delivery, the one it starts: `req-2#1`). */
  readonly invocation?: string | undefined;
  /** The effect index the step performs; absent for a delivery. */
  readonly effect?: number | undefined;
  /** The step brings the answer of effect `effect` back to its invocation, which goes on. */
  readonly answer?: boolean | undefined;
  readonly footprint?: readonly FootprintEntry[] | undefined;
}

/**
 * Invariants the engine evaluates itself over the state at the end of a run, in config order;
 * the first that breaks is the run's violation. Each is validated at `seal()`: its database
 * exists, its table and columns exist, its query prepares, only reads and takes no parameters.
 */
export interface UniqueInvariantSpec {
  readonly kind: "unique";
  readonly name: string;
  /** Namespaced D1 binding: `DB` for the scenario's Worker, `payments/DB` for a callee's. */
  readonly db: string;
  readonly table: string;
  readonly columns: readonly string[];
}
/** Violated when the query returns a row: `1 row from D1:DB breaks it: (name = "alice", balance = -5)`. */
export interface QueryInvariantSpec {
  readonly kind: "query";
  readonly name: string;
  readonly db: string;
  readonly sql: string;
}
/**
 * The query returns one row of one value; every run must leave it as setup left it:
 * `SELECT SUM(balance) FROM accounts is 3 after the run, but was 10 after setup in D1:DB`.
 */
export interface ConservedInvariantSpec {
  readonly kind: "conserved";
  readonly name: string;
  readonly db: string;
  readonly sql: string;
}
export type InvariantSpec = UniqueInvariantSpec | QueryInvariantSpec | ConservedInvariantSpec;

/** A broken invariant, the engine's or the host's own. */
export interface Violation {
  readonly invariant: string;
  readonly message: string;
}

/** What the engine answers at the start of a run. */
export interface RunPlan {
  /** Indexes into `EngineConfig.events`, in the order the driver delivers them. */
  readonly events: readonly number[];
  readonly phase: "explore" | "shrink" | "replay";
  /**
   * Whether the run keeps a trace. Exploring runs keep none (a violating one is replayed to get
   * it), so the host need not build or send its lines.
   */
  readonly trace: boolean;
  /** The check's `splitAnswers`, or the replayed run seed's. */
  readonly splitAnswers: boolean;
}

/**
 * What the engine decides at an effect, before the effect happens. `Transient` is only answered
 * for an effect decided with `transient: true`: the effect does not happen, the call fails with
 * the binding's documented transient error (the host raises it), and the invocation lives on.
 */
/** Where the engine's virtual clock starts (src/run.rs `CLOCK_START_MS`): 2026-01-01T00:00:00Z. */
export const CLOCK_START_MS: number = Date.UTC(2026, 0, 1);

/** The most redeliveries of one event (or piece of platform work) the engine explores. */
export const REDELIVERIES_MAX = 64;

export const Decision = { Proceed: 0, CrashBefore: 1, CrashAfter: 2, Transient: 3, LostResponse: 4 } as const;
export type Decision = (typeof Decision)[keyof typeof Decision];

/** One SQLite statement's outcome, before the D1 binding shapes it as Cloudflare does. */
export interface D1RawResult {
  readonly columns: string[];
  /** Rows as arrays in column order; INTEGER and REAL are numbers, BLOB a Uint8Array. */
  readonly rows: unknown[][];
  readonly changes: number;
  readonly lastRowId: number;
  readonly rowsRead: number;
  readonly rowsWritten: number;
  /** D1's `meta.size_after`, for a Worker's statements on a D1 database (nothing else reads it). */
  readonly sizeAfter?: number;
  readonly changedDb: boolean;
}

export interface D1StatementSpec {
  readonly sql: string;
  readonly params: readonly unknown[];
}

export interface FaultReport {
  readonly kind: "crash_before" | "crash_after" | "transient_error" | "lost_response";
  /** `req-2#1`, `req-2#1/0`, or an id of the platform's own work: `batch-1#1`, `alarm-2#1/0`. */
  readonly invocation: string;
  readonly effect: number;
  readonly label: string;
}

export interface RunEnd {
  readonly violated?: Violation | undefined;
}

export type EngineVerdict =
  | {
      readonly kind: "bounded";
      readonly runs: number;
      readonly strategy?: StrategyName;
      readonly shard?: ShardSpec;
    }
  | {
      readonly kind: "incomplete";
      readonly runs: number;
      readonly reason: "budget" | "runs";
      readonly strategy?: StrategyName;
      /** Runs with different decision paths (exhaustive: every run). */
      readonly distinctSchedules?: number;
      readonly shard?: ShardSpec;
      /** With strategy `auto`: the exhaustive runs made before switching to PCT. */
      readonly switchedAfterRuns?: number;
    }
  | {
      readonly kind: "violated";
      readonly runs: number;
      readonly shrinkRuns: number;
      readonly invariant: string;
      readonly message: string;
      readonly runSeed: string;
      readonly eventsKept: string[];
      readonly faults: FaultReport[];
      readonly trace: string[];
      /**
       * Absent when the check set none of `strategy`, `maxConcurrentInvocations` above 1 and
       * `shard`, so that such checks report exactly as before.
       */
      readonly strategy?: StrategyName;
      readonly shard?: ShardSpec;
      /** With strategy `auto`, found by PCT after switching: the exhaustive runs before the switch. */
      readonly switchedAfterRuns?: number;
    }
  | { readonly kind: "held"; readonly runs: number; readonly runSeed: string; readonly trace: string[] };

/** What `mergeVerdicts` answers: a shard's kind of verdict, or INCOMPLETE for a missing shard. */
export type MergedVerdict =
  | EngineVerdict
  | {
      readonly kind: "incomplete";
      readonly runs: number;
      /** A shard of the split is missing. */
      readonly reason: "shards";
      readonly strategy?: StrategyName;
      readonly distinctSchedules?: number;
    };

/**
 * What `d1Setup` throws when a statement fails: the engine's message (`statement 2: near
 * "CREAT": syntax error`) and where in the script it failed, the token SQLite blames or else
 * the statement's first token. Lines count from 1 and break at `\n`, `\r\n` or `\r`; columns
 * count UTF-16 code units from 1.
 */
export interface D1SetupError extends Error {
  readonly line?: number;
  readonly column?: number;
}

/**
 * The engine's exported class, as wasm-bindgen generates it.
 *
 * The `d1*` calls serve every store the host keeps as SQLite (D1, KV namespaces, Durable Object
 * storage, queues); database names are opaque to the engine. A database opened before `seal()`
 * is set up, snapshotted and restored at every run; one opened after `seal()` (during a run)
 * starts empty and is dropped at the next `nextRun`. Opening an open database does nothing.
 */
export interface Engine {
  /** `label` is how traces name the database (`DO:Room/"lobby" SQL`), `D1 <db>` without one. */
  d1Open(db: string, label?: string): void;
  d1Exists(db: string): boolean;
  /**
   * Before `seal()`, or on a database opened during the current run; not traced. A statement
   * that fails throws a `D1SetupError`.
   */
  d1Setup(db: string, sql: string): void;
  seal(): void;
  nextRun(elapsedMs: number): RunPlan | undefined;
  /**
   * `invocation` is `<event>#<delivery>(/<effect>)*` for the driver's events, or any other id
   * for the platform's own work (`batch-1#1`); faults on the latter match by the full id.
   * `transient`: the effect's binding documents a transient error, which adds `Transient`;
   * `lost`: that error can also come after the call took effect, which adds `LostResponse`.
   */
  /** The host moved the run's clock `skewMs` past `nowMs()`: SQL's `'now'` reads that clock too. */
  setClockSkew(skewMs: number): void;
  decide(
    invocation: string,
    effect: number,
    label: string,
    transient?: boolean | null,
    lost?: boolean | null,
  ): Decision;
  /** Whether the client's resend `delivery` (from 2) of driver event `event` happens. */
  redeliver(event: number, delivery: number): boolean;
  /**
   * Whether the platform's own retry `delivery` (from 2) of its work `name` (an invocation id
   * without `#<delivery>`: `batch-1`, `alarm-2`) happens; ask on top of the platform's own
   * limits (a queue's max_retries). Bounded by `maxRedeliveries` and shrunk like resends.
   */
  redeliverPlatform(name: string, delivery: number): boolean;
  /**
   * With `maxConcurrentInvocations > 1`: which pending step runs next, as an index into
   * `options`. Call it before every step, even when only one is pending (the engine needs every
   * step's footprint), listing the options in a deterministic order (invocations in the order
   * they started, then the delivery). For an effect, `decide` for that same effect follows.
   */
  choose(options: readonly StepOption[]): number;
  /** The tables a D1 statement or script reads and writes, from SQLite's authorizer. */
  d1Footprint(db: string, sql: string): FootprintEntry[];
  fillRandom(stream: string, buf: Uint8Array): void;
  nowMs(): number;
  /** The run seed of the run under way, as far as it has gone. */
  runSeed(): string;
  trace(line: string): void;
  /**
   * `quiet`: the statement is the host's own bookkeeping (a KV namespace's table, a queue's
   * messages), left out of the trace, where the host traces the binding's call instead.
   */
  d1Run(db: string, sql: string, params: readonly unknown[], quiet?: boolean): D1RawResult;
  d1Batch(db: string, statements: readonly D1StatementSpec[], quiet?: boolean): D1RawResult[];
  d1Exec(db: string, sql: string, quiet?: boolean): { count: number };
  /**
   * Ends the run. `hostViolation`: the first of the host's own invariants that broke, evaluated
   * before this call (the run's databases still exist); it is the run's violation when every
   * engine invariant holds, and the shrinker treats it as one of the engine's.
   */
  endRun(hostViolation?: Violation | undefined): RunEnd;
  verdict(): EngineVerdict;
  free(): void;
}

interface EngineModule {
  Engine: new (config: EngineConfig) => Engine;
  mergeVerdicts(verdicts: readonly EngineVerdict[]): MergedVerdict;
}

let loaded: EngineModule | undefined;

/** Where wasm-pack writes the engine: `pkg/` at the top of the repository. */
function enginePath(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 4; i++) {
    const candidate = join(dir, "pkg", "engine.js");
    if (existsSync(candidate)) return candidate;
    dir = dirname(dir);
  }
  throw new Error("eutaxy's engine is not built: run `pnpm build` (wasm-pack writes it to pkg/)");
}

/** Creates an engine for one check. The wasm module is loaded once per process. */
export function createEngine(config: EngineConfig): Engine {
  const { Engine } = engineModule();
  return new Engine(config);
}

/**
 * Merges the verdicts of a sharded check: `violated` if any shard's is (the lowest shard's),
 * else `bounded` if every shard is present once and bounded, else `incomplete`.
 */
export function mergeVerdicts(verdicts: readonly EngineVerdict[]): MergedVerdict {
  return engineModule().mergeVerdicts(verdicts);
}

function engineModule(): EngineModule {
  if (!loaded) {
    const require = createRequire(import.meta.url);
    loaded = require(enginePath()) as EngineModule;
  }
  return loaded;
}
