/**
 * The object's side of a Durable Object: one instance per object per run (kept in `run.memo`),
 * constructed `new Class(ctx, env)` inside the invocation of its first call; its `ctx`; resets
 * that discard it, and end the calls in flight on it; and the delivery of its alarms. The
 * caller's side (namespace, ids, stubs) is in durable-objects.ts, whose header states the model.
 *
 * Sources for what a reset does to the old instance: Cloudflare's "Known issues" (one instance at
 * a time; an event of an instance that is no longer current gets an exception from storage);
 * workerd's `Worker::Actor::abort` and `IoContext::abort` (every request of an aborted object
 * fails with the error, and none of its code runs again), `ActorSqlite::shutdown` (storage broken
 * with the reset's exception, no commit after it) and its input gate (calls waiting at a broken
 * gate fail with its error).
 */

import { InputError, shown } from "../errors.ts";
import type { Env, RunContext } from "./context.ts";
import type { SimDurableObjectId } from "./durable-object-id.ts";
import { SimDurableObjectStorage } from "./durable-object-storage.ts";
import { ObjectStore } from "./durable-object-store.ts";
import { clearAlarm, readAlarm, type StorageHooks } from "./durable-object-tables.ts";
import type { EffectScope } from "./effect-scope.ts";
import { buildEnv } from "./env.ts";
import { notSimulated, real } from "./globals.ts";
import type { Invocation } from "./invocation.ts";
import { anew, lostConnection, resettingObject, rethrownOverRpc } from "./rpc-errors.ts";
import type { DurableObjectNamespace } from "./world.ts";

/** The first delivery of an alarm and its retries (docs: "up to 6 retries"). */
const ALARM_DELIVERIES_MAX = 7;
/** The wait before an alarm's first retry, doubled for each later one (docs: "exponential backoff starting at 2 second delay"). */
const ALARM_RETRY_BACKOFF_MS = 2_000;
/** `blockConcurrencyWhile` callbacks one call waits for at most. */
const BLOCKERS_PER_CALL_MAX = 1_000;
/**
 * How long a critical section (`blockConcurrencyWhile`, `transaction()`) may hold an object's
 * calls before the runtime cancels it and resets the object: Cloudflare's 30-second limit.
 */
const CRITICAL_SECTION_LIMIT_MS = 30_000;
/**
 * How long an object may go without a call or an alarm before its instance is certainly gone:
 * Cloudflare's "Lifecycle of a Durable Object" evicts an idle object from memory after 70 to 140
 * seconds without requests or events (a hibernatable one may go after 10). Within that, whether the
 * instance is still there is the runtime's choice, which eutaxy does not explore (a fault's reset
 * stands in for it); past it, the next call or alarm constructs a fresh instance, as it would on
 * Cloudflare, so an instance field that must outlive an hour's wait for an alarm is seen to be lost.
 */
const EVICTED_AFTER_IDLE_MS = 140_000;

export type Instance = Record<string, unknown>;

/** A constructed instance of the object's class and what it is doing. */
interface LiveObject {
  instance: Instance | undefined;
  /**
   * `blockConcurrencyWhile` callbacks not settled yet, each with the invocation that began it;
   * each leaves the map as it settles.
   */
  readonly blockers: Map<Promise<unknown>, Invocation | undefined>;
  /** When the critical sections now holding the object began holding it, on the run's clock. */
  blockedSinceMs: number | undefined;
  /** Cancels the deadline of those sections' time limit (`hold`). */
  unblockLimit: (() => void) | undefined;
  /** Invocations in the middle of a call on this instance; one that dies takes the instance. */
  readonly serving: Set<Invocation>;
  /** When the last call on the instance ended, on the run's clock, while none is in flight. */
  idleSinceMs: number | undefined;
  /**
   * Set when the instance is reset: it is no longer the object, and its storage fails every
   * call it makes from then on with this error.
   */
  gone: Error | undefined;
  /** Rejects with a copy of `gone` when the instance is reset, waking the calls waiting at its gate. */
  readonly ended: Promise<never>;
  readonly end: (error: Error) => void;
}

