/**
 * Deterministic globals. Worker code runs in the host's realm, so the sources of
 * nondeterminism it can reach (`crypto.randomUUID`, `crypto.getRandomValues`, `Math.random`,
 * `Date`, `performance.now`, timers, the collector through `WeakRef` and `FinalizationRegistry`)
 * are replaced once per process by wrappers that, while a
 * run is active, draw from the engine: random bytes from the stream of the invocation that is
 * running, time from the run's virtual clock (frozen between effects, as in production), and
 * timers from the run loop, which fires them on that clock (`setTimeout`, `setInterval`,
 * `scheduler.wait`, `AbortSignal.timeout`). Outside a run the wrappers call the originals, which are captured here
 * before any Worker code is loaded.
 */

import { AsyncResource } from "node:async_hooks";
import { SimulationError } from "../errors.ts";
import { defaultAbortReason, reasonFromRuntime } from "./abort.ts";
import { installStatusText } from "./status-text.ts";

/** Where the wrappers draw from while a run is active. */
export interface DeterminismSource {
  /** Fills `buf` from the random stream of the code that is running now. */
  fillRandom(buf: Uint8Array): void;
  /** The run's virtual clock, in milliseconds since the epoch. */
  nowMs(): number;
  /** Whether a Worker's module is being evaluated (its global scope), where workerd refuses random values. */
  inGlobalScope?(): boolean;
  /** Outbound `fetch` from Worker code; absent outside a run. */
  fetch?(input: unknown, init: unknown): Promise<Response>;
  /** Ends the check with `error` at the next quiescence, whatever the Worker does with it. */
  fail?(error: Error): void;
  /**
   * The error for the running Worker's use of `what` (the Cache API), which eutaxy does not
   * simulate: it names the Worker, as an unsupported binding's error does.
   */
  notSimulated?(what: string): Error;
  /** The error for Worker code that read the clock `reads` times without waiting: it spins on it. */
  spinning?(reads: number): Error;
  /** `process.env` of the Worker whose code runs now: its vars and secrets, as Cloudflare fills it. */
  processEnv?(): Record<string, string>;
  /**
   * A timer of the invocation that is running: `callback(...args)` after `ms` milliseconds of
   * the run's clock, and every `ms` after that if `repeat`; `named` names it in the trace
   * (`immediate` for a `setImmediate`) in place of `timer of <ms> ms`. Answers the timer's id.
   */
  setTimer?(
    callback: (...args: unknown[]) => void,
    ms: number,
    args: unknown[],
    repeat: boolean,
    named?: string,
  ): number;
  /** Cancels the run's timer `id`; ids it did not give (or gave and fired) are ignored. */
  clearTimer?(id: number): void;
  /**
   * A wait on the runtime's I/O that no binding call stands for (a read of a body, `storage.sync()`),
   * named so in the trace: inside a Durable Object, the turn of the event loop it waits for, where
   * other calls may reach the object; undefined elsewhere, where nothing else shares the
   * invocation's state.
   */
  ioTurn?(name: string): Promise<void> | undefined;
  /**
   * Platform work whose result is deterministic but whose completion the platform schedules
   * (Web Crypto runs on Node's thread pool): the result reaches the Worker when the run loop
   * hands it over, so neither its timing nor its order against other work shows.
   */
  outside?<T>(start: () => Promise<T>): Promise<T>;
  /**
   * What Worker code writes with `console`: kept with the run (a counterexample's trace shows
   * it), never printed, so a check's own output (`--json`) stays the check's.
   */
  log?(level: string, args: readonly unknown[]): void;
}

/**
 * Runtime APIs of workerd that Node lacks and eutaxy does not simulate: reaching one during a run
 * ends the check with a message saying so, instead of a ReferenceError the Worker would answer
 * with a 500 (which would hide everything after it from the check).
 */
const NOT_SIMULATED: readonly (readonly [string, string])[] = [
  ["caches", "the Cache API (caches.default, caches.open)"],
  ["HTMLRewriter", "HTMLRewriter"],
  ["WebSocketPair", "WebSocketPair (WebSockets)"],
  ["WebSocket", "WebSocket (WebSockets)"],
];

/** The `console` methods Worker code writes its logs with. */
const CONSOLE_LEVELS = ["log", "info", "warn", "error", "debug"] as const;

/** `crypto.subtle`'s operations, each a promise the platform settles when it is done. */
const SUBTLE_METHODS = [
  "decrypt",
  "deriveBits",
  "deriveKey",
  "digest",
  "encrypt",
  "exportKey",
  "generateKey",
  "importKey",
  "sign",
  "unwrapKey",
  "verify",
  "wrapKey",
] as const;

/** Whether this module runs inside workerd (`--runtime workerd`), which has the Workers globals. */
const IN_WORKERD =
  (globalThis as { navigator?: { userAgent?: string } }).navigator?.userAgent === "Cloudflare-Workers";

const RealDate = globalThis.Date;
const realDateNow = RealDate.now.bind(RealDate);
const realPerformanceNow = performance.now.bind(performance);
const realMathRandom = Math.random.bind(Math);
const realRandomUUID = crypto.randomUUID.bind(crypto);
const realGetRandomValues = crypto.getRandomValues.bind(crypto);
const realSetImmediate = globalThis.setImmediate;
/** The methods of `Request` and `Response` that read the whole body. */
const BODY_READS = ["text", "json", "arrayBuffer", "bytes", "formData", "blob"] as const;
type BodyRead = (typeof BODY_READS)[number];
type Reader = (...args: unknown[]) => Promise<unknown>;
/** The body reads `install` put in place, so that a second install does not wrap them again. */
const bodyReads = new WeakSet<object>();
/** The runtime's own body reads of `Request` and `Response`, before `install` wrapped them. */
const runtimeReads = new Map<object, Map<string, Reader>>();

/** The runtime's own `method` of `body`: a read that waits for no turn of an object. */
function runtimeRead(body: Request | Response, method: string): Reader {
  const prototype = body instanceof Response ? Response.prototype : Request.prototype;
  return runtimeReads.get(prototype)?.get(method) ?? (Reflect.get(body, method) as Reader);
}

