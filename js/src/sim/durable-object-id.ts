/**
 * Durable Object ids: 32 bytes shown as 64 lowercase hex digits, as `toString()` gives them.
 *
 * The derivation follows the structure workerd gives its ids (src/workerd/server/actor-id-impl):
 * the namespace has a key (here SHA-256 of the namespace's store prefix, which names the class
 * and the Worker defining it); the first 16 bytes are HMAC(key, name) for `idFromName` or random
 * bytes for `newUniqueId`, and the last 16 are HMAC(key, first 16 bytes), so `idFromString` can
 * tell an id of this namespace from any other 64 hex digits. Production ids carry more inside;
 * Workers only ever see them as opaque hex, which this keeps.
 *
 * Ids derive with Node's hashing in the host: deterministic, so `durableObjectStore` can compute
 * the store of a named object from its name outside any run.
 */

import { createHash, createHmac } from "node:crypto";

const HALF_BYTES = 16;

/** The messages workerd's `idFromString` throws (as TypeErrors). */
const NOT_HEX = "Invalid Durable Object ID: must be 64 hex digits";
const OTHER_NAMESPACE = "Durable Object ID is not valid for this namespace.";

export class SimDurableObjectId {
  readonly #hex: string;
  /** The namespace that minted it: `get` refuses an id of another namespace. */
  readonly #namespace: string;
  readonly name: string | undefined;

  constructor(namespace: string, hex: string, name: string | undefined) {
    this.#namespace = namespace;
    this.#hex = hex;
    this.name = name;
  }

  toString(): string {
    return this.#hex;
  }

  equals(other: unknown): boolean {
    return other instanceof SimDurableObjectId && other.#hex === this.#hex;
  }

  /** @internal True when the id was minted by the namespace whose key is `namespace`. */
  belongsTo(namespace: string): boolean {
    return this.#namespace === namespace;
  }
}

/**
 * Names' ids and namespaces' keys already derived: a Worker asks for the same few objects by name
 * in every run, and Node's hashing objects cost more than the rest of a stub call. Past this many
 * entries a cache starts over (names built from request data are new every time).
 */
const DERIVED_MAX = 4096;
const keys = new Map<string, Buffer>();
/** Per namespace, the hex of each name's id. */
const namedHex = new Map<string, Map<string, string>>();

function remember<V>(cache: Map<string, V>, key: string, value: V): V {
  if (cache.size >= DERIVED_MAX) cache.clear();
  cache.set(key, value);
  return value;
}

function keyOf(namespace: string): Buffer {
  return (
    keys.get(namespace) ?? remember(keys, namespace, createHash("sha256").update(namespace, "utf8").digest())
  );
}

function withMac(key: Buffer, first: Uint8Array): string {
  const mac = createHmac("sha256", key).update(first).digest().subarray(0, HALF_BYTES);
  return Buffer.concat([Buffer.from(first), mac]).toString("hex");
}

/** The id hex `idFromName(name)` gives in the namespace keyed `namespace`. */
export function hexFromName(namespace: string, name: string): string {
  const names = namedHex.get(namespace) ?? remember(namedHex, namespace, new Map<string, string>());
  const known = names.get(name);
  if (known !== undefined) return known;
  const key = keyOf(namespace);
  const first = createHmac("sha256", key).update(name, "utf8").digest().subarray(0, HALF_BYTES);
  return remember(names, name, withMac(key, first));
}

export function idFromName(namespace: string, name: string): SimDurableObjectId {
  return new SimDurableObjectId(namespace, hexFromName(namespace, name), name);
}

/**
 * A fresh id. Its random half comes from `crypto.getRandomValues`, which the simulation answers
 * from the running invocation's stream, so a replay mints the same ids.
 */
export function newUniqueId(namespace: string): SimDurableObjectId {
  const first = crypto.getRandomValues(new Uint8Array(HALF_BYTES));
  return new SimDurableObjectId(namespace, withMac(keyOf(namespace), first), undefined);
}

/** Parses an id's `toString()`; throws workerd's TypeErrors for bad text or another namespace's id. */
export function idFromString(namespace: string, text: unknown): SimDurableObjectId {
  const hex = String(text);
  if (!/^[0-9a-fA-F]{64}$/.test(hex)) throw new TypeError(NOT_HEX);
  const lower = hex.toLowerCase();
  const first = Buffer.from(lower.slice(0, HALF_BYTES * 2), "hex");
  if (withMac(keyOf(namespace), first) !== lower) throw new TypeError(OTHER_NAMESPACE);
  return new SimDurableObjectId(namespace, lower, undefined);
}

export function otherNamespace(): TypeError {
  return new TypeError(OTHER_NAMESPACE);
}
