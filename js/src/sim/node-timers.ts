/**
 * `node:timers` and `node:timers/promises` as a Worker with Node.js compatibility gets them on the
 * Node runtime: built on the global timers, which run on the run's clock (globals.ts), as
 * workerd builds its own on its global timers. Node's modules would set timers of the host's
 * event loop, which fire on the machine's clock, outside the run's order. Their answers are
 * those of Miniflare 4.20260426 (js/test/timers.test.ts): a `Timeout` object for `setTimeout` and
 * `setInterval`, and an `AbortError` (`ABORT_ERR`, the signal's reason as its `cause`) when a
 * promise's signal aborts.
 */

type Callback = (...args: unknown[]) => unknown;
type TimerOptions = { signal?: AbortSignal; ref?: boolean } | undefined;

/** Node's and workerd's error for an aborted timer promise. */
class AbortError extends Error {
  readonly code = "ABORT_ERR";
  constructor(cause: unknown) {
    super("The operation was aborted", { cause });
    this.name = "AbortError";
  }
}

function validateCallback(callback: unknown): asserts callback is Callback {
  if (typeof callback !== "function") {
    throw new TypeError(`The "callback" argument must be of type function. Received ${typeof callback}`);
  }
}

/** A timer of the global `setTimeout` or `setInterval`, as the object `node:timers` answers. */
class Timeout {
  #id: unknown;
  #refed = true;
  readonly #start: () => unknown;
  readonly #clear: () => void;

  constructor(callback: Callback, after: number | undefined, args: unknown[], repeat: boolean) {
    const ms = after === undefined ? 1 : Number(after);
    this.#start = () =>
      repeat ? globalThis.setInterval(callback, ms, ...args) : globalThis.setTimeout(callback, ms, ...args);
    this.#clear = () =>
      repeat
        ? globalThis.clearInterval(this.#id as ReturnType<typeof setInterval>)
        : globalThis.clearTimeout(this.#id as ReturnType<typeof setTimeout>);
    this.#id = this.#start();
  }

  refresh(): this {
    this.#clear();
    this.#id = this.#start();
    return this;
  }
  ref(): this {
    this.#refed = true;
    return this;
  }
  unref(): this {
    this.#refed = false;
    return this;
  }
  hasRef(): boolean {
    return this.#refed;
  }
  close(): this {
    this.#clear();
    return this;
  }
  [Symbol.dispose](): void {
    this.#clear();
  }
  [Symbol.toPrimitive](): number {
    return Number(this.#id);
  }
  /** Clears a Timeout (`clearTimeout(timeout)`). */
  static clear(timer: unknown): boolean {
    if (!(timer instanceof Timeout)) return false;
    timer.#clear();
    return true;
  }
}

/** A promise that `start(resolve)` settles, rejected with an AbortError once `signal` aborts. */
function abortable<T>(
  options: TimerOptions,
  start: (resolve: (value: T) => void) => unknown,
  stop: (id: unknown) => void,
): Promise<T> {
  const signal = options?.signal;
  if (signal !== undefined && !(signal instanceof AbortSignal)) {
    return Promise.reject(new TypeError('The "options.signal" property must be an instance of AbortSignal.'));
  }
  if (signal?.aborted) return Promise.reject(new AbortError(signal.reason));
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => {
      stop(id);
      reject(new AbortError(signal?.reason));
    };
    const id = start((value) => {
      signal?.removeEventListener("abort", onAbort);
      resolve(value);
    });
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

function sleep<T>(delay: number | undefined, value?: T, options?: TimerOptions): Promise<T> {
  return abortable<T>(
    options,
    (resolve) => globalThis.setTimeout(() => resolve(value as T), delay),
    (id) => globalThis.clearTimeout(id as ReturnType<typeof setTimeout>),
  );
}

function immediate<T>(value?: T, options?: TimerOptions): Promise<T> {
  return abortable<T>(
    options,
    (resolve) => globalThis.setImmediate(() => resolve(value as T)),
    (id) => globalThis.clearImmediate(id as ReturnType<typeof setImmediate>),
  );
}

/** `setInterval` of `node:timers/promises`: an async iterator that yields `value` every tick. */
async function* every<T>(delay: number | undefined, value?: T, options?: TimerOptions): AsyncGenerator<T> {
  const signal = options?.signal;
  if (signal?.aborted) throw new AbortError(signal.reason);
  let ticks = 0;
  let wake: (() => void) | undefined;
  const id = globalThis.setInterval(() => {
    ticks++;
    wake?.();
  }, delay);
  const onAbort = () => wake?.();
  signal?.addEventListener("abort", onAbort);
  try {
    for (;;) {
      if (ticks === 0) await new Promise<void>((resolve) => (wake = resolve));
      wake = undefined;
      if (signal?.aborted) throw new AbortError(signal.reason);
      for (; ticks > 0; ticks--) yield value as T;
    }
  } finally {
    globalThis.clearInterval(id);
    signal?.removeEventListener("abort", onAbort);
  }
}

export function simulatedTimers(): { timers: object; promises: object } {
  const promises = {
    setTimeout: sleep,
    setImmediate: immediate,
    setInterval: every,
    scheduler: {
      wait: (delay: number, options?: TimerOptions) => sleep(delay, undefined, options),
      yield: () => immediate(),
    },
  };
  const clearTimer = (timer: unknown): void => {
    if (!Timeout.clear(timer) && typeof timer === "number") globalThis.clearTimeout(timer);
  };
  const timers = {
    Timeout,
    setTimeout(callback: unknown, delay?: number, ...args: unknown[]): Timeout {
      validateCallback(callback);
      return new Timeout(callback, delay, args, false);
    },
    setInterval(callback: unknown, delay?: number, ...args: unknown[]): Timeout {
      validateCallback(callback);
      return new Timeout(callback, delay, args, true);
    },
    clearTimeout: clearTimer,
    clearInterval: clearTimer,
    setImmediate: (callback: Callback, ...args: unknown[]) => globalThis.setImmediate(callback, ...args),
    clearImmediate: (immediate: unknown) =>
      globalThis.clearImmediate(immediate as ReturnType<typeof setImmediate>),
    active: (timer: unknown) => (timer instanceof Timeout ? timer.refresh() : undefined),
    unenroll: clearTimer,
    enroll: (): never => {
      throw new Error("Not implemented. Please use setTimeout() instead.");
    },
    promises,
  };
  return { timers, promises };
}
