import { conserved, d1Schema, defineScenario, http } from "eutaxy/cloudflare";

export default defineScenario({
  name: "transfer",
  worker: { entry: "./worker.ts", config: "./wrangler.jsonc" },
  setup: [d1Schema("DB", "./schema.sql")],
  // A client makes three transfers and resends one it got no answer for, once.
  drive: http(
    [
      { path: "/transfers", body: { from: "alice", to: "bob", amountCents: 3000 } },
      { path: "/transfers", body: { from: "bob", to: "alice", amountCents: 1000 } },
      { path: "/transfers", body: { from: "alice", to: "bob", amountCents: 500 } },
    ],
    { retries: 1 },
  ),
  invariants: [
    // A transfer moves money; it never makes or destroys any.
    conserved("money-is-conserved", "DB", "SELECT SUM(balance) FROM accounts"),
  ],
  bounds: { maxFaultsPerRun: 1, maxRedeliveries: 1, maxConcurrentInvocations: 1, budgetMs: 5000 },
});
