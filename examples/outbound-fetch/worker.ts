/**
 * A store Worker that charges an order through an external payment API over `fetch`
 * (`POST https://api.payments.example/v1/charges`), then records the provider's charge in D1.
 * The API is idempotent per `Idempotency-Key` header, as payment APIs promise, so the store
 * sends a fresh key with every charge request. Clients resend a payment request that got no
 * answer. Run `eutaxy check ./pay.sim.ts` to see what the key protects against and what it
 * does not.
 */

export interface Env {
  readonly DB: D1Database;
  readonly PAYMENTS_API_KEY: string;
}

/** The key the provider deduplicates by; the planted store draws a new one per request. */
export function freshKey(_orderId: string): string {
  return crypto.randomUUID();
}

export function store(key: (orderId: string) => string): ExportedHandler<Env> {
  return {
    async fetch(request: Request, env: Env): Promise<Response> {
      const match = /^\/orders\/([\w-]+)\/pay$/.exec(new URL(request.url).pathname);
      if (request.method !== "POST" || !match?.[1]) return new Response("not found", { status: 404 });
      const orderId = match[1];
      const { amountCents } = (await request.json()) as { amountCents: number };

      const response = await fetch("https://api.payments.example/v1/charges", {
        method: "POST",
        headers: {
          authorization: `Bearer ${env.PAYMENTS_API_KEY}`,
          "content-type": "application/json",
          "idempotency-key": key(orderId),
        },
        body: JSON.stringify({ amount: amountCents, currency: "usd", metadata: { order_id: orderId } }),
      });
      if (!response.ok) return new Response("payment failed", { status: 502 });
      const charge = (await response.json()) as { id: string };

      // Recorded by the provider's charge id: the same charge is never recorded twice.
      await env.DB.prepare(
        "INSERT INTO charges (charge_id, order_id, amount_cents) VALUES (?1, ?2, ?3) ON CONFLICT (charge_id) DO NOTHING",
      )
        .bind(charge.id, orderId, amountCents)
        .run();
      return Response.json({ orderId, chargeId: charge.id });
    },
  };
}

export default store(freshKey);
