/**
 * One run: the driver's events delivered to the Worker under check, with every binding call an
 * effect the engine decides on.
 *
 * With `maxConcurrentInvocations` 1, one event at a time:
 *
 *   quiesce → take the oldest parked effect → engine.decide → perform → settle → quiesce …
 *
 * and after each event the platform's own work (queue batches, alarms) runs, in the order it
 * was queued, until none is left.
 *
 * With more, events and platform work interleave at every effect:
 *
 *   quiesce → list the pending steps (every parked effect; the next event and the next piece of
 *   platform work while fewer tasks are live than allowed) → engine.choose → for an effect,
 *   engine.decide → perform → settle; for a delivery, start it → quiesce …
 *
 * Quiescence means every live invocation is parked at an effect (or hosts a callee) or has
 * finished; a macrotask turn drains the microtasks that Worker code runs on, so after a turn
 * an invocation that is neither parked nor finished is waiting on something outside the
 * simulation, which is an error naming it rather than a hang. When invocations interleave, one
 * may also wait on another (a promise a module shares, a `blockConcurrencyWhile`): it is stuck
 * only when no step is left that could wake it.
 */

import { AsyncLocalStorage } from "node:async_hooks";
import { stripVTControlCharacters } from "node:util";
import type { OutboundRequest } from "../cloudflare.ts";
import type { SimEvent } from "../drivers/event.ts";
import {
  CLOCK_START_MS,
  Decision,
  type Engine,
  type FootprintEntry,
  type RunPlan,
  type StepOption,
} from "../engine.ts";
import { InputError, SimulationError, shown } from "../errors.ts";
import { isRpcTarget } from "./clone.ts";
import { nodejsCompat } from "./compatibility.ts";
import type {
  ClientResponse,
  Env,
  Exports,
  InvocationCall,
  Outcome,
  PlatformWork,
  RunContext,
} from "./context.ts";
import { type EffectScope, PLATFORM_WORK } from "./effect-scope.ts";
import { buildEnv } from "./env.ts";
import {
  activate,
  type DeterminismSource,
  GLOBAL_SCOPE,
  notSimulatedMessage,
  real,
  stepped,
} from "./globals.ts";
import { type EffectSink, Invocation, type ParkedEffect } from "./invocation.ts";
import { type ModuleStateChange, ModuleStateWatch, platformObject } from "./module-state.ts";
import { carryInvocation, releaseStorages } from "./node-async-hooks.ts";
import { outboundFetch } from "./outbound.ts";
import { lostConnection, rethrownOverRpc } from "./rpc-errors.ts";
import { runtimeModules } from "./runtime-modules.ts";
import type { ExecutionContextLike } from "./workers-module.ts";
import type { SimWorker, World } from "./world.ts";

/** Macrotask turns an invocation gets to reach an effect or finish before it counts as stuck. */
const QUIESCENCE_TURNS_MAX = 64;
/** Invocations one run may start, callees included. */
const INVOCATIONS_PER_RUN_MAX = 10_000;
/** Pieces of platform work (queue batches, alarms) one run may do. */
const PLATFORM_WORK_PER_RUN_MAX = 1_000;
/** Deadlocked critical sections a run ends at their time limit before it stops as stuck. */
const EXPIRED_SECTIONS_PER_RUN_MAX = 100;
/** Timer firings one run may do, so that an interval nothing clears ends. */
const TIMERS_PER_RUN_MAX = 100_000;
/** How long `ctx.waitUntil` work may go on after the response before the runtime cancels it. */
const WAIT_UNTIL_AFTER_RESPONSE_MS = 30_000;

/** Platform work in flight outside the simulation, and how to hand its result to the Worker. */
interface OutsideWork {
  readonly owner: Invocation | undefined;
  readonly settled: Promise<{ readonly ok: boolean; readonly value: unknown }>;
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: unknown) => void;
}

/** A timer a Worker set (`setTimeout`, `setInterval`, `scheduler.wait`), fired by the run loop. */
interface Timer {
  readonly id: number;
  readonly owner: Invocation;
  /** When it fires next, on the run's clock. */
  dueMs: number;
  readonly delayMs: number;
  readonly repeat: boolean;
  readonly callback: (...args: unknown[]) => void;
  readonly args: unknown[];
  /**
   * What the trace calls it: `timer of 5 ms`, `immediate` for a `setImmediate`, `body read` or
   * `storage.sync()` for the turn a Durable Object's wait on the runtime's I/O takes (`ioTurn`).
   */
  readonly name: string;
}

/** A pending step of an interleaved run: what the engine is offered, and how to take it. */
/** How a `Run` runs, besides its scenario and its plan. */
export interface RunOptions {
  /**
   * Exploring runs: watch the Workers' module-level state, between steps when interleaved
   * (`moduleStateChanged`), over the run when not (`moduleStateKept`).
   */
  readonly watchModuleState?: boolean;
  /** Whether the engine may inject a fault at an effect: `maxFaultsPerRun` above 0. */
  readonly faults?: boolean;
  /**
   * Interleaved runs: whose binding calls' answers reach them as steps of their own, so that
   * other invocations may run between a call taking effect and its caller going on. `objects`
   * (the default): invocations running in a Durable Object, whose code after an answer touches
   * the object's state, which the object's other invocations share. `all`: every invocation,
   * for Workers whose module-level state is shared and changes (`explore`); the code after an
   * answer in a plain Worker otherwise touches only its own invocation's state, so that its
   * arrival commutes with every other step and splitting it off changes no outcome.
   */
  readonly answers?: "objects" | "all";
}

interface Step {
  readonly option: StepOption;
  take(): void;
}

/** How far ahead an alarm must ring, before the next event, for the check to say so (`alarmBeforeEvent`). */
const ALARM_AHEAD_NOTED_MS = 1000;
/** How late a driver's event must be delivered for the check to say so (`lateEvent`). */
const LATE_EVENT_NOTED_MS = 1000;

