/**
 * `ctx.storage` of a Durable Object: the key-value API, transactions, the alarm, and (for
 * SQLite-backed classes) `sql` and `transactionSync`, over the object's engine store.
 *
 * Sources: Cloudflare's docs, "Durable Object Storage" (developers.cloudflare.com/durable-objects/
 * api/storage-api/: get/put/delete/deleteAll/list and their options, 128 keys per call, keys
 * sorted in UTF-8 byte order, `transaction`, `sync`, alarms), "Alarms" (one alarm per object,
 * `getAlarm` during the handler), "Limits" (key 2 KiB; value 128 KiB for key-value-backed objects,
 * 2 MB for key and value in SQLite-backed ones); workerd for the errors the docs do not word.
 *
 * The model of durability (the docs' "output gate"): a write takes effect in the store the moment
 * it is made, and is confirmed once the object's code lets the event loop run (it waits on a
 * binding call, a timer, a `blockConcurrencyWhile` or `transaction()`, `sync()`): workerd commits
 * then. A reset before then (`ctx.abort()`, a `blockConcurrencyWhile` callback that throws) drops
 * the writes not confirmed (`ObjectStore.dropUnconfirmed`); a confirmed write is never lost
 * afterwards, whatever happens to the object or its invocation. Cloudflare holds the object's
 * outgoing messages until its writes are durable, so a caller that saw an answer can rely on the
 * writes made before it; a write whose answer nobody saw may or may not have happened, which
 * crash_after (the object ran, the caller never heard) and crash_before (the object never saw
 * the call) explore.
 *
 * Once the object is reset under the instance this storage belongs to, every call fails with the
 * reset's error (`StorageHooks.gone`): the old instance is no longer the object, and nothing it
 * does reaches storage. A `transaction()` it had open was rolled back by the reset.
 *
 * Keys and values are encoded as durable-object-values.ts says.
 */

import { SimSqlStorage } from "./durable-object-sql.ts";
import type { ObjectStore } from "./durable-object-store.ts";
import {
  type AlarmChange,
  alarmTime,
  applyWrites,
  attempt,
  type ListOptions,
  listOptions,
  readMany,
  readOne,
  requireCurrent,
  type StorageHooks,
  scan,
  visibleAlarm,
  type Write,
} from "./durable-object-tables.ts";
import { SimDurableObjectTransaction, SimSqliteTransaction } from "./durable-object-transaction.ts";
import {
  checkedKey,
  decodeEntries,
  encodeValue,
  KEYS_PER_CALL_MAX,
  keyList,
  keyOf,
  keyText,
  tooManyKeys,
  undefinedValue,
} from "./durable-object-values.ts";
import { ioTurn, notSimulated } from "./globals.ts";

/** Nested `transactionSync` calls at most. */
const SYNC_DEPTH_MAX = 100;

/** workerd's error for `ctx.storage.sql` in a key-value-backed class (Miniflare 4.20260426), with its advice. */
const SQL_NOT_ENABLED =
  "SQL is not enabled for this Durable Object class. To enable it, change `new_classes` to `new_sqlite_classes` within the 'migrations' field in your wrangler.jsonc or wrangler.toml file. If using workerd directly,set `enableSql = true` in your workerd config for the class. Note that this change cannot be made after the class is already deployed to production.";

export class SimDurableObjectStorage {
  readonly #store: ObjectStore;
  readonly #sqlite: boolean;
  readonly #hooks: StorageHooks;
  #sql: SimSqlStorage | undefined;
  #syncDepth = 0;

  readonly #deleteAllDeletesAlarm: boolean;

  /**
   * `deleteAllDeletesAlarm`: the Worker's `delete_all_deletes_alarm` compatibility behaviour
   * (the default from 2026-02-24, Cloudflare's changelog "deleteAll() now deletes Durable Object
   * alarm"); before it, `deleteAll` leaves the alarm set.
   */
  constructor(store: ObjectStore, sqlite: boolean, hooks: StorageHooks, deleteAllDeletesAlarm = false) {
    this.#store = store;
    this.#sqlite = sqlite;
    this.#hooks = hooks;
    this.#deleteAllDeletesAlarm = deleteAllDeletesAlarm;
  }

