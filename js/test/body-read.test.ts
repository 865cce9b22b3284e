/**
 * A Durable Object's read of a body (`await request.json()`) and its `storage.sync()` are I/O in
 * workerd: its input gate lets other calls in while they wait, so a count read from storage
 * before one can be stale after it (Miniflare 4.20260426 loses increments so).
 * js/test/fixtures/body-read.
 */

import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { check } from "../src/index.ts";
import { violated } from "./verdict.ts";

const fixture = (name: string) =>
  join(dirname(fileURLToPath(import.meta.url)), "fixtures", "body-read", name);

describe("a Durable Object reading a body", () => {
  it("lets another call in while it reads, between a storage read and its write", async () => {
    const result = violated(await check(fixture("count.sim.ts")));
    expect(result.message).toBe("the count is 1 after 2 increments");
    const report = result.trace.join("\n");
    expect(report).toContain("req-1#1/0 body read fired");
    // The Worker's own read of the body shares nothing, and waits for no turn.
    expect(report).not.toMatch(/req-\d#1 body read fired/);
  });

  it("does so with the Worker's code inside workerd too", async () => {
    const result = violated(await check(fixture("count.sim.ts"), { runtime: "workerd" }));
    expect(result.trace.join("\n")).toContain("req-1#1/0 body read fired");
  });

  it("waits for no turn where eutaxy or a scenario's script reads a body the object sent", async () => {
    const result = await check(fixture("forward.sim.ts"), { replay: "0000000000000001:1:-:0" });
    if (result.verdict !== "HELD") throw new Error(`expected the run to hold, got ${result.verdict}`);
    const trace = result.trace.join("\n");
    expect(trace).toContain("req-1#1 answered 200 forwarded");
    expect(trace).not.toContain("body read");
  });

  it("is safe when the body is read before storage", async () => {
    const result = await check(fixture("body-first.sim.ts"));
    expect(result.verdict).toBe("BOUNDED");
  });
});

describe("a Durable Object's storage.sync()", () => {
  it("lets another call in while it waits for the flush", async () => {
    const result = violated(await check(fixture("sync.sim.ts")));
    expect(result.message).toBe("the count is 1 after 2 increments");
    expect(result.trace.join("\n")).toContain("req-1#1/0 storage.sync() fired");
  });
});
