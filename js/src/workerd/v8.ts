/**
 * `node:v8`'s `serialize`, `deserialize` and `DefaultDeserializer` for the simulation host inside
 * workerd, whose own `node:v8` does not implement them, and the writer of stored values on both
 * runtimes (`serializeByValue`, js/src/sim/stored-clone.ts). The simulation keeps Durable Object
 * values and queue messages sent as "v8" as these bytes, and limits count them, so this writes the
 * format Node's `v8.serialize` writes (V8's ValueSerializer, version 15, with Node's typed arrays
 * as host objects): the same values round-trip, the same values refuse to, with the same
 * messages, and sizes agree. Where V8 chooses by an internal representation (one- or two-byte
 * strings, small integers or heap numbers, packed or holey arrays, arrays of doubles) this chooses
 * by the value, which is what V8 does for every value built in the ordinary way. V8's own choice
 * depends on what it learned running earlier code (an array a spread made holey as its call site
 * learned, an object's field kept as a double since another object of its shape held one), so V8
 * can write one value differently from one run to the next, where these bytes are the same
 * whenever the value is: stored bytes feed each run's fingerprint, which a replay must reproduce.
 * It reads values back as js/src/sim/stored-clone.ts reads them on Node, as a structured clone
 * gives them: each typed array or DataView over a buffer of its own, a Buffer as a Uint8Array.
 * The host's build aliases `node:v8` here.
 */

import { Buffer } from "node:buffer";
import { types } from "node:util";

const VERSION = 15;

/** Node's `arrayBufferViewTypes`, whose index it writes for a typed array (10 is Buffer). */
const VIEW_TYPES = [
  Int8Array,
  Uint8Array,
  Uint8ClampedArray,
  Int16Array,
  Uint16Array,
  Int32Array,
  Uint32Array,
  Float32Array,
  Float64Array,
  DataView,
  Buffer,
  BigInt64Array,
  BigUint64Array,
] as const;

/** V8's error prototype tags, by the error's constructor name. */
const ERROR_PROTOTYPES: Readonly<Record<string, string>> = {
  EvalError: "E",
  RangeError: "R",
  ReferenceError: "F",
  SyntaxError: "S",
  TypeError: "T",
  URIError: "U",
};
const ERROR_CONSTRUCTORS: Readonly<Record<string, ErrorConstructor>> = {
  E: EvalError,
  R: RangeError,
  F: ReferenceError,
  S: SyntaxError,
  T: TypeError,
  U: URIError,
};

const REGEXP_FLAGS = "gimyusvd";
/** V8's bit for each flag (`JSRegExp::Flag`). */
const REGEXP_BITS: Readonly<Record<string, number>> = {
  g: 1,
  i: 2,
  m: 4,
  y: 8,
  u: 16,
  s: 32,
  d: 128,
  v: 256,
};

function cloneError(value: unknown): Error {
  let text: string;
  if (typeof value === "function" || typeof value === "symbol") text = String(value);
  else {
    const name = (value as { constructor?: { name?: unknown } }).constructor?.name;
    text = `#<${typeof name === "string" && name ? name : "Object"}>`;
  }
  return new Error(`${text} could not be cloned.`);
}

class Writer {
  private bytes = new Uint8Array(256);
  length = 0;
  private readonly ids = new Map<object, number>();

  /** `v8Verdict`: see `serializeByValue`. */
  constructor(private readonly v8Verdict?: (object: object) => void) {}

  private reserve(n: number): void {
    if (this.length + n <= this.bytes.length) return;
    let size = this.bytes.length * 2;
    while (size < this.length + n) size *= 2;
    const next = new Uint8Array(size);
    next.set(this.bytes.subarray(0, this.length));
    this.bytes = next;
  }

  byte(b: number): void {
    this.reserve(1);
    this.bytes[this.length++] = b;
  }

  tag(c: string): void {
    this.byte(c.charCodeAt(0));
  }

