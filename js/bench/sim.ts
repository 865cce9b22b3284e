/** eutaxy's side of the bench: `check()` on a scenario, timed from what the check reports. */

import { type CheckOptions, type CheckResult, check } from "../src/index.ts";

/** Runs a check makes before its steady state is timed: the first runs compile the Workers' code. */
export const WARM_RUNS = 20;

export interface Explored {
  readonly result: CheckResult;
  /** Runs of the exploring phase (shrinking runs after a violation are not counted). */
  readonly runs: number;
  /** Milliseconds the exploring phase took, as the check measures its budget. */
  readonly ms: number;
  /** Microseconds per run after the first `WARM_RUNS` runs, when the check made more. */
  readonly steadyUsPerRun?: number;
  /** The same stretch of runs in this process's CPU time (user and system), microseconds per run. */
  readonly steadyCpuUsPerRun?: number;
  /** Wall-clock milliseconds of the whole `check()` call: loading, bundling, exploring, shrinking. */
  readonly wallMs: number;
}

/** One check; its exploring phase's runs and time are read from `onProgress`. */
export async function explored(path: string, options: CheckOptions = {}): Promise<Explored> {
  let runs = 0;
  let ms = 0;
  let cpuUs = 0;
  let warm: { runs: number; ms: number; cpuUs: number } | undefined;
  const started = performance.now();
  const result = await check(path, {
    ...options,
    onProgress: (p) => {
      if (p.phase !== "explore") return;
      runs = p.runs;
      ms = p.elapsedMs;
      cpuUs = cpuNowUs();
      if (warm === undefined && p.runs >= WARM_RUNS) warm = { runs, ms, cpuUs };
    },
  });
  const wallMs = performance.now() - started;
  if (runs === 0 && "runs" in result) {
    // A check that reports no progress (none should) is timed by its result instead.
    runs = result.runs;
    ms = result.elapsedMs;
  }
  if (!warm || runs <= warm.runs) return { result, runs, ms, wallMs };
  return {
    result,
    runs,
    ms,
    wallMs,
    steadyUsPerRun: ((ms - warm.ms) * 1000) / (runs - warm.runs),
    steadyCpuUsPerRun: (cpuUs - warm.cpuUs) / (runs - warm.runs),
  };
}

/** CPU time this process has used so far (user and system, all its threads), in microseconds. */
export function cpuNowUs(): number {
  const { user, system } = process.cpuUsage();
  return user + system;
}

/** Microseconds per run of a check's exploring phase. */
export function usPerRun(e: Explored): number {
  return (e.ms * 1000) / Math.max(1, e.runs);
}

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}
