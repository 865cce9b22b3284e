import { defineScenario, http, invariant } from "eutaxy/cloudflare";

export default defineScenario({
  name: "visits-fixed",
  worker: { entry: "./worker.fixed.ts", config: "./wrangler.jsonc" },
  // Two visits, then the operator's flush; clients resend a request that got no answer, once.
  drive: http(
    [
      { path: "/visit", method: "POST" },
      { path: "/visit", method: "POST" },
      { path: "/flush", method: "POST" },
    ],
    { retries: 1 },
  ),
  invariants: [
    // Once a flush succeeded, the stored count includes every visit the counter acknowledged.
    invariant("acknowledged-visits-are-kept", (state) => {
      const flushed = state.responses.some((r) => r.event === "req-3" && r.status === 200);
      if (!flushed) return true;
      const acknowledged = state.responses.filter((r) => r.event !== "req-3" && r.status === 200).length;
      const [row] = state.durableObject("COUNTER", "global", "SELECT value FROM counter");
      const stored = Number(row?.value ?? 0);
      return (
        stored >= acknowledged ||
        `the flush succeeded, but the counter stores ${stored} after acknowledging ${acknowledged} visits`
      );
    }),
  ],
  bounds: { maxFaultsPerRun: 1, maxRedeliveries: 1, maxConcurrentInvocations: 1, budgetMs: 5000 },
});
