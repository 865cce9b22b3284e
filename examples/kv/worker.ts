/**
 * The coupons Worker: a shop's one-time coupon codes.
 *
 * - `POST /coupons/<code>` with `{ percentOff }` creates a coupon. Coupons live in KV, where
 *   every location reads them fast.
 * - `POST /orders/<order>/redeem` with `{ coupon }` applies a coupon to an order: the discount is
 *   recorded in D1 and the coupon is marked used in KV, so that the next order is turned away.
 *
 * A resend of the same redemption is harmless: an order holds one coupon at most (the insert
 * ignores a second row for the order). The planted bug: whether a coupon is still free is
 * decided by a KV read, and KV is eventually consistent (see README.md).
 */

interface Env {
  readonly COUPONS: KVNamespace;
  readonly DB: D1Database;
}

interface Coupon {
  readonly percentOff: number;
  /** The order that redeemed it, or null while it is free. */
  readonly usedBy: string | null;
}

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    const { pathname } = new URL(request.url);
    const create = pathname.match(/^\/coupons\/([^/]+)$/);
    if (request.method === "POST" && create) {
      const { percentOff } = await request.json<{ percentOff: number }>();
      const coupon: Coupon = { percentOff, usedBy: null };
      await env.COUPONS.put(`coupon:${create[1]}`, JSON.stringify(coupon));
      return Response.json(coupon, { status: 201 });
    }
    const redeem = pathname.match(/^\/orders\/([^/]+)\/redeem$/);
    if (request.method === "POST" && redeem) {
      const orderId = redeem[1] as string;
      const { coupon: code } = await request.json<{ coupon: string }>();
      const coupon = await env.COUPONS.get<Coupon>(`coupon:${code}`, "json");
      if (!coupon) return Response.json({ error: "no such coupon" }, { status: 404 });
      if (coupon.usedBy !== null && coupon.usedBy !== orderId) {
        return Response.json({ error: "coupon already used" }, { status: 409 });
      }
      await env.DB.prepare(
        "INSERT OR IGNORE INTO redemptions (order_id, coupon, percent_off) VALUES (?1, ?2, ?3)",
      )
        .bind(orderId, code, coupon.percentOff)
        .run();
      await env.COUPONS.put(`coupon:${code}`, JSON.stringify({ ...coupon, usedBy: orderId }));
      return Response.json({ orderId, coupon: code, percentOff: coupon.percentOff });
    }
    return new Response("not found", { status: 404 });
  },
};