/**
 * How a reset ends the calls in flight on the instance it discards (Cloudflare keeps at most one
 * instance of an object: none of them may go on as the object beside the next one).
 */
export interface Abandon {
  /** The error each call in flight gets, and the old instance's storage fails its calls with. */
  readonly error: () => Error;
  /**
   * Whether the invocations serving those calls die with the instance: when its isolate is gone
   * (an invocation of it died) or the runtime aborted it (`ctx.abort()`, a failed
   * `blockConcurrencyWhile`). Otherwise (a code update) they run on unheard.
   */
  readonly kill: boolean;
  /** The invocation whose own code reset the object: it dies with the others (`kill`). */
  readonly by?: Invocation | undefined;
}

/** One object in one run: its identity, its store, its live instance if any. */
export interface ObjectSlot {
  readonly namespace: DurableObjectNamespace;
  readonly id: SimDurableObjectId;
  readonly store: ObjectStore;
  live: LiveObject | undefined;
  /** The generation of the alarm whose handler runs now. */
  runningAlarm: number | undefined;
}

/** The object's state (memory and storage) as a footprint resource: `DO:<store>`. */
export function objectResource(slot: ObjectSlot): string {
  return `DO:${slot.namespace.storePrefix}${slot.id.toString()}`;
}

/** The object of `id` in this run, its store opened lazily by the storage calls. */
export function slotOf(
  run: RunContext,
  namespace: DurableObjectNamespace,
  id: SimDurableObjectId,
): ObjectSlot {
  const slots = run.memo("durableObjects", () => new Map<string, ObjectSlot>());
  const store = `${namespace.storePrefix}${id.toString()}`;
  let slot = slots.get(store);
  if (!slot) {
    slot = {
      namespace,
      id,
      store: new ObjectStore(
        run.engine,
        store,
        `DO:${namespace.className}/${shortId(id)} SQL`,
        () => run.eventLoopTurns,
      ),
      live: undefined,
      runningAlarm: undefined,
    };
    slots.set(store, slot);
  }
  return slot;
}

/**
 * Serves one call (or alarm) on the object as `invocation`: the live instance, or a fresh one
 * constructed in this invocation; then the call, once `blockConcurrencyWhile` work is done.
 */
export async function serveCall(
  run: RunContext,
  slot: ObjectSlot,
  invocation: Invocation,
  serve: (instance: Instance) => unknown,
): Promise<unknown> {
  const live = liveObject(run, slot, invocation);
  // Whether the call waited for another invocation's critical section, whose steps the trace
  // then shows between its call and its going in.
  let waitedForOthers = false;
  for (let i = 0; live.blockers.size > 0 || live.gone; i++) {
    // Reset while the call waited at its gate: the call never reaches the old instance (its
    // caller has had the reset's error already, unless its own code reset the object).
    if (live.gone) throw resettingObject(anew(live.gone));
    if (i >= BLOCKERS_PER_CALL_MAX) {
      throw new Error(
        `eutaxy waits for at most ${BLOCKERS_PER_CALL_MAX} blockConcurrencyWhile callbacks per call`,
      );
    }
    // Every callback that holds the object now; a rejected one fails this call too.
    invocation.waitingFor = `Durable Object ${slot.namespace.className} ${shortId(slot.id)}`;
    for (const holder of live.blockers.values()) if (holder !== invocation) waitedForOthers = true;
    const dropped = new Promise<void>((resolve) => {
      invocation.wakeAtGate = resolve;
    });
    try {
      await Promise.race([Promise.all(live.blockers.keys()), live.ended, dropped]);
    } finally {
      invocation.waitingFor = undefined;
      invocation.wakeAtGate = undefined;
    }
    if (invocation.droppedAtGate) {
      // Its caller is gone: the call never reaches the object, nor answers anyone.
      live.serving.delete(invocation);
      run.die(
        invocation,
        `at the gate of Durable Object ${slot.namespace.className} ${shortId(slot.id)}: ${invocation.orphanedBecause} before the call went in, and the runtime drops it`,
      );
      return new Promise<never>(() => {});
    }
    // The calls that waited are let in one at a time, as the input gate delivers them: one
    // macrotask turn each, in the order they came, so that the first runs until it waits on
    // I/O (and may block the object again) before the next looks.
    await new Promise((resolve) => real.setImmediate(resolve));
    // What woke the call was another invocation's step (the one that ended the section), which
    // the run still takes for the one running: from here on the code is this call's own, and so
    // are the timers it sets, which end with their invocation.
    run.resume(invocation);
    // Said as the call goes in after others' work: what it does next is its own.
    if (run.tracing && waitedForOthers && !live.gone && live.blockers.size === 0) {
      run.trace(
        `${invocation.id} enters Durable Object ${slot.namespace.className} ${shortId(slot.id)}, its gate open`,
      );
    }
  }
  try {
    return await serve(live.instance as Instance);
  } finally {
    // Never reached when the invocation dies: its death resets the object (`serveOn`'s
    // whenDead), which discards the instance and its `serving` with it.
    live.serving.delete(invocation);
    if (live.serving.size === 0) live.idleSinceMs = run.nowMs();
  }
}

