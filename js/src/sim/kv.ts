/**
 * Workers KV, simulated over one SQLite store per namespace in the engine
 * (`kv:<worker prefix><binding>`), so that every pair is reset with the run. `env.CACHE` is a
 * `KVNamespace`; each call that reaches KV is one effect of the calling invocation, labelled
 * `KV:<namespace> <method>` (`KV:CACHE get`, `KV:payments/CACHE put`).
 *
 * Sources, in the order they were trusted:
 * - Cloudflare's docs: "Read key-value pairs", "Write key-value pairs", "List keys",
 *   "How KV works" and "Limits" (developers.cloudflare.com/kv/…): the API, the limits (key
 *   512 bytes, value 25 MiB, metadata 1024 bytes, expiration at least 60 s ahead, 1 write per
 *   second to one key, bulk reads of up to 100 keys, lists of up to 1000 keys, cacheTtl at
 *   least 30 s), eventual consistency (a write is visible at once where it was made and may take
 *   up to 60 s to be seen elsewhere; the last write wins).
 * - workerd's binding, src/workerd/api/kv.c++: which checks run in the Worker before any request
 *   (a key that is empty, `.`, `..` or too long: no effect happens) and how a failed request
 *   reaches JavaScript (`KV <METHOD> failed: <status> <status text>`).
 * - Error texts production answers with, as Workers report them (GitHub issues quoting
 *   `KV PUT failed: 400 Invalid expiration of … Expiration times must be at least 60 seconds in
 *   the future.` and `KV PUT failed: 429 Too Many Requests`); where no production text is
 *   quoted, Miniflare's (workers-sdk, packages/miniflare/src/workers/kv), whose texts match the
 *   quoted ones. Where Miniflare's limits differ from production production is followed
 *   (docs/fidelity.md lists the differences js/test/fidelity.test.ts finds).
 *
 * Eventual consistency is explored, not ignored: `get`, `getWithMetadata` and `list` offer the
 * engine a transient alternative, a stale read, which answers with what each key held before
 * its most recent write. It is offered only where a stale answer can differ: a key was written
 * less than 60 s ago (virtual clock), or the read's `cacheTtl` if longer, by another request. A
 * request reads its own writes (it runs in one location, where writes are visible at once); a
 * callee hosted by an RPC runs beside its caller and counts as the same request. `put` and
 * `delete` offer a transient `KV PUT failed: 429 Too Many Requests` where the key was written
 * less than a second before.
 */

import type { KvEntry } from "../cloudflare.ts";
import type { Engine, FootprintEntry } from "../engine.ts";
import type { RunContext } from "./context.ts";
import type { EffectOptions, EffectScope } from "./effect-scope.ts";
import type { BindingSpec } from "./world.ts";

/**
 * A namespace's store. Every key that was ever written has a row, a deleted one too (with
 * `present = 0`), so that a stale read can answer with what it held before its most recent
 * write (`prev_*`). `written_at` is the virtual time of that write in milliseconds and
 * `written_by` the request that made it (its top-level invocation). A value put as a string is
 * kept as TEXT (so that traces show it), any other as a BLOB; metadata is JSON text;
 * `expiration` is in seconds since the epoch, as KV reports it. Columns are in the order
 * `SELECT *` and `INSERT INTO kv VALUES` rely on.
 */
export const KV_SCHEMA = `CREATE TABLE kv (
  key TEXT PRIMARY KEY,
  present INTEGER NOT NULL,
  value BLOB,
  metadata TEXT,
  expiration INTEGER,
  prev_present INTEGER NOT NULL,
  prev_value BLOB,
  prev_metadata TEXT,
  prev_expiration INTEGER,
  written_at INTEGER NOT NULL,
  written_by TEXT NOT NULL
)`;

/**
 * The SQL that writes a `kvEntries` step's keys to a namespace's store before the runs: present,
 * with nothing before them, written by `setup` at the earliest time there is, so that no read
 * in a run is stale. Texts go in as UTF-8 bytes cast to TEXT, which any text survives.
 */
