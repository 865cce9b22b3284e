/**
 * `node:async_hooks` as Worker code gets it on the Node runtime: the platform's module, except
 * that `AsyncLocalStorage` is a subclass that remembers its instances, so that the run that made
 * them can let them go (`releaseStorages`). Node (20 and 22) keeps every storage that ever ran a
 * callback in one process-wide list, and calls each of them at every promise and callback made
 * afterwards, until it is disabled. A Worker makes its storage at its module's top level, and
 * every run evaluates the module anew: without the release, a check's thousandth run paid for a
 * thousand storages at every `await` (a fifth of a run's time after a few hundred runs) and kept
 * them all. workerd's follows contexts without hooks, and has nothing to release.
 */

import { AsyncLocalStorage as PlatformStorage } from "node:async_hooks";

/** The storages Worker code made since the last release, in the order it made them. */
const made: PlatformStorage<unknown>[] = [];

/** Makes `platform` (Node's `node:async_hooks`) into the module a Worker imports. */
export function simulatedAsyncHooks(platform: object): object {
  class AsyncLocalStorage<T> extends PlatformStorage<T> {
    constructor(...args: ConstructorParameters<typeof PlatformStorage>) {
      super(...args);
      made.push(this as PlatformStorage<unknown>);
    }
  }
  // Named as the platform's class is: a Worker (or its logger) that prints it sees that name.
  Object.defineProperty(AsyncLocalStorage, "name", { value: "AsyncLocalStorage" });
  return Object.defineProperties(Object.create(platform), {
    AsyncLocalStorage: { value: AsyncLocalStorage, enumerable: true },
  });
}

/**
 * Disables every storage Worker code made so far: called as a run ends, when nothing of that
 * run's code runs again (each run evaluates the Workers' modules anew), so no storage of one run
 * follows the promises of the next.
 */
export function releaseStorages(): void {
  for (const storage of made.splice(0)) storage.disable();
}
