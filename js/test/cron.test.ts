/**
 * The cron driver through `check()`: a scheduled handler whose `ctx.waitUntil` work is an effect
 * of the same invocation, explored like any other (js/test/fixtures/cron).
 */

import { describe, expect, it } from "vitest";
import { InputError } from "../src/errors.ts";
import { check } from "../src/index.ts";
import { violated } from "./verdict.ts";

const fixture = (file: string) => new URL(`./fixtures/cron/${file}`, import.meta.url).pathname;

describe("cron with ctx.waitUntil", () => {
  it("finds the tick a crash in the waitUntil work leaves without its audit row", async () => {
    const result = violated(await check(fixture("tick.sim.ts")));
    expect(result.invariant).toBe("every-tick-audited");
    expect(result.eventsKept).toHaveLength(1);
    const [event] = result.eventsKept;
    expect(event).toMatch(/^cron-\d$/);
    // Only the waitUntil work makes a batch: effect #1, after the handler returned.
    expect(result.faults).toHaveLength(1);
    expect(result.faults[0]).toMatchObject({ invocation: `${event}#1`, effect: 1, label: "D1:DB batch" });
    expect(result.trace).toContain(`${event}#1 effect #0 D1:DB run: proceed`);
    expect(result.trace.some((line) => line.startsWith(`${event}#1 effect #1 D1:DB batch: `))).toBe(true);
    // A tick that died in its waitUntil work did not finish, though its handler had returned.
    expect(result.faults[0]?.kind).toBe("crash_before");
    expect(result.trace).toContain(`${event}#1 died in its ctx.waitUntil work, after its handler returned`);
    expect(result.trace).not.toContain(`${event}#1 finished`);
  });

  it("holds an invariant the waitUntil batch keeps, after exploring faults there", async () => {
    const result = await check(fixture("tally.sim.ts"));
    expect(result.verdict).toBe("BOUNDED");
    // One run without faults, and four faults (crash before, crash after, lost connection, and
    // a lost response: both effects write) at each of the two effects of each of the two ticks.
    if (result.verdict === "BOUNDED") expect(result.runs).toBe(17);
  });
});

describe("cron ticks at their times", () => {
  it("starts a tick only when its time comes: one still running overlaps it only if it waits that long", async () => {
    // The job's call to a reporting service answers in a minute: its ticks, five minutes apart,
    // never overlap.
    expect((await check(fixture("overlap/quick.sim.ts"))).verdict).toBe("BOUNDED");
    // In six: the second tick starts while the first waits, and a count is lost.
    const slow = violated(await check(fixture("overlap/slow.sim.ts")));
    expect(slow.message).toBe("2 runs counted as 1");
    expect(slow.trace).toContain("cron-2 scheduled at 300000 ms");
  });
});

describe("cron schedules", () => {
  it("schedules each tick at its expression's next time, and moves the clock there", async () => {
    expect((await check(fixture("schedule.sim.ts"))).verdict).toBe("BOUNDED");
  });

  it("delivers the events of several drivers in the order of their times, not of the drivers", async () => {
    const result = await check(fixture("merged.sim.ts"));
    expect(result.verdict === "VIOLATED" ? result.message : result.verdict).toBe("BOUNDED");
  });

  it.each([
    ["undeclared.sim.ts", 'drive: cron("0 3 * * *") is not among the crons'],
    ["malformed.sim.ts", 'drive.cron: "every day at 3" has 4 fields; a cron expression has five'],
  ])("refuses %s as bad input naming the scenario", async (file, message) => {
    const error = await check(fixture(file)).then(
      (result) => new Error(`expected an error, got ${result.verdict}`),
      (e: unknown) => e as Error,
    );
    expect(error).toBeInstanceOf(InputError);
    expect(error.message).toContain(message);
    expect((error as InputError).file).toContain(file);
  });
});
