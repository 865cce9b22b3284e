/**
 * Fidelity of Durable Object storage: the same storage calls, without faults, against eutaxy's
 * `ctx.storage` (js/src/sim/durable-object-storage.ts on a real engine) and against the storage
 * of a SQLite-backed Durable Object in Miniflare (workerd, from npm) give the same values,
 * shapes and error messages. As in fidelity.test.ts, one runner (plain JavaScript, below)
 * executes a list of operations against a storage and records every outcome as JSON, inside a
 * Durable Object in Miniflare and in Node against eutaxy's storage; where docs/fidelity.md lists
 * a difference, the test asserts the difference itself.
 */

import { Miniflare } from "miniflare";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createEngine, type Engine } from "../src/engine.ts";
// The Node runtime's globals, as check() installs them (the iterator helpers on Node 20).
import "../src/sim/node-globals.ts";
import { SimDurableObjectStorage } from "../src/sim/durable-object-storage.ts";
import { ObjectStore } from "../src/sim/durable-object-store.ts";
import type { StorageHooks } from "../src/sim/durable-object-tables.ts";

/**
 * The runner, run as it is on both sides. Values JSON cannot carry are tagged objects
 * (`{ $date: ms }`, `{ $map: [[k, v]] }`, `{ $bytes: [..], as: "ArrayBuffer" }`,
 * `{ $undefined: true }`), decoded before a call and encoded after it. A view carries where it
 * sits in its buffer, `within: [byteOffset, buffer's byteLength]` (a Uint8Array given with one is
 * made as a view of part of a larger buffer). An outcome is `{ value }`
 * or `{ error, name, sync? }`, `sync` marking an error thrown by the call itself rather than a
 * rejection of its promise. Operations:
 * - `{ op: "get" | "put" | "delete" | "list" | "deleteAll" | "getAlarm" | "setAlarm" | "deleteAlarm", args }`
 * - `{ op: "transaction", ops, rollback?, throws? }`: `ops` on the transaction, then
 *   `txn.rollback()` or a throw; the value is `{ result, outcomes }`
 * - `{ op: "sql", query, bindings?, read }`: `sql.exec`, then the cursor read as `read` says
 *   (`toArray`, `one`, `raw`, `next`, `tag`, `none`); the value is the rows with the cursor's
 *   `columnNames`, `rowsRead` and `rowsWritten` after the read
 * - `{ op: "transactionSync", ops, throws? }`: sql operations inside `transactionSync`
 * - `{ op: "storage", ops }`: `ops` on `ctx.storage` itself, also inside a transaction; the
 *   value is their outcomes
 * - `{ op: "databaseSize" }`: the type of `sql.databaseSize`
 */
