/**
 * Queue delays on the run's clock (js/test/fixtures/queue-delays): a message sent with a delay,
 * retried with its own delay, then retried by the queue's `retry_delay`, is consumed that much
 * later by the clock the consumer reads, as on Cloudflare.
 */

import { expect, it } from "vitest";
import { check } from "../src/index.ts";

it("delivers a queued message after its delay and each retry after its own", async () => {
  const result = await check(new URL("./fixtures/queue-delays/delays.sim.ts", import.meta.url).pathname);
  expect(result.verdict).toBe("BOUNDED");
});

it("says in the trace, in each delivery, how long it waited for its delay", async () => {
  const result = await check(
    new URL("./fixtures/queue-delays/delays.traced.sim.ts", import.meta.url).pathname,
  );
  expect(result.verdict).toBe("VIOLATED");
  if (result.verdict !== "VIOLATED") return;
  // Each said first thing in the delivery it delayed, so a listing shows it under that delivery.
  const after = (line: string) => result.trace[result.trace.indexOf(line) + 1];
  expect(after("deliver batch-1#1")).toBe("batch-1#1 waited 10 s for its messages' delay to pass");
  expect(after("deliver batch-1#2")).toBe("batch-1#2 waited 5 s for its messages' retry delay to pass");
  expect(after("deliver batch-1#3")).toBe("batch-1#3 waited 30 s for its messages' retry delay to pass");
});

it("lets no message wait for another's retry delay, at one invocation at a time and at two", async () => {
  for (const name of ["held-back.sim.ts", "held-back.concurrent.sim.ts"]) {
    const result = await check(new URL(`./fixtures/queue-delays/${name}`, import.meta.url).pathname);
    expect(result.verdict, result.verdict === "VIOLATED" ? result.message : "").toBe("BOUNDED");
  }
});
