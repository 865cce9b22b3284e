/**
 * `answered()` judges what the client gets within its retries (js/test/fixtures/answered). A
 * resend the check's bounds did not run is not a missing answer: neither the explorer's bound
 * (`maxRedeliveries`) nor the shrinker, cutting resends from a counterexample, may turn a wrong
 * answer into "no answer".
 */

import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { check } from "../src/index.ts";
import { violated } from "./verdict.ts";

const fixture = (name: string) => join(dirname(fileURLToPath(import.meta.url)), "fixtures", "answered", name);

describe("answered()", () => {
  it("reports the wrong answer a resend got, keeping the resend when it shrinks", async () => {
    const result = violated(await check(fixture("signup.sim.ts")));
    expect(result.invariant).toBe("every-signup-answered-2xx");
    expect(result.message).toBe('req-1#2 was answered 409, not 2xx: {"error":"username taken"}');
    expect(result.faults).toMatchObject([{ kind: "crash_after", invocation: "req-1#1", effect: 0 }]);
    expect(result.trace.join("\n")).toContain("req-1#2 answered 409");
  });

  it("says which exception a 500 answered, as the runtime's answer to it has no body", async () => {
    const result = violated(await check(fixture("deadlock/deadlock.sim.ts")));
    expect(result.message).toBe(
      "req-1#1 was answered 500, not 2xx: its handler threw Error: A call to blockConcurrencyWhile() in a Durable Object waited for too long. The call was canceled and the Durable Object was reset.",
    );
  });

  it("does not count a resend the bounds refused as a missing answer", async () => {
    const result = await check(fixture("signup.bounded.sim.ts"));
    expect(result.verdict).toBe("BOUNDED");
  });
});