export class Run implements RunContext, EffectSink, DeterminismSource {
  readonly responses: ClientResponse[] = [];
  /**
   * The platform's work delivered in this run (`InvocationCall.work`): whether some delivery of
   * it returned, and the first that threw.
   */
  readonly handled = new Map<string, { returned: boolean; threw?: string }>();
  private readonly parked: ParkedEffect[] = [];
  private readonly live = new Set<Invocation>();
  private readonly exports = new Map<SimWorker, Exports>();
  /** Each Worker's env in this run: one object for every request, as workerd gives it. */
  private readonly envs = new Map<SimWorker, Env>();
  private readonly pending: PlatformWork[] = [];
  /** Interleaved runs: platform work of each limited group under way (`PlatformWork.limit`). */
  private readonly groupTasks = new Map<string, number>();
  private readonly platformCounts = new Map<string, number>();
  private readonly memos = new Map<string, unknown>();
  private running: Invocation | undefined;
  /** The Worker whose module is being evaluated, before any invocation runs its code. */
  private instantiating: SimWorker | undefined;
  private stream = "init";
  /** Set from the run's plan; until then (no plan yet) lines are kept. */
  tracing = true;
  private invocations = 0;
  private platformWork = 0;
  /**
   * The engine's virtual clock, read after every decision (the only time it moves). Reading a
   * copy matters: SQLite inside the engine asks `Date.now()` for CURRENT_TIMESTAMP while the
   * engine is busy, and that must neither re-enter the engine nor see real time.
   */
  private clockMs: number;
  /**
   * How far the platform's own work has moved the clock past the engine's: an alarm starts at
   * its time (`advanceClockTo`). Time stays monotonic and still moves at every decision.
   */
  private skewMs = 0;
  /** A failure of the simulation itself, raised where Worker code could have caught it. */
  private failure: Error | undefined;
  /** Invocations killed by a fault in this run. */
  private deaths = 0;
  /** Critical sections this run ended at their time limit, each a deadlock (`cancelHung`). */
  private expiredSections = 0;
  /** What happens when the clock reaches a time, if it gets there (`deadline`). */
  private readonly deadlines: Deadline[] = [];
  /** Effects the engine decided on in this run, whatever it decided. */
  effects = 0;
  /** Macrotask turns taken (`turn`). */
  eventLoopTurns = 0;
  /** The first delivery of a driver's event that threw, and what it threw, for the report. */
  firstThrow: { readonly invocation: string; readonly error: string } | undefined;
  /**
   * One invocation at a time: the first alarm that rang a second or more on, before the next
   * event (which a client sending at once would have sent before it).
   */
  alarmBeforeEvent: { readonly alarm: string; readonly aheadMs: number; readonly event: string } | undefined;
  /**
   * The first driver's event delivered a second or more after the driver sent it, because the
   * invocations before it held every place `maxConcurrentInvocations` gives.
   */
  lateEvent: { readonly event: string; readonly lateMs: number } | undefined;
  /**
   * The driver's events (by index) an interleaved run's schedule made late: a step it chose moved
   * the clock past their time while a step that needs no time was offered (`lateEvent` leaves
   * them out).
   */
  private readonly lateByChoice = new Set<number>();
  /**
   * In an interleaved run, the requests the driver sends at a time of their own after the run's
   * start (by index, with how the report names them: `req-2 (sent at 50 ms)`), and the events
   * whose invocations overlapped another task's (one was live while the other started).
   */
  readonly sentApart = new Map<number, string>();
  readonly overlapped = new Set<number>();
  /** The driver's events (by index) whose task is live. */
  private readonly liveEvents = new Set<number>();
  /** The outbound requests the scenario's scripts answered, in order (`FinalState.outbound`). */
  readonly outbound: OutboundRequest[] = [];
  /** Queues no Worker of the scenario consumes that a Worker sent to, each with the first binding it sent through. */
  readonly unconsumed = new Map<string, string>();
  /** The D1 bindings a Worker opened a session through that may read a replica (`replicaSession`). */
  readonly replicaSessions = new Set<string>();
  /** The platform's retry the run's bound refused with the highest delivery, if any. */
  retryCut:
    | {
        readonly work: string;
        readonly delivery: number;
        readonly deliveries: number;
        readonly follows: string;
      }
    | undefined;
  /** Interleaved runs: events and platform work started and not over (resends included). */
  private tasks = 0;
  /** Interleaved runs: what `deliver` waits on, by top-level invocation, until it ends. */
  private readonly ending = new Map<Invocation, () => void>();
  /** Platform work in flight outside the simulation (`outside`), in the order it started. */
  private readonly outsideWork: OutsideWork[] = [];
  /** Timers set and not fired or cleared, by id, in the order they were set. */
  private readonly timers = new Map<number, Timer>();
  private timerIds = 0;
  private timersFired = 0;
  /** Whether an invocation that ended left work behind (`Invocation.whenOver`). */
  private overWork = false;
  /** Exploring runs that watch the Workers' module-level state (module-state.ts). */
  private readonly moduleState: ModuleStateWatch | undefined;
  /** Interleaved runs: the first module-level variable a step changed, when the run watches them. */
  moduleStateChanged: ModuleStateChange | undefined;
  /**
   * Runs of one invocation at a time: a module-level variable an invocation changed before
   * another of its Worker was delivered, when the run watches them: that one found what the
   * ones before it left there. A run of one request changes what no later one sees.
   */
  moduleStateKept: ModuleStateChange | undefined;
  /** Runs of one invocation at a time: the first change so far to each Worker's module state. */
  private readonly moduleStateLeft = new Map<string, ModuleStateChange>();
  /**
   * Interleaved runs: binding calls that took effect and whose answer has not reached their
   * invocation yet; each is a step of its own (`answerSteps`).
   */
  private readonly answers: Answer[] = [];
  /** Interleaved runs: the effects that host a callee (`invocation effect`), whose answer is the callee's. */
  private readonly hosting = new Set<string>();
  /** Interleaved runs: the effect the last step performed, whose answer is the default next. */
  private lastPerformed: ParkedEffect | undefined;

  constructor(
    readonly engine: Engine,
    readonly world: World,
    private readonly events: readonly SimEvent[],
    /** `maxConcurrentInvocations`: tasks (events, platform work) live at once. */
    private readonly concurrency = 1,
    options: RunOptions = {},
  ) {
    this.clockMs = engine.nowMs();
    if (options.watchModuleState) this.moduleState = new ModuleStateWatch();
    this.faults = options.faults ?? true;
    this.answersOf = options.answers ?? "objects";
  }

  /** Which binding calls' answers are steps of their own in an interleaved run (`RunOptions.answers`). */
  private readonly answersOf: "objects" | "all";

  /** Whether the engine may inject a fault at an effect: `maxFaultsPerRun` above 0. */
  private readonly faults: boolean;

  get current(): Invocation | undefined {
    return this.running;
  }

  fillRandom(buf: Uint8Array): void {
    this.engine.fillRandom(this.stream, buf);
  }

  nowMs(): number {
    return this.clockMs + this.skewMs;
  }

  advanceClockTo(ms: number): void {
    this.reachDeadlines(ms);
    this.moveClockTo(ms);
  }

  /** Reaches the deadlines due by `ms`, in order, each at its own time (`deadline`). */
  private reachDeadlines(ms: number): void {
    for (;;) {
      let next: Deadline | undefined;
      for (const deadline of this.deadlines) {
        if (deadline.atMs <= ms && (!next || deadline.atMs < next.atMs)) next = deadline;
      }
      if (!next) break;
      this.deadlines.splice(this.deadlines.indexOf(next), 1);
      this.moveClockTo(next.atMs);
      next.reach();
    }
  }

  private moveClockTo(ms: number): void {
    const now = this.nowMs();
    if (ms <= now) return;
    this.skewMs += ms - now;
    this.engine.setClockSkew(this.skewMs);
  }

  deadline(atMs: number, reach: () => void): () => void {
    const deadline: Deadline = { atMs, reach };
    this.deadlines.push(deadline);
    return () => {
      const at = this.deadlines.indexOf(deadline);
      if (at >= 0) this.deadlines.splice(at, 1);
    };
  }

  fetch(input: unknown, init: unknown): Promise<Response> {
    return outboundFetch(this, input, init);
  }

  park(effect: ParkedEffect): void {
    this.parked.push(effect);
  }

  log(level: string, args: readonly unknown[]): void {
    if (!this.tracing) return;
    this.trace(`${this.running?.id ?? "init"} console.${level}: ${loggedText(args)}`);
  }

  outside<T>(start: () => Promise<T>): Promise<T> {
    let settled: OutsideWork["settled"];
    try {
      settled = start().then(
        (value) => ({ ok: true, value }),
        (value: unknown) => ({ ok: false, value }),
      );
    } catch (error) {
      return Promise.reject(error);
    }
    return new Promise<T>((resolve, reject) => {
      this.outsideWork.push({
        owner: this.running,
        settled,
        resolve: resolve as (value: unknown) => void,
        reject,
      });
    });
  }

  /**
   * One macrotask turn of quiescence, which drains the microtasks Worker code runs on; a failure
   * of the simulation raised meanwhile ends the run. Then the oldest piece of outside work, once
   * it has its result, is handed it as the invocation that started it: one per turn, in the
   * order they started, so that when and in what order the platform finished them never shows.
   * True when the turn handed some over (it does not count as one of the quiescence's turns).
   */
  private async turn(): Promise<boolean> {
    await new Promise((resolve) => real.setImmediate(resolve));
    this.eventLoopTurns++;
    if (this.failure) throw this.failure;
    const work = this.outsideWork.shift();
    if (!work) return false;
    const { ok, value } = await work.settled;
    if (work.owner && !work.owner.live) return true;
    this.resume(work.owner);
    if (ok) work.resolve(value);
    else work.reject(value);
    return true;
  }

