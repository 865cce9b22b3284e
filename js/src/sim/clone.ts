/**
 * What RPC does to the values it carries: a structured clone. Most calls carry primitives, or
 * plain objects and dense arrays of them (`charge(key, orderId, cents)` → `{ chargeId }`); those
 * are copied here directly, which in Node 20 costs a fraction of `structuredClone`. Anything else
 * (a Date, a Map, a typed array, a function, a Proxy, an accessor, a sparse array…) goes to
 * `structuredClone`, so its result, or its DataCloneError, is the platform's own; except an
 * instance of a class of the Worker's own, which Workers RPC refuses ("Could not serialize
 * object of type …") where `structuredClone` would copy it as a plain object. A `Request`,
 * `Response`, `Headers` or `ReadableStream` (alone, or in plain objects and arrays) crosses as
 * Workers RPC carries it: a new one with the same parts, its body stream moved, so the sender's
 * is used up. A function, or an instance of an `RpcTarget` class, crosses as a stub: calling it
 * (or a method of it) calls the original, with arguments and result crossing the same way.
 */

import { types } from "node:util";
import { real } from "./globals.ts";
import { notImplemented } from "./rpc-errors.ts";
import { RpcTarget } from "./workers-module.ts";

/** Nesting beyond which the copy leaves the value to `structuredClone`. */
const DEPTH_MAX = 64;

/** What `copyPlain` answers for a value it does not copy itself. */
const NOT_PLAIN: unique symbol = Symbol("not plain");

/**
 * `structuredClone(value)`, with the common cases copied directly, and the Dates in it made the
 * `Date` Worker code sees (the simulation's), so that they pass `instanceof Date` there.
 */
export function cloneValue<T>(value: T, from?: StubHome): T {
  if (from === undefined) return cloneHere(value);
  const outer = home;
  home = from;
  try {
    return cloneHere(value);
  } finally {
    home = outer;
  }
}

/** Where the code behind a stub runs, and who holds the stub: for a value a Durable Object answered. */
export interface StubHome {
  /**
   * A call through one of the stubs (`label` names it, `Lease.ping`): a call on the object, an
   * effect of the caller that the object serves, as a call of its own methods is.
   */
  call<T>(label: string, serve: () => T | Promise<T>): Promise<T>;
  /** The end of the invocation that received the stubs, when the runtime disposes them. */
  whenOver(dispose: () => void): void;
}

/** The home of the stubs the clone under way makes; undefined where they run in the caller. */
let home: StubHome | undefined;

function cloneHere<T>(value: T): T {
  // A stub passed on is the same stub: it still reaches the object it was made for.
  if ((typeof value === "function" || typeof value === "object") && value !== null && stubs.has(value)) {
    return value;
  }
  if (typeof value === "function") return functionStub(value as (...args: unknown[]) => unknown) as T;
  if (typeof value !== "object" || value === null) {
    // Primitives clone to themselves; symbols throw DataCloneError.
    return typeof value === "symbol" ? structuredClone(value) : value;
  }
  const copy = copyPlain(value, new Map(), 0);
  if (copy !== NOT_PLAIN) return copy as T;
  refuseClassInstances(value);
  return adoptDates(structuredClone(value));
}

/** Prototypes of what a structured clone carries: plain objects and the platform's own types. */
const CLONEABLE_PROTOTYPES: ReadonlySet<object | null> = new Set<object | null>([
  null,
  Object.prototype,
  Array.prototype,
  Date.prototype,
  RegExp.prototype,
  Map.prototype,
  Set.prototype,
  ArrayBuffer.prototype,
  DataView.prototype,
  Boolean.prototype,
  Number.prototype,
  String.prototype,
  BigInt.prototype,
  Error.prototype,
  EvalError.prototype,
  RangeError.prototype,
  ReferenceError.prototype,
  SyntaxError.prototype,
  TypeError.prototype,
  URIError.prototype,
  ...[Int8Array, Uint8Array, Uint8ClampedArray, Int16Array, Uint16Array, Int32Array, Uint32Array]
    .concat([Float32Array, Float64Array, BigInt64Array, BigUint64Array] as never[])
    .map((type) => type.prototype),
]);

/**
 * Objects of the platform's that Workers RPC refuses to carry, with the type workerd names: a
 * Durable Object's stub (`DurableObject`), which its namespace makes (durable-objects.ts). A
 * `structuredClone` of one (a Proxy) would say only `#<Object> could not be cloned.`.
 */
const unserializable = new WeakMap<object, string>();

/** Marks `item` as one Workers RPC refuses, naming it `type` in the DataCloneError. */
export function refuseOverRpc(item: object, type: string): void {
  unserializable.set(item, type);
}

/** Objects `refuseClassInstances` visits at most; past them the clone decides. */
const REFUSE_VISITS_MAX = 100_000;

/**
 * Throws Workers RPC's DataCloneError for the first object in `value` whose prototype is a class
 * the Worker defined (its Dates, which the simulation makes its own subclass's, are Dates), or
 * that the platform's RPC does not carry (`refuseOverRpc`).
 */
