/**
 * The exploration itself, portable between runtimes: set up the stores, probe the Worker modules,
 * run what the engine plans until it has a verdict, and shape that verdict as a CheckResult.
 * Nothing here reads files or loads the engine, so the same code runs in Node (`check.ts`) and
 * inside workerd (`workerd/host.ts`); each caller hands in the engine and the schema texts.
 */

import { dirname, resolve } from "node:path";
import type { Bounds, Driver } from "./cloudflare.ts";
import { eventsOf } from "./drivers/index.ts";
import {
  CLOCK_START_MS,
  type D1SetupError,
  type Engine,
  type EngineConfig,
  type EngineStrategy,
  type FaultReport,
  type InvariantSpec,
  REDELIVERIES_MAX,
  type StrategyName,
} from "./engine.ts";
import { InputError, SimulationError, shown, shownConfig } from "./errors.ts";
import { plural } from "./report.ts";
import { bodyExcerpt, type ClientResponse } from "./sim/context.ts";
import { withEnvironmentHint } from "./sim/environment-hint.ts";
import { finalState, hostViolation, ObjectTableReads } from "./sim/final-state.ts";
import { activate, GLOBAL_SCOPE, notSimulatedMessage, real } from "./sim/globals.ts";
import { hasHandler, namedEntrypoints } from "./sim/handlers.ts";
import { KV_SCHEMA, kvEntriesSql } from "./sim/kv.ts";
import { withAnyMigrationsHint, withMigrationsHint } from "./sim/migrations-hint.ts";
import { refusedAtImport } from "./sim/outbound.ts";
import { QUEUE_SCHEMA } from "./sim/queues.ts";
import { R2_SCHEMA, r2ObjectsSql } from "./sim/r2.ts";
import { loggedText, processEnvOf, Run } from "./sim/run.ts";
import { runtimeModules } from "./sim/runtime-modules.ts";
import { d1Store, kvStoreOf, r2StoreOf } from "./sim/store-names.ts";
import type { SimWorker, World } from "./sim/world.ts";
import { FINAL_STATE, notAsPrinted } from "./trace.ts";

export type ResolvedBounds = Required<Bounds>;

/** Hard limits that hold whatever the budget: a check always ends. */
const RUNS_MAX = 1_000_000;
const SHRINK_RUNS_MAX = 2_000;

interface CheckHeader {
  readonly scenario: string;
  readonly file: string;
  readonly seed: string;
  readonly bounds: ResolvedBounds;
  readonly elapsedMs: number;
  /** Present when the check explored one shard of the tree (`--shard`). */
  readonly shard?: Shard;
}

/**
 * Something about the runs of a BOUNDED or INCOMPLETE check that makes its verdict say less
 * than it seems to: `no-binding-call`, no run reached a binding, so no fault was tried and
 * nothing interleaved; `no-request-succeeded`, every request the driver sent was answered 400 or
 * more (or not at all) in every run, so the invariants held over a Worker that fails or refuses
 * them; `no-work-succeeded`, the platform's work of one kind (a queue's batches, an object's
 * alarm, cron ticks) threw every time it ran, in every run;
 * `platform-retries-cut`, `maxRedeliveries` refused a retry Cloudflare would make (a queue batch
 * within its `max_retries`, an alarm within its 6 retries), so what follows was not explored;
 * `queue-not-consumed`, a Worker sent to a queue no Worker of the scenario consumes, so what its
 * consumer would do with the messages was not checked; `alarm-before-event`, one invocation at a
 * time, an alarm set a second or more ahead rang before the next event, so no run had that
 * event come first; `module-state`, a Worker changed a module-level variable while it served
 * requests, so the check ran every interleaving, without partial-order reduction; `replica-reads`,
 * a Worker opened a D1 session that may read a replica, which the simulation answers from the
 * primary, so what a lagging replica would have answered was not checked; `event-delivered-late`,
 * a driver's event waited a second or more for the invocations before it to end, so no run had it
 * overlap them; `sent-apart`, with several invocations at once, a request sent at a time of its
 * own overlapped no other invocation in any run, as what came before it was over by then;
 * `isolate-state`, one invocation at a time, a run changed a module-level variable before another
 * delivery to its Worker (a later request, a resend), which found it, as in one isolate, where
 * Cloudflare may run them in others.
 */
export interface CheckWarning {
  readonly kind:
    | "no-binding-call"
    | "no-request-succeeded"
    | "no-work-succeeded"
    | "platform-retries-cut"
    | "queue-not-consumed"
    | "alarm-before-event"
    | "module-state"
    | "replica-reads"
    | "event-delivered-late"
    | "sent-apart"
    | "isolate-state";
  readonly message: string;
}