  varint(n: number): void {
    let v = n >>> 0;
    do {
      let b = v & 0x7f;
      v >>>= 7;
      if (v !== 0) b |= 0x80;
      this.byte(b);
    } while (v !== 0);
  }

  zigzag(n: number): void {
    this.varint(((n << 1) ^ (n >> 31)) >>> 0);
  }

  double(n: number): void {
    const view = new DataView(new ArrayBuffer(8));
    view.setFloat64(0, n, true);
    this.raw(new Uint8Array(view.buffer));
  }

  raw(bytes: Uint8Array): void {
    this.reserve(bytes.length);
    this.bytes.set(bytes, this.length);
    this.length += bytes.length;
  }

  result(): Buffer {
    return Buffer.from(this.bytes.buffer, 0, this.length);
  }

  header(): void {
    this.byte(0xff);
    this.varint(VERSION);
  }

  string(s: string): void {
    let oneByte = true;
    for (let i = 0; i < s.length; i++) {
      if (s.charCodeAt(i) > 0xff) {
        oneByte = false;
        break;
      }
    }
    if (oneByte) {
      this.tag('"');
      this.varint(s.length);
      this.reserve(s.length);
      for (let i = 0; i < s.length; i++) this.bytes[this.length++] = s.charCodeAt(i);
      return;
    }
    const byteLength = s.length * 2;
    // V8 aligns two-byte strings: the payload starts at an even offset.
    if ((this.length + 1 + varintSize(byteLength)) & 1) this.byte(0);
    this.tag("c");
    this.varint(byteLength);
    this.reserve(byteLength);
    for (let i = 0; i < s.length; i++) {
      const c = s.charCodeAt(i);
      this.bytes[this.length++] = c & 0xff;
      this.bytes[this.length++] = c >> 8;
    }
  }

  number(n: number): void {
    if (isSmall(n)) {
      this.tag("I");
      this.zigzag(n);
    } else {
      this.tag("N");
      this.double(n);
    }
  }

  bigint(n: bigint): void {
    const negative = n < 0n;
    let magnitude = negative ? -n : n;
    const digits: number[] = [];
    while (magnitude > 0n) {
      digits.push(Number(magnitude & 0xffn));
      magnitude >>= 8n;
    }
    while (digits.length % 8 !== 0) digits.push(0);
    this.varint((digits.length << 1) | (negative ? 1 : 0));
    this.raw(Uint8Array.from(digits));
  }

  /** An object key: array indexes go as numbers, as V8 keeps them. */
  key(key: string): void {
    const index = Number(key);
    if (String(index) === key && Number.isInteger(index) && index >= 0 && index < 2 ** 32 - 1) {
      this.number(index);
    } else this.string(key);
  }

  properties(object: object, keys: readonly string[]): number {
    for (const key of keys) {
      this.key(key);
      this.value((object as Record<string, unknown>)[key]);
    }
    return keys.length;
  }

  value(value: unknown): void {
    switch (typeof value) {
      case "undefined":
        this.tag("_");
        return;
      case "boolean":
        this.tag(value ? "T" : "F");
        return;
      case "number":
        this.number(value);
        return;
      case "bigint":
        this.tag("Z");
        this.bigint(value);
        return;
      case "string":
        this.string(value);
        return;
      case "symbol":
      case "function":
        throw cloneError(value);
    }
    if (value === null) {
      this.tag("0");
      return;
    }
    this.object(value as object);
  }

