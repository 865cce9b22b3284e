/**
 * Bundles a Worker's entry module the way wrangler does (esbuild, Workers' package conditions) and
 * compiles it once into a factory. Every simulated run instantiates the module anew, so state a
 * Worker keeps at module level (caches, counters, a lazily opened client) starts fresh in each run,
 * as it would in a fresh isolate, without paying for a bundle or a compile per run.
 */

import { readFileSync, statSync } from "node:fs";
import { builtinModules, createRequire } from "node:module";
import { dirname, isAbsolute, join, resolve } from "node:path";
import vm from "node:vm";
import { type BuildOptions, build, type Message, type Metafile, type Plugin } from "esbuild";
import { closest } from "../closest.ts";
import * as scenarioApi from "../cloudflare.ts";
import { InputError, shown } from "../errors.ts";
import { absentGlobalNames, OPTIONAL_GLOBALS } from "../sim/compatibility.ts";
import { withStateHook } from "../sim/module-state.ts";
import { simulatedAsyncHooks } from "../sim/node-async-hooks.ts";
import { simulatedNodeCrypto } from "../sim/node-crypto.ts";
import { simulatedTimers } from "../sim/node-timers.ts";
import {
  ABSENT_GLOBALS,
  evaluateWorker,
  FACTORY_PARAMETERS,
  type ModuleFactory,
  NODE_MODULES_SIMULATED,
  refusedNodeModule,
  TYPEOF_GLOBALS,
} from "../sim/runtime-modules.ts";
import { moduleRulesPlugin } from "./module-rules.ts";
import {
  originalPosition,
  type SourceLocation,
  type SourceMapData,
  splitInlineSourceMap,
  thrownAt,
} from "./source-map.ts";
import type { WorkerConfig } from "./wrangler.ts";

export interface WorkerModule {
  /** The entry module, absolute. */
  readonly entry: string;
  /** The `node:*` modules its code imports, statically or with `import()`, sorted. */
  readonly nodeImports: readonly string[];
  /**
   * Where in the Worker's own files `error`, thrown while its code ran, was thrown: read from the
   * error's stack through the bundle's source map (`source-map.ts`).
   */
  whereThrown(error: unknown): SourceLocation | undefined;
  /**
   * Evaluates the module's code anew; returns its exports (default, named classes...).
   * `virtualModules` answers the imports the runtime provides, such as `cloudflare:workers`.
   * Whatever the Worker throws while it is evaluated propagates as it is.
   */
  instantiate(virtualModules: Readonly<Record<string, unknown>>): Record<string, unknown>;
  /** The bundle the module was compiled from, where it was bundled in Node: the workerd runtime builds its script from it. */
  readonly bundled?: WorkerCode;
}

/** A Worker's bundle, before it is compiled into a factory. */
export interface WorkerCode {
  /** The module as CommonJS, the body of its factory. */
  readonly code: string;
  /** The `node:*` modules it requires, sorted. */
  readonly nodeModules: readonly string[];
  /** The CompiledWasm modules it requires, by their absolute paths. */
  readonly compiledWasm: readonly string[];
  /** The code's source map, for where the Worker throws. */
  readonly map: SourceMapData | undefined;
}

const nodeRequire = createRequire(import.meta.url);

let simulatedCrypto: object | undefined;
/** `node:crypto` with its randomness the simulation's (sim/node-crypto.ts), made once. */
function nodeCrypto(): object {
  simulatedCrypto ??= simulatedNodeCrypto(nodeRequire("node:crypto") as object);
  return simulatedCrypto;
}

let simulatedHooks: object | undefined;
/** `node:timers` and `node:timers/promises` on the global timers (sim/node-timers.ts), made once. */
let simulatedTimerModules: { timers: object; promises: object } | undefined;
/** `node:async_hooks` with storages each run lets go of (sim/node-async-hooks.ts), made once. */
function nodeAsyncHooks(): object {
  simulatedHooks ??= simulatedAsyncHooks(nodeRequire("node:async_hooks") as object);
  return simulatedHooks;
}

/** Node's built-in modules by their bare names (`crypto`, `fs/promises`), as a pattern. */
const BARE_BUILTIN = new RegExp(
  `^(${builtinModules
    .filter((name) => !name.startsWith("_") && !name.startsWith("node:"))
    .map((name) => name.replace(/[/]/g, "\\/"))
    .join("|")})$`,
);

/**
 * A built-in imported without its `node:` prefix (`import { createHash } from "crypto"`) that no
 * installed package answers (a polyfill such as `events` from npm) is the `node:` module, as
 * wrangler's nodejs_compat bundling makes it; whether the Worker may have it is then decided as
 * for `node:crypto` (the compatibility flag, the modules eutaxy simulates).
 */
