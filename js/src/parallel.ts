/**
 * `--workers N`: one check explored in parallel on one machine. The tree of schedules is split
 * into N shards (`CheckOptions.shard`), each explored by `check()` in a Node worker thread with an
 * engine of its own, and the shards' results are merged by `mergeResults`, as `eutaxy merge`
 * merges those of a CI matrix. So the verdict is the one `--shard 1/N` … `--shard N/N` followed
 * by `eutaxy merge` gives, whatever the threads' timing: a shard's result does not depend on the
 * other shards, and the merge takes the VIOLATED result of the lowest shard. That is also what
 * lets a violation end the check early: the shards above it cannot change the verdict and are
 * stopped, while the shards below it run to their end (one of them may still find a violation,
 * which would win).
 *
 * The worker threads load the built `parallel-worker.js` beside this module, so `checkParallel`
 * with more than one worker runs from js/dist (the CLI), not from the TypeScript sources.
 */

import { Worker } from "node:worker_threads";
import { type CheckOptions, type CheckResult, check } from "./check.ts";
import type { StrategyName } from "./engine.ts";
import { type CarriedError, InputError, uncarry } from "./errors.ts";
import { mergeResults } from "./merge.ts";
import type { Progress } from "./progress.ts";
import { renderReport } from "./report.ts";
import { inUtc } from "./sim/globals.ts";

/** More threads than this is a typo rather than a machine: each holds an engine and a bundler. */
export const WORKERS_MAX = 64;

/**
 * The result of a check split over workers: a shard's VIOLATED result as it is (it names its
 * shard), or a BOUNDED or INCOMPLETE result that, as a merge's, has `shards` and no `shard`.
 */
export type ParallelResult = CheckResult & { readonly shards?: number };

/** What the main thread hands a worker thread. */
export interface WorkerTask {
  readonly scenarioPath: string;
  /** The check's options, with the shard to explore; functions cannot cross to a thread. */
  readonly options: Omit<CheckOptions, "onProgress">;
  /** Whether the main thread shows progress: watching the runs costs the engine a little. */
  readonly progress: boolean;
}

/** What a worker thread tells the main thread: progress, then its result or its error. */
export type WorkerMessage =
  | { readonly kind: "progress"; readonly progress: Progress }
  | { readonly kind: "result"; readonly result: CheckResult }
  | { readonly kind: "error"; readonly error: CarriedError };

/** How one shard's worker ended. */
export type Ending = { readonly result: CheckResult } | { readonly error: Error };

/**
 * Runs the check of `scenarioPath` split over `workers` worker threads and merges the shards'
 * results. With one worker it is `check()` itself, in this thread.
 */
export async function checkParallel(
  scenarioPath: string,
  options: CheckOptions,
  workers: number,
): Promise<ParallelResult> {
  if (!Number.isInteger(workers) || workers < 1 || workers > WORKERS_MAX) {
    throw new InputError(
      undefined,
      `--workers must be a whole number from 1 to ${WORKERS_MAX}, not ${workers}`,
    );
  }
  if (workers === 1) return check(scenarioPath, options);
  if (options.shard !== undefined) {
    throw new InputError(
      undefined,
      "--workers splits the check into shards itself: drop --shard, or --workers",
    );
  }
  if (options.replay !== undefined) {
    throw new InputError(undefined, "a replay runs one schedule, which no workers can share: drop --workers");
  }
  const { onProgress, ...shared } = options;
  // The threads share this process's zone, which a thread cannot set for itself: it is UTC
  // before they start, as each check's is (sim/globals.ts, `inUtc`).
  const endings = await inUtc(() => runShards(scenarioPath, shared, workers, onProgress));
  // Undefined when some shards saw module-level state change and others did not: their parts
  // are of two trees (`mergeResults`), which only the whole check, in one process, explores as one.
  return merged(endings, workers) ?? check(scenarioPath, options);
}

/**
 * The report of a check `checkParallel` ran: a VIOLATED report (or any result of one worker)
 * exactly as one process prints it, its run seed replaying without `--workers`; a BOUNDED or
 * INCOMPLETE one that says how many workers split the check, and why their schedules add up to
 * more than one process runs.
 */
export function renderParallelReport(result: ParallelResult): string {
  const workers = result.shards;
  if (workers === undefined) return renderReport(result);
  const [head, ...body] = renderReport(result, [
    `Split over ${workers} worker threads, one shard of the tree of schedules each (as --shard 1/${workers} … ${workers}/${workers}); every shard also runs the top of the tree the shards share, so their schedules add up to at least those of one process.`,
  ]).split("\n");
  return [`${head}, ${workers} workers`, ...body].join("\n");
}

/**
 * The index of the lowest shard that ended with a VIOLATED result or an error, either of which
 * decides the check whatever the shards above it do; the number of shards when none has.
 */
export function firstDecisive(endings: readonly (Ending | undefined)[]): number {
  const index = endings.findIndex(
    (ending) => ending !== undefined && ("error" in ending || ending.result.verdict === "VIOLATED"),
  );
  return index === -1 ? endings.length : index;
}

/**
 * The endings that decide the check, once every one of them is in: the shards up to the lowest
 * decisive one (or all of them). Undefined while a shard below that one is still running.
 */
export function decidingEndings(endings: readonly (Ending | undefined)[]): readonly Ending[] | undefined {
  const deciding = endings.slice(0, firstDecisive(endings) + 1);
  return deciding.every((ending) => ending !== undefined) ? (deciding as Ending[]) : undefined;
}