export type CheckResult = CheckHeader &
  (
    | {
        readonly verdict: "BOUNDED";
        readonly runs: number;
        readonly warnings?: readonly CheckWarning[];
        /**
         * Present when invocations interleaved: whether partial-order reduction pruned the
         * interleavings (sound only if the Workers share no mutable module-level state).
         */
        readonly partialOrderReduction?: boolean;
      }
    | {
        readonly verdict: "INCOMPLETE";
        readonly runs: number;
        readonly warnings?: readonly CheckWarning[];
        readonly reason: "budget" | "runs";
        /** The strategy the check ended with: `exhaustive`, or a sampling one. */
        readonly strategy: StrategyName;
        /** Runs with different schedules (sampling may repeat one; exhaustive never does). */
        readonly distinctSchedules: number;
        /** With strategy `auto`: the exhaustive runs made before it switched to sampling. */
        readonly switchedAfterRuns?: number;
      }
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
        /**
         * A replay (`--replay`) only, when the run was not the one its seed was printed for: the
         * seed's faults and scheduling choices that did not happen (the Worker changed since).
         */
        readonly notAsPrinted?: readonly string[];
        /**
         * With strategy `auto`, when PCT found the violation after the switch: the exhaustive
         * runs made before it. The clock decided the switch, so another machine may report
         * another counterexample.
         */
        readonly switchedAfterRuns?: number;
        /**
         * `platform-retries-cut`, when the counterexample's run had a retry Cloudflare would
         * make refused by `maxRedeliveries`: what broke may be what that retry would mend.
         */
        readonly warnings?: readonly CheckWarning[];
      }
    | {
        readonly verdict: "HELD";
        readonly runSeed: string;
        readonly trace: readonly string[];
        readonly notAsPrinted?: readonly string[];
      }
  );

/** Everything an exploration needs once the scenario is loaded and its world built. */
export interface Exploration {
  readonly world: World;
  readonly seed: string;
  readonly bounds: ResolvedBounds;
  /** A run seed to run once instead of exploring. */
  readonly replay?: string | undefined;
  /** Explore one shard of the tree of schedules (`--shard`). */
  readonly shard?: Shard | undefined;
  /** How the tree of schedules is searched. */
  readonly search: Search;
  /**
   * The SQL files of every `d1Schema` step, by the absolute path it names: the file itself, or a
   * folder's migrations in the order wrangler applies them.
   */
  readonly schemas: ReadonlyMap<string, readonly SchemaFile[]>;
  /** Creates the engine in the runtime the exploration runs in. */
  readonly createEngine: (config: EngineConfig) => Engine;
  /**
   * Runs Worker code's part of the check (the modules' probe, each run), so that the runtime can
   * tell the Worker's unhandled rejections from others (`worker-rejections.ts`); workerd, which
   * runs nothing but the check, needs none.
   */
  readonly inRun?: <T>(work: () => T) => T;
}

/** One SQL file a `d1Schema` step applies, and its text. */
export interface SchemaFile {
  /** Absolute. */
  readonly file: string;
  readonly sql: string;
}

/** How the engine searches the tree of schedules (see `CheckOptions`). */
export interface Search {
  readonly strategy: EngineStrategy;
  readonly pctDepth: number;
  readonly partialOrderReduction: boolean;
  /** Every binding call's answer a step of its own (`EngineConfig.splitAnswers`). */
  readonly splitAnswers?: boolean;
}

/** Shard `index` (from 0) of `count`: the part of the tree of schedules one check explores. */
export interface Shard {
  readonly index: number;
  readonly count: number;
}

/** The shard a verdict came from, as the result carries it: only for a sharded check. */
function shardOf(verdict: { readonly shard?: Shard | undefined }): { readonly shard?: Shard } {
  return verdict.shard ? { shard: { index: verdict.shard.index, count: verdict.shard.count } } : {};
}

/**
 * Explores the scenario's schedules. Interleaved exploring runs watch the Workers' module-level
 * state, which concurrent invocations share and no footprint names: when a run changes it, the
 * check starts again, on what is left of the budget, with every binding call's answer a step of
 * its own (so that another invocation may change that state between a call and the code after
 * it) and without partial-order reduction, and says why.
 */
export async function explore(exploration: Exploration): Promise<CheckResult> {
  const started = real.monotonicMs();
  const reduced = await exploreOnce(exploration);
  if (!("moduleState" in reduced)) return reduced;
  const { worker, variable } = reduced.moduleState;
  const where = sourceOf(exploration.world, reduced.moduleState);
  const spentMs = real.monotonicMs() - started;
  const { bounds, search } = exploration;
  const result = await exploreOnce({
    ...exploration,
    bounds: { ...bounds, budgetMs: Math.max(1, Math.floor(bounds.budgetMs - spentMs)) },
    search: { ...search, partialOrderReduction: false, splitAnswers: true },
  });
  if ("moduleState" in result) throw new Error("a check that splits every answer watched module state");
  // The bounds as given, and the time both explorations took.
  const header = { bounds, elapsedMs: result.elapsedMs + spentMs };
  if (result.verdict === "HELD") return { ...result, ...header };
  const ran =
    result.verdict === "VIOLATED"
      ? "so the check started again without partial-order reduction"
      : "so every interleaving ran";
  const warning: CheckWarning = {
    kind: "module-state",
    // The file too: a bundle's names are terse where the code is generated (`h`, of a wasm glue).
    message: `Worker ${worker} changed the module-level variable ${variable}${where ? ` of ${where}` : ""} while it served requests, which concurrent requests share and partial-order reduction cannot see, ${ran}, with the code after each binding call's answer as a step of its own. Here all the requests of a run share one isolate; Cloudflare may run them in different isolates, which do not share it.`,
  };
  return { ...result, ...header, warnings: [...(result.warnings ?? []), warning] };
}

