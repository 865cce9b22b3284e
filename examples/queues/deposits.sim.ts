import { d1Schema, defineScenario, queue } from "eutaxy/cloudflare";
import { creditedOnce, DEPOSITS } from "./deposits.ts";

export default defineScenario({
  name: "deposits",
  worker: { entry: "./worker.ts", config: "./wrangler.jsonc" },
  setup: [d1Schema("DB", "./schema.sql")],
  // A producer outside the ledger sends three deposits to the queue, one event each.
  drive: queue("deposits", DEPOSITS),
  invariants: [creditedOnce],
  bounds: { maxFaultsPerRun: 1, maxRedeliveries: 3, maxConcurrentInvocations: 1, budgetMs: 5000 },
});
