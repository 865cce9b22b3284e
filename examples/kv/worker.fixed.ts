/**
 * The coupons Worker, fixed: D1 decides who holds a coupon, in one statement, and KV is only
 * what it is good at, a fast read of the coupon's terms and a hint that it is taken.
 * `eutaxy check ./coupons.fixed.sim.ts` reports BOUNDED.
 */

interface Env {
  readonly COUPONS: KVNamespace;
  readonly DB: D1Database;
}

interface Coupon {
  readonly percentOff: number;
  /** The order that redeemed it, or null while it is free: a hint, possibly stale. */
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
      // A fresh "used" answer saves a database round trip; a stale "free" one is caught below.
      if (coupon.usedBy !== null && coupon.usedBy !== orderId) {
        return Response.json({ error: "coupon already used" }, { status: 409 });
      }
      // The redemption happens only if no order holds the coupon yet: D1 runs the statement
      // alone, so two orders cannot both see it free. A resend of this order changes nothing.
      await env.DB.prepare(
        `INSERT OR IGNORE INTO redemptions (order_id, coupon, percent_off)
         SELECT ?1, ?2, ?3 WHERE NOT EXISTS (SELECT 1 FROM redemptions WHERE coupon = ?2)`,
      )
        .bind(orderId, code, coupon.percentOff)
        .run();
      const holder = await env.DB.prepare("SELECT order_id FROM redemptions WHERE coupon = ?1")
        .bind(code)
        .first<string>("order_id");
      if (holder !== orderId) return Response.json({ error: "coupon already used" }, { status: 409 });
      try {
        await env.COUPONS.put(`coupon:${code}`, JSON.stringify({ ...coupon, usedBy: orderId }));
      } catch {
        // The hint is only a hint: KV may refuse a second write to the key within a second
        // (429), and the redemption in D1 stands either way.
      }
      return Response.json({ orderId, coupon: code, percentOff: coupon.percentOff });
    }
    return new Response("not found", { status: 404 });
  },
};