/** A module-level variable's file as a warning names it: the bundle's name for it, from the Worker's entry's folder, shown from where the check runs. */
function sourceOf(
  world: World,
  change: { readonly worker: string; readonly file?: string | undefined },
): string | undefined {
  const entry = world.workers.find((w) => w.name === change.worker)?.entry;
  return change.file && entry ? shown(resolve(dirname(entry), change.file)) : change.file;
}

async function exploreOnce(
  exploration: Exploration,
): Promise<CheckResult | { readonly moduleState: NonNullable<Run["moduleStateChanged"]> }> {
  const { world, seed, bounds } = exploration;
  const { scenario } = world;
  const events = eventsOf(scenario.drive);
  const engine = startEngine(exploration, {
    seed,
    events: events.map((e) => e.id),
    maxFaultsPerRun: bounds.maxFaultsPerRun,
    maxRedeliveries: bounds.maxRedeliveries,
    budgetMs: bounds.budgetMs,
    runsMax: RUNS_MAX,
    shrinkRunsMax: SHRINK_RUNS_MAX,
    replay: exploration.replay,
    shard: exploration.shard,
    maxConcurrentInvocations: bounds.maxConcurrentInvocations,
    strategy: exploration.search.strategy,
    pctDepth: exploration.search.pctDepth,
    partialOrderReduction: exploration.search.partialOrderReduction,
    splitAnswers: exploration.search.splitAnswers ?? false,
    invariants: engineInvariants(world),
  });
  try {
    const inRun = exploration.inRun ?? ((work) => work());
    setUpStores(engine, world, exploration.schemas);
    inRun(() => probeModules(engine, world));

    const started = real.monotonicMs();
    const reach = new Reach();
    // The retry refused in each violating run that kept a trace, by its run seed: the verdict's
    // counterexample is one of them.
    const cutsBySeed = new Map<string, NonNullable<Run["retryCut"]>>();
    const objectTables = new ObjectTableReads();
    let exploring = 0;
    for (;;) {
      const plan = escaping(() => engine.nextRun(real.monotonicMs() - started));
      if (!plan) break;
      const explores = plan.phase === "explore";
      if (explores) exploring++;
      const run = new Run(engine, world, events, bounds.maxConcurrentInvocations, {
        // Interleaved, every exploring run: the reduction rests on it. One at a time, the watch
        // only informs a warning (`isolate-state`), and a Worker that keeps state does so in
        // most runs: the first runs and every 16th after them, as deterministic as the runs.
        watchModuleState:
          !plan.splitAnswers &&
          explores &&
          (bounds.maxConcurrentInvocations > 1 ||
            exploring <= ISOLATE_WATCH_RUNS ||
            exploring % ISOLATE_WATCH_EVERY === 0),
        faults: bounds.maxFaultsPerRun > 0,
        answers: plan.splitAnswers ? "all" : "objects",
      });
      try {
        await inRun(() => run.execute(plan));
      } catch (error) {
        throw replayable(engine, error);
      }
      if (run.moduleStateChanged) return { moduleState: run.moduleStateChanged };
      if (plan.phase === "explore") reach.add(run);
      if (plan.trace) engine.trace(FINAL_STATE);
      const endedAtMs = run.nowMs();
      // The scenario's invariants read the run's clock as it ended, and randomness of the run's;
      // what they log is the run's too (kept with a traced run, never printed: the check's
      // output, --json included, stays the check's).
      const asOfRunEnd = activate({
        fillRandom: (buf) => engine.fillRandom(INVARIANTS_STREAM, buf),
        nowMs: () => endedAtMs,
        log: (level, args) => {
          if (plan.trace) engine.trace(`invariants console.${level}: ${loggedText(args)}`);
        },
      });
      let violation: ReturnType<typeof hostViolation>;
      try {
        violation = judgedIn(engine, () =>
          hostViolation(
            scenario.invariants,
            finalState(
              engine,
              world,
              run.responses,
              endedAtMs,
              plan.events.map((index) => events[index]?.id ?? `event ${index}`),
              run.outbound,
              objectTables,
            ),
            world.file,
            objectTables,
          ),
        );
      } finally {
        asOfRunEnd();
      }
      if (plan.trace && violation && run.retryCut) cutsBySeed.set(engine.runSeed(), run.retryCut);
      escaping(() => engine.endRun(violation));
    }
    const header: CheckHeader = {
      scenario: scenario.name,
      file: world.file,
      seed,
      bounds,
      elapsedMs: real.monotonicMs() - started,
    };
    const verdict = engine.verdict();
    const neverFound = objectTables.neverFound();
    if (neverFound && (verdict.kind === "bounded" || verdict.kind === "incomplete")) {
      // Every run read no rows there: the invariant judged nothing.
      throw new InputError(world.file, reach.failingWorker(neverFound));
    }
    switch (verdict.kind) {
      case "bounded":
        return {
          ...header,
          verdict: "BOUNDED",
          runs: verdict.runs,
          ...reach.warnings(world),
          ...(bounds.maxConcurrentInvocations > 1
            ? { partialOrderReduction: exploration.search.partialOrderReduction }
            : {}),
          ...shardOf(verdict),
        };
      case "incomplete":
        return {
          ...header,
          verdict: "INCOMPLETE",
          runs: verdict.runs,
          ...reach.warnings(world),
          // A single check's engine never merges shards, so its reason is its own budget or limit.
          reason: verdict.reason === "runs" ? "runs" : "budget",
          strategy: verdict.strategy ?? "exhaustive",
          distinctSchedules: verdict.distinctSchedules ?? verdict.runs,
          ...(verdict.switchedAfterRuns === undefined
            ? {}
            : { switchedAfterRuns: verdict.switchedAfterRuns }),
          ...shardOf(verdict),
        };
      case "held":
        return {
          ...header,
          verdict: "HELD",
          runSeed: verdict.runSeed,
          trace: verdict.trace,
          ...notAsPrintedOf(verdict.trace),
        };
      case "violated": {
        const { kind: _kind, strategy: _strategy, shard: _shard, ...rest } = verdict;
        const counterexampleCut = cutsBySeed.get(verdict.runSeed);
        return {
          ...header,
          verdict: "VIOLATED",
          ...rest,
          ...notAsPrintedOf(verdict.trace),
          ...(counterexampleCut ? { warnings: [retriesCutWarning(counterexampleCut, "violated")] } : {}),
          ...shardOf(verdict),
        };
      }
    }
  } finally {
    engine.free();
  }
}

