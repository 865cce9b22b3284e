import { describe, expect, it } from "vitest";
import { decodeClone, encodeClone } from "./stored-clone.ts";

const allBytes = () => Uint8Array.from({ length: 256 }, (_, i) => i);

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

  it("gives a Buffer back as a Uint8Array, as workerd's storage does", () => {
    const back = decodeClone(encodeClone(Buffer.from("hi")));
    expect((back as object).constructor).toBe(Uint8Array);
    expect([...(back as Uint8Array)]).toEqual([104, 105]);
  });
});
