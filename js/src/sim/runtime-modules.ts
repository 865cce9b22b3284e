/**
 * The modules a Worker's bundle leaves to the runtime (load/bundle.ts), as both runtimes give
 * them: the `cloudflare:*` modules the simulation provides, and the evaluation of a bundle with a
 * `require` that answers its static imports and its dynamic `import()`s alike (the bundle turns
 * `import()` into a promise of `require`), so both get the same modules and the same refusals.
 */

import { InputError } from "../errors.ts";
import { OPTIONAL_GLOBALS } from "./compatibility.ts";
import { endCheck, notSimulated, simulatedGlobal } from "./globals.ts";
import { MODULE_STATE_KEY } from "./module-state.ts";
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
  // On the run's clock, through the global timers (node-timers.ts; workerd's use its globals).
  "timers",
  "timers/promises",
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

/**
 * What the bundle of a Worker reads in place of the globals workerd does not define for it
 * (`OPTIONAL_GLOBALS`, compatibility.ts: Node's without Node.js compatibility, the weak references
 * without `enable_weak_ref`): `Buffer` is bundled as `__eutaxy_absent.Buffer`, and `typeof Buffer` as
 * `typeof __eutaxy_typeof.Buffer` (load/bundle.ts). Both names are the factory's parameters, so
 * the Worker's code sees workerd's answers on either runtime, while the host around it keeps
 * Node's globals. The two names are as long as each other, so that rewriting one into the other
 * moves no column of the bundle's source map.
 */
export const ABSENT_GLOBALS = "__eutaxy_absent";
export const TYPEOF_GLOBALS = "__eutaxy_typeof";

/** The parameters of the function a bundled Worker is compiled into, in order. */
export const FACTORY_PARAMETERS = ["module", "exports", "require", ABSENT_GLOBALS, TYPEOF_GLOBALS] as const;

/** The CommonJS-shaped function a bundled Worker is compiled into (`FACTORY_PARAMETERS`). */
export type ModuleFactory = (
  module: { exports: Record<string, unknown> },
  exports: Record<string, unknown>,
  require: (specifier: string) => unknown,
  absent: object,
  typeOf: object,
) => void;

/** The optional globals as the host has them, before any Worker code runs. */
const hostGlobals = new Map<string, unknown>(
  OPTIONAL_GLOBALS.map((name) => [name, (globalThis as Record<string, unknown>)[name]]),
);

/**
 * The value the Worker has put on the global object under `name` itself (a polyfill's
 * `globalThis.Buffer = Buffer`), which it then finds under the bare name as it would on
 * workerd; undefined while the name holds the host's own.
 */
function workersOwn(name: string): unknown {
  const value = (globalThis as Record<string, unknown>)[name];
  // The simulation's own stand-in for the host's (a WeakRef without the collector) is the host's.
  return value === hostGlobals.get(name) || simulatedGlobal(value) ? undefined : value;
}

/**
 * The objects behind `ABSENT_GLOBALS` and `TYPEOF_GLOBALS`. Reading or assigning an absent name
 * throws the ReferenceError workerd throws for a name it does not define (assigning too: a
 * Worker is an ES module, strict); `typeof` of it answers "undefined". A name the Worker has
 * given a value of its own on the global object is that value.
 */
function absentGlobals(): { absent: object; typeOf: object } {
  const absent = {};
  const typeOf = {};
  for (const name of OPTIONAL_GLOBALS) {
    const notDefined = (caller: (...args: never[]) => unknown): ReferenceError => {
      const error = new ReferenceError(`${name} is not defined`);
      // The Worker's own frame first, as where workerd's error points.
      Error.captureStackTrace?.(error, caller);
      return error;
    };
    Object.defineProperty(absent, name, {
      get: function read() {
        const own = workersOwn(name);
        if (own === undefined) throw notDefined(read);
        return own;
      },
      set: function assign(value: unknown) {
        if (workersOwn(name) === undefined) throw notDefined(assign);
        (globalThis as Record<string, unknown>)[name] = value;
      },
    });
    // Also what `globalThis.Buffer` and `self.Buffer` are bundled as: a property of the global
    // object, which the Worker may set (a polyfill's `globalThis.Buffer = Buffer`).
    Object.defineProperty(typeOf, name, {
      get: () => workersOwn(name),
      set: (value: unknown) => {
        (globalThis as Record<string, unknown>)[name] = value;
      },
    });
  }
  return { absent: Object.freeze(absent), typeOf: Object.freeze(typeOf) };
}

const { absent, typeOf } = absentGlobals();

/**
 * The `cloudflare:*` modules for one Worker in one run; `cloudflare:workers`' `env` reads through
 * `currentEnv`, and its `waitUntil` hands a promise to `waitUntil`, the running invocation's
 * `ctx.waitUntil`. New objects each time, so what Worker code does to them stays in its run.
 */
export function runtimeModules(
  currentEnv: () => Record<string, unknown>,
  waitUntil: (promise: unknown) => void,
): Record<string, unknown> {
  return {
    // Assigned, not spread: spreading these into a literal took a slow path, a tenth of a run.
    "cloudflare:workers": Object.assign(
      workersModule(currentEnv),
      { waitUntil },
      UNSIMULATED_WORKERS_EXPORTS,
    ),
    "cloudflare:sockets": socketsModule(),
  };
}

/**
 * The exports of workerd's `cloudflare:workers` eutaxy does not simulate, as stand-ins that end
 * the check where the Worker uses one (calls the function, constructs the class), naming it:
 * left out, the import would be `undefined`, and the Worker's own `TypeError` (`withEnv is not a
 * function`) would be reported as its bug. Importing one is fine, as a library may import it
 * without ever using it.
 */
function unsimulatedWorkersExports(): Record<string, unknown> {
  const exports: Record<string, unknown> = {};
  for (const name of ["withEnv", "withExports", "withEnvAndExports"]) {
    exports[name] = {
      [name]: (): never => notSimulated(`${name}() from cloudflare:workers`),
    }[name];
  }
  for (const name of ["RpcStub", "RpcPromise", "RpcProperty", "ServiceStub"]) {
    exports[name] = {
      [name]: class {
        constructor() {
          notSimulated(`${name} from cloudflare:workers`);
        }
      },
    }[name];
  }
  return exports;
}

/** Made once: like the classes `workersModule` gives, they hold nothing of a run. */
const UNSIMULATED_WORKERS_EXPORTS = unsimulatedWorkersExports();

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
  const module: { exports: Record<string, unknown>; [MODULE_STATE_KEY]?: unknown } = { exports: {} };
  try {
    factory(module, module.exports, require, absent, typeOf);
  } finally {
    loading = false;
  }
  // What reads the module's own variables (module-state.ts), kept beside its exports.
  if (module[MODULE_STATE_KEY] !== undefined && Object.isExtensible(module.exports)) {
    Object.defineProperty(module.exports, MODULE_STATE_KEY, { value: module[MODULE_STATE_KEY] });
  }
  return module.exports;
}
