/**
 * Bundles a Worker's entry module the way wrangler does (esbuild, Workers' package conditions) and
 * compiles it once into a factory. Every simulated run instantiates the module anew, so state a
 * Worker keeps at module level (caches, counters, a lazily opened client) starts fresh in each run,
 * as it would in a fresh isolate, without paying for a bundle or a compile per run.
 */

import { statSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import vm from "node:vm";
import { type BuildOptions, build, type Message } from "esbuild";
import { InputError } from "../errors.ts";
import { simulatedNodeCrypto } from "../sim/node-crypto.ts";
import { evaluateWorker, type ModuleFactory } from "../sim/runtime-modules.ts";

export interface WorkerModule {
  /** The entry module, absolute. */
  readonly entry: string;
  /**
   * Evaluates the module's code anew; returns its exports (default, named classes...).
   * `virtualModules` answers the imports the runtime provides, such as `cloudflare:workers`.
   * Whatever the Worker throws while it is evaluated propagates as it is.
   */
  instantiate(virtualModules: Readonly<Record<string, unknown>>): Record<string, unknown>;
}

const nodeRequire = createRequire(import.meta.url);

let simulatedCrypto: object | undefined;
/** `node:crypto` with its randomness the simulation's (sim/node-crypto.ts), made once. */
function nodeCrypto(): object {
  simulatedCrypto ??= simulatedNodeCrypto(nodeRequire("node:crypto") as object);
  return simulatedCrypto;
}

/**
 * The `node:` modules a Worker may import in the simulation: those that compute, and reach
 * nothing outside the run. The rest (`node:fs`, `node:child_process`, `node:net`, `node:os`…)
 * would act on this machine, not on anything Cloudflare gives a Worker, so importing one ends
 * the check with a message.
 */
const NODE_MODULES_SIMULATED: ReadonlySet<string> = new Set([
  "assert",
  "assert/strict",
  "async_hooks",
  "buffer",
  "crypto",
  "diagnostics_channel",
  "events",
  "path",
  "path/posix",
  "punycode",
  "querystring",
  "stream",
  "stream/promises",
  "stream/web",
  "string_decoder",
  "url",
  "util",
  "util/types",
  "zlib",
]);

/**
 * How a Worker entry is bundled, as wrangler does (the `workerd` conditions, browser fields),
 * for both runtimes: a CommonJS factory body whose `cloudflare:*` and `node:*` imports are left
 * to the runtime that instantiates it. A dynamic `import()` becomes a promise of `require`, so
 * the runtime's modules reach it as they reach a static import (Node's vm would otherwise fail
 * every `import()` the bundle keeps).
 */
export function workerBuildOptions(file: string) {
  return {
    entryPoints: [file],
    // Error locations are then relative to the entry's folder; see `buildInputError`.
    absWorkingDir: dirname(file),
    bundle: true,
    write: false,
    format: "cjs",
    platform: "neutral",
    target: "es2022",
    supported: { "dynamic-import": false },
    mainFields: ["browser", "module", "main"],
    conditions: ["workerd", "worker", "browser"],
    logLevel: "silent",
    external: ["cloudflare:*", "node:*"],
  } as const satisfies BuildOptions;
}

/** Bundles the Worker at `entry`; a file esbuild cannot build is an InputError naming it. */
export async function bundleWorker(entry: string): Promise<WorkerModule> {
  const file = resolve(entry);
  if (!statSync(file, { throwIfNoEntry: false })?.isFile()) throw new InputError(entry, "no such file");
  let code: string;
  try {
    const result = await build({ ...workerBuildOptions(file), sourcemap: "inline" });
    code = result.outputFiles[0]?.text ?? "";
  } catch (error) {
    throw buildInputError(error, entry);
  }
  // Compiled once here; each call of the factory below is one fresh evaluation of the module.
  const factory = new vm.Script(`(function (module, exports, require) {${code}\n})`, {
    filename: file,
  }).runInThisContext() as ModuleFactory;

  return {
    entry: file,
    instantiate(virtualModules) {
      return evaluateWorker(factory, (specifier) => {
        if (Object.hasOwn(virtualModules, specifier)) return virtualModules[specifier];
        if (specifier.startsWith("node:")) {
          if (!NODE_MODULES_SIMULATED.has(specifier.slice("node:".length))) {
            throw new InputError(
              entry,
              `imports ${specifier}, which would reach the machine eutaxy runs on (its files, processes or network); eutaxy does not simulate it`,
            );
          }
          if (specifier === "node:crypto") return nodeCrypto();
          return nodeRequire(specifier);
        }
        throw new InputError(entry, `imports ${specifier}, which eutaxy does not provide`);
      });
    },
  };
}

/**
 * The InputError for an esbuild failure that ran with the entry's folder as its working dir: the
 * first error, at `file:line:column` of the file it is in, that file written the way `entry` was
 * (relative or absolute). Anything that is not an esbuild failure is rethrown as it is.
 */
export function buildInputError(error: unknown, entry: string): InputError {
  const first = (error as { errors?: Message[] } | undefined)?.errors?.[0];
  if (!first) throw error;
  const location = first.location;
  if (!location) return new InputError(entry, first.text);
  // esbuild names files relative to its working dir, and counts columns from 0.
  const file = join(dirname(entry), location.file);
  return new InputError(`${file}:${location.line}:${location.column + 1}`, first.text);
}