export function kvEntriesSql(entries: Readonly<Record<string, string | KvEntry>>): string {
  const text = (value: string) => `CAST(X'${Buffer.from(value, "utf8").toString("hex")}' AS TEXT)`;
  return Object.entries(entries)
    .map(([key, entry]) => {
      const { value, metadata } = typeof entry === "string" ? { value: entry, metadata: undefined } : entry;
      const json = metadataJson(metadata);
      const meta = json === null ? "NULL" : text(json);
      return `INSERT OR REPLACE INTO kv VALUES (${text(key)}, 1, ${text(value)}, ${meta}, NULL, 0, NULL, NULL, NULL, ${Number.MIN_SAFE_INTEGER}, 'setup');`;
    })
    .join("\n");
}

/** Limits from the docs' "Limits" page, in bytes, seconds and keys. */
export const KEY_BYTES_MAX = 512;
const VALUE_BYTES_MAX = 25 * 1024 * 1024;
export const METADATA_BYTES_MAX = 1024;
const EXPIRATION_TTL_MIN = 60;
const LIST_LIMIT_MAX = 1000;
const BULK_KEYS_MAX = 100;
/** Production's minimum cacheTtl ("Limits": 30 seconds); Miniflare 4.20260426 checks 30 too. */
const CACHE_TTL_MIN = 30;
/** How long a write may stay unseen in other locations ("How KV works": up to 60 seconds). */
const STALE_WINDOW_MS = 60_000;

/**
 * How long before a read a write may still be unseen by it: 60 s, or the read's `cacheTtl` when
 * longer, as a location keeps the value it cached that long ("Read key-value pairs": `cacheTtl`).
 */
function staleWindowMs(cacheTtl: number | undefined): number {
  return Math.max(STALE_WINDOW_MS, (cacheTtl ?? 0) * 1000);
}
/** "Writes to same key: 1 per second" ("Limits"). */
const SAME_KEY_WRITE_INTERVAL_MS = 1_000;

const SELECT_ONE = "SELECT * FROM kv WHERE key = ?1";
const SELECT_MANY = "SELECT * FROM kv WHERE key IN (SELECT value FROM json_each(?1))";

/** The last write wins; the value it replaces is kept for stale reads. */
const UPSERT = `INSERT INTO kv VALUES (?1, 1, ?2, ?3, ?4, 0, NULL, NULL, NULL, ?5, ?6)
  ON CONFLICT (key) DO UPDATE SET
    prev_present = present, prev_value = value, prev_metadata = metadata, prev_expiration = expiration,
    present = 1, value = excluded.value, metadata = excluded.metadata, expiration = excluded.expiration,
    written_at = excluded.written_at, written_by = excluded.written_by`;

/** A key never written needs no row: before and after the delete it is absent. */
const DELETE = `UPDATE kv SET
    prev_present = present, prev_value = value, prev_metadata = metadata, prev_expiration = expiration,
    present = 0, value = NULL, metadata = NULL, expiration = NULL, written_at = ?2, written_by = ?3
  WHERE key = ?1`;

/**
 * One page of at most `limit` keys, fresh or stale. ?1 asks for the stale view, where a key
 * written after ?2 (ms) by a request other than ?3 shows what it held before that write; ?4 is
 * now in seconds; ?5 the prefix ('' for none); ?6 the key the cursor resumes after ('' for none).
 * SQLite compares TEXT bytewise (BINARY collation over UTF-8), the order KV lists keys in. The
 * limit is written into the text, an integer: SQLite plans with a bound LIMIT's value and
 * prepares the statement again each time it is bound.
 */
const list = (limit: number) => `SELECT key, metadata, expiration FROM (
    SELECT key,
      CASE WHEN stale THEN prev_present ELSE present END AS present,
      CASE WHEN stale THEN prev_metadata ELSE metadata END AS metadata,
      CASE WHEN stale THEN prev_expiration ELSE expiration END AS expiration
    FROM (SELECT *, (?1 AND written_at > ?2 AND written_by <> ?3) AS stale FROM kv)
  )
  WHERE present = 1 AND (expiration IS NULL OR expiration > ?4)
    AND substr(key, 1, length(?5)) = ?5 AND key > ?6
  ORDER BY key LIMIT ${Math.trunc(limit)}`;

/**
 * What the binding needs of a run: a `RunContext`, or a test's stand-in for one (which may keep
 * no trace). The namespace's table is the simulation's own: its statements stay out of the trace,
 * and each call is traced as the binding call it is (`KV:CACHE get "k" -> "v"`).
 */
export type KvRun = Pick<RunContext, "nowMs" | "memo"> & {
  readonly engine: Pick<Engine, "d1Run">;
  readonly tracing?: boolean;
  trace?(line: string): void;
};

