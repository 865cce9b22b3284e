/**
 * What a Worker's compatibility flags turn on, where the simulation needs to know (both runtimes
 * run this: it reads the config the host loaded, never a file).
 */

import type { WorkerConfig } from "../load/wrangler.ts";

/** The compatibility settings of a Worker; absent for a Worker without a wrangler config. */
type Compatibility = Partial<Pick<WorkerConfig, "compatibilityDate" | "compatibilityFlags">> | undefined;

/** Whether the Worker has Node.js compatibility (`nodejs_compat`, or its `_v2`). */
export function nodejsCompat(config: Compatibility): boolean {
  const flags = config?.compatibilityFlags ?? [];
  return flags.includes("nodejs_compat") || flags.includes("nodejs_compat_v2");
}

/**
 * The globals Node gives all code that workerd gives a Worker only with Node.js compatibility's
 * second version: without it, each is a name workerd does not define (workerd 4.20260426 answers
 * `typeof Buffer` with "undefined", and `Buffer.from("x")` throws `ReferenceError: Buffer is not
 * defined`).
 */
export const NODE_GLOBALS = ["Buffer", "process", "global", "setImmediate", "clearImmediate"] as const;

/**
 * Whether workerd gives the Worker `NODE_GLOBALS`: with `nodejs_compat_v2`, or with
 * `nodejs_compat` and a compatibility date from 2024-09-23 (when `nodejs_compat` implies v2,
 * Cloudflare's "Compatibility flags"), unless `no_nodejs_compat_v2` holds v2 back. With
 * `nodejs_compat` alone before that date, `node:` modules import but the globals are absent, as
 * workerd answers.
 */
export function nodeGlobals(config: Compatibility): boolean {
  const flags = config?.compatibilityFlags ?? [];
  if (flags.includes("nodejs_compat_v2")) return true;
  if (!flags.includes("nodejs_compat") || flags.includes("no_nodejs_compat_v2")) return false;
  return (config?.compatibilityDate ?? "") >= "2024-09-23";
}
