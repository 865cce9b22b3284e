/**
 * `node:async_hooks` as Worker code gets it: the platform's module, with an `AsyncLocalStorage`
 * and an `AsyncResource` of the simulation's own.
 *
 * The invocation a Worker's code runs for is itself followed through an AsyncLocalStorage with
 * interleavings (run.ts), so that a binding call is the invocation's that made it. A snapshot of
 * the async context (`AsyncLocalStorage.snapshot()`, `AsyncLocalStorage.bind`, `AsyncResource`'s
 * `bind` and `runInAsyncScope`) takes that storage's value along with the Worker's own: an SDK
 * client built by a first request that runs every later call in the context it was built in made
 * a later request's binding calls the first request's, though workerd makes them the request's
 * whose code runs them (its I/O context is not part of the async context). So a function run
 * in a snapshot runs for the invocation that runs it, and sees the Worker's own storages as the
 * snapshot had them.
 *
 * On the Node runtime, `AsyncLocalStorage` also remembers its instances, so that the run that
 * made them can let them go (`releaseStorages`). Node (20 and 22) keeps every storage that ever
 * ran a callback in one process-wide list, and calls each of them at every promise and callback
 * made afterwards, until it is disabled. A Worker makes its storage at its module's top level, and
 * every run evaluates the module anew: without the release, a check's thousandth run paid for a
 * thousand storages at every `await` (a fifth of a run's time after a few hundred runs) and kept
 * them all. workerd's follows contexts without hooks, and has nothing to release.
 */

type Storage = { disable(): void };
type StorageClass = (new (
  ...args: never[]
) => Storage) & {
  snapshot(): <R, A extends unknown[]>(fn: (...args: A) => R, ...args: A) => R;
};
type ResourceClass = new (
  type: string,
  options?: unknown,
) => {
  runInAsyncScope<R>(fn: (...args: unknown[]) => R, thisArg?: unknown, ...args: unknown[]): R;
  bind<F extends (...args: never[]) => unknown>(fn: F, thisArg?: unknown): F;
};

/** The storages Worker code made since the last release, in the order it made them. */
const made: Storage[] = [];

/** How `fn` runs for the invocation running now, once a snapshot has restored another context. */
let carrier: (<R>(fn: () => R) => () => R) | undefined;

/** Sets what carries the running invocation into a snapshot's context (run.ts). */
export function carryInvocation(carry: <R>(fn: () => R) => () => R): void {
  carrier = carry;
}

/** `fn`, to run inside a snapshot's context for the invocation running now. */
function forRunning<R>(fn: () => R): () => R {
  return carrier ? carrier(fn) : fn;
}

/** Makes `platform` (the runtime's `node:async_hooks`) into the module a Worker imports. */
export function simulatedAsyncHooks(platform: object): object {
  const base = platform as { AsyncLocalStorage: StorageClass; AsyncResource: ResourceClass };
  const PlatformStorage = base.AsyncLocalStorage;
  const PlatformResource = base.AsyncResource;

  class AsyncResource extends PlatformResource {
    static override bind<F extends (...args: never[]) => unknown>(
      fn: F,
      type?: string,
      thisArg?: unknown,
    ): F {
      return new AsyncResource(type || fn.name || "bound-anonymous-fn").bind(fn, thisArg);
    }

    override runInAsyncScope<R>(fn: (...args: unknown[]) => R, thisArg?: unknown, ...args: unknown[]): R {
      return super.runInAsyncScope(forRunning(() => Reflect.apply(fn, thisArg, args) as R));
    }

    // As Node's does it, through `runInAsyncScope` (workerd's does not call it).
    override bind<F extends (...args: never[]) => unknown>(fn: F, thisArg?: unknown): F {
      if (typeof fn !== "function") return super.bind(fn, thisArg);
      const resource = this;
      const bound = function (this: unknown, ...args: unknown[]): unknown {
        return resource.runInAsyncScope(
          fn as unknown as (...a: unknown[]) => unknown,
          thisArg === undefined ? this : thisArg,
          ...args,
        );
      };
      return Object.defineProperties(bound, {
        length: { configurable: true, enumerable: false, value: fn.length, writable: false },
        asyncResource: { configurable: true, enumerable: true, value: resource, writable: true },
      }) as unknown as F;
    }
  }

  class AsyncLocalStorage extends PlatformStorage {
    constructor(...args: never[]) {
      super(...args);
      made.push(this);
    }

    static override snapshot(): <R, A extends unknown[]>(fn: (...args: A) => R, ...args: A) => R {
      const runInSnapshot = PlatformStorage.snapshot();
      return <R, A extends unknown[]>(fn: (...args: A) => R, ...args: A): R =>
        runInSnapshot(forRunning(() => fn(...args)));
    }

    static override bind<F extends (...args: never[]) => unknown>(fn: F): F {
      return AsyncResource.bind(fn);
    }
  }
  // Named as the platform's classes are: a Worker (or its logger) that prints one sees that name.
  Object.defineProperty(AsyncLocalStorage, "name", { value: "AsyncLocalStorage" });
  Object.defineProperty(AsyncResource, "name", { value: "AsyncResource" });
  return Object.defineProperties(Object.create(platform), {
    AsyncLocalStorage: { value: AsyncLocalStorage, enumerable: true },
    AsyncResource: { value: AsyncResource, enumerable: true },
  });
}

/**
 * Disables every storage Worker code made so far: called as a run ends, when nothing of that
 * run's code runs again (each run evaluates the Workers' modules anew), so no storage of one run
 * follows the promises of the next.
 */
export function releaseStorages(): void {
  for (const storage of made.splice(0)) {
    try {
      storage.disable();
    } catch {
      // workerd's: nothing to release, and `disable()` is not implemented.
    }
  }
}
