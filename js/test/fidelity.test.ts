/**
 * Fidelity: the same binding calls, without faults, against eutaxy's simulated bindings and
 * against Miniflare's real ones (workerd, from npm) give the same results, shapes and error
 * messages. Each case is a list of operations; one runner (plain JavaScript, below) executes the
 * list against a binding and records every outcome as JSON, inside a Worker in Miniflare and in
 * Node against eutaxy's binding. The two records must be equal, except where docs/fidelity.md
 * lists a difference: there the test asserts the difference itself, so that a change on either
 * side shows up here instead of passing silently.
 */

import type { D1Database, KVNamespace, R2Bucket } from "@cloudflare/workers-types/index.ts";
import { Miniflare } from "miniflare";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createEngine, type Engine } from "../src/engine.ts";
import { createD1Database } from "../src/sim/d1.ts";
import type { EffectScope } from "../src/sim/effect-scope.ts";
import { createKvNamespace, KV_SCHEMA, type KvRun } from "../src/sim/kv.ts";
import { createR2Bucket, R2_SCHEMA } from "../src/sim/r2.ts";

/**
 * The runner, run as it is on both sides. Operations and outcomes are JSON; values JSON cannot
 * carry are tagged objects (`{ $bytes: [..], as: "Uint8Array" }`, `{ $undefined: true }`, …),
 * decoded into real values before a call and encoded back after it. An outcome is
 * `{ value }`, or `{ error, name, cause?, sync? }` where `sync` marks an error thrown by the
 * call itself rather than a rejection of the promise it returned.
 */
const RUNNER = `
const OPS_MAX = 200;

function decode(value) {
  if (Array.isArray(value)) return value.map(decode);
  if (value === null || typeof value !== "object") return value;
  if (value.$undefined) return undefined;
  if (value.$bigint !== undefined) return BigInt(value.$bigint);
  if (value.$number !== undefined) return Number(value.$number);
  if (value.$date !== undefined) return new Date(value.$date);
  if (value.$headers !== undefined) return new Headers(value.$headers);
  if (value.$blob !== undefined) return new Blob([value.$blob], { type: value.type ?? "" });
  if (value.$body !== undefined) return new Response(value.$body).body;
  if (value.$stream !== undefined) {
    const bytes = new TextEncoder().encode(value.$stream);
    return new ReadableStream({ start(c) { c.enqueue(bytes); c.close(); } });
  }
  if (value.$bytes !== undefined) {
    const bytes = Uint8Array.from(value.$bytes);
    if (value.as === "ArrayBuffer") return bytes.buffer;
    if (value.as === "DataView") return new DataView(bytes.buffer);
    return bytes;
  }
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, decode(v)]));
}

async function encode(value) {
  if (value === undefined) return { $undefined: true };
  if (typeof value === "bigint") return { $bigint: String(value) };
  if (typeof value === "number" && !Number.isFinite(value)) return { $number: String(value) };
  if (value === null || typeof value !== "object") return value;
  if (value instanceof ArrayBuffer) return { $bytes: Array.from(new Uint8Array(value)), as: "ArrayBuffer" };
  if (ArrayBuffer.isView(value)) return { $bytes: Array.from(new Uint8Array(value.buffer, value.byteOffset, value.byteLength)), as: value.constructor.name };
  if (value instanceof Map) {
    const entries = [];
    for (const [k, v] of value) entries.push([k, await encode(v)]);
    return { $map: entries };
  }
  if (value instanceof ReadableStream) return { $stream: await new Response(value).text() };
  if (Array.isArray(value)) {
    const items = [];
    for (const item of value) items.push(await encode(item));
    return items;
  }
  const out = {};
  for (const [k, v] of Object.entries(value)) out[k] = await encode(v);
  return out;
}

function failure(error, sync) {
  const out = { error: error instanceof Error ? error.message : String(error), name: error?.constructor?.name ?? typeof error };
  if (error?.cause instanceof Error) out.cause = error.cause.message;
  if (sync) out.sync = true;
  return out;
}

/** Calls call(); a synchronous throw and a rejection are both outcomes. */
async function settle(call) {
  let promise;
  try {
    promise = call();
  } catch (error) {
    return failure(error, true);
  }
  try {
    return { value: await encode(await promise) };
  } catch (error) {
    return failure(error, false);
  }
}

function statement(db, spec) {
  const prepared = db.prepare(spec.sql);
  return spec.params === undefined ? prepared : prepared.bind(...decode(spec.params));
}

async function runD1(db, ops) {
  const outcomes = [];
  for (const op of ops.slice(0, OPS_MAX)) {
    if (op.op === "exec") outcomes.push(await settle(() => db.exec(op.sql)));
    else if (op.op === "batch") outcomes.push(await settle(() => db.batch(op.statements.map((s) => statement(db, s)))));
    else if (op.op === "first") outcomes.push(await settle(() => op.column === undefined ? statement(db, op).first() : statement(db, op).first(op.column)));
    else if (op.op === "raw") outcomes.push(await settle(() => op.options === undefined ? statement(db, op).raw() : statement(db, op).raw(op.options)));
    else outcomes.push(await settle(() => statement(db, op)[op.op]()));
  }
  return outcomes;
}

/** Arguments may name the cursor an earlier list answered with: { $cursorOf: <op index> }. */
function kvArgs(args, outcomes) {
  return decode(args).map((arg) => {
    if (arg && typeof arg === "object" && arg.$cursorOf !== undefined) {
      const { $cursorOf, ...rest } = arg;
      return { ...rest, cursor: outcomes[$cursorOf].value.cursor };
    }
    return arg;
  });
}

/**
 * An R2 object as JSON can compare it: its fields (a version, random on both sides, by its
 * form), what writeHttpMetadata writes, its checksums as toJSON gives them and what they are made
 * of, and its own fields, which workerd lists in an order of its own.
 */
function r2Shape(o) {
  if (o === null || typeof o !== "object" || !("httpEtag" in o)) return o;
  const headers = new Headers();
  o.writeHttpMetadata(headers);
  const http = { ...o.httpMetadata };
  if (http.cacheExpiry instanceof Date) http.cacheExpiry = "Date " + http.cacheExpiry.toISOString();
  return {
    class: o.constructor.name, key: o.key, version: /^[0-9a-f]{32}$/.test(o.version) ? "<32 hex>" : o.version,
    size: o.size, etag: o.etag, httpEtag: o.httpEtag, uploaded: o.uploaded instanceof Date ? "<Date>" : typeof o.uploaded,
    httpMetadata: http, customMetadata: o.customMetadata, checksums: o.checksums.toJSON(),
    md5: o.checksums.md5?.constructor.name, storageClass: o.storageClass, range: o.range ?? "<none>",
    ssecKeyMd5: o.ssecKeyMd5 ?? "<none>", headers: [...headers], ownKeys: Object.keys(o).sort(),
    body: "body" in o ? o.bodyUsed : "<none>",
  };
}

/** Reads a GetResult's body as read says, then tells whether it was used and whether a second read fails. */
async function readBody(o, read) {
  if (o === null || !("body" in o)) return undefined;
  if (read === "body") return { $stream: await new Response(o.body).text(), used: o.bodyUsed };
  let value = await o[read]();
  if (read === "blob") value = { type: value.type, size: value.size, text: await value.text() };
  if (read === "arrayBuffer" || read === "bytes") value = { as: value.constructor.name, bytes: Array.from(new Uint8Array(value)) };
  let again;
  try { await o.text(); again = "read"; } catch (error) { again = error.constructor.name + ": " + error.message; }
  return { value, used: o.bodyUsed, again };
}

async function runR2(bucket, ops) {
  const outcomes = [];
  for (const op of ops.slice(0, OPS_MAX)) {
    let call;
    try {
      call = bucket[op.op](...kvArgs(op.args ?? [], outcomes));
    } catch (error) {
      outcomes.push(failure(error, true));
      continue;
    }
    const outcome = await settle(async () => {
      const value = await call;
      if (op.op === "list") return { ...value, objects: value.objects.map(r2Shape) };
      const read = op.read === undefined ? undefined : await readBody(value, op.read);
      return read === undefined ? r2Shape(value) : { object: r2Shape(value), read };
    });
    outcomes.push(outcome);
  }
  return outcomes;
}

async function runKv(kv, ops) {
  const outcomes = [];
  for (const op of ops.slice(0, OPS_MAX)) {
    outcomes.push(await settle(() => kv[op.op](...kvArgs(op.args ?? [], outcomes))));
  }
  return outcomes;
}
`;

