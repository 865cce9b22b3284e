/**
 * What a fault is called and what it means, in one sentence a Workers developer can read without
 * knowing the engine. The names are the report's (report.ts): a transient fault is named for what
 * the binding does, as Cloudflare documents it.
 */

import { faultName } from "../faults.ts";
import type { Decision } from "./trace.ts";

export { faultName };

/** One sentence: what happened at the effect and what the invocation saw. */
export function faultMeaning(decision: Decision, invocation: string, label: string): string {
  switch (faultName(decision, label)) {
    case "crash_before":
      return `${invocation} is killed just before this call: the call never happens, and ${invocation} ${neverEnds(invocation)}.`;
    case "crash_after":
      return `The call happens and what it did is kept, but ${invocation} is killed before it sees the result, so it ${neverEnds(invocation)}.`;
    case "stale_read":
      return "KV answers with the value from before the key's latest write, as its eventual consistency allows (up to 60 s).";
    case "rate_limited":
      return `${label.startsWith("R2:") ? "R2" : "KV"} refuses the write with a 429: the key was written less than a second earlier.`;
    case "send_failed":
      return `The queue's broker fails the send: nothing is enqueued, and ${invocation} sees the error.`;
    case "reset":
      return "The Durable Object is reset: its in-memory state is lost (its storage survives) and the call fails.";
    case "lost_response":
      return `The call happens and what it did is kept, but its answer is lost on the way back: ${invocation} sees it fail as if it had not happened, and lives on.`;
    default:
      return `The call fails with "Network connection lost." and does not happen; ${invocation} sees the error.`;
  }
}

/** What a killed invocation never does: a request's answer, a callee's result, else its end. */
export function neverEnds(invocation: string): string {
  if (invocation.includes("/")) return "never returns to its caller";
  return invocation.startsWith("req-") ? "never answers" : "never finishes";
}
