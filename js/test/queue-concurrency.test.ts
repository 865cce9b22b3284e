/**
 * A queue consumer's `max_concurrency` (js/test/fixtures/queue-concurrency): Cloudflare runs at
 * most that many consumer invocations of the queue at once, so a consumer that reads and writes
 * back a quantity is correct with 1 and loses an update when batches run side by side.
 */

import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { check } from "../src/index.ts";
import { violated } from "./verdict.ts";

const fixture = (name: string) =>
  join(dirname(fileURLToPath(import.meta.url)), "fixtures", "queue-concurrency", name);

describe("a queue consumer's max_concurrency", () => {
  it("keeps the consumer's batches one at a time when it is 1", async () => {
    expect((await check(fixture("reserve.sim.ts"))).verdict).toBe("BOUNDED");
  });

  it("lets batches interleave when it is absent, where the read-then-write loses an update", async () => {
    const result = violated(await check(fixture("reserve.scaled.sim.ts")));
    expect(result.message).toMatch(/is 12 after the run, but was 10 after setup/);
  });
});