/** Where the worker threads' entry is built: beside this module in js/dist. */
const WORKER_ENTRY = new URL("./parallel-worker.js", import.meta.url);

/**
 * Explores every shard in a worker thread of its own; resolves with the endings that decide the
 * check once every thread has stopped. With workerd, the shards above a violation are not stopped
 * early but waited for: a thread stopped mid-check would leave its workerd process running.
 */
function runShards(
  scenarioPath: string,
  options: Omit<CheckOptions, "onProgress">,
  count: number,
  onProgress: CheckOptions["onProgress"],
): Promise<readonly Ending[]> {
  const stopEarly = options.runtime !== "workerd";
  return new Promise((resolve) => {
    const endings: (Ending | undefined)[] = Array.from({ length: count }, () => undefined);
    const latest: (Progress | undefined)[] = Array.from({ length: count }, () => undefined);
    const stopped = Array.from({ length: count }, () => false);
    const stop = (index: number): void => {
      stopped[index] = true;
      void threads[index]?.terminate();
    };
    const end = (index: number, ending: Ending): void => {
      if (stopped[index]) return;
      endings[index] = ending;
      stop(index);
      if (stopEarly) {
        for (let above = firstDecisive(endings) + 1; above < count; above++) if (!stopped[above]) stop(above);
      }
      const deciding = decidingEndings(endings);
      if (deciding && stopped.every(Boolean)) resolve(deciding);
    };
    const threads = Array.from({ length: count }, (_, index) => {
      const task: WorkerTask = {
        scenarioPath,
        options: { ...options, shard: { index, count } },
        progress: onProgress !== undefined,
      };
      const thread = new Worker(WORKER_ENTRY, { workerData: task });
      thread.on("message", (message: WorkerMessage) => {
        if (stopped[index]) return;
        if (message.kind === "progress") {
          latest[index] = message.progress;
          onProgress?.(together(latest));
        } else {
          end(
            index,
            message.kind === "result" ? { result: message.result } : { error: uncarry(message.error) },
          );
        }
      });
      thread.on("error", (error) => end(index, { error }));
      thread.on("exit", (code) =>
        end(index, {
          error: new Error(
            `the worker thread of shard ${index + 1}/${count} exited (${code}) without a result`,
          ),
        }),
      );
      return thread;
    });
  });
}

/**
 * The progress of the shards as one check's: runs and faults summed, the longest time; exploring
 * while any shard still explores (a shard that shrinks a violation waits for those below it).
 */
function together(latest: readonly (Progress | undefined)[]): Progress {
  const known = latest.filter((p): p is Progress => p !== undefined);
  return {
    runs: known.reduce((sum, p) => sum + p.runs, 0),
    faults: known.reduce((sum, p) => sum + (p.faults ?? 0), 0),
    elapsedMs: Math.max(...known.map((p) => p.elapsedMs)),
    budgetMs: known[0]?.budgetMs ?? 0,
    phase: known.some((p) => p.phase === "explore") ? "explore" : (known[0]?.phase ?? "explore"),
  };
}

/**
 * The deciding endings as one result: the lowest shard's error is the check's; else the merge
 * of the shards' results, which every shard took part in unless a violation stopped it early;
 * undefined when the shards explored parts of two trees (a merge's reason `answers`).
 */
function merged(endings: readonly Ending[], count: number): ParallelResult | undefined {
  const results = endings.map((ending) => {
    if ("error" in ending) throw ending.error;
    return ending.result;
  });
  const names = results.map((_, index) => `shard ${index + 1}/${count}`);
  const result = mergeResults(results, names);
  if (result.verdict !== "INCOMPLETE") return result;
  if (result.reason === "answers") return undefined;
  const { missing: _missing, unsplit: _unsplit, reason, ...rest } = result;
  // Without a violation every shard ran to its end, so none is missing: the reason is a shard's.
  return { ...rest, reason: reason === "runs" ? "runs" : "budget", ...coverage(results) };
}

/**
 * How the shards covered the tree, in the words of one INCOMPLETE check: the sampling strategy
 * if a shard sampled (with `auto`, only the shards whose part was too large switch to PCT); the
 * distinct schedules of the shard that ran the most, a lower bound, since sampling shards may
 * run the same schedules and only a sum would overstate the coverage; the exhaustive runs made
 * before switching, summed over the shards that switched.
 */
function coverage(results: readonly CheckResult[]): {
  readonly strategy: StrategyName;
  readonly distinctSchedules: number;
  readonly switchedAfterRuns?: number;
} {
  let strategy: StrategyName = "exhaustive";
  let distinctSchedules = 0;
  let switchedAfterRuns: number | undefined;
  for (const result of results) {
    if (result.verdict === "BOUNDED") distinctSchedules = Math.max(distinctSchedules, result.runs);
    if (result.verdict !== "INCOMPLETE") continue;
    distinctSchedules = Math.max(distinctSchedules, result.distinctSchedules);
    if (result.strategy !== "exhaustive") strategy = result.strategy;
    if (result.switchedAfterRuns !== undefined) {
      switchedAfterRuns = (switchedAfterRuns ?? 0) + result.switchedAfterRuns;
    }
  }
  return { strategy, distinctSchedules, ...(switchedAfterRuns === undefined ? {} : { switchedAfterRuns }) };
}
