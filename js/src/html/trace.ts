/**
 * Reads a run's trace (the lines the engine and the host write, see check.rs and sim/run.ts) back
 * into steps the visual counterexample can draw: deliveries, effects with the D1 statements they
 * ran, answers, deaths and resends. A line this module does not know becomes a note, so a new kind
 * of trace line is shown as text rather than lost.
 */

import { FINAL_STATE } from "../trace.ts";

/** One `  D1 <db>: <sql> [params] -> <result>` line, or a binding call (`  KV:CACHE get "k"`). */
export interface Statement {
  /** The database as the engine names it: `DB`, `payments/DB`, or a store's own (`kv:COUPONS`). */
  readonly db: string;
  /** `batch[2]` or `exec` when the statement was part of one, else empty. */
  readonly part: string;
  readonly sql: string;
  /** The parameters as the engine prints them (`"o-2"`, `900`, `null`, `x'00ff'`). */
  readonly params: readonly string[];
  readonly result: string;
}

export type Decision = "proceed" | "crash_before" | "crash_after" | "transient_error" | "lost_response";

interface StepBase {
  /** The trace line the step was read from (the first, when several lines make one step). */
  readonly line: string;
  /** The D1 statements traced while this step was the latest one. */
  readonly statements: Statement[];
}

export type Step = StepBase &
  (
    | { readonly kind: "deliver"; readonly invocation: string }
    | {
        readonly kind: "effect";
        readonly invocation: string;
        readonly effect: number;
        readonly label: string;
        readonly decision: Decision;
      }
    | { readonly kind: "returned"; readonly invocation: string; readonly value: string }
    | { readonly kind: "threw"; readonly invocation: string; readonly error: string }
    | {
        readonly kind: "answered";
        readonly invocation: string;
        readonly status: string;
        readonly body: string;
      }
    /** `why`: what the trace says after "died" (`with its callee req-1#1/0: …`), if anything. */
    | { readonly kind: "died"; readonly invocation: string; readonly why?: string }
    | { readonly kind: "finished"; readonly invocation: string }
    | { readonly kind: "redeliver"; readonly invocation: string; readonly refused: string | undefined }
    | { readonly kind: "sent"; readonly event: string; readonly queue: string }
    | {
        readonly kind: "batch-end";
        readonly invocation: string;
        readonly queue: string;
        readonly succeeded: boolean;
        readonly detail: string;
      }
    | { readonly kind: "note"; readonly text: string }
  );

export interface ParsedTrace {
  readonly steps: readonly Step[];
  /**
   * The D1 statements after the run's last step that do not belong to it: the reads of the
   * final state that the invariants made (a `query`, `conserved` or `invariant` over D1).
   */
  readonly finalReads: readonly Statement[];
}

/** `host <callee>`, traced as a callee starts (sim/run.ts, `host`). */
const HOST = /^host \S+$/;

/** The engine keeps at most 10,000 trace lines per run; this bounds the parse whatever it gets. */
const LINES_MAX = 20_000;

const DECISIONS: ReadonlySet<string> = new Set([
  "proceed",
  "crash_before",
  "crash_after",
  "transient_error",
  "lost_response",
]);

export function parseTrace(lines: readonly string[]): ParsedTrace {
  const steps: Step[] = [];
  // Statements traced before any step (module initialisation) are kept as the first note's.
  let current: Step | undefined;
  let trailing: Statement[] = [];
  let final = false;
  for (const line of lines.slice(0, LINES_MAX)) {
    if (line === FINAL_STATE) {
      // Everything after the mark is the invariants' reading of the final state.
      final = true;
      trailing = [];
      continue;
    }
    const statement = parseStatement(line);
    if (statement) {
      if (!current) {
        current = { kind: "note", text: "before the first delivery", line: "", statements: [] };
        steps.push(current);
      }
      if (!final) current.statements.push(statement);
      trailing.push(statement);
      continue;
    }
    if (final) continue;
    // A callee starting: the effect that hosts it draws it, and what the callee traces before
    // its own steps stays with that effect.
    if (HOST.test(line)) continue;
    current = parseStep(line);
    steps.push(current);
    trailing = [];
  }
  // The statements after the last step are its own only while they are its store's bookkeeping
  // (a queue settling the batch that just ended); the rest are the invariants' reads.
  const last = steps.at(-1);
  let own = 0;
  while (!final && own < trailing.length && last && belongsTo(last, trailing[own] as Statement)) own++;
  const finalReads = trailing.slice(own);
  if (!final && last && finalReads.length > 0)
    last.statements.splice(last.statements.length - finalReads.length);
  return { steps, finalReads };
}