/**
 * The Worker Miniflare runs: each request is one case, `{ binding, kind, ops }`, on a binding no
 * other case touched. A fresh database per case matters beyond the tables: `last_row_id` is the
 * connection's, and would carry over from the previous case.
 */
const WORKER = `${RUNNER}
export default {
  async fetch(request, env) {
    const { binding, kind, ops } = await request.json();
    const run = kind === "d1" ? runD1 : kind === "r2" ? runR2 : runKv;
    return Response.json(await run(env[binding], ops));
  },
};
`;

/** Bindings of each kind Miniflare declares; every case takes the next unused one. */
const CASES_MAX = 24;
const casesRun = { d1: 0, kv: 0, r2: 0 };
type Kind = keyof typeof casesRun;

type Op = Record<string, unknown>;
interface Outcome {
  value?: unknown;
  error?: string;
  name?: string;
  cause?: string;
  sync?: true;
}

const runner = new Function(`${RUNNER}\nreturn { runD1, runKv, runR2 };`)() as {
  runD1(db: D1Database, ops: readonly Op[]): Promise<Outcome[]>;
  runKv(kv: KVNamespace, ops: readonly Op[]): Promise<Outcome[]>;
  runR2(bucket: R2Bucket, ops: readonly Op[]): Promise<Outcome[]>;
};

let miniflare: Miniflare;

beforeAll(async () => {
  miniflare = new Miniflare({
    modules: true,
    script: WORKER,
    // Before the `d1_binding_jsrpc` flag's default, as eutaxy's binding assumes (d1.ts).
    compatibilityDate: "2026-04-01",
    d1Databases: Array.from({ length: CASES_MAX }, (_, i) => `DB${i}`),
    kvNamespaces: Array.from({ length: CASES_MAX }, (_, i) => `KV${i}`),
    r2Buckets: Array.from({ length: CASES_MAX }, (_, i) => `R2${i}`),
  });
  await miniflare.ready;
}, 120_000);

afterAll(async () => {
  await miniflare?.dispose();
}, 60_000);

/** The outcomes of `ops` on a fresh binding of Miniflare's. */
async function real(kind: Kind, ops: readonly Op[]): Promise<Outcome[]> {
  const index = casesRun[kind]++;
  if (index >= CASES_MAX) throw new Error(`more than ${CASES_MAX} cases: raise CASES_MAX`);
  const binding = `${kind === "d1" ? "DB" : kind === "kv" ? "KV" : "R2"}${index}`;
  const response = await miniflare.dispatchFetch("http://fidelity.test/", {
    method: "POST",
    body: JSON.stringify({ binding, kind, ops }),
  });
  const text = await response.text();
  if (response.status !== 200) throw new Error(`Miniflare answered ${response.status}: ${text}`);
  return JSON.parse(text) as Outcome[];
}

/** A run on a fresh engine, as a check's run starts: the databases opened, sealed, run 0. */
function freshEngine(stores: readonly { name: string; schema?: string }[]): Engine {
  const engine = createEngine({
    seed: "fidelity",
    events: ["req-1"],
    maxFaultsPerRun: 0,
    maxRedeliveries: 0,
    budgetMs: 10_000,
    runsMax: 1,
    shrinkRunsMax: 1,
    invariants: [],
  });
  for (const store of stores) {
    engine.d1Open(store.name);
    if (store.schema) engine.d1Setup(store.name, store.schema);
  }
  engine.seal();
  engine.nextRun(0);
  return engine;
}

/** An invocation that never faults: every effect performs at once. */
const PASS_THROUGH: EffectScope = {
  invocation: "req-1#1",
  effect: (_label, perform) => Promise.resolve().then(() => perform(0)),
};

/** The outcomes of `ops` on eutaxy's binding, as JSON (the Worker's answer went through JSON too). */
async function simulated(kind: Kind, ops: readonly Op[]): Promise<Outcome[]> {
  if (kind === "r2") {
    const engine = freshEngine([{ name: "r2:R2", schema: R2_SCHEMA }]);
    try {
      const memos = new Map<string, unknown>();
      const bucket = createR2Bucket({ kind: "r2", name: "R2", store: "r2:R2" }, PASS_THROUGH, {
        engine,
        nowMs: () => engine.nowMs(),
        memo<T>(key: string, create: () => T): T {
          if (!memos.has(key)) memos.set(key, create());
          return memos.get(key) as T;
        },
      });
      return roundTrip(await runner.runR2(bucket as R2Bucket, ops));
    } finally {
      engine.free();
    }
  }
  if (kind === "d1") {
    const engine = freshEngine([{ name: "DB" }]);
    try {
      return roundTrip(await runner.runD1(createD1Database("DB", PASS_THROUGH, engine), ops));
    } finally {
      engine.free();
    }
  }
  const engine = freshEngine([{ name: "kv:KV", schema: KV_SCHEMA }]);
  const memos = new Map<string, unknown>();
  const run: KvRun = {
    engine,
    nowMs: () => engine.nowMs(),
    memo<T>(key: string, create: () => T): T {
      if (!memos.has(key)) memos.set(key, create());
      return memos.get(key) as T;
    },
  };
  try {
    const kv = createKvNamespace({ kind: "kv", name: "KV", store: "kv:KV" }, PASS_THROUGH, run);
    return roundTrip(await runner.runKv(kv as KVNamespace, ops));
  } finally {
    engine.free();
  }
}

