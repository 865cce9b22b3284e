/**
 * What a Worker's compatibility flags turn on, where the simulation needs to know (both runtimes
 * run this: it reads the config the host loaded, never a file).
 */

import type { WorkerConfig } from "../load/wrangler.ts";

/** Whether the Worker has Node.js compatibility (`nodejs_compat`, or its `_v2`). */
export function nodejsCompat(config: WorkerConfig | undefined): boolean {
  const flags = config?.compatibilityFlags ?? [];
  return flags.includes("nodejs_compat") || flags.includes("nodejs_compat_v2");
}