  private object(object: object): void {
    const id = this.ids.get(object);
    if (id !== undefined) {
      this.tag("^");
      this.varint(id);
      return;
    }
    if (types.isProxy(object)) {
      // V8 refuses every proxy, naming it by its target, which only V8 sees without its traps.
      this.v8Verdict?.(object);
      throw new Error("#<Object> could not be cloned.");
    }
    if (object instanceof Promise || object instanceof WeakMap || object instanceof WeakSet) {
      throw cloneError(object);
    }
    this.ids.set(object, this.ids.size);
    if (ArrayBuffer.isView(object)) {
      const index = (VIEW_TYPES as readonly unknown[]).indexOf(object.constructor);
      if (index < 0) throw new Error(`Unserializable host object: ${String(object)}`);
      this.tag("\\");
      this.varint(index);
      this.varint(object.byteLength);
      this.raw(new Uint8Array(object.buffer, object.byteOffset, object.byteLength));
    } else if (object instanceof ArrayBuffer) {
      this.tag("B");
      this.varint(object.byteLength);
      this.raw(new Uint8Array(object));
    } else if (Array.isArray(object)) {
      this.array(object);
    } else if (object instanceof Date) {
      this.tag("D");
      this.double(object.getTime());
    } else if (object instanceof RegExp) {
      this.tag("R");
      this.string(object.source);
      let bits = 0;
      for (const flag of object.flags) bits |= REGEXP_BITS[flag] ?? 0;
      this.varint(bits);
    } else if (object instanceof Map) {
      this.tag(";");
      for (const [k, v] of object) {
        this.value(k);
        this.value(v);
      }
      this.tag(":");
      this.varint(object.size * 2);
    } else if (object instanceof Set) {
      this.tag("'");
      for (const v of object) this.value(v);
      this.tag(",");
      this.varint(object.size);
    } else if (object instanceof Error) {
      this.error(object);
    } else if (object instanceof Number) {
      this.tag("n");
      this.double(object.valueOf());
    } else if (object instanceof String) {
      this.tag("s");
      this.string(object.valueOf());
    } else if (object instanceof Boolean) {
      this.tag(object.valueOf() ? "y" : "x");
    } else if (object instanceof BigInt) {
      this.tag("z");
      this.bigint(object.valueOf() as bigint);
    } else {
      // V8 writes an ordinary object, a class instance included, as its own properties, and
      // refuses the other kinds not recognized above (`arguments`, an iterator, a generator, a
      // WeakRef, a SharedArrayBuffer), each of which has a tag of its own.
      if (Object.prototype.toString.call(object) !== "[object Object]") this.v8Verdict?.(object);
      this.tag("o");
      const count = this.properties(object, Object.keys(object));
      this.tag("{");
      this.varint(count);
    }
  }

  private array(array: unknown[]): void {
    const keys = Object.keys(array);
    let dense = true;
    for (let i = 0; i < array.length; i++) {
      if (!(i in array)) {
        dense = false;
        break;
      }
    }
    if (dense) {
      // V8 keeps an array of numbers that are not all small integers as doubles, and writes
      // every element of it as one.
      const doubles =
        array.every((item) => typeof item === "number") && array.some((item) => !isSmall(item as number));
      this.tag("A");
      this.varint(array.length);
      for (let i = 0; i < array.length; i++) {
        if (doubles) {
          this.tag("N");
          this.double(array[i] as number);
        } else this.value(array[i]);
      }
      const count = this.properties(array, keys.slice(array.length));
      this.tag("$");
      this.varint(count);
      this.varint(array.length);
      return;
    }
    this.tag("a");
    this.varint(array.length);
    const count = this.properties(array, keys);
    this.tag("@");
    this.varint(count);
    this.varint(array.length);
  }

  private error(error: Error): void {
    this.tag("r");
    const prototype = ERROR_PROTOTYPES[Object.getPrototypeOf(error)?.constructor?.name ?? ""];
    if (prototype) this.tag(prototype);
    const message = Object.getOwnPropertyDescriptor(error, "message");
    if (message && "value" in message) {
      this.tag("m");
      this.string(String(message.value));
    }
    const cause = Object.getOwnPropertyDescriptor(error, "cause");
    if (cause && "value" in cause) {
      this.tag("c");
      this.value(cause.value);
    }
    if (typeof error.stack === "string") {
      this.tag("s");
      this.string(error.stack);
    }
    this.tag(".");
  }
}

/** A number V8 holds as a small integer (32 bits in Node on x64), written as `I`. */
function isSmall(n: number): boolean {
  return Number.isInteger(n) && n >= -(2 ** 31) && n < 2 ** 31 && !Object.is(n, -0);
}