const bareBuiltins: Plugin = {
  name: "eutaxy-bare-builtins",
  setup(b) {
    b.onResolve({ filter: BARE_BUILTIN }, async (args) => {
      if (args.pluginData === BARE_BUILTIN) return undefined;
      const installed = await b.resolve(args.path, {
        kind: args.kind,
        importer: args.importer,
        resolveDir: args.resolveDir,
        pluginData: BARE_BUILTIN,
      });
      if (installed.errors.length === 0) return { path: installed.path, external: installed.external };
      return { path: `node:${args.path}`, external: true };
    });
  },
};

/**
 * The config's `alias`, as wrangler applies it: before every other resolution (its own plugin,
 * first), to an import written exactly as a key, which is replaced by the module Node's
 * `require.resolve` finds for the value from the config's folder (so a TypeScript file is named
 * with its extension: `"@lib/clock": "./src/clock.ts"`). One it cannot find is a build error.
 */
function aliasPlugin(alias: Readonly<Record<string, string>>, configFile: string): Plugin {
  const root = dirname(configFile);
  const keys = Object.keys(alias);
  return {
    name: "eutaxy-alias",
    setup(b) {
      if (keys.length === 0) return;
      const filter = new RegExp(keys.map((key) => key.replace(/[-/\\^$*+?.()|[\]{}]/g, "\\$&")).join("|"));
      b.onResolve({ filter }, (args) => {
        if (!Object.hasOwn(alias, args.path)) return undefined;
        const target = alias[args.path] as string;
        try {
          return { path: nodeRequire.resolve(target, { paths: [root] }) };
        } catch {
          return {
            errors: [
              {
                text: `alias["${args.path}"] of ${shown(configFile)} is "${target}", which cannot be resolved from ${shown(root)} as wrangler resolves it (Node's resolution: a file by its whole name, such as "./src/clock.ts", or an installed package)`,
              },
            ],
          };
        }
      });
    },
  };
}

/** What of a Worker's wrangler config decides how it is bundled. */
export type BundleConfig = Pick<
  WorkerConfig,
  "file" | "define" | "rules" | "tsconfig" | "alias" | "keepNames" | "jsxFactory" | "jsxFragment"
> &
  Partial<Pick<WorkerConfig, "compatibilityDate" | "compatibilityFlags">>;

/**
 * The identifiers the bundle replaces before the config's own `define`: wrangler's
 * `process.env.NODE_ENV` ("production" when it deploys, whatever the Worker's flags), and each
 * global workerd does not define for the Worker (Node's without Node.js compatibility, `WeakRef`
 * and `FinalizationRegistry` without `enable_weak_ref`) by its stand-in (`ABSENT_GLOBALS`,
 * sim/runtime-modules.ts). esbuild replaces only the names no declaration in scope binds, and the
 * longest dotted name first, so `process.env.NODE_ENV` stays a string there too.
 */
function builtInDefines(config: BundleConfig | undefined): Record<string, string> {
  const nodeEnv = JSON.stringify("production");
  const defines: Record<string, string> = {
    "process.env.NODE_ENV": nodeEnv,
    "global.process.env.NODE_ENV": nodeEnv,
    "globalThis.process.env.NODE_ENV": nodeEnv,
  };
  for (const name of absentGlobalNames(config)) {
    defines[name] = `${ABSENT_GLOBALS}.${name}`;
    // A property of the global object workerd does not define reads undefined, not a throw.
    defines[`globalThis.${name}`] = `${TYPEOF_GLOBALS}.${name}`;
    defines[`self.${name}`] = `${TYPEOF_GLOBALS}.${name}`;
  }
  return defines;
}

/**
 * `typeof` of an absent Node global's stand-in, as esbuild prints it: the name alone, not a
 * property or call of it (`typeof Buffer.from` throws on workerd, as reading `Buffer` does).
 */
const TYPEOF_ABSENT = new RegExp(
  `\\btypeof ${ABSENT_GLOBALS}(?=\\.(?:${OPTIONAL_GLOBALS.join("|")})(?![\\w$.[(\`]|\\?\\.))`,
  "g",
);

/**
 * The body of a bundled Worker's factory: the bundle with `typeof` of each absent Node global
 * reading `TYPEOF_GLOBALS`, which answers "undefined" where reading the name throws. esbuild's
 * `define` replaces `typeof Buffer`'s operand like any other, so this is the one rewrite left to
 * the printed code; the two names are as long as each other, so no source-map column moves.
 */
function factoryBody(bundle: string): string {
  return bundle.replace(TYPEOF_ABSENT, `typeof ${TYPEOF_GLOBALS}`);
}

