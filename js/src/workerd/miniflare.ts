/**
 * `check(…, { runtime: "workerd" })`: the exploration runs inside workerd, through Miniflare.
 * Node has loaded the scenario and built its world as it always does; here it assembles one
 * workerd script (the simulation host, the engine's wasm, the scenario module and every Worker
 * compiled in as a factory), sends it the world as JSON, and takes back the CheckResult, or the
 * error the check ended with, raised again here as the same InputError or SimulationError.
 */

import { mkdtempSync, readFileSync } from "node:fs";
import { rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Readable } from "node:stream";
import { Miniflare } from "miniflare";
import { InputError, shown, uncarry } from "../errors.ts";
import type { CheckResult, Exploration } from "../explore.ts";
import { bundleWorkerCode, type WorkerCode } from "../load/bundle.ts";
import { FACTORY_PARAMETERS, NODE_MODULES_SIMULATED } from "../sim/runtime-modules.ts";
import type { World } from "../sim/world.ts";
import { bundleHost, bundleScenarioCode, webEnginePath } from "./bundle.ts";
import type { HostAnswer, HostRequest, WorkerSource } from "./protocol.ts";
import { encodeWorld } from "./world-data.ts";

/**
 * The workerd isolate's compatibility date: the newest the pinned workerd supports. Every Worker
 * of a check shares the isolate, so no Worker's own date can apply to the others; the dates in
 * wrangler configs still decide what the simulation emulates (a queue's default content type).
 */
export const WORKERD_COMPATIBILITY_DATE = "2026-04-26";

/** Where the script's modules are named from; nothing is read from there. */
const ROOT = "/eutaxy";
/** The main module's name in workerd's stack traces. */
const MAIN_SCRIPT_URL = `file://${ROOT}/main.js`;

export async function exploreInWorkerd(exploration: Omit<Exploration, "createEngine">): Promise<CheckResult> {
  const { world } = exploration;
  const [host, scenario, workers] = await Promise.all([
    bundleHost(),
    bundleScenarioCode(world.file),
    // Bundled once, in Node, as the world was loaded.
    Promise.all(world.workers.map((w) => w.module.bundled ?? bundleWorkerCode(w.entry, w.config))),
  ]);
  const wasmFiles = [...new Set(workers.flatMap((w) => w.compiledWasm))].sort();
  const main = mainScript(workers, wasmFiles);
  const request: HostRequest = {
    cwd: process.cwd(),
    sources: main.sources,
    world: encodeWorld(world),
    seed: exploration.seed,
    bounds: exploration.bounds,
    replay: exploration.replay,
    shard: exploration.shard,
    search: exploration.search,
    schemas: [...exploration.schemas],
  };
  const stderr = new StartupLog();
  const tmp = mkdtempSync(join(tmpdir(), "eutaxy-workerd-"));
  // workerd takes its zone from its environment, which Miniflare copies from this process's when
  // it starts workerd, after a few awaits: this process is in UTC until then, so that the Workers
  // read local time in UTC, as on Cloudflare (js/src/sim/globals.ts says why).
  const restoreZone = inUtcUntilStarted();
  let mf: Miniflare;
  try {
    mf = inTemporaryFolder(
      tmp,
      () =>
        new Miniflare({
          modulesRoot: ROOT,
          modules: [
            { type: "ESModule", path: `${ROOT}/main.js`, contents: main.text },
            { type: "ESModule", path: `${ROOT}/host.js`, contents: host },
            { type: "ESModule", path: `${ROOT}/scenario.js`, contents: scenario },
            {
              type: "CompiledWasm",
              path: `${ROOT}/engine_bg.wasm`,
              contents: readFileSync(webEnginePath("engine_bg.wasm")),
            },
            ...wasmFiles.map((file, i) => ({
              type: "CompiledWasm" as const,
              path: `${ROOT}/${compiledWasmModule(i)}`,
              contents: readFileSync(file),
            })),
          ],
          compatibilityDate: WORKERD_COMPATIBILITY_DATE,
          compatibilityFlags: ["nodejs_compat"],
          // The `request.cf` object Miniflare would otherwise download: the simulation has no network.
          cf: false,
          handleRuntimeStdio(out: Readable, err: Readable) {
            out.pipe(process.stdout);
            err.on("data", (chunk: Buffer) => stderr.write(chunk));
          },
        }),
    );
  } catch (error) {
    restoreZone();
    throw error;
  }
  let answer: HostAnswer;
  try {
    try {
      await mf.ready;
    } catch {
      throw startupError(world, workers, stderr.text());
    } finally {
      restoreZone();
    }
    stderr.started();
    const response = await mf.dispatchFetch("http://eutaxy.invalid/", {
      method: "POST",
      body: JSON.stringify(request),
    });
    answer = (await response.json()) as HostAnswer;
  } finally {
    // A runtime that failed to start fails its disposal the same way; the error above says why.
    await mf.dispose().catch(() => {});
    await rm(tmp, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
  }
  if ("result" in answer) return answer.result;
  throw uncarry(answer.error, "inside workerd");
}

/**
 * Makes what `make` makes with the system's temporary folder being `folder`. Miniflare makes its
 * temporary folder inside the system's when it is constructed, and only starts removing it when
 * disposed, without waiting: a check that ends its process (or a test file) right after would
 * leave it behind. Inside a folder of the check's own, awaiting that folder's removal removes it.
 */
function inTemporaryFolder<T>(folder: string, make: () => T): T {
  const saved = process.env.TMPDIR;
  process.env.TMPDIR = folder;
  try {
    return make();
  } finally {
    if (saved === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = saved;
  }
}

/** Puts this process in UTC (`TZ`) until the returned function is called. */
function inUtcUntilStarted(): () => void {
  const saved = process.env.TZ;
  process.env.TZ = "UTC";
  return () => {
    if (saved === undefined) delete process.env.TZ;
    else process.env.TZ = saved;
  };
}

/** Bytes of workerd's stderr kept while it starts, to say why it could not. */
const STARTUP_LOG_MAX = 64 * 1024;

/**
 * workerd's stderr: kept while workerd starts (it says there why a module did not load), then
 * passed through, as the Workers' `console.error` is in Node.
 */
class StartupLog {
  private kept: string | undefined = "";

  write(chunk: Buffer): void {
    if (this.kept === undefined) process.stderr.write(chunk);
    else if (this.kept.length < STARTUP_LOG_MAX) this.kept += chunk.toString("utf8");
  }

  text(): string {
    return this.kept ?? "";
  }

  started(): void {
    if (this.kept) process.stderr.write(this.kept);
    this.kept = undefined;
  }
}

/**
 * Why workerd did not start, as bad input: a Worker importing a `node:` module workerd does not
 * have is named with its entry; anything else names the scenario, with workerd's own words.
 */
function startupError(world: World, workers: readonly WorkerCode[], log: string): InputError {
  const missing = /No such module "([^"]+)"/.exec(log)?.[1];
  const index = missing === undefined ? -1 : workers.findIndex((w) => w.nodeModules.includes(missing));
  const worker = world.workers[index];
  if (worker) {
    return new InputError(shown(worker.entry), `imports ${missing}, which workerd does not provide`);
  }
  const said = log
    .split("\n")
    .map((line) => line.replace(/^service core:user:[^:]*: /, "").trim())
    .filter((line) => /Uncaught|Error/.test(line));
  return new InputError(
    shown(world.file),
    `workerd could not load the scenario and its Workers${said.length ? `: ${said.join(" ")}` : ""}`,
  );
}

