/**
 * Runs before the rest of the host inside workerd. `sim/globals.ts` keeps the platform's
 * `setImmediate` and calls it as a method of its own object, which Node allows and workerd
 * refuses ("Illegal invocation"): workerd's timers must be called on the global object. So the
 * global becomes a function that calls the original on the global object, before `globals.ts`
 * takes it; Worker code calling `setImmediate` sees no difference.
 */

const platformSetImmediate = globalThis.setImmediate;
globalThis.setImmediate = function setImmediate(...args: Parameters<typeof platformSetImmediate>) {
  return platformSetImmediate.apply(globalThis, args);
} as typeof platformSetImmediate;
