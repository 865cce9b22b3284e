/**
 * Values over RPC (js/test/fixtures/rpc-values). A Date sent or returned over a service binding
 * is a Date where it arrives, as on Cloudflare (the simulation's `Date` is its own subclass, and
 * a structured clone makes instances of the original); an error of a standard type thrown by
 * the callee reaches the caller as that type.
 */

import { describe, expect, it } from "vitest";
import { check } from "../src/index.ts";

const fixture = (file: string) => new URL(`./fixtures/rpc-values/${file}`, import.meta.url).pathname;

describe("a Date and an error over RPC", () => {
  it("cross to and from a callee Worker as they do on Cloudflare", async () => {
    expect((await check(fixture("callee.sim.ts"))).verdict).toBe("BOUNDED");
  });

  it("cross to and from a scripted service as they do on Cloudflare", async () => {
    expect((await check(fixture("scripted.sim.ts"))).verdict).toBe("BOUNDED");
  });
});

describe("RPC before the compatibility date that turns it on", () => {
  it("is not there: a stub and a service binding have fetch and no methods, unless the rpc flag is set", async () => {
    // eutaxy answered the calls as if the date were later, where workerd throws.
    expect((await check(fixture("before-rpc/before-rpc.sim.ts"))).verdict).toBe("BOUNDED");
    expect((await check(fixture("before-rpc/before-rpc.flag.sim.ts"))).verdict).toBe("BOUNDED");
  });
});

describe("a Durable Object's stub over RPC", () => {
  it("is refused as an argument and as a result with workerd's DataCloneError", async () => {
    // It said `#<Object> could not be cloned.`: the stub is a Proxy, which the clone cannot read.
    expect((await check(fixture("stub-argument/stub-argument.sim.ts"))).verdict).toBe("BOUNDED");
  });
});
