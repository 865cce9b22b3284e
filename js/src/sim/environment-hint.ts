/**
 * What to add to a message when the likely cause is a wrangler environment: a config that
 * declares a binding only in `[env.staging]` (or only at its top level, when the scenario reads
 * an environment) gives the Worker no such binding, as wrangler inherits none between the two,
 * and the Worker then fails on every request with a TypeError that names no binding.
 */

import { shown } from "../errors.ts";
import type { SimWorker, World } from "./world.ts";

/** The hint for binding `name` (`DB`, `payments/DB`) when some Worker declares it elsewhere only. */
export function environmentHintFor(workers: readonly SimWorker[], name: string): string | undefined {
  for (const worker of workers) {
    if (!name.startsWith(worker.prefix)) continue;
    const hint = hintOf(worker, name.slice(worker.prefix.length));
    if (hint !== undefined) return hint;
  }
  return undefined;
}

/**
 * `message` (every request or every piece of work failed), with the hint for the first binding
 * some Worker's config declares only in a part the check does not read.
 */
export function withEnvironmentHint(world: World, message: string): string {
  for (const worker of world.workers) {
    for (const binding of worker.config?.elsewhere.keys() ?? []) {
      // A secret or a callee may give the Worker that name all the same.
      if (worker.bindings.has(binding) || Object.hasOwn(worker.vars, binding)) continue;
      return `${message} (${hintOf(worker, binding)})`;
    }
  }
  return message;
}

function hintOf(worker: SimWorker, binding: string): string | undefined {
  const config = worker.config;
  const places = config?.elsewhere.get(binding);
  if (!config || !places) return undefined;
  const read = config.env === undefined ? "the top level" : `env.${config.env}`;
  const environment = places.find((place) => place.startsWith("env."))?.slice("env.".length);
  const how =
    environment === undefined
      ? "leave env out of the options that load it to read the top level"
      : `env: "${environment}" in the options that load it reads that environment`;
  return `${shown(config.file)} declares ${binding} only in ${places.join(" and ")}, which wrangler does not pass on to ${read}, the part this check reads: ${how}`;
}