  setTimer(
    callback: (...args: unknown[]) => void,
    ms: number,
    args: unknown[],
    repeat: boolean,
    named?: string,
  ): number {
    const owner = this.running;
    if (!owner) throw new Error(GLOBAL_SCOPE);
    const delayMs = Math.max(0, Math.floor(ms));
    const id = ++this.timerIds;
    const name = named ?? `timer of ${delayMs} ms`;
    this.timers.set(id, { id, owner, dueMs: this.nowMs() + delayMs, delayMs, repeat, callback, args, name });
    owner.timers++;
    return id;
  }

  ioTurn(name: string): Promise<void> | undefined {
    // A Durable Object's code shares the object's state with the other calls on it, which may
    // come in while it waits: a turn of 0 ms, which the schedule orders as a timer.
    if (!this.running?.resource?.startsWith("DO:")) return undefined;
    return new Promise((resolve) => this.setTimer(() => resolve(), 0, [], false, name));
  }

  clearTimer(id: number): void {
    const timer = this.timers.get(id);
    if (!timer) return;
    this.timers.delete(timer.id);
    timer.owner.timers--;
  }

  /**
   * The timer that fires next: the earliest due (the first set among equals) whose invocation
   * is still at work, among those `eligible` allows. Timers of invocations that died or
   * finished are dropped, as the runtime drops them when a request's work is over.
   */
  private nextTimer(eligible: (owner: Invocation) => boolean = () => true): Timer | undefined {
    let next: Timer | undefined;
    for (const timer of this.timers.values()) {
      if (!timer.owner.live || timer.owner.finished) {
        this.clearTimer(timer.id);
        continue;
      }
      if (!eligible(timer.owner)) continue;
      if (!next || timer.dueMs < next.dueMs) next = timer;
    }
    return next;
  }

  /**
   * Whether firing `timer` comes too late: it is due more than 30 s after its invocation
   * answered, when the runtime has canceled its `waitUntil` work ("cancellation will be delayed
   * until the promise has completed or until an additional 30 seconds have elapsed, whichever
   * happens first"). The invocation is then finished, its timers dropped, and nothing fires.
   * Asked of the earliest timer only, so work due sooner has run.
   */
  private tooLate(timer: Timer): boolean {
    const { owner } = timer;
    if (owner.endedAtMs === undefined || owner.finished || !owner.live) return false;
    if (timer.dueMs <= owner.endedAtMs + WAIT_UNTIL_AFTER_RESPONSE_MS) return false;
    owner.cancelWaitUntil();
    for (const other of [...this.timers.values()]) if (other.owner === owner) this.clearTimer(other.id);
    this.trace(`${owner.id} waitUntil work canceled: the runtime allows it 30 s after the response`);
    return true;
  }

  /** Fires `timer` as its invocation: the clock moves to its time, then its callback runs. */
  private fireTimer(timer: Timer): void {
    if (this.tooLate(timer)) return;
    if (++this.timersFired > TIMERS_PER_RUN_MAX) {
      throw new SimulationError(
        `a run fired more than ${TIMERS_PER_RUN_MAX} timers (${timer.owner.id} set the last): ` +
          "a Worker whose interval nothing clears never lets its run end; eutaxy stops it there",
      );
    }
    // A deadline on the way may end its invocation (its object reset at a time limit): the timer
    // then never fires, and the clock stays there.
    this.reachDeadlines(timer.dueMs);
    if (!timer.owner.live) {
      this.clearTimer(timer.id);
      return;
    }
    this.moveClockTo(timer.dueMs);
    if (timer.repeat) {
      // The next tick counts from this one, as the platform's intervals do: no catching up.
      timer.dueMs = this.nowMs() + Math.max(1, timer.delayMs);
    } else {
      this.clearTimer(timer.id);
    }
    this.trace(`${timer.owner.id} ${timer.name} fired`);
    this.resume(timer.owner);
    try {
      timer.callback(...timer.args);
    } catch (error) {
      // workerd reports a timer's exception and carries on: the request does not fail.
      this.trace(`${timer.owner.id} timer callback threw ${describe(error)}`);
    }
  }

  exportsOf(worker: SimWorker): Exports {
    const exports = this.exports.get(worker);
    if (!exports) throw new Error(`Worker ${worker.name} is not loaded in this run`);
    return exports;
  }

  later(work: PlatformWork): void {
    this.pending.push(work);
  }

  /**
   * Forgets the platform work left with nothing to do (an alarm deleted or set anew since it was
   * scheduled): starting it would do nothing, and it takes no name, so the work that does start
   * is named as the user counts it.
   */
  private dropGoneWork(): void {
    for (let at = this.pending.length - 1; at >= 0; at--) {
      if (this.pending[at]?.gone?.()) this.pending.splice(at, 1);
    }
  }

  memo<T>(key: string, create: () => T): T {
    if (!this.memos.has(key)) this.memos.set(key, create());
    return this.memos.get(key) as T;
  }

  respond(response: ClientResponse): void {
    this.responses.push(response);
  }

  outboundAnswered(request: OutboundRequest): void {
    this.outbound.push(request);
  }

  sentUnconsumed(queue: string, binding: string): void {
    if (!this.unconsumed.has(queue)) this.unconsumed.set(queue, binding);
  }

  replicaSession(binding: string): void {
    this.replicaSessions.add(binding);
  }

  retryRefused(work: string, delivery: number, deliveries: number, follows: string): void {
    if (!this.retryCut || deliveries > this.retryCut.deliveries)
      this.retryCut = { work, delivery, deliveries, follows };
  }

  trace(line: string): void {
    if (this.tracing) this.engine.trace(line);
  }

  /** A failure that must end the check, raised by a binding where the Worker could catch it. */
  fail(error: Error): void {
    this.failure ??= error;
  }

  processEnv(): Record<string, string> {
    const worker = this.currentWorker();
    return this.memo(`process.env:${worker.name}`, () => processEnvOf(worker));
  }

  spinning(reads: number): Error {
    const who = this.running
      ? `invocation ${this.running.id} of Worker ${this.running.worker}`
      : "a Worker's module";
    return new SimulationError(
      `${who} read the clock ${reads.toLocaleString("en-US")} times without waiting for anything: it waits for time to pass in a loop, but the run's clock moves only when the code awaits (a binding call, a timer); production ends such a request at its CPU time limit`,
    );
  }

  inGlobalScope(): boolean {
    return this.instantiating !== undefined;
  }

  notSimulated(what: string): Error {
    const worker = this.currentWorker();
    return new InputError(worker.entry, notSimulatedMessage(`Worker ${worker.name}`, what));
  }

  /** The Worker whose code is running: an invocation's, or the one whose module is being evaluated. */
  private currentWorker(): SimWorker {
    const name = this.running?.worker ?? this.instantiating?.name;
    return this.world.workers.find((w) => w.name === name) ?? this.world.main;
  }

  async execute(plan: RunPlan): Promise<void> {
    this.tracing = plan.trace;
    const deactivate = activate(this);
    try {
      for (const worker of this.world.workers) this.instantiate(worker);
      if (this.concurrency > 1) {
        await this.interleave(plan.events);
      } else {
        this.moduleState?.start();
        for (const [at, index] of plan.events.entries()) {
          const event = this.events[index];
          if (!event) throw new Error(`the engine planned event ${index}, which the drivers do not have`);
          this.sendAt(event);
          await event.deliver(this, index);
          const next = plan.events[at + 1];
          await this.drainPlatformWork(next === undefined ? undefined : this.events[next]);
        }
      }
      // The invocations over by the end: what the runtime does as each ends (disposing the stubs
      // it held) runs before the invariants read the final state.
      this.waiting();
      if (this.overWork) await new Promise((resolve) => real.setImmediate(resolve));
    } finally {
      deactivate();
      // Nothing follows a run's async context once it is over (what a run left behind finds no
      // run), and the promises of the code between runs carry no hook.
      if (this.concurrency > 1) stopFollowingInvocations();
      // Nor does any AsyncLocalStorage its Workers made (Node keeps calling each at every promise).
      releaseStorages();
    }
  }

