/**
 * Lost responses (js/test/fixtures/lost-response): a call that took effect, then failed all the
 * same, as a D1 write that committed before "Network connection lost." came back. A Worker that
 * retries a plain INSERT then records twice, with no resend from its client; one whose write a
 * retry cannot repeat is BOUNDED. Only calls that may change something offer the fault.
 */

import { describe, expect, it } from "vitest";
import { check, renderReport } from "../src/index.ts";
import { violated } from "./verdict.ts";

const fixture = (path: string) => new URL(`./fixtures/${path}`, import.meta.url).pathname;

describe("a lost response", () => {
  it("lets a D1 write commit and still fail it, so a retry of a plain INSERT records twice", async () => {
    const result = violated(await check(fixture("lost-response/pay.sim.ts")));
    expect(result.message).toBe('2 rows of payments in D1:DB share order_id = "o-1"');
    expect(result.faults).toEqual([
      { kind: "lost_response", invocation: "req-1#1", effect: 0, label: "D1:DB run" },
    ]);
    // The write under the fault committed: one row changed, then the retry's.
    const fault = result.trace.indexOf("req-1#1 effect #0 D1:DB run: lost_response");
    expect(fault).toBeGreaterThanOrEqual(0);
    expect(result.trace[fault + 1]).toMatch(/^ {2}D1 DB: INSERT INTO payments .* -> 1 changed/);
    expect(renderReport(result)).toContain("lost_response at req-1#1 effect #0 (D1:DB run)");
    const replayed = violated(await check(fixture("lost-response/pay.sim.ts"), { replay: result.runSeed }));
    expect(replayed.trace).toEqual(result.trace);
  });

  it("leaves a write a retry cannot repeat BOUNDED", async () => {
    const result = await check(fixture("lost-response/pay.fixed.sim.ts"));
    expect(result.verdict).toBe("BOUNDED");
    // No fault, crash before, crash after, lost connection, lost response at the one write.
    if (result.verdict === "BOUNDED") expect(result.runs).toBe(5);
  });

  it("is offered at a fetch that may change something: the POST to a payment API", async () => {
    const found = violated(await check(fixture("outbound/pay.sim.ts")));
    const base = found.runSeed.split(":")[0];
    const result = violated(await check(fixture("outbound/pay.sim.ts"), { replay: `${base}:1:L1.1@0:0` }));
    expect(result.faults).toEqual([
      expect.objectContaining({
        kind: "lost_response",
        label: "fetch POST https://api.payments.example/v1/charges",
      }),
    ]);
  });
});