function varintSize(n: number): number {
  let size = 1;
  for (let v = n >>> 7; v !== 0; v >>>= 7) size++;
  return size;
}

/** Serializes `value` as Node's `v8.serialize` does. */
export function serialize(value: unknown): Buffer {
  return serializeByValue(value);
}

/**
 * Serializes `value` as `serialize` does: bytes that depend on the value alone. `v8Verdict`, where
 * V8 itself is at hand, throws V8's error for an object alone if V8 refuses it; the writer asks it
 * of a proxy and of an object of a kind it does not recognize, which it otherwise writes as a
 * plain object.
 */
export function serializeByValue(value: unknown, v8Verdict?: (object: object) => void): Buffer {
  const writer = new Writer(v8Verdict);
  writer.header();
  writer.value(value);
  return writer.result();
}

class Reader {
  private offset = 0;
  private readonly objects: unknown[] = [];

  constructor(private readonly bytes: Uint8Array) {}

  private fail(): never {
    throw new Error("Unable to deserialize cloned data.");
  }

  byte(): number {
    if (this.offset >= this.bytes.length) this.fail();
    return this.bytes[this.offset++] as number;
  }

  tag(): string {
    let b = this.byte();
    while (b === 0) b = this.byte();
    return String.fromCharCode(b);
  }

  varint(): number {
    let result = 0;
    let shift = 0;
    for (let i = 0; i < 5; i++) {
      const b = this.byte();
      result += (b & 0x7f) * 2 ** shift;
      if ((b & 0x80) === 0) return result;
      shift += 7;
    }
    return this.fail();
  }

  double(): number {
    const view = new DataView(this.take(8).slice().buffer);
    return view.getFloat64(0, true);
  }

  take(n: number): Uint8Array {
    if (this.offset + n > this.bytes.length) this.fail();
    const out = this.bytes.subarray(this.offset, this.offset + n);
    this.offset += n;
    return out;
  }

  header(): void {
    if (this.byte() !== 0xff) this.fail();
    this.varint();
  }

  string(tag: string): string {
    const length = this.varint();
    const bytes = this.take(length);
    if (tag === '"') return String.fromCharCode(...bytes);
    if (tag === "S") return new TextDecoder().decode(bytes);
    let out = "";
    for (let i = 0; i + 1 < bytes.length; i += 2) {
      out += String.fromCharCode((bytes[i] as number) | ((bytes[i + 1] as number) << 8));
    }
    return out;
  }

  bigint(): bigint {
    const bitfield = this.varint();
    const digits = this.take(bitfield >> 1);
    let n = 0n;
    for (let i = digits.length - 1; i >= 0; i--) n = (n << 8n) | BigInt(digits[i] as number);
    return bitfield & 1 ? -n : n;
  }

  private keep<T>(value: T): T {
    this.objects.push(value);
    return value;
  }

  /** Reads properties into `target` until `end`, whose count follows it. */
  private properties(target: Record<string, unknown>, end: string): void {
    for (;;) {
      const tag = this.tag();
      if (tag === end) return;
      const key = this.valueOf(tag);
      target[String(key)] = this.value();
    }
  }

  value(): unknown {
    return this.valueOf(this.tag());
  }

