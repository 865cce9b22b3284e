import v8 from "node:v8";
import { describe, expect, it } from "vitest";
import { decodeClone, encodeClone } from "./stored-clone.ts";

const allBytes = () => Uint8Array.from({ length: 256 }, (_, i) => i);
const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString("hex");

describe("a stored structured clone's bytes", () => {
  it("are the same for one value however V8 came to hold it", () => {
    // A Durable Object appending to a log it read back, the first time to none: as V8 learns
    // from the calls before, the array the spread makes is packed or holey, which V8 writes as
    // a dense or a sparse array.
    const ordinary = [hex(v8.serialize(["t"])), hex(v8.serialize(["t", "t"]))];
    const append = (log: string[] | undefined) => [...(log ?? []), "t"];
    const byV8 = new Set<string>();
    const stored = new Set<string>();
    for (let i = 0; i < 20_000; i++) {
      const log = i % 3 === 0 ? undefined : (v8.deserialize(v8.serialize(["t"])) as string[]);
      const value = append(log);
      byV8.add(hex(v8.serialize(value)));
      stored.add(hex(encodeClone(value)));
    }
    expect(byV8.size).toBeGreaterThan(2);
    expect([...stored].sort()).toEqual(ordinary.sort());
  });

  it("do not depend on how V8 holds an array, a field or a string", () => {
    const holey = new Array(2);
    holey[0] = "t";
    holey[1] = "u";
    const doubles = [1.5, 2];
    doubles[0] = 1;
    const mixed: unknown[] = [{}];
    mixed[0] = 1;
    mixed.push(2.5);
    const twoByte = `€${"latin letters only".repeat(2)}`.slice(1);
    for (const [ordinary, held] of [
      [["t", "u"], holey],
      [[1, 2], doubles],
      [[1, 2.5], mixed],
      ["latin letters only".repeat(2), twoByte],
    ]) {
      expect(hex(v8.serialize(held))).not.toBe(hex(v8.serialize(ordinary)));
      expect(hex(encodeClone(held))).toBe(hex(encodeClone(ordinary)));
    }
  });

  it("refuse what V8 refuses, with V8's message, and take an object with a tag of its own", () => {
    const argumentsObject = (function (..._: unknown[]) {
      // biome-ignore lint/complexity/noArguments: the object V8 refuses to clone
      return arguments;
    })(1);
    const refused = [
      new Proxy({}, {}),
      new Proxy([], {}),
      argumentsObject,
      new Map().entries(),
      (function* () {})(),
      new WeakRef({}),
      new SharedArrayBuffer(1),
      Object(Symbol("s")),
    ];
    for (const value of refused) {
      let message = "";
      try {
        v8.serialize({ value });
      } catch (error) {
        message = (error as Error).message;
      }
      expect(message).toMatch(/could not be cloned/);
      expect(() => encodeClone({ value })).toThrow(message);
    }
    const tagged = { [Symbol.toStringTag]: "Tagged", a: 1 };
    expect(hex(encodeClone(tagged))).toBe(hex(v8.serialize(tagged)));
  });
});

describe("a stored structured clone, read back", () => {
  it("gives a typed array a buffer of its own holding exactly its bytes", () => {
    const view = decodeClone(encodeClone(allBytes())) as Uint8Array;
    expect(view).toBeInstanceOf(Uint8Array);
    expect([view.byteOffset, view.byteLength, view.buffer.byteLength]).toEqual([0, 256, 256]);
    expect([...new Uint8Array(view.buffer)]).toEqual([...allBytes()]);
  });

  it("keeps each kind of view and an ArrayBuffer, and a view shared twice stays one object", () => {
    const shared = new Float64Array([1.5, -2]);
    const [a, b, data, buffer] = decodeClone(
      encodeClone([shared, shared, new DataView(allBytes().buffer, 8, 4), allBytes().buffer]),
    ) as [Float64Array, Float64Array, DataView, ArrayBuffer];
    expect(a).toBe(b);
    expect(a).toBeInstanceOf(Float64Array);
    expect([...a, a.buffer.byteLength]).toEqual([1.5, -2, 16]);
    expect(data).toBeInstanceOf(DataView);
    expect([data.byteOffset, data.buffer.byteLength, data.getUint32(0)]).toEqual([0, 4, 0x08090a0b]);
    expect([...new Uint8Array(buffer)]).toEqual([...allBytes()]);
  });

  it("keeps a sparse array's holes and an array's named properties", () => {
    const sparse: unknown[] = [1];
    sparse[3] = 4;
    const back = decodeClone(encodeClone(Object.assign(sparse, { note: "n" }))) as unknown[];
    expect([back.length, 1 in back, 2 in back, back[3], (back as unknown as { note: string }).note]).toEqual([
      4,
      false,
      false,
      4,
      "n",
    ]);
  });

  it("gives a Buffer back as a Uint8Array, as workerd's storage does", () => {
    const back = decodeClone(encodeClone(Buffer.from("hi")));
    expect((back as object).constructor).toBe(Uint8Array);
    expect([...(back as Uint8Array)]).toEqual([104, 105]);
  });
});