function roundTrip<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}

/** Both sides' outcomes for one case. */
async function both(kind: Kind, ops: readonly Op[]): Promise<{ sim: Outcome[]; mf: Outcome[] }> {
  const [mf, sim] = [await real(kind, ops), await simulated(kind, ops)];
  expect(sim).toHaveLength(ops.length);
  expect(mf).toHaveLength(ops.length);
  return { sim, mf };
}

/* ------------------------------------------------------------------------------------------ */
/* D1                                                                                          */
/* ------------------------------------------------------------------------------------------ */

/**
 * `meta` fields whose values depend on where and how fast the query ran, not on what it did
 * (docs/fidelity.md, "D1 meta"): compared by type only.
 */
const D1_META_BY_TYPE = ["served_by", "duration", "size_after", "rows_read", "rows_written"];

/**
 * Normalizes every D1Result in the outcomes: the fields above become their type name. On the
 * simulated side it also asserts and removes what eutaxy adds after production's docs and
 * Miniflare leaves out (`served_by_primary`, `timings`), so that the rest compares exactly.
 */
function normalizeD1(outcomes: Outcome[], side: "sim" | "mf"): Outcome[] {
  return outcomes.map((outcome) => {
    if (!("value" in outcome)) return outcome;
    const value = outcome.value as Record<string, unknown> | null;
    // exec's D1ExecResult: its duration is as real as meta's.
    if (value && typeof value === "object" && "count" in value && "duration" in value) {
      return { ...outcome, value: { ...value, duration: `<${typeof value.duration}>` } };
    }
    return { ...outcome, value: mapResults(outcome.value, (meta) => normalizeMeta(meta, side)) };
  });
}

function mapResults(
  value: unknown,
  fix: (meta: Record<string, unknown>) => Record<string, unknown>,
): unknown {
  const isResult = (v: unknown): v is { success: boolean; meta: Record<string, unknown> } =>
    typeof v === "object" && v !== null && "success" in v && "meta" in v;
  if (isResult(value)) return { ...value, meta: fix(value.meta) };
  if (Array.isArray(value) && value.every(isResult)) {
    return value.map((v) => ({ ...v, meta: fix(v.meta) }));
  }
  return value;
}

function normalizeMeta(meta: Record<string, unknown>, side: "sim" | "mf"): Record<string, unknown> {
  const out = { ...meta };
  for (const key of D1_META_BY_TYPE) if (key in out) out[key] = `<${typeof out[key]}>`;
  // `last_row_id` is the connection's: after a statement that inserted nothing it is whatever
  // the connection inserted last, Miniflare's own bookkeeping included.
  if (out.changes === 0) out.last_row_id = `<${typeof out.last_row_id}>`;
  if (side === "sim") {
    // Documented difference: production's meta has them, Miniflare's does not.
    expect(out.served_by_primary).toBe(true);
    expect(out.timings).toEqual({ sql_duration_ms: 0 });
    delete out.served_by_primary;
    delete out.timings;
  } else {
    expect(out).not.toHaveProperty("served_by_primary");
    expect(out).not.toHaveProperty("timings");
  }
  return out;
}

/** Runs a D1 case and expects the same outcomes on both sides, meta normalized. */
async function sameD1(ops: readonly Op[]): Promise<Outcome[]> {
  const { sim, mf } = await both("d1", ops);
  const [s, m] = [normalizeD1(sim, "sim"), normalizeD1(mf, "mf")];
  expect(s).toEqual(m);
  return m;
}

const USERS = "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT UNIQUE NOT NULL, age INTEGER)";

