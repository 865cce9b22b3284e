/**
 * R2, simulated over one SQLite store per bucket in the engine (`r2:<worker prefix><binding>`),
 * so that every object is reset with the run. `env.BUCKET` is an `R2Bucket`; each call that
 * reaches R2 is one effect of the calling invocation, labelled `R2:<bucket> <method>`
 * (`R2:BUCKET put`, `R2:media/BUCKET get`), so a crash can fall between an upload and the D1
 * row that records it.
 *
 * Sources, in the order they were trusted:
 * - Cloudflare's docs: "Workers API reference" (developers.cloudflare.com/r2/api/workers/…):
 *   the methods, `R2Object`, `R2ObjectBody`, `R2Objects`, conditional operations (`onlyIf`),
 *   ranges, `include`, and that R2 is strongly consistent (a write is seen by every later read,
 *   so no stale read is offered, unlike KV); "Limits" and "Error codes" (r2/platform/limits,
 *   r2/api/error-codes): custom metadata of at most 8,192 bytes (10012), and at most one write
 *   a second to one key, past which R2 answers 429 (10058).
 * - The text production's 429 reaches a Worker with, as projects quote it from deployed Workers:
 *   `put: Reduce your concurrent request rate for the same object. (10058)`.
 * - Miniflare 4.20260426.0, which runs workerd's own R2 binding (src/workerd/api/r2-bucket.c++:
 *   argument conversion, the shapes of the objects, the errors thrown before any request) over
 *   its gateway (packages/miniflare/src/workers/r2: the checks R2 makes, its error texts
 *   `<method>: <message> (<code>)`, how conditions, ranges and delimited lists are evaluated):
 *   js/test/fidelity.test.ts compares every shape and text below with it, and docs/fidelity.md
 *   lists where eutaxy differs.
 *
 * `put` and `delete` offer a transient fault, that 429, where a key they write was written less
 * than a second before (virtual clock), as KV's writes do.
 *
 * Multipart uploads, server-side encryption keys and checksums other than MD5 and SHA are not
 * simulated: a Worker that reaches one ends the check (`notSimulated`) instead of seeing a
 * made-up answer.
 */

import { createHash } from "node:crypto";
import type { Engine, FootprintEntry } from "../engine.ts";
import type { RunContext } from "./context.ts";
import type { EffectScope } from "./effect-scope.ts";
import { notSimulated } from "./globals.ts";
import type { BindingSpec } from "./world.ts";

/**
 * A bucket's store: one row per object. `value` is always a BLOB of the object's bytes;
 * `uploaded` is the virtual time of its put in milliseconds; the metadata columns are JSON
 * (`http_metadata`'s `cacheExpiry` in milliseconds), `checksums` JSON of hex digests.
 */
export const R2_SCHEMA = `CREATE TABLE r2 (
  key TEXT PRIMARY KEY,
  value BLOB NOT NULL,
  version TEXT NOT NULL,
  etag TEXT NOT NULL,
  uploaded INTEGER NOT NULL,
  http_metadata TEXT NOT NULL,
  custom_metadata TEXT NOT NULL,
  checksums TEXT NOT NULL
)`;

/**
 * The SQL that puts an `r2Objects` step's objects in a bucket's store before the runs: each the
 * UTF-8 bytes of its text, uploaded at the start of the runs' clock, with no metadata. Its version
 * is the MD5 of its key and text: there is no run yet to draw one from, and a run must find the
 * same.
 */
export function r2ObjectsSql(objects: Readonly<Record<string, string>>, uploadedMs: number): string {
  const blob = (bytes: Uint8Array | Buffer) => `X'${Buffer.from(bytes).toString("hex")}'`;
  const text = (value: string) => `CAST(${blob(Buffer.from(value, "utf8"))} AS TEXT)`;
  return Object.entries(objects)
    .map(([key, value]) => {
      const bytes = Buffer.from(value, "utf8");
      const etag = createHash("md5").update(bytes).digest("hex");
      const version = createHash("md5").update(`r2Objects\u0000${key}\u0000${value}`).digest("hex");
      const checksums = JSON.stringify({ md5: etag });
      return `INSERT OR REPLACE INTO r2 (${COLUMNS}) VALUES (${text(key)}, ${blob(bytes)}, '${version}', '${etag}', ${Math.trunc(uploadedMs)}, '{}', '{}', ${text(checksums)});`;
    })
    .join("\n");
}

/** R2's limits, in bytes, keys and milliseconds ("Limits"). */
export const KEY_BYTES_MAX = 1024;
const CUSTOM_METADATA_BYTES_MAX = 8192;
/** "Maximum concurrent writes to the same object name (key): 1 per second". */
const SAME_KEY_WRITE_INTERVAL_MS = 1_000;
const LIST_LIMIT_MAX = 1000;
/** The most objects a list with `include` answers with (Miniflare's gateway: metadata makes pages heavier). */
const LIST_INCLUDE_LIMIT_MAX = 100;

const COLUMNS = "key, value, version, etag, uploaded, http_metadata, custom_metadata, checksums";
const SELECT_ONE = `SELECT ${COLUMNS} FROM r2 WHERE key = ?1`;
const UPSERT = `INSERT OR REPLACE INTO r2 (${COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)`;
const DELETE_MANY = "DELETE FROM r2 WHERE key IN (SELECT value FROM json_each(?1))";