function liveObject(run: RunContext, slot: ObjectSlot, invocation: Invocation): LiveObject {
  let existing = slot.live;
  if (
    existing?.instance &&
    existing.serving.size === 0 &&
    existing.blockers.size === 0 &&
    existing.idleSinceMs !== undefined &&
    run.nowMs() - existing.idleSinceMs >= EVICTED_AFTER_IDLE_MS
  ) {
    const idleS = Math.floor((run.nowMs() - existing.idleSinceMs) / 1000);
    // Nothing is in flight on it, so the reset fails no call and kills no invocation.
    reset(run, slot, `evicted from memory after ${idleS} s without a call or an alarm`, {
      error: () => new Error("The Durable Object was evicted from memory."),
      kill: false,
    });
    existing = slot.live;
  }
  if (existing?.instance) {
    serveOn(run, slot, existing, invocation);
    return existing;
  }
  const Class = objectClass(run, slot.namespace);
  let end: (error: Error) => void = () => {};
  const ended = new Promise<never>((_resolve, reject) => {
    end = reject;
  });
  // Nothing need wait for it: it only wakes calls waiting at the gate.
  ended.catch(() => {});
  const live: LiveObject = {
    instance: undefined,
    blockers: new Map(),
    blockedSinceMs: undefined,
    unblockLimit: undefined,
    serving: new Set(),
    idleSinceMs: undefined,
    gone: undefined,
    ended,
    end,
  };
  slot.live = live;
  serveOn(run, slot, live, invocation);
  try {
    const state = new SimDurableObjectState(run, slot, live);
    live.instance = new Class(state, objectEnv(run, slot.namespace)) as Instance;
  } catch (error) {
    if (slot.live === live) slot.live = undefined;
    throw error;
  }
  return live;
}

function objectClass(
  run: RunContext,
  namespace: DurableObjectNamespace,
): new (
  ...args: unknown[]
) => unknown {
  const { worker, className } = namespace;
  const Class = run.exportsOf(worker)[className];
  if (typeof Class !== "function") {
    const error = new InputError(
      shown(worker.entry),
      `Worker ${worker.name} does not export class ${className}, which a durable_objects binding names`,
    );
    run.fail(error);
    throw error;
  }
  return Class as new (
    ...args: unknown[]
  ) => unknown;
}

/**
 * The env an instance keeps for its lifetime. It outlives the invocation that constructed it,
 * so its bindings make their effects as whichever invocation of the object is running.
 */
function objectEnv(run: RunContext, namespace: DurableObjectNamespace): Env {
  const scope: EffectScope = {
    get invocation() {
      return run.current?.id ?? "init";
    },
    effect(label, perform, options) {
      const invocation = run.current;
      if (!invocation) return Promise.reject(new Error(`${label} was called outside any invocation`));
      return invocation.effect(label, perform, options);
    },
  };
  return buildEnv(run, namespace.worker, scope);
}

/**
 * `invocation` serves a call on `live`. If it dies before the call is over, the instance goes
 * with it (the isolate holding its memory is gone), and so do the other calls in flight on it.
 */