const RUNNER = `
const OPS_MAX = 200;

function decode(value) {
  if (Array.isArray(value)) return value.map(decode);
  if (value === null || typeof value !== "object") return value;
  if (value.$undefined) return undefined;
  if (value.$symbol !== undefined) return Symbol(value.$symbol);
  if (value.$bigint !== undefined) return BigInt(value.$bigint);
  if (value.$number !== undefined) return Number(value.$number);
  if (value.$date !== undefined) return new Date(value.$date);
  if (value.$map !== undefined) return new Map(value.$map.map(([k, v]) => [decode(k), decode(v)]));
  if (value.$bytes !== undefined) {
    const bytes = Uint8Array.from(value.$bytes);
    if (value.as === "ArrayBuffer") return bytes.buffer;
    if (value.within === undefined) return bytes;
    const [offset, length] = value.within;
    const whole = new Uint8Array(length);
    whole.set(bytes, offset);
    return whole.subarray(offset, offset + bytes.length);
  }
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, decode(v)]));
}

function encode(value) {
  if (value === undefined) return { $undefined: true };
  if (typeof value === "bigint") return { $bigint: String(value) };
  if (typeof value === "number" && !Number.isFinite(value)) return { $number: String(value) };
  if (value === null || typeof value !== "object") return value;
  if (value instanceof Date) return { $date: value.getTime() };
  if (value instanceof ArrayBuffer) return { $bytes: Array.from(new Uint8Array(value)), as: "ArrayBuffer" };
  if (ArrayBuffer.isView(value)) {
    const bytes = Array.from(new Uint8Array(value.buffer, value.byteOffset, value.byteLength));
    return { $bytes: bytes, as: value.constructor.name, within: [value.byteOffset, value.buffer.byteLength] };
  }
  if (value instanceof Map) return { $map: [...value].map(([k, v]) => [encode(k), encode(v)]) };
  if (Array.isArray(value)) return value.map(encode);
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, encode(v)]));
}

function failure(error, sync) {
  const out = { error: error instanceof Error ? error.message : String(error), name: error?.constructor?.name ?? typeof error };
  if (sync) out.sync = true;
  return out;
}

async function settle(call) {
  let promise;
  try {
    promise = call();
  } catch (error) {
    return failure(error, true);
  }
  try {
    return { value: encode(await promise) };
  } catch (error) {
    return failure(error, false);
  }
}

function readCursor(cursor, read) {
  let rows;
  if (read === "toArray") rows = cursor.toArray();
  else if (read === "one") rows = cursor.one();
  else if (read === "raw") rows = [...cursor.raw()];
  else if (read === "next") rows = [cursor.next(), cursor.next()];
  // The iterators workerd returns inherit the iterator helpers; raw() shares the cursor's place.
  else if (read === "rawToArray") rows = [cursor.next(), cursor.raw().toArray(), cursor.raw() instanceof Iterator];
  else if (read === "helpers") rows = cursor[Symbol.iterator]().filter((r) => r.id > 1).map((r) => r.name).toArray();
  else if (read === "tag") rows = Object.prototype.toString.call(cursor);
  return { rows, columnNames: cursor.columnNames, rowsRead: cursor.rowsRead, rowsWritten: cursor.rowsWritten };
}

function sqlOp(storage, op) {
  return readCursor(storage.sql.exec(op.query, ...decode(op.bindings ?? [])), op.read ?? "toArray");
}

async function runDo(storage, target, ops) {
  const outcomes = [];
  for (const op of ops.slice(0, OPS_MAX)) {
    if (op.op === "sql") {
      outcomes.push(await settle(() => sqlOp(storage, op)));
    } else if (op.op === "databaseSize") {
      outcomes.push(await settle(() => typeof storage.sql.databaseSize));
    } else if (op.op === "transactionSync") {
      let inner = [];
      outcomes.push(await settle(() => storage.transactionSync(() => {
        for (const sub of op.ops.slice(0, OPS_MAX)) inner.push(sqlOp(storage, sub));
        if (op.throws) throw new Error(op.throws);
        return { result: "done", outcomes: inner };
      })));
    } else if (op.op === "storage") {
      outcomes.push({ value: await runDo(storage, storage, op.ops) });
    } else if (op.op === "transaction") {
      outcomes.push(await settle(() => storage.transaction(async (txn) => {
        const inner = await runDo(storage, txn, op.ops);
        if (op.rollback) txn.rollback();
        if (op.throws) throw new Error(op.throws);
        return { result: "done", outcomes: inner };
      })));
    } else {
      outcomes.push(await settle(() => target[op.op](...decode(op.args ?? []))));
    }
  }
  return outcomes;
}
`;

/**
 * The Worker Miniflare runs: each request is one case, run by the Durable Object named after the
 * case, so every case starts from empty storage. The class has an `alarm()` handler, as
 * `setAlarm` requires; the alarms the cases set are far in the future and never ring.
 */
const WORKER = `
import { DurableObject } from "cloudflare:workers";
${RUNNER}
export class Lab extends DurableObject {
  async fetch(request) {
    const ops = await request.json();
    return Response.json(await runDo(this.ctx.storage, this.ctx.storage, ops));
  }
  alarm() {}
}
export default {
  fetch(request, env) {
    const name = new URL(request.url).pathname;
    return env.LAB.get(env.LAB.idFromName(name)).fetch(request);
  },
};
`;

type Op = Record<string, unknown>;
interface Outcome {
  value?: unknown;
  error?: string;
  name?: string;
  sync?: true;
}

const runner = new Function(`${RUNNER}\nreturn { runDo };`)() as {
  runDo(storage: unknown, target: unknown, ops: readonly Op[]): Promise<Outcome[]>;
};

/** An alarm time far in the future, so that Miniflare never rings it during the test. */
const ALARM_AT = Date.UTC(2100, 0, 1);

let miniflare: Miniflare;
let casesRun = 0;

beforeAll(async () => {
  miniflare = new Miniflare({
    modules: true,
    script: WORKER,
    compatibilityDate: "2026-04-01",
    durableObjects: { LAB: { className: "Lab", useSQLite: true } },
  });
  await miniflare.ready;
}, 120_000);

afterAll(async () => {
  await miniflare?.dispose();
}, 60_000);

/** The outcomes of `ops` in a fresh SQLite-backed Durable Object of Miniflare's. */
async function real(ops: readonly Op[]): Promise<Outcome[]> {
  const response = await miniflare.dispatchFetch(`http://fidelity.test/case-${casesRun++}`, {
    method: "POST",
    body: JSON.stringify(ops),
  });
  const text = await response.text();
  if (response.status !== 200) throw new Error(`Miniflare answered ${response.status}: ${text}`);
  return JSON.parse(text) as Outcome[];
}

/** A run on a fresh engine, as a check's run starts; the object's store opens during it. */
function freshEngine(): Engine {
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
  engine.seal();
  engine.nextRun(0);
  return engine;
}