/** A namespace's latest write to each key in this run, kept to decide which faults to offer. */
type RecentWrites = Map<string, { readonly atMs: number; readonly by: string }>;

type ReadType = "text" | "json" | "arrayBuffer" | "stream";
type HttpMethod = "GET" | "GET_BULK" | "PUT" | "DELETE";

interface Entry {
  readonly value: Uint8Array;
  readonly metadata: string | null;
  readonly expiration: number | null;
}

interface ReadOptions {
  readonly type: string;
  readonly cacheTtl: number | undefined;
}

interface PutOptions {
  readonly expiration?: number;
  readonly expirationTtl?: number;
  readonly metadata?: unknown;
}

interface ListOptions {
  readonly limit?: number;
  readonly prefix?: string | null;
  readonly cursor?: string | null;
}

export function createKvNamespace(
  spec: Extract<BindingSpec, { kind: "kv" }>,
  scope: EffectScope,
  run: KvRun,
): object {
  return new SimKvNamespace(spec.store, scope, run);
}

class SimKvNamespace {
  /** The namespaced binding as reports show it: `CACHE`, or `payments/CACHE` for a callee's. */
  readonly #display: string;

  constructor(
    private readonly store: string,
    private readonly scope: EffectScope,
    private readonly run: KvRun,
  ) {
    this.#display = store.startsWith("kv:") ? store.slice("kv:".length) : store;
  }

  get(key: unknown, options?: unknown): Promise<unknown> {
    if (Array.isArray(key)) return this.readMany("get", key, options, false);
    return this.readOne("get", key, options).then((result) => result.value);
  }

  getWithMetadata(key: unknown, options?: unknown): Promise<unknown> {
    if (Array.isArray(key)) return this.readMany("getWithMetadata", key, options, true);
    return this.readOne("getWithMetadata", key, options);
  }

  put(key: unknown, value: unknown, options?: PutOptions | null): Promise<void> {
    let name: string;
    let metadata: string | null;
    let stored: StoredValue | Promise<StoredValue>;
    let expiry: Expiry;
    try {
      // workerd converts the options as it receives the arguments, before looking at the key.
      expiry = {
        expiration: int32Option(options?.expiration),
        expirationTtl: int32Option(options?.expirationTtl),
      };
      name = keyName("PUT", key);
      metadata = metadataJson(options?.metadata);
      stored = storedValue(value);
    } catch (error) {
      // workerd checks these inside the promise it returns: a rejection, and nothing is sent.
      return Promise.reject(error);
    }
    const send = (body: StoredValue) =>
      this.write("put", name, () => {
        const nowMs = this.run.nowMs();
        const expiration = expirationOf(expiry, Math.floor(nowMs / 1000));
        const metadataBytes = metadata === null ? 0 : utf8Length(metadata);
        if (metadataBytes > METADATA_BYTES_MAX) {
          throw failed(
            "PUT",
            413,
            `Metadata length of ${metadataBytes} exceeds limit of ${METADATA_BYTES_MAX}.`,
          );
        }
        const length = typeof body === "string" ? utf8Length(body) : body.byteLength;
        if (length > VALUE_BYTES_MAX) {
          throw failed("PUT", 413, `Value length of ${length} exceeds limit of ${VALUE_BYTES_MAX}.`);
        }
        this.run.engine.d1Run(
          this.store,
          UPSERT,
          [name, body, metadata, expiration, nowMs, this.location],
          true,
        );
        this.note(() => {
          // What expires and what carries metadata is often the bug: the trace says so.
          const expires = expiration === null ? "" : ` expires ${new Date(expiration * 1000).toISOString()}`;
          const meta = metadata === null ? "" : ` metadata ${metadata}`;
          return `put ${JSON.stringify(name)} ${shownValue(body)}${expires}${meta}`;
        });
        return true;
      });
    return stored instanceof Promise ? stored.then(send) : send(stored);
  }

  delete(key: unknown): Promise<void> {
    let name: string;
    try {
      name = keyName("DELETE", key);
    } catch (error) {
      return Promise.reject(error);
    }
    return this.write("delete", name, () => {
      const result = this.run.engine.d1Run(this.store, DELETE, [name, this.run.nowMs(), this.location], true);
      this.note(() => `delete ${JSON.stringify(name)}`);
      return result.changes > 0;
    });
  }

