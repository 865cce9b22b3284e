/**
 * An idle Durable Object is evicted (js/test/fixtures/do-eviction): Cloudflare removes an object
 * from memory after 70 to 140 seconds without calls or events, so an alarm an hour after the
 * last call runs on a fresh instance, whose fields are those its constructor gives it. Within the
 * limit the instance is kept, and a fault's reset is what explores its loss.
 */

import { describe, expect, it } from "vitest";
import { check, renderReport } from "../src/index.ts";
import { violated } from "./verdict.ts";

const fixture = (file: string) => new URL(`./fixtures/do-eviction/${file}`, import.meta.url).pathname;

describe("an object idle past the eviction limit", () => {
  it("runs its alarm an hour later on a fresh instance, without a fault", async () => {
    const result = violated(await check(fixture("hour.sim.ts")));
    expect(result.message).toBe("ada's score 30 was published as null");
    expect(result.faults).toEqual([]);
    expect(result.trace).toContain(
      'Durable Object Board "season-1" reset (evicted from memory after 3600 s without a call or an alarm): its in-memory state is gone',
    );
    // The report's schedule says what lost the state, as no fault did.
    expect(renderReport(result).split("\n")).toContain(
      '  no faults: the events alone break it, with Durable Object Board "season-1" evicted from memory after 3600 s idle, as Cloudflare evicts one',
    );
  });

  it("keeps its instance while idle within the limit", async () => {
    expect((await check(fixture("seconds.sim.ts"))).verdict).toBe("BOUNDED");
    expect((await check(fixture("under-limit.sim.ts"))).verdict).toBe("BOUNDED");
  });
});