/** The object's side of alarms: its class has an `alarm()` handler, and none is running. */
const HOOKS: StorageHooks = {
  alarmSet: () => {},
  requireAlarmHandler: () => {},
  runningAlarm: () => undefined,
};

/** The outcomes of `ops` on eutaxy's storage of a fresh SQLite-backed object, as JSON. */
async function simulated(ops: readonly Op[]): Promise<Outcome[]> {
  const engine = freshEngine();
  try {
    // Miniflare's Worker has a compatibility date after 2026-02-24: deleteAll deletes the alarm.
    const store = new ObjectStore(engine, "do:Lab:fidelity");
    const storage = new SimDurableObjectStorage(store, true, HOOKS, true);
    return JSON.parse(JSON.stringify(await runner.runDo(storage, storage, ops))) as Outcome[];
  } finally {
    engine.free();
  }
}

async function both(ops: readonly Op[]): Promise<{ sim: Outcome[]; mf: Outcome[] }> {
  const [mf, sim] = [await real(ops), await simulated(ops)];
  expect(sim).toHaveLength(ops.length);
  expect(mf).toHaveLength(ops.length);
  return { sim, mf };
}

/**
 * Normalizes what depends on how the statement ran rather than on what it did
 * (docs/fidelity.md, "Durable Object storage"): a cursor's `rowsRead` and `rowsWritten` count
 * workerd's scans and index writes, which the engine approximates; compared by type.
 */
function normalizeSql(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(normalizeSql);
  if (value === null || typeof value !== "object") return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    out[k] = k === "rowsRead" || k === "rowsWritten" ? `<${typeof v}>` : normalizeSql(v);
  }
  return out;
}

/** Runs a case and expects the same outcomes on both sides. */
async function same(ops: readonly Op[]): Promise<Outcome[]> {
  const { sim, mf } = await both(ops);
  const m = normalizeSql(mf) as Outcome[];
  expect(normalizeSql(sim)).toEqual(m);
  return m;
}

const call = (op: string, ...args: unknown[]) => ({ op, args });
const sql = (query: string, read = "toArray", bindings?: unknown[]) => ({ op: "sql", query, read, bindings });

