/**
 * A process the bench drives over IPC: one for the floor, one for eutaxy's checks, one for
 * Miniflare. Each side has a V8 heap of its own because in a shared one they disturb each other:
 * after a check had run in the same process (it replaces and restores `Date`, `crypto` and
 * `Math.random`, and leaves its garbage), the floor's runs took two to four times as long. The
 * main process sends one request at a time and waits, so only one side works at any moment, and
 * every figure is timed here, inside the process that does the work (IPC is not counted).
 */

import type { CheckOptions } from "../src/index.ts";
import { bundleWorker, type WorkerModule } from "../src/load/bundle.ts";
import { createFloor, type Floor } from "./floor.ts";
import { type MiniflareRunner, startMiniflare } from "./miniflare.ts";
import type { OrderRequest } from "./orders.ts";
import { cpuNowUs, explored, median, usPerRun } from "./sim.ts";
import type { WorkerSource } from "./workers.ts";

export type Request =
  | {
      readonly op: "floor";
      readonly name: string;
      readonly workers: readonly WorkerSource[];
      readonly schema: readonly string[];
      readonly requests: readonly OrderRequest[];
    }
  | { readonly op: "floorWarm"; readonly name: string; readonly runs: number; readonly maxMs: number }
  | { readonly op: "floorBatch"; readonly name: string; readonly runs: number }
  | { readonly op: "floorCharged"; readonly name: string }
  /** Bundles a Worker as eutaxy does, to time the evaluation of its module that every run makes. */
  | { readonly op: "module"; readonly name: string; readonly entry: string }
  | { readonly op: "evaluateBatch"; readonly name: string; readonly runs: number }
  | { readonly op: "check"; readonly path: string; readonly options: Omit<CheckOptions, "onProgress"> }
  | {
      readonly op: "miniflareStart";
      readonly workers: readonly WorkerSource[];
      readonly schema: readonly string[];
      readonly requests: readonly OrderRequest[];
    }
  | { readonly op: "miniflareRuns"; readonly runs: number }
  | { readonly op: "miniflareCharged" }
  | { readonly op: "miniflareDispose" };

/** A timed stretch of runs: microseconds per run, in wall-clock time and in this process's CPU time. */
export interface Timing {
  readonly us: number;
  readonly cpuUs: number;
}

/** Miniflare runs: microseconds per run, and of that the requests' (the rest resets the tables). */
export interface MiniflareTiming {
  readonly us: number;
  readonly requestsUs: number;
}

/** A check as it crosses back: its verdict and its timings. */
export interface CheckReport {
  readonly verdict: string;
  /** Runs of the exploring phase. */
  readonly runs: number;
  readonly usPerRun: number;
  readonly steady?: Timing;
  /** Wall-clock milliseconds of the whole `check()` call, loading and shrinking included. */
  readonly wallMs: number;
  readonly detail?: string;
}

const floors = new Map<string, Floor>();
const modules = new Map<string, WorkerModule>();
let miniflare: MiniflareRunner | undefined;

async function handle(request: Request): Promise<unknown> {
  switch (request.op) {
    case "floor":
      floors.set(
        request.name,
        await createFloor(request.workers, request.schema, request.requests, "charges"),
      );
      return null;
    case "floorWarm": {
      const floor = floorNamed(request.name);
      const started = performance.now();
      let runs = 0;
      while (runs < request.runs && performance.now() - started < request.maxMs) {
        await floor.run();
        runs++;
      }
      return runs;
    }
    case "floorBatch": {
      const floor = floorNamed(request.name);
      const t = performance.now();
      const cpu = cpuNowUs();
      for (let i = 0; i < request.runs; i++) await floor.run();
      return {
        us: ((performance.now() - t) * 1000) / request.runs,
        cpuUs: (cpuNowUs() - cpu) / request.runs,
      } satisfies Timing;
    }
    case "floorCharged":
      return floorNamed(request.name).charged();
    case "module":
      modules.set(request.name, await bundleWorker(request.entry));
      return null;
    case "evaluateBatch": {
      const module = modules.get(request.name);
      if (!module) throw new Error(`no module ${request.name}`);
      const t = performance.now();
      const cpu = cpuNowUs();
      for (let i = 0; i < request.runs; i++) module.instantiate({});
      return {
        us: ((performance.now() - t) * 1000) / request.runs,
        cpuUs: (cpuNowUs() - cpu) / request.runs,
      } satisfies Timing;
    }
    case "check": {
      const e = await explored(request.path, request.options);
      const { result } = e;
      let detail: string | undefined;
      if (result.verdict === "INCOMPLETE") detail = `(${result.strategy}, ${result.reason})`;
      if (result.verdict === "VIOLATED") detail = `(after ${e.runs} runs, ${result.shrinkRuns} to shrink)`;
      if (result.verdict === "BOUNDED") detail = `(${e.runs} runs)`;
      return {
        verdict: result.verdict,
        runs: e.runs,
        usPerRun: usPerRun(e),
        wallMs: e.wallMs,
        ...(e.steadyUsPerRun === undefined || e.steadyCpuUsPerRun === undefined
          ? {}
          : { steady: { us: e.steadyUsPerRun, cpuUs: e.steadyCpuUsPerRun } }),
        ...(detail === undefined ? {} : { detail }),
      } satisfies CheckReport;
    }
    case "miniflareStart":
      miniflare = await startMiniflare(request.workers, request.schema, request.requests);
      return miniflare.startMs;
    case "miniflareRuns": {
      const runner = miniflareStarted();
      const perRun: number[] = [];
      const requests: number[] = [];
      for (let i = 0; i < request.runs; i++) {
        const t = performance.now();
        requests.push((await runner.run()) * 1000);
        perRun.push((performance.now() - t) * 1000);
      }
      return { us: median(perRun), requestsUs: median(requests) } satisfies MiniflareTiming;
    }
    case "miniflareCharged":
      await miniflareStarted().run();
      return miniflareStarted().count("payments", "charges");
    case "miniflareDispose":
      await miniflare?.dispose();
      miniflare = undefined;
      return null;
  }
}

function floorNamed(name: string): Floor {
  const floor = floors.get(name);
  if (!floor) throw new Error(`no floor ${name}`);
  return floor;
}

function miniflareStarted(): MiniflareRunner {
  if (!miniflare) throw new Error("Miniflare is not started");
  return miniflare;
}

process.on("message", (message: { id: number; request: Request }) => {
  handle(message.request).then(
    (value) => process.send?.({ id: message.id, value }),
    (error: unknown) =>
      process.send?.({ id: message.id, error: error instanceof Error ? error.message : String(error) }),
  );
});
process.on("disconnect", () => {
  for (const floor of floors.values()) floor.close();
  void miniflare?.dispose().finally(() => process.exit(0));
  if (!miniflare) process.exit(0);
});