/**
 * Reads `body` as eutaxy's own code (the copy of a body kept for a redirect): it is no Worker's
 * I/O, so it waits for no turn of the object it runs for.
 */
export function hostRead<T>(body: Request | Response, method: BodyRead): Promise<T> {
  return Reflect.apply(runtimeRead(body, method), body, []) as Promise<T>;
}

/**
 * `body` with the runtime's own reads as its own properties: a scenario's outbound script reads
 * the request it answers as eutaxy's code does, waiting for no turn. (Not an AsyncLocalStorage
 * over the script: once run, one makes Node follow every promise of the process.)
 */
export function withHostReads<T extends Request | Response>(body: T): T {
  for (const method of BODY_READS) {
    Object.defineProperty(body, method, {
      value: runtimeRead(body, method),
      writable: true,
      configurable: true,
    });
  }
  return body;
}

/** The turn a wait on the runtime's I/O named `name` lets other calls in (`DeterminismSource.ioTurn`). */
export function ioTurn(name: string): Promise<void> | undefined {
  return source?.ioTurn?.(name);
}
const realClearImmediate = globalThis.clearImmediate;
const realSetTimeout = globalThis.setTimeout;
const realSetInterval = globalThis.setInterval;
const realClearTimeout = globalThis.clearTimeout;
const realClearInterval = globalThis.clearInterval;
const realFetch = globalThis.fetch;
const realAbortSignalTimeout = AbortSignal.timeout.bind(AbortSignal);
/** The host's `process`, none inside workerd. */
const hostProcess = IN_WORKERD ? undefined : (globalThis as { process?: NodeJS.Process }).process;
/** The host's own environment: while a run is active, `process.env` is the running Worker's. */
const hostEnv = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env;
const realScheduler = (globalThis as { scheduler?: { wait?: (...args: unknown[]) => unknown } }).scheduler;

/** The host's own clock and macrotask turn, untouched by the wrappers. */
export const real = {
  nowMs: realDateNow,
  monotonicMs: realPerformanceNow,
  setImmediate: realSetImmediate,
  Date: RealDate,
} as const;

let source: DeterminismSource | undefined;
let installed = false;

/**
 * The global scope's listeners (`addEventListener("unhandledrejection", …)`), one set per source:
 * a run's module instances add theirs to the run's, and none outlives its run.
 */
const globalEvents = new WeakMap<DeterminismSource, EventTarget>();

function runEvents(): EventTarget | undefined {
  if (!source) return undefined;
  let events = globalEvents.get(source);
  if (!events) {
    events = new EventTarget();
    globalEvents.set(source, events);
  }
  return events;
}

/** Whether a source is active: a run, or the probe of the Workers' modules. */
export function simulating(): boolean {
  return source !== undefined;
}

/**
 * Reads of the run's clock by Worker code since the run last went on (`stepped`). The clock
 * moves only when the code waits, so a loop that waits for time to pass by reading it
 * (`while (Date.now() < until) {}`) would read it forever; production ends such a request at
 * its CPU time limit, and the check ends here, naming the invocation.
 */
let clockReads = 0;
const CLOCK_READS_MAX = 10_000_000;

function readClock(from: DeterminismSource): number {
  if (++clockReads > CLOCK_READS_MAX) {
    clockReads = 0;
    endCheck(
      from.spinning?.(CLOCK_READS_MAX) ??
        new SimulationError(
          `the Worker read the clock ${CLOCK_READS_MAX.toLocaleString("en-US")} times without waiting for anything`,
        ),
    );
  }
  return from.nowMs();
}

/** The run went on (a step): the clock reads start counting again. */
export function stepped(): void {
  clockReads = 0;
}

/** Makes `next` the source for the wrappers until the returned function is called. */
export function activate(next: DeterminismSource): () => void {
  install();
  const previous = source;
  source = next;
  const dropAdded = previous === undefined ? listenersAdded() : undefined;
  return () => {
    source = previous;
    dropAdded?.();
  };
}

/**
 * What takes off, as a run ends, the listeners it added to the host's `process`: on the Node
 * runtime a Worker's `process` is the host's, and a `process.on("unhandledRejection", …)` at its
 * top level would stay there after its module instance went with its run, one more every run,
 * until Node's listener limit printed its warning into some later run's trace. The listeners are
 * those `installProcessListeners` saw added while the run was active.
 */
function listenersAdded(): (() => void) | undefined {
  const proc = hostProcess;
  if (!proc) return undefined;
  return () => {
    for (const [name, listener] of addedListeners.splice(0)) proc.removeListener(name, listener);
  };
}

/** The listeners added to the host's `process` while a run is active, in the order added. */
const addedListeners: [string | symbol, (...args: unknown[]) => void][] = [];

/** The host's own listeners on `process`, which stay whenever they are added (`hostListener`). */
const hostListeners = new WeakSet<object>();

/** Marks `listener` as the host's own: added to `process` during a run, it stays after it. */
export function hostListener<T extends object>(listener: T): T {
  hostListeners.add(listener);
  return listener;
}

/** Records every listener added to the host's `process` while a run is active (`listenersAdded`). */
function installProcessListeners(): void {
  const proc = hostProcess as (NodeJS.Process & Record<string, unknown>) | undefined;
  if (!proc) return;
  for (const method of ["on", "addListener", "once", "prependListener", "prependOnceListener"]) {
    const platform = proc[method] as (...args: unknown[]) => unknown;
    if (typeof platform !== "function") continue;
    proc[method] = function (this: unknown, name: string | symbol, listener: (...args: unknown[]) => void) {
      if (source && typeof listener === "function" && !hostListeners.has(listener)) {
        addedListeners.push([name, listener]);
      }
      return Reflect.apply(platform, this, [name, listener]);
    };
  }
}