  get sql(): SimSqlStorage {
    if (!this.#sqlite) throw new Error(SQL_NOT_ENABLED);
    this.#sql ??= new SimSqlStorage(this.#store, (call) => this.#current(call));
    return this.#sql;
  }

  get(keys: unknown, options?: unknown): Promise<unknown> {
    return attempt(() => {
      checkOptions(options, "get", 2, "GetOptions");
      this.#current("storage.get()");
      if (Array.isArray(keys)) {
        const names = keyList(keys, this.#sqlite);
        const found = readMany(this.#store, names);
        this.#note(() => `storage.get(${shown(names)}) -> ${found.size} of them stored`);
        return found;
      }
      const name = keyOf(keys, this.#sqlite);
      const value = readOne(this.#store, name);
      this.#note(() => `storage.get(${shown(name)}) -> ${shown(value)}`);
      return value;
    });
  }

  put(keyOrEntries: unknown, value?: unknown, options?: unknown): Promise<void> {
    return attempt(() => {
      if (isEntries(keyOrEntries)) {
        // put(entries, options): what follows the entries must be options.
        if (value !== undefined && value !== null && typeof value !== "object")
          throw new TypeError(PUT_FORMS);
      } else {
        checkOptions(options, "put", 3, "PutOptions");
      }
      this.#current("storage.put()");
      const writes = this.#encodeWrites(keyOrEntries, value);
      this.#store.beforeWrite();
      applyWrites(this.#store, writes);
      this.#note(() =>
        typeof keyOrEntries === "string"
          ? `storage.put(${shown(keyOrEntries)}, ${shown(value)})`
          : `storage.put(${shown(keyOrEntries)})`,
      );
    });
  }

  delete(keys: unknown, options?: unknown): Promise<boolean | number> {
    // workerd converts delete()'s arguments as it is called: options that are none, or a key
    // that is no string (a symbol), throw there, where its other calls reject (Miniflare 4.20260426).
    checkOptions(options, "delete", 2, "PutOptions");
    const many = Array.isArray(keys);
    const given = many ? keys.map(keyText) : keyText(keys);
    return attempt(() => {
      this.#current("storage.delete()");
      const names = Array.isArray(given) ? keyList(given, this.#sqlite) : [keyOf(given, this.#sqlite)];
      this.#store.beforeWrite();
      const deleted = applyWrites(
        this.#store,
        names.map((key): Write => [key, null]),
      );
      this.#note(() => `storage.delete(${shown(many ? names : names[0])}) -> ${deleted} deleted`);
      return many ? deleted : deleted > 0;
    });
  }

  list(options: ListOptions = {}): Promise<Map<string, unknown>> {
    return attempt(() => {
      checkOptions(options, "list", 1, "ListOptions");
      this.#current("storage.list()");
      const entries = decodeEntries(scan(this.#store, listOptions(options)));
      this.#note(() => `storage.list() -> ${entries.size} keys`);
      return entries;
    });
  }

  #note(line: () => string): void {
    this.#hooks.note?.(line);
  }

  /** Throws if the object was reset under this instance, which is no longer it. */
  #current(call: string): void {
    requireCurrent(this.#hooks, call);
  }

  /**
   * Deletes every key; for a SQLite-backed object the whole database: its tables too (docs:
   * "removes the entire contents of a Durable Object's private SQLite database"). The alarm
   * goes too with `delete_all_deletes_alarm`, and stays without it (the docs before
   * 2026-02-24: "deleteAll() does not proactively delete alarms").
   */
  deleteAll(_options?: unknown): Promise<void> {
    return attempt(() => {
      this.#current("storage.deleteAll()");
      this.#store.beforeWrite();
      if (this.#deleteAllDeletesAlarm) this.#changeAlarm({ time: null });
      if (!this.#sqlite) {
        this.#store.kvIfExists("DELETE FROM _cf_KV");
        this.#store.forgetTables();
        this.#note(() => "storage.deleteAll()");
        return;
      }
      const objects = this.#store.own(
        "SELECT type, name FROM sqlite_schema WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite_%' AND name <> '_cf_ALARM' ORDER BY type = 'table', rowid DESC",
      );
      this.#store.batch(
        objects.rows.map(([type, name]) => ({
          sql: `DROP ${type === "view" ? "VIEW" : "TABLE"} IF EXISTS "${String(name).replaceAll('"', '""')}"`,
          params: [],
        })),
      );
      this.#store.forgetTables();
      this.#note(() => "storage.deleteAll()");
    });
  }

  /**
   * Runs `closure` as one transaction, in a critical section as workerd runs it: no other call
   * reaches the object until the closure settles. Its writes commit when it resolves, and none
   * do when it throws, calls `rollback()`, or its invocation dies inside it.
   *
   * A SQLite-backed object runs it in a savepoint, so every storage call the closure makes is part
   * of it, through `txn`, `ctx.storage` or `ctx.storage.sql` alike (docs: with SQLite "the txn
   * object is obsolete"). A key-value-backed object buffers the writes made through `txn` and
   * applies them as one engine batch; its writes straight to `ctx.storage` are not part of it, as
   * in production's `ActorCache`, whose transaction holds only `txn`'s writes (Miniflare runs such
   * classes on the SQLite implementation unless its storage is in memory).
   */
  transaction<T>(
    closure: (txn: SimDurableObjectTransaction | SimSqliteTransaction) => Promise<T>,
  ): Promise<T> {
    try {
      this.#current("storage.transaction()");
    } catch (error) {
      return Promise.reject(error);
    }
    // workerd runs the closure as a critical section, whose start lets the event loop run.
    this.#store.confirm();
    const work = this.#sqlite
      ? () => this.#savepointTransaction(closure)
      : async () => {
          const txn = new SimDurableObjectTransaction(this.#store, this.#hooks, this.#sqlite);
          const result = await closure(txn);
          // Reset meanwhile: its buffered writes are never applied.
          this.#current("storage.transaction() commit");
          txn.commit((change) => this.#changeAlarm(change));
          // workerd's commit waits on I/O, and the object's writes are confirmed meanwhile.
          this.#store.confirm();
          return result;
        };
    return this.#hooks.critical ? this.#hooks.critical(work) : work();
  }

  async #savepointTransaction<T>(closure: (txn: SimSqliteTransaction) => Promise<T>): Promise<T> {
    const savepoint = this.#store.beginSavepoint();
    // An invocation that dies inside the closure never commits: its writes are undone then, not
    // when the object is next called, so that nothing (an invariant) reads them meanwhile.
    this.#hooks.onAbandon?.(() => this.#store.endSavepoint(savepoint, false));
    let rolledBack = false;
    const txn = new SimSqliteTransaction(this, () => {
      rolledBack = true;
      this.#store.endSavepoint(savepoint, false);
    });
    let result: T;
    try {
      result = await closure(txn);
      // Reset meanwhile: the reset rolled the savepoint back, and it never commits.
      this.#current("storage.transaction() commit");
    } catch (error) {
      this.#store.endSavepoint(savepoint, false);
      this.#note(() => "storage.transaction() threw: rolled back");
      throw error;
    }
    this.#store.endSavepoint(savepoint, true);
    this.#note(() => `storage.transaction() ${rolledBack ? "rolled back" : "committed"}`);
    return result;
  }

  /** SQLite-backed objects: runs `closure` in a savepoint, rolled back if it throws. */
  transactionSync<T>(closure: () => T): T {
    if (typeof closure !== "function") {
      // workerd checks the argument's type before the call runs, with its binding layer's text.
      throw new TypeError(
        "Failed to execute 'transactionSync' on 'DurableObjectStorage': parameter 1 is not of type 'function'.",
      );
    }
    if (!this.#sqlite) throw new Error("SQL is not enabled for this Durable Object class.");
    this.#current("storage.transactionSync()");
    if (this.#syncDepth >= SYNC_DEPTH_MAX) {
      throw new Error(`eutaxy nests transactionSync at most ${SYNC_DEPTH_MAX} deep`);
    }
    // Its savepoint inside the one holding this turn's writes, not around it.
    this.#store.beforeWrite();
    const savepoint = `_cf_sync_${++this.#syncDepth}`;
    this.#store.own(`SAVEPOINT ${savepoint}`);
    try {
      const result = closure();
      this.#store.own(`RELEASE ${savepoint}`);
      return result;
    } catch (error) {
      this.#store.own(`ROLLBACK TO ${savepoint}`);
      this.#store.own(`RELEASE ${savepoint}`);
      this.#store.forgetTables();
      throw error;
    } finally {
      this.#syncDepth--;
    }
  }

  getAlarm(options?: unknown): Promise<number | null> {
    return attempt(() => {
      checkOptions(options, "getAlarm", 1, "GetAlarmOptions");
      this.#current("storage.getAlarm()");
      const alarm = visibleAlarm(this.#store, this.#hooks);
      this.#note(() => `storage.getAlarm() -> ${alarm}`);
      return alarm;
    });
  }

  setAlarm(scheduledTime: unknown, options?: unknown): Promise<void> {
    return attempt(() => {
      checkOptions(options, "setAlarm", 2, "SetAlarmOptions");
      this.#current("storage.setAlarm()");
      const time = alarmTime(scheduledTime);
      this.#hooks.requireAlarmHandler();
      this.#store.beforeWrite();
      this.#changeAlarm({ time });
      this.#note(() => `storage.setAlarm(${time})`);
    });
  }

  deleteAlarm(options?: unknown): Promise<void> {
    return attempt(() => {
      checkOptions(options, "deleteAlarm", 1, "SetAlarmOptions");
      this.#current("storage.deleteAlarm()");
      this.#store.beforeWrite();
      this.#changeAlarm({ time: null });
      this.#note(() => "storage.deleteAlarm()");
    });
  }

  /** Waits for the writes made so far to be confirmed (see the model above), which takes no time. */
  sync(): Promise<void> {
    // workerd's sync() waits for the flush, a turn of the event loop in which the input gate
    // lets other calls in (Miniflare 4.20260426: four calls that read a count, awaited sync()
    // and wrote the count plus one left 2).
    return attempt(() => {
      this.#current("storage.sync()");
      this.#store.confirm();
    }).then(() => ioTurn("storage.sync()"));
  }

  // Point-in-time recovery and the synchronous KV API: a Worker that reaches them ends the check,
  // as any API eutaxy does not simulate does, instead of getting an error it could catch.
  getCurrentBookmark(): never {
    return notSimulated("ctx.storage.getCurrentBookmark()");
  }

  getBookmarkForTime(): never {
    return notSimulated("ctx.storage.getBookmarkForTime()");
  }

  onNextSessionRestoreBookmark(): never {
    return notSimulated("ctx.storage.onNextSessionRestoreBookmark()");
  }

  get kv(): never {
    return notSimulated("ctx.storage.kv (the synchronous KV API)");
  }

  #encodeWrites(keyOrEntries: unknown, value: unknown): Write[] {
    if (isEntries(keyOrEntries)) {
      const entries = Object.entries(keyOrEntries);
      if (entries.length > KEYS_PER_CALL_MAX) throw tooManyKeys();
      return entries.map(([key, v]) => [checkedKey(key, this.#sqlite), this.#encode(key, v)]);
    }
    const key = keyOf(keyOrEntries, this.#sqlite);
    if (value === undefined) throw undefinedValue();
    return [[key, this.#encode(key, value)]];
  }

  #encode(key: string, value: unknown): Uint8Array {
    return encodeValue(key, value, this.#sqlite);
  }

  #changeAlarm(change: AlarmChange): void {
    if (change.time === null) {
      this.#store.alarmIfExists("UPDATE _cf_ALARM SET time = NULL WHERE id = 1");
      return;
    }
    this.#store.ensureAlarm();
    this.#store.own(
      "INSERT INTO _cf_ALARM (id, time, generation) VALUES (1, ?1, 1) ON CONFLICT (id) DO UPDATE SET time = excluded.time, generation = generation + 1",
      [change.time],
    );
    const generation = Number(this.#store.own("SELECT generation FROM _cf_ALARM WHERE id = 1").rows[0]?.[0]);
    this.#hooks.alarmSet(generation);
  }
}

/** Whether `put`'s first argument is its entries (`put(entries, options)`), not a key. */
function isEntries(keyOrEntries: unknown): keyOrEntries is object {
  return typeof keyOrEntries === "object" && keyOrEntries !== null && !Array.isArray(keyOrEntries);
}

/** workerd's refusal of `put(entries, value)`, whose second argument is no options. */
const PUT_FORMS =
  "put() may only be called with a single key-value pair and optional options as put(key, value, options) " +
  "or with multiple key-value pairs and optional options as put(entries, options)";

/**
 * Refuses options that are not an object (a string, a number), as workerd's conversion of a
 * dictionary argument does (Miniflare 4.20260426); `undefined` and `null` are no options.
 */
function checkOptions(options: unknown, method: string, position: number, type: string): void {
  if (options === undefined || options === null) return;
  if (typeof options === "object" || typeof options === "function") return;
  throw new TypeError(
    `Failed to execute '${method}' on 'DurableObjectStorage': parameter ${position} is not of type '${type}'.`,
  );
}

/** A key or value as a trace shows it: JSON where it has one, cut after 120 characters. */
function shown(value: unknown): string {
  let text: string;
  try {
    text = value instanceof Map ? `Map(${value.size})` : (JSON.stringify(value) ?? String(value));
  } catch {
    text = String(value);
  }
  return text.length > 120 ? `${text.slice(0, 120)}…` : text;
}