describe("D1 fidelity against Miniflare", () => {
  it("prepare, bind and the statement methods answer alike", async () => {
    const outcomes = await sameD1([
      { op: "run", sql: USERS },
      { op: "run", sql: "INSERT INTO users (name, age) VALUES (?, ?)", params: ["Ada", 36] },
      {
        op: "run",
        sql: "INSERT INTO users (name, age) VALUES (?1, ?2), (?3, ?4)",
        params: ["Grace", 45, "Alan", null],
      },
      { op: "all", sql: "SELECT * FROM users ORDER BY id" },
      { op: "run", sql: "SELECT name FROM users WHERE age > ?", params: [40] },
      { op: "all", sql: "UPDATE users SET age = age + 1 WHERE age IS NOT NULL" },
      { op: "first", sql: "SELECT * FROM users ORDER BY id" },
      { op: "first", sql: "SELECT * FROM users ORDER BY id", column: "name" },
      { op: "first", sql: "SELECT * FROM users WHERE id = ?", params: [99] },
      { op: "first", sql: "SELECT * FROM users WHERE id = ?", params: [99], column: "name" },
      { op: "first", sql: "SELECT age FROM users WHERE name = 'Alan'", column: "age" },
      { op: "raw", sql: "SELECT id, name FROM users ORDER BY id" },
      { op: "raw", sql: "SELECT id, name FROM users ORDER BY id", options: { columnNames: true } },
      { op: "raw", sql: "SELECT id, name FROM users WHERE id > 99", options: { columnNames: true } },
      { op: "raw", sql: "SELECT id, name FROM users WHERE id > 99" },
      { op: "all", sql: "SELECT u.name, v.name FROM users u JOIN users v ON v.id = u.id + 1 ORDER BY u.id" },
      { op: "run", sql: "DELETE FROM users WHERE name = ?", params: ["Alan"] },
    ]);
    // What a user would check: the rows came back as objects in column order.
    expect(outcomes[3]?.value).toMatchObject({
      success: true,
      results: [
        { id: 1, name: "Ada", age: 36 },
        { id: 2, name: "Grace", age: 45 },
        { id: 3, name: "Alan", age: null },
      ],
    });
  });

  it("converts bound values and column types alike", async () => {
    await sameD1([
      { op: "run", sql: "CREATE TABLE v (x)" },
      { op: "all", sql: "SELECT ?1 AS a, ?2 AS b, ?3 AS c, ?4 AS d", params: [42, 1.5, "text", null] },
      { op: "all", sql: "SELECT ?1 AS t, ?2 AS f", params: [true, false] },
      { op: "all", sql: "SELECT ?1 AS whole, ?2 AS neg, ?3 AS tiny", params: [1.0, -0, 1e-300] },
      {
        op: "all",
        sql: "SELECT ?1 AS safe, ?2 AS big, ?3 AS huge",
        params: [2 ** 53 - 1, 2 ** 53 + 2, 1e300],
      },
      {
        op: "all",
        sql: "SELECT ?1 AS nan, ?2 AS inf, typeof(?2) AS t",
        params: [{ $number: "NaN" }, { $number: "Infinity" }],
      },
      { op: "all", sql: "SELECT typeof(?1) AS t1, typeof(?2) AS t2", params: [1.5, "1"] },
      {
        op: "all",
        sql: "SELECT 9007199254740993 AS over, -9223372036854775808 AS min, 9223372036854775807 AS max, typeof(9223372036854775807) AS t",
      },
      {
        op: "all",
        sql: "SELECT 0.1 + 0.2 AS sum, 1e308 * 10 AS inf, -0.0 AS negzero, 5 / 2 AS div, 5.0 / 2 AS fdiv",
      },
      {
        op: "run",
        sql: "INSERT INTO v (x) VALUES (?), (?), (?), (?)",
        params: [
          { $bytes: [0, 1, 255], as: "Uint8Array" },
          { $bytes: [7, 8], as: "ArrayBuffer" },
          { $bytes: [], as: "Uint8Array" },
          [1, 2, 3],
        ],
      },
      { op: "all", sql: "SELECT x, typeof(x) AS t, length(x) AS n FROM v ORDER BY rowid" },
      { op: "raw", sql: "SELECT x FROM v ORDER BY rowid" },
      { op: "first", sql: "SELECT x FROM v ORDER BY rowid", column: "x" },
      { op: "all", sql: "SELECT X'00FF' AS b, zeroblob(2) AS z, CAST('1' AS INTEGER) AS i, '1' AS s" },
      { op: "run", sql: "CREATE TABLE typed (i INTEGER, r REAL)" },
      { op: "run", sql: "INSERT INTO typed VALUES (?, ?), (?, ?)", params: [7, 7, true, 2.5] },
      { op: "all", sql: "SELECT i, typeof(i) AS ti, r, typeof(r) AS tr FROM typed" },
    ]);
  });

  it("binds integral numbers and booleans as INTEGER, as the docs say, where Miniflare binds REAL", async () => {
    // docs/fidelity.md, "D1 bound numbers": production follows the docs' type conversion table
    // (Number with an integral value and Boolean → INTEGER); Miniflare binds every number
    // through workerd's SQL API, which binds a JavaScript number as a REAL.
    const ops = [
      {
        op: "first",
        sql: "SELECT typeof(?1) AS n, typeof(?2) AS t, typeof(?3) AS max, ?4 / 2 AS half",
        params: [42, true, 2 ** 53 - 1, 5],
      },
      { op: "run", sql: "CREATE TABLE loose (x)" },
      { op: "run", sql: "INSERT INTO loose VALUES (?)", params: [42] },
      { op: "first", sql: "SELECT typeof(x) AS t FROM loose" },
    ];
    const { sim, mf } = await both("d1", ops);
    expect(mf[0]).toEqual({ value: { n: "real", t: "real", max: "real", half: 2.5 } });
    expect(sim[0]).toEqual({ value: { n: "integer", t: "integer", max: "integer", half: 2 } });
    expect(mf[3]).toEqual({ value: { t: "real" } });
    expect(sim[3]).toEqual({ value: { t: "integer" } });
  });

  it("reports errors with the same messages", async () => {
    const outcomes = await sameD1([
      { op: "run", sql: USERS },
      { op: "run", sql: "INSERT INTO users (name) VALUES ('Ada')" },
      { op: "all", sql: "SELEC * FROM users" },
      { op: "all", sql: "SELECT * FROM nope" },
      { op: "first", sql: "SELECT nope FROM users" },
      { op: "run", sql: "INSERT INTO users (name) VALUES (?)", params: ["Ada"] },
      { op: "run", sql: "INSERT INTO users (name) VALUES (NULL)" },
      { op: "first", sql: "SELECT ? AS x", params: [{ $undefined: true }] },
      { op: "first", sql: "SELECT ? AS x", params: [{ $bigint: "9007199254740993" }] },
      { op: "first", sql: "SELECT ? AS x", params: [{ a: 1 }] },
      { op: "first", sql: "SELECT ? AS x, ? AS y", params: [1] },
      { op: "first", sql: "SELECT ? AS x", params: [1, 2] },
      { op: "first", sql: "SELECT ?2 AS x", params: [1] },
      { op: "first", sql: "SELECT * FROM users", column: "nope" },
      { op: "all", sql: "" },
      { op: "all", sql: "   " },
      { op: "run", sql: "CREATE TABLE users (id)" },
      { op: "all", sql: "SELECT name FROM users" },
    ]);
    // What a user would check: a constraint violation names the constraint and the column.
    expect(outcomes[5]).toMatchObject({
      error: expect.stringMatching(/^D1_ERROR: UNIQUE constraint failed: users\.name/),
    });
    expect(outcomes[7]).toMatchObject({
      error: "D1_TYPE_ERROR: Type 'undefined' not supported for value 'undefined'",
      sync: true,
    });
  });

  it("D1 error details as workerd words them: the offset of a syntax error, a constraint's extended code", async () => {
    // docs/fidelity.md, "D1 error messages". workerd adds both to SQLite's message, in
    // Miniflare and in production alike.
    const ops = [
      { op: "run", sql: "CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT UNIQUE)" },
      { op: "all", sql: "SELEC 1" },
      { op: "run", sql: "INSERT INTO t VALUES (1, 'a'), (2, 'a')" },
      { op: "run", sql: "INSERT INTO t VALUES (1, 'a'), (1, 'b')" },
      { op: "all", sql: "SELECT nope FROM t" },
      { op: "all", sql: "SELECT * FROM t WHERE id = 1 ORDER BY" },
    ];
    const { sim, mf } = await both("d1", ops);
    expect(mf.slice(1).map((outcome) => outcome.error)).toEqual([
      'D1_ERROR: near "SELEC": syntax error at offset 0: SQLITE_ERROR',
      "D1_ERROR: UNIQUE constraint failed: t.name: SQLITE_CONSTRAINT (extended: SQLITE_CONSTRAINT_UNIQUE)",
      "D1_ERROR: UNIQUE constraint failed: t.id: SQLITE_CONSTRAINT (extended: SQLITE_CONSTRAINT_PRIMARYKEY)",
      expect.stringMatching(/^D1_ERROR: no such column: nope/),
      expect.stringMatching(/^D1_ERROR: incomplete input/),
    ]);
    expect(sim.slice(1).map((outcome) => outcome.error)).toEqual(mf.slice(1).map((outcome) => outcome.error));
  });

  it("refuses a prepared statement holding two statements, as production does, where Miniflare runs both", async () => {
    // docs/fidelity.md, "Several statements in one prepare".
    const { sim, mf } = await both("d1", [{ op: "all", sql: "SELECT 1 AS a; SELECT 2 AS b" }]);
    expect(mf[0]?.value).toMatchObject({ success: true, results: [{ b: 2 }] });
    expect(sim[0]).toMatchObject({
      error: "D1_ERROR: A prepared SQL statement must contain only one statement.",
    });
  });

  it("enforces foreign keys and refuses what D1's authorizer refuses, alike", async () => {
    const FAMILIES = [
      "CREATE TABLE p (id INTEGER PRIMARY KEY)",
      "CREATE TABLE c (id INTEGER PRIMARY KEY, pid INTEGER REFERENCES p(id) ON DELETE CASCADE)",
    ];
    const outcomes = await sameD1([
      ...FAMILIES.map((sql) => ({ op: "run", sql })),
      { op: "all", sql: "PRAGMA foreign_keys" },
      { op: "run", sql: "INSERT INTO c (id, pid) VALUES (1, 99)" },
      { op: "run", sql: "INSERT INTO p (id) VALUES (1)" },
      { op: "run", sql: "INSERT INTO c (id, pid) VALUES (2, 1)" },
      { op: "run", sql: "DELETE FROM p WHERE id = 1" },
      { op: "first", sql: "SELECT count(*) AS n FROM c", column: "n" },
      { op: "run", sql: "PRAGMA foreign_keys = off" },
      { op: "all", sql: "PRAGMA foreign_keys" },
      {
        op: "batch",
        statements: [
          { sql: "INSERT INTO c (id, pid) VALUES (3, 7)" },
          { sql: "INSERT INTO p (id) VALUES (7)" },
        ],
      },
      {
        op: "batch",
        statements: [
          { sql: "PRAGMA defer_foreign_keys = true" },
          { sql: "INSERT INTO c (id, pid) VALUES (3, 7)" },
          { sql: "INSERT INTO p (id) VALUES (7)" },
        ],
      },
      ...["BEGIN TRANSACTION", "COMMIT", "SAVEPOINT s", "RELEASE s", "ROLLBACK", "END"].map((sql) => ({
        op: "run",
        sql,
      })),
      { op: "batch", statements: [{ sql: "INSERT INTO p (id) VALUES (8)" }, { sql: "BEGIN" }] },
      { op: "run", sql: "ATTACH DATABASE ':memory:' AS x" },
      { op: "run", sql: "CREATE TEMP TABLE t (a)" },
      { op: "all", sql: "PRAGMA journal_mode" },
      { op: "run", sql: "PRAGMA user_version = 3" },
      { op: "all", sql: "PRAGMA table_info(p)" },
      { op: "run", sql: "VACUUM" },
      { op: "exec", sql: "BEGIN" },
      { op: "run", sql: "INSERT OR IGNORE INTO p (id) VALUES (7)" },
      { op: "run", sql: "UPDATE p SET id = 10 WHERE id = 1000" },
      { op: "run", sql: "CREATE TABLE IF NOT EXISTS p (id)" },
      { op: "run", sql: "CREATE TABLE z (a)" },
      { op: "run", sql: "DROP TABLE z" },
      { op: "all", sql: "SELECT id FROM p ORDER BY id" },
    ]);
    // What a user would check: an orphan is refused, a parent's rows go with it, and a
    // transaction statement gets D1's advice instead of running.
    expect(outcomes[3]).toMatchObject({
      error: expect.stringMatching(/^D1_ERROR: FOREIGN KEY constraint failed/),
    });
    expect(outcomes[7]?.value).toBe(0);
    expect(outcomes[12]).toMatchObject({
      error: expect.stringMatching(/^D1_ERROR: To execute a transaction/),
    });
    expect(outcomes.at(-1)?.value).toMatchObject({ results: [{ id: 7 }] });
  });

  it("runs a batch as one transaction, rolled back when a statement fails", async () => {
    const outcomes = await sameD1([
      { op: "run", sql: USERS },
      {
        op: "batch",
        statements: [
          { sql: "INSERT INTO users (name, age) VALUES (?, ?)", params: ["Ada", 36] },
          { sql: "INSERT INTO users (name, age) VALUES (?, ?)", params: ["Grace", 45] },
          { sql: "UPDATE users SET age = age + 1" },
          { sql: "SELECT name, age FROM users ORDER BY id" },
        ],
      },
      {
        op: "batch",
        statements: [
          { sql: "INSERT INTO users (name) VALUES (?)", params: ["Alan"] },
          { sql: "INSERT INTO users (name) VALUES (?)", params: ["Ada"] },
        ],
      },
      { op: "batch", statements: [{ sql: "UPDATE users SET age = 0" }, { sql: "SELEC 1" }] },
      { op: "all", sql: "SELECT name, age FROM users ORDER BY id" },
      { op: "batch", statements: [] },
      { op: "batch", statements: [{ sql: "SELECT ? AS x", params: [{ $undefined: true }] }] },
      { op: "batch", statements: [{ sql: "SELECT 1 AS one" }, { sql: "SELECT * FROM users WHERE id > 99" }] },
    ]);
    // What a user would check: the failed batches changed nothing.
    expect(outcomes[4]?.value).toMatchObject({
      results: [
        { name: "Ada", age: 37 },
        { name: "Grace", age: 46 },
      ],
    });
  });

  it("runs exec line by line and reports its errors alike", async () => {
    const exec = (sql: string) => ({ op: "exec", sql });
    await sameD1([
      exec(`${USERS};\nINSERT INTO users (name) VALUES ('Ada');\nINSERT INTO users (name) VALUES ('Grace');`),
      { op: "all", sql: "SELECT name FROM users ORDER BY id" },
      exec("  INSERT INTO users (name) VALUES ('Alan');\n\n  "),
      exec("INSERT INTO users (name) VALUES ('Ada');\nINSERT INTO users (name) VALUES ('Barbara');"),
      exec("SELEC 1"),
      exec("INSERT INTO users (name)\nVALUES ('Niklaus')"),
      exec("SELECT * FROM users; SELECT 1"),
      exec(""),
      exec("  \n  "),
      exec("INSERT INTO users (name) VALUES ('Barbara');\n\nINSERT INTO users (name) VALUES ('Frances');"),
      { op: "all", sql: "SELECT name FROM users ORDER BY id" },
    ]);
  });

  it("keeps the lines of exec before a failing one, where Miniflare rolls them back", async () => {
    // docs/fidelity.md, "exec and a failing line": the docs say only that execution stops.
    const ops = [
      { op: "run", sql: USERS },
      {
        op: "exec",
        sql: "INSERT INTO users (name) VALUES ('Edsger');\nINSERT INTO users (name) VALUES ('Edsger');",
      },
      { op: "all", sql: "SELECT name FROM users" },
    ];
    const { sim, mf } = await both("d1", ops);
    const failure =
      "D1_EXEC_ERROR: Error in line 1: INSERT INTO users (name) VALUES ('Edsger');: UNIQUE constraint failed: users.name: SQLITE_CONSTRAINT (extended: SQLITE_CONSTRAINT_UNIQUE)";
    expect(mf[1]?.error).toBe(failure);
    expect(sim[1]?.error).toBe(failure);
    expect(mf[2]?.value).toMatchObject({ results: [] });
    expect(sim[2]?.value).toMatchObject({ results: [{ name: "Edsger" }] });
  });
});