function refuseClassInstances(value: unknown): void {
  walkObjects(value, REFUSE_VISITS_MAX, (item) => {
    const refused = unserializable.get(item);
    const prototype = Object.getPrototypeOf(item);
    if (refused === undefined) {
      if (CLONEABLE_PROTOTYPES.has(prototype) || item instanceof Date || item instanceof Error) return true;
      // Platform objects (a Response, a stream) are the clone's to refuse or copy.
      if (isRpcTarget(item) || isPlatformObject(item)) return false;
    }
    const name =
      refused ?? ((prototype as { constructor?: { name?: string } } | null)?.constructor?.name || "Object");
    throw new DOMException(
      `Could not serialize object of type "${name}". This type does not support serialization.`,
      "DataCloneError",
    );
  });
}

/** Objects one `adoptDates` call visits at most, so a huge value cannot stall a run. */
const ADOPT_VISITS_MAX = 1_000_000;

/**
 * Gives the Dates inside a structured clone the prototype of the `Date` Worker code sees. The
 * simulation replaces `Date` with a subclass answering the virtual clock, while V8's
 * deserializer and `structuredClone` make instances of the original; without this, a Date read
 * back from storage or received over RPC or a queue would fail `instanceof Date` in the Worker.
 */
export function adoptDates<T>(value: T): T {
  const SimDate = globalThis.Date;
  walkObjects(value, ADOPT_VISITS_MAX, (item) => {
    if (!(item instanceof real.Date)) return true;
    if (!(item instanceof SimDate)) Object.setPrototypeOf(item, SimDate.prototype);
    return false;
  });
  return value;
}

/**
 * Calls `visit` once for each object in `value`, up to `max` of them: `value` itself, then, where
 * `visit` answers true, a Map's keys and values, a Set's values, or an object's own data
 * properties (no getter runs). Bytes and proxies are not entered; a proxy `refuseOverRpc` marked
 * (a stub) is visited, not entered.
 */
function walkObjects(value: unknown, max: number, visit: (item: object) => boolean): void {
  const seen = new Set<object>();
  const stack: unknown[] = [value];
  while (stack.length > 0 && seen.size < max) {
    const item = stack.pop();
    if (typeof item !== "object" || item === null || seen.has(item)) continue;
    if (types.isProxy(item) && !unserializable.has(item)) continue;
    seen.add(item);
    if (!visit(item) || ArrayBuffer.isView(item)) continue;
    if (item instanceof Map) for (const [k, v] of item) stack.push(k, v);
    else if (item instanceof Set) for (const v of item) stack.push(v);
    else {
      for (const key of Object.keys(item)) {
        const descriptor = Object.getOwnPropertyDescriptor(item, key);
        if (descriptor && "value" in descriptor) stack.push(descriptor.value);
      }
    }
  }
}

function isPlatformObject(item: object): boolean {
  return (
    item instanceof Request ||
    item instanceof Response ||
    item instanceof Headers ||
    item instanceof ReadableStream ||
    item instanceof WritableStream ||
    item instanceof Blob ||
    item instanceof URL
  );
}

/** An `RpcTarget` (cloudflare:workers), which Workers RPC passes by reference, as a stub. */
export function isRpcTarget(item: object): boolean {
  for (let p = Object.getPrototypeOf(item); p !== null; p = Object.getPrototypeOf(p)) {
    if (p === RpcTarget.prototype) return true;
  }
  return false;
}

/**
 * A copy of `value` if every object in it is a plain object or a dense array of data
 * properties (shared and circular references kept, as the clone keeps them), else `NOT_PLAIN`.
 * It reads no getter, so a value it gives up on is cloned as if it had never been looked at.
 */
function copyPlain(value: unknown, seen: Map<object, unknown>, depth: number): unknown {
  if (typeof value === "function") {
    return stubs.has(value) ? value : functionStub(value as (...args: unknown[]) => unknown);
  }
  if (typeof value !== "object" || value === null) {
    return typeof value === "symbol" ? NOT_PLAIN : value;
  }
  const copied = seen.get(value);
  if (copied !== undefined) return copied;
  if (depth >= DEPTH_MAX || types.isProxy(value)) return NOT_PLAIN;
  const moved = transferred(value);
  if (moved !== NOT_PLAIN) {
    seen.set(value, moved);
    return moved;
  }
  const prototype = Object.getPrototypeOf(value);
  const keys = Object.keys(value);
  if (Array.isArray(value)) {
    // Holes and extra properties are what `structuredClone` keeps and this copy would not.
    if (prototype !== Array.prototype || keys.length !== value.length) return NOT_PLAIN;
    const copy: unknown[] = new Array(value.length);
    seen.set(value, copy);
    for (let i = 0; i < value.length; i++) {
      const item = copyPlain(dataValue(value, i), seen, depth + 1);
      if (item === NOT_PLAIN) return NOT_PLAIN;
      copy[i] = item;
    }
    return copy;
  }
  if (prototype !== Object.prototype && prototype !== null) return NOT_PLAIN;
  const copy: Record<string, unknown> = {};
  seen.set(value, copy);
  for (const key of keys) {
    // Assigning `__proto__` would set the copy's prototype instead of a property.
    if (key === "__proto__") return NOT_PLAIN;
    const item = copyPlain(dataValue(value, key), seen, depth + 1);
    if (item === NOT_PLAIN) return NOT_PLAIN;
    copy[key] = item;
  }
  return copy;
}

