/**
 * The headers workerd makes immutable (js/test/fixtures/immutable-headers, whose expectations
 * are Miniflare's answers): a handler's request, and each response fetch() answers over a
 * service binding, a Durable Object stub or the network, with their clones; a copy is mutable.
 * A gateway that adds a CORS header to the response it fetched fails in production, and here.
 */

import { describe, expect, it } from "vitest";
import { check } from "../src/index.ts";

const fixture = (file: string) => new URL(`./fixtures/immutable-headers/${file}`, import.meta.url).pathname;

describe.each(["node", "workerd"] as const)("headers on the %s runtime", (runtime) => {
  it("are immutable where workerd's are, and a copy's are the Worker's to change", async () => {
    const result = await check(fixture("headers.sim.ts"), { runtime });
    expect(result.verdict === "VIOLATED" ? result.message : result.verdict).toBe("BOUNDED");
  });
});
