/**
 * What workerd gives a Worker that Node lacks (js/test/fixtures/workers-globals): `navigator`,
 * `crypto.subtle.timingSafeEqual`, `crypto.DigestStream`, `IdentityTransformStream`,
 * `FixedLengthStream`, `URLPattern`, the iterator helpers and a response's default `statusText` answer on the Node runtime as on workerd, whose answers the
 * scenario holds them to, as do `self` and the global scope's listeners; `process.env` holds
 * the Worker's own vars (a JSON var as its JSON text) and secrets, not the machine's; and a promise the Worker rejects and nothing handles
 * goes to the Worker's unhandledrejection listeners, and is logged (as workerd logs it) unless
 * one of them cancels it, instead of ending the check.
 */

import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { check } from "../src/index.ts";
import { violated } from "./verdict.ts";

const fixture = (name: string) =>
  join(dirname(fileURLToPath(import.meta.url)), "fixtures", "workers-globals", name);

describe.each(["node", "workerd"] as const)("on the %s runtime", (runtime) => {
  it("a Worker finds the Workers globals as workerd gives them", async () => {
    expect(await check(fixture("globals.sim.ts"), { runtime })).toMatchObject({ verdict: "BOUNDED" });
  });

  it("process.env holds the Worker's vars and secrets, never the machine's environment", async () => {
    expect(await check(fixture("env.sim.ts"), { runtime })).toMatchObject({ verdict: "BOUNDED" });
  });

  it("every clock a Worker reads is the run's, counted from the epoch as workerd counts it", async () => {
    expect(await check(fixture("clock.sim.ts"), { runtime })).toMatchObject({ verdict: "BOUNDED" });
  });

  it("a Worker reads local time in UTC, as on Cloudflare, whatever the machine's zone", async () => {
    const saved = process.env.TZ;
    process.env.TZ = "America/New_York";
    try {
      expect(await check(fixture("time-zone.sim.ts"), { runtime })).toMatchObject({ verdict: "BOUNDED" });
      // The zone of the process that ran the check is its own again.
      expect(new Date(0).getTimezoneOffset()).toBe(300);
    } finally {
      if (saved === undefined) delete process.env.TZ;
      else process.env.TZ = saved;
    }
  });

  it("a promise the Worker rejects and nothing handles is logged, and the request answers", async () => {
    const result = violated(await check(fixture("unhandled.sim.ts"), { runtime }));
    expect(result.message).toBe("req-1#1 was answered 201, not 200: created");
    expect(
      result.trace.some((line) =>
        line.includes("console.error: Uncaught (in promise) Error: nobody listens"),
      ),
    ).toBe(true);
  });

  it("a listener the module adds for unhandledrejection sees the rejection and keeps it out of the log", async () => {
    const result = violated(await check(fixture("listener.sim.ts"), { runtime }));
    expect(result.trace).toContain("req-1#1 answered 201 reported by the listener");
    expect(result.trace.some((line) => line.includes("Uncaught (in promise)"))).toBe(false);
  });
});
