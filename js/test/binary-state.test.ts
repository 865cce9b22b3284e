/**
 * Binary values survive exactly (js/test/fixtures/binary-state): a custom invariant reads a KV
 * value put as bytes with `state.kv(binding, key, "arrayBuffer")`, and a Durable Object's stored
 * Uint8Array or ArrayBuffer with `state.durableObjectStorage`, as the storage's structured clone
 * gives it back; the object reads the same back itself. On both runtimes.
 */

import { describe, expect, it } from "vitest";
import { check } from "../src/index.ts";

const fixture = (file: string) => new URL(`./fixtures/binary-state/${file}`, import.meta.url).pathname;

describe.each(["node", "workerd"] as const)("on the %s runtime", (runtime) => {
  it("an invariant reads the bytes 0..255 back exactly from KV and from Durable Object storage", async () => {
    const result = await check(fixture("binary.sim.ts"), { runtime });
    expect(result.verdict === "VIOLATED" ? `${result.invariant}: ${result.message}` : result.verdict).toBe(
      "BOUNDED",
    );
  });
});
