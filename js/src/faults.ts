/**
 * What a fault is called in reports. A transient fault is the binding misbehaving as Cloudflare
 * documents, so it is named for what that binding does: a stale KV read, KV's or R2's 429 on a
 * key written within the second, a Durable Object reset, a queue send the broker fails, or a lost
 * connection (D1, fetch). The JSON keeps the engine's kind, `transient_error`, with the label. A
 * `lost_response` (the call took effect and its answer was lost) keeps its name everywhere.
 */

export function faultName(kind: string, label: string): string {
  if (kind !== "transient_error") return kind;
  if (label.startsWith("KV:")) return /\s(put|delete)$/.test(label) ? "rate_limited" : "stale_read";
  if (label.startsWith("R2:")) return "rate_limited";
  if (label.startsWith("DO:")) return "reset";
  // A queue's transient fault is its producer's send failing (only sends offer one).
  if (label.startsWith("Queue:")) return "send_failed";
  return "network_error";
}
