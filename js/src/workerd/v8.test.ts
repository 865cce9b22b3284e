/**
 * The host's `node:v8` for workerd writes what Node's `v8.serialize` writes, byte for byte, and
 * reads it back to the values the Node runtime reads (sim/stored-clone.ts: Node's
 * `v8.deserialize`, with views over buffers of their own and Buffers as Uint8Arrays); what Node
 * refuses to clone it refuses with Node's message. Durable Object values and "v8" queue messages
 * are kept as these bytes.
 */

import v8 from "node:v8";
import { describe, expect, it } from "vitest";
import { decodeClone } from "../sim/stored-clone.ts";
import { deserialize, serialize } from "./v8.ts";

const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString("hex");

const cyclic: Record<string, unknown> = { name: "loop" };
cyclic.self = cyclic;
const shared = { id: 1 };
const sparse: unknown[] = [1];
sparse[2] = 3;

const values: [string, unknown][] = [
  [
    "small and large integers, doubles, -0, NaN",
    [0, 1, -1, 2 ** 30, 2 ** 31, -(2 ** 31), 1.5, -0, Number.NaN],
  ],
  [
    "one-byte, two-byte and empty strings",
    ["ascii", "é", "€ and more", "", "a".repeat(300), "€".repeat(200)],
  ],
  ["booleans, null and undefined", [true, false, null, undefined]],
  ["objects, with index keys first", { b: 1, a: 2, 1: 3, "2": 4, nested: { deep: [[[]]] } }],
  ["a sparse array", sparse],
  ["an array with a named property", Object.assign([1, 2], { x: 1 })],
  ["a cycle and a shared object", [cyclic, shared, shared]],
  ["bigints", [0n, 10n, -(2n ** 70n)]],
  ["dates, regexps, maps and sets", [new Date(5), /a+b/gimsuy, new Map([[1, "a"]]), new Set([1, "x"])]],
  [
    "typed arrays, Buffers, DataViews and ArrayBuffers",
    [
      new Uint8Array([1, 2, 3]),
      new Float64Array([1.5]),
      new BigInt64Array([5n]),
      Buffer.from("hi"),
      new DataView(new ArrayBuffer(3)),
      new ArrayBuffer(2),
    ],
  ],
  ["boxed primitives", [new Number(1), new String("s€"), new Boolean(true), new Boolean(false), Object(1n)]],
  [
    "a class instance, as its own fields",
    new (class Point {
      constructor(
        readonly x = 1,
        readonly y = 2,
      ) {}
    })(),
  ],
];

describe("the workerd host's node:v8", () => {
  for (const [what, value] of values) {
    it(`serializes ${what} as Node does, and reads it back as the Node runtime does`, () => {
      expect(hex(serialize(value))).toBe(hex(v8.serialize(value)));
      expect(deserialize(serialize(value))).toStrictEqual(decodeClone(v8.serialize(value)));
    });
  }

  it("keeps an error's kind, message and cause", () => {
    const error = new TypeError("boom", { cause: 1 });
    expect(hex(serialize(error))).toBe(hex(v8.serialize(error)));
    const back = deserialize(serialize(error)) as TypeError;
    expect(back).toBeInstanceOf(TypeError);
    expect(back.message).toBe("boom");
    expect(back.cause).toBe(1);
  });

  it("refuses what Node refuses, with Node's message", () => {
    for (const value of [
      () => 1,
      Symbol("x"),
      Promise.resolve(),
      new WeakMap(),
      { method() {} },
      new Proxy({}, {}),
    ]) {
      let message = "";
      try {
        v8.serialize(value);
      } catch (error) {
        message = (error as Error).message;
      }
      expect(message).toMatch(/could not be cloned/);
      expect(() => serialize(value)).toThrow(message);
    }
  });

  it("reads each typed array and DataView over a buffer of its own, and a Buffer as a Uint8Array", () => {
    const bytes = Uint8Array.from({ length: 256 }, (_, i) => i);
    const [view, data, buffer] = deserialize(
      serialize([bytes, new DataView(bytes.buffer, 1, 4), Buffer.from(bytes)]),
    ) as [Uint8Array, DataView, Uint8Array];
    expect([view.byteOffset, view.buffer.byteLength, [...view]]).toEqual([0, 256, [...bytes]]);
    expect([data.byteOffset, data.buffer.byteLength, data.getUint8(0)]).toEqual([0, 4, 1]);
    expect(buffer.constructor).toBe(Uint8Array);
    expect([...buffer]).toEqual([...bytes]);
  });

  it("reads bytes Node wrote", () => {
    const value = { when: new Date(0), tags: new Set(["a"]), counts: new Map([["k", 2]]) };
    expect(deserialize(v8.serialize(value))).toEqual(value);
  });
});
