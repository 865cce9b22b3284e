/**
 * What RPC does to the values it carries: a structured clone. Most calls carry primitives, or
 * plain objects and dense arrays of them (`charge(key, orderId, cents)` → `{ chargeId }`); those
 * are copied here directly, which in Node 20 costs a fraction of `structuredClone` (a round trip
 * through a MessageChannel). Anything else (a Date, a Map, a typed array, a class instance, a
 * function, a Proxy, an accessor, a sparse array…) goes to `structuredClone`, so its result, or
 * its DataCloneError, is the platform's own.
 */

import { types } from "node:util";
import { adoptDates } from "./durable-object-values.ts";

/** Nesting beyond which the copy leaves the value to `structuredClone`. */
const DEPTH_MAX = 64;

/** What `copyPlain` answers for a value it does not copy itself. */
const NOT_PLAIN: unique symbol = Symbol("not plain");

/**
 * `structuredClone(value)`, with the common cases copied directly, and the Dates in it made the
 * `Date` Worker code sees (the simulation's), so that they pass `instanceof Date` there.
 */
export function cloneValue<T>(value: T): T {
  if (typeof value !== "object" || value === null) {
    // Primitives clone to themselves; functions and symbols throw DataCloneError.
    return typeof value === "function" || typeof value === "symbol" ? structuredClone(value) : value;
  }
  const copy = copyPlain(value, new Map(), 0);
  return copy === NOT_PLAIN ? adoptDates(structuredClone(value)) : (copy as T);
}

/**
 * A copy of `value` if every object in it is a plain object or a dense array of data
 * properties (shared and circular references kept, as the clone keeps them), else `NOT_PLAIN`.
 * It reads no getter, so a value it gives up on is cloned as if it had never been looked at.
 */
function copyPlain(value: unknown, seen: Map<object, unknown>, depth: number): unknown {
  if (typeof value !== "object" || value === null) {
    return typeof value === "function" || typeof value === "symbol" ? NOT_PLAIN : value;
  }
  const copied = seen.get(value);
  if (copied !== undefined) return copied;
  if (depth >= DEPTH_MAX || types.isProxy(value)) return NOT_PLAIN;
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

/** The value of an own data property; `NOT_PLAIN` for an accessor. */
function dataValue(object: object, key: string | number): unknown {
  const descriptor = Object.getOwnPropertyDescriptor(object, key);
  return descriptor && "value" in descriptor ? descriptor.value : NOT_PLAIN;
}