/* ------------------------------------------------------------------------------------------ */
/* KV                                                                                          */
/* ------------------------------------------------------------------------------------------ */

/**
 * Normalizes what depends on the clock or on the store's cursor format (docs/fidelity.md, "KV"):
 * a listed key's `expiration` and a list's `cursor` become their type name. The absolute
 * expiration differs (eutaxy's virtual clock starts on 2026-01-01); the cursor is opaque on both.
 */
function normalizeKv(outcomes: Outcome[]): Outcome[] {
  return outcomes.map((outcome) => {
    const value = outcome.value as { keys?: { expiration?: unknown }[]; cursor?: unknown } | undefined;
    if (!value || typeof value !== "object" || !Array.isArray(value.keys)) return outcome;
    const keys = value.keys.map((key) =>
      "expiration" in key ? { ...key, expiration: `<${typeof key.expiration}>` } : key,
    );
    const cursor = "cursor" in value ? { cursor: `<${typeof value.cursor}>` } : {};
    return { ...outcome, value: { ...value, keys, ...cursor } };
  });
}

async function sameKv(ops: readonly Op[]): Promise<Outcome[]> {
  const { sim, mf } = await both("kv", ops);
  const m = normalizeKv(mf);
  expect(normalizeKv(sim)).toEqual(m);
  return m;
}