function serveOn(run: RunContext, slot: ObjectSlot, live: LiveObject, invocation: Invocation): void {
  live.serving.add(invocation);
  live.idleSinceMs = undefined;
  invocation.whenDead(() => {
    if (slot.live !== live || !live.serving.has(invocation)) return;
    reset(run, slot, `${invocation.id}, which it was serving, died`, { error: lostConnection, kill: true });
  });
}

/**
 * The live instance is gone; the next call constructs a fresh one. Storage keeps what was
 * committed, and nothing the old instance does reaches it any more:
 * - the writes its code made since it last let the event loop run are dropped, as workerd had
 *   not committed them (`ObjectStore.dropUnconfirmed`);
 * - its storage fails every call from now on with the abandon's error (Cloudflare's Known
 *   issues: an event of an instance that is no longer current "will receive an exception" when
 *   it accesses storage), and a `transaction()` it has open is rolled back, uncommitted;
 * - every call in flight on it fails with that error, those waiting at its gate too, and the
 *   invocations serving them die with it or run on unheard (`Abandon.kill`).
 */
export function reset(run: RunContext, slot: ObjectSlot, why: string, abandon: Abandon): void {
  const live = slot.live;
  if (!live) return;
  slot.live = undefined;
  const error = abandon.error();
  live.gone = error;
  live.end(resettingObject(anew(error)));
  slot.store.dropUnconfirmed();
  slot.store.abandonSavepoints();
  run.trace(
    `Durable Object ${slot.namespace.className} ${shortId(slot.id)} reset (${why}): its in-memory state is gone`,
  );
  // Aborted, the instance runs no more code, that of the invocation whose own code reset it
  // included (workerd: code after `ctx.abort()` or a failed `blockConcurrencyWhile` never runs),
  // and the calls it made that were not delivered yet are canceled: those parked die with their
  // invocation, those waiting at another object's gate are dropped. A call that went in runs on.
  const abandoned = new Set([...live.serving].filter((invocation) => invocation.live));
  if (abandon.kill && abandon.by?.live) abandoned.add(abandon.by);
  if (abandon.kill) {
    for (const invocation of abandoned) invocation.dropCallsAtGates("its caller's Durable Object was reset");
  }
  // Every caller hears of the reset before any of the invocations dies (which would fail its call
  // as a lost connection instead).
  for (const invocation of abandoned) invocation.orphan(anew(error));
  for (const invocation of abandoned) {
    if (abandon.kill) run.die(invocation, "with its Durable Object instance");
    else if (run.tracing) {
      run.trace(`${invocation.id} runs on, no longer the object's: its storage calls fail from now on`);
    }
  }
}

/**
 * Holds the object's next calls until `settled` settles, which never rejects. Sections that hold
 * it past their time limit on the clock (a 60-second timer inside one) end there.
 */
function hold(run: RunContext, slot: ObjectSlot, live: LiveObject, settled: Promise<undefined>): void {
  if (live.blockers.size === 0) {
    const since = run.nowMs();
    live.blockedSinceMs = since;
    live.unblockLimit = run.deadline?.(since + CRITICAL_SECTION_LIMIT_MS, () =>
      expireCriticalSection(run, slot, live),
    );
  }
  live.blockers.set(settled, run.current);
  settled.then(() => {
    live.blockers.delete(settled);
    if (live.blockers.size > 0) return;
    live.blockedSinceMs = undefined;
    live.unblockLimit?.();
    live.unblockLimit = undefined;
  });
}

/**
 * A critical section at its 30-second limit, reached as the clock got there (a long timer inside
 * it), or as the run loop let time pass for a deadlock (it waits, in turn, on a call waiting at
 * the object's gate, which never ends by itself). The runtime cancels it and resets the object,
 * and every call in flight on it, or waiting to enter, fails with the limit's error.
 */
function expireCriticalSection(run: RunContext, slot: ObjectSlot, live: LiveObject): void {
  if (slot.live !== live) return;
  const error = resettingObject(
    new Error(
      "A call to blockConcurrencyWhile() in a Durable Object waited for too long. The call was canceled and the Durable Object was reset.",
    ),
  );
  reset(run, slot, "a critical section held it past the 30-second limit", {
    error: () => rethrownOverRpc(error),
    kill: true,
  });
}

