import { d1Schema, defineScenario, http, invariant } from "eutaxy/cloudflare";

export default defineScenario({
  name: "coupons-fixed",
  worker: { entry: "./worker.fixed.ts", config: "./wrangler.jsonc" },
  setup: [d1Schema("DB", "./schema.sql")],
  // An admin creates a one-time coupon; two customers try to redeem it for their orders.
  // Clients resend a request they got no answer for, up to twice.
  drive: http(
    [
      { path: "/coupons/SPRING", body: { percentOff: 20 } },
      { path: "/orders/o-1/redeem", body: { coupon: "SPRING" } },
      { path: "/orders/o-2/redeem", body: { coupon: "SPRING" } },
    ],
    { retries: 2 },
  ),
  invariants: [
    // A one-time coupon is redeemed by one order at most, whatever KV says.
    invariant("coupon-redeemed-once", (state) => {
      const twice = state.d1(
        "DB",
        "SELECT coupon, group_concat(order_id, ', ') AS orders FROM redemptions GROUP BY coupon HAVING COUNT(*) > 1",
      );
      const first = twice[0];
      if (!first) return true;
      const kv = state.kv("COUPONS", `coupon:${first.coupon}`);
      return `coupon ${first.coupon} was redeemed by orders ${first.orders}; KV holds ${kv}`;
    }),
  ],
  bounds: { maxFaultsPerRun: 1, maxRedeliveries: 2, maxConcurrentInvocations: 1, budgetMs: 5000 },
});