  list(options?: ListOptions | null): Promise<unknown> {
    let given: number | undefined;
    try {
      // workerd takes `limit` as a 32-bit integer, as it does put's expiration options.
      given = int32Option(options?.limit);
    } catch (error) {
      return Promise.reject(error);
    }
    // workerd sends `limit` only when it is positive; KV's default is its maximum.
    const limit = given !== undefined && given > 0 ? given : LIST_LIMIT_MAX;
    const prefix = options?.prefix == null ? "" : String(options.prefix);
    const cursor = options?.cursor == null ? undefined : String(options.cursor);
    const answer = (stale: boolean) => {
      if (limit > LIST_LIMIT_MAX) {
        throw failed(
          "GET",
          400,
          `Invalid key_count_limit of ${limit}. Please specify an integer less than ${LIST_LIMIT_MAX}.`,
        );
      }
      checkKeyLength("GET", prefix);
      const after = cursor === undefined || cursor === "" ? "" : cursorKey(cursor);
      const nowMs = this.run.nowMs();
      const page = this.run.engine.d1Run(
        this.store,
        list(limit + 1),
        [stale ? 1 : 0, nowMs - STALE_WINDOW_MS, this.location, Math.floor(nowMs / 1000), prefix, after],
        true,
      ).rows;
      this.note(
        () =>
          // A page after the first says where it resumed: the key its cursor stands for.
          `list prefix ${JSON.stringify(prefix)}${after === "" ? "" : ` after ${JSON.stringify(after)}`} -> ${stale ? "stale: " : ""}${Math.min(page.length, limit) === 1 ? "1 key" : `${Math.min(page.length, limit)} keys`}`,
      );
      const keys = page.slice(0, limit).map(([name, metadata, expiration]) => ({
        name: String(name),
        ...(expiration === null ? {} : { expiration: Number(expiration) }),
        ...(metadata === null ? {} : { metadata: JSON.parse(String(metadata)) }),
      }));
      const last = keys.at(-1);
      if (page.length <= limit || !last) return { keys, list_complete: true, cacheStatus: null };
      return { keys, list_complete: false, cursor: cursorOf(last.name), cacheStatus: null };
    };
    const stale = () => [...this.recent.keys()].some((key) => key.startsWith(prefix) && this.staleable(key));
    return this.scope.effect(this.label("list"), () => answer(false), {
      ...transient(stale, () => answer(true)),
      footprint: () => this.footprint(false),
    });
  }

  /** One key, fresh or (as a transient fault) stale: `{ value, metadata, cacheStatus }`. */
  private readOne(method: "get" | "getWithMetadata", key: unknown, options: unknown) {
    let name: string;
    let read: ReadOptions;
    try {
      name = keyName("GET", key);
      read = readOptions(options);
    } catch (error) {
      return Promise.reject(error);
    }
    const answer = (stale: boolean) => {
      checkCacheTtl("GET", read.cacheTtl);
      const row = this.run.engine.d1Run(this.store, SELECT_ONE, [name], true).rows[0];
      const seen = row && this.readOf(row, stale, staleWindowMs(read.cacheTtl));
      const entry = seen && "value" in seen ? seen : undefined;
      this.note(() => {
        let shown = "null";
        if (entry) shown = shownValue(entry.value);
        else if (seen && "expiredAt" in seen)
          shown = `null (expired ${new Date(seen.expiredAt * 1000).toISOString()})`;
        return `${method} ${JSON.stringify(name)} -> ${stale ? "stale: " : ""}${shown}`;
      });
      if (!entry) return { value: null, metadata: null, cacheStatus: null };
      return {
        value: decode(entry.value, read.type),
        metadata: parseMetadata(entry.metadata),
        cacheStatus: null,
      };
    };
    return this.scope.effect(this.label(method), () => answer(false), {
      ...transient(
        () => this.staleable(name, staleWindowMs(read.cacheTtl)),
        () => answer(true),
      ),
      footprint: () => this.footprint(false),
    });
  }

