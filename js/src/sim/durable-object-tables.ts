/**
 * The tables behind a Durable Object's key-value API and alarm (`_cf_KV`, `_cf_ALARM` in its
 * engine store), and the operations the storage and its transactions share over them.
 */

import type { ObjectStore } from "./durable-object-store.ts";
import { compareKeys, decodeEntries, decodeValue } from "./durable-object-values.ts";
import { real } from "./globals.ts";

/** What the storage needs from the object it belongs to. */
export interface StorageHooks {
  /** Queues the delivery of the alarm set as `generation`. */
  alarmSet(generation: number): void;
  /** Throws unless the object's class has an `alarm()` handler. */
  requireAlarmHandler(): void;
  /** The generation of the alarm whose handler is running, hidden from `getAlarm`. */
  runningAlarm(): number | undefined;
  /** Traces a storage call as the object's (`storage.get("k") -> 1`), when the run keeps a trace. */
  note?(line: () => string): void;
  /**
   * Runs `work` as a critical section: no other call reaches the object until it settles, and
   * (unlike `blockConcurrencyWhile`) its failure does not reset the object. workerd runs
   * `transaction()` so. Without it, `work` just runs.
   */
  critical?<T>(work: () => Promise<T>): Promise<T>;
  /** Calls `callback` if the invocation running now dies (mid-transaction). */
  onAbandon?(callback: () => void): void;
  /**
   * The error every storage call fails with once the object was reset under this instance (a
   * new copy each time), or undefined while it is still the object.
   */
  gone?(): Error | undefined;
}

/**
 * Throws if the object was reset under the instance this storage belongs to: nothing the old
 * instance does reaches storage any more (durable-object-instance.ts, `reset`). `call` names the
 * storage call in the trace.
 */
export function requireCurrent(hooks: StorageHooks, call: string): void {
  const error = hooks.gone?.();
  if (!error) return;
  hooks.note?.(() => `${call} failed: the object was reset, and this instance is no longer it`);
  throw error;
}

export interface ListOptions {
  readonly start?: string;
  readonly startAfter?: string;
  readonly end?: string;
  readonly prefix?: string;
  readonly reverse?: boolean;
  readonly limit?: number;
}

/** The key-value operations a transaction buffers and the storage applies at once. */
export type Write = readonly [key: string, value: Uint8Array | null];
export type AlarmChange = { readonly time: number | null };

/** The alarm set on the object at the end of a run or when its delivery comes, if any. */
export function readAlarm(store: ObjectStore): { time: number; generation: number } | undefined {
  const row = store.alarmIfExists("SELECT time, generation FROM _cf_ALARM WHERE id = 1 AND time IS NOT NULL")
    .rows[0];
  return row ? { time: Number(row[0]), generation: Number(row[1]) } : undefined;
}

/** Clears the alarm if it is still the one set as `generation` (its handler succeeded or gave up). */
export function clearAlarm(store: ObjectStore, generation: number): void {
  store.alarmIfExists("UPDATE _cf_ALARM SET time = NULL WHERE id = 1 AND generation = ?1", [generation]);
}

export function visibleAlarm(store: ObjectStore, hooks: StorageHooks): number | null {
  const alarm = readAlarm(store);
  // Docs: during the handler getAlarm returns null unless setAlarm was called since it started.
  if (!alarm || alarm.generation === hooks.runningAlarm()) return null;
  return alarm.time;
}

/**
 * The time `setAlarm` was given, in milliseconds since the epoch: a number or a Date, refused as
 * workerd refuses anything else (its `kj::Date` parameter) and a number or Date that is not a
 * valid time.
 */
export function alarmTime(value: unknown): number {
  if (typeof value !== "number" && !(value instanceof real.Date)) {
    throw new TypeError(
      "Failed to execute 'setAlarm' on 'DurableObjectStorage': parameter 1 is not of type 'date'.",
    );
  }
  const time = typeof value === "number" ? value : value.getTime();
  if (!Number.isFinite(time)) {
    throw new TypeError("The value cannot be converted because it is not a valid Date.");
  }
  return time;
}

export function readOne(store: ObjectStore, key: string): unknown {
  let bytes = store.remembered(key);
  if (bytes === undefined) {
    const row = store.kvIfExists("SELECT value FROM _cf_KV WHERE key = ?1", [key]).rows[0];
    bytes = row ? (row[0] as Uint8Array) : null;
    store.remember(key, bytes);
  }
  return bytes === null ? undefined : decodeValue(bytes);
}