  private valueOf(tag: string): unknown {
    switch (tag) {
      case "_":
        return undefined;
      case "0":
        return null;
      case "T":
        return true;
      case "F":
        return false;
      case "I": {
        const z = this.varint();
        return z % 2 === 0 ? z / 2 : -(z + 1) / 2;
      }
      case "U":
        return this.varint();
      case "N":
        return this.double();
      case "Z":
        return this.bigint();
      case '"':
      case "c":
      case "S":
        return this.string(tag);
      case "^": {
        const id = this.varint();
        if (id >= this.objects.length) this.fail();
        return this.objects[id];
      }
      case "o": {
        const object = this.keep({} as Record<string, unknown>);
        this.properties(object, "{");
        this.varint();
        return object;
      }
      case "A":
      case "a": {
        const array = this.keep(new Array(this.varint()) as unknown[]);
        if (tag === "A") {
          for (let i = 0; i < array.length; i++) {
            const item = this.tag();
            if (item !== "-") array[i] = this.valueOf(item);
            else delete array[i];
          }
        }
        this.properties(array as unknown as Record<string, unknown>, tag === "A" ? "$" : "@");
        this.varint();
        this.varint();
        return array;
      }
      case "D":
        return this.keep(new Date(this.double()));
      case "R": {
        const source = this.string(this.tag());
        const bits = this.varint();
        let flags = "";
        for (const flag of REGEXP_FLAGS) if (bits & (REGEXP_BITS[flag] as number)) flags += flag;
        return this.keep(new RegExp(source, flags));
      }
      case ";": {
        const map = this.keep(new Map<unknown, unknown>());
        for (let t = this.tag(); t !== ":"; t = this.tag()) map.set(this.valueOf(t), this.value());
        this.varint();
        return map;
      }
      case "'": {
        const set = this.keep(new Set<unknown>());
        for (let t = this.tag(); t !== ","; t = this.tag()) set.add(this.valueOf(t));
        this.varint();
        return set;
      }
      case "B":
        return this.keep(this.take(this.varint()).slice().buffer);
      case "\\": {
        const Type = VIEW_TYPES[this.varint()];
        if (!Type) this.fail();
        const bytes = this.take(this.varint()).slice();
        // A Buffer comes back as the Uint8Array a structured clone gives (js/src/sim/stored-clone.ts).
        if (Type === Buffer) return this.keep(bytes);
        const size = (Type as { BYTES_PER_ELEMENT?: number }).BYTES_PER_ELEMENT ?? 1;
        return this.keep(
          new (Type as new (b: ArrayBuffer, o: number, l: number) => ArrayBufferView)(
            bytes.buffer,
            0,
            bytes.length / size,
          ),
        );
      }
      case "n":
        return this.keep(Object(this.double()));
      case "s":
        return this.keep(Object(this.string(this.tag())));
      case "y":
        return this.keep(Object(true));
      case "x":
        return this.keep(Object(false));
      case "z":
        return this.keep(Object(this.bigint()));
      case "r":
        return this.error();
      default:
        return this.fail();
    }
  }

  private error(): Error {
    const error = this.keep(new Error());
    delete (error as { stack?: string }).stack;
    for (let tag = this.tag(); tag !== "."; tag = this.tag()) {
      const Type = ERROR_CONSTRUCTORS[tag];
      if (Type) Object.setPrototypeOf(error, Type.prototype);
      else if (tag === "m") {
        Object.defineProperty(error, "message", {
          value: this.string(this.tag()),
          writable: true,
          configurable: true,
        });
      } else if (tag === "c") {
        Object.defineProperty(error, "cause", { value: this.value(), writable: true, configurable: true });
      } else if (tag === "s") {
        Object.defineProperty(error, "stack", {
          value: this.string(this.tag()),
          writable: true,
          configurable: true,
        });
      } else this.fail();
    }
    return error;
  }
}

/**
 * Node's `v8.DefaultDeserializer`, as far as the host uses it (`readHeader`, then `readValue`):
 * it reads bytes written by `serialize` (or by Node's `v8.serialize`).
 */
export class DefaultDeserializer {
  readonly #reader: Reader;

  constructor(bytes: Uint8Array) {
    // A plain view: a Buffer's `slice` would share memory where the reader needs copies.
    this.#reader = new Reader(new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength));
  }

  readHeader(): boolean {
    this.#reader.header();
    return true;
  }

  readValue(): unknown {
    return this.#reader.value();
  }
}

/** Deserializes bytes written by `serialize` (or by Node's `v8.serialize`). */
export function deserialize(bytes: Uint8Array): unknown {
  const reader = new DefaultDeserializer(bytes);
  reader.readHeader();
  return reader.readValue();
}
