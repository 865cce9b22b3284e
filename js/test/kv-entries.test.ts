/**
 * `kvEntries`: keys a KV namespace holds before every run, as a Worker's KV holds what was
 * written long before it ran. A read sees them through every KV method and the invariants do;
 * no read of them is stale, while a write over one in a run leaves it as a stale read's answer.
 * A namespace no Worker binds, a key KV refuses or an entry that is not a string is bad input.
 */

import { describe, expect, it } from "vitest";
import { check, InputError } from "../src/index.ts";
import { project } from "./files.ts";
import { violated } from "./verdict.ts";

const fixture = (file: string) => new URL(`./fixtures/kv-entries/${file}`, import.meta.url).pathname;

describe("kvEntries", () => {
  it("gives every run the keys with their metadata, through get, getWithMetadata, list and the invariants", async () => {
    const result = await check(fixture("flags.sim.ts"));
    expect(result.verdict).toBe("BOUNDED");
  });

  it("leaves a key written before the runs as what a stale read answers once a run writes it", async () => {
    // The KV example's coupon, not created by a request: the second redemption still reads it
    // as it was before the first one marked it used.
    const result = violated(await check(fixture("coupons.sim.ts")));
    expect(result.invariant).toBe("coupon-redeemed-once");
    expect(result.eventsKept).toEqual(["req-1", "req-2"]);
    expect(result.faults).toEqual([
      { kind: "transient_error", invocation: "req-2#1", effect: 0, label: "KV:COUPONS get" },
    ]);
    expect((await check(fixture("coupons.fixed.sim.ts"))).verdict).toBe("BOUNDED");
  });

  describe("refuses, naming the scenario", () => {
    const scenarioWith = (entries: string, namespace = "FLAGS") => {
      const dir = project({
        "s.sim.ts": `import { defineScenario, http, invariant, kvEntries } from "eutaxy/cloudflare";
          export default defineScenario({
            name: "bad-entries",
            worker: { entry: "${fixture("flags.ts")}", config: "${fixture("wrangler.jsonc")}" },
            setup: [kvEntries("${namespace}", ${entries})],
            drive: http([{ path: "/x" }]),
            invariants: [invariant("i", () => true)],
          });`,
      });
      return `${dir}/s.sim.ts`;
    };
    const refusal = async (file: string) => {
      const error = await check(file).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(InputError);
      return (error as InputError).message;
    };

    it("a namespace no Worker binds", async () => {
      expect(await refusal(scenarioWith(`{ a: "1" }`, "FLAG"))).toMatch(
        /s\.sim\.ts: setup\[0\]: kvEntries\("FLAG"\) names KV binding "FLAG", but no Worker in the scenario binds it; the KV bindings are FLAGS$/,
      );
    });

    it("a key KV refuses, or metadata over KV's limit", async () => {
      expect(await refusal(scenarioWith(`{ "..": "1" }`))).toMatch(/key "\.\." is not a key KV accepts$/);
      expect(await refusal(scenarioWith(`{ ["k".repeat(513)]: "1" }`))).toMatch(
        /is 513 bytes long, over KV's 512$/,
      );
      expect(await refusal(scenarioWith(`{ k: { value: "1", metadata: "m".repeat(1100) } }`))).toMatch(
        /the metadata of key "k" must serialize to JSON of at most 1024 bytes$/,
      );
    });

    it("an entry that is not a string or { value, metadata }", async () => {
      expect(await refusal(scenarioWith(`{ k: 1 }`))).toMatch(
        /setup\[0\]\.entries\.k must be a string, or \{ value, metadata \} with a string value/,
      );
      expect(await refusal(scenarioWith(`{ k: { value: "1", ttl: 60 } }`))).toMatch(
        /entries\.k\.ttl: an entry has only value and metadata/,
      );
    });
  });
});
