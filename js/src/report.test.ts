/**
 * The text report of a VIOLATED result, on results made by hand: what follows a fault's line.
 * (Whole checks' reports are tested with their fixtures, js/src/sim/queues.test.ts and js/test.)
 */

import { describe, expect, it } from "vitest";
import type { CheckResult } from "./check.ts";
import { renderReport } from "./report.ts";

const BATCH = [
  "msg-1 sent to queue jobs",
  "deliver batch-1#1",
  'batch-1#1 gets message 00ff, attempt 1 of 4: {"job":1}',
  "batch-1#1 effect #0 Service:PAYMENTS charge: proceed",
  "host batch-1#1/0",
  "batch-1#1/0 effect #0 D1:payments/DB run: proceed",
  "batch-1#1/0 effect #1 D1:payments/DB run: crash_before",
  "batch-1#1/0 died",
  "batch-1#1 died with its callee batch-1#1/0: a service binding runs both on one thread",
  "batch-1#1 failed on queue jobs: acked 0, retried 1",
  "batch-1#1 retries message 00ff (attempt 2 of 4 next): the invocation died before the handler returned",
  "redeliver batch-1#2",
];

function violated(fault: { invocation: string; effect: number; label: string }): CheckResult {
  return {
    verdict: "VIOLATED",
    file: "/p/jobs.sim.ts",
    scenario: "jobs",
    seed: "jobs",
    bounds: { maxFaultsPerRun: 1, maxRedeliveries: 3, maxConcurrentInvocations: 1, budgetMs: 1000 },
    runs: 3,
    shrinkRuns: 1,
    elapsedMs: 10,
    invariant: "charged-once",
    message: "2 charges",
    runSeed: "ab:1:B~batch-1#1/0@1:1",
    eventsKept: ["msg-1"],
    faults: [{ kind: "crash_before", ...fault }],
    trace: BATCH,
  } as unknown as CheckResult;
}

describe("a VIOLATED report", () => {
  it("says under a fault in a callee of a queue batch what the queue did with the batch's messages", () => {
    const report = renderReport(
      violated({ invocation: "batch-1#1/0", effect: 1, label: "D1:payments/DB run" }),
    ).split("\n");
    const at = report.indexOf("  crash_before at batch-1#1/0 effect #1 (D1:payments/DB run)");
    expect(at).toBeGreaterThan(0);
    expect(report[at + 1]).toBe(
      '    batch-1#1 retries message 00ff {"job":1} (attempt 2 of 4 next): the invocation died before the handler returned',
    );
  });
});
