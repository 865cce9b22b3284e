/**
 * Requests a client sends at given times (`atMs`, js/test/fixtures/sent-later): the run's clock
 * moves to the time once nothing else can run before it, timers and alarms due earlier go first,
 * and work due later waits for the request.
 */

import { describe, expect, it } from "vitest";
import { check } from "../src/index.ts";

const fixtures = new URL("./fixtures/sent-later/", import.meta.url).pathname;
const fixture = (file: string) => `${fixtures}${file}`;

describe("a request sent at a given time", () => {
  it("reaches the Worker at that time on the run's clock", async () => {
    expect((await check(fixture("seen.sim.ts"))).verdict).toBe("BOUNDED");
    // Sent as soon as the first is answered, it comes a millisecond later.
    const atOnce = await check(fixture("seen.at-once.sim.ts"));
    expect(atOnce.verdict).toBe("VIOLATED");
  });

  it("races a request still at work when it is sent, and not one that has finished", async () => {
    const during = await check(fixture("booking.sim.ts"));
    expect(during.verdict).toBe("VIOLATED");
    if (during.verdict !== "VIOLATED") return;
    expect(during.trace).toContain("req-2 sent at 500 ms");
    // The first booking waits a second between its check and its insert: the second, sent
    // half a second in, checks in between.
    const order = during.trace.filter((line) => /^(req-2 sent|req-\d#1 timer)/.test(line));
    expect(order).toEqual([
      "req-2 sent at 500 ms",
      "req-1#1 timer of 1000 ms fired",
      "req-2#1 timer of 1000 ms fired",
    ]);
    expect((await check(fixture("booking.later.sim.ts"))).verdict).toBe("BOUNDED");
  });

  it("comes before an alarm due after it, and after one due before it", async () => {
    // One invocation at a time: the job sent at 100 ms is queued before the alarm set for
    // 500 ms sends the batch; sent at 1000 ms, it goes out in a batch of its own.
    expect((await check(fixture("batch.sim.ts"))).verdict).toBe("BOUNDED");
    const late = await check(fixture("batch.late.sim.ts"));
    expect(late.verdict).toBe("VIOLATED");
    if (late.verdict === "VIOLATED") expect(late.message).toBe('batches: ["a"] | ["b"]');
  });

  it("waits, one invocation at a time, for an alarm still at work, and the trace says until when", async () => {
    const result = await check(fixture("batch.while-sending.sim.ts"));
    expect(result.verdict).toBe("VIOLATED");
    if (result.verdict !== "VIOLATED") return;
    expect(result.message).toBe('batches: ["a"] | ["b"]');
    expect(result.trace).toContain(
      "req-2 sent at 700 ms, delivered at 802 ms, when the work before it let it in",
    );
  });

  it("is sent on time, but its call to the object may arrive after the alarm", async () => {
    // Two invocations at once: sending at 100 ms does not make the call reach the object before
    // the alarm at 500 ms, which may ring while the call is on its way.
    const result = await check(fixture("batch.concurrent.sim.ts"));
    expect(result.verdict).toBe("VIOLATED");
    if (result.verdict !== "VIOLATED") return;
    const steps = result.trace.filter((line) => /^(req-2 sent|deliver |req-2#1 effect)/.test(line));
    expect(steps).toEqual([
      "deliver req-1#1",
      "req-2 sent at 100 ms",
      "deliver req-2#1",
      "deliver alarm-1#1",
      "req-2#1 effect #0 DO:OUTBOX enqueue: proceed",
      "deliver alarm-2#1",
    ]);
  });
});