/**
 * `judge`'s answer; an invariant that answered neither true nor a message (false, a Promise)
 * is bad input, and the error names the run it could not judge, so that the run can be replayed
 * once the invariant answers.
 */
function judgedIn<T>(engine: Engine, judge: () => T): T {
  try {
    return judge();
  } catch (error) {
    if (error instanceof InputError && /^invariant \S+ returned /.test(error.problem)) {
      throw new InputError(
        error.file,
        `${error.problem} (in run ${engine.runSeed()}, which --replay runs again)`,
      );
    }
    throw error;
  }
}

/**
 * A failure of the simulation that ends the check in the middle of a run (an invocation stuck, a
 * limit reached), with the run's seed as far as it went, as a violation gives it: --replay runs
 * the same steps to the same point. A run that did not repeat itself (nondeterminism) has no seed
 * that would.
 */
function replayable(engine: Engine, error: unknown): unknown {
  if (!(error instanceof SimulationError) || error.message.startsWith("nondeterminism:")) return error;
  return new SimulationError(`${error.message} (in run ${engine.runSeed()}, which --replay runs again)`);
}

/** One invocation at a time, the exploring runs that all watch module state, and the stride after them. */
const ISOLATE_WATCH_RUNS = 64;
const ISOLATE_WATCH_EVERY = 16;

/** The random stream the scenario's invariants draw from (`crypto`, `Math.random`). */
const INVARIANTS_STREAM = "invariants";

/** Longest part of an answer's body a warning quotes. */
const QUOTED_BODY_MAX = 80;

/** What the exploring runs reached, for the warnings of a verdict that found nothing. */
class Reach {
  private runs = 0;
  private effects = false;
  private responses = false;
  private answered = false;
  /** Whether some request got a 2xx or 3xx answer. */
  private succeeded = false;
  /** The first failed request of the first run that had one, as a warning quotes it. */
  private failure: string | undefined;
  /** The first request answered 4xx, as a warning quotes it. */
  private refusal: string | undefined;
  /** The first request's answer, as a warning quotes it (a 404 says why no binding was reached). */
  private firstAnswer: string | undefined;
  /** The platform's retry the bound refused with the highest delivery over the runs. */
  private retryCut: Run["retryCut"];
  /** Queues sent to that no Worker consumes, each with the first binding that sent to it. */
  private readonly unconsumed = new Map<string, string>();
  private readonly replicaSessions = new Set<string>();
  /** The platform's work delivered (a queue's batches, an object's alarm, cron ticks), as `Run.handled`. */
  private readonly handled = new Map<string, { returned: boolean; threw?: string }>();
  /** Runs in which an alarm rang before the next event, and the first of them. */
  private alarmRuns = 0;
  private alarmBeforeEvent: Run["alarmBeforeEvent"];
  private lateRuns = 0;
  private lateEvent: Run["lateEvent"];
  /** Requests sent at a time of their own in interleaved runs, and the events some run overlapped. */
  private readonly sentApart = new Map<number, string>();
  private readonly overlapped = new Set<number>();
  /** One invocation at a time: the first module-level variable a run left changed. */
  private kept: Run["moduleStateKept"];

