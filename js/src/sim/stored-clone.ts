/**
 * What the runtime keeps of a value it stores as a structured clone (a Durable Object's
 * `ctx.storage.put`, a queue message sent as "v8"), and the value it reads back.
 *
 * The bytes are V8's serialization as Node's `v8.serialize` writes it, so sizes count alike and
 * what cannot be cloned is refused with V8's message. The host's own writer (js/src/workerd/v8.ts,
 * `node:v8` inside workerd) writes them on both runtimes, never V8: V8 writes one value in
 * different ways by how it happens to hold it (a holey array as a sparse one, an integer as a
 * double), which depends on what it learned in earlier runs, and the bytes feed each run's
 * fingerprint, so one value must always give the same bytes.
 *
 * Reading differs from `v8.deserialize` on purpose: Node reads a typed array or DataView back as
 * a view into the bytes it was given, serialization header and all (`byteOffset` 6 of a buffer 6
 * bytes longer than the view), and a Buffer as a Buffer. The clone workerd's storage gives back
 * has a buffer of its own, and a Buffer comes back as a Uint8Array. So each view is read over a copy of exactly its bytes, a
 * Buffer as a Uint8Array. One difference remains (docs/fidelity.md): Node writes only the bytes
 * a view covers, so a view of part of a larger buffer comes back over those bytes alone, where
 * the clone keeps the whole buffer and the view's offset in it.
 */

import { Buffer } from "node:buffer";
import { DefaultDeserializer, serialize } from "node:v8";
import { serializeByValue } from "../workerd/v8.ts";
import { adoptDates } from "./clone.ts";

/** The bytes kept for `value`; throws V8's DataCloneError for what cannot be cloned. */
export function encodeClone(value: unknown): Uint8Array {
  // V8 is asked only of the objects the writer cannot tell from a plain one (inside workerd,
  // `serialize` is the writer itself, which has no more to say).
  return new Uint8Array(serializeByValue(value, serialize));
}

/** The value `bytes` hold, with its Dates the simulation's `Date` (see `adoptDates`). */
export function decodeClone(bytes: Uint8Array): unknown {
  const reader = new CloneReader(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));
  reader.readHeader();
  return adoptDates(reader.readValue());
}

/** Node's deserializer's own reading of a typed array or DataView (a "host object" to V8). */
type HostObjectReader = { _readHostObject(this: DefaultDeserializer): ArrayBufferView };

class CloneReader extends DefaultDeserializer {
  /**
   * Called by Node's deserializer for each typed array or DataView. (Inside workerd the host's
   * `node:v8` reads views into buffers of their own, Buffers as Uint8Arrays, and never calls it.)
   */
  _readHostObject(): ArrayBufferView {
    const view = (DefaultDeserializer.prototype as unknown as HostObjectReader)._readHostObject.call(this);
    const own = view.buffer.slice(view.byteOffset, view.byteOffset + view.byteLength) as ArrayBuffer;
    if (view instanceof DataView) return new DataView(own);
    if (view instanceof Buffer) return new Uint8Array(own);
    return new (view.constructor as new (buffer: ArrayBuffer) => ArrayBufferView)(own);
  }
}