describe("Durable Object key-value storage fidelity against Miniflare", () => {
  it("stores and reads back every value type alike", async () => {
    const outcomes = await same([
      call("put", "number", 42),
      call("put", "float", -0.5),
      call("put", "string", "héllo"),
      call("put", "object", { a: [1, { b: null }], c: "d" }),
      call("put", "date", { $date: 1_767_225_600_000 }),
      call("put", "map", {
        $map: [
          ["k", 1],
          [2, { $date: 5 }],
        ],
      }),
      call("put", "buffer", { $bytes: [0, 1, 255], as: "ArrayBuffer" }),
      call("put", "bytes", { $bytes: [7, 8], as: "Uint8Array" }),
      call("put", "null", null),
      call("put", "undefined", { $undefined: true }),
      call("put", "nested", {
        when: { $date: 0 },
        tags: { $map: [["x", { $bytes: [1], as: "ArrayBuffer" }]] },
      }),
      call("get", "number"),
      call("get", "float"),
      call("get", "string"),
      call("get", "object"),
      call("get", "date"),
      call("get", "map"),
      call("get", "buffer"),
      call("get", "bytes"),
      call("get", "null"),
      call("get", "undefined"),
      call("get", "nested"),
      call("get", "missing"),
      call("get", ["string", "missing", "number", "date"]),
      call("get", []),
      call("put", { a: 1, b: "two", c: { $date: 3 } }),
      call("get", ["c", "b", "a"]),
      call("put", "number", 43),
      call("get", "number"),
      call("put", 7, "seven"),
      call("get", "7"),
      call("get", 7),
      // SQLite-backed objects limit key and value together, not the key alone.
      call("put", "k".repeat(2049), "long key"),
      call("get", "k".repeat(2049)),
    ]);
    // What a user would check: a Date and a Map come back as a Date and a Map.
    expect(outcomes[15]).toEqual({ value: { $date: 1_767_225_600_000 } });
    expect(outcomes[16]).toEqual({
      value: {
        $map: [
          ["k", 1],
          [2, { $date: 5 }],
        ],
      },
    });
  });

  it("deletes single and multiple keys alike", async () => {
    await same([
      call("put", { a: 1, b: 2, c: 3 }),
      call("delete", "a"),
      call("delete", "a"),
      call("delete", ["b", "c", "missing"]),
      call("delete", []),
      call("get", ["a", "b", "c"]),
      call("put", { d: 4, e: 5 }),
      call("deleteAll"),
      call("list"),
      call("get", "d"),
      call("put", "f", 6),
      call("list"),
    ]);
  });

  it("refuses options that are not objects, a symbol as a key, and put(entries, value) alike", async () => {
    await same([
      call("get", "k", "x"),
      call("get", ["k"], 5),
      call("put", "k", 1, "x"),
      call("put", { k: 1 }, "x"),
      call("put", { k: 1 }, null),
      call("delete", "k", "x"),
      call("list", "x"),
      call("getAlarm", "x"),
      call("setAlarm", 4102444800000, "x"),
      call("deleteAlarm", "x"),
      call("get", { $symbol: "x" }),
      call("delete", { $symbol: "x" }),
      call("put", { $symbol: "x" }, 1),
      call("get", "k", null),
      call("list"),
    ]);
  });

  it("lists by prefix, start, end, reverse and limit alike, in UTF-8 byte order", async () => {
    const list = (options?: unknown) => (options === undefined ? call("list") : call("list", options));
    const outcomes = await same([
      call("put", { "user:1": 1, "user:10": 10, "user:2": 2, "team:1": "t", a: "a", B: "B", é: "é", z: "z" }),
      list(),
      list({ prefix: "user:" }),
      list({ start: "team:1", end: "user:2" }),
      list({ startAfter: "team:1", end: "user:2" }),
      list({ prefix: "user:", reverse: true }),
      list({ prefix: "user:", reverse: true, limit: 2 }),
      list({ limit: 3 }),
      list({ start: "user:", limit: 1 }),
      list({ prefix: "nobody" }),
      list({ end: "a" }),
      list({ start: "z", end: "a" }),
      list({ limit: 0 }),
      list({ limit: -1 }),
      list({ start: "a", startAfter: "b" }),
      list({}),
    ]);
    // What a user would check: "user:10" sorts before "user:2", and "é" (two UTF-8 bytes, the
    // first 0xC3) after "z".
    expect(outcomes[1]).toEqual({
      value: {
        $map: [
          ["B", "B"],
          ["a", "a"],
          ["team:1", "t"],
          ["user:1", 1],
          ["user:10", 10],
          ["user:2", 2],
          ["z", "z"],
          ["é", "é"],
        ],
      },
    });
  });

  it("commits a transaction's writes and drops them on rollback or a throw", async () => {
    const outcomes = await same([
      call("put", "balance", 10),
      {
        op: "transaction",
        ops: [
          call("get", "balance"),
          call("put", "balance", 5),
          call("get", "balance"),
          call("put", "log", "paid"),
        ],
      },
      call("get", ["balance", "log"]),
      { op: "transaction", ops: [call("put", "balance", 0), call("delete", "log")], rollback: true },
      call("get", ["balance", "log"]),
      { op: "transaction", ops: [call("put", "balance", -1), call("list")], throws: "insufficient funds" },
      call("get", ["balance", "log"]),
      {
        op: "transaction",
        ops: [call("delete", "log"), call("get", "log"), call("list"), call("delete", ["balance", "nope"])],
      },
      call("list"),
    ]);
    // What a user would check: the rolled-back and the thrown transactions changed nothing.
    expect(outcomes[4]).toEqual({
      value: {
        $map: [
          ["balance", 5],
          ["log", "paid"],
        ],
      },
    });
    expect(outcomes[5]).toEqual({ error: "insufficient funds", name: "Error" });
  });

  it("makes every storage call inside a transaction part of it, through txn, ctx.storage or SQL", async () => {
    const table = sql("CREATE TABLE acct (id TEXT PRIMARY KEY, balance INTEGER)", "none");
    const seed = sql("INSERT INTO acct VALUES ('ada', 100)", "none");
    const debit = sql("UPDATE acct SET balance = balance - 30 WHERE id = 'ada'", "none");
    const balance = sql("SELECT balance FROM acct", "toArray");
    const direct = { op: "storage", ops: [call("put", "marker", "debited")] };
    const outcomes = await same([
      table,
      seed,
      { op: "transaction", ops: [debit, direct, call("put", "log", 1)], throws: "fraud check failed" },
      balance,
      call("get", ["marker", "log"]),
      { op: "transaction", ops: [debit, direct, call("put", "log", 2)], rollback: true },
      balance,
      call("get", ["marker", "log"]),
      { op: "transaction", ops: [debit, direct, call("put", "log", 3)] },
      balance,
      call("get", ["marker", "log"]),
    ]);
    // What a user would check: the thrown and the rolled-back transactions left the balance alone.
    expect(outcomes[3]).toMatchObject({ value: { rows: [{ balance: 100 }] } });
    expect(outcomes[4]).toEqual({ value: { $map: [] } });
    expect(outcomes[6]).toMatchObject({ value: { rows: [{ balance: 100 }] } });
    expect(outcomes[9]).toMatchObject({ value: { rows: [{ balance: 70 }] } });
  });

  it("sets, reads and deletes the alarm alike", async () => {
    await same([
      call("getAlarm"),
      call("setAlarm", ALARM_AT),
      call("getAlarm"),
      call("setAlarm", { $date: ALARM_AT + 1000 }),
      call("getAlarm"),
      call("deleteAlarm"),
      call("getAlarm"),
      call("deleteAlarm"),
      call("setAlarm", ALARM_AT),
      call("deleteAll"),
      call("getAlarm"),
      { op: "transaction", ops: [call("setAlarm", ALARM_AT + 2000), call("getAlarm")] },
      call("getAlarm"),
      { op: "transaction", ops: [call("deleteAlarm"), call("getAlarm")], rollback: true },
      call("getAlarm"),
      call("deleteAlarm"),
      call("setAlarm", "soon"),
      call("setAlarm", { $number: "NaN" }),
      call("setAlarm"),
      call("getAlarm"),
    ]);
  });
});