  add(run: Run): void {
    this.runs++;
    this.kept ??= run.moduleStateKept;
    this.effects ||= run.effects > 0;
    for (const [work, handled] of run.handled) {
      const seen = this.handled.get(work) ?? { returned: false };
      seen.returned ||= handled.returned;
      seen.threw ??= handled.threw;
      this.handled.set(work, seen);
    }
    for (const [queue, binding] of run.unconsumed)
      if (!this.unconsumed.has(queue)) this.unconsumed.set(queue, binding);
    for (const binding of run.replicaSessions) this.replicaSessions.add(binding);
    if (run.alarmBeforeEvent) {
      this.alarmRuns++;
      this.alarmBeforeEvent ??= run.alarmBeforeEvent;
    }
    if (run.lateEvent) {
      this.lateRuns++;
      this.lateEvent ??= run.lateEvent;
    }
    for (const [index, name] of run.sentApart)
      if (!this.sentApart.has(index)) this.sentApart.set(index, name);
    for (const index of run.overlapped) this.overlapped.add(index);
    if (run.retryCut && (!this.retryCut || run.retryCut.deliveries > this.retryCut.deliveries)) {
      this.retryCut = run.retryCut;
    }
    for (const response of run.responses) {
      this.responses = true;
      this.firstAnswer ??= failureOf(response, run.firstThrow);
      if (response.status > 0 && response.status < 500) this.answered = true;
      else this.failure ??= failureOf(response, run.firstThrow);
      if (response.status > 0 && response.status < 400) this.succeeded = true;
      else if (response.status >= 400 && response.status < 500)
        this.refusal ??= failureOf(response, run.firstThrow);
    }
  }

  /**
   * `message` (a query of an invariant that found its table in no run), with what the Worker
   * answered when no request got an answer below 500: its object may have failed before making
   * the table.
   */
  failingWorker(message: string): string {
    if (!this.responses || this.answered) return message;
    return `${message} (no request got an answer below 500 in any run, first: ${this.failure})`;
  }

  /** `world` gives a failure over a table no schema made the hint to apply the migrations. */
  warnings(world: World): { readonly warnings?: readonly CheckWarning[] } {
    const warnings: CheckWarning[] = [];
    if (this.runs > 0 && !this.effects) {
      warnings.push({
        kind: "no-binding-call",
        message: `No run reached a binding call${this.firstAnswer === undefined ? "" : ` (first: ${this.firstAnswer})`}, so no fault was injected and no interleaving tried: the invariants held over the events alone.`,
      });
    }
    if (this.responses && !this.answered) {
      warnings.push({
        kind: "no-request-succeeded",
        message: `${withEnvironmentHint(
          world,
          withAnyMigrationsHint(
            world,
            `No request got an answer below 500 in any run (first: ${this.failure}), so the invariants held over a Worker that fails`,
          ),
        )}.`,
      });
    } else if (this.responses && !this.succeeded) {
      // A request sent to the wrong path, or with the wrong method, is a 404 or a 405 every time.
      warnings.push({
        kind: "no-request-succeeded",
        message: `No request got a 2xx or 3xx answer in any run (first: ${this.refusal}), so the invariants held over a Worker that refused every request: are the requests the ones it serves?`,
      });
    }
    for (const [work, { returned, threw }] of this.handled) {
      if (returned || threw === undefined) continue;
      warnings.push({
        kind: "no-work-succeeded",
        message: `${withEnvironmentHint(
          world,
          `No ${work} ran without an exception in any run (first: ${threw}), so the invariants held over a handler that fails every time`,
        )}.`,
      });
    }
    if (this.retryCut) warnings.push(retriesCutWarning(this.retryCut, "explored"));
    if (this.alarmBeforeEvent) {
      const { alarm, aheadMs, event } = this.alarmBeforeEvent;
      warnings.push({
        kind: "alarm-before-event",
        message: `In ${this.alarmRuns} of ${plural(this.runs, "run")} an alarm rang before the next event (${alarm}, ${duration(aheadMs)} on, before ${event}): one invocation at a time, the platform's work runs before the next event whatever it waits for, so no run had ${event} come before it. maxConcurrentInvocations 2 checks events before, during and after an alarm.`,
      });
    }
    const apart = [...this.sentApart]
      .filter(([index]) => !this.overlapped.has(index))
      .map(([, name]) => name);
    if (apart.length > 0) {
      const named = apart.length === 1 ? apart[0] : `${apart.slice(0, -1).join(", ")} and ${apart.at(-1)}`;
      warnings.push({
        kind: "sent-apart",
        message: `In no run did ${named} overlap another invocation: a binding call takes 1 ms of the run's clock, so what came before was over by then, and maxConcurrentInvocations had nothing to interleave it with. To check requests racing, send them at the same atMs (a duplicate delivery, a double click); one sent later to let a lease or a window run out does not race.`,
      });
    }
    if (this.lateEvent) {
      const { event, lateMs } = this.lateEvent;
      warnings.push({
        kind: "event-delivered-late",
        message: `In ${this.lateRuns} of ${plural(this.runs, "run")} an event was delivered late (${event}, ${duration(lateMs)} after the driver sent it): the invocations before it held every place maxConcurrentInvocations gives, so no run had it overlap them. A larger maxConcurrentInvocations checks it beside them.`,
      });
    }
    for (const [queue, binding] of [...this.unconsumed].sort(([a], [b]) => a.localeCompare(b))) {
      warnings.push({
        kind: "queue-not-consumed",
        message: `${binding} sent to queue ${queue}, which no Worker of the scenario consumes, so its messages were never delivered: consumer({ config }) adds the Worker that consumes it, to check what it does with them.`,
      });
    }
    if (this.kept) {
      const { worker, variable } = this.kept;
      const where = sourceOf(world, this.kept);
      warnings.push({
        kind: "isolate-state",
        message: `Worker ${worker} kept state between requests in the module-level variable ${variable}${where ? ` of ${where}` : ""}: here all the requests of a run share one isolate, so each found what the ones before it (a resend's first attempt among them) left there. Cloudflare may run them in different isolates, where none of it is, so a Worker that relies on it to be right (a lock, a record of what it did) can still fail in production; eutaxy does not run that case.`,
      });
    }
    for (const binding of [...this.replicaSessions].sort()) {
      warnings.push({
        kind: "replica-reads",
        message: `${binding} opened a D1 session that may read a replica (withSession() or "first-unconstrained"), and eutaxy's D1 has no replicas: every read came from the primary, so what a replica lagging behind would have answered was not checked.`,
      });
    }
    return warnings.length > 0 ? { warnings } : {};
  }
}

