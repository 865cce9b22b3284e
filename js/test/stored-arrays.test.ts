/**
 * A Durable Object that stores an array it builds anew each time (js/test/fixtures/stored-arrays):
 * V8 holds such an array packed or holey by what it learned in the runs before, and wrote the two
 * differently, so the stored bytes, and with them the run's fingerprint, changed from run to run,
 * and replaying the violating run ended the check as nondeterministic. The stored bytes now depend
 * on the value alone (js/src/sim/stored-clone.ts).
 */

import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { check } from "../src/index.ts";
import { violated } from "./verdict.ts";

const fixture = join(dirname(fileURLToPath(import.meta.url)), "fixtures", "stored-arrays", "log.sim.ts");

describe("a Durable Object storing an array built by spread", () => {
  it("is checked to the same verdict every time, its violating run replayed", async () => {
    const first = violated(await check(fixture));
    expect(first.message).toBe("a request was answered 500");
    expect(first.faults).toMatchObject([{ kind: "transient_error", invocation: "req-3#1", effect: 0 }]);
    // Again in the same process, where V8 has learned from every run of the first check.
    const again = violated(await check(fixture));
    expect([again.runSeed, again.trace]).toEqual([first.runSeed, first.trace]);
  });
});