describe("Durable Object storage limits Miniflare does not enforce", () => {
  it("refuses more than 128 keys per call and 2 MB of key and value, as the docs say", async () => {
    // docs/fidelity.md, "Durable Object storage": "Limits" and the Storage API state both limits
    // for SQLite-backed objects; workerd in Miniflare enforces neither.
    const keys = Array.from({ length: 129 }, (_, i) => `k${i}`);
    const ops = [call("get", keys), call("delete", keys), call("put", "big", "x".repeat(2 * 1024 * 1024))];
    const { sim, mf } = await both(ops);
    expect(mf).toEqual([{ value: { $map: [] } }, { value: 0 }, { value: { $undefined: true } }]);
    expect(sim).toEqual([
      { error: "A single call may name at most 128 keys.", name: "RangeError" },
      { error: "A single call may name at most 128 keys.", name: "RangeError" },
      { error: "Values cannot be larger than 2097152 bytes.", name: "RangeError" },
    ]);
  });
});

describe("Durable Object stored views eutaxy keeps as Node serializes them", () => {
  it("gives a view of part of a larger buffer back over its own bytes, where workerd keeps the buffer", async () => {
    // docs/fidelity.md, "Durable Object storage": Node's serialization keeps the bytes a view
    // covers; a structured clone keeps the whole buffer and the view's offset in it.
    const part = { $bytes: [7, 8], as: "Uint8Array", within: [2, 6] };
    const { sim, mf } = await both([call("put", "part", part), call("get", "part")]);
    expect(mf[1]).toEqual({ value: part });
    expect(sim[1]).toEqual({ value: { ...part, within: [0, 2] } });
  });
});

