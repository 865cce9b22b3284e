/**
 * The checker end to end through its public API, on the service-binding example and on
 * Workers written apart from it (js/test/fixtures): verdicts, the broken invariant, the
 * shrunk schedule, replay from the printed run seed, and determinism.
 */

import { describe, expect, it } from "vitest";
import { type CheckResult, check } from "../src/index.ts";
import { violated } from "./verdict.ts";

const example = (file: string) => new URL(`../../examples/service-binding/${file}`, import.meta.url).pathname;
const fixture = (file: string) => new URL(`./fixtures/${file}`, import.meta.url).pathname;

/** A result without the wall-clock time, which is the only thing allowed to differ. */
function timeless(result: CheckResult): Omit<CheckResult, "elapsedMs"> {
  const { elapsedMs: _elapsed, ...rest } = result;
  return rest;
}

describe("the service-binding example", () => {
  it("finds the double charge a resend causes, shrunk to one event and one crash", async () => {
    const result = violated(await check(example("checkout.sim.ts")));
    expect(result.scenario).toBe("checkout");
    expect(result.seed).toBe("checkout");
    expect(result.invariant).toBe("one-charge-per-order");
    expect(result.message).toBe('2 rows of charges in D1:payments/DB share order_id = "o-2"');
    expect(result.eventsKept).toEqual(["req-2"]);
    expect(result.faults).toEqual([
      { kind: "crash_after", invocation: "req-2#1", effect: 0, label: "Service:PAYMENTS charge" },
    ]);
  });

  it("reports BOUNDED for the fixed checkout after running more than one schedule", async () => {
    const result = await check(example("checkout.fixed.sim.ts"));
    expect(result.verdict).toBe("BOUNDED");
    if (result.verdict === "BOUNDED") expect(result.runs).toBeGreaterThan(1);
  });

  it("replays the printed run seed to the same violation and the same trace", async () => {
    const found = violated(await check(example("checkout.sim.ts")));
    const replayed = violated(await check(example("checkout.sim.ts"), { replay: found.runSeed }));
    expect(replayed.message).toBe(found.message);
    expect(replayed.faults).toEqual(found.faults);
    expect(replayed.eventsKept).toEqual(found.eventsKept);
    expect(replayed.trace).toEqual(found.trace);
    expect(found.trace.length).toBeGreaterThan(0);
  });

  it("replays the fixed checkout under the planted bug's schedule without a violation", async () => {
    const found = violated(await check(example("checkout.sim.ts")));
    const replayed = await check(example("checkout.fixed.sim.ts"), { replay: found.runSeed });
    expect(replayed.verdict).toBe("HELD");
  });

  it("gives the same result, trace included, every time", async () => {
    const first = timeless(await check(example("checkout.sim.ts")));
    const second = timeless(await check(example("checkout.sim.ts")));
    expect(second).toEqual(first);
    const boundedFirst = timeless(await check(example("checkout.fixed.sim.ts")));
    const boundedSecond = timeless(await check(example("checkout.fixed.sim.ts")));
    expect(boundedSecond).toEqual(boundedFirst);
  });

  it("gives the same results to checks started together as to checks run one after the other", async () => {
    const seats = new URL("../../examples/seats-race/seats.sim.ts", import.meta.url).pathname;
    const alone = [
      await check(example("checkout.sim.ts")),
      await check(example("checkout.fixed.sim.ts")),
      await check(seats),
    ];
    // Promise.all, or vitest's describe.concurrent: the checks take turns in this process.
    const together = await Promise.all([
      check(example("checkout.sim.ts")),
      check(example("checkout.fixed.sim.ts")),
      check(seats),
    ]);
    expect(together.map(timeless)).toEqual(alone.map(timeless));
  });

  it("draws different keys under a different seed but finds the same bug", async () => {
    const other = violated(await check(example("checkout.sim.ts"), { seed: "another seed" }));
    const base = violated(await check(example("checkout.sim.ts")));
    expect(other.seed).toBe("another seed");
    expect(other.message).toBe(base.message);
    expect(other.runSeed).not.toBe(base.runSeed);
  });

  it("says INCOMPLETE, not BOUNDED, when the budget runs out first", async () => {
    const result = await check(example("checkout.fixed.sim.ts"), { budgetMs: 1 });
    expect(result.verdict).toBe("INCOMPLETE");
    if (result.verdict === "INCOMPLETE") {
      expect(result.reason).toBe("budget");
      expect(result.runs).toBeGreaterThanOrEqual(1);
    }
  });
});

