/**
 * The virtual clock and Durable Object alarms (js/test/fixtures/alarm-time): an alarm rings at the
 * time it was set for, never before, so a handler that re-arms itself when woken early finishes;
 * a retry comes after Cloudflare's backoff.
 */

import { describe, expect, it } from "vitest";
import { check } from "../src/index.ts";

const fixture = (file: string) => new URL(`./fixtures/alarm-time/${file}`, import.meta.url).pathname;

describe("an alarm set for a minute from now", () => {
  it("rings on time, is retried 2 s after it fails, and reminds once", async () => {
    const result = await check(fixture("reminder.sim.ts"));
    expect(result.verdict).toBe("BOUNDED");
  });
});
