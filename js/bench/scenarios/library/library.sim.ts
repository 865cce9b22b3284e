// Benchmark only: the example's two orders through the Hono, zod and Drizzle Worker beside it,
// one fault per run, as the example's fixed scenario explores them.
import { d1Rows, d1Schema, defineScenario, http, unique } from "eutaxy/cloudflare";
import { orderRequests } from "../../orders.ts";

export default defineScenario({
  name: "bench-library",
  worker: { entry: "./worker.ts", config: "./wrangler.jsonc" },
  setup: [d1Schema("DB", "../../../../examples/service-binding/payments/schema.sql")],
  drive: http(orderRequests(2), { retries: 3 }),
  invariants: [unique("one-charge-per-order", d1Rows("DB", "charges"), "order_id")],
  bounds: { maxFaultsPerRun: 1, maxRedeliveries: 3 },
});