  /** A bulk read: one request for up to 100 keys, answered as a Map in the order asked. */
  private readMany(
    method: "get" | "getWithMetadata",
    keys: readonly unknown[],
    options: unknown,
    withMetadata: boolean,
  ): Promise<Map<string, unknown>> {
    let read: ReadOptions;
    try {
      read = readOptions(options);
    } catch (error) {
      return Promise.reject(error);
    }
    const names = keys.map(String);
    const answer = (stale: boolean) => {
      // KV checks the request on its side, in this order (after the round trip).
      if (read.type !== "text" && read.type !== "json") {
        throw failed("GET_BULK", 400, `"${read.type}" is not a valid type. Use "json" or "text"`);
      }
      if (names.length > BULK_KEYS_MAX) {
        throw failed("GET_BULK", 400, `You can request a maximum of ${BULK_KEYS_MAX} keys`);
      }
      if (names.length < 1) throw failed("GET_BULK", 400, "You must request a minimum of 1 key");
      for (const name of names) checkKeyOnServer(name);
      checkCacheTtl("GET_BULK", read.cacheTtl);
      const rows = this.run.engine.d1Run(this.store, SELECT_MANY, [JSON.stringify(names)], true).rows;
      const byKey = new Map(rows.map((row) => [String(row[0]), row]));
      const result = new Map<string, unknown>();
      for (const name of names) {
        const row = byKey.get(name);
        const entry = row && this.entryOf(row, stale, staleWindowMs(read.cacheTtl));
        if (!entry) {
          result.set(name, null);
          continue;
        }
        let value: unknown;
        try {
          value = decode(entry.value, read.type);
        } catch {
          throw failed(
            "GET_BULK",
            400,
            `At least one of the requested keys corresponds to a non-${read.type} value`,
          );
        }
        result.set(name, withMetadata ? { value, metadata: parseMetadata(entry.metadata) } : value);
      }
      this.note(() => {
        const found = [...result.values()].filter((value) => value !== null).length;
        return `${method} ${JSON.stringify(names)} -> ${stale ? "stale: " : ""}${found} found`;
      });
      return result;
    };
    const stale = () => names.some((name) => this.staleable(name, staleWindowMs(read.cacheTtl)));
    return this.scope.effect(this.label(method), () => answer(false), {
      ...transient(stale, () => answer(true)),
      footprint: () => this.footprint(false),
    });
  }

  /**
   * A put or delete as one effect. `perform` says whether it changed the store; the write is
   * then remembered for the faults later calls may be offered. A write to a key written less
   * than a second ago may be refused with 429 instead (a transient fault).
   */
  private write(method: "put" | "delete", name: string, perform: () => boolean): Promise<void> {
    const limited = () => {
      const recent = this.recent.get(name);
      return recent !== undefined && this.run.nowMs() - recent.atMs < SAME_KEY_WRITE_INTERVAL_MS;
    };
    const http: HttpMethod = method === "put" ? "PUT" : "DELETE";
    return this.scope.effect(
      this.label(method),
      () => {
        if (perform()) this.recent.set(name, { atMs: this.run.nowMs(), by: this.location });
      },
      {
        ...transient(limited, () => {
          throw failed(http, 429, "Too Many Requests");
        }),
        footprint: () => this.footprint(true),
      },
    );
  }

  /** Every call reads or writes the namespace as a whole (a list reads every key). */
  private footprint(write: boolean): FootprintEntry[] {
    return [{ resource: `KV:${this.store}`, write }];
  }

  /** A row's entry as this read sees it, or undefined when the key reads as absent. */
  private entryOf(row: readonly unknown[], stale: boolean, windowMs: number): Entry | undefined {
    const read = this.readOf(row, stale, windowMs);
    return read && "value" in read ? read : undefined;
  }

  /**
   * A row as this read sees it: its entry, undefined when the key is absent, or when it expired
   * the second it expired at, which the trace names: a lock put with `expirationTtl` that reads
   * as absent is otherwise hard to tell from one never put or deleted.
   */
  private readOf(
    row: readonly unknown[],
    stale: boolean,
    windowMs: number,
  ): Entry | { readonly expiredAt: number } | undefined {
    const nowMs = this.run.nowMs();
    const [, present, value, metadata, expiration, prevPresent, prevValue, prevMetadata, prevExpiration] =
      row;
    const [writtenAt, writtenBy] = [row[9], row[10]];
    const old = stale && Number(writtenAt) > nowMs - windowMs && writtenBy !== this.location;
    const shown = old
      ? { present: prevPresent, value: prevValue, metadata: prevMetadata, expiration: prevExpiration }
      : { present, value, metadata, expiration };
    if (!shown.present) return undefined;
    const expiresAt = shown.expiration === null ? null : Number(shown.expiration);
    // Expired keys read as absent ("Write key-value pairs": expiration takes precedence).
    if (expiresAt !== null && expiresAt <= Math.floor(nowMs / 1000)) return { expiredAt: expiresAt };
    return {
      value:
        shown.value instanceof Uint8Array ? shown.value : new TextEncoder().encode(String(shown.value ?? "")),
      metadata: shown.metadata === null ? null : String(shown.metadata),
      expiration: expiresAt,
    };
  }