/**
 * One page of keys after ?2 (NULL for none) under prefix ?1, at most `limit` of them. SQLite
 * compares TEXT bytewise, the order R2 lists keys in.
 */
const listPlain = (limit: number) => `SELECT ${COLUMNS}, key AS last_key, NULL AS delimited FROM r2
  WHERE substr(key, 1, length(?1)) = ?1 AND (?2 IS NULL OR key > ?2)
  ORDER BY key LIMIT ${Math.trunc(limit)}`;

/**
 * The same with delimiter ?3, as R2's gateway lists: the keys that have the delimiter after the
 * prefix count once, as their common prefix up to and including it (`delimited`), and the last
 * key of that group is where the next page resumes, past the whole group.
 */
const listDelimited = (limit: number) => `SELECT ${COLUMNS}, max(key) AS last_key,
    iif(instr(substr(key, length(?1) + 1), ?3),
      substr(key, 1, length(?1) + instr(substr(key, length(?1) + 1), ?3) + length(?3) - 1),
      NULL) AS delimited
  FROM r2
  WHERE substr(key, 1, length(?1)) = ?1 AND (?2 IS NULL OR key > ?2)
  GROUP BY coalesce('p:' || delimited, 'k:' || key)
  ORDER BY last_key LIMIT ${Math.trunc(limit)}`;

/**
 * What the binding needs of a run: a `RunContext`, or a test's stand-in for one. The bucket's
 * table is the simulation's own: its statements stay out of the trace, and each call is traced
 * as the binding call it is (`R2:BUCKET put "a.png" <3 bytes>`).
 */
export type R2Run = Pick<RunContext, "nowMs" | "memo"> & {
  readonly engine: Pick<Engine, "d1Run" | "fillRandom">;
  readonly tracing?: boolean;
  trace?(line: string): void;
};

/**
 * The random stream a bucket's object versions are drawn from: the run's own, so a replay draws
 * the same; one per bucket, so that puts to two buckets, which partial-order reduction takes for
 * independent, draw the same versions in either order.
 */
const versionStream = (store: string) => `r2-versions:${store}`;

/** `httpMetadata` as R2 keeps it; `cacheExpiry` in milliseconds since the epoch. */
interface HttpMetadata {
  contentType?: string;
  contentLanguage?: string;
  contentDisposition?: string;
  contentEncoding?: string;
  cacheControl?: string;
  cacheExpiry?: number;
}

/** The string fields of `HttpMetadata` with the header each is written to, in R2's order. */
const HTTP_FIELDS = [
  ["contentType", "content-type"],
  ["contentLanguage", "content-language"],
  ["contentDisposition", "content-disposition"],
  ["contentEncoding", "content-encoding"],
  ["cacheControl", "cache-control"],
] as const;

/** A row of the store, decoded. */
interface Stored {
  readonly key: string;
  readonly value: Uint8Array;
  readonly version: string;
  readonly etag: string;
  readonly uploaded: number;
  readonly httpMetadata: HttpMetadata;
  readonly customMetadata: Record<string, string>;
  readonly checksums: Record<string, string>;
}

/** An etag a condition names: `*`, or a value compared strongly (always, as options give it) or weakly (`W/"…"`). */
interface EtagCondition {
  readonly type: "wildcard" | "strong" | "weak";
  readonly value: string;
}

/** An `onlyIf`, as R2 evaluates it; dates in milliseconds. */
interface Conditional {
  readonly etagMatches?: readonly EtagCondition[];
  readonly etagDoesNotMatch?: readonly EtagCondition[];
  readonly uploadedBefore?: number;
  readonly uploadedAfter?: number;
  readonly secondsGranularity?: boolean;
}

/** A range as `get` asks for it; `header` is a `Range` header's value. */
type RangeOption =
  | { readonly offset?: number; readonly length?: number; readonly suffix?: number }
  | { readonly header: string };

/**
 * `honorInclude`: the Worker's `r2_list_honor_include` (compatibility.ts); without it a `list`
 * gives every object's metadata, as though `include` named both kinds.
 */
export function createR2Bucket(
  spec: Extract<BindingSpec, { kind: "r2" }>,
  scope: EffectScope,
  run: R2Run,
  honorInclude = true,
): object {
  return new R2Bucket(spec.store, scope, run, honorInclude);
}

/** The bucket binding, named as workerd names its class. */
class R2Bucket {
  readonly #store: string;
  readonly #scope: EffectScope;
  readonly #run: R2Run;
  /** The bucket as reports show it: `BUCKET`, or `media/BUCKET` for a callee's. */
  readonly #display: string;
  readonly #honorInclude: boolean;

  constructor(store: string, scope: EffectScope, run: R2Run, honorInclude: boolean) {
    this.#store = store;
    this.#honorInclude = honorInclude;
    this.#scope = scope;
    this.#run = run;
    this.#display = store.startsWith("r2:") ? store.slice("r2:".length) : store;
  }

