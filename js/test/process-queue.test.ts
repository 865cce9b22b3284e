/**
 * `process.nextTick` and `process.emitWarning` on the Node runtime as workerd has them
 * (js/test/fixtures/process-queue): a tick callback runs in turn with the promise callbacks
 * (workerd's nextTick is queueMicrotask, where Node runs every tick before any promise callback),
 * and a warning goes to the Worker's `warning` listeners without being printed: Node's printer
 * wrote `(node:<pid>) …` into the run's trace, another pid in every process. The expected trace is
 * what workerd (Miniflare 4.20260426) gives. `setImmediate` is a timer of 0 ms on the run's clock, so
 * a binding call in flight answers before it fires, as in workerd, where the host's own ran first.
 */

import { describe, expect, it } from "vitest";
import { check } from "../src/index.ts";
import { violated } from "./verdict.ts";

const fixture = (file: string) => new URL(`./fixtures/process-queue/${file}`, import.meta.url).pathname;
const scenario = fixture("ticks.sim.ts");

const LEAK =
  "Possible EventEmitter memory leak detected. 2 job listeners added to an EventEmitter. Use emitter.setMaxListeners() to increase limit";

describe("process.nextTick and process.emitWarning", () => {
  it.each(["node", "workerd"] as const)("run and warn as in workerd (%s)", async (runtime) => {
    const result = violated(await check(scenario, { runtime }));
    expect(result.trace).toEqual([
      "deliver req-1#1",
      `req-1#1 console.log: ${LEAK}`,
      "req-1#1 immediate fired",
      "req-1#1 timer of 1 ms fired",
      `req-1#1 answered 200 ${JSON.stringify({
        order: [
          "promise",
          "tick",
          "microtask",
          "tick 2",
          "after await",
          "promise in tick",
          "tick in tick",
          "immediate",
        ],
        warnings: [
          "Warning -: a plain one",
          "DeprecationWarning DEP0999: a typed one",
          "CustomWarning C1: with options",
          "MaxListenersExceededWarning -: Possible EventEmitter memory leak detected. 2 job listeners added to [Bus]. Use emitter.setMaxListeners() to increase limit",
        ],
      })}`,
      "the run is over: the invariants read the final state",
    ]);
  });

  it("leave no listener a run's Worker added to process behind it (node)", async () => {
    const before = ["unhandledRejection", "warning"].map((name) => process.listenerCount(name));
    const result = await check(fixture("listener.sim.ts"));
    if (result.verdict !== "BOUNDED") throw new Error(`expected BOUNDED, got ${result.verdict}`);
    expect(result.runs).toBeGreaterThan(5);
    expect(["unhandledRejection", "warning"].map((name) => process.listenerCount(name))).toEqual(before);
  });

  it("are Node's own outside a run", async () => {
    await check(scenario);
    const order: string[] = [];
    // From a macrotask (not from the microtask this test runs in), Node runs its ticks first.
    await new Promise<void>((resolve) =>
      setImmediate(() => {
        Promise.resolve().then(() => order.push("promise"));
        process.nextTick(() => order.push("tick"));
        setTimeout(resolve, 0);
      }),
    );
    expect(order).toEqual(["tick", "promise"]);
  });

  it.each(["node", "workerd"] as const)(
    "run an immediate after the answer of a binding call in flight, as workerd does (%s)",
    async (runtime) => {
      const result = violated(await check(fixture("immediate.sim.ts"), { runtime }));
      const answer = result.trace.find((line) => line.startsWith("req-1#1 answered 200 "));
      // What Miniflare 4.20260426 answers for the same Worker with a local D1.
      expect(JSON.parse(answer?.slice("req-1#1 answered 200 ".length) ?? "null")).toEqual([
        "tick",
        "db",
        "after db",
        "db 2",
        "immediate",
        "timeout 0",
        "after immediate",
        "immediate in immediate",
      ]);
    },
  );
});
