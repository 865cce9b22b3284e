/**
 * The run in a few sentences, one per delivery: what each top-level invocation called, where the
 * fault struck, which of its writes the invariant is about, and how it ended. It sits above the
 * diagram so that the bug can be read before the details.
 */

import type { Culprits } from "./culprits.ts";
import { esc, escShort } from "./escape.ts";
import { faultName, neverEnds } from "./faults.ts";
import { deliveryOf, parentOf, resendCause } from "./lanes.ts";
import type { Step } from "./trace.ts";

/** Sentences at most; a longer run is in the diagram. */
const ITEMS_MAX = 40;
/** Calls named per delivery at most. */
const CALLS_MAX = 6;

interface Item {
  head: string;
  calls: string[];
  more: number;
  /** Why its writes matter to the invariant (the marks on them in the diagram). */
  wrote: Set<string>;
  end: string;
}

/** Calls named at most in the sentence that gives the order in which interleaved calls ran. */
const ORDER_MAX = 12;

export function renderStory(steps: readonly Step[], culprits: Culprits | undefined, broke: string): string {
  const items: (Item | string)[] = [];
  const open = new Map<string, Item>();
  // Each delivery's calls in the order they ran, whoever made them: the sentences above tell
  // each delivery's calls apart, which hides the order a race needs.
  const order: { readonly root: string; readonly label: string }[] = [];
  for (const step of steps) {
    if (step.kind === "effect" && order.length <= ORDER_MAX) {
      order.push({ root: step.invocation.split("/")[0] ?? "", label: step.label });
    }
    if (items.length > ITEMS_MAX) break;
    const root = "invocation" in step ? (step.invocation.split("/")[0] ?? "") : "";
    const item = open.get(root);
    for (const s of step.statements) {
      const reason = culprits?.statements.get(s);
      if (item && reason && item.wrote.size < CALLS_MAX) item.wrote.add(reason);
    }
    switch (step.kind) {
      case "deliver": {
        if (parentOf(step.invocation)) break;
        const { event, delivery } = deliveryOf(step.invocation);
        const what = delivery > 1 ? `delivery ${delivery} of ${event}` : event;
        const fresh: Item = {
          head: `<b>${esc(step.invocation)}</b> (${esc(what)})`,
          calls: [],
          more: 0,
          wrote: new Set(),
          end: "",
        };
        open.set(step.invocation, fresh);
        items.push(fresh);
        break;
      }
      case "effect": {
        if (!item) break;
        const nested = step.invocation !== root;
        const faulted = step.decision !== "proceed";
        // A callee's calls are told only where a fault struck them.
        if (nested && !faulted) break;
        if (item.calls.length >= CALLS_MAX && !faulted) {
          item.more++;
          break;
        }
        const who = nested ? `${esc(step.invocation)}'s ` : "";
        const fault = faulted
          ? ` <span class="x-inline">✕ ${esc(faultName(step.decision, step.label))}</span>`
          : "";
        item.calls.push(`${who}<code>${esc(step.label)}</code>${fault}`);
        break;
      }
      case "answered":
        if (item && step.invocation === root)
          item.end = `answers ${esc(step.status)} <code>${escShort(step.body, 120)}</code>`;
        break;
      case "threw":
        if (item && step.invocation === root) item.end = `throws <code>${escShort(step.error, 120)}</code>`;
        break;
      case "died":
        if (item && step.invocation === root) {
          item.end = `<b class="bad">dies, so it ${esc(neverEnds(step.invocation))}</b>`;
        }
        break;
      case "finished":
        if (item && step.invocation === root) item.end = "finishes";
        break;
      case "batch-end":
        if (item)
          item.end = step.succeeded ? `succeeds (${esc(step.detail)})` : `fails (${esc(step.detail)})`;
        break;
      case "redeliver": {
        const { event } = deliveryOf(step.invocation);
        if (step.refused !== undefined)
          items.push(`${esc(event)} is not delivered again (${esc(step.refused)}).`);
        else if (event.startsWith("req-"))
          items.push(
            `${sentenceStart(resendCause(steps, step.invocation))}, so the client resends ${esc(event)} as <b>${esc(step.invocation)}</b>.`,
          );
        else items.push(`The platform delivers ${esc(event)} again as <b>${esc(step.invocation)}</b>.`);
        break;
      }
      case "sent":
        items.push(`${esc(step.event)} is sent to queue ${esc(step.queue)}.`);
        break;
      case "returned":
      case "note":
        break;
    }
  }
  const lines = items.slice(0, ITEMS_MAX).map((item) => {
    if (typeof item === "string") return `<li>${item}</li>`;
    const more = item.more ? `, and ${item.more} more` : "";
    const calls = item.calls.length ? `calls ${item.calls.join(", then ")}${more}` : "makes no calls";
    const tags = [...item.wrote].map((reason) => `<span class="tagged">${esc(reason)}</span>`);
    const wrote = tags.length ? `; writes ${culprits?.unique ? "a " : ""}${tags.join(", ")}` : "";
    return `<li>${item.head} ${calls}${wrote}${item.end ? `; ${item.end}` : ""}.</li>`;
  });
  if (items.length > ITEMS_MAX) lines.push("<li>… (the rest is in the diagram)</li>");
  if (interleaved(order.map((o) => o.root))) {
    const shown = order.slice(0, ORDER_MAX).map((o) => `${esc(o.root)} <code>${esc(o.label)}</code>`);
    const more = order.length > ORDER_MAX ? ", …" : "";
    lines.push(
      `<li>The calls of different deliveries interleave, in this order: ${shown.join(", ")}${more}.</li>`,
    );
  }
  if (broke) lines.push(`<li class="broke">${broke}</li>`);
  return `<ol class="story">${lines.join("\n")}</ol>`;
}

/** Whether some delivery made a call, another delivery one, and the first one again. */
function interleaved(roots: readonly string[]): boolean {
  const done = new Set<string>();
  for (let i = 1; i < roots.length; i++) {
    const previous = roots[i - 1] as string;
    if (roots[i] === previous) continue;
    done.add(previous);
    if (done.has(roots[i] as string)) return true;
  }
  return false;
}

/** A sentence's first words: "No answer", but an invocation's id as it is written (`req-1#1 …`). */
function sentenceStart(text: string): string {
  return text === "no answer" ? "No answer" : esc(text);
}
