/**
 * The d1-transfer and outbound-fetch examples through the public API: each planted bug is
 * VIOLATED with its invariant, shrunk to one event and one fault, and each fix is BOUNDED.
 */

import { describe, expect, it } from "vitest";
import { check } from "../src/index.ts";
import { violated } from "./verdict.ts";

const example = (path: string) => new URL(`../../examples/${path}`, import.meta.url).pathname;

describe("the d1-transfer example", () => {
  it("finds money lost between the debit and the credit", async () => {
    const result = violated(await check(example("d1-transfer/transfer.sim.ts")));
    expect(result.scenario).toBe("transfer");
    expect(result.invariant).toBe("money-is-conserved");
    expect(result.message).toMatch(
      /^SELECT SUM\(balance\) FROM accounts is \d+ after the run, but was 20000/,
    );
    expect(result.eventsKept).toHaveLength(1);
    expect(result.faults).toHaveLength(1);
    expect(result.faults[0]?.label).toBe("D1:DB run");
  });

  it("reports BOUNDED for the batched transfer", async () => {
    const result = await check(example("d1-transfer/transfer.fixed.sim.ts"));
    expect(result.verdict).toBe("BOUNDED");
    if (result.verdict === "BOUNDED") expect(result.runs).toBeGreaterThan(1);
  });
});

describe("the outbound-fetch example", () => {
  it("finds the order a resend charges twice under a fresh idempotency key", async () => {
    const result = violated(await check(example("outbound-fetch/pay.sim.ts")));
    expect(result.scenario).toBe("store");
    expect(result.invariant).toBe("one-charge-per-order");
    expect(result.message).toMatch(/^order o-\d was charged 2 times \(ch_[0-9a-f]{8}, ch_[0-9a-f]{8}\)$/);
    expect(result.eventsKept).toHaveLength(1);
    expect(result.faults).toEqual([
      expect.objectContaining({ kind: "crash_after", effect: 1, label: "D1:DB run" }),
    ]);
    expect(
      result.trace.filter((line) =>
        line.includes("effect #0 fetch POST https://api.payments.example/v1/charges"),
      ),
    ).toHaveLength(2);
  });

  it("reports BOUNDED for the store that derives the key from the order", async () => {
    const result = await check(example("outbound-fetch/pay.fixed.sim.ts"));
    expect(result.verdict).toBe("BOUNDED");
    if (result.verdict === "BOUNDED") expect(result.runs).toBeGreaterThan(1);
  });
});
