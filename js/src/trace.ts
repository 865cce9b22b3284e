/**
 * A run, step by step: the trace a check keeps of one run (`CheckResult.trace`), rendered for a
 * person to read. Each line of the trace is one fact the engine or the host recorded, in the
 * order it happened: a delivery, an effect and the decision at it, a callee starting, a D1
 * statement with its parameters and result, an answer, a death, an exception, a redelivery. The
 * listing indents by invocation nesting, so a callee's lines sit under the call that hosts them
 * and each D1 statement under its effect. A line this module does not recognize is shown as it is: the
 * trace is the engine's to extend, and the listing must never hide a step.
 */

import type { CheckResult } from "./check.ts";
import { shown } from "./errors.ts";
import { faultName } from "./faults.ts";

/** One parsed trace line. */
export type Step =
  | { readonly kind: "deliver"; readonly invocation: string }
  /** A callee starting, in the effect that hosts it (its id says which: `req-2#1/0`). */
  | { readonly kind: "host"; readonly invocation: string }
  | {
      readonly kind: "redeliver";
      readonly invocation: string;
      /** Why the resend does not happen (`the run allows 0 redeliveries`); absent when it does. */
      readonly refused: string | undefined;
    }
  | {
      readonly kind: "effect";
      readonly invocation: string;
      readonly effect: number;
      readonly label: string;
      readonly decision: string;
    }
  | {
      readonly kind: "d1";
      /** `payments/DB`, then ` batch[0]` or ` exec` when the statement is one of those. */
      readonly db: string;
      readonly sql: string;
      /** The parameters as the engine shows them, `["o-2", 900]`; absent when there are none. */
      readonly params: string | undefined;
      readonly outcome: string;
    }
  | {
      readonly kind: "outcome";
      readonly invocation: string;
      readonly what: "returned" | "answered" | "died" | "threw" | "finished";
      readonly detail: string;
    }
  /** A binding call as the host traces it (`KV:CACHE get "k" -> "v"`), under its effect. */
  | { readonly kind: "call"; readonly text: string }
  | { readonly kind: "other"; readonly invocation: string | undefined; readonly text: string };

/** An invocation id: `req-2#1`, `req-2#1/0`, `batch-1#2/3/0`. */
const INVOCATION = String.raw`[^\s#]+#\d+(?:/\d+)*`;
const DELIVER = new RegExp(`^deliver (${INVOCATION})$`);
const HOST = new RegExp(`^host (${INVOCATION})$`);
const REDELIVER = new RegExp(`^redeliver (${INVOCATION})(?:: refused, (.*))?$`);
/**
 * The engine's decision at an effect: the decision is one of its words, and the host's line for
 * a call that failed (`effect #0 failed: Error: …: Rollback`) is not one, whatever its message ends with.
 */
const EFFECT = new RegExp(
  `^(${INVOCATION}) effect #(\\d+) (?!failed: )(.*): (proceed|crash_before|crash_after|transient_error|lost_response)$`,
);
// `s`: what a Worker threw or answered may span lines (a query library's error quotes its SQL).
const OUTCOME = new RegExp(`^(${INVOCATION}) (returned|answered|died|threw|finished)(?: (.*))?$`, "s");
const OTHER = new RegExp(`^(${INVOCATION}) (.*)$`, "s");
/** `  KV:<binding> <what it did>`, `  R2:…`: indented like a D1 statement, named by its binding. */
const CALL = /^ {2}([A-Z][A-Za-z0-9]*:\S+ .*)$/s;
/** `  D1 <db>: <sql>[ [params]] -> <outcome>`, `  D1 <db> batch[i]: …`, `  D1 <db> exec: …`. */
const D1 = /^ {2}D1 (\S+(?: batch\[\d+\]| exec)?): (.*) -> ((?:error|rolled back): .*|\d+ .*)$/s;

/**
 * A driver's event going out at its time (`req-2 sent at 500 ms`, `cron-2 scheduled at 300000
 * ms`): a fact of the run's, never part of the effect before it, even when an interleaved
 * schedule delivers the event right after another invocation's call.
 */
const SENT_AT = /^\S+ (?:sent|scheduled) at \d+ ms(?:,|$)/;

