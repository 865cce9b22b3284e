/**
 * The durable-objects example through the public API: the counter that saves lazily loses a
 * visit it acknowledged when the object resets, shrunk to the reset between a visit and the
 * flush; the counter that saves before it answers is BOUNDED.
 */

import { describe, expect, it } from "vitest";
import { check } from "../src/index.ts";
import { violated } from "./verdict.ts";

const example = (path: string) => new URL(`../../examples/durable-objects/${path}`, import.meta.url).pathname;

describe("the durable-objects example", () => {
  it("finds the acknowledged visit a reset of the object loses", async () => {
    const result = violated(await check(example("counter.sim.ts")));
    expect(result.scenario).toBe("visits");
    expect(result.invariant).toBe("acknowledged-visits-are-kept");
    expect(result.message).toBe("the flush succeeded, but the counter stores 0 after acknowledging 1 visits");
    expect(result.eventsKept).toEqual(["req-1", "req-2", "req-3"]);
    expect(result.faults).toEqual([
      { kind: "transient_error", invocation: "req-2#1", effect: 0, label: "DO:COUNTER increment" },
    ]);
  });

  it("reports BOUNDED for the counter that saves before it answers", async () => {
    const result = await check(example("counter.fixed.sim.ts"));
    expect(result.verdict).toBe("BOUNDED");
    if (result.verdict === "BOUNDED") expect(result.runs).toBeGreaterThan(1);
  });

  it("replays the printed run seed to the same violation, and the fix holds under it", async () => {
    const found = violated(await check(example("counter.sim.ts")));
    const replayed = violated(await check(example("counter.sim.ts"), { replay: found.runSeed }));
    expect(replayed.trace).toEqual(found.trace);
    const fixed = await check(example("counter.fixed.sim.ts"), { replay: found.runSeed });
    expect(fixed.verdict).toBe("HELD");
  });
});