  head(...args: unknown[]): Promise<unknown> {
    let name: string;
    try {
      name = keyArgument("head", args[0]);
    } catch (error) {
      return Promise.reject(error);
    }
    return this.#effect("head", [], () => {
      checkKey("head", name);
      const stored = this.#read(name);
      this.#note(() => `head ${JSON.stringify(name)} -> ${stored ? describe(stored) : "null"}`);
      return stored ? new HeadResult(stored, { offset: 0, length: stored.value.byteLength }) : null;
    });
  }

  get(...args: unknown[]): Promise<unknown> {
    let name: string;
    let onlyIf: Conditional | undefined;
    let range: RangeOption | undefined;
    try {
      name = keyArgument("get", args[0]);
      const options = args[1] as { onlyIf?: unknown; range?: unknown; ssecKey?: unknown } | null | undefined;
      if (options?.ssecKey !== undefined) notSimulated("R2 server-side encryption keys (get({ ssecKey }))");
      onlyIf = conditional(options?.onlyIf);
      range = rangeOption(options?.range);
    } catch (error) {
      return Promise.reject(error);
    }
    return this.#effect("get", [], () => {
      checkKey("get", name);
      const stored = this.#read(name);
      if (!stored) {
        this.#note(() => `get ${JSON.stringify(name)} -> null`);
        return null;
      }
      if (onlyIf && !holds(onlyIf, stored)) {
        this.#note(() => `get ${JSON.stringify(name)} -> precondition failed, no body (${describe(stored)})`);
        return new HeadResult(stored, { offset: 0, length: stored.value.byteLength });
      }
      const slice = rangeOf(range, stored.value.byteLength);
      const bytes = stored.value.subarray(slice.offset, slice.offset + slice.length);
      this.#note(() => {
        const part =
          range === undefined ? "" : ` bytes ${slice.offset}-${slice.offset + slice.length - 1} of`;
        return `get ${JSON.stringify(name)} ->${part} ${describe(stored)}`;
      });
      return new GetResult(stored, slice, bytes);
    });
  }

  put(...args: unknown[]): Promise<unknown> {
    let name: string;
    let value: Uint8Array | Promise<Uint8Array>;
    let httpMetadata: HttpMetadata;
    let customMetadata: Record<string, string>;
    let onlyIf: Conditional | undefined;
    let hashes: Record<string, string>;
    try {
      name = keyArgument("put", args[0]);
      value = putValue(args.length < 2 ? MISSING : args[1]);
      const options = (args[2] ?? {}) as Record<string, unknown>;
      if (options.ssecKey !== undefined) notSimulated("R2 server-side encryption keys (put({ ssecKey }))");
      if (options.storageClass !== undefined && options.storageClass !== "Standard") {
        notSimulated(`R2 storage class ${String(options.storageClass)} (put({ storageClass }))`);
      }
      httpMetadata = httpMetadataOf(options.httpMetadata);
      customMetadata = customMetadataOf(options.customMetadata);
      onlyIf = conditional(options.onlyIf);
      hashes = givenHashes(options);
    } catch (error) {
      return Promise.reject(error);
    }
    const send = (bytes: Uint8Array) =>
      this.#effect("put", [name], () => {
        checkKey("put", name);
        const metadataBytes = Object.entries(customMetadata).reduce(
          (sum, [key, value]) => sum + Buffer.byteLength(key, "utf8") + Buffer.byteLength(value, "utf8"),
          0,
        );
        if (metadataBytes > CUSTOM_METADATA_BYTES_MAX) {
          throw r2Error("put", "Your metadata headers exceed the maximum allowed metadata size.", 10012);
        }
        const checksums: Record<string, string> = {};
        for (const [field, algorithm, label] of HASHES) {
          const given = hashes[field];
          if (field !== "md5" && given === undefined) continue;
          const actual = createHash(algorithm).update(bytes).digest("hex");
          if (given !== undefined && given !== actual) {
            throw r2Error(
              "put",
              `The ${label} checksum you specified did not match what we received.\nYou provided a ${label} checksum with value: ${given}\nActual ${label} was: ${actual}`,
              10037,
            );
          }
          checksums[field] = actual;
        }
        if (onlyIf) {
          const existing = this.#read(name);
          if (!(existing ? holds(onlyIf, existing) : holdsAbsent(onlyIf))) {
            this.#note(() => `put ${JSON.stringify(name)} -> precondition failed, nothing written`);
            return null;
          }
        }
        const stored: Stored = {
          key: name,
          value: bytes,
          version: this.#version(),
          etag: checksums.md5 as string,
          uploaded: this.#run.nowMs(),
          httpMetadata,
          customMetadata,
          checksums,
        };
        this.#run.engine.d1Run(
          this.#store,
          UPSERT,
          [
            name,
            bytes,
            stored.version,
            stored.etag,
            stored.uploaded,
            JSON.stringify(httpMetadata),
            JSON.stringify(customMetadata),
            JSON.stringify(checksums),
          ],
          true,
        );
        this.#note(() => {
          const custom = Object.keys(customMetadata).length
            ? ` customMetadata ${JSON.stringify(customMetadata)}`
            : "";
          return `put ${JSON.stringify(name)} ${shownBytes(bytes)}${custom} -> version ${stored.version.slice(0, 8)}`;
        });
        return new HeadResult(stored, undefined);
      });
    return value instanceof Promise ? value.then(send) : send(value);
  }

  delete(...args: unknown[]): Promise<void> {
    let names: string[];
    try {
      const given = args[0];
      names = Array.isArray(given)
        ? given.map((key) => keyArgument("delete", key))
        : [keyArgument("delete", given)];
    } catch (error) {
      return Promise.reject(error);
    }
    return this.#effect("delete", names, () => {
      for (const name of names) checkKey("delete", name);
      const { changes } = this.#run.engine.d1Run(this.#store, DELETE_MANY, [JSON.stringify(names)], true);
      this.#note(() => {
        const what = names.length === 1 ? JSON.stringify(names[0]) : `${names.length} keys`;
        return `delete ${what} -> ${changes === 1 ? "1 object" : `${changes} objects`} deleted`;
      });
      return undefined;
    });
  }

  list(options?: unknown): Promise<unknown> {
    let limit: number | undefined;
    let include: Set<string>;
    let prefix: string;
    let after: string | undefined;
    let delimiter: string | undefined;
    try {
      const o = (options ?? {}) as Record<string, unknown>;
      limit = o.limit === undefined ? undefined : Math.trunc(Number(o.limit));
      include = new Set();
      for (const item of (o.include as unknown[] | undefined) ?? []) {
        const field = String(item);
        if (field !== "httpMetadata" && field !== "customMetadata") {
          throw new RangeError(`Unsupported include value ${field}`);
        }
        include.add(field);
      }
      if (!this.#honorInclude) include = new Set(["httpMetadata", "customMetadata"]);
      prefix = o.prefix == null ? "" : String(o.prefix);
      after = o.startAfter == null ? undefined : String(o.startAfter);
      if (o.cursor != null) {
        // A cursor is the last key a page listed, as R2's gateway makes it (base64).
        const resume = Buffer.from(String(o.cursor), "base64").toString("utf8");
        if (after === undefined || resume > after) after = resume;
      }
      delimiter = o.delimiter == null || o.delimiter === "" ? undefined : String(o.delimiter);
    } catch (error) {
      return Promise.reject(error);
    }
    return this.#effect("list", [], () => {
      if (limit !== undefined && !(limit >= 1 && limit <= LIST_LIMIT_MAX)) {
        throw r2Error("list", `MaxKeys params must be positive integer <= ${LIST_LIMIT_MAX}.`, 10022);
      }
      let max = limit ?? LIST_LIMIT_MAX;
      if (include.size > 0) max = Math.min(max, LIST_INCLUDE_LIMIT_MAX);
      const rows = this.#run.engine.d1Run(
        this.#store,
        delimiter === undefined ? listPlain(max + 1) : listDelimited(max + 1),
        delimiter === undefined ? [prefix, after ?? null] : [prefix, after ?? null, delimiter],
        true,
      ).rows;
      const page = rows.slice(0, max);
      const objects: HeadResult[] = [];
      const delimitedPrefixes: string[] = [];
      for (const row of page) {
        const delimited = row[9];
        if (delimited !== null && delimited !== undefined) {
          delimitedPrefixes.push(String(delimited));
          continue;
        }
        const stored = storedOf(row);
        objects.push(
          new HeadResult(
            {
              ...stored,
              httpMetadata: include.has("httpMetadata") ? stored.httpMetadata : {},
              customMetadata: include.has("customMetadata") ? stored.customMetadata : {},
            },
            undefined,
          ),
        );
      }
      const last = rows.length > max ? page.at(-1) : undefined;
      const cursor = last === undefined ? undefined : Buffer.from(String(last[8]), "utf8").toString("base64");
      this.#note(() => {
        const from = after === undefined ? "" : ` after ${JSON.stringify(after)}`;
        const count = objects.length === 1 ? "1 object" : `${objects.length} objects`;
        const prefixes = delimitedPrefixes.length ? `, prefixes ${JSON.stringify(delimitedPrefixes)}` : "";
        return `list prefix ${JSON.stringify(prefix)}${from} -> ${count}${prefixes}${cursor === undefined ? "" : " (truncated)"}`;
      });
      // workerd's R2Objects has a cursor field either way, undefined on the last page.
      return { objects, truncated: cursor !== undefined, cursor, delimitedPrefixes };
    });
  }

  createMultipartUpload(): never {
    return notSimulated("R2 multipart uploads (createMultipartUpload())");
  }

  resumeMultipartUpload(): never {
    return notSimulated("R2 multipart uploads (resumeMultipartUpload())");
  }

  get [Symbol.toStringTag](): string {
    return "R2Bucket";
  }

  /**
   * One call to R2: one effect; every call reads or writes the bucket as a whole (a list reads
   * every key). A call that writes `written` offers R2's 429 where one of those keys was written
   * less than a second before; one that took effect marks them written now.
   */
  #effect<T>(method: string, written: readonly string[], perform: () => T): Promise<T> {
    const write = method === "put" || method === "delete";
    const footprint = (): FootprintEntry[] => [{ resource: `R2:${this.#store}`, write }];
    const label = `R2:${this.#display} ${method}`;
    if (!write) return this.#scope.effect(label, perform, { footprint });
    const recent = this.#run.memo<Map<string, number>>(`r2-writes:${this.#store}`, () => new Map());
    const limited = () =>
      written.some((key) => {
        const at = recent.get(key);
        return at !== undefined && this.#run.nowMs() - at < SAME_KEY_WRITE_INTERVAL_MS;
      });
    return this.#scope.effect(
      label,
      () => {
        const result = perform();
        // A put whose condition failed wrote nothing; a delete counts whether or not the key was there.
        if (method === "delete" || result !== null)
          for (const key of written) recent.set(key, this.#run.nowMs());
        return result;
      },
      {
        footprint,
        transientOffered: limited,
        transient: () => {
          this.#note(() => `${method} -> 429, a key written less than a second before`);
          throw r2Error(method, "Reduce your concurrent request rate for the same object.", 10058);
        },
      },
    );
  }

  #read(name: string): Stored | undefined {
    const row = this.#run.engine.d1Run(this.#store, SELECT_ONE, [name], true).rows[0];
    return row === undefined ? undefined : storedOf(row);
  }

  /** A new object's version: 32 hex digits, as R2's, from the run's randomness. */
  #version(): string {
    const bytes = new Uint8Array(16);
    this.#run.engine.fillRandom(versionStream(this.#store), bytes);
    return hex(bytes);
  }

  /** Traces the call as the binding's, under the effect it belongs to. */
  #note(line: () => string): void {
    if (this.#run.tracing) this.#run.trace?.(`  R2:${this.#display} ${line()}`);
  }
}

