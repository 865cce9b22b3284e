/**
 * The entry of each worker thread `checkParallel` (parallel.ts) starts: it runs `check()` on one
 * shard, with an engine and a realm of its own (the deterministic globals of one thread's runs
 * never meet another's), and posts its progress, then its result or the error it ended with.
 * Built into js/dist beside the CLI, where `checkParallel` finds it.
 */

import { parentPort, workerData } from "node:worker_threads";
import { check } from "./check.ts";
import { carry } from "./errors.ts";
import type { WorkerMessage, WorkerTask } from "./parallel.ts";
import type { Progress } from "./progress.ts";

/** A worker posts its progress at most this often: the line is redrawn ten times a second at most. */
const PROGRESS_EVERY_MS = 100;

const port = parentPort;
if (!port) throw new Error("parallel-worker.js runs only as a worker thread of checkParallel");
const post = (message: WorkerMessage): void => port.postMessage(message);
const { scenarioPath, options, progress } = workerData as WorkerTask;

try {
  const result = await check(scenarioPath, progress ? { ...options, onProgress: throttled() } : options);
  post({ kind: "result", result });
} catch (error) {
  post({ kind: "error", error: carry(error) });
}

/** Posts progress when the phase changes and otherwise every PROGRESS_EVERY_MS at most. */
function throttled(): (p: Progress) => void {
  let postedAtMs = Number.NEGATIVE_INFINITY;
  let phase: string | undefined;
  return (p) => {
    if (p.phase === phase && p.elapsedMs - postedAtMs < PROGRESS_EVERY_MS) return;
    postedAtMs = p.elapsedMs;
    phase = p.phase;
    post({ kind: "progress", progress: p });
  };
}
