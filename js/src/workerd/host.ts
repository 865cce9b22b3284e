/**
 * The simulation host inside workerd: the module the generated workerd script calls `serve` from.
 * It rebuilds the world Node built (`world-data.ts`) around Workers compiled into the script,
 * loads the engine from its compiled wasm module, and runs the same exploration Node runs
 * (`explore.ts`). Its answer is JSON: the CheckResult, or the error the check ended with.
 */

// First: it adapts a global before the simulation's modules capture it.
import "./prelude.ts";
import { initSync, Engine as WasmEngine } from "eutaxy:engine-web";
import { dirname } from "node:path";
import process from "node:process";
import type { Engine, EngineConfig } from "../engine.ts";
import { carry, InputError } from "../errors.ts";
import { explore } from "../explore.ts";
import type { WorkerModule } from "../load/bundle.ts";
import { thrownAt } from "../load/source-map.ts";
import { simulating, uncaughtInPromise } from "../sim/globals.ts";
import { simulatedAsyncHooks } from "../sim/node-async-hooks.ts";
import { simulatedNodeCrypto } from "../sim/node-crypto.ts";
import { simulatedTimers } from "../sim/node-timers.ts";
import {
  evaluateWorker,
  type ModuleFactory,
  NODE_MODULES_SIMULATED,
  refusedNodeModule,
} from "../sim/runtime-modules.ts";
import type { HostAnswer, HostRequest, WorkerSource } from "./protocol.ts";
import { decodeWorld } from "./world-data.ts";

export interface HostParts {
  /** The engine's wasm, compiled by workerd from the script's wasm module. */
  readonly wasm: WebAssembly.Module;
  /** The scenario module, as workerd evaluated it. */
  readonly scenario: Readonly<Record<string, unknown>>;
  /** Each Worker's bundled code, in the world's order. */
  readonly factories: readonly ModuleFactory[];
  /** The `node:*` modules the Workers import, as workerd provides them. */
  readonly nodeModules: Readonly<Record<string, unknown>>;
  /** The CompiledWasm modules the Workers import, compiled by workerd, by their absolute paths. */
  readonly compiledWasm: Readonly<Record<string, WebAssembly.Module>>;
}

// A promise Worker code rejected and nothing handled is taken as Node's host takes it (check.ts):
// the Worker's own listeners, then the run's console, instead of workerd's log outside the trace.
interface RejectionEvent extends Event {
  readonly reason: unknown;
  readonly promise: Promise<unknown>;
}
(globalThis as unknown as EventTarget).addEventListener("unhandledrejection", (event) => {
  if (!simulating()) return;
  event.preventDefault();
  const { reason, promise } = event as RejectionEvent;
  uncaughtInPromise(reason, promise);
});

let engineReady = false;

function createEngine(wasm: WebAssembly.Module, config: EngineConfig): Engine {
  if (!engineReady) {
    initSync({ module: wasm });
    engineReady = true;
  }
  return new WasmEngine(config) as Engine;
}

/** `node:crypto` with its randomness the simulation's (sim/node-crypto.ts), made once. */
let simulatedCrypto: object | undefined;
/** `node:async_hooks` whose snapshots run for the running invocation (sim/node-async-hooks.ts). */
let simulatedHooks: object | undefined;
/** `node:timers` and `node:timers/promises` on the global timers, which are the run's (sim/node-timers.ts). */
let simulatedTimerModules: { timers: object; promises: object } | undefined;

/** A Worker's module: each `instantiate` calls its factory anew, one fresh evaluation per run. */
function workerModule(
  entry: string,
  factory: ModuleFactory,
  parts: HostParts,
  { placement, map }: WorkerSource,
): WorkerModule {
  const { nodeModules, compiledWasm } = parts;
  return {
    entry,
    nodeImports: Object.keys(nodeModules).sort(),
    whereThrown: (error) => (map ? thrownAt(error, placement, map, dirname(entry)) : undefined),
    instantiate(virtualModules) {
      return evaluateWorker(factory, (specifier) => {
        if (Object.hasOwn(virtualModules, specifier)) return virtualModules[specifier];
        if (Object.hasOwn(compiledWasm, specifier)) return compiledWasm[specifier];
        if (specifier === "node:crypto" && Object.hasOwn(nodeModules, specifier)) {
          simulatedCrypto ??= simulatedNodeCrypto(nodeModules[specifier] as object);
          return simulatedCrypto;
        }
        if (
          (specifier === "node:timers" || specifier === "node:timers/promises") &&
          Object.hasOwn(nodeModules, specifier)
        ) {
          simulatedTimerModules ??= simulatedTimers();
          return specifier === "node:timers" ? simulatedTimerModules.timers : simulatedTimerModules.promises;
        }
        if (specifier === "node:async_hooks" && Object.hasOwn(nodeModules, specifier)) {
          simulatedHooks ??= simulatedAsyncHooks(nodeModules[specifier] as object);
          return simulatedHooks;
        }
        if (specifier.startsWith("node:") && !NODE_MODULES_SIMULATED.has(specifier.slice("node:".length))) {
          throw refusedNodeModule(entry, specifier);
        }
        if (Object.hasOwn(nodeModules, specifier)) return nodeModules[specifier];
        throw new InputError(entry, `imports ${specifier}, which eutaxy does not provide`);
      });
    },
  };
}

async function answer(parts: HostParts, request: HostRequest): Promise<HostAnswer> {
  try {
    // Messages name files relative to the working folder, which is Node's.
    process.cwd = () => request.cwd;
    const modules = request.world.workers.map((worker, i) => {
      const factory = parts.factories[i];
      const source = request.sources[i];
      if (!factory || !source) throw new Error(`the workerd script has no code for Worker ${worker.name}`);
      return workerModule(worker.entry, factory, parts, source);
    });
    const world = decodeWorld(request.world, parts.scenario.default, modules);
    const result = await explore({
      world,
      seed: request.seed,
      bounds: request.bounds,
      replay: request.replay,
      shard: request.shard,
      search: request.search,
      schemas: new Map(request.schemas),
      createEngine: (config) => createEngine(parts.wasm, config),
    });
    return { result };
  } catch (error) {
    return { error: carry(error) };
  }
}

/** The workerd entry: one POST with a HostRequest, answered with a HostAnswer. */
export function serve(parts: HostParts): { fetch(request: Request): Promise<Response> } {
  return {
    async fetch(request) {
      const body = (await request.json()) as HostRequest;
      return Response.json(await answer(parts, body));
    },
  };
}