const put = (...args: unknown[]) => ({ op: "put", args });
const get = (...args: unknown[]) => ({ op: "get", args });

describe("KV fidelity against Miniflare", () => {
  it("reads values as each type alike", async () => {
    const outcomes = await sameKv([
      put("text", "héllo"),
      put("json", JSON.stringify({ a: [1, 2], b: null })),
      put("bytes", { $bytes: [0, 1, 255], as: "Uint8Array" }),
      put("buffer", { $bytes: [9, 8], as: "ArrayBuffer" }),
      put("number", 42),
      put("empty", ""),
      get("text"),
      get("text", "text"),
      get("text", { type: "arrayBuffer" }),
      get("text", "stream"),
      get("json", "json"),
      get("json", { type: "json" }),
      get("bytes", "arrayBuffer"),
      get("buffer", "arrayBuffer"),
      get("number"),
      get("empty"),
      get("empty", "arrayBuffer"),
      get("missing"),
      get("missing", "json"),
      get("missing", "arrayBuffer"),
      get("text", "json"),
      get("text", "bogus"),
      get("missing", "bogus"),
      get(["text", "json", "missing"]),
      get(["json"], "json"),
      get(["text"], "arrayBuffer"),
    ]);
    // What a user would check: the text survives the round trip.
    expect(outcomes[6]).toEqual({ value: "héllo" });
  });

  it("keeps metadata alike and validates put's options alike", async () => {
    await sameKv([
      put("a", "1", { metadata: { owner: "ada", n: 1 } }),
      { op: "getWithMetadata", args: ["a"] },
      { op: "getWithMetadata", args: ["a", "json"] },
      { op: "getWithMetadata", args: ["missing"] },
      put("b", "2"),
      { op: "getWithMetadata", args: ["b"] },
      { op: "getWithMetadata", args: [["a", "b", "missing"]] },
      put("ttl", "3", { expirationTtl: 3600 }),
      get("ttl"),
      put("c", "x", { expirationTtl: 30 }),
      put("c", "x", { expirationTtl: 0 }),
      put("c", "x", { expirationTtl: -5 }),
      put("c", "x", { expirationTtl: "soon" }),
      put("c", "x", { expiration: 1 }),
      put("c", "x", { metadata: { big: "m".repeat(1100) } }),
      put("", "x"),
      put(".", "x"),
      put("..", "x"),
      put("k".repeat(513), "x"),
      put("c", { a: 1 }),
      get("c"),
      get(""),
      { op: "delete", args: [""] },
      // workerd takes the expiration options as 32-bit integers before anything is sent.
      put("c", "x", { expirationTtl: "120" }),
      put("c", "x", { expirationTtl: 90.7 }),
      put("c", "x", { expirationTtl: true }),
      put("c", "x", { expirationTtl: null }),
      put("c", "x", { expirationTtl: { $number: "Infinity" } }),
      put("c", "x", { expirationTtl: 1e10 }),
      put("c", "x", { expiration: "soon" }),
      put("c", "x", { expiration: 1e12 }),
      put("c", "x", { expiration: 5e9, expirationTtl: 100 }),
      put("", "x", { expirationTtl: 1e10 }),
      { op: "list", args: [] },
      // Primitives are stored as their text.
      put("p", null),
      get("p"),
      put("p", { $undefined: true }),
      get("p"),
      put("p", 12.5),
      get("p"),
      get("p", { cacheTtl: 30 }),
      get("p", { cacheTtl: 29 }),
      get("p", { type: "text", cacheTtl: 60 }),
    ]);
  });

  it("lists keys by prefix, limit and cursor alike", async () => {
    const list = (options?: unknown) => ({ op: "list", args: options === undefined ? [] : [options] });
    const outcomes = await sameKv([
      put("user:3", "c"),
      put("user:1", "a", { metadata: { n: 1 } }),
      put("user:2", "b", { expirationTtl: 3600 }),
      put("team:1", "t"),
      put("user:10", "d"),
      list(),
      list({ prefix: "user:" }),
      list({ prefix: "user:", limit: 2 }),
      { op: "list", args: [{ prefix: "user:", limit: 2, $cursorOf: 7 }] },
      { op: "list", args: [{ prefix: "user:", limit: 2, $cursorOf: 8 }] },
      list({ prefix: "nobody" }),
      list({ limit: 1001 }),
      list({ limit: 0 }),
      list({ prefix: null, cursor: null }),
      list({ prefix: "user:", limit: 1.5 }),
    ]);
    // What a user would check: keys come in byte order, pages resume where the last one ended.
    expect(outcomes[6]?.value).toMatchObject({
      keys: [{ name: "user:1" }, { name: "user:10" }, { name: "user:2" }, { name: "user:3" }],
      list_complete: true,
    });
  });

  it("refuses a cursor it did not make, where Miniflare answers an empty page", async () => {
    // docs/fidelity.md, "KV cursors": cursors are opaque on both; production's format is not
    // documented, so eutaxy refuses one it cannot have made rather than guess.
    const { sim, mf } = await both("kv", [put("a", "1"), { op: "list", args: [{ cursor: "bogus" }] }]);
    expect(mf[1]).toEqual({ value: { keys: [], list_complete: true, cacheStatus: null } });
    expect(sim[1]).toEqual({ error: "KV GET failed: 400 Invalid cursor", name: "Error" });
  });

  it("deletes alike", async () => {
    await sameKv([
      put("a", "1"),
      { op: "delete", args: ["a"] },
      get("a"),
      { op: "delete", args: ["a"] },
      { op: "delete", args: ["never"] },
      { op: "list", args: [] },
    ]);
  });
});