/** A row of `SELECT ${COLUMNS}` decoded. */
function storedOf(row: readonly unknown[]): Stored {
  const [key, value, version, etag, uploaded, http, custom, checksums] = row;
  return {
    key: String(key),
    value: value instanceof Uint8Array ? value : new Uint8Array(0),
    version: String(version),
    etag: String(etag),
    uploaded: Number(uploaded),
    httpMetadata: JSON.parse(String(http)) as HttpMetadata,
    customMetadata: JSON.parse(String(custom)) as Record<string, string>,
    checksums: JSON.parse(String(checksums)) as Record<string, string>,
  };
}

/** workerd's `R2Checksums`: the digests as ArrayBuffers, and their hex in JSON. */
class R2Checksums {
  readonly md5?: ArrayBuffer;
  readonly sha1?: ArrayBuffer;
  readonly sha256?: ArrayBuffer;
  readonly sha384?: ArrayBuffer;
  readonly sha512?: ArrayBuffer;

  constructor(hexes: Record<string, string>) {
    const self = this as Record<string, unknown>;
    for (const [field] of HASHES) {
      const digest = hexes[field];
      if (digest !== undefined) self[field] = bytesOfHex(digest).buffer;
    }
  }

  /** Every algorithm, undefined where the object has no such checksum, as workerd's. */
  toJSON(): Record<string, string | undefined> {
    const out: Record<string, string | undefined> = {};
    const self = this as Record<string, unknown>;
    for (const [field] of HASHES) {
      const digest = self[field];
      out[field] = digest instanceof ArrayBuffer ? hex(new Uint8Array(digest)) : undefined;
    }
    return out;
  }
}

