// Benchmark only: the service-binding example's two orders (the fixed checkout) with both
// invocations live at once and one fault per run. Small enough to explore to BOUNDED with and
// without partial-order reduction, which the bench compares.
import { callee, d1Rows, d1Schema, defineScenario, http, unique } from "eutaxy/cloudflare";
import { orderRequests } from "../orders.ts";

const example = "../../../examples/service-binding";

export default defineScenario({
  name: "bench-pair-concurrent",
  worker: { entry: `${example}/worker.fixed.ts`, config: `${example}/wrangler.jsonc` },
  setup: [
    callee("PAYMENTS", {
      entry: `${example}/payments/worker.ts`,
      config: `${example}/payments/wrangler.jsonc`,
    }),
    d1Schema("payments/DB", `${example}/payments/schema.sql`),
  ],
  drive: http(orderRequests(2), { retries: 3 }),
  invariants: [unique("one-charge-per-order", d1Rows("payments/DB", "charges"), "order_id")],
  bounds: { maxFaultsPerRun: 1, maxRedeliveries: 3, maxConcurrentInvocations: 2, budgetMs: 20000 },
});