  /** Evaluates a Worker's module anew, so no module state survives from an earlier run. */
  private instantiate(worker: SimWorker): void {
    this.resume(undefined, `init:${worker.name}`);
    // The `env` of `cloudflare:workers` is an object of its own, with the same bindings.
    const moduleEnv = { ...this.envOf(worker) };
    this.instantiating = worker;
    try {
      const exports = worker.module.instantiate(
        runtimeModules(
          () => moduleEnv,
          // `waitUntil` of cloudflare:workers: the running invocation's, refused at the top level.
          (promise) => {
            if (this.instantiating) throw new Error(GLOBAL_SCOPE);
            this.running?.waitUntil(promise);
          },
        ),
      );
      this.exports.set(worker, exports);
      this.moduleState?.add(worker.name, exports);
    } finally {
      this.instantiating = undefined;
    }
  }

  /**
   * Runs the platform's work after an event, one invocation at a time; `next` is the event after
   * it. An event the driver sends at a later time waits for the work due before it, and the work
   * due after it waits for it.
   */
  private async drainPlatformWork(next?: SimEvent): Promise<void> {
    const until = next?.atMs;
    while (this.pending.length > 0) {
      this.dropGoneWork();
      const work = nextDue(
        this.pending.filter((w) => until === undefined || dueBy(w, until)),
        this.nowMs(),
      );
      if (!work) return;
      this.pending.splice(this.pending.indexOf(work), 1);
      this.countPlatformWork();
      const n = (this.platformCounts.get(work.kind) ?? 0) + 1;
      this.platformCounts.set(work.kind, n);
      const before = this.nowMs();
      await work.run(this, `${work.kind}-${n}`);
      const aheadMs = this.nowMs() - before;
      if (work.kind === "alarm" && next && until === undefined && aheadMs >= ALARM_AHEAD_NOTED_MS) {
        this.alarmBeforeEvent ??= { alarm: `${work.kind}-${n}`, aheadMs, event: next.id };
      }
    }
  }

  /**
   * A driver's event sent at a given time: the clock moves to it. One the invocations before it
   * kept from being delivered then (one at a time, an alarm that waits on a timer past it) is
   * delivered late, and the trace says when.
   */
  private sendAt(event: SimEvent, index?: number): void {
    if (event.atMs === undefined) return;
    const sent = `${event.id} ${event.arrives ?? "sent"} at ${event.atMs - CLOCK_START_MS} ms`;
    if (event.atMs >= this.nowMs()) {
      this.advanceClockTo(event.atMs);
      this.trace(sent);
    } else {
      const chosen = index !== undefined && this.lateByChoice.has(index);
      const why = chosen ? "after the steps the schedule ran first" : "when the work before it let it in";
      this.trace(`${sent}, delivered at ${this.nowMs() - CLOCK_START_MS} ms, ${why}`);
      const lateMs = this.nowMs() - event.atMs;
      if (lateMs >= LATE_EVENT_NOTED_MS && !chosen) this.lateEvent ??= { event: event.id, lateMs };
    }
  }

  /**
   * An interleaved run: before every step the engine chooses among the pending ones, so which
   * invocation proceeds at each effect, and when each event starts, is part of the schedule.
   */
  private async interleave(events: readonly number[]): Promise<void> {
    let next = 0;
    this.moduleState?.start();
    for (;;) {
      await this.quiesceInterleaved(next < events.length);
      if (this.moduleState && !this.moduleStateChanged) this.moduleStateChanged = this.moduleState.changed();
      const steps = this.effectSteps();
      // The steps that need no time to pass: a binding call or its answer, an event due now.
      const immediate = new Set(steps);
      // The next event, when the driver sends it at a time still to come and it may start: what
      // is due after it waits for it, and it waits until nothing else can run before its time.
      const index = events[next];
      const atMs = index === undefined ? undefined : this.events[index]?.atMs;
      const later =
        atMs !== undefined && atMs > this.nowMs() && this.tasks < this.concurrency ? atMs : undefined;
      const timer = this.timerStep(later);
      if (timer) steps.push(timer);
      if (this.tasks < this.concurrency) {
        // Asked at every step: with no platform work pending, nothing to filter or ask the store.
        if (this.pending.length > 0) this.dropGoneWork();
        const work =
          this.pending.length === 0
            ? undefined
            : nextDue(
                this.pending.filter(
                  (w) =>
                    (!w.limit || (this.groupTasks.get(w.limit.group) ?? 0) < w.limit.max) &&
                    (later === undefined || dueBy(w, later)),
                ),
                this.nowMs(),
              );
        if (index !== undefined && (later === undefined || (steps.length === 0 && !work))) {
          const event = this.eventStep(index, () => next++);
          if (later === undefined) immediate.add(event);
          steps.push(event);
        }
        if (work) steps.push(this.platformStep(work));
      }
      if (steps.length === 0) return;
      let chosen: number;
      try {
        chosen = this.engine.choose(steps.map((step) => step.option));
      } catch (error) {
        throw new SimulationError(error instanceof Error ? error.message : String(error));
      }
      this.clockMs = this.engine.nowMs();
      const before = this.lastPerformed;
      const clockBefore = this.nowMs();
      (steps[chosen] as Step).take();
      // Only the step that performed an effect leaves it for its answer to follow.
      if (this.lastPerformed === before) this.lastPerformed = undefined;
      // A step that moved the clock past a driver's event while another step that needs no time
      // was offered (an invocation's next call, the event before it) made that event late by the
      // schedule's choice: other runs take that step first, which may free a place for it in
      // time, so its lateness is no sign that no run had it overlap the invocations before it.
      if (this.nowMs() > clockBefore && steps.some((step, i) => i !== chosen && immediate.has(step))) {
        for (const i of events.slice(next)) {
          const atMs = this.events[i]?.atMs;
          if (atMs !== undefined && atMs > clockBefore && atMs < this.nowMs()) this.lateByChoice.add(i);
        }
      }
    }
  }

  /**
   * The next effect of every parked invocation, then the answer of every binding call that took
   * effect and has not reached its invocation, each in the order the invocations started.
   */
  private effectSteps(): Step[] {
    const order = new Map<Invocation, number>();
    for (const invocation of this.live) order.set(invocation, order.size);
    const parked = this.parked
      .filter((effect) => effect.invocation.live)
      .sort((a, b) => (order.get(a.invocation) ?? 0) - (order.get(b.invocation) ?? 0) || a.index - b.index);
    const steps = [...this.performSteps(parked), ...this.answerSteps(order)];
    // The answer of the call the last step made comes first, so that it is the default next step
    // (the engine's default continues the last step's invocation with its first option): an
    // answer comes at once unless the schedule says otherwise, even where the invocation has
    // another call pending (`Promise.all`).
    const performed = this.lastPerformed;
    if (performed === undefined) return steps;
    const next = steps.findIndex(
      (step) =>
        step.option.answer &&
        step.option.effect === performed.index &&
        step.option.invocation === performed.invocation.id,
    );
    if (next > 0) steps.unshift(...steps.splice(next, 1));
    return steps;
  }

  /**
   * The arrival of each answer still on its way: what it wakes is its invocation's own code,
   * and, in a Durable Object, the object's state (module-level state, which every invocation of
   * a Worker shares, is in no footprint: when a run changes it, `explore` checks again with
   * every answer split and without the reduction).
   */
  private answerSteps(order: Map<Invocation, number>): Step[] {
    if (this.answers.length === 0) return [];
    for (let i = this.answers.length - 1; i >= 0; i--) {
      if (!(this.answers[i] as Answer).effect.invocation.live) this.answers.splice(i, 1);
    }
    const waiting = [...this.answers].sort(
      (a, b) => (order.get(a.effect.invocation) ?? 0) - (order.get(b.effect.invocation) ?? 0),
    );
    return waiting.map((answer) => {
      const { effect } = answer;
      const { invocation } = effect;
      return {
        option: {
          label: `${invocation.id} answer of effect #${effect.index} (${effect.label})`,
          invocation: invocation.id,
          effect: effect.index,
          answer: true,
          footprint: codeFootprint(invocation),
        },
        take: () => {
          this.answers.splice(this.answers.indexOf(answer), 1);
          if (this.lastPerformed !== effect)
            this.trace(`${invocation.id} gets the answer of effect #${effect.index}`);
          invocation.pending--;
          this.answer(effect, answer.decision, answer.ok, answer.value);
        },
      };
    });
  }

