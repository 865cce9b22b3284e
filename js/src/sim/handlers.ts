/**
 * Calling a Worker's handlers the way the runtime does: the default export may be an object
 * with handler methods (`fetch`, `scheduled`, `queue`) or a class extending WorkerEntrypoint,
 * and a named entrypoint is always such a class.
 */

import type { Env, RunContext } from "./context.ts";
import { type ExecutionContextLike, isEntrypointClass, WorkerEntrypoint } from "./workers-module.ts";
import type { SimWorker } from "./world.ts";

export type HandlerName = "fetch" | "scheduled" | "queue";

/**
 * Calls handler `name` of `worker`'s `entrypoint` (default export when undefined). An object
 * handler gets `(arg, env, ctx)`; an entrypoint class instance gets `(arg)` and has env and ctx
 * as `this.env` and `this.ctx`.
 */
export function callHandler(
  run: RunContext,
  worker: SimWorker,
  entrypoint: string | undefined,
  name: HandlerName,
  arg: unknown,
  env: Env,
  ctx: ExecutionContextLike,
): Promise<unknown> {
  const target = run.exportsOf(worker)[entrypoint ?? "default"];
  if (isEntrypointClass(target)) {
    const instance = new target(ctx, env) as Record<string, unknown>;
    const method = instance[name];
    if (typeof method !== "function") throw missing(name);
    return Promise.resolve(method.call(instance, arg));
  }
  const handler = (target as Record<string, unknown> | undefined)?.[name];
  if (typeof handler !== "function") throw missing(name);
  return Promise.resolve(handler.call(target, arg, env, ctx));
}

/** True when `worker`'s default export has handler `name`. */
export function hasHandler(exports: Record<string, unknown>, name: HandlerName): boolean {
  const value = exports.default;
  if (typeof value === "function")
    return typeof (value.prototype as Record<string, unknown>)?.[name] === "function";
  return typeof (value as Record<string, unknown> | undefined)?.[name] === "function";
}

/**
 * The names in a Worker's `exports` a service binding's `entrypoint` can reach: classes extending
 * WorkerEntrypoint, and objects with a fetch handler (`export const admin = { fetch() {…} }`).
 */
export function namedEntrypoints(exports: Record<string, unknown>): string[] {
  return Object.entries(exports).flatMap(([name, value]) => {
    if (name === "default") return [];
    const isClass = typeof value === "function" && value.prototype instanceof WorkerEntrypoint;
    const isHandlers = typeof (value as Record<string, unknown> | null)?.fetch === "function";
    return isClass || isHandlers ? [name] : [];
  });
}

/** workerd's error for a call of a handler the Worker does not export (Miniflare 4.20260426). */
function missing(name: HandlerName): Error {
  return new Error(`Handler does not export a ${name}() function.`);
}