/**
 * Runs `work` (a check) with the process in UTC. Cloudflare runs Workers in UTC, so local time
 * (`getHours()`, `new Date(2026, 0, 1)`, `toString()`, `Intl.DateTimeFormat`'s zone) reads as UTC
 * there; the host's is the machine's (`TZ`, /etc/localtime), which would make a Worker that
 * computes "today" answer differently on a developer's laptop and in CI, and not as in
 * production. Node follows a change to `process.env.TZ` at once, but each change costs it a tenth
 * of a run of the service-binding example, so the zone is set once for the whole check (checks in
 * one process take turns, check.ts) and the process's own is back after it: code beside a check
 * (a test awaiting it) reads UTC meanwhile. The CLI puts the whole process in UTC, so that
 * `--workers` threads, which share the process's zone, never switch it. Inside workerd there is
 * no zone to set: the workerd process starts in UTC (js/src/workerd/miniflare.ts).
 */
export async function inUtc<T>(work: () => Promise<T>): Promise<T> {
  if (IN_WORKERD || !hostEnv || hostEnv.TZ === "UTC") return work();
  const env = hostEnv;
  const saved = env.TZ;
  env.TZ = "UTC";
  try {
    return await work();
  } finally {
    if (saved === undefined) delete env.TZ;
    else env.TZ = saved;
  }
}

function randomBytes(n: number): Uint8Array {
  const buf = new Uint8Array(n);
  (source as DeterminismSource).fillRandom(buf);
  return buf;
}