  private performSteps(parked: readonly ParkedEffect[]): Step[] {
    return parked.map((effect) => ({
      option: {
        label: `${effect.invocation.id} effect #${effect.index} (${effect.label})`,
        invocation: effect.invocation.id,
        effect: effect.index,
        // A call whose answer comes as a step of its own runs none of its caller's code, which
        // the answer's step footprints; unless a fault there may kill the caller, and with it
        // a Durable Object it runs in.
        footprint: this.answersTravel(effect) && !this.faults ? callFootprint(effect) : footprintOf(effect),
      },
      take: () => {
        this.parked.splice(this.parked.indexOf(effect), 1);
        this.lastPerformed = effect;
        this.executeEffect(effect);
      },
    }));
  }

  /**
   * Firing the earliest timer of an invocation none of whose binding calls waits for the engine:
   * neither its own nor one of a callee working on its call (a binding call takes no time, so a
   * deadline raced against it never wins), as `drive` fires timers only when nothing is parked.
   * A call already under way, a script answering it, may wait on timers.
   * What the woken code touches until its next effect is unknown, and the clock it moves is
   * shared: its footprint is empty, so it is ordered against every other step.
   */
  private timerStep(beforeMs = Number.POSITIVE_INFINITY): Step | undefined {
    const timer = this.nextTimer(
      (owner) =>
        !this.parked.some((effect) => effect.invocation.live && workingFor(effect.invocation, owner)) &&
        !this.answers.some(({ effect }) => effect.invocation.live && workingFor(effect.invocation, owner)),
    );
    if (!timer || timer.dueMs > beforeMs) return undefined;
    return {
      option: {
        label: `${timer.owner.id} ${timer.name}`,
        invocation: timer.owner.id,
        footprint: [],
      },
      take: () => this.fireTimer(timer),
    };
  }

  /** Starting driver event `index`: its first delivery, and its resends when that one dies. */
  private eventStep(index: number, started: () => void): Step {
    const event = this.events[index];
    if (!event) throw new Error(`the engine planned event ${index}, which the drivers do not have`);
    // Sent at a time to come, it moves the shared clock, as a timer does.
    const moves = event.atMs !== undefined && event.atMs > this.nowMs();
    return {
      option: {
        label: `deliver ${event.id}#1`,
        invocation: `${event.id}#1`,
        footprint: moves ? [] : (event.footprint ?? []),
      },
      take: () => {
        this.sendAt(event, index);
        started();
        if (event.arrives !== "scheduled" && event.atMs !== undefined && event.atMs > CLOCK_START_MS) {
          this.sentApart.set(index, `${event.id} (sent at ${event.atMs - CLOCK_START_MS} ms)`);
        }
        this.startTask(() => event.deliver(this, index), index);
      },
    };
  }

  /** Starting the oldest piece of platform work its group's limit lets start (a queue batch, an alarm). */
  private platformStep(work: PlatformWork): Step {
    const n = (this.platformCounts.get(work.kind) ?? 0) + 1;
    const id = `${work.kind}-${n}`;
    const invocation = work.invocation ?? `${id}#1`;
    return {
      // Platform work reads the state it works on as it starts (a queue's messages, an alarm's
      // time): unknown footprint.
      option: { label: `deliver ${invocation}`, invocation, footprint: [] },
      take: () => {
        this.pending.splice(this.pending.indexOf(work), 1);
        this.countPlatformWork();
        this.platformCounts.set(work.kind, n);
        const group = work.limit?.group;
        if (group === undefined) {
          this.startTask(() => work.run(this, id));
          return;
        }
        this.groupTasks.set(group, (this.groupTasks.get(group) ?? 0) + 1);
        const over = () => this.groupTasks.set(group, (this.groupTasks.get(group) ?? 1) - 1);
        this.startTask(() => work.run(this, id).finally(over));
      },
    };
  }

  /** Starts a task: a driver's event (`event`, its index) or a piece of platform work. */
  private startTask(task: () => Promise<void>, event?: number): void {
    if (this.tasks > 0) {
      // It overlaps every task still live, and they it.
      for (const live of this.liveEvents) this.overlapped.add(live);
      if (event !== undefined) this.overlapped.add(event);
    }
    if (event !== undefined) this.liveEvents.add(event);
    this.tasks++;
    let done: Promise<void>;
    try {
      done = task();
    } catch (error) {
      done = Promise.reject(error);
    }
    const over = () => {
      this.tasks--;
      if (event !== undefined) this.liveEvents.delete(event);
    };
    done.then(over, (error: unknown) => {
      over();
      this.failure ??= error instanceof Error ? error : new Error(String(error));
    });
  }

  /**
   * Quiescence of an interleaved run: macrotask turns until every live invocation is parked or
   * finished, the invocations that ended have been told to their drivers (which may resend),
   * and what still runs is waiting on another invocation: a turn changed nothing and some step
   * is pending that could wake it.
   */
  private async quiesceInterleaved(eventsLeft: boolean): Promise<void> {
    for (;;) {
      if (await this.settleInterleaved(eventsLeft)) return;
      this.cancelHung();
    }
  }

  /** Macrotask turns until quiescent (true), or until the turns run out with some invocation stuck. */
  private async settleInterleaved(eventsLeft: boolean): Promise<boolean> {
    let before = "";
    for (let turn = 0; turn < QUIESCENCE_TURNS_MAX; turn++) {
      if (await this.turn()) {
        turn--;
        continue;
      }
      if (this.tellEnded()) continue;
      const waiting = this.waiting();
      if (waiting.length === 0) return true;
      const now = `${this.parked.length} ${waiting.length} ${this.tasks} ${this.invocations}`;
      // Asked only once a turn changed nothing: a turn that did is followed by another.
      const wakeable = () =>
        this.parked.some((effect) => effect.invocation.live) ||
        this.answers.some(({ effect }) => effect.invocation.live) ||
        ((eventsLeft || this.pending.length > 0) && this.tasks < this.concurrency) ||
        this.nextTimer() !== undefined;
      if (now === before && wakeable()) return true;
      before = now;
    }
    return false;
  }

  /** Resolves `deliver` for top-level invocations that finished or died; says if there were any. */
  private tellEnded(): boolean {
    let told = false;
    for (const [invocation, resolve] of this.ending) {
      if (invocation.live && !invocation.finished) continue;
      this.ending.delete(invocation);
      resolve();
      told = true;
    }
    return told;
  }

  /** Live invocations that are neither parked nor finished (dropping the ones that are over). */
  private waiting(): Invocation[] {
    const waiting: Invocation[] = [];
    for (const invocation of this.live) {
      if (!invocation.live || invocation.finished) {
        this.live.delete(invocation);
        if (invocation.over()) this.overWork = true;
      } else if (invocation.pending === 0 && invocation.timers === 0) {
        waiting.push(invocation);
      }
    }
    return waiting;
  }

  private countPlatformWork(): void {
    if (++this.platformWork > PLATFORM_WORK_PER_RUN_MAX) {
      const done = [...this.platformCounts].map(([kind, n]) => `${n} ${kind}`).join(", ");
      throw new SimulationError(
        `a run did more than ${PLATFORM_WORK_PER_RUN_MAX} pieces of platform work (${done}): ` +
          "a Worker that keeps setting an alarm or re-queueing messages never lets its run end; eutaxy stops it there",
      );
    }
  }