/**
 * `maxRedeliveries` refused a retry Cloudflare would make: in the runs explored, what follows it
 * was not; in a counterexample's run, the violation may be what the retry would have mended.
 */
function retriesCutWarning(cut: NonNullable<Run["retryCut"]>, of: "explored" | "violated"): CheckWarning {
  const { work, delivery, deliveries, follows } = cut;
  const covers =
    deliveries - 1 <= REDELIVERIES_MAX
      ? `maxRedeliveries ${deliveries - 1} covers them`
      : `maxRedeliveries ${REDELIVERIES_MAX}, the most eutaxy allows, covers ${REDELIVERIES_MAX + 1} of them`;
  const would = `Cloudflare would deliver ${work} a ${ordinal(delivery)} time, and up to ${deliveries} times in all`;
  return {
    kind: "platform-retries-cut",
    message:
      of === "explored"
        ? `maxRedeliveries stopped the platform's retries: ${would}, but what follows (${follows}) was not explored. ${covers}.`
        : `maxRedeliveries stopped the platform's retries in this run: ${would}, so what broke may be what those retries would mend (${follows}). ${covers}.`,
  };
}

/** A span of the run's clock as a person says it: `15 minutes`, `10 s`, `1.5 h`. */
function duration(ms: number): string {
  if (ms < 60_000) return `${Number((ms / 1000).toFixed(1))} s`;
  if (ms < 3_600_000) return plural(Number((ms / 60_000).toFixed(1)), "minute");
  return `${Number((ms / 3_600_000).toFixed(1))} h`;
}

function ordinal(n: number): string {
  const tens = n % 100;
  const suffix = tens >= 11 && tens <= 13 ? "th" : (["th", "st", "nd", "rd"][n % 10] ?? "th");
  return `${n}${suffix}`;
}

/**
 * How a delivery ended, as a warning quotes it: the exception it threw, else its answer
 * (`req-1#1 answered 404 "Not found"`).
 */
function failureOf(response: ClientResponse, firstThrow: Run["firstThrow"]): string {
  const invocation = `${response.event}#${response.delivery}`;
  if (response.status === 0) return `${invocation} got no answer`;
  if (firstThrow?.invocation === invocation) return `${invocation} threw ${firstThrow.error}`;
  return `${invocation} answered ${response.status} ${JSON.stringify(bodyExcerpt(response.body, QUOTED_BODY_MAX))}`;
}

/** A replay's faults and choices of its seed that did not happen, when some did not. */
function notAsPrintedOf(trace: readonly string[]): { readonly notAsPrinted?: readonly string[] } {
  const notes = notAsPrinted(trace);
  return notes.length > 0 ? { notAsPrinted: notes } : {};
}

/** Creates the engine; a run seed it cannot read is bad input, named as the option it came in. */
function startEngine(exploration: Exploration, config: EngineConfig): Engine {
  try {
    return exploration.createEngine(config);
  } catch (error) {
    if (exploration.replay !== undefined && /run seed/.test((error as Error).message)) {
      throw new InputError(undefined, `--replay: ${(error as Error).message}`);
    }
    throw error;
  }
}

/**
 * The invariants the engine evaluates itself; the host evaluates custom and response ones. Each
 * names the store of the database its binding reaches, which another binding may share.
 */
function engineInvariants(world: World): InvariantSpec[] {
  const store = (db: string) => d1Store(world.workers, db);
  return world.scenario.invariants.flatMap((inv): InvariantSpec[] => {
    switch (inv.kind) {
      case "unique":
        return [
          {
            kind: "unique",
            name: inv.name,
            db: store(inv.rows.db),
            table: inv.rows.table,
            columns: inv.columns,
          },
        ];
      case "query":
      case "conserved":
        return [{ kind: inv.kind, name: inv.name, db: store(inv.db), sql: inv.sql }];
      default:
        return [];
    }
  });
}

