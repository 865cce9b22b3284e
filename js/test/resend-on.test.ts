/**
 * `http(…, { resendOn })` (js/test/fixtures/resend-on): a client that resends on some answers
 * too, as a webhook sender does on a 5xx. A webhook that credits before a failing call credits
 * twice only if the sender resends on the 503; the idempotent one holds under every fault.
 */

import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { check } from "../src/index.ts";
import { violated } from "./verdict.ts";

const fixture = (name: string) =>
  join(dirname(fileURLToPath(import.meta.url)), "fixtures", "resend-on", name);

describe("a client that resends on a 5xx", () => {
  it("delivers the event again after each 503, and the extra credits are found", async () => {
    const result = violated(await check(fixture("webhook.sim.ts")));
    // The sender resends twice, as its retries allow; a shrunk run where it stops early would be
    // a sender the scenario does not describe.
    expect(result.message).toBe('3 rows of credits in D1:DB share event_id = "evt-1"');
    expect(result.faults).toEqual([]);
    expect(result.trace.join("\n")).toMatch(
      /req-1#1 answered 503[\s\S]*deliver req-1#2[\s\S]*deliver req-1#3/,
    );
  });

  it("takes a 503 as final without resendOn", async () => {
    expect((await check(fixture("webhook.final-5xx.sim.ts"))).verdict).toBe("BOUNDED");
  });

  it("holds for the webhook that credits an event once, under every fault", async () => {
    expect((await check(fixture("webhook.fixed.sim.ts"))).verdict).toBe("BOUNDED");
  });
});