  async deliver(id: string, call: InvocationCall): Promise<Outcome> {
    if (this.concurrency === 1 && this.moduleState && !this.moduleStateKept) {
      for (let change = this.moduleState.changed(); change; change = this.moduleState.changed()) {
        if (!this.moduleStateLeft.has(change.worker)) this.moduleStateLeft.set(change.worker, change);
      }
      this.moduleStateKept = this.moduleStateLeft.get(call.worker.name);
    }
    const invocation = this.spawn(id, call.worker, undefined);
    invocation.resource = call.resource;
    this.trace(`deliver ${id}`);
    let outcome: Outcome = { kind: "died" };
    invocation.whenCanceled((error) => {
      outcome = { kind: "threw", error };
    });
    // An alarm whose object was reset under it failed then, whatever its handler does after.
    invocation.whenOrphaned((error) => {
      outcome = { kind: "threw", error };
    });
    this.handle(invocation, call).then(
      (value) => {
        if (!invocation.live) return;
        invocation.state = "answered";
        invocation.endedAtMs = this.nowMs();
        if (invocation.orphaned) {
          this.traceUnheard(invocation, `returned ${summarize(value)}`);
          return;
        }
        outcome = { kind: "returned", value };
      },
      (error) => {
        if (!invocation.live) return;
        this.threw(invocation, error);
        if (invocation.orphaned) return;
        this.firstThrow ??= { invocation: id, error: describe(error) };
        outcome = { kind: "threw", error };
      },
    );
    if (this.concurrency > 1) {
      // The run loop steps every invocation; this one is over when it has finished or died.
      await new Promise<void>((resolve) => this.ending.set(invocation, resolve));
    } else {
      await this.drive();
    }
    // What the invocation answered stays answered if it dies afterwards, in its ctx.waitUntil
    // work: the client has the response by then. `outcome` is still "died" if it never did.
    // (Set in callbacks, which the compiler cannot follow.)
    const ended = outcome as Outcome;
    if (call.work !== undefined) this.noteHandled(call.work, id, ended);
    if (ended.kind === "returned" && !invocation.live) return { ...ended, diedAfter: true };
    return ended;
  }

  private noteHandled(work: string, id: string, outcome: Outcome): void {
    const handled = this.handled.get(work) ?? { returned: false };
    if (outcome.kind === "returned") handled.returned = true;
    if (outcome.kind === "threw") handled.threw ??= `${id} threw ${describe(outcome.error)}`;
    this.handled.set(work, handled);
  }

  host(caller: Invocation, effect: number, call: InvocationCall): Promise<unknown> {
    this.hosting.add(`${caller.id} ${effect}`);
    const callee = this.spawn(`${caller.id}/${effect}`, call.worker, caller);
    callee.resource = call.resource;
    // Said before any of the callee's code runs: what it traces before a line that names it (a
    // Durable Object's storage calls, its constructor's) is then read as its own, not its caller's.
    this.trace(`host ${callee.id}`);
    return new Promise((resolve, reject) => {
      // The caller's call fails with `error`: what the caller sees of its callee's end, which the
      // trace would otherwise not say (nothing, if the callee died with it).
      const fail = (error: Error) => {
        this.resume(caller);
        if (this.tracing && caller.live)
          this.trace(`${caller.id} effect #${effect} failed: ${describe(error)}`);
        reject(error);
      };
      callee.whenDead(() => {
        // A caller that died first (and took its service callees along) hears nothing more.
        if (!callee.orphaned && caller.live) fail(lostConnection());
      });
      callee.whenOrphaned(fail);
      callee.whenCanceled((error) => {
        if (callee.orphaned) return;
        this.resume(caller);
        reject(error);
      });
      this.handle(callee, call).then(
        (value) => {
          if (!callee.live) return;
          callee.state = "answered";
          callee.endedAtMs = this.nowMs();
          if (callee.orphaned) {
            this.traceUnheard(callee, `returned ${summarize(value)}`);
            return;
          }
          if (this.tracing) this.trace(`${callee.id} returned ${summarize(value)}`);
          this.resume(caller);
          resolve(value);
        },
        (error) => {
          if (!callee.live) return;
          this.threw(callee, error);
          if (callee.orphaned) return;
          this.resume(caller);
          reject(rethrownOverRpc(error));
        },
      );
    });
  }

  private threw(invocation: Invocation, error: unknown): void {
    invocation.state = "threw";
    invocation.endedAtMs = this.nowMs();
    if (invocation.orphaned) this.traceUnheard(invocation, `threw ${describe(error)}`);
    else this.trace(`${invocation.id} threw ${describe(error)}${this.thrownAt(invocation, error)}`);
  }

  /** Where in its Worker's own files `error` was thrown, as ` (at src/index.ts:12:5)`; "" when unknown. */
  private thrownAt(invocation: Invocation, error: unknown): string {
    if (!this.tracing) return "";
    const worker = this.world.workers.find((w) => w.name === invocation.worker);
    const at = worker?.module.whereThrown(error);
    return at ? ` (at ${shown(at.file)}:${at.line}:${at.column})` : "";
  }

  /** How an orphaned invocation ended (see `Invocation.orphan`), which nobody waits for any more. */
  private traceUnheard(invocation: Invocation, ended: string): void {
    if (this.tracing)
      this.trace(`${invocation.id} ${ended}, which reaches no one: ${invocation.orphanedBecause}`);
  }

  private spawn(id: string, worker: SimWorker, parent: Invocation | undefined): Invocation {
    if (++this.invocations > INVOCATIONS_PER_RUN_MAX) {
      throw new SimulationError(
        `a run started more than ${INVOCATIONS_PER_RUN_MAX} invocations; eutaxy stops it there`,
      );
    }
    const invocation = new Invocation(id, worker.name, this, parent);
    parent?.callees.add(invocation);
    this.live.add(invocation);
    return invocation;
  }

  /** Runs a handler as `invocation`: its env and ctx, its random stream. */
  private handle(invocation: Invocation, call: InvocationCall): Promise<unknown> {
    // After passThroughOnException(), an uncaught exception sends the request on to the
    // Worker's origin, which eutaxy does not simulate: the check ends there, said so.
    let passThrough = false;
    const ctx: ExecutionContextLike = {
      waitUntil: (promise: Promise<unknown>) => invocation.waitUntil(promise),
      passThroughOnException: () => {
        passThrough = true;
      },
      props: call.props ?? {},
    };
    const env = this.envOf(call.worker);
    this.resume(invocation);
    let answered: Promise<unknown>;
    try {
      const body = () => call.body(ctx, env, invocation);
      // Several invocations live at once only when they interleave: one at a time, the one the
      // run resumed is the one whose code runs, and the async context is not followed (on Node
      // 20 that puts a hook on every promise, a tenth of a run's time).
      answered = Promise.resolve(this.concurrency > 1 ? invocationContext.run(invocation, body) : body());
    } catch (error) {
      answered = Promise.reject(error);
    }
    return answered.catch((error: unknown) => {
      if (!passThrough) throw error;
      const what = "ctx.passThroughOnException(), then threw (the request goes on to its origin)";
      const failure = new InputError(
        call.worker.entry,
        notSimulatedMessage(`Worker ${call.worker.name}`, what),
      );
      this.fail(failure);
      throw failure;
    });
  }

  resume(invocation: Invocation | undefined, stream?: string): void {
    this.running = invocation;
    this.stream = invocation?.id ?? stream ?? "init";
    stepped();
  }

  /**
   * The env `worker`'s handlers get in this run: made once, as workerd gives every request the
   * same env and the same binding objects (a client a module keeps from its first request
   * serves the next ones).
   */
  private envOf(worker: SimWorker): Env {
    let env = this.envs.get(worker);
    if (!env) {
      env = buildEnv(this, worker, this.ambientScope());
      this.envs.set(worker, env);
      platformObject(env);
    }
    return env;
  }