/**
 * Opens every store (D1 databases, KV namespaces, R2 buckets, queues), applies the scenario's schemas, and
 * seals the post-setup state every run starts from.
 */
function setUpStores(
  engine: Engine,
  world: World,
  schemas: ReadonlyMap<string, readonly SchemaFile[]>,
): void {
  for (const db of world.databases) engine.d1Open(db);
  for (const store of world.kvStores) {
    engine.d1Open(store);
    engine.d1Setup(store, KV_SCHEMA);
  }
  for (const store of world.r2Stores) {
    engine.d1Open(store);
    engine.d1Setup(store, R2_SCHEMA);
  }
  for (const queue of world.queues.values()) {
    engine.d1Open(queue.store);
    engine.d1Setup(queue.store, QUEUE_SCHEMA);
  }
  for (const step of world.scenario.setup ?? []) {
    if (step.kind === "kvEntries") {
      engine.d1Setup(kvStoreOf(world.workers, step.namespace) ?? step.namespace, kvEntriesSql(step.entries));
      continue;
    }
    if (step.kind === "r2Objects") {
      const store = r2StoreOf(world.workers, step.bucket) ?? step.bucket;
      engine.d1Setup(store, r2ObjectsSql(step.objects, CLOCK_START_MS));
      continue;
    }
    if (step.kind !== "d1Schema") continue;
    const files = schemas.get(step.file);
    if (files === undefined) {
      throw new InputError(shown(step.file), "no such file (named by d1Schema in the scenario)");
    }
    for (const { file, sql } of files) {
      try {
        engine.d1Setup(d1Store(world.workers, step.db), sql);
      } catch (error) {
        const { line, column, message } = error as D1SetupError;
        // At `file:line:column`, as a build error in the Worker is, so that editors open it there.
        const at = line === undefined ? shown(file) : `${shown(file)}:${line}:${column}`;
        throw new InputError(at, `SQL error applying it to D1 ${step.db}: ${message}`);
      }
    }
  }
  try {
    engine.seal();
  } catch (error) {
    // The engine checks the invariants' tables here: `invariant x: D1:DB has no table "orders"`.
    const message = (error as Error).message;
    const db = /\bD1:(\S+?)(?::| has no table)/.exec(message)?.[1];
    throw new InputError(
      shown(world.file),
      db === undefined ? message : withMigrationsHint(world, db, message),
    );
  }
}

/**
 * Loads every Worker module once before exploring, so that one that throws at import, or lacks
 * what the scenario or another Worker calls, is bad input.
 */
function probeModules(engine: Engine, world: World): void {
  const clockMs = engine.nowMs();
  const deactivate = activate({
    fillRandom: (buf) => engine.fillRandom("probe", buf),
    nowMs: () => clockMs,
    // What a module logs as it loads is logged again in every run, where the trace keeps it.
    log: () => {},
    // I/O and timers at import are refused as workerd refuses them, and nothing reaches the
    // network: a fetch's promise rejects, a timer throws (a Worker that throws at import is
    // bad input, below).
    fetch: refusedAtImport,
    setTimer: () => {
      throw new Error(GLOBAL_SCOPE);
    },
    // So are random values from crypto (Math.random is allowed, as in workerd).
    inGlobalScope: () => true,
    // Said below of the Worker whose module loads, at the line that used it.
    notSimulated: (what) => new NotSimulatedAtImport(what),
    // As workerd fills it before a module loads, so that one may read its configuration there.
    processEnv: () => (loading ? processEnvOf(loading) : {}),
  });
  const exportsOf = new Map<SimWorker, Record<string, unknown>>();
  let loading: SimWorker | undefined;
  try {
    for (const worker of world.workers) {
      loading = worker;
      let exports: Record<string, unknown>;
      try {
        exports = worker.module.instantiate(
          runtimeModules(
            () => importTimeEnv(worker),
            () => {
              throw new Error(GLOBAL_SCOPE);
            },
          ),
        );
      } catch (error) {
        if (error instanceof NotSimulatedAtImport) throw notSimulatedAtImport(worker, error);
        // An import eutaxy refuses (node:fs, cloudflare:email) says so itself.
        if (error instanceof InputError) throw error;
        throw threwAtImport(worker, error);
      }
      // Wrangler takes a module without exports for one in the service-worker format.
      if (Object.keys(exports).length === 0) {
        throw new InputError(
          worker.entry,
          'exports nothing: a Worker in the service-worker format (addEventListener("fetch", …)), which wrangler still deploys but eutaxy does not run; eutaxy runs ES module Workers (export default { fetch(request, env, ctx) { … } }), whose bindings are on env',
        );
      }
      for (const [driver, handler] of [
        ["http", "fetch"],
        ["cron", "scheduled"],
      ] as const) {
        if (worker === world.main && drives(world, driver) && !hasHandler(exports, handler)) {
          throw new InputError(
            worker.entry,
            `the default export has no ${handler} handler, which the scenario's ${driver} driver calls`,
          );
        }
      }
      if (worker.config?.queueConsumers.length && !hasHandler(exports, "queue")) {
        throw new InputError(
          worker.entry,
          `${shownConfig(worker.config)} makes it a queue consumer, but its default export has no queue handler`,
        );
      }
      exportsOf.set(worker, exports);
    }
  } finally {
    deactivate();
  }
  for (const worker of world.workers) exportedEntrypoints(worker, exportsOf);
}