function belongsTo(step: Step, statement: Statement): boolean {
  if (step.kind === "batch-end" || step.kind === "sent") return statement.db === `queue:${step.queue}`;
  return false;
}

type Fields = readonly string[];

/**
 * The trace lines other than D1 statements, each with the step it reads as (the fields are the
 * pattern's groups). A line no pattern reads is a note.
 */
const PATTERNS: readonly (readonly [RegExp, (f: Fields) => StepFields | undefined])[] = [
  [/^deliver (\S+)$/, ([inv]) => ({ kind: "deliver", invocation: `${inv}` })],
  [
    /^redeliver (\S+?)(?:: refused, ([\s\S]*))?$/,
    ([inv, refused]) => ({ kind: "redeliver", invocation: `${inv}`, refused }),
  ],
  [
    // Not the host's line for a call that failed, whose message may end in a decision's word.
    /^(\S+) effect #(\d+) (?!failed: )([\s\S]+): (\w+)$/,
    ([inv, effect, label, decision]) =>
      DECISIONS.has(`${decision}`)
        ? {
            kind: "effect",
            invocation: `${inv}`,
            effect: Number(effect),
            label: `${label}`,
            decision: decision as Decision,
          }
        : undefined,
  ],
  [
    /^(\S+) returned ([\s\S]*)$/,
    ([inv, value]) => ({ kind: "returned", invocation: `${inv}`, value: `${value}` }),
  ],
  [/^(\S+) threw ([\s\S]*)$/, ([inv, error]) => ({ kind: "threw", invocation: `${inv}`, error: `${error}` })],
  [
    /^(\S+) answered (\d+) ?([\s\S]*)$/,
    ([inv, status, body]) => ({
      kind: "answered",
      invocation: `${inv}`,
      status: `${status}`,
      body: `${body}`,
    }),
  ],
  [
    /^(\S+) died(?: ([\s\S]*))?$/,
    ([inv, why]) => ({ kind: "died", invocation: `${inv}`, ...(why === undefined ? {} : { why }) }),
  ],
  [/^(\S+) finished$/, ([inv]) => ({ kind: "finished", invocation: `${inv}` })],
  [
    /^(\S+) sent to queue (\S+)$/,
    ([event, queue]) => ({ kind: "sent", event: `${event}`, queue: `${queue}` }),
  ],
  [
    /^(\S+) (succeeded|failed) on queue (\S+?): ([\s\S]*)$/,
    ([inv, outcome, queue, detail]) => ({
      kind: "batch-end",
      invocation: `${inv}`,
      queue: `${queue}`,
      succeeded: outcome === "succeeded",
      detail: `${detail}`,
    }),
  ],
];

/** A step without what every step has. */
type StepFields = Step extends infer S ? (S extends Step ? Omit<S, "line" | "statements"> : never) : never;

function parseStep(line: string): Step {
  for (const [pattern, build] of PATTERNS) {
    const m = line.match(pattern);
    const fields = m ? build(m.slice(1)) : undefined;
    if (fields) return { ...fields, line, statements: [] } as Step;
  }
  return { kind: "note", text: line, line, statements: [] };
}

/** What a D1 outcome looks like (check.rs `describe_result` and its error forms). */
const RESULT = /^(?:\d+ changed|\d+ rows?(?: [\s\S]*)?|error: [\s\S]*|rolled back: [\s\S]*|\d+ statements|)$/;

