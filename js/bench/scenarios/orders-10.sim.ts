// Benchmark only: ten orders through the service-binding example's two Workers (the fixed
// checkout), two faults per run and two invocations live at once. Its tree is far larger than the
// budget, so the figure is runs per second within the budget, not a verdict.
import { callee, d1Rows, d1Schema, defineScenario, http, unique } from "eutaxy/cloudflare";
import { orderRequests } from "../orders.ts";

const example = "../../../examples/service-binding";

export default defineScenario({
  name: "bench-orders-10",
  worker: { entry: `${example}/worker.fixed.ts`, config: `${example}/wrangler.jsonc` },
  setup: [
    callee("PAYMENTS", {
      entry: `${example}/payments/worker.ts`,
      config: `${example}/payments/wrangler.jsonc`,
    }),
    d1Schema("payments/DB", `${example}/payments/schema.sql`),
  ],
  drive: http(orderRequests(10), { retries: 3 }),
  invariants: [unique("one-charge-per-order", d1Rows("payments/DB", "charges"), "order_id")],
  bounds: { maxFaultsPerRun: 2, maxRedeliveries: 3, maxConcurrentInvocations: 2, budgetMs: 3000 },
});