export function readMany(store: ObjectStore, keys: string[]): Map<string, unknown> {
  if (keys.length === 0) return new Map();
  const known = keys.map((key) => store.remembered(key));
  if (known.every((bytes) => bytes !== undefined)) {
    const entries = keys.flatMap((key, i): [string, Uint8Array][] => {
      const bytes = known[i];
      return bytes ? [[key, bytes]] : [];
    });
    return decodeEntries(entries.sort(([a], [b]) => compareKeys(a, b)));
  }
  const marks = keys.map((_, i) => `?${i + 1}`).join(", ");
  const result = store.kvIfExists(`SELECT key, value FROM _cf_KV WHERE key IN (${marks}) ORDER BY key`, keys);
  const found = result.rows.map((row): [string, Uint8Array] => [String(row[0]), row[1] as Uint8Array]);
  for (const key of keys) store.remember(key, null);
  for (const [key, bytes] of found) store.remember(key, bytes);
  return decodeEntries(found);
}

/** Applies writes (a null value deletes) as one batch; says how many keys existed before. */
export function applyWrites(store: ObjectStore, writes: readonly Write[]): number {
  if (writes.length === 0) return 0;
  store.ensureKv();
  const results = store.batch(
    writes.map(([key, value]) =>
      value === null
        ? { sql: "DELETE FROM _cf_KV WHERE key = ?1", params: [key] }
        : {
            sql: "INSERT INTO _cf_KV (key, value) VALUES (?1, ?2) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            params: [key, value],
          },
    ),
  );
  for (const [key, value] of writes) store.remember(key, value);
  return results.reduce((sum, result) => sum + result.changes, 0);
}

export function scan(store: ObjectStore, options: ListOptions): [string, Uint8Array][] {
  const where: string[] = [];
  const params: unknown[] = [];
  const bind = (clause: string, value: unknown) => {
    params.push(value);
    where.push(clause.replaceAll("?", `?${params.length}`));
  };
  if (options.start !== undefined) bind("key >= ?", options.start);
  if (options.startAfter !== undefined) bind("key > ?", options.startAfter);
  if (options.end !== undefined) bind("key < ?", options.end);
  if (options.prefix !== undefined) bind("substr(key, 1, length(?)) = ?", options.prefix);
  const clauses = where.length ? ` WHERE ${where.join(" AND ")}` : "";
  const limit = options.limit === undefined ? "" : ` LIMIT ${options.limit}`;
  const order = options.reverse ? "DESC" : "ASC";
  const result = store.kvIfExists(
    `SELECT key, value FROM _cf_KV${clauses} ORDER BY key ${order}${limit}`,
    params,
  );
  return result.rows.map((row) => [String(row[0]), row[1] as Uint8Array]);
}

export function listOptions(options: ListOptions): ListOptions {
  if (options.start !== undefined && options.startAfter !== undefined) {
    throw new TypeError("list() cannot be called with both start and startAfter values.");
  }
  if (options.limit !== undefined && !(Number.isInteger(options.limit) && options.limit > 0)) {
    throw new TypeError("List limit must be positive.");
  }
  const text = (value: unknown) => (value === undefined ? undefined : String(value));
  return {
    start: text(options.start),
    startAfter: text(options.startAfter),
    end: text(options.end),
    prefix: text(options.prefix),
    reverse: options.reverse === true,
    limit: options.limit,
  } as ListOptions;
}

/** The range check `scan` makes in SQL, for keys a transaction has written. */
export function inRange(key: string, options: ListOptions): boolean {
  if (options.start !== undefined && compareKeys(key, options.start) < 0) return false;
  if (options.startAfter !== undefined && compareKeys(key, options.startAfter) <= 0) return false;
  if (options.end !== undefined && compareKeys(key, options.end) >= 0) return false;
  if (options.prefix !== undefined && !key.startsWith(options.prefix)) return false;
  return true;
}

/** Runs a storage call; its result or its error becomes the promise the API returns. */
export function attempt<T>(call: () => T): Promise<T> {
  try {
    return Promise.resolve(call());
  } catch (error) {
    return Promise.reject(error);
  }
}