export function parseStep(line: string): Step {
  let m = DELIVER.exec(line);
  if (m) return { kind: "deliver", invocation: m[1] as string };
  m = HOST.exec(line);
  if (m) return { kind: "host", invocation: m[1] as string };
  m = REDELIVER.exec(line);
  if (m) return { kind: "redeliver", invocation: m[1] as string, refused: m[2] };
  m = EFFECT.exec(line);
  if (m) {
    return {
      kind: "effect",
      invocation: m[1] as string,
      effect: Number(m[2]),
      label: m[3] as string,
      decision: m[4] as string,
    };
  }
  m = D1.exec(line);
  if (m) {
    const { sql, params } = splitParams(m[2] as string);
    return { kind: "d1", db: m[1] as string, sql, params, outcome: m[3] as string };
  }
  m = OUTCOME.exec(line);
  if (m) {
    return {
      kind: "outcome",
      invocation: m[1] as string,
      what: m[2] as "returned" | "answered" | "died" | "threw" | "finished",
      detail: m[3] ?? "",
    };
  }
  m = CALL.exec(line);
  if (m) return { kind: "call", text: m[1] as string };
  m = OTHER.exec(line);
  if (m) return { kind: "other", invocation: m[1] as string, text: m[2] as string };
  return { kind: "other", invocation: undefined, text: line.trim() };
}

/**
 * Splits `<sql> [<params>]` where the engine wrote parameters. The parameters are the bracketed
 * group that closes at the very end; SQL may hold brackets of its own (`[quoted]` names) and the
 * parameters strings with brackets in them, so the split is the leftmost ` [` whose group,
 * read with JSON's string quoting, closes exactly at the end.
 */
function splitParams(text: string): { sql: string; params: string | undefined } {
  if (!text.endsWith("]")) return { sql: text, params: undefined };
  // Bounded by the text's length: each candidate is one ` [` in it.
  for (let at = text.indexOf(" ["); at >= 0; at = text.indexOf(" [", at + 1)) {
    if (closesAtEnd(text, at + 1)) return { sql: text.slice(0, at), params: text.slice(at + 1) };
  }
  return { sql: text, params: undefined };
}

function closesAtEnd(text: string, open: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = open; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === "\\") i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === "[") depth++;
    else if (c === "]" && --depth === 0) return i === text.length - 1;
  }
  return false;
}

/** How deep an invocation is: 0 for a delivery, 1 for the callee its effect hosts, and so on. */
function depthOf(invocation: string): number {
  return invocation.split("/").length - 1;
}

const INDENT = "  ";

/** A Durable Object's store with its id cut to 12 hex digits: `do:Counter:efde315d3619…`. */
function shortStore(db: string): string {
  const m = /^(do:[^:]+:)([0-9a-f]{64})(.*)$/.exec(db);
  return m ? `${m[1]}${(m[2] as string).slice(0, 12)}…${m[3]}` : db;
}
/** The engine's line for a scheduling point with more than one pending step. */
const SCHEDULED = "schedule: ";

/**
 * The line the check traces when a run's last step is over and the invariants start reading
 * the final state: what follows it is theirs, not the last step's.
 */
export const FINAL_STATE = "the run is over: the invariants read the final state";

/** Why a request was answered 500 when its handler threw, as the http driver traces it. */
export const UNCAUGHT = "the exception was uncaught";

/**
 * The trace as an indented listing, one step per line (a D1 statement takes two or three).
 *
 * A D1 statement (or a binding call the host traces, such as a KV read) right after an effect
 * is that effect's, and those after a callee starts are the callee's, under the line that says
 * which call hosts it. Statements elsewhere are the simulation's own reads and writes (a queue's
 * bookkeeping, a Durable Object's storage) and sit under the step before them; the statements after the run's last step are the final state
 * being read by the invariants (and the platform), and get a heading of their own.
 */
