import { d1Schema, defineScenario, http, invariant, outbound, secrets } from "eutaxy/cloudflare";
import { paymentsApi } from "./provider.ts";

export default defineScenario({
  name: "store-fixed",
  worker: { entry: "./worker.fixed.ts", config: "./wrangler.jsonc" },
  setup: [
    d1Schema("DB", "./schema.sql"),
    secrets({ PAYMENTS_API_KEY: "sk_test_store" }),
    // The payment API is not reached: these scripts answer the store's fetch calls.
    outbound({ "https://api.payments.example/": paymentsApi }),
  ],
  // A client pays two orders and resends a request it got no answer for, up to two times.
  drive: http(
    [
      { path: "/orders/o-1/pay", body: { amountCents: 2500 } },
      { path: "/orders/o-2/pay", body: { amountCents: 900 } },
    ],
    { retries: 2 },
  ),
  invariants: [
    // An order is charged once: the provider's charges the store recorded, per order.
    invariant("one-charge-per-order", (state) => {
      const twice = state.d1(
        "DB",
        "SELECT order_id, COUNT(*) AS n, GROUP_CONCAT(charge_id, ', ') AS ids FROM charges GROUP BY order_id HAVING n > 1 ORDER BY order_id",
      );
      const first = twice[0];
      return first === undefined ? true : `order ${first.order_id} was charged ${first.n} times (${first.ids})`;
    }),
  ],
  bounds: { maxFaultsPerRun: 1, maxRedeliveries: 2, maxConcurrentInvocations: 1, budgetMs: 5000 },
});