/**
 * An object's metadata, as workerd's `HeadResult` (`R2Object` in the docs) has it: own fields in
 * workerd's order, `writeHttpMetadata` on the prototype. `range` is the part a `get` or `head`
 * read; a put's result and a list's objects have none.
 */
class HeadResult {
  readonly ssecKeyMd5: undefined;
  readonly storageClass: string;
  readonly range: { offset: number; length: number; suffix: undefined } | undefined;
  readonly customMetadata: Record<string, string>;
  readonly httpMetadata: Record<string, unknown>;
  readonly uploaded: Date;
  readonly checksums: R2Checksums;
  readonly httpEtag: string;
  readonly etag: string;
  readonly size: number;
  readonly version: string;
  readonly key: string;

  constructor(stored: Stored, range: { offset: number; length: number } | undefined) {
    this.ssecKeyMd5 = undefined;
    // Production names the class every object is in; Miniflare answers "" (docs/fidelity.md).
    this.storageClass = "Standard";
    // workerd's R2Range has a suffix too, undefined once R2 answered with the bytes it read.
    this.range =
      range === undefined ? undefined : { offset: range.offset, length: range.length, suffix: undefined };
    this.customMetadata = { ...stored.customMetadata };
    this.httpMetadata = httpMetadataObject(stored.httpMetadata);
    this.uploaded = new Date(stored.uploaded);
    this.checksums = new R2Checksums(stored.checksums);
    this.httpEtag = `"${stored.etag}"`;
    this.etag = stored.etag;
    this.size = stored.value.byteLength;
    this.version = stored.version;
    this.key = stored.key;
  }

  writeHttpMetadata(headers: Headers): void {
    const http = this.httpMetadata as Record<string, unknown>;
    for (const [field, header] of HTTP_FIELDS) {
      const value = http[field];
      if (typeof value === "string") headers.set(header, value);
    }
    if (http.cacheExpiry instanceof Date) headers.set("expires", http.cacheExpiry.toUTCString());
  }
}

/**
 * An object with its body (workerd's `GetResult`, `R2ObjectBody` in the docs). The body is a
 * stream read once, by `body` or one of the methods, as a Response's is.
 */
class GetResult extends HeadResult {
  readonly #body: ReadableStream<Uint8Array>;
  #used = false;

