/**
 * Requests that arrive together read the same `Date.now()` (js/test/fixtures/same-millisecond):
 * a request's arrival moves no clock, so an id made from the time alone collides, as it can on
 * Cloudflare; an id from `crypto.randomUUID()` does not.
 */

import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { check } from "../src/index.ts";
import { violated } from "./verdict.ts";

const fixture = (name: string) =>
  join(dirname(fileURLToPath(import.meta.url)), "fixtures", "same-millisecond", name);

describe("two requests arriving together", () => {
  it("read the same millisecond: a ticket id made from Date.now() replaces the other ticket", async () => {
    const result = violated(await check(fixture("tickets.sim.ts")));
    expect(result.message).toBe("2 tickets filed, 1 kept");
    expect(result.faults).toEqual([]);
  });

  it("keep both tickets when the id is random", async () => {
    expect((await check(fixture("tickets.fixed.sim.ts"))).verdict).toBe("BOUNDED");
  });
});
