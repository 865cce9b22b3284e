/**
 * A Worker no binding reaches, only a queue (js/test/fixtures/consumer): `consumer()` runs it
 * in the same simulation, its database named after it, so an outbox bug across the two
 * Workers shows and its fix holds.
 */

import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { InputError } from "../src/errors.ts";
import { check } from "../src/index.ts";
import { violated } from "./verdict.ts";

const fixture = (name: string) => join(dirname(fileURLToPath(import.meta.url)), "fixtures", "consumer", name);

describe("consumer()", () => {
  it("runs the queue's consumer Worker: an order recorded but never sent is found", async () => {
    const result = violated(await check(fixture("orders.sim.ts")));
    expect(result.message).toBe("orders without a notification: o-1");
  });

  it("holds for the fix that sends first", async () => {
    const result = await check(fixture("orders.fixed.sim.ts"));
    expect(result).toMatchObject({ verdict: "BOUNDED" });
    expect("warnings" in result ? result.warnings : undefined).toBeUndefined();
  });

  it("is missing: a warning says the queue sent to was never consumed", async () => {
    const result = await check(fixture("orders.unconsumed.sim.ts"));
    expect(result.verdict).toBe("BOUNDED");
    expect("warnings" in result ? result.warnings : undefined).toEqual([
      {
        kind: "queue-not-consumed",
        message:
          "NOTIFY sent to queue notifications, which no Worker of the scenario consumes, so its messages were never delivered: consumer({ config }) adds the Worker that consumes it, to check what it does with them.",
      },
    ]);
  });

  it("runs a consumer of a dead letter queue, which only the platform sends to", async () => {
    // The invariant needs the alert row: it holds only if the dead-lettered order reached it.
    expect((await check(fixture("dlq/dlq.sim.ts"))).verdict).toBe("BOUNDED");
  });

  it("refuses a consumer of no queue the scenario sends to: it would never run", async () => {
    const error = await check(fixture("orders.typo.sim.ts")).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InputError);
    expect((error as InputError).problem).toMatch(
      /^setup\[0\]: consumer notifier \(\S*typo\/wrangler\.jsonc\) consumes notification, which nothing in the scenario sends to; the queues sent to are notifications$/,
    );
  });
});