describe("Workers eutaxy has never seen", () => {
  it("finds a reservation made twice across an orders and an inventory Worker", async () => {
    const result = violated(await check(fixture("reservations/reserve.sim.ts")));
    expect(result.invariant).toBe("one-reservation-per-cart");
    expect(result.eventsKept).toHaveLength(1);
    expect(result.faults).toHaveLength(1);
    expect(result.faults[0]?.kind).toBe("crash_after");
    expect(result.faults[0]?.label).toMatch(/^Service:INVENTORY /);
  });

  it("reports BOUNDED for the fixed orders Worker", async () => {
    expect((await check(fixture("reservations/reserve.fixed.sim.ts"))).verdict).toBe("BOUNDED");
  });

  it("finds a welcome mail recorded twice behind a scripted service", async () => {
    const result = violated(await check(fixture("scripted/welcome.sim.ts")));
    expect(result.faults).toHaveLength(1);
    expect(result.eventsKept).toHaveLength(1);
  });

  it("reports BOUNDED for the fixed mailer Worker", async () => {
    expect((await check(fixture("scripted/welcome.fixed.sim.ts"))).verdict).toBe("BOUNDED");
  });

  it("finds a charge made twice when the callee dies between its writes and takes its caller along", async () => {
    // The shop answers 502 to a call that fails, which its client does not resend: the charge is
    // made twice only because the crash kills the shop too, so the client gets no answer.
    const result = violated(await check(fixture("callee-crash/pay.sim.ts")));
    expect(result.message).toBe('2 rows of charges in D1:payments/DB share order_id = "o-1"');
    expect(result.faults).toEqual([
      { kind: "crash_before", invocation: "req-1#1/0", effect: 2, label: "D1:payments/DB run" },
    ]);
    expect(result.trace).toContain(
      "req-1#1 died with its callee req-1#1/0: a service binding runs both on one thread",
    );
  });

  it("kills every Worker up a chain of service bindings with the callee that crashed", async () => {
    const result = violated(await check(fixture("callee-crash/pay.gateway.sim.ts")));
    expect(result.faults.map((f) => f.invocation)).toEqual(["req-1#1/0/0"]);
    expect(result.trace).toContain(
      "req-1#1 died with its callees req-1#1/0 and req-1#1/0/0: service bindings run them all on one thread",
    );
  });

  it("answers 500 to the client of a Worker that throws, and the trace says so", async () => {
    const result = await check(fixture("warnings/broken.sim.ts"), { replay: "0000000000000001:1:-:0" });
    if (result.verdict !== "HELD") throw new Error(`expected the replay to hold, got ${result.verdict}`);
    expect(result.trace).toContain("req-1#1 answered 500: the exception was uncaught");
  });

  it("lets a Durable Object finish the call of a caller that died, unheard", async () => {
    // The Worker dies at its own statement while the object's call is in flight: the object
    // runs where it lives and records both entries, as Cloudflare lets it finish.
    const file = fixture("caller-death/tally.sim.ts");
    const found = violated(await check(file));
    const base = found.runSeed.split(":")[0];
    const result = await check(file, { replay: `${base}:1:B1.1@1:0` });
    if (result.verdict !== "HELD") throw new Error(`expected the replay to hold, got ${result.verdict}`);
    expect(result.trace).toContain('req-1#1/0 returned "recorded", which reaches no one: its caller died');
    expect(result.trace).toContain("  D1 DB: SELECT count(*) AS n FROM tally -> 1 row (2)");
  });

  it("reports BOUNDED for the payments Worker that writes the charge and its key in one batch", async () => {
    expect((await check(fixture("callee-crash/pay.fixed.sim.ts"))).verdict).toBe("BOUNDED");
  });
});

describe("a project laid out as wrangler expects", () => {
  it("runs an entry in src/ with the bindings of the wrangler config in the folder above", async () => {
    const result = violated(await check(fixture("project-layout/visits.sim.ts")));
    expect(result.message).toBe('2 rows of visits in D1:DB share request_id = "r-1"');
    expect(result.faults).toEqual([
      { kind: "crash_after", invocation: "req-1#1", effect: 0, label: "D1:DB run" },
    ]);
  });

  it("runs the config's main when the scenario names the config alone", async () => {
    const result = violated(await check(fixture("project-layout/visits.main.sim.ts")));
    expect(result.message).toBe('2 rows of visits in D1:DB share request_id = "r-1"');
  });

  it("applies a folder of D1 migrations in the order wrangler applies them", async () => {
    const result = violated(await check(fixture("project-layout/visits.migrations.sim.ts")));
    expect(result.message).toBe('2 rows of visits in D1:DB share request_id = "r-1"');
    expect(result.trace).not.toContainEqual(expect.stringMatching(/threw/));
  });
});
