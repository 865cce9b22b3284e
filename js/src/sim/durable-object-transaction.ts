/**
 * The `txn` of `ctx.storage.transaction(async txn => …)`. For a key-value-backed object
 * (`SimDurableObjectTransaction`) its writes (and alarm changes) are buffered and applied together
 * as one engine batch when the closure resolves, and dropped when it throws or calls
 * `rollback()`; its reads see its own writes first. For a SQLite-backed object
 * (`SimSqliteTransaction`) the transaction is a savepoint the storage opened, so `txn` passes its
 * calls on to the storage, and `rollback()` undoes the savepoint.
 */

import type { ObjectStore } from "./durable-object-store.ts";
import {
  type AlarmChange,
  alarmTime,
  applyWrites,
  attempt,
  inRange,
  type ListOptions,
  listOptions,
  readOne,
  requireCurrent,
  type StorageHooks,
  scan,
  visibleAlarm,
} from "./durable-object-tables.ts";
import {
  checkedKey,
  decodeEntries,
  decodeValue,
  encodeValue,
  KEYS_PER_CALL_MAX,
  keyList,
  keyOf,
  sortKeys,
  tooManyKeys,
  undefinedValue,
} from "./durable-object-values.ts";

export class SimDurableObjectTransaction {
  readonly #writes = new Map<string, Uint8Array | null>();
  #alarm: AlarmChange | undefined;
  #rolledBack = false;

  constructor(
    private readonly store: ObjectStore,
    private readonly hooks: StorageHooks,
    private readonly sqlite: boolean,
  ) {}

  get(keys: unknown, _options?: unknown): Promise<unknown> {
    return attempt(() => {
      requireCurrent(this.hooks, "txn.get()");
      if (!Array.isArray(keys)) return this.#read(keyOf(keys, this.sqlite));
      const found = new Map<string, unknown>();
      for (const key of sortKeys(keyList(keys, this.sqlite))) {
        const value = this.#read(key);
        if (value !== undefined) found.set(key, value);
      }
      return found;
    });
  }

  put(keyOrEntries: unknown, value?: unknown, _options?: unknown): Promise<void> {
    return attempt(() => {
      requireCurrent(this.hooks, "txn.put()");
      if (typeof keyOrEntries === "object" && keyOrEntries !== null && !Array.isArray(keyOrEntries)) {
        const entries = Object.entries(keyOrEntries);
        if (entries.length > KEYS_PER_CALL_MAX) throw tooManyKeys();
        for (const [key, v] of entries)
          this.#writes.set(checkedKey(key, this.sqlite), encodeValue(key, v, this.sqlite));
        return;
      }
      const key = keyOf(keyOrEntries, this.sqlite);
      if (value === undefined) throw undefinedValue();
      this.#writes.set(key, encodeValue(key, value, this.sqlite));
    });
  }

  delete(keys: unknown, _options?: unknown): Promise<boolean | number> {
    return attempt(() => {
      requireCurrent(this.hooks, "txn.delete()");
      const many = Array.isArray(keys);
      let deleted = 0;
      for (const key of many ? keyList(keys, this.sqlite) : [keyOf(keys, this.sqlite)]) {
        if (this.#read(key) !== undefined) deleted++;
        this.#writes.set(key, null);
      }
      return many ? deleted : deleted > 0;
    });
  }

  list(options: ListOptions = {}): Promise<Map<string, unknown>> {
    return attempt(() => {
      requireCurrent(this.hooks, "txn.list()");
      const range = listOptions(options);
      const merged = new Map<string, Uint8Array>(scan(this.store, { ...range, limit: undefined }));
      for (const [key, value] of this.#writes) {
        if (!inRange(key, range)) continue;
        if (value === null) merged.delete(key);
        else merged.set(key, value);
      }
      const keys = sortKeys([...merged.keys()]);
      if (range.reverse) keys.reverse();
      const kept = range.limit === undefined ? keys : keys.slice(0, range.limit);
      return decodeEntries(kept.map((key) => [key, merged.get(key) as Uint8Array]));
    });
  }

  rollback(): void {
    this.#rolledBack = true;
  }

  getAlarm(_options?: unknown): Promise<number | null> {
    return attempt(() => {
      requireCurrent(this.hooks, "txn.getAlarm()");
      return this.#alarm ? this.#alarm.time : visibleAlarm(this.store, this.hooks);
    });
  }

  setAlarm(scheduledTime: unknown, _options?: unknown): Promise<void> {
    return attempt(() => {
      requireCurrent(this.hooks, "txn.setAlarm()");
      const time = alarmTime(scheduledTime);
      this.hooks.requireAlarmHandler();
      this.#alarm = { time };
    });
  }

  deleteAlarm(_options?: unknown): Promise<void> {
    return attempt(() => {
      requireCurrent(this.hooks, "txn.deleteAlarm()");
      this.#alarm = { time: null };
    });
  }

  /** @internal Applies the buffered writes as one batch, unless rolled back. */
  commit(changeAlarm: (change: AlarmChange) => void): void {
    if (this.#rolledBack) return;
    applyWrites(this.store, [...this.#writes]);
    if (this.#alarm) changeAlarm(this.#alarm);
  }

  #read(key: string): unknown {
    if (this.#writes.has(key)) {
      const value = this.#writes.get(key);
      return value ? decodeValue(value) : undefined;
    }
    return readOne(this.store, key);
  }
}

/** The storage calls a SQLite-backed object's `txn` passes on to `ctx.storage`. */
interface Storage {
  get(keys: unknown, options?: unknown): Promise<unknown>;
  put(keyOrEntries: unknown, value?: unknown, options?: unknown): Promise<void>;
  delete(keys: unknown, options?: unknown): Promise<boolean | number>;
  deleteAll(options?: unknown): Promise<void>;
  list(options?: ListOptions): Promise<Map<string, unknown>>;
  getAlarm(options?: unknown): Promise<number | null>;
  setAlarm(scheduledTime: unknown, options?: unknown): Promise<void>;
  deleteAlarm(options?: unknown): Promise<void>;
}

export class SimSqliteTransaction {
  constructor(
    private readonly storage: Storage,
    /** Undoes the transaction's savepoint; as in workerd, at once, not when the closure ends. */
    private readonly undo: () => void,
  ) {}

  get(keys: unknown, options?: unknown): Promise<unknown> {
    return this.storage.get(keys, options);
  }

  put(keyOrEntries: unknown, value?: unknown, options?: unknown): Promise<void> {
    return this.storage.put(keyOrEntries, value, options);
  }

  delete(keys: unknown, options?: unknown): Promise<boolean | number> {
    return this.storage.delete(keys, options);
  }

  deleteAll(options?: unknown): Promise<void> {
    return this.storage.deleteAll(options);
  }

  list(options?: ListOptions): Promise<Map<string, unknown>> {
    return this.storage.list(options);
  }

  rollback(): void {
    this.undo();
  }

  getAlarm(options?: unknown): Promise<number | null> {
    return this.storage.getAlarm(options);
  }

  setAlarm(scheduledTime: unknown, options?: unknown): Promise<void> {
    return this.storage.setAlarm(scheduledTime, options);
  }

  deleteAlarm(options?: unknown): Promise<void> {
    return this.storage.deleteAlarm(options);
  }
}
