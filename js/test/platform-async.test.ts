/**
 * Platform work that completes on the platform's own time (js/test/fixtures/platform-async): Web
 * Crypto runs on Node's thread pool, and `CompressionStream` on zlib's. A Worker that signs,
 * hashes and compresses must still give one verdict, one schedule and one trace for one seed,
 * the same with Worker code in Node or in workerd.
 */

import { describe, expect, it } from "vitest";
import { check } from "../src/index.ts";
import { violated } from "./verdict.ts";

const fixture = (file: string) => new URL(`./fixtures/platform-async/${file}`, import.meta.url).pathname;

describe("a webhook that verifies an HMAC, hashes and gzips its body", () => {
  it("double-credits under one interleaving, found the same way every time", async () => {
    const first = violated(await check(fixture("webhook.sim.ts")));
    expect(first.message).toBe("the event was credited 2 times");
    expect(first.faults).toEqual([]);
    for (let i = 0; i < 3; i++) {
      const again = violated(await check(fixture("webhook.sim.ts")));
      expect(again.runSeed).toBe(first.runSeed);
      expect(again.trace).toEqual(first.trace);
    }
    const workerd = violated(await check(fixture("webhook.sim.ts"), { runtime: "workerd" }));
    expect(workerd.runSeed).toBe(first.runSeed);
  });

  it.each(["node", "workerd"] as const)(
    "is BOUNDED once it records the event first (%s)",
    async (runtime) => {
      expect((await check(fixture("webhook.fixed.sim.ts"), { runtime })).verdict).toBe("BOUNDED");
    },
  );
});