function shortId(id: SimDurableObjectId): string {
  return id.name === undefined ? id.toString().slice(0, 12) : `"${id.name}"`;
}

/** `ctx` (formerly `state`) of an instance. */
class SimDurableObjectState {
  readonly id: SimDurableObjectId;
  readonly storage: SimDurableObjectStorage;
  readonly props: Readonly<Record<string, unknown>> = {};
  readonly #run: RunContext;
  readonly #slot: ObjectSlot;
  readonly #live: LiveObject;
  /** `setWebSocketAutoResponse`'s pair, as strings; the instance's, as workerd keeps it. */
  #autoResponse: { readonly request: string; readonly response: string } | undefined;
  /** `setHibernatableWebSocketEventTimeout`'s; null until set. */
  #eventTimeoutMs: number | null = null;

  constructor(run: RunContext, slot: ObjectSlot, live: LiveObject) {
    this.#run = run;
    this.#slot = slot;
    this.#live = live;
    this.id = slot.id;
    this.storage = new SimDurableObjectStorage(
      slot.store,
      slot.namespace.sqlite,
      {
        ...alarmHooks(run, slot),
        critical: (work) => {
          // The object's next calls wait for `work` whatever its outcome, which its caller gets.
          const result = work();
          const settled = result.then(
            () => undefined,
            () => undefined,
          );
          hold(run, slot, live, settled);
          return result;
        },
        onAbandon: (callback) => run.current?.whenDead(callback),
        gone: () => (live.gone ? anew(live.gone) : undefined),
      },
      deleteAllDeletesAlarm(slot.namespace),
    );
  }

  waitUntil(promise: Promise<unknown>): void {
    this.#run.current?.waitUntil(promise);
  }

  /**
   * Runs `callback` and holds the object's next call until it settles. If it throws, the
   * object is reset (docs: "the object will be terminated and reset") and the call rejects.
   */
  blockConcurrencyWhile<T>(callback: () => Promise<T>): Promise<T> {
    const run = this.#run;
    const slot = this.#slot;
    const live = this.#live;
    const by = run.current;
    // workerd runs the callback once the event loop has run: the writes before it are confirmed.
    slot.store.confirm();
    const settled = (async () => callback())().catch((error: unknown) => {
      if (slot.live === live) {
        // workerd breaks the object's input gate and aborts it: the calls in flight and those
        // waiting at the gate fail with the error, as the object's reset.
        reset(run, slot, "its blockConcurrencyWhile callback threw", {
          error: () => rethrownOverRpc(resettingObject(error)),
          kill: true,
          by,
        });
      }
      throw resettingObject(error);
    });
    hold(
      run,
      slot,
      live,
      settled.then(
        () => undefined,
        () => undefined,
      ),
    );
    return settled;
  }