  /** Whether a read of `name` now could be stale: written less than `windowMs` ago, elsewhere. */
  private staleable(name: string, windowMs = STALE_WINDOW_MS): boolean {
    const recent = this.recent.get(name);
    return recent !== undefined && recent.by !== this.location && this.run.nowMs() - recent.atMs < windowMs;
  }

  private get recent(): RecentWrites {
    return this.run.memo<RecentWrites>(`kv-writes:${this.store}`, () => new Map());
  }

  /** The request the calling invocation belongs to: `req-2#1` for `req-2#1` and `req-2#1/0`. */
  private get location(): string {
    const id = this.scope.invocation;
    const slash = id.indexOf("/");
    return slash < 0 ? id : id.slice(0, slash);
  }

  private label(method: string): string {
    return `KV:${this.#display} ${method}`;
  }

  /** Traces the call as the binding's, under the effect it belongs to. */
  private note(line: () => string): void {
    if (this.run.tracing) this.run.trace?.(`  KV:${this.#display} ${line()}`);
  }
}

/**
 * The transient alternative, offered when it is possible at the moment the call happens (other
 * invocations' writes may come between the call and that moment).
 */
function transient(offered: () => boolean, misbehave: () => unknown): EffectOptions {
  return { transient: misbehave, transientOffered: offered };
}

/** The error a failed KV request rejects with, as workerd builds it from the HTTP status. */
function failed(method: HttpMethod, status: number, text: string): Error {
  return new Error(`KV ${method} failed: ${status} ${text}`);
}

/** The key as workerd takes it (a string), checked as workerd checks it before sending. */
function keyName(method: HttpMethod, key: unknown): string {
  const name = String(key);
  if (name === "") throw new TypeError("Key name cannot be empty.");
  if (name === "." || name === "..") throw new TypeError(`"${name}" is not allowed as a key name.`);
  checkKeyLength(method, name);
  return name;
}

function checkKeyLength(method: HttpMethod, name: string): void {
  const bytes = utf8Length(name);
  if (bytes > KEY_BYTES_MAX) {
    throw failed(
      method,
      414,
      `UTF-8 encoded length of ${bytes} exceeds key length limit of ${KEY_BYTES_MAX}.`,
    );
  }
}

/** Bulk reads send their keys unchecked; KV checks each on its side. */
function checkKeyOnServer(name: string): void {
  if (name === "") throw failed("GET_BULK", 400, "Key names must not be empty");
  if (name === "." || name === "..") {
    throw failed("GET_BULK", 400, `Illegal key name "${name}". Please use a different name.`);
  }
  checkKeyLength("GET_BULK", name);
}

function checkCacheTtl(method: HttpMethod, cacheTtl: number | undefined): void {
  if (cacheTtl === undefined) return;
  if (Number.isNaN(cacheTtl) || cacheTtl < CACHE_TTL_MIN) {
    throw failed(
      method,
      400,
      `Invalid cache_ttl of ${cacheTtl}. Cache TTL must be at least ${CACHE_TTL_MIN}.`,
    );
  }
}

/** `get(key, "json")` or `get(key, { type, cacheTtl })`; text when nothing is given. */
function readOptions(options: unknown): ReadOptions {
  if (options === undefined || options === null) return { type: "text", cacheTtl: undefined };
  if (typeof options === "string") return { type: options, cacheTtl: undefined };
  if (typeof options === "object") {
    const { type, cacheTtl } = options as { type?: unknown; cacheTtl?: unknown };
    return {
      type: type === undefined || type === null ? "text" : String(type),
      cacheTtl: cacheTtl === undefined || cacheTtl === null ? undefined : Number(cacheTtl),
    };
  }
  throw new TypeError("KV get() takes a type string or an options object as its second argument.");
}

/**
 * A stored value in the type asked for. workerd checks the type only once a value came back,
 * so asking for an unknown type of a missing key answers null.
 */
