/**
 * Timers (js/test/fixtures/timers): `setTimeout`, `setInterval`, `clearTimeout` and
 * `scheduler.wait` run on the run's clock, as the run loop fires them. A retry's backoff takes
 * the time it says and composes with faults; a deadline raced against a call never wins, with
 * interleavings as without; a wait inside a Durable Object is a point where
 * another call gets in, which interleaving finds; an interval nothing clears stops the run.
 */

import { describe, expect, it } from "vitest";
import { SimulationError } from "../src/errors.ts";
import { check, renderReport } from "../src/index.ts";
import { violated } from "./verdict.ts";

const fixture = (file: string) => new URL(`./fixtures/timers/${file}`, import.meta.url).pathname;

describe("timers on the run's clock", () => {
  it.each(["node", "workerd"] as const)(
    "sleep, tick, clear, fail and refuse as in workerd (Worker code in %s)",
    async (runtime) => {
      expect((await check(fixture("clock.sim.ts"), { runtime })).verdict).toBe("BOUNDED");
    },
  );

  it.each(["node", "workerd"] as const)(
    "call back in the async context that set them, so an AsyncLocalStorage holds the request's value (%s)",
    async (runtime) => {
      const result = await check(fixture("context/context.sim.ts"), { runtime });
      expect(result.verdict === "VIOLATED" ? result.message : result.verdict).toBe("BOUNDED");
    },
  );

  it.each(["node", "workerd"] as const)(
    "run node:timers and node:timers/promises on the run's clock, as workerd answers them (%s)",
    async (runtime) => {
      const result = violated(await check(fixture("node-timers/node-timers.sim.ts"), { runtime }));
      // What Miniflare 4.20260426 answers, but the last figure: the 12 ms the sleeps took on the
      // run's clock. Node's own modules were refused before, as if they reached the machine.
      expect(result.message).toBe(
        `200 ${JSON.stringify([
          "Timeout,active,clearImmediate,clearInterval,clearTimeout,default,enroll,promises,setImmediate,setInterval,setTimeout,unenroll",
          "slept",
          "imm",
          "AbortError:ABORT_ERR:The operation was aborted:true",
          "AbortError:ABORT_ERR:The operation was aborted",
          "tick",
          "tick",
          "object",
          "object",
          "number",
          12,
        ])}`,
      );
    },
  );

  it("never fire a caller's deadline before its callee's calls, whatever the interleaving", async () => {
    // Each request races its call to the ledger against a 2 s timer; the ledger makes two D1
    // calls. A binding call takes no time, so neither deadline fires in any schedule.
    expect((await check(fixture("deadline/deadline.sim.ts"))).verdict).toBe("BOUNDED");
  });

  it.each(["node", "workerd"] as const)(
    "end the check at a busy wait on the clock, which never moves while the code does not wait (%s)",
    async (runtime) => {
      const error = await check(fixture("busy-wait/busy.sim.ts"), { runtime }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(SimulationError);
      expect((error as Error).message).toBe(
        "invocation req-1#1 of Worker busy read the clock 10,000,000 times without waiting for anything: it waits for time to pass in a loop, but the run's clock moves only when the code awaits (a binding call, a timer); production ends such a request at its CPU time limit (in run a2053aa1c78883ee:1:-:3, which --replay runs again)",
      );
    },
  );

  it("let a retry with backoff get through every fault", async () => {
    expect((await check(fixture("pay.sim.ts"))).verdict).toBe("BOUNDED");
  });

  it("fire after a failed call and move the clock by the backoff", async () => {
    const result = violated(await check(fixture("pay.first-try.sim.ts")));
    expect(result.faults).toEqual([
      expect.objectContaining({ invocation: "req-1#1", effect: 0, label: "D1:DB run" }),
    ]);
    const fired = result.trace.indexOf("req-1#1 timer of 100 ms fired");
    expect(fired).toBeGreaterThan(0);
    // The retry is effect #1, after the timer, at 2026-01-01 plus the backoff and the two calls.
    const retry = result.trace.findIndex((line) => line.startsWith("req-1#1 effect #1 "));
    expect(retry).toBeGreaterThan(fired);
    expect(result.trace.join("\n")).toContain(`["o-1", ${Date.UTC(2026, 0, 1) + 101}]`);
  });

  it("are where another call gets into a Durable Object: a wait between read and write loses a visit", async () => {
    const result = violated(await check(fixture("visits.sim.ts")));
    expect(result.faults).toEqual([]);
    expect(result.message).toBe("2 visits answered, the count is 1");
    const report = renderReport(result);
    // Both calls reach the object before either timer fires.
    const steps = report.slice(report.indexOf("Steps in the order they ran:")).split("\n");
    const second = steps.findIndex((line) => line.includes("req-2#1 effect #0"));
    const timers = steps.flatMap((line, i) => (line.includes("timer of 5 ms fired") ? [i] : []));
    expect(timers).toHaveLength(2);
    expect(second).toBeLessThan(Math.min(...timers));
    const replayed = violated(await check(fixture("visits.sim.ts"), { replay: result.runSeed }));
    expect(replayed.trace).toEqual(result.trace);
  });

  it("leave a visit counted without a wait in between BOUNDED", async () => {
    expect((await check(fixture("visits.atomic.sim.ts"))).verdict).toBe("BOUNDED");
  });

  it("give the same trace for the same seed", async () => {
    const first = violated(await check(fixture("visits.sim.ts")));
    const second = violated(await check(fixture("visits.sim.ts")));
    expect(second.runSeed).toBe(first.runSeed);
    expect(second.trace).toEqual(first.trace);
  });

  it("move the clock KV expiry reads, for the Worker and in the final state alike", async () => {
    expect((await check(fixture("otp.sim.ts"))).verdict).toBe("BOUNDED");
  });

  it("let waitUntil work due within 30 s of the response run, whatever else waits longer", async () => {
    expect((await check(fixture("two-waits.sim.ts"))).verdict).toBe("BOUNDED");
  });

  it("end with waitUntil work, which the runtime cancels 30 s after the response", async () => {
    expect((await check(fixture("linger.sim.ts"))).verdict).toBe("BOUNDED");
  });

  it("stop a run whose interval nothing clears, naming the invocation", async () => {
    const error = await check(fixture("spin.sim.ts")).then(
      (result) => new Error(`expected an error, got ${result.verdict}`),
      (e: unknown) => e as Error,
    );
    expect(error).toBeInstanceOf(SimulationError);
    expect(error.message).toMatch(/fired more than 100000 timers \(req-1#1 set the last\)/);
  });
});