  constructor(stored: Stored, range: { offset: number; length: number }, bytes: Uint8Array) {
    super(stored, range);
    const copy = bytes.slice();
    let sent = false;
    this.#body = new ReadableStream<Uint8Array>(
      {
        pull: (controller) => {
          this.#used = true;
          if (!sent && copy.byteLength > 0) controller.enqueue(copy);
          sent = true;
          controller.close();
        },
      },
      // Nothing is pulled until the Worker reads: `bodyUsed` stays false until then.
      { highWaterMark: 0 },
    );
  }

  get body(): ReadableStream<Uint8Array> {
    return this.#body;
  }

  get bodyUsed(): boolean {
    return this.#used;
  }

  async arrayBuffer(): Promise<ArrayBuffer> {
    const bytes = await this.#consume();
    return bytes.buffer as ArrayBuffer;
  }

  async bytes(): Promise<Uint8Array> {
    return this.#consume();
  }

  async text(): Promise<string> {
    return new TextDecoder().decode(await this.#consume());
  }

  async json(): Promise<unknown> {
    return JSON.parse(await this.text());
  }

  async blob(): Promise<Blob> {
    const bytes = await this.#consume();
    const type = (this.httpMetadata as HttpMetadata).contentType ?? "";
    return new Blob([bytes.buffer as ArrayBuffer], { type });
  }

  async #consume(): Promise<Uint8Array> {
    if (this.#used || this.#body.locked) {
      throw new TypeError(
        "Body has already been used. It can only be used once. Use tee() first if you need to read it twice.",
      );
    }
    const reader = this.#body.getReader();
    const chunks: Uint8Array[] = [];
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
    }
    reader.releaseLock();
    return concat(chunks);
  }
}

/**
 * `httpMetadata` as workerd gives it: every field, undefined where the object has none,
 * `cacheExpiry` a Date.
 */
function httpMetadataObject(http: HttpMetadata): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [field] of HTTP_FIELDS) out[field] = http[field];
  out.cacheExpiry = http.cacheExpiry === undefined ? undefined : new Date(http.cacheExpiry);
  return out;
}

/** The error a failed R2 request rejects with, as workerd builds it from R2's answer. */
function r2Error(method: string, message: string, code: number): Error {
  return new Error(`${method}: ${message} (${code})`);
}

/** A key argument as workerd converts it: any value but undefined becomes its string. */
function keyArgument(method: string, key: unknown): string {
  if (key === undefined) {
    throw new TypeError(`Failed to execute '${method}' on 'R2Bucket': parameter 1 is not of type 'string'.`);
  }
  return String(key);
}

/** R2 refuses a key longer than 1024 bytes; the empty key is a key like any other. */
function checkKey(method: string, key: string): void {
  if (Buffer.byteLength(key, "utf8") > KEY_BYTES_MAX) {
    throw r2Error(method, "The specified object name is not valid.", 10020);
  }
}

/** No value at all: workerd refuses it, where an explicit null or undefined is an empty object. */
const MISSING = Symbol("missing");

/**
 * A put's value as bytes: a string's UTF-8, a copy of a buffer's or view's bytes (later writes to
 * the Worker's buffer change nothing), a Blob's or a stream's bytes once read; null and
 * undefined an empty object. workerd refuses a stream whose length it cannot know; eutaxy reads
 * any (docs/fidelity.md).
 */
function putValue(value: unknown): Uint8Array | Promise<Uint8Array> {
  if (value === null || value === undefined) return new Uint8Array(0);
  if (typeof value === "string") return new TextEncoder().encode(value);
  if (value instanceof ArrayBuffer) return new Uint8Array(value.slice(0));
  if (ArrayBuffer.isView(value)) {
    return new Uint8Array(value.buffer.slice(value.byteOffset, value.byteOffset + value.byteLength));
  }
  if (value instanceof Blob) return value.arrayBuffer().then((buffer) => new Uint8Array(buffer));
  if (value instanceof ReadableStream) return readAll(value);
  throw new TypeError(
    "Failed to execute 'put' on 'R2Bucket': parameter 2 is not of type 'ReadableStream or ArrayBuffer or ArrayBufferView or string or Blob'.",
  );
}

async function readAll(stream: ReadableStream<unknown>): Promise<Uint8Array> {
  const reader = stream.getReader();
  const chunks: Uint8Array[] = [];
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (value instanceof Uint8Array) chunks.push(value);
    else if (value instanceof ArrayBuffer) chunks.push(new Uint8Array(value));
    else if (ArrayBuffer.isView(value)) {
      chunks.push(new Uint8Array(value.buffer, value.byteOffset, value.byteLength));
    } else {
      throw new TypeError(
        "This TransformStream is being used as a byte stream, but received a non-byte chunk.",
      );
    }
  }
  return concat(chunks);
}

function concat(chunks: readonly Uint8Array[]): Uint8Array {
  const total = chunks.reduce((sum, chunk) => sum + chunk.byteLength, 0);
  const bytes = new Uint8Array(total);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return bytes;
}

/** workerd's TypeError for a field of a dictionary that should be a Date. */
function notADate(field: string, dictionary: string): TypeError {
  return new TypeError(
    `Incorrect type for the '${field}' field on '${dictionary}': the provided value is not of type 'date'.`,
  );
}

/** `httpMetadata` as a put gives it: an object of R2's fields, or Headers. Other fields are dropped. */
function httpMetadataOf(given: unknown): HttpMetadata {
  if (given === undefined || given === null) return {};
  const out: HttpMetadata = {};
  if (given instanceof Headers) {
    for (const [field, header] of HTTP_FIELDS) {
      const value = given.get(header);
      if (value !== null) out[field] = value;
    }
    const expires = given.get("expires");
    if (expires !== null) {
      const ms = Date.parse(expires);
      if (!Number.isNaN(ms)) out.cacheExpiry = ms;
    }
    return out;
  }
  const object = given as Record<string, unknown>;
  for (const [field] of HTTP_FIELDS) {
    const value = object[field];
    if (value !== undefined) out[field] = String(value);
  }
  const expiry = object.cacheExpiry;
  if (expiry !== undefined) {
    if (!(expiry instanceof Date)) throw notADate("cacheExpiry", "HttpMetadata");
    out.cacheExpiry = expiry.getTime();
  }
  return out;
}

