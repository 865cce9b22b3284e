/**
 * A reset Durable Object keeps no second instance: Cloudflare runs at most one instance of an
 * object, so when a call resets it (the `reset` fault, a code update) or an invocation of it dies,
 * every call in flight on the old instance fails (those waiting at its gate too, instead of
 * hanging), and what the old instance does afterwards never reaches storage. Fixes that hold the
 * object with `blockConcurrencyWhile` stay BOUNDED with faults, more requests and resends. Both
 * runtimes agree.
 */

import { describe, expect, it } from "vitest";
import { type CheckResult, check } from "../src/index.ts";
import { RESET_MESSAGE } from "../src/sim/durable-objects.ts";
import { violated } from "./verdict.ts";

const fixture = (path: string) => new URL(`./fixtures/${path}`, import.meta.url).pathname;

/** How the Worker of js/test/fixtures/do-reset describes an error with its flags. */
const RESET = `Error: ${RESET_MESSAGE} retryable=true durableObjectReset=true`;
const LOST = "Error: Network connection lost. retryable=true durableObjectReset=undefined";

const resetAt = (invocation: string, label: string) => ({
  kind: "transient_error",
  invocation,
  effect: 0,
  label,
});

describe("a reset of a Durable Object with calls in flight", () => {
  it("fails the call in flight, and refuses what the old instance writes after it, KV-style and SQL", async () => {
    const result = violated(await check(fixture("do-reset/old-instance.sim.ts")));
    expect(result.invariant).toBe("old-instance-writes-nothing");
    expect(result.faults).toEqual([resetAt("req-2#1", "DO:ROOM ping")]);
    expect(result.message).toBe(
      `the old instance saw: put threw ${RESET}; sql.exec threw ${RESET}. ` +
        `Stored: slow=undefined, notes []. req-1 got 503 ${RESET}`,
    );
  });

  it("rolls back a transaction the old instance has open, which then throws instead of committing", async () => {
    const result = violated(await check(fixture("do-reset/transaction.sim.ts")));
    expect(result.faults).toEqual([resetAt("req-2#1", "DO:ROOM ping")]);
    expect(result.message).toBe(`the old instance saw: transaction threw ${RESET}. Stored: notes []`);
  });

  it("fails a call waiting at the old instance's blockConcurrencyWhile gate with the reset error", async () => {
    const result = violated(await check(fixture("do-reset/gate-reset.sim.ts")));
    expect(result.faults).toEqual([resetAt("req-3#1", "DO:ROOM ping")]);
    expect(result.message).toBe(`req-2 got 503 ${RESET}; req-3 got 503 ${RESET}`);
  });

  it("fails a call waiting at the gate of an instance whose invocation died as a lost connection, not a hang", async () => {
    // The search may find the reset a fetch failing inside blockConcurrencyWhile causes first;
    // the crash there, with req-2's ping waiting at the gate, is this schedule.
    const found = violated(await check(fixture("do-reset/gate-crash.sim.ts")));
    expect(found.invariant).toBe("one-lost-connection-a-run");
    const replay = "6d0371889c699300:1,2:B1.1/0@0:0:1.1/0@0=2.1";
    const result = violated(await check(fixture("do-reset/gate-crash.sim.ts"), { replay }));
    expect(result.invariant).toBe("one-lost-connection-a-run");
    expect(result.faults).toEqual([
      {
        kind: "crash_before",
        invocation: "req-1#1/0",
        effect: 0,
        label: "fetch GET https://clock.example/tick",
      },
    ]);
    expect(result.message).toBe(`req-1 got 503 ${LOST}; req-2 got 503 ${LOST}`);
    expect(result.trace).toContain("req-2#1/0 died with its Durable Object instance");
  });
});

describe("writes an object made just before it reset itself", () => {
  it("are dropped unless its code let the event loop run since, as Miniflare's workerd drops them, on both backends", async () => {
    // The worker answers 500 naming each case whose kept keys differ from Miniflare's.
    expect((await check(fixture("do-reset/unconfirmed/unconfirmed.sim.ts"))).verdict).toBe("BOUNDED");
  });
});

describe("calls an object made that were not delivered when it was reset", () => {
  const queued = (name: string) => fixture(`do-reset/queued/${name}.sim.ts`);
  /** The schedule without switches of a scenario (as found), where the sender's reset comes first. */
  const withoutSwitches = async (file: string) => {
    const base = violated(await check(file)).runSeed.split(":")[0];
    return check(file, { replay: `${base}:1,2:-:0` });
  };

  for (const how of ["abort", "throw"]) {
    it(`drops the call waiting at another object's gate when the object that made it resets (${how})`, async () => {
      const result = await withoutSwitches(queued(how));
      if (result.verdict !== "HELD") throw new Error(`expected the replay to hold, got ${result.verdict}`);
      expect(result.trace).toContain(
        'req-2#1/0/0 died at the gate of Durable Object Holder "holder": ' +
          "its caller's Durable Object was reset before the call went in, and the runtime drops it",
      );
      expect(result.trace.join("\n")).not.toContain("storage.put");
    });
  }

  it("drops a call not sent yet when the object that made it aborts right after: BOUNDED", async () => {
    expect((await check(queued("abort-now"))).verdict).toBe("BOUNDED");
  });

  it("lets a call waiting at a gate in once the section there has waited out its timer", async () => {
    // The holder's section waits a second on a fetch: a timer to fire, not a deadlock to end at
    // the 30-second limit.
    expect((await check(queued("wait"))).verdict).toBe("BOUNDED");
  });
});

describe("fixes that hold the object with blockConcurrencyWhile, with a reset among the faults", () => {
  it("examples/seats-race's gated fix, three bookings at once: BOUNDED", async () => {
    expect((await check(fixture("concurrency/seats-three-gated.faults.sim.ts"))).verdict).toBe("BOUNDED");
  });

  it("examples/seats-race's gated fix, with a client that resends on a 5xx: BOUNDED", async () => {
    expect((await check(fixture("concurrency/seats-gated-resend.sim.ts"))).verdict).toBe("BOUNDED");
  });

  it("invoice numbers registered before they are stored, three orders at once: BOUNDED", async () => {
    expect((await check(fixture("do-reset/invoices/invoices.sim.ts"))).verdict).toBe("BOUNDED");
  });
});

/** Everything in a result but the wall-clock time it took. */
function comparable(result: CheckResult): Omit<CheckResult, "elapsedMs"> {
  const { elapsedMs: _elapsedMs, ...rest } = result;
  return rest;
}

describe("the two runtimes", () => {
  for (const scenario of ["old-instance", "transaction", "gate-reset", "gate-crash", "queued/abort"]) {
    it(`give do-reset/${scenario}.sim.ts the verdict and trace Node gives it inside workerd`, async () => {
      const file = fixture(`do-reset/${scenario}.sim.ts`);
      const node = await check(file);
      const workerd = await check(file, { runtime: "workerd" });
      expect(node.verdict).toBe("VIOLATED");
      expect(comparable(workerd)).toEqual(comparable(node));
    });
  }
});