export function renderTrace(trace: readonly string[]): string {
  // In a run whose invocations interleaved, each step names its invocation; the engine's lines
  // about which pending step it chose are then redundant.
  const interleaved = trace.some((l) => l.startsWith(SCHEDULED));
  // What a replay says of its seed goes with its verdict (`notAsPrintedParagraph`), not here.
  const lines = trace.filter((l) => !l.startsWith(SCHEDULED) && !l.startsWith(REPLAY_NOT_AS_PRINTED));
  const marked = lines.indexOf(FINAL_STATE);
  const steps = lines.filter((l) => l !== FINAL_STATE).map(parseStep);
  const who = (invocation: string): string => (interleaved ? `${invocation} ` : "");
  // Where the run's last step is: the check marks it; in a trace without the mark, the D1
  // statements after the last step read the final state. (A binding call there is an
  // invariant's read of KV; a Durable Object's storage calls are its own code's, so they end the
  // final reads.)
  let last = marked - 1;
  const finalRead = (step: Step | undefined) =>
    step?.kind === "d1" || (step?.kind === "call" && !step.text.startsWith("DO:"));
  if (marked < 0) {
    last = steps.length - 1;
    while (last >= 0 && finalRead(steps[last])) last--;
  }
  const out: string[] = [];
  const seen = new Set<string>();
  /** The indentation of the last line that was not a D1 statement; statements go under it. */
  let depthNow = 0;
  let inEffect = false;
  /** The label of the last effect, whose statements may follow. */
  let effectLabel = "";
  /** Each effect's label by the id of the callee it hosts (`req-1#1/0`). */
  const labels = new Map<string, string>();
  /** The label of the effect that hosted the callee that ended last, while its caller goes on. */
  let hostedBy = "DO:";
  /** Whether the object's storage calls since the last step went at its own level (see "call"). */
  let objectLevel = false;
  let previous: Step | undefined;
  const line = (depth: number, text: string): void => {
    out.push(`${INDENT.repeat(depth)}${text}`);
  };
  /** The invocation of the last step that named one. */
  let current: string | undefined;
  /** Says which call hosts a callee before its first line, and answers the depth of its steps. */
  const enter = (invocation: string): number => {
    const depth = depthOf(invocation);
    // The lines before may be another invocation's (invocations interleave, or a callee goes on
    // after its caller stopped waiting for it): a callee that comes back after them is named
    // again, so that it does not read as nested under them.
    const back = seen.has(invocation) && current !== invocation;
    // A step of another top-level invocation than the last one starts a paragraph of its own.
    const root = invocation.split("/")[0];
    if (interleaved && current !== undefined && current.split("/")[0] !== root && out.at(-1) !== "") {
      out.push("");
    }
    if (depth > 0 && (!seen.has(invocation) || back)) {
      const cut = invocation.lastIndexOf("/");
      line(
        2 * depth,
        `${invocation}, hosted by ${invocation.slice(0, cut)} effect #${invocation.slice(cut + 1)}${back ? " (continued)" : ""}`,
      );
    }
    seen.add(invocation);
    current = invocation;
    return 2 * depth + 1;
  };
  const at = (depth: number, text: string): void => {
    line(depth, text);
    depthNow = depth;
  };
  /**
   * A callee that started (its `host` line) and has shown nothing yet. What it traces before a
   * line that names it (a Durable Object's storage calls, in its constructor's
   * `blockConcurrencyWhile` or before its method's first binding call) is its own, and goes under
   * its header, at the depth of its own steps; a line that names it brings the header itself;
   * and when another invocation's line comes first (invocations interleave), it has done nothing
   * there to show.
   */
  let hosted: string | undefined;
  const underHosted = (): void => {
    if (hosted === undefined) return;
    depthNow = enter(hosted) - 1;
    hosted = undefined;
  };
  steps.forEach((step, index) => {
    if (index === last + 1 && (marked >= 0 || previous?.kind !== "effect")) {
      out.push("", "after the last step (the invariants read the final state):");
      depthNow = 0;
      inEffect = false;
      hosted = undefined;
    }
    const untitled =
      step.kind === "d1" || step.kind === "call" || (step.kind === "other" && step.invocation === undefined);
    if (untitled) underHosted();
    else hosted = undefined;
    switch (step.kind) {
      case "host":
        hosted = step.invocation;
        break;
      case "deliver": {
        if (depthOf(step.invocation) === 0 && out.length > 0 && previous?.kind !== "redeliver") out.push("");
        seen.add(step.invocation);
        current = step.invocation;
        at(2 * depthOf(step.invocation), `deliver ${step.invocation}`);
        break;
      }
      case "redeliver":
        if (out.length > 0) out.push("");
        at(
          2 * depthOf(step.invocation),
          step.refused === undefined
            ? `redeliver ${step.invocation}`
            : `redeliver ${step.invocation}: refused, ${step.refused}`,
        );
        break;
      case "effect": {
        const fault = step.decision === "proceed" ? "" : " (fault)";
        at(
          enter(step.invocation),
          `${who(step.invocation)}effect #${step.effect} ${step.label}: ${faultName(step.decision, step.label)}${fault}`,
        );
        break;
      }
      case "d1":
        line(depthNow + 1, `D1 ${shortStore(step.db)}: ${step.sql}`);
        if (step.params !== undefined) line(depthNow + 2, `params ${step.params}`);
        line(depthNow + 2, `-> ${step.outcome}`);
        break;
      case "call":
        // A Durable Object's storage call is no part of an effect on another binding (a D1
        // statement, a fetch): the object made it after that call came back, so it goes with the
        // object's own steps.
        if (
          step.text.startsWith("DO:") &&
          (objectLevel || !(inEffect ? effectLabel : hostedBy).startsWith("DO:"))
        ) {
          line(depthNow, step.text);
          inEffect = false;
          objectLevel = true;
        } else line(depthNow + 1, step.text);
        break;
      case "outcome": {
        at(
          enter(step.invocation),
          `${who(step.invocation)}${step.detail ? `${step.what} ${step.detail}` : step.what}`,
        );
        // A callee that returned (or died) hands the run back to its caller: the binding calls
        // traced next are the caller's, under the effect that hosted the callee.
        const cut = step.invocation.lastIndexOf("/");
        if (cut > 0 && step.what !== "finished") {
          const caller = step.invocation.slice(0, cut);
          current = caller;
          depthNow = 2 * depthOf(caller) + 1;
        }
        break;
      }
      case "other":
        if (step.invocation !== undefined) at(enter(step.invocation), `${who(step.invocation)}${step.text}`);
        else if (inEffect && !SENT_AT.test(step.text)) line(depthNow + 1, step.text);
        else {
          // A fact of no invocation's, such as a message sent from outside the scenario.
          if (out.length > 0) out.push("");
          at(0, step.text);
        }
        break;
    }
    // An effect's statements follow it directly, and so do those of the callee it hosts; any
    // other step ends them.
    if (step.kind === "effect") {
      inEffect = true;
      effectLabel = step.label;
      labels.set(`${step.invocation}/${step.effect}`, step.label);
    } else if (!untitled && step.kind !== "host") inEffect = false;
    // After a callee's end, what the effect that hosted it was: the lines up to the caller's
    // next step are the caller's own.
    if (step.kind === "outcome") hostedBy = labels.get(step.invocation) ?? "DO:";
    else if (!untitled) hostedBy = "DO:";
    if (!untitled) objectLevel = false;
    previous = step;
  });
  return out.join("\n");
}

