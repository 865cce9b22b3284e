/**
 * The report a check prints. Its first line is the verdict, the scenario and the seed; a
 * VIOLATED report then gives the broken invariant, the shrunk schedule (its run seed, the
 * events kept, one line per fault) and the command that replays it. docs: README "The report".
 */

import type { CheckResult } from "./check.ts";
import type { FaultReport } from "./engine.ts";
import { shown } from "./errors.ts";
import type { CheckWarning } from "./explore.ts";
import { faultName } from "./faults.ts";
import { notAsPrintedParagraph, parseStep, UNCAUGHT } from "./trace.ts";

/** The interleaving a report lists at most; `--trace` shows a run whole. */
const INTERLEAVING_LINES_MAX = 32;

function seconds(ms: number): string {
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`;
}

/** `n` and `word`, plural unless `n` is 1 (`1 schedule`, `3 redeliveries`). */
export function plural(n: number, word: string): string {
  if (n === 1) return `1 ${word}`;
  return word.endsWith("y") ? `${n} ${word.slice(0, -1)}ies` : `${n} ${word}s`;
}

/**
 * What a fault's line adds when its invocation had answered before it (the trace says so): the
 * fault hit the work its handler left to `ctx.waitUntil`, and the client had its answer.
 */
function afterAnswer(trace: readonly string[], fault: FaultReport): string {
  for (const line of trace) {
    const step = parseStep(line);
    if (!("invocation" in step) || step.invocation !== fault.invocation) continue;
    if (step.kind === "effect" && step.effect === fault.effect) return "";
    if (step.kind === "outcome" && step.what === "answered") {
      return `, in its ctx.waitUntil work, after it answered ${step.detail.split(" ", 1)[0]}`;
    }
    if (step.kind === "outcome" && step.what === "returned") {
      return ", in its ctx.waitUntil work, after its handler returned";
    }
  }
  return "";
}

/** The lines of what a queue did with a faulted batch's messages a fault's line is followed by at most. */
const FATES_MAX = 3;
/** Characters of a message's body such a line shows. */
const FATE_BODY_MAX = 80;

/**
 * What a fault in a queue consumer's batch made the queue do with the batch's messages, as the
 * trace says it (`batch-1#1 retries message 5f… (attempt 2 of 4 next): the handler returned, but
 * …`): which message comes again, or goes to the dead letter queue, and why, under the fault's
 * line. A fault elsewhere, or one after which the queue heard the batch's outcome, adds nothing.
 * Without `invocation` (a counterexample without faults), each message's last fate in any batch:
 * a handler that threw or retried is then what brought messages back.
 */
function messageFates(trace: readonly string[], invocation: string | undefined): string[] {
  // Across batches a message's last fate says the most (dropped after its last attempt); one
  // batch's lines name each message once.
  const last = new Map<string, string>();
  for (const line of trace) {
    const m = /^(\S+) (?:retries|dead-letters|drops) message ([0-9a-f]+)/.exec(line);
    if (m === null || (invocation !== undefined && m[1] !== invocation)) continue;
    last.delete(m[2] as string);
    last.set(m[2] as string, line);
  }
  const fates = [...last.values()];
  // A message is known by its body more than by its id: the line shows the body its delivery
  // got (`gets message <id>, attempt 1 of 4: <body>`), cut short.
  const bodies = new Map<string, string>();
  for (const line of trace) {
    const got = /^\S+ gets message ([0-9a-f]+), attempt \d+ of \d+: (.*)$/s.exec(line);
    if (got && !bodies.has(got[1] as string)) bodies.set(got[1] as string, got[2] as string);
  }
  const withBody = (line: string): string =>
    line.replace(/ message ([0-9a-f]+)/, (whole, id: string) => {
      const body = bodies.get(id);
      if (body === undefined) return whole;
      return `${whole} ${body.length > FATE_BODY_MAX ? `${body.slice(0, FATE_BODY_MAX)}…` : body}`;
    });
  const shown = fates.slice(0, FATES_MAX).map((line) => `    ${withBody(line)}`);
  if (fates.length > FATES_MAX)
    shown.push(`    … and ${plural(fates.length - FATES_MAX, "more message")} (--trace lists them)`);
  return shown;
}

/** The trace's first eviction of an idle Durable Object, which no fault made, as the schedule names it. */
function evicted(trace: readonly string[]): string {
  for (const line of trace) {
    const eviction =
      /^Durable Object (.+) reset \(evicted from memory after (\d+) s without a call or an alarm\)/.exec(
        line,
      );
    if (eviction)
      return `, with Durable Object ${eviction[1]} evicted from memory after ${eviction[2]} s idle, as Cloudflare evicts one`;
  }
  return "";
}

/** The shell command that replays a run seed of this check. */
export function replayCommand(result: CheckResult, runSeed: string): string {
  return `eutaxy check ${shown(result.file)} --replay ${runSeed}`;
}

/** The shell command that prints a run seed's run step by step. */
export function stepByStepCommand(result: CheckResult, runSeed: string): string {
  return `eutaxy replay ${shown(result.file)} ${runSeed}`;
}

/**
 * The report; `notes` are lines a caller adds after the verdict's own lines and before its
 * warnings (how a parallel check was split).
 */
export function renderReport(result: CheckResult, notes: readonly string[] = []): string {
  const head = `${result.verdict}  ${result.scenario}  (seed ${result.seed})`;
  switch (result.verdict) {
    case "VIOLATED":
      return [
        head,
        "",
        `Invariant ${result.invariant} is violated: ${result.message}`,
        "",
        `Schedule (run seed ${result.runSeed}), events kept: ${result.eventsKept.join(", ")}`,
        ...(result.faults.length === 0
          ? [
              `  no faults: the events alone break it${evicted(result.trace)}`,
              ...messageFates(result.trace, undefined),
            ]
          : result.faults.flatMap((f) => [
              `  ${faultName(f.kind, f.label)} at ${f.invocation} effect #${f.effect} (${f.label})${afterAnswer(result.trace, f)}`,
              // A fault in a callee the batch's call hosts (`batch-1#1/2`) failed the batch too.
              ...messageFates(result.trace, f.invocation.split("/")[0]),
            ])),
        ...interleaving(result),
        "",
        `Replay: ${replayCommand(result, result.runSeed)}`,
        // Shrinking runs the found schedule again at least once; a replay (--replay) shrinks nothing.
        result.shrinkRuns === 0
          ? `Replayed the run seed in ${seconds(result.elapsedMs)}.`
          : `F${foundAfter(result).slice(1)}; shrunk in ${plural(result.shrinkRuns, "run")}.`,
        ...notAsPrintedParagraph(result.trace),
        ...renderWarnings(result),
      ].join("\n");
    case "BOUNDED":
      return [
        head,
        "",
        `Every schedule within the bounds ran and no invariant broke: ${plural(result.runs, "schedule")} in ${seconds(result.elapsedMs)}.`,
        // Without a binding call nothing interleaved, and the reduction had nothing to leave out.
        ...(result.partialOrderReduction && !result.warnings?.some((w) => w.kind === "no-binding-call")
          ? [REDUCTION_CAVEAT]
          : []),
        `Bounds: ${describeBounds(result)}.`,
        ...notes,
        ...renderWarnings(result),
      ].join("\n");
    case "INCOMPLETE":
      return [
        head,
        "",
        ranOut(result),
        ...(result.strategy === "exhaustive" ? [] : [sampled(result)]),
        notAProof(result),
        ...advice(result),
        `Bounds: ${describeBounds(result)}.`,
        ...notes,
        ...renderWarnings(result),
      ].join("\n");
    case "HELD":
      return [
        `HELD  ${result.scenario}  (run seed ${result.runSeed})`,
        "",
        "The replayed run broke no invariant.",
        ...notAsPrintedParagraph(result.trace),
      ].join("\n");
  }
}