function decode(bytes: Uint8Array, type: string): unknown {
  switch (type as ReadType) {
    case "text":
      return new TextDecoder().decode(bytes);
    case "json":
      return JSON.parse(new TextDecoder().decode(bytes));
    case "arrayBuffer":
      return bytes.slice().buffer;
    case "stream": {
      const copy = bytes.slice();
      return new ReadableStream<Uint8Array>({
        start(controller) {
          if (copy.byteLength > 0) controller.enqueue(copy);
          controller.close();
        },
      });
    }
    default:
      throw new TypeError(
        'Unknown response type. Possible types are "text", "arrayBuffer", "json", and "stream".',
      );
  }
}

function parseMetadata(metadata: string | null): unknown {
  return metadata === null ? null : JSON.parse(metadata);
}

/** Metadata as the header workerd sends: its JSON, or nothing for null and undefined. */
export function metadataJson(metadata: unknown): string | null {
  if (metadata === undefined || metadata === null) return null;
  const json = JSON.stringify(metadata);
  return json === undefined ? null : json;
}

/** A value as the store keeps it: a string put as one, or bytes. */
type StoredValue = string | Uint8Array;

/**
 * The value as it is sent. Strings go as they are (UTF-8 on the wire); ArrayBuffers and views
 * as their bytes (copied, so later writes to the Worker's buffer change nothing); a
 * ReadableStream is read to its end before the request is made. Other objects are refused as
 * workerd refuses them; other primitives become strings, as workerd's string conversion makes
 * them.
 */
function storedValue(value: unknown): StoredValue | Promise<StoredValue> {
  if (typeof value === "string") return value;
  if (value instanceof ArrayBuffer) return new Uint8Array(value.slice(0));
  if (ArrayBuffer.isView(value)) {
    return new Uint8Array(value.buffer.slice(value.byteOffset, value.byteOffset + value.byteLength));
  }
  if (value instanceof ReadableStream) return readAll(value);
  if (typeof value === "object" && value !== null) {
    throw new TypeError(
      "KV put() accepts only strings, ArrayBuffers, ArrayBufferViews, and ReadableStreams as values.",
    );
  }
  return String(value);
}

/** Chunks a stream may yield before eutaxy stops reading it (25 MiB in 1-byte chunks and more). */
const STREAM_CHUNKS_MAX = VALUE_BYTES_MAX + 1;

async function readAll(stream: ReadableStream<unknown>): Promise<Uint8Array> {
  const reader = stream.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (let i = 0; i < STREAM_CHUNKS_MAX; i++) {
    const { done, value } = await reader.read();
    if (done) break;
    const chunk = valueChunk(value);
    chunks.push(chunk);
    total += chunk.byteLength;
    // Past the limit KV refuses the value whatever follows; stop reading there.
    if (total > VALUE_BYTES_MAX) break;
  }
  const bytes = new Uint8Array(total);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return bytes;
}

function valueChunk(value: unknown): Uint8Array {
  if (value instanceof Uint8Array) return value;
  if (value instanceof ArrayBuffer) return new Uint8Array(value);
  if (ArrayBuffer.isView(value)) return new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
  throw new TypeError("This TransformStream is being used as a byte stream, but received a non-byte chunk.");
}

/** A put's expiration options as workerd sends them: 32-bit integers, or absent. */
interface Expiry {
  readonly expiration: number | undefined;
  readonly expirationTtl: number | undefined;
}

/**
 * An expiration option as workerd converts it (the options are C++ `int`s): `undefined` is
 * absent; anything else becomes a number (`null` is 0), NaN and infinities 0, fractions are
 * truncated, and a value outside 32 bits throws workerd's TypeError. Miniflare shows each case
 * (js/test/fidelity.test.ts): `expirationTtl: "soon"` is refused as a TTL of 0.
 */
function int32Option(value: unknown): number | undefined {
  if (value === undefined) return undefined;
  const number = Number(value);
  if (!Number.isFinite(number)) return 0;
  const whole = Math.trunc(number) + 0;
  if (whole < -(2 ** 31) || whole > 2 ** 31 - 1) {
    throw new TypeError("Value out of range. Must be between -2147483648 and 2147483647 (inclusive).");
  }
  return whole;
}