/* ------------------------------------------------------------------------------------------ */
/* R2                                                                                          */
/* ------------------------------------------------------------------------------------------ */

/**
 * Normalizes the one documented difference every object shows (docs/fidelity.md, "R2"):
 * production's `storageClass` is `"Standard"`, which eutaxy answers, where Miniflare answers `""`.
 */
function normalizeR2(outcomes: Outcome[], side: "sim" | "mf"): Outcome[] {
  const fix = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(fix);
    if (value === null || typeof value !== "object") return value;
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      if (k === "storageClass") {
        expect(v).toBe(side === "sim" ? "Standard" : "");
        out[k] = "<class>";
      } else out[k] = fix(v);
    }
    return out;
  };
  return outcomes.map((outcome) =>
    "value" in outcome ? { ...outcome, value: fix(outcome.value) } : outcome,
  );
}

async function sameR2(ops: readonly Op[]): Promise<Outcome[]> {
  const { sim, mf } = await both("r2", ops);
  const m = normalizeR2(mf, "mf");
  expect(normalizeR2(sim, "sim")).toEqual(m);
  return m;
}

const r2 = (op: string, ...args: unknown[]) => ({ op, args });
const r2Read = (read: string, ...args: unknown[]) => ({ op: "get", args, read });
/** MD5 of "hello", the etag of an object holding it. */
const HELLO_MD5 = "5d41402abc4b2a76b9719d911017c592";

