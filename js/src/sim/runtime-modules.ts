/**
 * The modules a Worker's bundle leaves to the runtime (load/bundle.ts), as both runtimes give
 * them: the `cloudflare:*` modules the simulation provides, and the evaluation of a bundle with a
 * `require` that answers its static imports and its dynamic `import()`s alike (the bundle turns
 * `import()` into a promise of `require`), so both get the same modules and the same refusals.
 */

import { InputError } from "../errors.ts";
import { endCheck, notSimulated } from "./globals.ts";
import { workersModule } from "./workers-module.ts";

/**
 * The `node:` modules a Worker may import in the simulation: those that compute, and reach
 * nothing outside the run. The rest (`node:fs`, `node:child_process`, `node:net`, `node:os`…)
 * would act on this machine, not on anything Cloudflare gives a Worker, so importing one ends
 * the check with a message.
 */
export const NODE_MODULES_SIMULATED: ReadonlySet<string> = new Set([
  "assert",
  "assert/strict",
  "async_hooks",
  "buffer",
  "crypto",
  "diagnostics_channel",
  "events",
  "path",
  "path/posix",
  // The global `process` a Worker sees anyway (its `env` the running Worker's, globals.ts).
  "process",
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

/** Why the Worker may not have `specifier`, a `node:` module not among those simulated. */
export function refusedNodeModule(entry: string, specifier: string): InputError {
  return new InputError(
    entry,
    `imports ${specifier}, which would reach the machine eutaxy runs on (its files, processes or network); eutaxy does not simulate it`,
  );
}

/** The CommonJS-shaped function a bundled Worker is compiled into. */
export type ModuleFactory = (
  module: { exports: Record<string, unknown> },
  exports: Record<string, unknown>,
  require: (specifier: string) => unknown,
) => void;

/**
 * The `cloudflare:*` modules for one Worker in one run; `cloudflare:workers`' `env` reads through
 * `currentEnv`. New objects each time, so what Worker code does to them stays in its run.
 */
export function runtimeModules(currentEnv: () => Record<string, unknown>): Record<string, unknown> {
  return { "cloudflare:workers": workersModule(currentEnv), "cloudflare:sockets": socketsModule() };
}

/**
 * `cloudflare:sockets` with workerd's exports. Importing it succeeds: database drivers import it
 * at the top whether or not the code checked opens a connection. Opening one ends the check, as
 * eutaxy does not simulate sockets yet.
 */
function socketsModule(): Record<string, unknown> {
  return {
    connect: (): never => notSimulated("sockets (connect() from cloudflare:sockets)"),
    // A client over a socket `connect` gave, so no run gets here without the check ending first.
    internalNewHttpClient: (): never =>
      notSimulated("sockets (internalNewHttpClient() from cloudflare:sockets)"),
  };
}

/**
 * Evaluates a bundled Worker anew; `provide` answers each module it requires, or throws an
 * InputError refusing it. A refusal while the module loads goes where a static import's error
 * goes (the probe before the exploration reports it as bad input). One later comes from an
 * `import()` in a handler, which the Worker would turn into a 500 that says nothing of the
 * refusal and hides the rest of the check, so it ends the check whatever the Worker does with it.
 */
export function evaluateWorker(
  factory: ModuleFactory,
  provide: (specifier: string) => unknown,
): Record<string, unknown> {
  let loading = true;
  const require = (specifier: string): unknown => {
    try {
      return provide(specifier);
    } catch (error) {
      if (!loading && error instanceof InputError) endCheck(error);
      throw error;
    }
  };
  const module = { exports: {} };
  try {
    factory(module, module.exports, require);
  } finally {
    loading = false;
  }
  return module.exports;
}
