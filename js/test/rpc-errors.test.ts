/**
 * Errors over bindings (js/test/fixtures/rpc-errors), as workerd delivers them: what the other
 * side's code throws arrives with `remote: true`; a Durable Object reset arrives with
 * `durableObjectReset: true` and breaks the stub; an invocation that died under the call is a
 * retryable `Network connection lost.`. A Worker that retries on a fresh stub gets through every
 * fault; one that retries on the broken stub never does, as on Cloudflare.
 */

import { describe, expect, it } from "vitest";
import { check } from "../src/index.ts";

const fixture = (file: string) => new URL(`./fixtures/rpc-errors/${file}`, import.meta.url).pathname;

describe("errors over a service binding and a Durable Object stub", () => {
  it.each(["node", "workerd"] as const)(
    "arrive with the type, message and flags workerd gives them (Worker code in %s)",
    async (runtime) => {
      expect((await check(fixture("thrown.sim.ts"), { runtime })).verdict).toBe("BOUNDED");
    },
  );

  it("are retryable infrastructure errors under every fault, and a fresh stub gets through", async () => {
    const result = await check(fixture("count.sim.ts"));
    if (result.verdict !== "BOUNDED") throw new Error(`expected BOUNDED, got ${result.verdict}`);
    // No fault, the caller crashing before or after its call, the object resetting at it, its
    // answer lost after it counted, and the object's own invocation crashing before or after its
    // KV call.
    expect(result.runs).toBe(7);
  });

  it("may come after the object did the work: a retry of a call that is not idempotent counts twice", async () => {
    const result = await check(fixture("count.once.sim.ts"));
    if (result.verdict !== "VIOLATED") throw new Error(`expected VIOLATED, got ${result.verdict}`);
    expect(result.message).toBe("one request, counted 2 times");
    expect(result.faults).toEqual([
      { kind: "lost_response", invocation: "req-1#1", effect: 0, label: "DO:COUNTER tally" },
    ]);
  });

  it("leave the stub broken: retrying on it fails at once, without reaching the object", async () => {
    const result = await check(fixture("count.same-stub.sim.ts"));
    if (result.verdict !== "VIOLATED") throw new Error(`expected VIOLATED, got ${result.verdict}`);
    expect(result.message).toBe("req-1#1 was answered 503, not 2xx: gave up");
    expect(result.faults).toHaveLength(1);
    const broken = result.trace.filter((line) => line.includes("the stub is broken"));
    expect(broken).toHaveLength(2);
  });
});