/** `customMetadata`: string keys to strings (workerd converts other values to their string). */
function customMetadataOf(given: unknown): Record<string, string> {
  if (given === undefined || given === null) return {};
  return Object.fromEntries(Object.entries(given as Record<string, unknown>).map(([k, v]) => [k, String(v)]));
}

/** The checksums a put may give, by option, with Node's name and R2's. */
const HASHES = [
  ["md5", "md5", "MD5"],
  ["sha1", "sha1", "SHA-1"],
  ["sha256", "sha256", "SHA-256"],
  ["sha384", "sha384", "SHA-384"],
  ["sha512", "sha512", "SHA-512"],
] as const;

/** The checksums a put gives (hex strings or their bytes), as hex. */
function givenHashes(options: Record<string, unknown>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [field] of HASHES) {
    const given = options[field];
    if (given === undefined) continue;
    if (typeof given === "string") out[field] = given.toLowerCase();
    else if (given instanceof ArrayBuffer) out[field] = hex(new Uint8Array(given));
    else if (ArrayBuffer.isView(given)) {
      out[field] = hex(new Uint8Array(given.buffer, given.byteOffset, given.byteLength));
    }
  }
  return out;
}

/**
 * An `onlyIf` as workerd converts it: an `R2Conditional` object, whose etags are bare (a quoted
 * one is refused), or Headers (`If-Match`, `If-None-Match`, `If-Modified-Since`,
 * `If-Unmodified-Since`), whose etags are quoted lists.
 */
function conditional(given: unknown): Conditional | undefined {
  if (given === undefined || given === null) return undefined;
  if (given instanceof Headers) {
    const since = (header: string) => {
      const value = given.get(header);
      if (value === null) return undefined;
      const ms = Date.parse(value);
      return Number.isNaN(ms) ? undefined : ms;
    };
    const out: {
      -readonly [K in keyof Conditional]: Conditional[K];
    } = { secondsGranularity: true };
    const ifMatch = given.get("if-match");
    const ifNoneMatch = given.get("if-none-match");
    if (ifMatch !== null) out.etagMatches = headerEtags(ifMatch);
    if (ifNoneMatch !== null) out.etagDoesNotMatch = headerEtags(ifNoneMatch);
    const after = since("if-modified-since");
    const before = since("if-unmodified-since");
    if (after !== undefined) out.uploadedAfter = after;
    if (before !== undefined) out.uploadedBefore = before;
    return out;
  }
  const object = given as Record<string, unknown>;
  const date = (field: string) => {
    const value = object[field];
    if (value === undefined) return undefined;
    if (!(value instanceof Date)) throw notADate(field, "Conditional");
    return value.getTime();
  };
  const out: { -readonly [K in keyof Conditional]: Conditional[K] } = {};
  if (object.etagMatches !== undefined) out.etagMatches = optionEtags(object.etagMatches, "etagMatches");
  if (object.etagDoesNotMatch !== undefined) {
    out.etagDoesNotMatch = optionEtags(object.etagDoesNotMatch, "etagDoesNotMatch");
  }
  const before = date("uploadedBefore");
  const after = date("uploadedAfter");
  if (before !== undefined) out.uploadedBefore = before;
  if (after !== undefined) out.uploadedAfter = after;
  if (object.secondsGranularity !== undefined) out.secondsGranularity = Boolean(object.secondsGranularity);
  return out;
}

/**
 * One etag of an `R2Conditional`: a string, not coerced (workerd refuses an array of etags, a
 * number, null or a String object with a TypeError, where a coercion would read `["a", "b"]` as
 * the etag "a,b" and answer a failed condition).
 */
function optionEtags(given: unknown, field: string): EtagCondition[] {
  if (typeof given !== "string") {
    throw new TypeError(
      `Incorrect type for the '${field}' field on 'Conditional': the provided value is not of type 'string'.`,
    );
  }
  const value = given;
  if (value === "*") return [{ type: "wildcard", value }];
  if (value.startsWith('"') && value.endsWith('"') && value.length >= 2) {
    throw new TypeError(`Conditional ETag should not be wrapped in quotes (${value}).`);
  }
  return [{ type: "strong", value }];
}

function headerEtags(header: string): EtagCondition[] {
  return header.split(",").flatMap((part): EtagCondition[] => {
    const text = part.trim();
    if (text === "") return [];
    if (text === "*") return [{ type: "wildcard", value: text }];
    const weak = text.startsWith("W/");
    const bare = (weak ? text.slice(2) : text).replace(/^"(.*)"$/, "$1");
    return [{ type: weak ? "weak" : "strong", value: bare }];
  });
}

function includesEtag(
  conditions: readonly EtagCondition[],
  etag: string,
  comparison: "strong" | "weak",
): boolean {
  return conditions.some(
    (c) => c.type === "wildcard" || (c.value === etag && (c.type === "strong" || comparison === "weak")),
  );
}

/**
 * Whether `onlyIf` holds for an object, as R2 evaluates it (RFC 9110's rules: a matching
 * `etagMatches` overrides `uploadedBefore`, a holding `etagDoesNotMatch` overrides
 * `uploadedAfter`).
 */