/**
 * How a Worker entry is bundled, as wrangler bundles it with `config` (the `workerd` conditions,
 * browser fields, the config's `define`, `alias`, `tsconfig`, `keep_names` (on unless the config
 * turns it off: a class keeps its name where the bundle renames it, `Handler2` for the second
 * `Handler`), JSX settings and module rules, then wrangler's default rules; JSX in `.js` files, as
 * wrangler's loaders allow; Node's globals left out where workerd gives the Worker none, see
 * `builtInDefines`), for
 * both runtimes: a CommonJS factory body whose `cloudflare:*` and `node:*` imports and
 * CompiledWasm modules are left to the runtime that instantiates it. A dynamic `import()` becomes
 * a promise of `require`, so the runtime's modules reach it as they reach a static import (Node's
 * vm would otherwise fail every `import()` the bundle keeps). Not written: the bundle is kept in
 * memory (`outputFiles`).
 */
export function workerBuildOptions(
  file: string,
  config?: BundleConfig,
): BuildOptions & { readonly write: false } {
  return {
    // The config's `define` over wrangler's own, as wrangler hands them to esbuild.
    define: { ...builtInDefines(config), ...config?.define },
    entryPoints: [file],
    // Error locations are then relative to the entry's folder; see `buildInputError`.
    absWorkingDir: dirname(file),
    bundle: true,
    keepNames: config?.keepNames ?? true,
    // Wrangler's defaults; a tsconfig's `jsxFactory` still wins, as it does in wrangler's bundle.
    jsxFactory: config?.jsxFactory ?? "React.createElement",
    jsxFragment: config?.jsxFragment ?? "React.Fragment",
    ...(config?.tsconfig !== undefined ? { tsconfig: config.tsconfig } : {}),
    loader: { ".js": "jsx", ".mjs": "jsx", ".cjs": "jsx" },
    write: false,
    format: "cjs",
    platform: "neutral",
    target: "es2022",
    supported: { "dynamic-import": false },
    mainFields: ["browser", "module", "main"],
    conditions: ["workerd", "worker", "browser"],
    logLevel: "silent",
    external: ["cloudflare:*", "node:*"],
    plugins: [
      ...(config?.alias ? [aliasPlugin(config.alias, config.file)] : []),
      bareBuiltins,
      moduleRulesPlugin(config?.rules ?? [], config?.file),
    ],
  } as const satisfies BuildOptions;
}

/**
 * The source map bundles carry, for where a Worker throws (`source-map.ts`): inline, split off
 * before the code runs, without the files' text, which is on disk.
 */
const WORKER_SOURCE_MAP: { readonly sourcemap: "inline"; readonly sourcesContent: false } = {
  sourcemap: "inline",
  sourcesContent: false,
};

/**
 * The CompiledWasm modules a bundle requires, by the absolute paths it requires them by: the
 * only externals named by a path (the others are `cloudflare:` and `node:` modules).
 */
function compiledWasmImports(metafile: Metafile): string[] {
  return externalImports(metafile).filter((path) => isAbsolute(path));
}

/** What a bundle leaves to the runtime, each specifier once, sorted. */
function externalImports(metafile: Metafile): string[] {
  const specifiers = new Set<string>();
  for (const output of Object.values(metafile.outputs)) {
    for (const imported of output.imports) {
      if (imported.external) specifiers.add(imported.path);
    }
  }
  return [...specifiers].sort();
}

/**
 * Bundles the Worker at `file` as wrangler would with `config`, for either runtime; a file esbuild
 * cannot build is an InputError naming it as `entry` does.
 */
export async function bundleWorkerCode(
  file: string,
  config?: BundleConfig,
  entry: string = file,
): Promise<WorkerCode> {
  try {
    const result = await build({ ...workerBuildOptions(file, config), ...WORKER_SOURCE_MAP, metafile: true });
    const { code, map } = splitInlineSourceMap(result.outputFiles[0]?.text ?? "");
    return {
      code: withStateHook(factoryBody(code), map && sourceNames(map, dirname(file))),
      nodeModules: externalImports(result.metafile).filter((path) => path.startsWith("node:")),
      compiledWasm: compiledWasmImports(result.metafile),
      map,
    };
  } catch (error) {
    throw buildInputError(error, entry);
  }
}

/**
 * The identifier a bundled file has at the place `map` gives for a line and column of the bundle
 * built in `dir` (from 1), read from the file itself (the map keeps no sources' text).
 */
function sourceNames(map: SourceMapData, dir: string): (line: number, column: number) => string | undefined {
  const files = new Map<string, string[] | undefined>();
  return (line, column) => {
    const place = originalPosition(map, line, column);
    if (!place) return undefined;
    const path = resolve(dir, place.source);
    if (!files.has(path)) {
      try {
        files.set(path, readFileSync(path, "utf8").split("\n"));
      } catch {
        files.set(path, undefined);
      }
    }
    const text = files.get(path)?.[place.line - 1]?.slice(place.column - 1);
    return text === undefined ? undefined : /^[A-Za-z_$][\w$]*/.exec(text)?.[0];
  };
}

