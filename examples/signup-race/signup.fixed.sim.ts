import { d1Rows, d1Schema, defineScenario, http, unique } from "eutaxy/cloudflare";

export default defineScenario({
  name: "signup-race-fixed",
  worker: { entry: "./worker.fixed.ts", config: "./wrangler.jsonc" },
  setup: [d1Schema("DB", "./schema.sql")],
  // Two people sign up with the same address at the same moment (a double-clicked form does it
  // too), and a third signs up with another.
  drive: http([
    { path: "/signup", body: { email: "ada@example.com" } },
    { path: "/signup", body: { email: "Ada@Example.com" } },
    { path: "/signup", body: { email: "grace@example.com" } },
  ]),
  invariants: [
    // One account per address.
    unique("one-account-per-address", d1Rows("DB", "users"), ["email"]),
  ],
  // Two requests in flight at once; no crashes needed to break it.
  bounds: { maxFaultsPerRun: 0, maxConcurrentInvocations: 2, budgetMs: 5000 },
});