function holds(cond: Conditional, stored: Stored): boolean {
  const truncate = (ms: number) => (cond.secondsGranularity ? Math.floor(ms / 1000) * 1000 : ms);
  const uploaded = truncate(stored.uploaded);
  const ifMatch = cond.etagMatches === undefined || includesEtag(cond.etagMatches, stored.etag, "strong");
  const ifNoneMatch =
    cond.etagDoesNotMatch === undefined || !includesEtag(cond.etagDoesNotMatch, stored.etag, "weak");
  const ifModifiedSince =
    cond.uploadedAfter === undefined ||
    truncate(cond.uploadedAfter) < uploaded ||
    (cond.etagDoesNotMatch !== undefined && ifNoneMatch);
  const ifUnmodifiedSince =
    cond.uploadedBefore === undefined ||
    uploaded < truncate(cond.uploadedBefore) ||
    (cond.etagMatches !== undefined && ifMatch);
  return ifMatch && ifNoneMatch && ifModifiedSince && ifUnmodifiedSince;
}

/** Whether `onlyIf` holds where there is no object: unless it asks for a match or a recent upload. */
function holdsAbsent(cond: Conditional): boolean {
  return cond.etagMatches === undefined && cond.uploadedAfter === undefined;
}

/** `range` as workerd converts it, refusing what it refuses before any request. */
function rangeOption(given: unknown): RangeOption | undefined {
  if (given === undefined || given === null) return undefined;
  if (given instanceof Headers) {
    const header = given.get("range");
    return header === null ? undefined : { header };
  }
  const object = given as Record<string, unknown>;
  const number = (field: string) => (object[field] === undefined ? undefined : Number(object[field]));
  const [offset, length, suffix] = [number("offset"), number("length"), number("suffix")];
  if (offset !== undefined && offset < 0) {
    throw new RangeError(`Invalid range. Starting offset (${offset}) must be greater than or equal to 0.`);
  }
  if (suffix !== undefined && offset !== undefined)
    throw new TypeError("Suffix is incompatible with offset.");
  return {
    ...(offset !== undefined ? { offset } : {}),
    ...(length !== undefined ? { length } : {}),
    ...(suffix !== undefined ? { suffix } : {}),
  };
}

/** The part of an object of `size` bytes a range reads, checked as R2 checks it. */
function rangeOf(range: RangeOption | undefined, size: number): { offset: number; length: number } {
  if (range === undefined) return { offset: 0, length: size };
  const unsatisfiable = () => r2Error("get", "The requested range is not satisfiable", 10039);
  if ("header" in range) {
    // One range of bytes; anything else reads the whole object, as R2 does.
    const match = /^bytes=(\d*)-(\d*)$/.exec(range.header.trim());
    if (!match || (match[1] === "" && match[2] === "")) return { offset: 0, length: size };
    const [start, end] = [match[1] as string, match[2] as string];
    if (start === "") {
      const suffix = Math.min(Number(end), size);
      if (suffix <= 0) throw unsatisfiable();
      return { offset: size - suffix, length: suffix };
    }
    const offset = Number(start);
    if (offset >= size) throw unsatisfiable();
    const last = end === "" ? size - 1 : Math.min(Number(end), size - 1);
    if (last < offset) return { offset: 0, length: size };
    return { offset, length: last - offset + 1 };
  }
  let { offset, length } = range;
  if (range.suffix !== undefined) {
    if (range.suffix <= 0) throw unsatisfiable();
    const suffix = Math.min(range.suffix, size);
    offset = size - suffix;
    length = suffix;
  }
  offset ??= 0;
  length ??= size - offset;
  if (offset > size || length <= 0) throw unsatisfiable();
  return { offset, length: Math.min(length, size - offset) };
}

function hex(bytes: Uint8Array): string {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

function bytesOfHex(text: string): Uint8Array {
  const bytes = new Uint8Array(text.length / 2);
  for (let i = 0; i < bytes.length; i++) bytes[i] = Number.parseInt(text.slice(i * 2, i * 2 + 2), 16);
  return bytes;
}

/** An object as a trace shows it: its bytes (text quoted, cut after 120 characters) and version. */
function describe(stored: Stored): string {
  return `${shownBytes(stored.value)} version ${stored.version.slice(0, 8)}`;
}

function shownBytes(bytes: Uint8Array): string {
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(bytes);
  } catch {
    return `<${bytes.byteLength} bytes>`;
  }
  return JSON.stringify(text.length > 120 ? `${text.slice(0, 120)}…` : text);
}

/** An object's bytes at the end of a run as text (UTF-8, as `text()` decodes them), or null. */
export function r2Read(
  engine: Pick<Engine, "d1Run"> & Partial<Pick<Engine, "trace">>,
  store: string,
  key: string,
): string | null {
  const row = engine.d1Run(store, "SELECT value FROM r2 WHERE key = ?1", [key], true).rows[0];
  const value = row === undefined ? null : row[0] instanceof Uint8Array ? row[0] : new Uint8Array(0);
  engine.trace?.(
    `  R2:${store.replace(/^r2:/, "")} ${JSON.stringify(key)} is ${value === null ? "absent" : shownBytes(value)}`,
  );
  return value === null ? null : new TextDecoder().decode(value);
}

/** Every key of a bucket at the end of a run, sorted as R2 lists them (by UTF-8 bytes). */
export function r2Keys(engine: Pick<Engine, "d1Run">, store: string): string[] {
  return engine.d1Run(store, "SELECT key FROM r2 ORDER BY key", [], true).rows.map((row) => String(row[0]));
}