/** Bundles the Worker at `entry` (see `bundleWorkerCode`) and compiles it into a factory in Node. */
export async function bundleWorker(entry: string, config?: BundleConfig): Promise<WorkerModule> {
  const file = resolve(entry);
  if (!statSync(file, { throwIfNoEntry: false })?.isFile()) throw new InputError(entry, "no such file");
  const bundled = await bundleWorkerCode(file, config, entry);
  const { code, map } = bundled;
  const compiledWasm = new Map(bundled.compiledWasm.map((path) => [path, compileWasm(path)]));
  // Compiled once here; each call of the factory below is one fresh evaluation of the module.
  const head = `(function (${FACTORY_PARAMETERS.join(", ")}) {`;
  const factory = new vm.Script(`${head}${code}\n})`, { filename: file }).runInThisContext() as ModuleFactory;
  const placement = {
    script: file,
    lineOffset: 0,
    columnOffset: head.length,
    lines: code.split("\n").length,
  };

  return {
    entry: file,
    nodeImports: bundled.nodeModules,
    bundled,
    whereThrown: (error) => (map ? thrownAt(error, placement, map, dirname(file)) : undefined),
    instantiate(virtualModules) {
      return evaluateWorker(factory, (specifier) => {
        if (Object.hasOwn(virtualModules, specifier)) return virtualModules[specifier];
        const wasm = compiledWasm.get(specifier);
        if (wasm) return wasm;
        if (specifier.startsWith("node:")) {
          if (!NODE_MODULES_SIMULATED.has(specifier.slice("node:".length)))
            throw refusedNodeModule(entry, specifier);
          if (specifier === "node:crypto") return nodeCrypto();
          if (specifier === "node:async_hooks") return nodeAsyncHooks();
          if (specifier === "node:timers" || specifier === "node:timers/promises") {
            simulatedTimerModules ??= simulatedTimers();
            return specifier === "node:timers"
              ? simulatedTimerModules.timers
              : simulatedTimerModules.promises;
          }
          return nodeRequire(specifier);
        }
        throw new InputError(entry, `imports ${specifier}, which eutaxy does not provide`);
      });
    },
  };
}

/** The platform's WebAssembly, whose constructors the types eutaxy is built with leave out. */
const platformWasm = (
  globalThis as unknown as { WebAssembly: { Module: new (bytes: Uint8Array) => WebAssembly.Module } }
).WebAssembly;

/** A CompiledWasm module, compiled once for every run; a file that is not WebAssembly is bad input. */
function compileWasm(path: string): WebAssembly.Module {
  try {
    return new platformWasm.Module(readFileSync(path));
  } catch (error) {
    throw new InputError(path, `is not a WebAssembly module: ${(error as Error).message}`);
  }
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
  const text = missingApiExport(first.text) ?? topLevelAwait(first.text) ?? first.text;
  if (!location) return new InputError(entry, text);
  // esbuild names files relative to its working dir, and counts columns from 0.
  const file = join(dirname(entry), location.file);
  return new InputError(`${file}:${location.line}:${location.column + 1}`, text);
}

/**
 * esbuild's refusal of top-level await in the format eutaxy evaluates a Worker in, said as what
 * it is: a limit of eutaxy's, not a mistake in the Worker, which workerd runs.
 */
function topLevelAwait(text: string): string | undefined {
  if (!text.startsWith("Top-level await is currently not supported")) return undefined;
  return "uses top-level await, which workerd runs and eutaxy does not yet: it evaluates a Worker's module synchronously, anew for every run. Await in a handler instead (a promise started at the top level can be awaited there)";
}

/**
 * esbuild's words for an import of a name `eutaxy/cloudflare` does not export, which name the
 * file eutaxy's package resolved to: said of `eutaxy/cloudflare` instead, with the name meant.
 */
function missingApiExport(text: string): string | undefined {
  const match =
    /^No matching export in "[^"]*?(js\/(?:dist|src)\/index|\/cloudflare)\.[jt]s" for import "([^"]+)"$/.exec(
      text,
    );
  if (!match) return undefined;
  const name = match[2] as string;
  // Imported from `eutaxy` itself (the programmatic API), a scenario helper is meant.
  if (match[1] !== "/cloudflare") {
    if (!Object.hasOwn(scenarioApi, name)) return undefined;
    return `"eutaxy" has no export ${name}: a scenario imports it from "eutaxy/cloudflare"`;
  }
  const meant = closest(name, Object.keys(scenarioApi));
  return `"eutaxy/cloudflare" has no export ${name}${meant === undefined ? "" : `: did you mean ${meant}?`}`;
}
