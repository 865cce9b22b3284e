/**
 * The progress line a long check shows on a terminal: the phase, the runs done, the rate, and
 * the time left in the budget. It goes to stderr so that stdout stays the report (or the JSON),
 * is redrawn in place at most ten times a second, and is erased before anything else is printed.
 * When stderr is not a TTY (a CI log, a pipe, a file) it is never printed: a log would only keep
 * a heap of half-lines.
 *
 * The line uses no escape codes, only carriage returns and spaces, so it also works on a
 * terminal that understands none.
 */

import { Decision, type Engine, type EngineConfig } from "./engine.ts";

/** What `check()` reports after every run (`CheckOptions.onProgress`). */
export interface Progress {
  /** Runs done so far, in every phase. */
  readonly runs: number;
  /** Faults injected so far: decisions other than proceed, in every run. */
  readonly faults?: number;
  readonly elapsedMs: number;
  readonly budgetMs: number;
  readonly phase: string;
}

export interface ProgressLine {
  /** Pass as `CheckOptions.onProgress`. */
  readonly update: (p: Progress) => void;
  /** Erases the line if one is shown; call before printing anything else. */
  readonly clear: () => void;
}

/** Where the line goes: what it needs of `process.stderr`. */
export interface ProgressStream {
  readonly isTTY?: boolean;
  readonly columns?: number;
  write(text: string): unknown;
}

/**
 * Wraps the engine factory the exploration uses so that `onProgress` hears of every run: a run
 * is over when the exploration asks the engine for the next one (`nextRun`, which also carries
 * the elapsed time), and a decision other than proceed is a fault tried. Watching the engine
 * rather than the run loop keeps the loop free of display concerns; without `onProgress` the
 * factory is returned as it is and the engine is not touched.
 */
export function watchRuns(
  create: (config: EngineConfig) => Engine,
  onProgress: ((p: Progress) => void) | undefined,
): (config: EngineConfig) => Engine {
  if (!onProgress) return create;
  return (config) => {
    const engine = create(config);
    const nextRun = engine.nextRun.bind(engine);
    const decide = engine.decide.bind(engine);
    let runs = 0;
    let faults = 0;
    let phase: string | undefined;
    engine.decide = (invocation, effect, label, transient, lost) => {
      const decision = decide(invocation, effect, label, transient, lost);
      if (decision !== Decision.Proceed) faults++;
      return decision;
    };
    engine.nextRun = (elapsedMs) => {
      if (phase !== undefined) {
        onProgress({ runs: ++runs, faults, elapsedMs, budgetMs: config.budgetMs, phase });
      }
      const plan = nextRun(elapsedMs);
      phase = plan?.phase;
      return plan;
    };
    return engine;
  };
}

/** At most ten redraws a second. */
const REDRAW_MS = 100;
/** A check that ends sooner than this shows no line at all, rather than a flicker. */
const SHOW_AFTER_MS = 300;

/** A progress line on `stream`, or undefined when `stream` is not a terminal. */
export function progressLine(stream: ProgressStream): ProgressLine | undefined {
  if (stream.isTTY !== true) return undefined;
  let shown = 0;
  let drawnAtMs = Number.NEGATIVE_INFINITY;
  let exploreRuns = 0;
  let exploreMs = 0;
  const clear = (): void => {
    if (shown > 0) stream.write(`\r${" ".repeat(shown)}\r`);
    shown = 0;
  };
  const update = (p: Progress): void => {
    if (p.phase === "explore") {
      exploreRuns = p.runs;
      exploreMs = p.elapsedMs;
    }
    if (p.elapsedMs < SHOW_AFTER_MS || p.elapsedMs - drawnAtMs < REDRAW_MS) return;
    drawnAtMs = p.elapsedMs;
    // A terminal that reports no size (0 columns under `script`) is taken to be 80 wide.
    const width = Math.max(20, (stream.columns || 80) - 1);
    // A line longer than the terminal wraps, and a carriage return no longer erases it.
    const text = describe(p, exploreRuns, exploreMs).slice(0, width);
    stream.write(`\r${text}${" ".repeat(Math.max(0, shown - text.length))}`);
    shown = Math.max(shown, text.length);
  };
  return { update, clear };
}

/**
 * The line's text: `eutaxy: exploring: 1,204 runs, 3,010 runs/s, 1,203 faults tried, 7.6 s of
 * the 10.0 s budget left`. Shrinking is not bounded by the budget, so it shows its runs only.
 */
export function describe(p: Progress, exploreRuns: number, exploreMs: number): string {
  const count = (n: number, word?: string): string =>
    `${n.toLocaleString("en-US")}${word === undefined ? "" : ` ${word}${n === 1 ? "" : "s"}`}`;
  if (p.phase === "explore") {
    const rate = p.elapsedMs > 0 ? Math.round((p.runs * 1000) / p.elapsedMs) : 0;
    const leftMs = Math.max(0, p.budgetMs - p.elapsedMs);
    const faults = p.faults === undefined ? "" : `, ${count(p.faults, "fault")} tried`;
    return `eutaxy: exploring: ${count(p.runs, "run")}, ${count(rate)} runs/s${faults}, ${secs(leftMs)} of the ${secs(p.budgetMs)} budget left`;
  }
  if (p.phase === "shrink") {
    const rate = exploreMs > 0 ? Math.round((exploreRuns * 1000) / exploreMs) : 0;
    return `eutaxy: shrinking the counterexample: ${count(p.runs - exploreRuns, "run")} (after ${count(exploreRuns)} explored at ${count(rate)} runs/s)`;
  }
  return `eutaxy: ${p.phase}: ${count(p.runs, "run")}`;
}

function secs(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}
