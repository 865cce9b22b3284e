/**
 * Outbound fetch end to end through `check()`: a Worker that calls a payment provider over
 * `fetch`, answered by the scenario's `outbound()` scripts (js/test/fixtures/outbound).
 */

import { describe, expect, it } from "vitest";
import { check, InputError } from "../src/index.ts";
import { violated } from "./verdict.ts";

const fixture = (file: string) => new URL(`./fixtures/outbound/${file}`, import.meta.url).pathname;

describe("outbound fetch through check()", () => {
  it("makes each fetch one effect and explores a lost connection on it", async () => {
    const result = violated(await check(fixture("pay.sim.ts")));
    expect(result.invariant).toBe("paid-orders-are-recorded");
    expect(result.message).toBe("req-1 was answered 200 for order o-1, which has no charge recorded");
    expect(result.faults).toEqual([
      {
        kind: "transient_error",
        invocation: "req-1#1",
        effect: 0,
        label: "fetch POST https://api.payments.example/v1/charges",
      },
    ]);
    expect(result.trace).toContain('req-1#1 answered 200 {"orderId":"o-1","status":"pending"}');
  });

  it("answers the Worker from the script when nothing fails", async () => {
    const found = violated(await check(fixture("pay.sim.ts")));
    // The same events without faults: the script's deterministic charge id reaches the Worker.
    const seed = found.runSeed.split(":").slice(0, 2).join(":");
    const replayed = await check(fixture("pay.sim.ts"), { replay: `${seed}:-:0` });
    expect(replayed.verdict).toBe("HELD");
    if (replayed.verdict !== "HELD") return;
    expect(replayed.trace).toContain(
      "req-1#1 effect #0 fetch POST https://api.payments.example/v1/charges: proceed",
    );
    expect(
      replayed.trace.some((line) => /answered 200 .*"status":"paid","chargeId":"ch_[0-9a-f]{8}"/.test(line)),
    ).toBe(true);
  });

  it("gives invariants what the provider was asked, a request whose answer was lost included", async () => {
    const result = violated(await check(fixture("retry.sim.ts")));
    expect(result.message).toBe("the provider was asked to charge under 2 keys: order-o-1-1, order-o-1-2");
    expect(result.faults).toEqual([
      expect.objectContaining({ kind: "lost_response", invocation: "req-1#1", effect: 0 }),
    ]);
    expect((await check(fixture("retry.fixed.sim.ts"))).verdict).toBe("BOUNDED");
  });

  it("stops with an InputError naming a URL the scenario scripts no answer for", async () => {
    const error = await check(fixture("unscripted.sim.ts")).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(InputError);
    expect((error as InputError).exitCode).toBe(2);
    expect((error as InputError).message).toContain(
      'req-1#1 fetched POST https://api.payments.example/v1/charges, but the scenario scripts no answer for it: add outbound({ "https://api.payments.example/": (request) => … }) to its setup',
    );
  });
});