  /**
   * The scope of the bindings a Worker's env holds: a call is an effect of the invocation whose
   * code makes it, the request its async context descends from when invocations interleave (as
   * workerd ties I/O to the request it runs in), or else the one the run resumed last; at import
   * time there is none, and I/O is refused as it is in production.
   */
  private ambientScope(): EffectScope {
    const caller = () => invocationContext.getStore() ?? this.running;
    return {
      get invocation() {
        return caller()?.id ?? "init";
      },
      effect(label, perform, options) {
        const invocation = caller();
        if (!invocation) {
          return Promise.reject(new Error(`Disallowed operation called within global scope: ${label}`));
        }
        return invocation.effect(label, perform, options);
      },
    };
  }

  /**
   * Runs effects until every invocation has finished or died. A binding call is always faster
   * than a timer: timers fire, earliest first, only when no effect is parked.
   */
  private async drive(): Promise<void> {
    for (;;) {
      await this.quiesce();
      const next = this.nextParked();
      if (next) {
        this.executeEffect(next);
        continue;
      }
      const timer = this.nextTimer();
      if (!timer) return;
      this.fireTimer(timer);
    }
  }

  private nextParked(): ParkedEffect | undefined {
    while (this.parked.length > 0) {
      const next = this.parked.shift() as ParkedEffect;
      if (next.invocation.live) return next;
    }
    return undefined;
  }

  private executeEffect(effect: ParkedEffect): void {
    const { invocation } = effect;
    let decision: Decision;
    try {
      const transient = effect.transient !== undefined && (effect.transientOffered?.() ?? true);
      decision = this.engine.decide(
        invocation.id,
        effect.index,
        effect.label,
        transient,
        transient && (effect.lostResponseOffered?.() ?? false),
      );
    } catch (error) {
      throw new SimulationError(error instanceof Error ? error.message : String(error));
    }
    this.clockMs = this.engine.nowMs();
    this.effects++;
    if (decision === Decision.CrashBefore) {
      this.crash(invocation);
      return;
    }
    this.resume(invocation);
    // A transient fault runs the binding's documented misbehaviour instead of the effect; a lost
    // response runs the effect, then answers with that misbehaviour all the same.
    const transient = effect.transient as (index: number) => unknown;
    const lost = effect.lostResponse ?? transient;
    const perform =
      decision === Decision.Transient
        ? transient
        : decision === Decision.LostResponse
          ? (index: number) => Promise.resolve(effect.perform(index)).then(() => lost(index))
          : effect.perform;
    let outcome: Promise<unknown>;
    try {
      outcome = Promise.resolve(perform(effect.index));
    } catch (error) {
      outcome = Promise.reject(error);
    }
    outcome.then(
      (value) => this.settle(effect, decision, true, value),
      (error) => this.settle(effect, decision, false, error),
    );
  }

  private settle(effect: ParkedEffect, decision: Decision, ok: boolean, value: unknown): void {
    const { invocation } = effect;
    if (value instanceof SimulationError || value instanceof InputError) this.failure ??= value;
    if (invocation.live && decision !== Decision.CrashAfter && this.answersTravel(effect)) {
      // The answer travels back while other steps may run: its arrival is a step of its own,
      // and the invocation stays parked (pending) until it comes.
      this.answers.push({ effect, decision, ok, value });
      return;
    }
    invocation.pending--;
    if (!invocation.live) return;
    if (decision === Decision.CrashAfter) {
      this.crash(invocation);
      return;
    }
    this.answer(effect, decision, ok, value);
  }

  /**
   * Whether `effect`'s answer reaches its invocation as a step of its own: in an interleaved
   * run, for a direct binding call (a callee's answer comes with the callee's own steps) made
   * in a Durable Object, or by any invocation with `answers: "all"` (`RunOptions.answers`).
   */
  private answersTravel(effect: ParkedEffect): boolean {
    return (
      this.concurrency > 1 &&
      (this.answersOf === "all" || effect.invocation.resource !== undefined) &&
      !this.hosting.has(`${effect.invocation.id} ${effect.index}`)
    );
  }

  /** Hands `effect`'s outcome to its invocation, which goes on to its next binding call. */
  private answer(effect: ParkedEffect, decision: Decision, ok: boolean, value: unknown): void {
    const { invocation } = effect;
    this.resume(invocation);
    // A binding's documented misbehaviour is a fault: the trace says what the Worker got.
    if (this.tracing && !ok && (decision === Decision.Transient || decision === Decision.LostResponse)) {
      this.trace(`${invocation.id} effect #${effect.index} failed: ${describe(value)}`);
    }
    if (ok) effect.resolve(value);
    else effect.reject(value);
  }

  /**
   * A crash fault at one of `invocation`'s effects. A service binding's callee runs on its
   * caller's thread (Cloudflare's default), so what kills the one kills the other: the crash
   * takes the callers up the chain of service bindings, to the request's own invocation or to the
   * Durable Object invocation that made the call (an object runs where it lives, so its caller
   * only loses the call). The client then gets no answer, as when the caller itself crashes.
   */
  private crash(invocation: Invocation): void {
    // The callees the crash takes with it, from the caller's down to `invocation`.
    const callees: string[] = [];
    let machine = invocation;
    while (machine.parent && machine.resource === undefined) {
      callees.unshift(machine.id);
      machine = machine.parent;
    }
    if (callees.length === 0) {
      // What its handler answered stands; the work it left to ctx.waitUntil is what dies.
      this.die(
        invocation,
        invocation.endedAtMs === undefined
          ? undefined
          : "in its ctx.waitUntil work, after its handler returned",
      );
    } else if (callees.length === 1) {
      this.die(machine, `with its callee ${callees[0]}: a service binding runs both on one thread`);
    } else {
      const named = `${callees.slice(0, -1).join(", ")} and ${callees.at(-1)}`;
      this.die(machine, `with its callees ${named}: service bindings run them all on one thread`);
    }
  }

  die(invocation: Invocation, why?: string): void {
    if (!invocation.live) return;
    this.trace(why === undefined ? `${invocation.id} died` : `${invocation.id} died ${why}`);
    this.deaths++;
    invocation.kill();
  }

  private async quiesce(): Promise<void> {
    for (;;) {
      let before = "";
      for (let turn = 0; turn < QUIESCENCE_TURNS_MAX; turn++) {
        if (await this.turn()) {
          turn--;
          continue;
        }
        const waiting = this.waiting();
        if (waiting.length === 0) return;
        // What still runs may wait on a parked effect of another invocation (a callee awaiting a
        // callback its caller passed over RPC, which calls the caller's bindings): once a turn
        // changes nothing, the run loop executes that effect.
        // So may a timer that has yet to fire (a section that holds an object over a wait), which
        // `drive` fires once no effect is parked.
        const now = `${this.parked.length} ${waiting.length} ${this.invocations}`;
        const wakeable = () =>
          this.parked.some((effect) => effect.invocation.live) || this.nextTimer() !== undefined;
        if (now === before && wakeable()) return;
        before = now;
      }
      this.cancelHung();
    }
  }

  /**
   * Invocations still waiting when nothing in the simulation can wake them. If an invocation
   * died in this run, they may wait on a promise it left unsettled (one a module shares between
   * requests), and the runtime cancels them, as workerd cancels a request whose code hung;
   * otherwise they wait on something outside the simulation, which ends the check.
   */
  private cancelHung(): void {
    const waiting = this.waiting();
    // A call waiting at the gate of an object whose critical section waits, in turn, on it: time
    // passes until the first section's time limit ends the deadlock, as on Cloudflare.
    const gated = waiting.some((invocation) => invocation.waitingFor !== undefined);
    if (gated && this.deadlines.length > 0 && ++this.expiredSections <= EXPIRED_SECTIONS_PER_RUN_MAX) {
      this.advanceClockTo(Math.min(...this.deadlines.map((deadline) => deadline.atMs)));
      return;
    }
    // Code that will never end the body it answered with (a stream whose writer gave up): the
    // status went out, and the runtime cancels the request, as it cancels any that hung.
    if (waiting.length > 0 && waiting.every((invocation) => invocation.stopAnswer !== undefined)) {
      for (const invocation of waiting) {
        this.trace(`${invocation.id} hung after its status went out: the runtime canceled it`);
        invocation.stopAnswer?.(hungError());
      }
      return;
    }
    if (this.deaths === 0) throw stuckError(waiting[0] as Invocation);
    for (const invocation of waiting) {
      this.trace(`${invocation.id} hung: the runtime canceled it`);
      invocation.cancel(hungError());
    }
  }
}