/**
 * How the search came to the violation, in lower case. After `auto` switched to PCT, the line says so: the
 * clock chose the moment, so a faster or busier machine may report another counterexample.
 */
export function foundAfter(result: Extract<CheckResult, { verdict: "VIOLATED" }>): string {
  const found = `found after ${plural(result.runs, "schedule")} in ${seconds(result.elapsedMs)}`;
  if (result.switchedAfterRuns === undefined) return found;
  return `${found}, by PCT sampling: after ${plural(result.switchedAfterRuns, "exhaustive run")}, the tree looked far larger than the budget covers and auto switched (by the clock, so another machine may find another counterexample; the run seed replays this one anywhere)`;
}

/** The trace's line for a timer that fired, after the invocation's id (`sim/run.ts`). */
const TIMER_FIRED = /^(timer of \d+ ms|immediate|body read|storage\.sync\(\)) fired$/;
const LATE_ANSWER = /^gets the answer of effect #\d+$/;

/**
 * When invocations may interleave, the order the counterexample's steps ran in (deliveries and
 * effects), which is what makes most concurrency bugs: `req-2#1 effect #0` between two effects
 * of `req-1#1`.
 */
function interleaving(result: Extract<CheckResult, { verdict: "VIOLATED" }>): string[] {
  if (result.bounds.maxConcurrentInvocations < 2) return [];
  // The invocations a client got a 500 from because they threw (the http driver says so).
  const answeredForThrowing = new Set(
    result.trace.flatMap((line) => {
      const step = parseStep(line);
      return step.kind === "outcome" && step.what === "answered" && step.detail.includes(UNCAUGHT)
        ? [step.invocation]
        : [];
    }),
  );
  const steps = result.trace.flatMap((line) => {
    const step = parseStep(line);
    if (step.kind === "deliver") return [`deliver ${step.invocation}`];
    if (step.kind === "effect") {
      const fault = step.decision === "proceed" ? "" : `: ${faultName(step.decision, step.label)}`;
      return [`${step.invocation} effect #${step.effect} (${step.label})${fault}`];
    }
    // A timer firing is a step too: the invocation wakes between other invocations' steps; so
    // is an answer that reached its invocation after other steps ran.
    if (
      step.kind === "other" &&
      step.invocation &&
      (TIMER_FIRED.test(step.text) || LATE_ANSWER.test(step.text))
    ) {
      return [`${step.invocation} ${step.text}`];
    }
    // A client's answer, so that what an invocation does after it (its ctx.waitUntil work)
    // reads as coming after it.
    // A 500 for an uncaught exception is said with the exception, below.
    if (step.kind === "outcome" && step.what === "answered") {
      const status = /^\d+/.exec(step.detail)?.[0] ?? step.detail;
      return step.detail.includes(UNCAUGHT) ? [] : [`${step.invocation} answered ${status}`];
    }
    // Platform work (an alarm, a cron tick) answers no one: its end says it went no further.
    if (step.kind === "outcome" && step.what === "finished" && !step.invocation.includes("/")) {
      return [`${step.invocation} finished`];
    }
    // A request the runtime canceled, its code waiting on what nothing settles, is answered 500.
    if (
      step.kind === "other" &&
      step.invocation &&
      !step.invocation.includes("/") &&
      step.text.startsWith("hung: ")
    ) {
      return [`${step.invocation} hung, so the runtime canceled it and answered 500`];
    }
    // A request whose handler threw is answered 500 by the runtime; platform work (an alarm, a
    // queue batch) answers no one, and is retried or given up.
    if (step.kind === "outcome" && step.what === "threw" && !step.invocation.includes("/")) {
      const line = step.detail.split("\n")[0] ?? "";
      const error = line.length > 100 ? `${line.slice(0, 100)}…` : line;
      return [
        answeredForThrowing.has(step.invocation)
          ? `${step.invocation} threw, so it was answered 500: ${error}`
          : `${step.invocation} threw: ${error}`,
      ];
    }
    return [];
  });
  const lines = collapseRepeats(steps);
  return ["", "Steps in the order they ran:", ...aroundSwitches(lines).map((line) => `  ${line}`)];
}