  /** Resets the object on purpose (docs: `abort`); the call that aborts gets the reason. */
  abort(reason?: string): never {
    const error = resettingObject(new Error(reason ?? "Durable Object was aborted."));
    if (this.#slot.live === this.#live) {
      // workerd aborts the object: no code of it runs again, and every call in flight on it
      // fails with the reason.
      reset(this.#run, this.#slot, "it called ctx.abort()", {
        error: () => rethrownOverRpc(error),
        kill: true,
        by: this.#run.current,
      });
    }
    throw error;
  }

  // WebSockets are out of eutaxy's scope: a Worker that accepts one ends the check (it cannot
  // make one either: `WebSocketPair` ends it first). What an object does with no socket
  // connected is answered as workerd answers it (compared with Miniflare's), so that an object
  // that sets its automatic answer in its constructor, or broadcasts to whoever is connected,
  // can be checked for everything else it does.
  acceptWebSocket(): never {
    return notSimulated("ctx.acceptWebSocket()");
  }

  /** No socket is ever accepted, so none is connected, with any tag. */
  getWebSockets(_tag?: string): WebSocket[] {
    return [];
  }

  setWebSocketAutoResponse(pair?: unknown): void {
    if (pair === undefined) {
      this.#autoResponse = undefined;
      return;
    }
    const Pair = (globalThis as { WebSocketRequestResponsePair?: new (a: string, b: string) => object })
      .WebSocketRequestResponsePair;
    if (Pair === undefined || !(pair instanceof Pair)) {
      throw new TypeError(notOfType("setWebSocketAutoResponse", "WebSocketRequestResponsePair"));
    }
    const { request, response } = pair as { request: string; response: string };
    for (const [name, text] of [
      ["Request", request],
      ["Response", response],
    ] as const) {
      const size = new TextEncoder().encode(text).byteLength;
      if (size > AUTO_RESPONSE_BYTES_MAX) {
        throw new RangeError(
          `${name} cannot be larger than ${AUTO_RESPONSE_BYTES_MAX} bytes. A ${name.toLowerCase()} of size ${size} was provided.`,
        );
      }
    }
    this.#autoResponse = { request, response };
  }

  getWebSocketAutoResponse(): object | null {
    if (this.#autoResponse === undefined) return null;
    const Pair = (globalThis as { WebSocketRequestResponsePair?: new (a: string, b: string) => object })
      .WebSocketRequestResponsePair as new (
      a: string,
      b: string,
    ) => object;
    return new Pair(this.#autoResponse.request, this.#autoResponse.response);
  }

  /** Only a WebSocket the object accepted has a timestamp, and none can be. */
  getWebSocketAutoResponseTimestamp(_ws: unknown): never {
    throw new TypeError(notOfType("getWebSocketAutoResponseTimestamp", "WebSocket"));
  }

  getTags(_ws: unknown): never {
    throw new TypeError(notOfType("getTags", "WebSocket"));
  }

  setHibernatableWebSocketEventTimeout(timeoutMs?: unknown): void {
    if (timeoutMs === undefined) {
      this.#eventTimeoutMs = null;
      return;
    }
    const ms = Math.trunc(Number(timeoutMs));
    if (ms < 0) {
      throw new TypeError(
        "The value cannot be converted because it is negative and this API expects a positive number.",
      );
    }
    if (ms > 0xffff_ffff)
      throw new TypeError("Value out of range. Must be less than or equal to 4294967295.");
    this.#eventTimeoutMs = Number.isNaN(ms) ? 0 : ms;
  }

  getHibernatableWebSocketEventTimeout(): number | null {
    return this.#eventTimeoutMs;
  }
}

/** The largest request and response of an automatic WebSocket answer, in UTF-8 bytes (workerd's). */
const AUTO_RESPONSE_BYTES_MAX = 2048;

/** workerd's TypeError for an argument of the wrong type to a method of `ctx`. */
function notOfType(method: string, type: string): string {
  return `Failed to execute '${method}' on 'DurableObjectState': parameter 1 is not of type '${type}'.`;
}

function alarmHooks(run: RunContext, slot: ObjectSlot): StorageHooks {
  return {
    alarmSet: (generation) =>
      run.later({
        kind: "alarm",
        // An object runs one alarm at a time: one set while its alarm handler runs waits for the
        // handler to finish (workerd queues it), and replaces that alarm's retries.
        limit: { group: `alarm ${objectResource(slot)}`, max: 1 },
        dueMs: () => {
          const alarm = readAlarm(slot.store);
          return alarm?.generation === generation ? alarm.time : undefined;
        },
        gone: () => readAlarm(slot.store)?.generation !== generation,
        run: (context, id) => deliverAlarm(context, slot, generation, id),
      }),
    requireAlarmHandler: () => {
      const prototype = (objectClass(run, slot.namespace) as { prototype?: Instance }).prototype;
      if (typeof prototype?.alarm !== "function") {
        // workerd throws a TypeError (Miniflare 4.20260426).
        throw new TypeError(
          "Your Durable Object class must have an alarm() handler in order to call setAlarm()",
        );
      }
    },
    runningAlarm: () => slot.runningAlarm,
    note: (line) => {
      if (run.tracing) run.trace(`  DO:${slot.namespace.className}/${shortId(slot.id)} ${line()}`);
    },
  };
}

/**
 * Delivers the alarm set as `generation`, if it is still set: `alarm(alarmInfo)` as top-level
 * invocation `<work>#<attempt>`, retried while the handler throws or dies. Each retry is platform
 * work of its own, due after Cloudflare's backoff (2 s, doubling): the clock moves to it when it
 * starts, a step of its own, and not within the step in which the attempt before it failed, which
 * another invocation's steps need not follow. A retry stops when the alarm was deleted or set
 * anew meanwhile (the new one has its own delivery), after 6 retries, or when the engine grants
 * no more redeliveries.
 */
async function deliverAlarm(
  run: RunContext,
  slot: ObjectSlot,
  generation: number,
  work: string,
  attempt = 1,
  retryAtMs = 0,
): Promise<void> {
  const alarm = readAlarm(slot.store);
  if (!alarm || alarm.generation !== generation) return;
  if (attempt > 1 && !run.engine.redeliverPlatform(work, attempt)) {
    run.retryRefused?.(work, attempt, ALARM_DELIVERIES_MAX, "more retries");
    clearAlarm(slot.store, generation);
    return;
  }
  // The alarm runs at its time, a retry after Cloudflare's backoff.
  run.advanceClockTo(attempt === 1 ? alarm.time : retryAtMs);
  if (attempt > 1 && run.tracing) {
    run.trace(
      `${work}#${attempt} is Cloudflare's retry ${attempt - 1} of ${ALARM_DELIVERIES_MAX - 1}, ${backoffMs(attempt) / 1000} s after the last`,
    );
  }
  slot.runningAlarm = generation;
  const info = { retryCount: attempt - 1, isRetry: attempt > 1, scheduledTime: alarm.time };
  const outcome = await run.deliver(`${work}#${attempt}`, {
    worker: slot.namespace.worker,
    work: `alarm of Durable Object class ${slot.namespace.className}`,
    resource: objectResource(slot),
    body: (_ctx, _env, invocation) =>
      serveCall(run, slot, invocation, (instance) => {
        const handler = instance.alarm;
        if (typeof handler !== "function")
          throw new TypeError("Handler does not export an alarm() function.");
        return handler.call(instance, info);
      }),
  });
  slot.runningAlarm = undefined;
  if (outcome.kind === "returned") {
    // As a cron tick's: an alarm answers no one, so the trace says when it is done.
    if (!outcome.diedAfter) run.trace(`${work}#${attempt} finished`);
    clearAlarm(slot.store, generation);
    return;
  }
  if (attempt === ALARM_DELIVERIES_MAX) {
    run.trace(
      `${work} given up: Cloudflare retries an alarm ${ALARM_DELIVERIES_MAX - 1} times, then drops it`,
    );
    clearAlarm(slot.store, generation);
    return;
  }
  const next = attempt + 1;
  const dueMs = run.nowMs() + backoffMs(next);
  run.later({
    // Not `alarm`: a retry keeps its alarm's name (`alarm-1#2`) and takes no number of its own.
    kind: "alarm-retry",
    invocation: `${work}#${next}`,
    limit: { group: `alarm ${objectResource(slot)}`, max: 1 },
    dueMs: () => dueMs,
    gone: () => readAlarm(slot.store)?.generation !== generation,
    run: (context) => deliverAlarm(context, slot, generation, work, next, dueMs),
  });
}

/** How long Cloudflare waits before an alarm's delivery `attempt` (2 s before the first retry, doubling). */
function backoffMs(attempt: number): number {
  return ALARM_RETRY_BACKOFF_MS * 2 ** (attempt - 2);
}

/**
 * Whether the class's Worker has `delete_all_deletes_alarm` (the default from 2026-02-24;
 * `delete_all_preserves_alarm` turns it off). Wrangler takes today's date when a config gives
 * none, so the newest behaviour applies then.
 */
function deleteAllDeletesAlarm(namespace: DurableObjectNamespace): boolean {
  const config = namespace.worker.config;
  const flags = config?.compatibilityFlags ?? [];
  if (flags.includes("delete_all_deletes_alarm")) return true;
  if (flags.includes("delete_all_preserves_alarm")) return false;
  return (config?.compatibilityDate ?? "9999-12-31") >= "2026-02-24";
}