/**
 * Reads `  D1 <db>[ batch[i]| exec]: <sql>[ [params]] -> <result>`. SQL may itself contain
 * ` -> ` (SQLite's JSON operator) and ` [` (a quoted identifier), so the split points are the
 * first ` -> ` followed by something shaped like a result, and the first ` [` followed by a
 * well-formed parameter list that runs to the end.
 */
export function parseStatement(line: string): Statement | undefined {
  const call = bindingCall(line);
  if (call) return call;
  const head = line.match(/^ {2}D1 (\S+?)( batch\[\d+\]| exec)?: /);
  if (!head) return undefined;
  const rest = line.slice(head[0].length);
  let arrow = -1;
  for (let at = rest.indexOf(" -> "); at >= 0; at = rest.indexOf(" -> ", at + 1)) {
    if (RESULT.test(rest.slice(at + 4))) {
      arrow = at;
      break;
    }
  }
  if (arrow < 0) return undefined;
  const left = rest.slice(0, arrow);
  let sql = left;
  let params: string[] = [];
  for (let at = left.indexOf(" ["); at >= 0; at = left.indexOf(" [", at + 1)) {
    const list = splitParams(left.slice(at + 1));
    if (list) {
      sql = left.slice(0, at);
      params = list;
      break;
    }
  }
  return { db: head[1] as string, part: (head[2] ?? "").trim(), sql, params, result: rest.slice(arrow + 4) };
}

/**
 * `  KV:<binding> <call> [-> <result>]`, `  R2:<binding> <call> [-> <result>]`,
 * `  DO:<class>/<object> storage.<call> …` or
 * `  Fetch:<origin> <method> <path> -> <status>`: a call the host traces in place of its own
 * bookkeeping statements, kept as a statement of the binding (`db` is `KV:<binding>`, `R2:<binding>`,
 * `DO:<class>/<object>` or `Fetch:<origin>`), so that it is drawn with the effect that made it.
 */
function bindingCall(line: string): Statement | undefined {
  const m = line.match(/^ {2}((?:KV|R2|DO|Fetch):\S+) ([\s\S]*)$/);
  if (!m) return undefined;
  const text = m[2] as string;
  // A Durable Object's SQL, traced as D1's is: its statement, parameters and result.
  if (m[1]?.startsWith("DO:") && text.startsWith("SQL: ")) {
    const sql = parseStatement(`  D1 ${m[1]}: ${text.slice("SQL: ".length)}`);
    if (sql) return { ...sql, sql: `SQL: ${sql.sql}` };
  }
  const arrow = text.lastIndexOf(" -> ");
  return arrow < 0
    ? { db: m[1] as string, part: "", sql: text, params: [], result: "" }
    : { db: m[1] as string, part: "", sql: text.slice(0, arrow), params: [], result: text.slice(arrow + 4) };
}

/** `["a", 1, null, x'00']` → its items as printed, or undefined when it is not such a list. */
function splitParams(text: string): string[] | undefined {
  if (!text.startsWith("[") || !text.endsWith("]")) return undefined;
  const items: string[] = [];
  const token = /"(?:[^"\\]|\\.)*"|x'[0-9a-f]*'|null|-?inf|NaN|-?\d+(?:\.\d+)?(?:e[+-]?\d+)?/y;
  let at = 1;
  const end = text.length - 1;
  if (at === end) return items;
  for (let n = 0; n <= text.length; n++) {
    token.lastIndex = at;
    const m = token.exec(text);
    if (!m) return undefined;
    items.push(m[0]);
    at = token.lastIndex;
    if (at === end) return items;
    if (!text.startsWith(", ", at)) return undefined;
    at += 2;
  }
  return undefined;
}

/** A printed parameter as the value it stands for, for matching against an invariant's message. */
export function paramText(param: string): string {
  if (param.startsWith('"')) {
    try {
      return JSON.parse(param) as string;
    } catch {
      return param.slice(1, -1);
    }
  }
  return param;
}
