/**
 * One invocation at a time, the platform's work runs before the next event whatever it waits
 * for (js/test/fixtures/alarm-ahead): a hold's alarm 15 minutes on rings before the client's
 * confirmation in every run, so no run has the confirmation come first. The check says so.
 */

import { describe, expect, it } from "vitest";
import { check, InputError } from "../src/index.ts";

const scenario = new URL("./fixtures/alarm-ahead/holds.sim.ts", import.meta.url).pathname;

describe("an alarm that rings before the next event", () => {
  it("is a warning: no run had the event come first", async () => {
    const result = await check(scenario);
    expect(result.verdict).toBe("BOUNDED");
    expect("warnings" in result ? result.warnings : undefined).toEqual([
      {
        kind: "alarm-before-event",
        message:
          "In 1 of 1 run an alarm rang before the next event (alarm-1, 15 minutes on, before req-2): one invocation at a time, the platform's work runs before the next event whatever it waits for, so no run had req-2 come before it. maxConcurrentInvocations 2 checks events before, during and after an alarm.",
      },
    ]);
  });

  it("is no warning where events interleave with the alarm", async () => {
    const result = await check(scenario.replace("holds.sim.ts", "holds.concurrent.sim.ts"));
    expect(result.verdict).toBe("BOUNDED");
    expect("warnings" in result ? result.warnings : undefined).toBeUndefined();
  });
});

describe("an invariant's query of a Durable Object's storage that fails", () => {
  it("names the object as the invariant does, not by its store", async () => {
    const error = await check(scenario.replace("holds.sim.ts", "typo.sim.ts")).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InputError);
    expect((error as InputError).problem).toMatch(
      /^invariant held: its query on HOLD "seat-1" found no table in any run: no such table: nosuch/,
    );
  });
});