/**
 * The receiver's copy of a platform object Workers RPC carries, or `NOT_PLAIN`. Building a
 * Request from a Request, a Response or a stream from a body, takes the body over (the Fetch
 * standard's "create a proxy"), which leaves the sender's used, as a transfer does.
 */
function transferred(value: object): unknown {
  if (value instanceof Request) return new Request(value);
  if (value instanceof Response) {
    return new Response(value.body, {
      status: value.status,
      statusText: value.statusText,
      headers: value.headers,
    });
  }
  if (value instanceof Headers) return new Headers(value);
  if (value instanceof ReadableStream) return value.pipeThrough(new TransformStream());
  if (isRpcTarget(value)) return targetStub(value);
  return NOT_PLAIN;
}

/**
 * A function as the receiver gets it: a stub whose call runs the original where it was made and
 * answers a promise; arguments and result cross as any RPC value does.
 */
function functionStub(fn: (...args: unknown[]) => unknown): (...args: unknown[]) => Promise<unknown> {
  const at = home;
  const stub = at
    ? (...args: unknown[]) =>
        at.call(fn.name || "function", () => fn(...cloneValue(args))).then((value) => cloneValue(value, at))
    : (...args: unknown[]) => Promise.resolve().then(async () => cloneValue(await fn(...cloneValue(args))));
  stubs.add(stub);
  return stub;
}

/** The stubs this module made, which cross again as themselves. */
const stubs = new WeakSet<object>();

/** workerd's error for a call or read through a stub that was disposed. */
const DISPOSED = "RPC stub used after being disposed.";

/**
 * An `RpcTarget` as the receiver gets it (compared with Miniflare's workerd): a stub on which
 * every name is something to call or to await. Calling runs the target's method; awaiting reads
 * a getter of its class. Its own fields stay behind: both reject as workerd does, as a method it
 * does not implement. Disposing the stub (`using`, `[Symbol.dispose]()`) calls the target's own
 * `[Symbol.dispose]`, once every stub `dup()` made of it is disposed too, after which the stub
 * answers only with workerd's error. The stubs a Durable Object gave out are disposed too when
 * the invocation that received them ends, as workerd disposes what a request still holds.
 */
function targetStub(target: object, shared = { stubs: 0 }, at = home): unknown {
  shared.stubs++;
  const named = (key: string) => `${target.constructor?.name || "RpcTarget"}.${key}`;
  let disposed = false;
  const usable = () => {
    if (disposed) throw new Error(DISPOSED);
  };
  const member = (key: string) => {
    const own = Object.hasOwn(target, key);
    const get = () => {
      usable();
      if (own || !(key in target)) throw notImplemented(key);
      return Reflect.get(target, key);
    };
    const apply = (args: unknown[]) => {
      usable();
      const method = own ? undefined : Reflect.get(target, key);
      if (typeof method !== "function") throw notImplemented(key);
      return Reflect.apply(method, target, cloneValue(args));
    };
    // A disposed stub answers at once, without reaching the target's side.
    const read = async (): Promise<unknown> => {
      usable();
      return at ? at.call(named(key), get).then((value) => cloneValue(value, at)) : cloneValue(get());
    };
    const call = (...args: unknown[]) =>
      Promise.resolve().then(async () => {
        usable();
        return at
          ? cloneValue(await at.call(named(key), () => apply(args)), at)
          : cloneValue(await apply(args));
      });
    return Object.assign(call, {
      // biome-ignore lint/suspicious/noThenProperty: awaiting a member reads it, as on a stub.
      then: (resolve: (value: unknown) => unknown, reject: (error: unknown) => unknown) =>
        read().then(resolve, reject),
    });
  };
  const dispose = () => {
    if (disposed) return;
    disposed = true;
    if (--shared.stubs > 0) return;
    // The target's side hears of it later, as a message; what its disposer throws stays there.
    const disposer = Reflect.get(target, Symbol.dispose);
    if (typeof disposer === "function") {
      Promise.resolve()
        .then(() => Reflect.apply(disposer, target, []))
        .catch(() => {});
    }
  };
  // The runtime disposes what a request still holds when it ends.
  at?.whenOver(dispose);
  const stub = new Proxy(() => {}, {
    get(_stub, key) {
      // Awaiting the stub itself gives the stub.
      if (key === "then") return undefined;
      if (key === Symbol.dispose) return dispose;
      if (typeof key === "symbol") return undefined;
      if (key === "dup") {
        return () => {
          usable();
          return targetStub(target, shared, at);
        };
      }
      return member(key);
    },
  });
  stubs.add(stub);
  return stub;
}

/** The value of an own data property; `NOT_PLAIN` for an accessor. */
function dataValue(object: object, key: string | number): unknown {
  const descriptor = Object.getOwnPropertyDescriptor(object, key);
  return descriptor && "value" in descriptor ? descriptor.value : NOT_PLAIN;
}
