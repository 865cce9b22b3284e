/**
 * The queues example end to end through `check()`: the consumer that credits a deposit on every
 * delivery is VIOLATED by a lost acknowledgement and the redelivery it causes; the consumer that
 * is idempotent per message id is BOUNDED, and holds under the planted bug's schedule.
 */

import { describe, expect, it } from "vitest";
import { check } from "../src/index.ts";
import { violated } from "./verdict.ts";

const example = (file: string) => new URL(`../../examples/queues/${file}`, import.meta.url).pathname;

describe("the queues example", () => {
  it("finds the double credit a lost acknowledgement causes", async () => {
    const result = violated(await check(example("deposits.sim.ts")));
    expect(result.scenario).toBe("deposits");
    expect(result.invariant).toBe("credited-at-most-once");
    expect(result.message).toBe("alice was credited 200 cents, but only 100 cents were deposited");
    // One deposit is enough; without the others its batch is the run's first.
    expect(result.eventsKept).toEqual(["msg-3"]);
    expect(result.faults).toEqual([
      { kind: "crash_before", invocation: "batch-1#1", effect: 1, label: "Queue:deposits ack" },
    ]);
    expect(result.trace).toContain("redeliver batch-1#2");
    expect(result.trace).toContain("batch-1#2 succeeded on queue deposits: acked 1, retried 0");
  });

  it("reports BOUNDED for the idempotent consumer after more than one schedule", async () => {
    const result = await check(example("deposits.fixed.sim.ts"));
    expect(result.verdict).toBe("BOUNDED");
    if (result.verdict === "BOUNDED") expect(result.runs).toBeGreaterThan(1);
  });

  it("replays the printed run seed to the same trace, and the fix holds under it", async () => {
    const found = violated(await check(example("deposits.sim.ts")));
    const replayed = violated(await check(example("deposits.sim.ts"), { replay: found.runSeed }));
    expect(replayed.trace).toEqual(found.trace);
    const fixed = await check(example("deposits.fixed.sim.ts"), { replay: found.runSeed });
    expect(fixed.verdict).toBe("HELD");
  });
});
