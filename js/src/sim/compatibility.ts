/**
 * What a Worker's compatibility flags turn on, where the simulation needs to know (both runtimes
 * run this: it reads the config the host loaded, never a file).
 */

import type { WorkerConfig } from "../load/wrangler.ts";

/** The compatibility settings of a Worker; absent for a Worker without a wrangler config. */
type Compatibility = Partial<Pick<WorkerConfig, "compatibilityDate" | "compatibilityFlags">> | undefined;

/**
 * The compatibility date from which workerd turns `nodejs_compat` and `nodejs_compat_v2` on by
 * default (Cloudflare's changelog, "Node.js compatibility is now enabled by default"): a Worker
 * on that date or later has both unless it opts out with `no_nodejs_compat` and
 * `no_nodejs_compat_v2`, each flag keeping its own default.
 */
const NODEJS_COMPAT_BY_DEFAULT = "2026-08-04";

/** Whether the Worker's compatibility date turns on `flag` by default, and it does not opt out. */
function onByDefault(config: Compatibility, flag: "nodejs_compat" | "nodejs_compat_v2"): boolean {
  const flags = config?.compatibilityFlags ?? [];
  return (config?.compatibilityDate ?? "") >= NODEJS_COMPAT_BY_DEFAULT && !flags.includes(`no_${flag}`);
}

/**
 * Whether the Worker has Node.js compatibility: `nodejs_compat` or its `_v2`, named or on by
 * its compatibility date (v2 implies the first).
 */
export function nodejsCompat(config: Compatibility): boolean {
  const flags = config?.compatibilityFlags ?? [];
  return flags.includes("nodejs_compat") || onByDefault(config, "nodejs_compat") || nodeGlobals(config);
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
 * Cloudflare's "Compatibility flags"), or a date from 2026-08-04 (when v2 is on by default),
 * unless `no_nodejs_compat_v2` holds v2 back. With `nodejs_compat` alone before 2024-09-23,
 * `node:` modules import but the globals are absent, as workerd answers.
 */
export function nodeGlobals(config: Compatibility): boolean {
  const flags = config?.compatibilityFlags ?? [];
  if (flags.includes("nodejs_compat_v2")) return true;
  if (flags.includes("no_nodejs_compat_v2")) return false;
  if (onByDefault(config, "nodejs_compat_v2")) return true;
  return flags.includes("nodejs_compat") && (config?.compatibilityDate ?? "") >= "2024-09-23";
}

/**
 * The weak references workerd gives a Worker only with `enable_weak_ref` (on by default from the
 * compatibility date 2025-05-05 unless `disable_weak_ref`): without it, each is a name workerd
 * does not define (Miniflare 4.20260426 answers `typeof WeakRef` with "undefined" at the date
 * 2025-01-01, "function" at 2025-09-01).
 */
export const WEAK_REF_GLOBALS = ["WeakRef", "FinalizationRegistry"] as const;

/** Whether workerd gives the Worker `WEAK_REF_GLOBALS`. */
export function weakRefs(config: Compatibility): boolean {
  const flags = config?.compatibilityFlags ?? [];
  if (flags.includes("enable_weak_ref")) return true;
  if (flags.includes("disable_weak_ref")) return false;
  return (config?.compatibilityDate ?? "") >= "2025-05-05";
}

/** Every global a Worker's compatibility may leave undefined, read through `ABSENT_GLOBALS`. */
export const OPTIONAL_GLOBALS = [...NODE_GLOBALS, ...WEAK_REF_GLOBALS] as const;

/** The globals of `OPTIONAL_GLOBALS` workerd does not define for the Worker. */
export function absentGlobalNames(config: Compatibility): readonly string[] {
  return [...(nodeGlobals(config) ? [] : NODE_GLOBALS), ...(weakRefs(config) ? [] : WEAK_REF_GLOBALS)];
}

/**
 * Whether workerd takes `cache` in a Request's init (`cache_option_enabled`, on by default from
 * the compatibility date 2024-11-11 unless `cache_option_disabled`). Without it, any `cache`
 * other than `undefined` is refused; with it, only `"no-store"` is taken.
 */
export function cacheOption(config: Compatibility): boolean {
  const flags = config?.compatibilityFlags ?? [];
  if (flags.includes("cache_option_enabled")) return true;
  if (flags.includes("cache_option_disabled")) return false;
  return (config?.compatibilityDate ?? "") >= "2024-11-11";
}

/**
 * workerd's error for a `cache` it does not take (compared with Miniflare 4.20260426): it names
 * the init field before the option exists, the mode after; `undefined` for one it takes.
 */
export function cacheRefusal(config: Compatibility, cache: unknown): Error | undefined {
  if (cache === undefined) return undefined;
  if (!cacheOption(config))
    return new Error("The 'cache' field on 'RequestInitializerDict' is not implemented.");
  if (cache === "no-store") return undefined;
  return new TypeError(`Unsupported cache mode: ${String(cache)}`);
}

/**
 * Whether workerd gives the Worker JavaScript RPC over its bindings (`rpc`, on by default from
 * the compatibility date 2024-04-03, Cloudflare's "Compatibility flags"). Without it, a Durable
 * Object's stub and a service binding answer `fetch` and `connect` (and a stub its `id` and
 * `name`) and no other property: `stub.method` is undefined, so a call of it throws `TypeError:
 * … is not a function`, as workerd 4.20260426 answers (compared with Miniflare's). A config
 * without a date runs on the runtime's latest, as wrangler runs it.
 */
export function rpcEnabled(config: Compatibility): boolean {
  if (config?.compatibilityFlags?.includes("rpc")) return true;
  const date = config?.compatibilityDate;
  return date === undefined || date >= "2024-04-03";
}

/**
 * Whether an R2 `list` honours its `include` (`r2_list_honor_include`, on by default from the
 * compatibility date 2022-08-04, Cloudflare's "Compatibility flags"). Before it workerd asks for
 * both kinds of metadata on every list, so each object has its `httpMetadata` and
 * `customMetadata` whatever `include` says, and a page holds at most the 100 objects a list with
 * `include` does (Miniflare 4.20260426 answers so at 2022-08-03). A config without a date runs on
 * the runtime's latest, as wrangler runs it.
 */
export function r2ListHonorsInclude(config: Compatibility): boolean {
  if (config?.compatibilityFlags?.includes("r2_list_honor_include")) return true;
  const date = config?.compatibilityDate;
  return date === undefined || date >= "2022-08-04";
}
