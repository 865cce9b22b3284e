/**
 * The payment API as the scenarios script it: `POST /v1/charges` is idempotent per
 * `Idempotency-Key`, as real payment APIs are. The script keeps no state (a scenario's module
 * state would outlive a run); instead the charge id is derived from the key, so the same key
 * always answers with the same charge and a different key is a different charge.
 */

/** FNV-1a of `text` as 8 hex digits: a deterministic charge id. */
function fnv1a(text: string): string {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash.toString(16).padStart(8, "0");
}

export async function paymentsApi(request: Request): Promise<Response> {
  const url = new URL(request.url);
  if (request.method !== "POST" || url.pathname !== "/v1/charges") {
    return Response.json({ error: { message: `no route ${request.method} ${url.pathname}` } }, { status: 404 });
  }
  if (request.headers.get("authorization") !== "Bearer sk_test_store") {
    return Response.json({ error: { message: "invalid API key" } }, { status: 401 });
  }
  const key = request.headers.get("idempotency-key");
  if (!key) return Response.json({ error: { message: "Idempotency-Key is required" } }, { status: 400 });
  const { amount, currency } = (await request.json()) as { amount: number; currency: string };
  return Response.json({ id: `ch_${fnv1a(key)}`, amount, currency, status: "succeeded" });
}