/**
 * The absolute expiration of a put in seconds, or null, checked as KV checks it
 * (`expirationTtl` wins when both are given).
 */
function expirationOf(expiry: Expiry, nowSec: number): number | null {
  const ttl = expiry.expirationTtl;
  if (ttl !== undefined) {
    if (ttl <= 0) {
      throw failed("PUT", 400, `Invalid expiration_ttl of ${ttl}. Please specify integer greater than 0.`);
    }
    if (ttl < EXPIRATION_TTL_MIN) {
      throw failed(
        "PUT",
        400,
        `Invalid expiration_ttl of ${ttl}. Expiration TTL must be at least ${EXPIRATION_TTL_MIN}.`,
      );
    }
    return nowSec + ttl;
  }
  const at = expiry.expiration;
  if (at === undefined) return null;
  if (at <= nowSec) {
    throw failed(
      "PUT",
      400,
      `Invalid expiration of ${at}. Please specify integer greater than the current number of seconds since the UNIX epoch.`,
    );
  }
  if (at < nowSec + EXPIRATION_TTL_MIN) {
    throw failed(
      "PUT",
      400,
      `Invalid expiration of ${at}. Expiration times must be at least ${EXPIRATION_TTL_MIN} seconds in the future.`,
    );
  }
  return at;
}

/** An opaque cursor: the last key listed, so the next page starts after it. Deterministic. */
function cursorOf(key: string): string {
  return Buffer.from(key, "utf8").toString("base64url");
}

function cursorKey(cursor: string): string {
  const key = Buffer.from(cursor, "base64url").toString("utf8");
  // KV's cursors are opaque; one this binding did not make is refused rather than guessed at.
  if (key === "" || cursorOf(key) !== cursor) throw failed("GET", 400, "Invalid cursor");
  return key;
}

/** A value as a trace shows it: text quoted (cut after 120 characters), bytes counted. */
function shownValue(value: string | Uint8Array): string {
  let text: string;
  if (typeof value === "string") text = value;
  else {
    try {
      text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(value);
    } catch {
      return `<${value.byteLength} bytes>`;
    }
  }
  return JSON.stringify(text.length > 120 ? `${text.slice(0, 120)}…` : text);
}

export function utf8Length(text: string): number {
  return Buffer.byteLength(text, "utf8");
}

/**
 * What a custom invariant may ask `state.kv` for: a value as `get` gives it, minus `"stream"`,
 * which an invariant, reading the final state synchronously, could not read.
 */
export type KvStateType = "text" | "json" | "arrayBuffer";

/**
 * The value of `key` at the end of a run, or null (for custom invariants), in the type asked
 * for, as `get(key, type)` gives it: text (a value put as bytes is decoded as UTF-8, as `get`
 * decodes it), parsed JSON, or an ArrayBuffer of the bytes exactly as they were put.
 */
export function kvRead(
  engine: Pick<Engine, "d1Run" | "nowMs"> & Partial<Pick<Engine, "trace">>,
  store: string,
  key: string,
  type: KvStateType = "text",
): unknown {
  const result = engine.d1Run(
    store,
    "SELECT value FROM kv WHERE key = ?1 AND present = 1 AND (expiration IS NULL OR expiration > ?2)",
    [key, Math.floor(engine.nowMs() / 1000)],
    true,
  );
  const row = result.rows[0];
  const stored = row === undefined ? null : row[0];
  const value =
    stored === null || stored === undefined ? null : stored instanceof Uint8Array ? stored : String(stored);
  engine.trace?.(
    `  KV:${store.replace(/^kv:/, "")} ${JSON.stringify(key)} is ${value === null ? "absent" : shownValue(value)}`,
  );
  if (value === null) return null;
  // A value put as a string is kept as TEXT: it needs no round trip through bytes to be text.
  if (typeof value === "string" && type === "text") return value;
  return decode(typeof value === "string" ? new TextEncoder().encode(value) : value, type);
}

/** Every key at the end of a run, sorted as KV lists them (by UTF-8 bytes). */
export function kvKeys(engine: Pick<Engine, "d1Run" | "nowMs">, store: string): string[] {
  return engine
    .d1Run(
      store,
      "SELECT key FROM kv WHERE present = 1 AND (expiration IS NULL OR expiration > ?1) ORDER BY key",
      [Math.floor(engine.nowMs() / 1000)],
      true,
    )
    .rows.map((row) => String(row[0]));
}
