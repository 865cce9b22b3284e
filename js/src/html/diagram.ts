/**
 * The sequence diagram of one run, as HTML and CSS only (a grid: one column per lifeline, one row
 * per step), so it reads without scripts, wraps long SQL instead of cutting it, and prints. The
 * fault is a red ✕ where it struck, a death a red ✕ that ends a lifeline, and the writes that made
 * the invariant break are marked where they happened.
 */

import type { Culprits } from "./culprits.ts";
import { esc, escShort } from "./escape.ts";
import { faultMeaning, faultName } from "./faults.ts";
import { deliveryOf, type Lane, layout, parentOf, type Row, resendCause, targetOf } from "./lanes.ts";
import type { Statement, Step } from "./trace.ts";

/** Rows drawn at most; the rest of a very long run is in the full trace below the diagram. */
const ROWS_MAX = 2_000;
/** Lifelines drawn at most: a wider diagram is no longer readable, so it stops at this many. */
const LANES_MAX = 40;
/** The fewest lanes an arrow's label may use, so that a call between neighbours stays readable. */
const LABEL_LANES_MIN = 3;

export interface Diagram {
  readonly html: string;
  /** The diagram's step number of every statement, for pointing at them from elsewhere. */
  readonly stepOf: ReadonlyMap<Statement, number>;
}

export function renderDiagram(steps: readonly Step[], culprits: Culprits | undefined): Diagram {
  const drawn = steps.slice(0, drawnSteps(steps));
  const { lanes, rows } = layout(drawn);
  const stepOf = new Map<Statement, number>();
  rows.forEach((row, i) => {
    for (const s of row.step.statements) stepOf.set(s, i + 1);
  });
  const effects = new Map<string, Step & { kind: "effect" }>();
  for (const step of steps)
    if (step.kind === "effect") effects.set(`${step.invocation}:${step.effect}`, step);
  const context: Context = { steps, lanes, effects, culprits };

  const parts: string[] = [];
  lanes.forEach((lane, i) => {
    parts.push(
      `<div class="head head-${lane.kind}" style="grid-row:1;grid-column:${i + 2}"><b>${esc(lane.title)}</b><small>${esc(lane.subtitle)}</small></div>`,
    );
  });
  parts.push(...lifelines(lanes, rows));
  rows.forEach((row, i) => {
    const r = i + 2;
    const tone = toneOf(row.step, culprits);
    if (tone) parts.push(`<div class="band band-${tone}" style="grid-row:${r};grid-column:1 / -1"></div>`);
    parts.push(`<div class="num" style="grid-row:${r};grid-column:1">${i + 1}</div>`);
    parts.push(renderRow(row, r, context));
  });
  if (steps.length > drawn.length) {
    parts.push(
      `<div class="note" style="grid-row:${rows.length + 2};grid-column:2 / -1">… ${steps.length - drawn.length} more steps: see the full trace below.</div>`,
    );
  }
  // The last column has no lifeline: it is room for the labels of arrows to the last lifeline.
  // It is as wide as a lane, since an arrow's ends are placed as fractions of the lanes it spans.
  const columns = `2.5rem repeat(${lanes.length + 1}, minmax(9.5rem, 1fr))`;
  return {
    html: `<div class="scroll"><div class="seq" role="figure" aria-label="sequence diagram of the run" style="grid-template-columns:${columns}">${parts.join("\n")}</div></div>`,
    stepOf,
  };
}

/** How many steps to draw: at most ROWS_MAX, and no more than fit in LANES_MAX lifelines. */
function drawnSteps(steps: readonly Step[]): number {
  const most = Math.min(steps.length, ROWS_MAX);
  if (layout(steps.slice(0, most)).lanes.length <= LANES_MAX) return most;
  // Lifelines only grow with steps, so the longest prefix that fits is found by bisection.
  let fits = 0;
  let over = most;
  while (over - fits > 1) {
    const mid = (fits + over) >> 1;
    if (layout(steps.slice(0, mid)).lanes.length <= LANES_MAX) fits = mid;
    else over = mid;
  }
  return fits;
}