function uuidV4(): `${string}-${string}-${string}-${string}-${string}` {
  const b = randomBytes(16);
  b[6] = ((b[6] as number) & 0x0f) | 0x40;
  b[8] = ((b[8] as number) & 0x3f) | 0x80;
  const hex = Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** workerd's refusal of I/O, timers and random values while a Worker's module is evaluated. */
export const GLOBAL_SCOPE =
  "Disallowed operation called within global scope. Asynchronous I/O (ex: fetch() or connect()), " +
  "setting a timeout, and generating random values are not allowed within global scope. To fix " +
  "this error, perform this operation within a handler. https://developers.cloudflare.com/workers/runtime-apis/handlers/";

function install(): void {
  if (installed) return;
  installed = true;

  // Random values while a module is evaluated are refused, as workerd refuses them: the Worker
  // fails to start. (`Math.random` is allowed there, as in workerd.)
  crypto.randomUUID = () => {
    if (!source) return realRandomUUID();
    if (source.inGlobalScope?.()) throw new Error(GLOBAL_SCOPE);
    return uuidV4();
  };
  crypto.getRandomValues = (<T extends ArrayBufferView | null>(array: T): T => {
    if (!source || !array) return realGetRandomValues(array as never) as T;
    if (source.inGlobalScope?.()) throw new Error(GLOBAL_SCOPE);
    if (array.byteLength > 65536) {
      // The same limit and error as the Web Crypto API, so Worker code sees what it would see.
      throw new DOMException(
        `The ArrayBufferView's byte length (${array.byteLength}) exceeds the number of bytes of entropy available via this API (65536)`,
        "QuotaExceededError",
      );
    }
    source.fillRandom(new Uint8Array(array.buffer, array.byteOffset, array.byteLength));
    return array;
  }) as typeof crypto.getRandomValues;

  Math.random = () => {
    if (!source) return realMathRandom();
    const b = randomBytes(8);
    // 53 random bits scaled into [0, 1), as V8's own Math.random does.
    let hi = 0;
    for (let i = 0; i < 7; i++) hi = hi * 256 + (b[i] as number);
    return (hi % 2 ** 53) / 2 ** 53;
  };

  const SimDate = class SimulatedDate extends RealDate {
    constructor(...args: unknown[]) {
      if (args.length === 0 && source) super(source.nowMs());
      else super(...(args as [number]));
    }
    static override now(): number {
      return source ? readClock(source) : realDateNow();
    }
  };
  globalThis.Date = SimDate as DateConstructor;

  // Worker code's outbound fetch is an effect the scenario answers; it never reaches the network.
  globalThis.fetch = ((input: unknown, init: unknown) =>
    source?.fetch
      ? source.fetch(input, init)
      : realFetch(input as string, init as RequestInit)) as typeof fetch;

  // workerd's performance clock is the Unix epoch's: timeOrigin 0, so now() is Date.now().
  performance.now = () => (source ? readClock(source) : realPerformanceNow());
  const realTimeOrigin = performance.timeOrigin;
  try {
    Object.defineProperty(performance, "timeOrigin", {
      configurable: true,
      enumerable: true,
      get: () => (source ? 0 : realTimeOrigin),
    });
  } catch {
    // A runtime whose timeOrigin cannot be replaced has workerd's own (inside workerd, 0).
  }
  installProcessClock();
  if (!IN_WORKERD) {
    installProcessQueue();
    installProcessListeners();
  }

  // Timers: the run's own while a run is active, so they fire on its clock, in its order. The
  // originals are called on the global object, as workerd requires of its timers.
  const timer =
    (repeat: boolean, original: (...args: never[]) => unknown) =>
    (callback: unknown, ms?: unknown, ...args: unknown[]): unknown => {
      if (!source?.setTimer) return Reflect.apply(original, globalThis, [callback, ms, ...args]);
      if (typeof callback !== "function") {
        throw new TypeError(`The "callback" argument must be of type function. Received ${typeof callback}`);
      }
      // The callback runs in the async context that set the timer, as the platform's timers do,
      // so what an AsyncLocalStorage held there (a request's tenant, its logger) it holds there.
      const bound = AsyncResource.bind(callback as (...a: unknown[]) => void);
      return source.setTimer(bound, Number(ms) || 0, args, repeat);
    };
  const clear =
    (original: (...args: never[]) => unknown) =>
    (id: unknown): void => {
      // The run's timers are numbers, as workerd's are; Node's own are objects.
      if (source?.clearTimer && typeof id === "number") source.clearTimer(id);
      else Reflect.apply(original, globalThis, [id]);
    };
  globalThis.setTimeout = timer(false, realSetTimeout) as typeof setTimeout;
  globalThis.setInterval = timer(true, realSetInterval) as typeof setInterval;
  globalThis.clearTimeout = clear(realClearTimeout) as typeof clearTimeout;
  globalThis.clearInterval = clear(realClearInterval) as typeof clearInterval;
  // `setImmediate` (Node.js compatibility's) is a timer of 0 ms on the run's clock: a binding
  // call answers before it fires, as in workerd (Miniflare 4.20260426 runs a D1 call's answer, and
  // the code after it, before an immediate set while the call was in flight), where the host's own
  // would run at the host's next turn, before any answer the run loop gives.
  if (typeof realSetImmediate === "function" && typeof realClearImmediate === "function") {
    globalThis.setImmediate = function setImmediate(callback: unknown, ...args: unknown[]): unknown {
      if (!source?.setTimer) return Reflect.apply(realSetImmediate, globalThis, [callback, ...args]);
      if (typeof callback !== "function") {
        throw new TypeError(`The "callback" argument must be of type function. Received ${typeof callback}`);
      }
      const bound = AsyncResource.bind(callback as (...a: unknown[]) => void);
      return new RunImmediate(source.setTimer(bound, 0, args, false, "immediate"));
    } as typeof setImmediate;
    globalThis.clearImmediate = function clearImmediate(immediate: unknown): void {
      if (immediate instanceof RunImmediate) source?.clearTimer?.(immediate.timer);
      else Reflect.apply(realClearImmediate, globalThis, [immediate]);
    } as typeof clearImmediate;
    runImmediates.add(globalThis.setImmediate).add(globalThis.clearImmediate);
  }
  // Reading a body (`await request.json()`) is I/O in workerd, whose bodies are the runtime's
  // streams: the read completes in a later turn of the event loop, and a Durable Object's input
  // gate lets other calls in meanwhile, so a value read from storage before it may be stale
  // after it (Miniflare 4.20260426: four `stub.fetch` POSTs whose handler reads a count, then
  // the body, then writes the count plus one, leave 2). Node's bodies resolve in microtasks,
  // where no other call could come in. The read starts at once, so `bodyUsed` and the errors of
  // a body read twice are the host's.
  for (const prototype of [Request.prototype, Response.prototype]) {
    for (const method of BODY_READS) {
      const original = Reflect.get(prototype, method) as
        | ((...args: unknown[]) => Promise<unknown>)
        | undefined;
      if (typeof original !== "function" || bodyReads.has(original)) continue;
      if (!runtimeReads.has(prototype)) runtimeReads.set(prototype, new Map());
      runtimeReads.get(prototype)?.set(method, original);
      const read = async function (this: Request | Response, ...args: unknown[]): Promise<unknown> {
        const result = Reflect.apply(original, this, args) as Promise<unknown>;
        const turn = this.body === null ? undefined : ioTurn("body read");
        if (turn) {
          // The read's own failure is the caller's, after the turn: not an unhandled rejection.
          result.catch(() => {});
          await turn;
        }
        return result;
      };
      Object.defineProperty(read, "name", { value: method });
      bodyReads.add(read);
      Object.defineProperty(prototype, method, {
        ...Object.getOwnPropertyDescriptor(prototype, method),
        value: read,
      });
    }
  }
  // An abort given no reason has workerd's, whose message is not Node's.
  if (!IN_WORKERD) {
    const realAbort = AbortController.prototype.abort;
    AbortController.prototype.abort = function abort(this: AbortController, reason?: unknown): void {
      Reflect.apply(realAbort, this, [reason === undefined && source ? defaultAbortReason() : reason]);
    };
    const realAbortSignalAbort = AbortSignal.abort.bind(AbortSignal);
    AbortSignal.abort = (reason?: unknown): AbortSignal =>
      realAbortSignalAbort(reason === undefined && source ? defaultAbortReason() : reason);
  }
  // A signal that aborts with a TimeoutError after `ms` of the run's clock.
  AbortSignal.timeout = (ms: number): AbortSignal => {
    if (!source?.setTimer) return realAbortSignalTimeout(ms);
    const controller = new AbortController();
    globalThis.setTimeout(
      () => controller.abort(new DOMException("The operation was aborted due to timeout", "TimeoutError")),
      ms,
    );
    return controller.signal;
  };

  // Web Crypto: each operation the platform completes on its own time comes back through the run.
  const subtle = crypto.subtle as unknown as Record<string, unknown>;
  for (const name of SUBTLE_METHODS) {
    const method = subtle[name];
    if (typeof method !== "function") continue;
    subtle[name] = (...args: unknown[]) => {
      const start = () => Reflect.apply(method, crypto.subtle, args) as Promise<unknown>;
      return source?.outside ? source.outside(start) : start();
    };
  }

  installCompression();
  if (!IN_WORKERD) installWorkersGlobals();
  installProcessEnv();

  // Worker code's console: the run's, while one is active.
  for (const level of CONSOLE_LEVELS) {
    const original = console[level];
    console[level] = (...args: unknown[]) => {
      if (source?.log) source.log(level, args);
      else Reflect.apply(original, console, args);
    };
  }

  // workerd's `scheduler.wait(ms)`: a promise that resolves after `ms`, on the run's clock.
  // Node has no `scheduler`; workerd's own is kept for use outside a run.
  Object.defineProperty(globalThis, "scheduler", {
    configurable: true,
    writable: true,
    value: {
      wait(ms?: number, options?: unknown): Promise<void> {
        if (!source?.setTimer && realScheduler?.wait) {
          return Reflect.apply(realScheduler.wait, realScheduler, [ms, options]) as Promise<void>;
        }
        const signal = (options as { signal?: unknown } | null | undefined)?.signal;
        if (!(signal instanceof AbortSignal)) {
          return new Promise<void>((resolve) => globalThis.setTimeout(resolve, ms));
        }
        // With a signal, workerd's wait rejects once it aborts (at once if it has), with the
        // reason as the runtime gives it back, and its timer no longer holds the request.
        return new Promise<void>((resolve, reject) => {
          if (signal.aborted) {
            reject(reasonFromRuntime(signal.reason));
            return;
          }
          const abort = () => {
            globalThis.clearTimeout(id);
            reject(reasonFromRuntime(signal.reason));
          };
          const id = globalThis.setTimeout(() => {
            signal.removeEventListener("abort", abort);
            resolve();
          }, ms);
          signal.addEventListener("abort", abort, { once: true });
        });
      },
    },
  });

  // Replaced in both runtimes: workerd has them, but outside the simulation (the Cache API's
  // state would outlive a run). While a run is active the name is a stand-in, so that a Worker
  // that only tests for it (`typeof HTMLRewriter`) goes on, and using it ends the check.
  for (const [name, what] of NOT_SIMULATED) {
    const original = (globalThis as Record<string, unknown>)[name];
    const standIn = notSimulatedStandIn(name, what);
    Object.defineProperty(globalThis, name, {
      configurable: true,
      get() {
        return source ? standIn : original;
      },
    });
  }
  installGlobalScope();
  installWeakReferences();
}

/**
 * `WeakRef` and `FinalizationRegistry` while a run is active, without the collector: what it
 * takes, and when, depends on the host's heap (every run before this one allocated in it), so a
 * `deref()` that answers undefined, or a cleanup callback, would come in one run and not in its
 * replay, and the check would end in nondeterminism (a cache held in WeakRefs reads its row again
 * in one run and not in the next). Within a run nothing is collected: `deref()` answers the
 * target, and cleanup callbacks never run, as the language allows (no collection is ever
 * required) and workerd's collector may well do within one request. What a run holds this way
 * goes with its module instances at its end. The platform's own classes check the arguments and
 * are the prototypes (`instanceof WeakRef` holds); outside a run, the platform's own.
 */
function installWeakReferences(): void {
  for (const [name, real, simulated] of WEAK_REFERENCES) {
    Object.defineProperty(globalThis, name, {
      configurable: true,
      get: () => (source ? simulated : real),
    });
  }
}

const RealWeakRef = globalThis.WeakRef;
const RealRegistry = globalThis.FinalizationRegistry;

const SimWeakRef = class<T extends object> extends RealWeakRef<T> {
  readonly #target: T;
  constructor(target: T) {
    super(target);
    this.#target = target;
  }
  override deref(): T | undefined {
    return #target in this ? this.#target : super.deref();
  }
};

const ignoreCleanup = () => {};

const SimRegistry = class<T> extends RealRegistry<T> {
  /** How many registrations under each token are still there (none is ever cleaned up). */
  readonly #tokens = new WeakMap<object, number>();
  constructor(cleanup: (heldValue: T) => void) {
    // The platform's refusal of a cleanup that is not callable; a callable one never runs.
    super(typeof cleanup === "function" ? ignoreCleanup : cleanup);
  }
  override register(target: object, heldValue: T, unregisterToken?: object): void {
    super.register(target, heldValue, unregisterToken);
    if (unregisterToken !== undefined)
      this.#tokens.set(unregisterToken, (this.#tokens.get(unregisterToken) ?? 0) + 1);
  }
  override unregister(unregisterToken: object): boolean {
    super.unregister(unregisterToken);
    return this.#tokens.delete(unregisterToken);
  }
};

/** Each weak reference global: its name, the platform's class, and the run's. */
const WEAK_REFERENCES = [
  ["WeakRef", RealWeakRef, SimWeakRef],
  ["FinalizationRegistry", RealRegistry, SimRegistry],
] as const;

// Named as the platform's (`WeakRef.name`), which a class named so here would shadow.
for (const [name, , simulated] of WEAK_REFERENCES) Object.defineProperty(simulated, "name", { value: name });

/**
 * Whether `value` is a global the simulation puts in place of the platform's while a run is
 * active (a WeakRef without the collector): the platform's own, for a Worker's compatibility.
 */
export function simulatedGlobal(value: unknown): boolean {
  return value === SimWeakRef || value === SimRegistry || runImmediates.has(value);
}

/** The simulation's `setImmediate` and `clearImmediate`, once `install` has put them in place. */
const runImmediates = new Set<unknown>();

/**
 * The global scope as workerd's, in both runtimes while a run is active: `self` is the global
 * object, which is an EventTarget whose listeners are the run's (`runEvents`), so that a module
 * instance's `addEventListener` at import neither fails on Node nor outlives its run on workerd.
 */
function installGlobalScope(): void {
  const platform = globalThis as unknown as Record<string, unknown>;
  const realSelf = platform.self;
  Object.defineProperty(globalThis, "self", {
    configurable: true,
    get: () => (source ? globalThis : realSelf),
  });
  for (const name of ["addEventListener", "removeEventListener", "dispatchEvent"] as const) {
    const original = platform[name];
    Object.defineProperty(globalThis, name, {
      configurable: true,
      get() {
        const events = runEvents();
        return events ? events[name].bind(events) : original;
      },
    });
  }
}

/**
 * What Worker code finds under a name eutaxy does not simulate while a run is active: the Cache
 * API's `caches`, whose `default` and `open` end the check, or a class whose construction does.
 */
function notSimulatedStandIn(name: string, what: string): unknown {
  if (name === "caches") {
    return {
      get default(): never {
        return notSimulated(what);
      },
      open: (): never => notSimulated(what),
    };
  }
  return {
    [name]: class {
      constructor() {
        notSimulated(what);
      }
    },
  }[name];
}

/**
 * Ends the check with `error` when a run is active, whatever the Worker does with it: caught, or
 * answered with a 500, it would hide from the check what the Worker could not do. Throws `error`
 * where the Worker is.
 */
export function endCheck(error: Error): never {
  source?.fail?.(error);
  throw error;
}

/**
 * A promise Worker code rejected and nothing handled: logged as workerd logs it, with the run's
 * console (the trace keeps it) while a run is active; the request goes on, as in workerd.
 */
export function uncaughtInPromise(reason: unknown, promise?: Promise<unknown>): void {
  // First to the Worker's own listeners, as workerd's PromiseRejectionEvent: one that cancels
  // it has dealt with the rejection, and nothing is logged.
  const event = Object.assign(new Event("unhandledrejection", { cancelable: true }), { reason, promise });
  if (runEvents()?.dispatchEvent(event) === false) return;
  source?.log?.("error", ["Uncaught (in promise)", reason]);
}

/** What the check says when `who` (`Worker api`) used `what`, which eutaxy does not simulate. */
export function notSimulatedMessage(who: string, what: string): string {
  return `${who} used ${what}, which eutaxy does not simulate yet; the check cannot go on without it`;
}

/** Ends the check because the Worker reached `what`, a workerd API eutaxy does not simulate. */
export function notSimulated(what: string): never {
  return endCheck(
    source?.notSimulated?.(what) ?? new SimulationError(notSimulatedMessage("the Worker", what)),
  );
}

/** zlib's one-shot functions for each format `CompressionStream` takes. */
interface Zlib {
  gzipSync(data: Uint8Array): Uint8Array;
  gunzipSync(data: Uint8Array): Uint8Array;
  deflateSync(data: Uint8Array): Uint8Array;
  inflateSync(data: Uint8Array): Uint8Array;
  deflateRawSync(data: Uint8Array): Uint8Array;
  inflateRawSync(data: Uint8Array): Uint8Array;
}

/**
 * workerd's `WebSocketRequestResponsePair` (a Durable Object's automatic answer to a hibernated
 * WebSocket's message, for `ctx.setWebSocketAutoResponse`): its two strings, no own properties,
 * and workerd's errors (compared with Miniflare's), but for a call without `new`, which is V8's
 * TypeError for a class. A Durable Object sets one in its constructor
 * whether or not a socket ever connects, so it is data here; the sockets are what eutaxy does not
 * simulate.
 */
class WebSocketRequestResponsePair {
  readonly #request: string;
  readonly #response: string;

  constructor(...args: unknown[]) {
    for (const [i, value] of [args[0], args[1]].entries()) {
      if (value === undefined) {
        throw new TypeError(
          `Failed to construct 'WebSocketRequestResponsePair': constructor parameter ${i + 1} is not of type 'string'.`,
        );
      }
    }
    this.#request = String(args[0]);
    this.#response = String(args[1]);
  }

  get request(): string {
    return this.#request;
  }

  get response(): string {
    return this.#response;
  }

  get [Symbol.toStringTag](): string {
    return "WebSocketRequestResponsePair";
  }
}

/**
 * The globals workerd gives a Worker that Node lacks or has otherwise, as workerd 4.20260426
 * shows them (messages included): `navigator` (Cloudflare's, while a run is active: Node 21+ has
 * its own, and `navigator.userAgent === "Cloudflare-Workers"` is how Workers tell where they
 * run), `crypto.subtle.timingSafeEqual`, `crypto.DigestStream`, `IdentityTransformStream`,
 * `FixedLengthStream`, `WebSocketRequestResponsePair`, and a response's `statusText` with
 * workerd's phrase for its status when it was made without one. (`URLPattern` is Node's own from
 * Node 23.8 on.)
 */
function installWorkersGlobals(): void {
  const platform = globalThis as unknown as Record<string, unknown> & {
    process?: { getBuiltinModule?(id: string): unknown };
  };
  const nodeCrypto = platform.process?.getBuiltinModule?.("node:crypto") as
    | { createHash(algorithm: string): { update(data: Uint8Array): void; digest(): Uint8Array } }
    | undefined;

  installStatusText(() => source !== undefined);

  const realNavigator = platform.navigator;
  const workersNavigator = Object.freeze({
    userAgent: "Cloudflare-Workers",
    hardwareConcurrency: 1,
    language: "en",
    sendBeacon: (): never => notSimulated("navigator.sendBeacon()"),
  });
  Object.defineProperty(globalThis, "navigator", {
    configurable: true,
    get: () => (source ? workersNavigator : realNavigator),
  });

  const subtle = crypto.subtle as typeof crypto.subtle & { timingSafeEqual?: unknown };
  if (subtle.timingSafeEqual === undefined) {
    Object.defineProperty(subtle, "timingSafeEqual", {
      configurable: true,
      writable: true,
      value: (a: unknown, b: unknown): boolean => {
        const left = bufferSource(a, 1);
        const right = bufferSource(b, 2);
        if (left.byteLength !== right.byteLength) {
          throw new TypeError("Input buffers must have the same byte length.");
        }
        let differ = 0;
        for (let i = 0; i < left.byteLength; i++) differ |= (left[i] as number) ^ (right[i] as number);
        return differ === 0;
      },
    });
  }

  const c = crypto as typeof crypto & { DigestStream?: unknown };
  if (c.DigestStream === undefined && nodeCrypto) {
    const algorithms: Record<string, string> = {
      "SHA-1": "sha1",
      "SHA-256": "sha256",
      "SHA-384": "sha384",
      "SHA-512": "sha512",
      MD5: "md5",
    };
    class DigestStream extends WritableStream<ArrayBuffer | ArrayBufferView | string> {
      readonly digest: Promise<ArrayBuffer>;
      constructor(algorithm: string | { name: string }) {
        const name = (typeof algorithm === "string" ? algorithm : (algorithm?.name ?? "")).toUpperCase();
        const hashName = algorithms[name];
        if (hashName === undefined) {
          throw new DOMException(
            "Unrecognized or unimplemented digest algorithm requested.",
            "NotSupportedError",
          );
        }
        const hash = (nodeCrypto as NonNullable<typeof nodeCrypto>).createHash(hashName);
        let settle: (digest: ArrayBuffer) => void = () => {};
        const digest = new Promise<ArrayBuffer>((resolve) => {
          settle = resolve;
        });
        super({
          write(chunk) {
            hash.update(digestChunk(chunk));
          },
          close() {
            const bytes = hash.digest();
            settle(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer);
          },
        });
        this.digest = digest;
      }
    }
    Object.defineProperty(c, "DigestStream", { configurable: true, writable: true, value: DigestStream });
  }

  if (platform.IdentityTransformStream === undefined) {
    platform.IdentityTransformStream = class IdentityTransformStream extends (
      TransformStream<ArrayBuffer | ArrayBufferView, Uint8Array>
    ) {
      constructor() {
        super({ transform: (chunk, controller) => controller.enqueue(byteChunk(chunk)) });
      }
    };
  }
  if (platform.WebSocketRequestResponsePair === undefined) {
    platform.WebSocketRequestResponsePair = WebSocketRequestResponsePair;
  }
  if (platform.FixedLengthStream === undefined) {
    platform.FixedLengthStream = class FixedLengthStream extends (
      TransformStream<ArrayBuffer | ArrayBufferView, Uint8Array>
    ) {
      constructor(expectedLength: number | bigint) {
        const expected = Number(expectedLength);
        let seen = 0;
        super({
          transform(chunk, controller) {
            const bytes = byteChunk(chunk);
            seen += bytes.byteLength;
            if (seen > expected)
              throw new TypeError("Attempt to write too many bytes through a FixedLengthStream.");
            controller.enqueue(bytes);
          },
          flush() {
            if (seen < expected) {
              throw new TypeError("FixedLengthStream did not see all expected bytes before close().");
            }
          },
        });
      }
    };
  }
}

/**
 * `process.hrtime()`, `process.hrtime.bigint()` and `process.uptime()` on the run's clock, as
 * workerd's `process` answers them (the time since the Unix epoch, and an uptime of 0), so that a
 * Worker with Node.js compatibility cannot read the machine's clock through them.
 */
function installProcessClock(): void {
  const proc = (globalThis as unknown as { process?: Record<string, unknown> }).process;
  const realHrtime = proc?.hrtime as ((previous?: [number, number]) => [number, number]) | undefined;
  if (!proc || typeof realHrtime !== "function") return;
  const realBigint = (realHrtime as unknown as { bigint: () => bigint }).bigint;
  const realUptime = proc.uptime as () => number;
  const nanos = (ms: number): bigint => BigInt(Math.floor(ms)) * 1_000_000n;
  const hrtime = (previous?: [number, number]): [number, number] => {
    if (!source) return realHrtime.call(proc, previous);
    const now = nanos(source.nowMs());
    const since = previous ? now - (BigInt(previous[0]) * 1_000_000_000n + BigInt(previous[1])) : now;
    return [Number(since / 1_000_000_000n), Number(since % 1_000_000_000n)];
  };
  hrtime.bigint = (): bigint => (source ? nanos(source.nowMs()) : realBigint.call(realHrtime));
  try {
    proc.hrtime = hrtime;
    proc.uptime = () => (source ? 0 : realUptime.call(proc));
  } catch {
    // A runtime whose process clock cannot be replaced keeps its own (workerd's is the epoch's).
  }
}

/** What `setImmediate` returns during a run: a handle on the run's timer, as Node's `Immediate`. */
class RunImmediate {
  constructor(readonly timer: number) {}
  hasRef(): boolean {
    return true;
  }
  ref(): this {
    return this;
  }
  unref(): this {
    return this;
  }
  [Symbol.dispose](): void {
    globalThis.clearImmediate(this as unknown as NodeJS.Immediate);
  }
}

/**
 * `process.nextTick` and `process.emitWarning` as workerd's `process` has them, while a run is
 * active. workerd's `nextTick` is `queueMicrotask`: a callback runs in turn with the promise
 * callbacks queued around it, where Node runs every tick callback before any promise callback
 * (and, from a promise callback, only once they have all run), so a library that batches on
 * `nextTick` would see other orders on the two runtimes. workerd's `emitWarning` prints nothing:
 * it emits `warning` on `process`, a microtask later, to the Worker's listeners; Node's prints
 * `(node:<pid>) …` to stderr, which the run's trace would keep with the pid of eutaxy's process
 * (another in every process: the same seed, another trace) and the `--trace-warnings` hint only the
 * first time in the process. The one warning workerd's own modules also log is an EventEmitter's
 * listener count going over its limit, with `console.log`, at once, in workerd's words. Node's own
 * code (its streams) gets the same `nextTick` during a run, as workerd's modules use theirs.
 */
function installProcessQueue(): void {
  const proc = (globalThis as { process?: NodeJS.Process }).process;
  if (!proc || typeof proc.nextTick !== "function") return;
  const realNextTick = proc.nextTick;
  const realEmitWarning = proc.emitWarning;
  // Node's own listener, which prints: a warning a Worker emits reaches the other listeners.
  const nodesListeners = new Set(proc.listeners("warning"));
  try {
    proc.nextTick = function nextTick(callback: (...args: unknown[]) => void, ...args: unknown[]): void {
      // Node's own check of the callback, and its own queue outside a run.
      if (!source || typeof callback !== "function") {
        Reflect.apply(realNextTick, proc, [callback, ...args]);
        return;
      }
      queueMicrotask(() => callback(...args));
    } as typeof proc.nextTick;
    proc.emitWarning = function emitWarning(warning: string | Error, ...rest: unknown[]): void {
      if (!source) {
        Reflect.apply(realEmitWarning, proc, [warning, ...rest]);
        return;
      }
      const error = warningOf(warning, rest);
      if (error.name === "MaxListenersExceededWarning") {
        const { count, type } = error as Error & { count?: number; type?: unknown };
        console.log(
          `Possible EventEmitter memory leak detected. ${count} ${String(type)} listeners added to an EventEmitter. Use emitter.setMaxListeners() to increase limit`,
        );
        // Then emitted as any warning is, in workerd's words, which do not give the limit.
        error.message = error.message.replace(/\. MaxListeners is \d+\./, ".");
      }
      queueMicrotask(() => {
        for (const listener of proc.listeners("warning")) {
          if (!nodesListeners.has(listener)) Reflect.apply(listener, proc, [error]);
        }
      });
    } as typeof proc.emitWarning;
  } catch {
    // A runtime whose process cannot be changed keeps its own.
  }
}

/** The Error `process.emitWarning(warning, type | options, code)` makes, as workerd's makes it. */
function warningOf(warning: string | Error, rest: unknown[]): Error {
  const [options, code] = rest;
  let name = "Warning";
  let codeOf: unknown;
  let detail: unknown;
  if (typeof options === "object" && options !== null) {
    const given = options as { type?: string; code?: string; detail?: string };
    if (given.type) name = given.type;
    codeOf = given.code;
    detail = given.detail;
  } else if (typeof options === "string") {
    name = options;
    if (typeof code === "string") codeOf = code;
  }
  const error = typeof warning === "string" ? new Error(warning) : warning;
  if (typeof warning === "string" || name !== "Warning") error.name = name;
  if (codeOf) (error as Error & { code?: unknown }).code = codeOf;
  if (typeof detail === "string" && detail) (error as Error & { detail?: unknown }).detail = detail;
  return error;
}

/**
 * `process.env` while a run is active is the running Worker's, never the machine's: the shell's
 * environment (its API keys among it) must not reach Worker code, nor make a check depend on the
 * machine it runs on. Outside a run, the process's own.
 */
function installProcessEnv(): void {
  const platform = globalThis as { process?: { env?: unknown } };
  const proc = platform.process;
  if (!proc) return;
  const realEnv = proc.env;
  try {
    Object.defineProperty(proc, "env", {
      configurable: true,
      enumerable: true,
      get: () => (source?.processEnv ? source.processEnv() : realEnv),
    });
  } catch {
    // A runtime whose process.env cannot be replaced keeps its own (workerd's is empty).
  }
}

/** The bytes of an ArrayBuffer or a view of one; undefined for anything else. */
function bytesOf(value: unknown): Uint8Array | undefined {
  if (value instanceof ArrayBuffer) return new Uint8Array(value);
  if (ArrayBuffer.isView(value)) return new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
  return undefined;
}

/** The bytes of `timingSafeEqual`'s argument `parameter`, or workerd's TypeError. */
function bufferSource(value: unknown, parameter: number): Uint8Array {
  const bytes = bytesOf(value);
  if (bytes) return bytes;
  throw new TypeError(
    `Failed to execute 'timingSafeEqual' on 'SubtleCrypto': parameter ${parameter} is not of type 'JsBufferSource'.`,
  );
}

/**
 * A chunk written to a `DigestStream`, as workerd's takes it (src/workerd/api/crypto/crypto.c++):
 * bytes, or a string as its UTF-8 bytes; anything else rejects the write with workerd's
 * TypeError, which errors the stream (its `close` rejects with it, and `digest` never settles).
 */
function digestChunk(chunk: unknown): Uint8Array {
  if (typeof chunk === "string") return new TextEncoder().encode(chunk);
  const bytes = bytesOf(chunk);
  if (bytes) return bytes;
  throw new TypeError(
    "DigestStream is a byte stream but received an object of non-ArrayBuffer/ArrayBufferView/string type on its writable side.",
  );
}

/** A chunk written to a byte stream (IdentityTransformStream), or workerd's TypeError. */
function byteChunk(chunk: unknown): Uint8Array {
  const bytes = bytesOf(chunk);
  if (bytes) return bytes;
  throw new TypeError(
    "This TransformStream is being used as a byte stream, but received a string on its writable side. If you wish to write a string, you'll probably want to explicitly UTF-8-encode it with TextEncoder.",
  );
}

/**
 * In Node, `CompressionStream` and `DecompressionStream` run zlib on the thread pool, so their
 * output arrives whenever the pool is done: Worker code reading it could not be scheduled.
 * While a run is active they are streams that gather their input and transform it at its end
 * with zlib's one-shot functions: the same bytes, produced without leaving the simulation.
 * workerd's own (the runtime that Worker code may run in instead) are left as they are.
 */
function installCompression(): void {
  const platform = globalThis as unknown as {
    process?: { getBuiltinModule?(id: string): unknown };
    CompressionStream: new (format: never) => TransformStream;
    DecompressionStream: new (format: never) => TransformStream;
  };
  if (IN_WORKERD) return;
  const zlib = platform.process?.getBuiltinModule?.("node:zlib") as Zlib | undefined;
  if (!zlib) return;
  const RealCompression = platform.CompressionStream;
  const RealDecompression = platform.DecompressionStream;
  const formats = {
    gzip: [zlib.gzipSync, zlib.gunzipSync],
    deflate: [zlib.deflateSync, zlib.inflateSync],
    "deflate-raw": [zlib.deflateRawSync, zlib.inflateRawSync],
  } as const;
  const oneShot = (format: unknown, direction: 0 | 1, Real: new (format: never) => TransformStream) => {
    if (!source) return new Real(format as never);
    const pair = Object.hasOwn(formats, String(format))
      ? formats[String(format) as keyof typeof formats]
      : undefined;
    if (!pair) {
      throw new TypeError(
        `The provided value '${String(format)}' is not a valid enum value of type CompressionFormat.`,
      );
    }
    const transform = pair[direction];
    const chunks: Uint8Array[] = [];
    return new TransformStream<ArrayBuffer | ArrayBufferView, Uint8Array>({
      transform(chunk) {
        chunks.push(bytesOf(chunk) ?? new Uint8Array(chunk as ArrayBuffer));
      },
      flush(controller) {
        const input = new Uint8Array(chunks.reduce((n, c) => n + c.byteLength, 0));
        let at = 0;
        for (const chunk of chunks) {
          input.set(chunk, at);
          at += chunk.byteLength;
        }
        controller.enqueue(new Uint8Array(transform(input)));
      },
    });
  };
  platform.CompressionStream = function CompressionStream(format: string) {
    return oneShot(format, 0, RealCompression);
  } as unknown as typeof platform.CompressionStream;
  platform.DecompressionStream = function DecompressionStream(format: string) {
    return oneShot(format, 1, RealDecompression);
  } as unknown as typeof platform.DecompressionStream;
}