describe("Durable Object SQL storage fidelity against Miniflare", () => {
  const TABLE =
    "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT UNIQUE NOT NULL, age INTEGER, photo BLOB)";

  it("runs exec with bindings and reads cursors alike", async () => {
    const outcomes = await same([
      sql(TABLE, "none"),
      sql("INSERT INTO users (name, age) VALUES (?, ?), (?, ?)", "toArray", ["Ada", 36, "Grace", 45]),
      sql("INSERT INTO users (name, photo) VALUES (?, ?)", "none", [
        "Alan",
        { $bytes: [1, 2], as: "ArrayBuffer" },
      ]),
      sql("INSERT INTO users (name, photo) VALUES (?, ?)", "none", [
        "Barbara",
        { $bytes: [3], as: "Uint8Array" },
      ]),
      sql("SELECT * FROM users ORDER BY id"),
      sql("SELECT id, name FROM users ORDER BY id", "raw"),
      sql("SELECT id, name FROM users ORDER BY id", "next"),
      sql("SELECT id, name FROM users ORDER BY id", "rawToArray"),
      sql("SELECT id, name FROM users ORDER BY id", "helpers"),
      sql("SELECT name FROM users WHERE id = ?", "one", [1]),
      sql("SELECT name FROM users WHERE id = ?", "one", [99]),
      sql("SELECT name FROM users", "one"),
      sql("SELECT * FROM users WHERE id > 99"),
      sql("SELECT count(*) AS n, sum(age) AS s, avg(age) AS a, 1.5 AS r, NULL AS z FROM users", "one"),
      sql("SELECT 1 AS x, 2 AS x", "toArray"),
      sql("SELECT ?1 AS a, ?2 AS b, ? AS c", "one", ["p", 2.5, null]),
      sql("UPDATE users SET age = age + 1 WHERE age IS NOT NULL", "toArray"),
      sql("UPDATE users SET age = 0 WHERE age IS NOT NULL RETURNING name, age", "toArray"),
      sql("CREATE TABLE t (a); INSERT INTO t VALUES (1), (2); SELECT a FROM t ORDER BY a DESC", "toArray"),
      sql("INSERT INTO t VALUES (3); SELECT count(*) AS n FROM t WHERE a > ?", "one", [1]),
      sql("SELECT 9007199254740991 AS big, -0.0 AS neg, X'00FF' AS b, 'x' || ? AS s", "one", ["7"]),
      sql("SELECT ? AS half, typeof(?1) AS t", "one", [2.5]),
      { op: "databaseSize" },
    ]);
    expect(outcomes[7]?.value).toMatchObject({
      rows: [
        { done: false, value: { id: 1, name: "Ada" } },
        [
          [2, "Grace"],
          [3, "Alan"],
          [4, "Barbara"],
        ],
        true,
      ],
    });
    expect(outcomes[8]?.value).toMatchObject({ rows: ["Grace", "Alan", "Barbara"] });
    // What a user would check: BLOBs come back as ArrayBuffers, integers as numbers.
    expect(outcomes[4]?.value).toMatchObject({
      rows: [
        { id: 1, name: "Ada", age: 36, photo: null },
        { id: 2, name: "Grace", age: 45, photo: null },
        { id: 3, name: "Alan", age: null, photo: { $bytes: [1, 2], as: "ArrayBuffer" } },
        { id: 4, name: "Barbara", age: null, photo: { $bytes: [3], as: "ArrayBuffer" } },
      ],
      columnNames: ["id", "name", "age", "photo"],
    });
  });

  it("counts rows read and written as the engine approximates them, where workerd counts its own", async () => {
    // docs/fidelity.md, "Durable Object storage": workerd counts the rows SQLite scanned and the
    // schema rows and index entries it wrote; the engine counts rows returned and changed.
    const ops = [
      sql("CREATE TABLE n (v)", "none"),
      sql("INSERT INTO n VALUES (1), (2), (3)", "none"),
      sql("SELECT v FROM n", "toArray"),
      sql("DELETE FROM n WHERE v > 1", "none"),
    ];
    const { sim, mf } = await both(ops);
    const counts = (outcomes: Outcome[]) =>
      outcomes.map((o) => {
        const { rowsRead, rowsWritten } = o.value as { rowsRead: number; rowsWritten: number };
        return [rowsRead, rowsWritten];
      });
    expect(counts(mf)).toEqual([
      [1, 2],
      [0, 3],
      [3, 0],
      [3, 2],
    ]);
    expect(counts(sim)).toEqual([
      [0, 0],
      [3, 3],
      [3, 0],
      [2, 2],
    ]);
  });

  it("reports SQL errors with the same messages", async () => {
    const outcomes = await same([
      sql(TABLE, "none"),
      sql("INSERT INTO users (name) VALUES ('Ada')", "none"),
      sql("SELEC 1"),
      sql("SELECT * FROM nope"),
      sql("SELECT nope FROM users"),
      sql("INSERT INTO users (name) VALUES (?)", "none", ["Ada"]),
      sql("INSERT INTO users (name) VALUES (NULL)", "none"),
      sql("INSERT INTO users (id, name) VALUES (1, 'Grace')", "none"),
      sql("SELECT ? AS x, ? AS y", "one", [1]),
      sql("SELECT ? AS x", "one", [1, 2]),
      sql("CREATE TABLE users (id)", "none"),
      sql("BEGIN TRANSACTION", "none"),
      sql("SAVEPOINT s", "none"),
      sql("SELECT 1; COMMIT", "none"),
      sql("INSERT INTO users (name) VALUES ('Grace'); SELEC 2", "none"),
      sql("SELECT name FROM users ORDER BY id"),
      sql(""),
      sql("  ; -- nothing\n"),
    ]);
    // What a user would check: a constraint violation names the constraint and the column.
    expect(outcomes[5]).toMatchObject({
      error: "UNIQUE constraint failed: users.name: SQLITE_CONSTRAINT (extended: SQLITE_CONSTRAINT_UNIQUE)",
    });
    expect(outcomes[5]).toMatchObject({ name: "Error", sync: true });
  });

  it("runs several statements in one exec as workerd does, an empty one after the last refused", async () => {
    const ops = [
      sql("CREATE TABLE m (v)", "none"),
      // Only the last statement may take bindings, and a statement that would take them is not
      // run; one with none given is refused all the same.
      sql("INSERT INTO m VALUES (?); SELECT 1 AS x", "toArray", [1]),
      sql("SELECT ? AS a; SELECT 2 AS b", "toArray"),
      // Text after the last `;` that holds no statement (a comment, another `;`) is refused,
      // after the statements before it ran: three rows are in.
      sql("INSERT INTO m VALUES (1); -- done", "none"),
      sql("INSERT INTO m VALUES (2);;", "none"),
      sql("INSERT INTO m VALUES (3); /* c */", "none"),
      sql("SELECT ? AS a; -- c", "one", [1]),
      sql("SELECT 1 AS a; -- c", "one", [1, 2]),
      sql("SELECT count(*) AS n FROM m -- a comment with no ; before it", "one"),
      sql("SELECT 1 AS a;\n\t ", "one"),
      sql("-- first\n; SELECT 2 AS b", "one"),
      // The cursor's counts are the last statement's.
      sql("INSERT INTO m VALUES (4); INSERT INTO m VALUES (5), (6)", "toArray"),
      sql("INSERT INTO m VALUES (7), (8), (9); SELECT 1 AS x", "toArray"),
      sql("SELECT v FROM m WHERE v = 1", "next"),
      sql("SELECT v FROM m WHERE v = 0", "tag"),
      call("transactionSync", 5),
    ];
    const { sim, mf } = await both(ops);
    expect(normalizeSql(sim)).toEqual(normalizeSql(mf));
    const written = (outcomes: Outcome[]) =>
      [11, 12].map((i) => (outcomes[i]?.value as { rowsWritten?: number } | undefined)?.rowsWritten);
    expect(written(mf)).toEqual([2, 0]);
    expect(written(sim)).toEqual([2, 0]);
    expect(mf[1]).toMatchObject({
      error:
        "When executing multiple SQL statements in a single call, only the last statement can have parameters.",
    });
    expect(mf[3]).toMatchObject({ error: "SQL code did not contain a statement." });
    expect(mf[8]?.value).toMatchObject({ rows: { n: 3 } });
    expect(mf[13]?.value).toMatchObject({
      rows: [{ done: false }, { done: true, value: { $undefined: true } }],
    });
    expect(mf[14]?.value).toMatchObject({ rows: "[object Cursor]" });
  });

  it("enforces foreign keys and refuses what workerd's authorizer refuses, alike", async () => {
    const outcomes = await same([
      sql("CREATE TABLE p (id INTEGER PRIMARY KEY)", "none"),
      sql("CREATE TABLE c (id INTEGER PRIMARY KEY, pid INTEGER REFERENCES p(id) ON DELETE CASCADE)", "none"),
      sql("PRAGMA foreign_keys"),
      sql("INSERT INTO c VALUES (1, 99)", "none"),
      sql("INSERT INTO p VALUES (1); INSERT INTO c VALUES (2, 1); DELETE FROM p", "none"),
      sql("SELECT count(*) AS n FROM c", "one"),
      sql("PRAGMA foreign_keys = off", "none"),
      sql("PRAGMA foreign_keys"),
      sql("PRAGMA journal_mode"),
      sql("PRAGMA table_info(p)"),
      sql("CREATE TEMP TABLE t (a)", "none"),
      sql("ATTACH DATABASE ':memory:' AS x", "none"),
      sql("VACUUM", "none"),
    ]);
    // What a user would check: the orphan is refused and the parent's rows went with it.
    expect(outcomes[3]).toMatchObject({ error: expect.stringMatching(/^FOREIGN KEY constraint failed/) });
    expect(outcomes[5]?.value).toMatchObject({ rows: { n: 0 } });
  });

  it("SQL error details as workerd words them: the offset of a syntax error, a constraint's extended code", async () => {
    // docs/fidelity.md, "Durable Object storage". workerd adds both to SQLite's message.
    const ops = [
      sql("SELEC 1"),
      sql("CREATE TABLE t (id INTEGER PRIMARY KEY); INSERT INTO t VALUES (1), (1)"),
      sql("SELECT 1; SELECT nope FROM t"),
      sql("SELECT 1;  SELEC 2"),
      sql("SELECT 1;\nSELECT * FROM t WHERE"),
    ];
    const { sim, mf } = await both(ops);
    expect([mf[0]?.error, mf[1]?.error]).toEqual([
      'near "SELEC": syntax error at offset 0: SQLITE_ERROR',
      "UNIQUE constraint failed: t.id: SQLITE_CONSTRAINT (extended: SQLITE_CONSTRAINT_PRIMARYKEY)",
    ]);
    expect(sim.map((outcome) => outcome.error)).toEqual(mf.map((outcome) => outcome.error));
  });

  it("converts bindings as workerd does", async () => {
    await same([
      sql("SELECT ? AS v, typeof(?1) AS t", "one", [true]),
      sql("SELECT ? AS v, typeof(?1) AS t", "one", [{ a: 1 }]),
      sql("SELECT ? AS v, typeof(?1) AS t", "one", [{ $undefined: true }]),
      sql("SELECT ? AS v, typeof(?1) AS t", "one", [[1, 2]]),
      sql("SELECT ? AS v, typeof(?1) AS t", "one", [{ $bigint: "10" }]),
      sql("SELECT ? AS v, typeof(?1) AS t", "one", ["42"]),
      sql("SELECT ? AS v, typeof(?1) AS t", "one", [{ $bytes: [], as: "Uint8Array" }]),
    ]);
  });

  it("binds integral numbers as INTEGER, where workerd binds every number as a REAL", async () => {
    // docs/fidelity.md, "Durable Object storage": the engine binds a JavaScript number with an
    // integral value as an INTEGER (as D1's docs want); workerd's SQL API binds a double.
    const ops = [sql("SELECT typeof(?) AS t, 'x' || ?1 AS s, ?1 / 2 AS half", "one", [7])];
    const { sim, mf } = await both(ops);
    expect(mf[0]?.value).toMatchObject({ rows: { t: "real", s: "x7.0", half: 3.5 } });
    expect(sim[0]?.value).toMatchObject({ rows: { t: "integer", s: "x7", half: 3 } });
  });

  it("refuses Cloudflare's own tables with SQLite's authorizer error, worded differently", async () => {
    // docs/fidelity.md, "Durable Object storage": workerd's authorizer denies reading `_cf_`
    // tables column by column, so SQLite names the column; eutaxy refuses the statement.
    const { sim, mf } = await both([call("put", "k", 1), sql("SELECT * FROM _cf_KV")]);
    expect(mf[1]).toEqual({
      error: "access to _cf_KV.key is prohibited: SQLITE_AUTH",
      name: "Error",
      sync: true,
    });
    expect(sim[1]).toEqual({ error: "not authorized: SQLITE_AUTH", name: "Error", sync: true });
  });

  it("runs transactionSync as one savepoint, rolled back when its closure throws", async () => {
    const outcomes = await same([
      sql("CREATE TABLE acct (id TEXT PRIMARY KEY, balance INTEGER)", "none"),
      {
        op: "transactionSync",
        ops: [
          sql("INSERT INTO acct VALUES ('a', 10), ('b', 0)", "none"),
          sql("SELECT count(*) AS n FROM acct", "one"),
        ],
      },
      {
        op: "transactionSync",
        ops: [
          sql("UPDATE acct SET balance = balance - 5 WHERE id = 'a'", "none"),
          sql("CREATE TABLE extra (x)", "none"),
        ],
        throws: "abort",
      },
      sql("SELECT id, balance FROM acct ORDER BY id"),
      sql("SELECT name FROM sqlite_master WHERE name = 'extra'"),
      { op: "transactionSync", ops: [sql("INSERT INTO acct VALUES ('a', 1)", "none")] },
      sql("SELECT count(*) AS n FROM acct", "one"),
    ]);
    expect(outcomes[3]?.value).toMatchObject({
      rows: [
        { id: "a", balance: 10 },
        { id: "b", balance: 0 },
      ],
    });
  });

  it("creates the key-value table at the first write, not at a read", async () => {
    const tables = sql("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name");
    const outcomes = await same([
      call("get", "k"),
      call("get", ["a", "b"]),
      call("list", { prefix: "a" }),
      call("getAlarm"),
      call("deleteAlarm"),
      call("delete", []),
      tables,
      call("put", "k", 1),
      tables,
    ]);
    expect(outcomes[6]?.value).toMatchObject({ rows: [] });
    expect(outcomes[8]?.value).toMatchObject({ rows: [{ name: "_cf_KV" }] });
  });

  it("lists only the tables the object's calls made, after rollbacks too", async () => {
    // eutaxy opens every object's store with the key-value and alarm tables already there, so
    // that all runs begin alike; what lists tables must not see the ones the calls did not make.
    const tables = sql("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name");
    const listed = sql(
      "SELECT name FROM pragma_table_list WHERE schema = 'main' AND name NOT LIKE 'sqlite%' ORDER BY name",
    );
    const outcomes = await same([
      { op: "transaction", ops: [call("put", "k", 1)], throws: "undone" },
      tables,
      listed,
      sql("CREATE TABLE t (a)", "none"),
      { op: "transactionSync", ops: [sql("INSERT INTO t VALUES (1)", "none")], throws: "undone" },
      tables,
      call("put", "k", 2),
      tables,
      listed,
      call("setAlarm", ALARM_AT),
      // The alarm's own table is named otherwise (docs/fidelity.md, "Durable Object storage").
      sql("SELECT name FROM sqlite_master WHERE name NOT IN ('_cf_ALARM', '_cf_METADATA') ORDER BY name"),
      { op: "databaseSize" },
    ]);
    expect(outcomes[1]?.value).toMatchObject({ rows: [] });
    expect(outcomes[7]?.value).toMatchObject({ rows: [{ name: "_cf_KV" }, { name: "t" }] });
  });

  it("shares one database between the key-value API and SQL, and deleteAll empties both", async () => {
    await same([
      call("put", "k", 1),
      sql("CREATE TABLE t (a)", "none"),
      sql("INSERT INTO t VALUES (1)", "none"),
      call("deleteAll"),
      sql("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '\\_cf\\_%' ESCAPE '\\'"),
      call("list"),
      sql("SELECT * FROM t"),
      sql("CREATE TABLE t (b)", "none"),
      { op: "databaseSize" },
    ]);
  });
});