interface Context {
  readonly steps: readonly Step[];
  readonly lanes: readonly Lane[];
  readonly effects: ReadonlyMap<string, Step & { kind: "effect" }>;
  readonly culprits: Culprits | undefined;
}

/** Faults and deaths get a red band across the diagram, the invariant's writes an amber one. */
function toneOf(step: Step, culprits: Culprits | undefined): "fault" | "culprit" | undefined {
  if (step.kind === "effect" && step.decision !== "proceed") return "fault";
  if (step.kind === "died") return "fault";
  if (culprits && step.statements.some((s) => culprits.statements.has(s))) return "culprit";
  return undefined;
}

/**
 * Sources and stores live through the whole run; an invocation's lifeline runs from its first
 * step to its last, so lifelines of invocations that are over do not clutter the rest.
 */
function lifelines(lanes: readonly Lane[], rows: readonly Row[]): string[] {
  const first = new Map<number, number>();
  const last = new Map<number, number>();
  rows.forEach((row, i) => {
    for (const lane of [row.from, row.to]) {
      if (lane < 0) continue;
      if (!first.has(lane)) first.set(lane, i);
      last.set(lane, i);
    }
  });
  return lanes.map((lane, i) => {
    const whole = lane.kind !== "invocation";
    const start = whole ? 2 : (first.get(i) ?? 0) + 2;
    const end = whole ? rows.length + 2 : (last.get(i) ?? 0) + 3;
    return `<div class="life life-${lane.kind}" style="grid-row:${start} / ${end};grid-column:${i + 2}"></div>`;
  });
}

function renderRow(row: Row, r: number, context: Context): string {
  const { step } = row;
  if (row.from < 0) {
    return `<div class="note" style="grid-row:${r};grid-column:2 / -1">${label(step, row, context)}</div>`;
  }
  if (row.from === row.to) return mark(row, r, context);
  const lo = Math.min(row.from, row.to);
  const hi = Math.max(row.from, row.to);
  // A short arrow's label gets the room of LABEL_LANES_MIN lanes: the row is its own, so the
  // text may run on past the arrow's end, into the spare column right of the last lifeline.
  const c0 = lo;
  const c1 = Math.max(hi, Math.min(context.lanes.length, lo + LABEL_LANES_MIN - 1));
  const span = c1 - c0 + 1;
  const classes = ["arrow", row.to < row.from ? "leftward" : "rightward"];
  if (row.dashed) classes.push("ret");
  let marker = "";
  if (step.kind === "effect" && step.decision !== "proceed") {
    classes.push("fault", `fault-${step.decision}`);
    // A crash strikes the calling invocation; a transient fault is the binding misbehaving.
    const at = step.decision === "transient_error" || step.decision === "lost_response" ? "to" : "from";
    marker = `<span class="x x-${at}" title="${esc(faultName(step.decision, step.label))}">✕</span>`;
  }
  if (step.kind === "returned" && lostResult(step.invocation, context)) classes.push("lost");
  if (step.kind === "batch-end" && !step.succeeded) classes.push("failed");
  const left = `calc(100% * ${lo - c0 + 0.5} / ${span})`;
  const right = `calc(100% * ${c1 - hi + 0.5} / ${span})`;
  return `<div class="${classes.join(" ")}" style="grid-row:${r};grid-column:${c0 + 2} / ${c1 + 3}"><div class="label" style="padding:0 0.5rem 0 calc(${left} + 0.6rem)">${label(step, row, context)}</div><div class="line" style="margin:0 ${right} 0 ${left}">${marker}</div></div>`;
}