/** The invocation a step line is about: `deliver req-2#1`, `req-2#1 effect #0 (…)`. */
function stepInvocation(line: string): string {
  return (line.startsWith("deliver ") ? line.slice("deliver ".length) : line).split(" ")[0] ?? "";
}

/**
 * The step lines to show, at most `INTERLEAVING_LINES_MAX` of them when there are more: the
 * first few, where one invocation's steps give way to another's (the step before and the step
 * after), which is what a race is made of, and the last, then as many more from the start as
 * there is room for; each gap is said with its length.
 */
function aroundSwitches(lines: readonly string[]): string[] {
  if (lines.length <= INTERLEAVING_LINES_MAX) return [...lines];
  const keep = new Set<number>();
  for (let i = 0; i < 4; i++) keep.add(i);
  keep.add(lines.length - 1);
  for (let i = 1; i < lines.length && keep.size < INTERLEAVING_LINES_MAX; i++) {
    if (stepInvocation(lines[i] as string) !== stepInvocation(lines[i - 1] as string)) {
      keep.add(i - 1);
      keep.add(i);
    }
  }
  // The room left goes to the steps from the start.
  for (let i = 0; i < lines.length && keep.size < INTERLEAVING_LINES_MAX; i++) keep.add(i);
  const shown: string[] = [];
  let skipped = 0;
  for (let i = 0; i < lines.length; i++) {
    if (!keep.has(i)) {
      skipped++;
      continue;
    }
    if (skipped > 0) shown.push(`… ${plural(skipped, "more step")}`);
    skipped = 0;
    shown.push(lines[i] as string);
  }
  if (skipped > 0) shown.push(`… ${plural(skipped, "more step")}`);
  shown.push("(--trace shows the whole run)");
  return shown;
}

/**
 * The same step several times in a row (an invocation's timers firing one after another, as a
 * backoff's do) as one line with its count, so that the steps of the other invocations between
 * which it ran stay within the lines shown.
 */
