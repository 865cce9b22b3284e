/**
 * ctx.waitUntil work after a fetch handler answered (js/test/fixtures/wait-until): a crash there
 * loses the work, not the answer, which the client already has; and the client does not resend.
 */

import { describe, expect, it } from "vitest";
import { check, renderReport } from "../src/index.ts";

const fixture = (file: string) => new URL(`./fixtures/wait-until/${file}`, import.meta.url).pathname;

describe("a crash in ctx.waitUntil work after the answer", () => {
  it("leaves the answer answered, even with no resend allowed", async () => {
    const result = await check(fixture("answered.sim.ts"));
    expect(result.verdict).toBe("BOUNDED");
  });

  it("loses the work: a 200 whose visit was never counted, and no resend", async () => {
    const result = await check(fixture("counted.sim.ts"));
    if (result.verdict !== "VIOLATED") throw new Error(`expected VIOLATED, got ${result.verdict}`);
    expect(result.invariant).toBe("every-answered-visit-counted");
    expect(result.message).toBe("1 visits answered 200, 0 counted");
    expect(result.faults).toHaveLength(1);
    expect(result.faults[0]).toMatchObject({ invocation: "req-1#1", effect: 0, label: "D1:DB run" });
    const answered = result.trace.indexOf("req-1#1 answered 200 hello");
    const fault = result.trace.findIndex((line) => line.startsWith("req-1#1 effect #0 D1:DB run: "));
    expect(answered).toBeGreaterThanOrEqual(0);
    expect(fault).toBeGreaterThan(answered);
    expect(result.trace.some((line) => line.startsWith("deliver req-1#2"))).toBe(false);
    // The report's schedule says the client had its answer before the fault.
    expect(renderReport(result).split("\n")).toContain(
      `  ${result.faults[0]?.kind} at req-1#1 effect #0 (D1:DB run), in its ctx.waitUntil work, after it answered 200`,
    );
  });
});