/** The script's module for the `i`th of the Workers' CompiledWasm files. */
function compiledWasmModule(i: number): string {
  return `wasm/${i}.wasm`;
}

/**
 * The script's main module: each Worker's bundle as the body of a factory function (workerd
 * cannot compile code at run time, so every fresh evaluation of a module is a call of one of
 * these), the `node:*` modules and CompiledWasm files (`wasmFiles`, one module each, in their
 * order) they import, and the host's entry over them.
 */
function mainScript(
  workers: readonly WorkerCode[],
  wasmFiles: readonly string[],
): { text: string; sources: WorkerSource[] } {
  // Every node: module a Worker may have, so that an import() whose specifier the bundle cannot
  // see (computed) finds it too; those it may not have are refused by the host, not imported.
  const specifiers = [...NODE_MODULES_SIMULATED].map((name) => `node:${name}`).sort();
  const lines = [
    'import { serve } from "./host.js";',
    'import wasm from "./engine_bg.wasm";',
    'import * as scenario from "./scenario.js";',
    ...specifiers.map((s, i) => `import * as __eutaxy_node_${i} from ${JSON.stringify(s)};`),
    ...wasmFiles.map((_, i) => `import __eutaxy_wasm_${i} from "./${compiledWasmModule(i)}";`),
  ];
  // Where each Worker's code is in the script, so that its stack frames can be read back.
  const sources: WorkerSource[] = [];
  let linesBefore = lines.length;
  workers.forEach((worker, i) => {
    const lineCount = worker.code.split("\n").length;
    lines.push(`function __eutaxy_worker_${i}(${FACTORY_PARAMETERS.join(", ")}) {\n${worker.code}\n}`);
    const placement = {
      script: MAIN_SCRIPT_URL,
      lineOffset: linesBefore + 1,
      columnOffset: 0,
      lines: lineCount,
    };
    sources.push({ placement, map: worker.map });
    linesBefore += lineCount + 2;
  });
  // `require` of a builtin answers its module object, as Node's does: the default export.
  const nodeModules = specifiers.map(
    (s, i) => `${JSON.stringify(s)}: __eutaxy_node_${i}.default ?? __eutaxy_node_${i}`,
  );
  lines.push(
    "export default serve({",
    "  wasm,",
    "  scenario,",
    `  factories: [${workers.map((_, i) => `__eutaxy_worker_${i}`).join(", ")}],`,
    `  nodeModules: { ${nodeModules.join(", ")} },`,
    `  compiledWasm: { ${wasmFiles.map((file, i) => `${JSON.stringify(file)}: __eutaxy_wasm_${i}`).join(", ")} },`,
    "});",
  );
  return { text: lines.join("\n"), sources };
}