/** A mark on one lifeline (a death, a resend), with its text running on to its right. */
function mark(row: Row, r: number, context: Context): string {
  const lane = row.from;
  const hi = Math.min(lane + LABEL_LANES_MIN - 1, context.lanes.length);
  const span = hi - lane + 1;
  const centre = `calc(100% * 0.5 / ${span})`;
  const kind = row.step.kind === "died" ? "dead" : `mark-${row.step.kind}`;
  const symbol = row.step.kind === "died" ? "✕" : row.step.kind === "redeliver" ? "↻" : "!";
  return `<div class="mark ${kind}" style="grid-row:${r};grid-column:${lane + 2} / ${hi + 3}"><span class="dot" style="left:${centre}">${symbol}</span><div class="label" style="padding-left:calc(${centre} + 1.5rem)">${label(row.step, row, context)}</div></div>`;
}

/** Whether a callee's result never reached its caller, because the caller crashed after the call. */
function lostResult(invocation: string, context: Context): boolean {
  const hosted = parentOf(invocation);
  if (!hosted) return false;
  return context.effects.get(`${hosted.parent}:${hosted.effect}`)?.decision === "crash_after";
}

function label(step: Step, row: Row, context: Context): string {
  switch (step.kind) {
    case "deliver": {
      const { event, delivery } = deliveryOf(step.invocation);
      const what = delivery > 1 ? `<b>resend</b> of ${esc(event)}: deliver ` : "deliver ";
      return `${what}<b>${esc(step.invocation)}</b>${statements(step, undefined, context)}`;
    }
    case "effect":
      return effectLabel(step, row, context);
    case "returned": {
      const hosted = parentOf(step.invocation);
      const lost =
        hosted && lostResult(step.invocation, context)
          ? `<div class="lost-why">never seen: ${esc(hosted.parent)} is killed before it reads this (crash_after), so this result is lost</div>`
          : "";
      return `returned <code>${escShort(step.value)}</code>${lost}${statements(step, undefined, context)}`;
    }
    case "threw": {
      const top = !parentOf(step.invocation) && deliveryOf(step.invocation).event.startsWith("req-");
      const then = top ? " (the client gets a 500)" : "";
      return `<b class="bad">threw</b> <code>${escShort(step.error)}</code>${then}${statements(step, undefined, context)}`;
    }
    case "answered": {
      const bad = Number(step.status) >= 400 ? " bad" : "";
      return `answered <b class="status${bad}">${esc(step.status)}</b> <code>${escShort(step.body)}</code>${statements(step, undefined, context)}`;
    }
    case "finished":
      return `finished${statements(step, undefined, context)}`;
    case "died":
      return `<b class="bad">${esc(step.invocation)} died</b>${step.why === undefined ? "" : ` (${esc(step.why)})`}: ${esc(deathMeaning(step.invocation))}${statements(step, undefined, context)}`;
    case "redeliver": {
      const { event } = deliveryOf(step.invocation);
      if (step.refused !== undefined) {
        return `no ${esc(step.invocation)}: ${esc(event)} is not delivered again (${esc(step.refused)})${statements(step, undefined, context)}`;
      }
      const who = event.startsWith("req-")
        ? `${esc(resendCause(context.steps, step.invocation))}, so the client resends`
        : "the platform delivers it again";
      return `${who}: <b>${esc(step.invocation)}</b>${statements(step, undefined, context)}`;
    }
    case "sent":
      return `${esc(step.event)} sent to queue <b>${esc(step.queue)}</b>${statements(step, undefined, context)}`;
    case "batch-end": {
      const outcome = step.succeeded ? "succeeded" : `<b class="bad">failed</b>`;
      return `${outcome}: ${esc(step.detail)}${statements(step, undefined, context)}`;
    }
    case "note":
      return `${escShort(step.text)}${statements(step, undefined, context)}`;
  }
}