/**
 * The `env` of `cloudflare:workers` while the probe evaluates a Worker's module, as workerd gives
 * it at the top level: its vars and secrets as they are, so that a module that reads its
 * configuration as it loads (`if (!env.API_KEY) throw …`) loads as it does there. A binding is a
 * stand-in that answers every property with a function and every call with another stand-in, so
 * that a module may keep it or a client over it (`drizzle(env.DB)`); what the module does with it
 * at import is the runs' to judge, where each binding is the run's own and its I/O is refused.
 */
function importTimeEnv(worker: SimWorker): Record<string, unknown> {
  const env: Record<string, unknown> = { ...worker.vars };
  for (const name of worker.bindings.keys()) env[name] = bindingStandIn({});
  return env;
}

/** An object (a binding) or a function (its methods, what they answer) that is a stand-in all the way down. */
function bindingStandIn(target: object): object {
  return new Proxy(target, {
    // Not a thenable: awaiting one would wait for nothing.
    get: (_target, key) => (key === "then" || typeof key === "symbol" ? undefined : bindingStandIn(() => {})),
    apply: () => bindingStandIn(() => {}),
    construct: () => bindingStandIn(() => {}),
  });
}

/** What a module that uses an API eutaxy does not simulate (the Cache API) as it loads throws. */
class NotSimulatedAtImport extends Error {
  constructor(readonly what: string) {
    super(notSimulatedMessage("the Worker", what));
  }
}

/** A module's use of an API eutaxy does not simulate as it loads: bad input at that line, naming the Worker. */
function notSimulatedAtImport(worker: SimWorker, error: NotSimulatedAtImport): InputError {
  const at = worker.module.whereThrown(error);
  const where = at === undefined ? shown(worker.entry) : `${shown(at.file)}:${at.line}:${at.column}`;
  return new InputError(where, notSimulatedMessage(`Worker ${worker.name}`, error.what));
}

/**
 * A Worker that throws while its modules are evaluated, as bad input: at the line of its own
 * files it threw at (a module its entry imports, say), naming the Worker by its entry.
 */
function threwAtImport(worker: SimWorker, error: unknown): InputError {
  const what = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  const entry = shown(worker.entry);
  const at = worker.module.whereThrown(error);
  if (at === undefined) return new InputError(entry, `the Worker threw at import: ${what}`);
  const where = `${shown(at.file)}:${at.line}:${at.column}`;
  const who = at.file === worker.entry ? "the Worker" : `the Worker ${entry}`;
  return new InputError(where, `${who} threw at import: ${what}`);
}

/**
 * Each named entrypoint `worker`'s service bindings reach is one its callee exports: a misspelt
 * one would fail every call at run time, and the check could say BOUNDED over Workers that
 * never reached each other.
 */
function exportedEntrypoints(
  worker: SimWorker,
  exportsOf: ReadonlyMap<SimWorker, Record<string, unknown>>,
): void {
  const config = worker.config;
  if (!config) return;
  for (const [i, service] of config.services.entries()) {
    const binding = worker.bindings.get(service.binding);
    if (service.entrypoint === undefined || binding?.kind !== "service" || binding.target.kind !== "worker") {
      continue;
    }
    const callee = binding.target.worker;
    const exported = namedEntrypoints(exportsOf.get(callee) ?? {});
    if (exported.includes(service.entrypoint)) continue;
    const known = exported.length
      ? `its entrypoints are ${exported.join(", ")}`
      : "it exports no entrypoint (a class extending WorkerEntrypoint)";
    // Services are not inherited: with an environment selected, they are all its own.
    const at = `${config.env !== undefined ? `env.${config.env}.` : ""}services[${i}]`;
    throw new InputError(
      config.file,
      `${at} binds ${service.binding} to entrypoint ${service.entrypoint} of ${callee.name} (${shown(callee.entry)}), which does not export it; ${known}`,
    );
  }
}

/**
 * `call`'s answer; the engine's finding that a run did not repeat itself (a replay that went
 * elsewhere) is the Worker escaping the simulation, not a fault of the check's own.
 */
function escaping<T>(call: () => T): T {
  try {
    return call();
  } catch (error) {
    if (error instanceof Error && error.message.startsWith("nondeterminism:")) {
      throw new SimulationError(error.message);
    }
    throw error;
  }
}

function drives(world: World, kind: Driver["kind"]): boolean {
  const drive = world.scenario.drive;
  return (Array.isArray(drive) ? drive : [drive as Driver]).some((d) => d.kind === kind);
}