describe("R2 fidelity against Miniflare", () => {
  it("puts values of every kind and answers objects of the same shape", async () => {
    const outcomes = await sameR2([
      r2("put", "text", "hello", {
        httpMetadata: { contentType: "text/plain", cacheExpiry: { $date: 1e12 }, bogus: "x" },
        customMetadata: { owner: "ada", n: 1 },
      }),
      r2("put", "bytes", { $bytes: [1, 2, 255], as: "Uint8Array" }),
      r2("put", "buffer", { $bytes: [104, 105], as: "ArrayBuffer" }),
      r2("put", "view", { $bytes: [104, 105, 106], as: "DataView" }),
      r2("put", "blob", { $blob: "xyz", type: "text/x" }),
      r2("put", "body", { $body: "from a body" }),
      r2("put", "null", null),
      r2("put", "undefined", { $undefined: true }),
      r2("put", "headers", "x", {
        httpMetadata: {
          $headers: [
            ["content-type", "a/b"],
            ["cache-control", "no-cache"],
            ["content-disposition", "inline"],
            ["content-encoding", "gzip"],
            ["content-language", "en"],
            ["expires", "Wed, 21 Oct 2015 07:28:00 GMT"],
            ["x-other", "1"],
          ],
        },
      }),
      r2("put", 5, "number key"),
      r2("head", "text"),
      r2("head", "missing"),
      r2("get", "missing"),
      r2Read("text", "text"),
      r2Read("json", "text"),
      r2Read("arrayBuffer", "bytes"),
      r2Read("bytes", "buffer"),
      r2Read("text", "view"),
      r2Read("blob", "text"),
      r2Read("blob", "blob"),
      r2Read("body", "body"),
      r2Read("text", "null"),
      r2Read("text", "undefined"),
      r2Read("text", "5"),
      r2("head", "headers"),
    ]);
    // What a user would check: the etag is the MD5 of the bytes, quoted in httpEtag.
    expect(outcomes[0]?.value).toMatchObject({ etag: HELLO_MD5, httpEtag: `"${HELLO_MD5}"`, size: 5 });
  });

  it("refuses what workerd and R2 refuse, with the same errors", async () => {
    await sameR2([
      r2("put", "k", { a: 1 }),
      r2("put", "k", 5),
      r2("put", "k"),
      r2("get"),
      r2("put", "k", "x", { httpMetadata: { cacheExpiry: "tomorrow" } }),
      r2("put", "k".repeat(1025), "x"),
      r2("put", "é".repeat(512), "x"),
      r2("put", `${"é".repeat(512)}a`, "x"),
      r2("get", "k".repeat(1025)),
      r2("head", "k".repeat(1025)),
      r2("delete", "k".repeat(1025)),
      r2("put", "m5", "hello", { md5: HELLO_MD5 }),
      r2("put", "m5", "hello", { md5: "00000000000000000000000000000000" }),
      r2("put", "sha", "hello", { sha1: "aaf4c61ddcc5e8a2dabede0f3b482cd9aea9434d" }),
      r2("put", "", "the empty key"),
      r2("head", ""),
    ]);
  });

  it("evaluates onlyIf alike: a failed put answers null, a failed get an object without its body", async () => {
    const date = (ms: number) => ({ $date: ms });
    const future = 4102444800000;
    await sameR2([
      r2("put", "h", "hello"),
      r2("get", "h", { onlyIf: { etagMatches: HELLO_MD5 } }),
      r2("get", "h", { onlyIf: { etagMatches: `"${HELLO_MD5}"` } }),
      r2("get", "h", { onlyIf: { etagMatches: "*" } }),
      r2("get", "h", { onlyIf: { etagMatches: "other" } }),
      r2("get", "h", { onlyIf: { etagDoesNotMatch: "other" } }),
      r2("get", "h", { onlyIf: { etagDoesNotMatch: HELLO_MD5 } }),
      r2("get", "h", { onlyIf: { uploadedBefore: date(0) } }),
      r2("get", "h", { onlyIf: { uploadedBefore: date(future) } }),
      r2("get", "h", { onlyIf: { uploadedAfter: date(0) } }),
      r2("get", "h", { onlyIf: { uploadedAfter: date(future) } }),
      r2("get", "h", { onlyIf: { uploadedAfter: "yesterday" } }),
      // An etag is a string, not coerced: an array of them, a number or null is a TypeError.
      r2("get", "h", { onlyIf: { etagMatches: [HELLO_MD5, "other"] } }),
      r2("get", "h", { onlyIf: { etagDoesNotMatch: 5 } }),
      r2("get", "h", { onlyIf: { etagMatches: null } }),
      r2("put", "h", "hello", { onlyIf: { etagMatches: [HELLO_MD5] } }),
      r2("get", "h", { onlyIf: { $headers: [["if-match", `"${HELLO_MD5}"`]] } }),
      r2("get", "h", { onlyIf: { $headers: [["if-none-match", `"${HELLO_MD5}"`]] } }),
      r2("get", "h", { onlyIf: { $headers: [["if-none-match", `W/"${HELLO_MD5}", "x"`]] } }),
      r2("get", "missing", { onlyIf: { etagMatches: "other" } }),
      r2("put", "h", "changed", { onlyIf: { etagMatches: "other" } }),
      r2Read("text", "h"),
      r2("put", "h", "changed", { onlyIf: { etagMatches: HELLO_MD5 } }),
      r2Read("text", "h"),
      r2("put", "new", "v", { onlyIf: { etagMatches: "other" } }),
      r2("put", "new", "v", { onlyIf: { etagDoesNotMatch: "*" } }),
      r2("put", "new", "w", { onlyIf: { etagDoesNotMatch: "*" } }),
      r2Read("text", "new"),
    ]);
  });

  it("reads ranges alike", async () => {
    await sameR2([
      r2("put", "h", "hello world"),
      r2Read("text", "h", { range: { offset: 1, length: 3 } }),
      r2Read("text", "h", { range: { offset: 6 } }),
      r2Read("text", "h", { range: { length: 4 } }),
      r2Read("text", "h", { range: { offset: 2, length: 100 } }),
      r2Read("text", "h", { range: { suffix: 2 } }),
      r2Read("text", "h", { range: { suffix: 100 } }),
      r2Read("text", "h", { range: { $headers: [["range", "bytes=0-1"]] } }),
      r2Read("text", "h", { range: { $headers: [["range", "bytes=3-"]] } }),
      r2Read("text", "h", { range: { $headers: [["range", "bytes=-3"]] } }),
      r2("get", "h", { range: { offset: 100 } }),
      r2("get", "h", { range: { offset: 0, length: 0 } }),
      r2("get", "h", { range: { offset: -1 } }),
      r2("get", "h", { range: { offset: 1, suffix: 2 } }),
      r2("get", "h", { range: { suffix: 0 } }),
    ]);
  });

  it("lists by prefix, delimiter, limit, cursor and startAfter alike", async () => {
    const list = (options?: unknown) => ({ op: "list", args: options === undefined ? [] : [options] });
    const outcomes = await sameR2([
      r2("put", "a/1.txt", "hello", {
        httpMetadata: { contentType: "text/plain" },
        customMetadata: { n: "1" },
      }),
      r2("put", "a/2.bin", { $bytes: [1, 2, 3], as: "Uint8Array" }),
      r2("put", "b", "b"),
      r2("put", "d/1", "1"),
      r2("put", "d/2", "2"),
      r2("put", "e", "e"),
      list(),
      list({ prefix: "a/" }),
      list({ delimiter: "/" }),
      list({ delimiter: "/", prefix: "d" }),
      list({ limit: 2 }),
      { op: "list", args: [{ limit: 2, $cursorOf: 10 }] },
      list({ delimiter: "/", limit: 2 }),
      { op: "list", args: [{ delimiter: "/", limit: 2, $cursorOf: 12 }] },
      list({ startAfter: "a/2.bin" }),
      list({ include: ["httpMetadata", "customMetadata"], prefix: "a/" }),
      list({ include: ["customMetadata"], prefix: "a/" }),
      list({ include: ["bogus"] }),
      list({ limit: 0 }),
      list({ limit: 1001 }),
      list({ limit: "2" }),
      list({ limit: 1.5 }),
      list({ cursor: "bogus" }),
      list({ prefix: "zzz" }),
    ]);
    // What a user would check: keys in byte order, grouped under their delimited prefix.
    expect(outcomes[8]?.value).toMatchObject({ delimitedPrefixes: ["a/", "d/"], truncated: false });
  });

  it("deletes one key or many alike", async () => {
    await sameR2([
      r2("put", "a", "1"),
      r2("put", "b", "2"),
      r2("put", "c", "3"),
      r2("delete", "a"),
      r2("delete", "a"),
      r2("delete", ["b", "c", "never"]),
      r2("delete", []),
      { op: "list", args: [] },
    ]);
  });

  it("refuses custom metadata over production's 8,192 bytes with its error, where Miniflare's limit is 2,048", async () => {
    // docs/fidelity.md, "R2": "Limits" and "Error codes" give 8,192 bytes (10012); Miniflare
    // checks 2,048. Both count the bytes of every key and value.
    const { sim, mf } = await both("r2", [
      r2("put", "a", "x", { customMetadata: { note: "m".repeat(3000) } }),
      r2("put", "b", "x", { customMetadata: { note: "m".repeat(9000) } }),
    ]);
    const tooLarge = {
      error: "put: Your metadata headers exceed the maximum allowed metadata size. (10012)",
      name: "Error",
    };
    expect(mf).toEqual([tooLarge, tooLarge]);
    expect(sim[0]).toMatchObject({ value: { key: "a" } });
    expect(sim[1]).toEqual(tooLarge);
  });

  it("refuses multipart uploads, which it does not simulate, where Miniflare starts one", async () => {
    const { sim, mf } = await both("r2", [
      r2("createMultipartUpload", "m"),
      r2("resumeMultipartUpload", "m", "upload-1"),
    ]);
    expect(mf[0]).toMatchObject({ value: { key: "m", uploadId: expect.any(String) } });
    expect(sim).toEqual([
      {
        error:
          "the Worker used R2 multipart uploads (createMultipartUpload()), which eutaxy does not simulate yet; the check cannot go on without it",
        name: "SimulationError",
        sync: true,
      },
      {
        error:
          "the Worker used R2 multipart uploads (resumeMultipartUpload()), which eutaxy does not simulate yet; the check cannot go on without it",
        name: "SimulationError",
        sync: true,
      },
    ]);
  });

  it("reads a ReadableStream of unknown length, which workerd refuses", async () => {
    // docs/fidelity.md, "R2": production and Miniflare take only a stream whose length is known
    // (a request's body, a FixedLengthStream); eutaxy cannot tell one from another.
    const { sim, mf } = await both("r2", [r2("put", "s", { $stream: "abc" })]);
    expect(mf[0]).toMatchObject({
      error:
        "Provided readable stream must have a known length (request/response body or readable half of FixedLengthStream)",
    });
    expect(sim[0]).toMatchObject({ value: { key: "s", size: 3 } });
  });
});