function effectLabel(step: Step & { kind: "effect" }, row: Row, context: Context): string {
  const target = targetOf(step.label);
  const toLane = context.lanes[row.to];
  const hosted = toLane?.kind === "invocation" && toLane.title !== target.title;
  const call = hosted
    ? `<b>${esc(step.label)}</b>, run as ${esc(toLane.title)}`
    : toLane?.title === target.title
      ? `<b>${esc(target.call)}</b>`
      : `<b>${esc(step.label)}</b>`;
  let fault = "";
  if (step.decision !== "proceed") {
    const name = faultName(step.decision, step.label);
    fault = `<div class="fault-box"><span class="fault-name">✕ fault: ${esc(name)}</span> ${esc(faultMeaning(step.decision, step.invocation, step.label))}</div>`;
  }
  const never = step.decision === "crash_before" ? ` <span class="never">(never made)</span>` : "";
  // The D1 statements a D1 effect ran, the KV call a KV effect made, or the status an outbound
  // fetch got are the effect itself; any other statements are the binding's own bookkeeping
  // (Durable Object storage), kept folded.
  const own = target.key.startsWith("store:D1:")
    ? target.title.slice(3)
    : target.key.startsWith("store:KV:")
      ? target.title
      : target.key.startsWith("store:fetch ")
        ? `Fetch:${target.title.slice("fetch ".length)}`
        : undefined;
  return `<span class="eid">effect #${step.effect}</span> ${call}${never}${fault}${statements(step, own, context)}`;
}

function deathMeaning(invocation: string): string {
  if (parentOf(invocation)) return "its caller's call fails with Network connection lost.";
  const { event } = deliveryOf(invocation);
  if (event.startsWith("req-")) return "it never answers, so the client gets no answer.";
  if (event.startsWith("batch-")) return "the batch is not acknowledged, so the queue will retry it.";
  return "it never finishes.";
}

function statements(step: Step, ownDb: string | undefined, context: Context): string {
  if (step.statements.length === 0) return "";
  const culprits = context.culprits;
  const shown: Statement[] = [];
  const folded: Statement[] = [];
  for (const s of step.statements) {
    if (s.db === ownDb || culprits?.statements.has(s)) shown.push(s);
    else folded.push(s);
  }
  let html = shown.map((s) => statementHtml(s, culprits)).join("");
  if (folded.length > 0) {
    const stores = [...new Set(folded.map((s) => s.db))].map(storeName).join(", ");
    const n = folded.length;
    html += `<details class="folded"><summary>${n} statement${n === 1 ? "" : "s"} on ${esc(stores)}</summary>${folded.map((s) => statementHtml(s, culprits)).join("")}</details>`;
  }
  return html;
}

/** A store's internal database as a user knows it: `kv:COUPONS` → `KV:COUPONS` storage. */
function storeName(db: string): string {
  if (db.startsWith("KV:") || db.startsWith("R2:") || db.startsWith("DO:")) return db;
  if (db.startsWith("Fetch:")) return `fetch ${db.slice("Fetch:".length)}`;
  if (db.startsWith("kv:")) return `KV:${db.slice(3)} storage`;
  if (db.startsWith("r2:")) return `R2:${db.slice(3)} storage`;
  if (db.startsWith("do:")) return `Durable Object ${db.split(":")[1] ?? ""} storage`;
  if (db.startsWith("queue:")) return `queue ${db.slice(6)} storage`;
  return `D1:${db}`;
}

export function statementHtml(s: Statement, culprits: Culprits | undefined): string {
  const culprit = culprits?.statements.has(s);
  const part = s.part ? `<span class="part">${esc(s.part)}</span> ` : "";
  const params = s.params.length ? ` <code class="params">[${escShort(s.params.join(", "))}]</code>` : "";
  const reason = culprits?.statements.get(s);
  const tag = reason ? ` <span class="tag">${esc(reason)}</span>` : "";
  const result = s.result === "" ? "" : ` <span class="res">→ ${escShort(s.result)}</span>`;
  return `<div class="stmt${culprit ? " culprit" : ""}">${part}<code class="sql">${escShort(s.sql)}</code>${params}${result}${tag}</div>`;
}
