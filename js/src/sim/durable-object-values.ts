/**
 * Keys and values of a Durable Object's key-value API as the storage keeps them.
 *
 * Values are V8 serializations (stored-clone.ts), the structured clone the runtime stores, so
 * Dates, Maps, Sets, typed arrays and cycles round-trip and every read returns a copy. Keys are strings
 * (the runtime converts what it is given), compared byte by byte over UTF-8 as Cloudflare lists
 * them. Limits from Cloudflare's "Limits" page: key-value-backed objects take keys of 2 KiB and
 * values of 128 KiB; SQLite-backed ones have no key limit of its own, only key and value 2 MB
 * together; 128 keys per call (Storage API). The limits' error texts are eutaxy's: the docs state
 * the limits, not the messages, and workerd in Miniflare enforces none of them for SQLite-backed
 * objects (docs/fidelity.md).
 */

import { decodeClone, encodeClone } from "./stored-clone.ts";

/** Keys one `get`, `put` or `delete` call may name (docs: "up to 128 keys"). */
export const KEYS_PER_CALL_MAX = 128;
const KEY_BYTES_MAX = 2048;
const VALUE_BYTES_MAX_KV = 128 * 1024;
const ENTRY_BYTES_MAX_SQLITE = 2 * 1024 * 1024;
/** Keys compare byte by byte over UTF-8, as SQLite's BINARY collation and Cloudflare do. */
export function compareKeys(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, "utf8"), Buffer.from(b, "utf8"));
}

export function sortKeys(keys: string[]): string[] {
  return [...new Set(keys)].sort(compareKeys);
}

export function keyOf(key: unknown, sqlite: boolean): string {
  return checkedKey(keyText(key), sqlite);
}

/** A key as workerd converts it to a string: a symbol throws V8's TypeError, which String() would not. */
export function keyText(key: unknown): string {
  return `${key as string}`;
}

export function keyList(keys: unknown[], sqlite: boolean): string[] {
  if (keys.length > KEYS_PER_CALL_MAX) throw tooManyKeys();
  return keys.map((key) => keyOf(key, sqlite));
}

/** A key within the limit of its backend: 2 KiB for key-value-backed objects (see above). */
export function checkedKey(key: string, sqlite: boolean): string {
  if (!sqlite && Buffer.byteLength(key, "utf8") > KEY_BYTES_MAX) {
    throw new RangeError(`Keys cannot be larger than ${KEY_BYTES_MAX} bytes.`);
  }
  return key;
}

export function tooManyKeys(): RangeError {
  return new RangeError(`A single call may name at most ${KEYS_PER_CALL_MAX} keys.`);
}

/** workerd's refusal of `put(key, undefined)`: a missing value is not a value to store. */
export function undefinedValue(): TypeError {
  return new TypeError("put() called with undefined value.");
}

export function encodeValue(key: string, value: unknown, sqlite: boolean): Uint8Array {
  const bytes = encodeClone(value);
  const size = sqlite ? bytes.length + Buffer.byteLength(key, "utf8") : bytes.length;
  const max = sqlite ? ENTRY_BYTES_MAX_SQLITE : VALUE_BYTES_MAX_KV;
  if (size > max) throw new RangeError(`Values cannot be larger than ${max} bytes.`);
  return bytes;
}

export function decodeValue(bytes: Uint8Array): unknown {
  return decodeClone(bytes);
}

export function decodeEntries(entries: readonly (readonly [string, Uint8Array])[]): Map<string, unknown> {
  return new Map(entries.map(([key, value]) => [key, decodeValue(value)]));
}
