/**
 * The KV example end to end through `check()`: the coupon Worker that trusts a KV read to
 * decide who holds a one-time coupon is VIOLATED by a documented KV misbehaviour (a stale read,
 * or a 429 for a second write to the key within a second), and the fix, where D1 decides, is
 * BOUNDED under every schedule with one fault.
 */

import { describe, expect, it } from "vitest";
import { check } from "../src/index.ts";
import { violated } from "./verdict.ts";

const example = (file: string) => new URL(`../../examples/kv/${file}`, import.meta.url).pathname;

describe("the KV example", () => {
  it("finds a coupon redeemed twice after one stale KV read", async () => {
    const result = violated(await check(example("coupons.sim.ts")));
    expect(result.scenario).toBe("coupons");
    expect(result.invariant).toBe("coupon-redeemed-once");
    expect(result.message).toMatch(/^coupon SPRING was redeemed by orders o-1, o-2; KV holds /);
    expect(result.eventsKept).toEqual(["req-1", "req-2", "req-3"]);
    expect(result.faults).toEqual([
      { kind: "transient_error", invocation: "req-3#1", effect: 0, label: "KV:COUPONS get" },
    ]);
  });

  it("traces the KV calls as calls, the stale read with the stale value, not KV's own storage", async () => {
    const result = violated(await check(example("coupons.sim.ts")));
    // A value shows as the JSON string of the text KV holds.
    const coupon = (usedBy: string | null) => JSON.stringify(JSON.stringify({ percentOff: 20, usedBy }));
    expect(result.trace).toContain(`  KV:COUPONS get "coupon:SPRING" -> stale: ${coupon(null)}`);
    expect(result.trace).toContain(`  KV:COUPONS put "coupon:SPRING" ${coupon("o-2")}`);
    expect(result.trace.filter((line) => line.startsWith("  D1 kv:"))).toEqual([]);
  });

  it("finds it too when KV refuses the coupon's second write within a second (429)", async () => {
    const found = violated(await check(example("coupons.sim.ts")));
    // The same run with the transient fault moved to req-2's KV put (its effect #2).
    const seed = found.runSeed.replace(/T\d+\.\d+@\d+/, "T2.1@2");
    const replayed = violated(await check(example("coupons.sim.ts"), { replay: seed }));
    expect(replayed.invariant).toBe("coupon-redeemed-once");
    expect(replayed.faults).toEqual([
      { kind: "transient_error", invocation: "req-2#1", effect: 2, label: "KV:COUPONS put" },
    ]);
  });

  it("reports BOUNDED for the fixed Worker after running more than one schedule", async () => {
    const result = await check(example("coupons.fixed.sim.ts"));
    expect(result.verdict).toBe("BOUNDED");
    if (result.verdict === "BOUNDED") expect(result.runs).toBeGreaterThan(1);
  });

  it("replays the fixed Worker under the planted bug's schedule without a violation", async () => {
    const found = violated(await check(example("coupons.sim.ts")));
    const replayed = await check(example("coupons.fixed.sim.ts"), { replay: found.runSeed });
    expect(replayed.verdict).toBe("HELD");
  });
});
