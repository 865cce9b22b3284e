/**
 * Binary values survive exactly (js/test/fixtures/binary-state): a custom invariant reads a KV
 * value put as bytes with `state.kv(binding, key, "arrayBuffer")`, and a Durable Object's stored
 * Uint8Array or ArrayBuffer with `state.durableObjectStorage`, as the storage's structured clone
 * gives it back; the object reads the same back itself. On both runtimes.
 */

import { describe, expect, expectTypeOf, it } from "vitest";
import type { FinalState } from "../src/cloudflare.ts";
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

it("types state.kv's answer by the type asked for, as KV.get's", () => {
  // Checked by tsc (the function is never called): each type gives what `KV.get` gives for it.
  const reads = (state: FinalState) => {
    expectTypeOf(state.kv("BLOBS", "k")).toEqualTypeOf<string | null>();
    expectTypeOf(state.kv("BLOBS", "k", { type: "text" })).toEqualTypeOf<string | null>();
    expectTypeOf(state.kv<{ n: number }>("BLOBS", "k", "json")).toEqualTypeOf<{ n: number } | null>();
    expectTypeOf(state.kv("BLOBS", "k", "arrayBuffer")).toEqualTypeOf<ArrayBuffer | null>();
    expectTypeOf(state.kv("BLOBS", "k", { type: "arrayBuffer" })).toEqualTypeOf<ArrayBuffer | null>();
    // @ts-expect-error an invariant reads synchronously: no stream
    state.kv("BLOBS", "k", "stream");
  };
  expect(typeof reads).toBe("function");
});
