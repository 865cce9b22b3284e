/**
 * Dates over RPC (js/test/fixtures/rpc-dates): the simulation's `Date` is its own subclass, and a
 * structured clone makes instances of the original; a Date sent or returned over a service
 * binding must still be a Date where it arrives, as it is on Cloudflare.
 */

import { describe, expect, it } from "vitest";
import { check } from "../src/index.ts";

const fixture = (file: string) => new URL(`./fixtures/rpc-dates/${file}`, import.meta.url).pathname;

describe("a Date over RPC", () => {
  it("arrives as a Date in a callee Worker, and comes back as one", async () => {
    expect((await check(fixture("callee.sim.ts"))).verdict).toBe("BOUNDED");
  });

  it("arrives as a Date in a scripted service, and comes back as one", async () => {
    expect((await check(fixture("scripted.sim.ts"))).verdict).toBe("BOUNDED");
  });
});