/**
 * How the engine starts a line of a replay's trace saying the run was not the one its seed was
 * printed for (src/check.rs, `REPLAY_NOT_AS_PRINTED`): a fault or a choice of the seed did not
 * happen, because the Worker changed since (a fix), or the seed was edited.
 */
export const REPLAY_NOT_AS_PRINTED = "replay: not as printed: ";

/** What a replay's trace says of the seed's faults and choices that did not happen, as sentences. */
export function notAsPrinted(trace: readonly string[]): string[] {
  return trace
    .filter((line) => line.startsWith(REPLAY_NOT_AS_PRINTED))
    .map((line) => {
      const said = line.slice(REPLAY_NOT_AS_PRINTED.length);
      return `${said[0]?.toUpperCase() ?? ""}${said.slice(1)}.`;
    });
}

/**
 * The paragraph a replay's report ends with when its run was not the one the seed was printed
 * for; none when it was.
 */
export function notAsPrintedParagraph(trace: readonly string[]): string[] {
  const notes = notAsPrinted(trace);
  if (notes.length === 0) return [];
  return [
    "",
    "This is not the run the seed was printed for: the Worker or the scenario changed since (a fix that makes other calls), or the seed was edited.",
    ...notes.map((note) => `  ${note}`),
  ];
}

/** The verdict of one replayed run, colored by the caller. */
type RunVerdict = "VIOLATED" | "HELD";

/**
 * What `eutaxy replay` prints: the run step by step, then its verdict: which invariant broke and
 * its message, or that none did. `paint` colors the verdict word (or leaves it as it is).
 */
export function renderReplay(
  result: CheckResult,
  paint: (line: string, verdict: RunVerdict) => string,
): string {
  if (result.verdict !== "VIOLATED" && result.verdict !== "HELD") {
    // check() with a run seed answers one of these two; anything else is a bug of ours.
    throw new Error(`a replay ended with ${result.verdict}`);
  }
  const verdict =
    result.verdict === "VIOLATED"
      ? paint(`VIOLATED  invariant ${result.invariant} broke: ${result.message}`, "VIOLATED")
      : paint("HELD  no invariant broke in this run", "HELD");
  return [
    `Run ${result.runSeed} of ${result.scenario} (${shown(result.file)}), step by step:`,
    "",
    renderTrace(result.trace),
    "",
    verdict,
    ...notAsPrintedParagraph(result.trace),
  ].join("\n");
}

/** What `eutaxy check --trace` adds after a VIOLATED report: the counterexample step by step. */
export function renderCounterexample(result: CheckResult): string | undefined {
  if (result.verdict !== "VIOLATED") return undefined;
  return [
    `The counterexample (run seed ${result.runSeed}), step by step:`,
    "",
    renderTrace(result.trace),
  ].join("\n");
}