function collapseRepeats(steps: readonly string[]): string[] {
  const lines: string[] = [];
  for (let i = 0; i < steps.length; ) {
    let j = i + 1;
    while (j < steps.length && steps[j] === steps[i]) j++;
    lines.push(j - i > 1 ? `${steps[i]} (${j - i} times)` : (steps[i] as string));
    i = j;
  }
  return lines;
}

/** How a sampling check covered the space, for an INCOMPLETE report. */
export function sampled(result: Extract<CheckResult, { verdict: "INCOMPLETE" }>): string {
  const name = result.strategy === "pct" ? "PCT (probabilistic concurrency testing)" : "random walks";
  const switched =
    result.switchedAfterRuns === undefined
      ? ""
      : `, after ${plural(result.switchedAfterRuns, "exhaustive run")} showed the tree is larger than the budget covers`;
  return `Sampled by ${name}${switched}: ${plural(result.distinctSchedules, "distinct schedule")}.`;
}

/**
 * Why an INCOMPLETE check stopped, and after how many runs: schedules when it explored them one
 * by one, runs when it sampled, which may draw a schedule more than once (`sampled` says how
 * many were distinct).
 */
export function ranOut(result: Extract<CheckResult, { verdict: "INCOMPLETE" }>): string {
  const ran = plural(result.runs, result.strategy === "exhaustive" ? "schedule" : "run");
  return result.reason === "budget"
    ? `The budget of ${result.bounds.budgetMs} ms ran out after ${ran}, before every schedule within the bounds had run.`
    : `The limit on runs was reached after ${ran}, before every schedule within the bounds had run.`;
}

/** What an INCOMPLETE check's schedules say, and what would make it a proof. */
export function notAProof(result: Extract<CheckResult, { verdict: "INCOMPLETE" }>): string {
  return result.strategy !== "exhaustive" && result.switchedAfterRuns === undefined
    ? "No invariant broke in the schedules that ran, but this is not a proof, and sampling never gives one: --strategy exhaustive (or auto, the default) covers the bounds when the budget allows."
    : "No invariant broke in the schedules that ran, but this is not a proof: raise bounds.budgetMs or tighten the bounds.";
}

/** A verdict's warnings, each a paragraph of its own after the verdict's lines. */
export function renderWarnings(result: { readonly warnings?: readonly CheckWarning[] }): string[] {
  return (result.warnings ?? []).flatMap((warning) => ["", `Warning: ${warning.message}`]);
}

/** What BOUNDED under partial-order reduction rests on, said after such a verdict. */
export const REDUCTION_CAVEAT =
  "Interleavings that only reorder independent calls ran once (partial-order reduction), and no run changed a module-level variable of the Workers' own files, which the reduction cannot see; state a library keeps inside its own objects is not watched (nor which request built a client kept in a variable), and --no-reduction runs every interleaving.";

export function describeBounds(result: Pick<CheckResult, "bounds">): string {
  const b = result.bounds;
  return `maxFaultsPerRun ${b.maxFaultsPerRun}, maxRedeliveries ${b.maxRedeliveries}, maxConcurrentInvocations ${b.maxConcurrentInvocations}, budgetMs ${b.budgetMs}`;
}

/** Fewer runs than this in a whole budget say the budget was too short to tell the tree's size. */
const FEW_RUNS = 100;

/**
 * What to do about an INCOMPLETE check. A budget that ran out within the first runs, which
 * compile the Workers' code and take longest, says nothing of the tree: give it more time. For
 * one that both injects faults and interleaves invocations: the two multiply (every fault at
 * every point of every interleaving), and each alone is far smaller.
 */
function advice(result: Extract<CheckResult, { verdict: "INCOMPLETE" }>): string[] {
  if (result.reason === "budget" && result.runs < FEW_RUNS) {
    return [
      "The first runs compile the Workers' code and take the longest, so a budget spent on them says little of how many schedules the bounds hold: give it a few seconds before splitting the scenario.",
    ];
  }
  const lines: string[] = [];
  // Without reduction every interleaving runs, and the tree may be only somewhat over the
  // budget, where `auto` goes on searching it rather than sample.
  if (result.strategy === "exhaustive" && result.warnings?.some((w) => w.kind === "module-state")) {
    lines.push(
      "With every interleaving to run (see the module-level variable below), --strategy pct samples them instead and finds most races in a few hundred runs, though it proves nothing.",
    );
  }
  const { maxFaultsPerRun, maxConcurrentInvocations } = result.bounds;
  if (maxFaultsPerRun === 0 || maxConcurrentInvocations < 2) return lines;
  lines.push(
    "Faults and interleavings multiply: checking the races (maxFaultsPerRun 0) and the faults (maxConcurrentInvocations 1) in two scenarios takes far fewer schedules; --workers N also explores on N CPUs.",
  );
  return lines;
}