/** What workerd tells a request it canceled because its code would never answer. */
function hungError(): Error {
  return new Error(
    "The Workers runtime canceled this request because it detected that your Worker's code had hung and would never generate a response.",
  );
}

/**
 * `process.env` as Cloudflare fills it for `worker`: with `nodejs_compat` and a compatibility date
 * from 2025-04-01 (`nodejs_compat_populate_process_env`), its vars and secrets; else empty.
 */
export function processEnvOf(worker: SimWorker): Record<string, string> {
  const config = worker.config;
  const flags = config?.compatibilityFlags ?? [];
  const populated =
    nodejsCompat(config) &&
    !flags.includes("nodejs_compat_do_not_populate_process_env") &&
    (flags.includes("nodejs_compat_populate_process_env") ||
      (config?.compatibilityDate ?? "") >= "2025-04-01");
  const env: Record<string, string> = {};
  // A JSON var is there as its JSON text, as workerd puts it (`"42"`, `{"max":3}`, `null`).
  if (populated)
    for (const [key, value] of Object.entries(worker.vars))
      env[key] = typeof value === "string" ? value : JSON.stringify(value);
  return env;
}

function stuckError(invocation: Invocation): SimulationError {
  if (invocation.waitingFor !== undefined) {
    return new SimulationError(
      `invocation ${invocation.id} of Worker ${invocation.worker} waits to enter ${invocation.waitingFor}, ` +
        "which a blockConcurrencyWhile callback or a storage.transaction() holds while it waits, in turn, " +
        `on this call, and the object deadlocked again after each of ${EXPIRED_SECTIONS_PER_RUN_MAX} resets at the 30-second limit; eutaxy stops the run there`,
    );
  }
  return new SimulationError(
    `invocation ${invocation.id} of Worker ${invocation.worker} is waiting on something outside the simulation ` +
      "(a socket, or a promise nothing settles); eutaxy schedules binding calls and timers only",
  );
}

/** Whether `invocation` is `owner`, or a callee hosted by one of its calls (at any depth). */
function workingFor(invocation: Invocation, owner: Invocation): boolean {
  for (let at: Invocation | undefined = invocation; at; at = at.parent) if (at === owner) return true;
  return false;
}

/**
 * What a parked effect's step may touch: the binding's footprint of the call, and the state of
 * every invocation up its chain that runs inside a Durable Object, since the step resumes it
 * (the object's memory and storage: storage calls are not effects, as input gates make them
 * atomic).
 * Unknown (empty) when the binding gives none.
 */
function footprintOf(effect: ParkedEffect): FootprintEntry[] {
  const own = callFootprint(effect);
  if (own.length === 0) return [];
  const footprint = [...own];
  for (
    let invocation: Invocation | undefined = effect.invocation;
    invocation;
    invocation = invocation.parent
  ) {
    if (!invocation.resource) continue;
    // An object's code may also set its alarm, which queues platform work.
    footprint.push({ resource: invocation.resource, write: true }, { resource: PLATFORM_WORK, write: true });
  }
  return footprint;
}

/** What a binding call touches where it takes effect, as its binding says; empty when unknown. */
function callFootprint(effect: ParkedEffect): readonly FootprintEntry[] {
  return effect.footprint?.(effect.index, effect.invocation.id) ?? [];
}

/** A time on the run's clock and what happens there (`Run.deadline`). */
interface Deadline {
  readonly atMs: number;
  readonly reach: () => void;
}

/** A binding call's outcome on its way back to its invocation (`Run.answers`). */
interface Answer {
  readonly effect: ParkedEffect;
  readonly decision: Decision;
  readonly ok: boolean;
  readonly value: unknown;
}

/**
 * What the code of `invocation` touches until its next binding call: the state of every Durable
 * Object it runs in, up its chain (which may set its alarm: platform work), else its own alone.
 */
function codeFootprint(invocation: Invocation): FootprintEntry[] {
  const footprint: FootprintEntry[] = [];
  for (let at: Invocation | undefined = invocation; at; at = at.parent) {
    if (!at.resource) continue;
    footprint.push({ resource: at.resource, write: true }, { resource: PLATFORM_WORK, write: true });
  }
  return footprint.length > 0 ? footprint : [{ resource: `code:${invocation.id}`, write: true }];
}

/**
 * The platform work to start next among `candidates`: the first scheduled of those due by
 * `nowMs`, else the one that falls due first (the first scheduled on a tie), as the platform
 * starts each piece of work when its time comes, whatever was scheduled before it.
 */
function nextDue(candidates: readonly PlatformWork[], nowMs: number): PlatformWork | undefined {
  let first: PlatformWork | undefined;
  let firstDueMs = Number.POSITIVE_INFINITY;
  for (const work of candidates) {
    const due = work.dueMs?.();
    if (due === undefined || due <= nowMs) return work;
    if (due < firstDueMs) {
      first = work;
      firstDueMs = due;
    }
  }
  return first;
}

/** The invocation whose handler, or work it started, is running: the async context it descends from. */
const invocationContext = new AsyncLocalStorage<Invocation>();

// A snapshot of the Worker's async context restores this storage too; the code run in it is the
// running invocation's all the same (node-async-hooks.ts).
carryInvocation((fn) => {
  const running = invocationContext.getStore();
  return running === undefined ? fn : () => invocationContext.run(running, fn);
});

/**
 * Stops following invocations' async contexts until the next interleaved run: Node's
 * AsyncLocalStorage hooks every promise while it is enabled. workerd's follows contexts without
 * hooks, and throws that `disable()` is not implemented.
 */
function stopFollowingInvocations(): void {
  try {
    invocationContext.disable();
  } catch {
    // workerd: nothing to stop.
  }
}

/** Whether `work` is due by `atMs` on the run's clock (work that names no time is due now). */
function dueBy(work: PlatformWork, atMs: number): boolean {
  const due = work.dueMs?.();
  return due === undefined || due <= atMs;
}

/**
 * What a `console` call wrote, as a trace line shows it: without the escape codes that colour it
 * in a terminal (a request logger's), which the trace's reader sees in a file, JSON or a page.
 */
export function loggedText(args: readonly unknown[]): string {
  const text = args.map((arg) => (typeof arg === "string" ? arg : describeLogged(arg))).join(" ");
  return text.includes("\x1b") ? stripVTControlCharacters(text) : text;
}

/** A logged value that is not a string: an error by its name and message, the rest as JSON. */
function describeLogged(value: unknown): string {
  return value instanceof Error ? `${value.name}: ${value.message}` : summarize(value);
}

function describe(error: unknown): string {
  if (error instanceof Error) return `${error.name}: ${error.message}`;
  return `a non-Error value: ${summarize(error)}`;
}

export function summarize(value: unknown): string {
  // A Response (a service's or a Durable Object's fetch) has no JSON of its own worth showing;
  // an RpcTarget or a function crosses as a stub, and its insides are not the caller's.
  if (value instanceof Response) return `Response ${value.status}`;
  if (typeof value === "function") return "a function (a stub)";
  if (typeof value === "object" && value !== null && isRpcTarget(value)) {
    return `RpcTarget ${(value as { constructor?: { name?: string } }).constructor?.name || "object"} (a stub)`;
  }
  try {
    // Maps and Sets, which JSON shows as {}, as their entries.
    const text = JSON.stringify(value, (_key, v: unknown) =>
      v instanceof Map ? { Map: [...v] } : v instanceof Set ? { Set: [...v] } : v,
    );
    return text === undefined ? String(value) : text;
  } catch {
    return String(value);
  }
}
