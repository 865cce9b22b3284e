/**
 * The memory benchmark, in a process of its own so that nothing else the bench did (Miniflare,
 * the floor, other checks) is in its resident set: one check of the fixed service-binding scenario
 * long enough for `runs` runs, sampling the resident set size every `every` runs. An exhaustive
 * check of that scenario is BOUNDED after a few dozen runs, so this one samples its schedules at
 * random (`strategy: "random"`), which never ends before its budget; the bench stops it at `runs`
 * by throwing from `onProgress`. Prints one line of JSON.
 *
 * Arguments: <scenario path> <runs> <every>
 */

import { check } from "../src/index.ts";

export interface MemorySample {
  readonly runs: number;
  readonly rssBytes: number;
  readonly heapUsedBytes: number;
  readonly ms: number;
}

export interface MemoryReport {
  readonly scenario: string;
  readonly runs: number;
  readonly ms: number;
  readonly samples: readonly MemorySample[];
  /** How the check ended: `stopped` at `runs`, or its verdict if it ended first. */
  readonly ended: string;
}

class Enough extends Error {}

const [scenario = "", runsText = "100000", everyText = "1000"] = process.argv.slice(2);
const target = Number(runsText);
const every = Number(everyText);
const samples: MemorySample[] = [];
const started = performance.now();
const sample = (runs: number): void => {
  const { rss, heapUsed } = process.memoryUsage();
  samples.push({ runs, rssBytes: rss, heapUsedBytes: heapUsed, ms: performance.now() - started });
};

sample(0);
let ended = "stopped";
let done = 0;
try {
  const result = await check(scenario, {
    strategy: "random",
    // Far more than the runs take; the bench stops the check at `target` runs.
    budgetMs: Math.max(30_000, target * 2),
    onProgress: (p) => {
      done = p.runs;
      if (p.runs % every === 0) sample(p.runs);
      if (p.runs >= target) throw new Enough();
    },
  });
  ended = result.verdict;
} catch (error) {
  if (!(error instanceof Enough)) throw error;
}
const report: MemoryReport = { scenario, runs: done, ms: performance.now() - started, samples, ended };
process.stdout.write(`${JSON.stringify(report)}\n`);
