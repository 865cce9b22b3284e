import { describe, expect, it } from "vitest";
import type { D1RawResult, D1StatementSpec } from "../engine.ts";
import { SimulationError } from "../errors.ts";
import { createD1Database, type D1Engine } from "./d1.ts";
import type { EffectOptions, EffectScope } from "./effect-scope.ts";

/** A D1RawResult with the given columns and rows and zero counters, as a SELECT answers. */
function raw(columns: string[], rows: unknown[][], extra: Partial<D1RawResult> = {}): D1RawResult {
  return {
    columns,
    rows,
    changes: 0,
    lastRowId: 0,
    rowsRead: rows.length,
    rowsWritten: 0,
    sizeAfter: 8192,
    changedDb: false,
    ...extra,
  };
}

const EMPTY = raw([], []);

interface Call {
  readonly method: "d1Run" | "d1Batch" | "d1Exec";
  readonly db: string;
  readonly sql?: string;
  readonly params?: readonly unknown[];
  readonly statements?: readonly D1StatementSpec[];
}

/** A fake engine: answers from `answers` in order (an Error is thrown), records every call. */
function fakeEngine(...answers: (D1RawResult | D1RawResult[] | Error)[]) {
  const calls: Call[] = [];
  const next = (): unknown => {
    const answer = answers.shift();
    if (answer instanceof Error) throw answer;
    return answer ?? EMPTY;
  };
  const engine: D1Engine = {
    d1Run(db, sql, params) {
      calls.push({ method: "d1Run", db, sql, params });
      return next() as D1RawResult;
    },
    d1Batch(db, statements) {
      calls.push({ method: "d1Batch", db, statements });
      return next() as D1RawResult[];
    },
    d1Exec(db, sql) {
      calls.push({ method: "d1Exec", db, sql });
      next();
      return { count: 1 };
    },
    d1Footprint: () => [],
  };
  return { engine, calls };
}

/**
 * A fake scope: every effect runs at once; `labels` lists them and `transients` whether each
 * offered a transient fault. `perform: false` never runs them; `transient: true` runs each
 * effect's transient alternative instead of its `perform`, as the engine's transient decision does.
 */
function fakeScope(options: { perform?: boolean; transient?: boolean } = {}) {
  const labels: string[] = [];
  const transients: boolean[] = [];
  const scope: EffectScope = {
    invocation: "req-1#1",
    effect<T>(
      label: string,
      perform: (effect: number) => T | Promise<T>,
      effectOptions: EffectOptions = {},
    ): Promise<T> {
      const index = labels.push(label) - 1;
      transients.push(effectOptions.transient !== undefined);
      if (options.perform === false) return new Promise<T>(() => {});
      const run = options.transient ? (effectOptions.transient as (effect: number) => T) : perform;
      return new Promise<T>((resolve) => resolve(run(index)));
    },
  };
  return { scope, labels, transients };
}

function setup(...answers: (D1RawResult | D1RawResult[] | Error)[]) {
  const { engine, calls } = fakeEngine(...answers);
  const { scope, labels } = fakeScope();
  const db = createD1Database("payments/DB", scope, engine);
  return { db, calls, labels };
}

/** The error `promise` rejects with; fails the test when it resolves. */
async function rejection(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(Error);
    return error as Error;
  }
  throw new Error("expected a rejection");
}

/** The error `run` throws synchronously; fails the test when it does not throw. */
function thrown(run: () => unknown): Error {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(Error);
    return error as Error;
  }
  throw new Error("expected a throw");
}

const USERS = raw(
  ["id", "name"],
  [
    [1, "Ada"],
    [2, "Grace"],
  ],
);

describe("first", () => {
  it("answers the first row as an object, keys in column order", async () => {
    const { db, calls, labels } = setup(USERS);
    const row = await db.prepare("SELECT id, name FROM users").first();
    expect(row).toEqual({ id: 1, name: "Ada" });
    expect(Object.keys(row as object)).toEqual(["id", "name"]);
    expect(labels).toEqual(["D1:payments/DB first"]);
    expect(calls).toEqual([
      { method: "d1Run", db: "payments/DB", sql: "SELECT id, name FROM users", params: [] },
    ]);
  });

  it("answers null when there are no rows", async () => {
    const { db } = setup(raw(["id"], []));
    expect(await db.prepare("SELECT id FROM users").first()).toBeNull();
  });

  it("answers one column's value with first(column)", async () => {
    const { db } = setup(USERS);
    expect(await db.prepare("SELECT id, name FROM users").first("name")).toBe("Ada");
  });

  it("answers null with first(column) when there are no rows, even for an unknown column", async () => {
    const { db } = setup(raw(["id"], []));
    expect(await db.prepare("SELECT id FROM users").first("nope")).toBeNull();
  });

  it("answers a NULL column's value as null rather than as not found", async () => {
    const { db } = setup(raw(["id", "email"], [[1, null]]));
    expect(await db.prepare("SELECT id, email FROM users").first("email")).toBeNull();
  });

  it("rejects with D1_COLUMN_NOTFOUND when the rows lack the column", async () => {
    const { db, labels } = setup(USERS);
    const error = await rejection(db.prepare("SELECT id, name FROM users").first("email"));
    expect(error.message).toBe("D1_COLUMN_NOTFOUND: Column not found (email)");
    expect((error.cause as Error).message).toBe("Column not found");
    expect(labels).toHaveLength(1);
  });
});

describe("all and run", () => {
  const written = raw([], [], {
    changes: 1,
    lastRowId: 7,
    rowsRead: 0,
    rowsWritten: 1,
    sizeAfter: 12288,
    changedDb: true,
  });

  it("all answers { success, meta, results } with rows as objects", async () => {
    const { db, labels } = setup(USERS);
    const result = await db.prepare("SELECT id, name FROM users").all();
    expect(Object.keys(result)).toEqual(["success", "meta", "results"]);
    expect(result.success).toBe(true);
    expect(result.results).toEqual([
      { id: 1, name: "Ada" },
      { id: 2, name: "Grace" },
    ]);
    expect(labels).toEqual(["D1:payments/DB all"]);
  });

  it("meta carries the documented fields, deterministic and from the engine's counters", async () => {
    const { db } = setup(written);
    const { meta } = await db.prepare("INSERT INTO users (name) VALUES (?)").bind("Ada").run();
    expect(meta).toEqual({
      served_by: "eutaxy",
      served_by_primary: true,
      timings: { sql_duration_ms: 0 },
      duration: 0,
      changes: 1,
      last_row_id: 7,
      changed_db: true,
      size_after: 12288,
      rows_read: 0,
      rows_written: 1,
    });
  });

  it("run answers the same shape as all, results included", async () => {
    const { db, labels } = setup(USERS, written);
    const selected = await db.prepare("SELECT id, name FROM users").run();
    expect(selected.results).toEqual([
      { id: 1, name: "Ada" },
      { id: 2, name: "Grace" },
    ]);
    const inserted = await db.prepare("INSERT INTO users (name) VALUES ('x')").run();
    expect(inserted).toEqual({ success: true, meta: expect.any(Object), results: [] });
    expect(labels).toEqual(["D1:payments/DB run", "D1:payments/DB run"]);
  });

  it("a column name that appears twice keeps the later value, at the first one's place", async () => {
    const { db } = setup(raw(["a", "c", "c", "d"], [[1, 3, "C", "D"]]));
    const { results } = await db.prepare("SELECT * FROM abc, cde").all();
    expect(results).toEqual([{ a: 1, c: "C", d: "D" }]);
    expect(Object.keys(results[0] as object)).toEqual(["a", "c", "d"]);
  });

  it("answers BLOBs as arrays of numbers", async () => {
    const { db } = setup(raw(["id", "data"], [[1, new Uint8Array([0, 7, 255])]]));
    const { results } = await db.prepare("SELECT id, data FROM files").all();
    expect(results).toEqual([{ id: 1, data: [0, 7, 255] }]);
    expect(Array.isArray((results[0] as { data: unknown }).data)).toBe(true);
  });
});

describe("raw", () => {
  it("answers rows as arrays", async () => {
    const { db, labels } = setup(USERS);
    expect(await db.prepare("SELECT id, name FROM users").raw()).toEqual([
      [1, "Ada"],
      [2, "Grace"],
    ]);
    expect(labels).toEqual(["D1:payments/DB raw"]);
  });

  it("puts the column names first with { columnNames: true }", async () => {
    const { db } = setup(USERS);
    expect(await db.prepare("SELECT id, name FROM users").raw({ columnNames: true })).toEqual([
      ["id", "name"],
      [1, "Ada"],
      [2, "Grace"],
    ]);
  });

  it("leaves the names out with { columnNames: false }", async () => {
    const { db } = setup(USERS);
    expect(await db.prepare("SELECT id, name FROM users").raw({ columnNames: false })).toEqual([
      [1, "Ada"],
      [2, "Grace"],
    ]);
  });

  it("answers just the names with { columnNames: true } and no rows", async () => {
    const { db } = setup(raw(["id", "name"], []));
    expect(await db.prepare("SELECT id, name FROM users").raw({ columnNames: true })).toEqual([
      ["id", "name"],
    ]);
  });

  it("keeps duplicate columns and answers BLOBs as arrays of numbers", async () => {
    const { db } = setup(raw(["c", "c", "b"], [[3, "C", new Uint8Array([1, 2])]]));
    expect(await db.prepare("SELECT * FROM t").raw({ columnNames: true })).toEqual([
      ["c", "c", "b"],
      [3, "C", [1, 2]],
    ]);
  });
});

describe("bind", () => {
  it("returns a new statement and leaves the prepared one as it was", async () => {
    const { db, calls } = setup(EMPTY, EMPTY, EMPTY);
    const prepared = db.prepare("SELECT * FROM users WHERE id = ?");
    const one = prepared.bind(1);
    const two = one.bind(2);
    expect(one).not.toBe(prepared);
    await prepared.all();
    await one.all();
    await two.all();
    expect(calls.map((call) => call.params)).toEqual([[], [1], [2]]);
  });

  it("makes no effect: only running a statement does", () => {
    const { db, labels } = setup();
    db.prepare("SELECT ?").bind(1);
    expect(labels).toEqual([]);
  });

  it("passes strings, numbers and null as they are and booleans as 1 and 0", async () => {
    const { db, calls } = setup();
    await db.prepare("SELECT ?, ?, ?, ?, ?").bind("x", 1.5, null, true, false).run();
    expect(calls[0]?.params).toEqual(["x", 1.5, null, 1, 0]);
  });

  it("turns NaN and infinities into null and -0 into 0, as D1's JSON request does", async () => {
    const { db, calls } = setup();
    await db.prepare("SELECT ?, ?, ?").bind(Number.NaN, Number.POSITIVE_INFINITY, -0).run();
    expect(calls[0]?.params).toEqual([null, null, 0]);
    expect(Object.is(calls[0]?.params?.[2], 0)).toBe(true);
  });

  it("turns ArrayBuffers, views and byte arrays into Uint8Array BLOBs, copied at bind", async () => {
    const { db, calls } = setup();
    const buffer = new Uint8Array([1, 2, 3]).buffer;
    const view = new Uint8Array([4, 5]);
    const statement = db
      .prepare("SELECT ?, ?, ?, ?")
      .bind(buffer, view, [6, 7], new DataView(new ArrayBuffer(4)));
    new Uint8Array(buffer)[0] = 99;
    view[0] = 99;
    await statement.run();
    const params = calls[0]?.params ?? [];
    for (const param of params) expect(param).toBeInstanceOf(Uint8Array);
    expect(params.map((param) => Array.from(param as Uint8Array))).toEqual([[1, 2, 3], [4, 5], [6, 7], []]);
  });

  it.each([
    ["undefined", undefined, "D1_TYPE_ERROR: Type 'undefined' not supported for value 'undefined'"],
    ["a plain object", { a: 1 }, "D1_TYPE_ERROR: Type 'object' not supported for value '[object Object]'"],
    [
      "a function",
      function f() {},
      "D1_TYPE_ERROR: Type 'function' not supported for value 'function f() {}'",
    ],
    ["a bigint", 10n, "D1_TYPE_ERROR: Type 'bigint' not supported for value '10'"],
    ["an array of non-bytes", [1, 256], "D1_TYPE_ERROR: Type 'object' not supported for value '1,256'"],
    [
      "a Uint16Array of non-bytes",
      new Uint16Array([300]),
      "D1_TYPE_ERROR: Type 'object' not supported for value '300'",
    ],
  ])("throws synchronously from bind for %s", (_name, value, message) => {
    const { db, labels } = setup();
    const statement = db.prepare("SELECT ?");
    const error = thrown(() => statement.bind("ok", value));
    expect(error.message).toBe(message);
    expect((error.cause as Error).message).toBe(message.slice("D1_TYPE_ERROR: ".length));
    expect(labels).toEqual([]);
  });

  it("throws the TypeError interpolating a symbol throws, as workerd's bind does", () => {
    const { db } = setup();
    const error = thrown(() => db.prepare("SELECT ?").bind(Symbol("s")));
    expect(error).toBeInstanceOf(TypeError);
  });
});

describe("errors", () => {
  it("rejects with D1_ERROR and the engine's message, the engine's error as the cause", async () => {
    const engineError = new Error("no such table: foo: SQLITE_ERROR");
    const { db, labels } = setup(engineError);
    const error = await rejection(db.prepare("SELECT * FROM foo").all());
    expect(error.message).toBe("D1_ERROR: no such table: foo: SQLITE_ERROR");
    expect(error.cause).toBe(engineError);
    expect((error.cause as Error).message).toBe("no such table: foo: SQLITE_ERROR");
    expect(labels).toEqual(["D1:payments/DB all"]);
  });

  it("wraps a non-Error the engine throws too", async () => {
    const { engine } = fakeEngine();
    engine.d1Run = () => {
      throw "disk I/O error";
    };
    const db = createD1Database("DB", fakeScope().scope, engine);
    const error = await rejection(db.prepare("SELECT 1").first());
    expect(error.message).toBe("D1_ERROR: disk I/O error");
    expect((error.cause as Error).message).toBe("disk I/O error");
  });

  it.each(["first", "all", "run", "raw"] as const)(
    "%s rejects an empty query after one effect",
    async (method) => {
      const { db, calls, labels } = setup();
      const statement = db.prepare("  \n ");
      const run = { first: () => statement.first(), all: () => statement.all(), run: () => statement.run() };
      const error = await rejection(method === "raw" ? statement.raw() : run[method]());
      expect(error.message).toBe("D1_ERROR: No SQL statements detected.");
      expect(calls).toEqual([]);
      expect(labels).toEqual([`D1:payments/DB ${method}`]);
    },
  );
});

describe("batch", () => {
  it("runs every statement in one effect and one engine call, answering a D1Result each", async () => {
    const { db, calls, labels } = setup([
      USERS,
      raw([], [], { changes: 1, changedDb: true, rowsWritten: 1 }),
    ]);
    const results = await db.batch([
      db.prepare("SELECT id, name FROM users WHERE id > ?").bind(0),
      db.prepare("UPDATE users SET name = ? WHERE id = ?").bind("Ada L.", 1),
    ]);
    expect(labels).toEqual(["D1:payments/DB batch"]);
    expect(calls).toEqual([
      {
        method: "d1Batch",
        db: "payments/DB",
        statements: [
          { sql: "SELECT id, name FROM users WHERE id > ?", params: [0] },
          { sql: "UPDATE users SET name = ? WHERE id = ?", params: ["Ada L.", 1] },
        ],
      },
    ]);
    expect(results).toHaveLength(2);
    expect(results[0]).toEqual({
      success: true,
      meta: expect.objectContaining({ served_by: "eutaxy", rows_read: 2 }),
      results: [
        { id: 1, name: "Ada" },
        { id: 2, name: "Grace" },
      ],
    });
    expect(results[1]).toEqual({
      success: true,
      meta: expect.objectContaining({ changes: 1, changed_db: true, rows_written: 1 }),
      results: [],
    });
  });

  it("rejects an empty batch as D1 does, after one effect", async () => {
    const { db, calls, labels } = setup();
    const error = await rejection(db.batch([]));
    expect(error.message).toBe("D1_ERROR: No SQL statements detected.");
    expect(calls).toEqual([]);
    expect(labels).toEqual(["D1:payments/DB batch"]);
  });

  it("rejects with D1_ERROR when the engine rejects the transaction", async () => {
    const { db, labels } = setup(new Error("UNIQUE constraint failed: users.email: SQLITE_CONSTRAINT"));
    const error = await rejection(db.batch([db.prepare("INSERT INTO users (email) VALUES ('a')")]));
    expect(error.message).toBe("D1_ERROR: UNIQUE constraint failed: users.email: SQLITE_CONSTRAINT");
    expect(labels).toEqual(["D1:payments/DB batch"]);
  });

  it("rejects something that is not a statement without an effect", async () => {
    const { db, labels } = setup();
    const error = await rejection(db.batch([{} as never]));
    expect(error).toBeInstanceOf(TypeError);
    expect(labels).toEqual([]);
  });

  it("takes statements prepared on another D1 binding and runs them on this one", async () => {
    const other = setup().db;
    const { db, calls } = setup([EMPTY]);
    await db.batch([other.prepare("DELETE FROM t")]);
    expect(calls[0]?.db).toBe("payments/DB");
  });
});

describe("exec", () => {
  it("runs each line as a query in one effect, answering { count, duration }", async () => {
    const { db, calls, labels } = setup();
    const result = await db.exec("\n  CREATE TABLE a (x);\nCREATE TABLE b (y);\n");
    expect(result).toEqual({ count: 2, duration: 0 });
    expect(calls.map((call) => call.sql)).toEqual(["CREATE TABLE a (x);", "CREATE TABLE b (y);"]);
    expect(labels).toEqual(["D1:payments/DB exec"]);
  });

  it("stops at the failing line and reports it as D1 does: D1_EXEC_ERROR, line 1, the first line", async () => {
    const { db, calls } = setup(EMPTY, new Error('near "INSERTZ": syntax error: SQLITE_ERROR'));
    const error = await rejection(
      db.exec("CREATE TABLE a (x);\nINSERTZ INTO a VALUES (1);\nCREATE TABLE b (y);"),
    );
    expect(error.message).toBe(
      'D1_EXEC_ERROR: Error in line 1: CREATE TABLE a (x);: near "INSERTZ": syntax error: SQLITE_ERROR',
    );
    expect((error.cause as Error).message).toBe(error.message.slice("D1_EXEC_ERROR: ".length));
    expect(calls).toHaveLength(2);
  });
});

describe("withSession", () => {
  it("prepares and batches through the same effects, and has no bookmark before a query", async () => {
    const { db, labels } = setup(USERS, [EMPTY]);
    const session = db.withSession("first-primary");
    expect(session.getBookmark()).toBeNull();
    expect(await session.prepare("SELECT id, name FROM users").first("id")).toBe(1);
    await session.batch([session.prepare("DELETE FROM users")]);
    expect(labels).toEqual(["D1:payments/DB first", "D1:payments/DB batch"]);
  });

  it("answers a deterministic bookmark after each query, later ones sorting after", async () => {
    const { db } = setup();
    const session = db.withSession();
    await session.prepare("SELECT 1").run();
    const first = session.getBookmark();
    await session.prepare("SELECT 2").run();
    const second = session.getBookmark();
    expect(first).toBe("00000001-00000000-00000000-eutaxy");
    expect(second).toBe("00000002-00000000-00000000-eutaxy");
    expect((first as string).localeCompare(second as string)).toBeLessThan(0);
    const again = setup().db.withSession("first-unconstrained");
    await again.prepare("SELECT 1").run();
    expect(again.getBookmark()).toBe(first);
  });

  it("starts from a given bookmark and keeps it while it is the newer one", async () => {
    const { db } = setup();
    const given = "ffffffff-00000000-00000000-eutaxy";
    const session = db.withSession(` ${given} `);
    expect(session.getBookmark()).toBe(given);
    await session.prepare("SELECT 1").run();
    expect(session.getBookmark()).toBe(given);
  });

  it("keeps no bookmark when a query fails", async () => {
    const { db } = setup(new Error("no such table: foo: SQLITE_ERROR"));
    const session = db.withSession();
    await rejection(session.prepare("SELECT * FROM foo").all());
    expect(session.getBookmark()).toBeNull();
  });
});

describe("effects", () => {
  it("makes exactly one effect per call, labelled with the method and never the SQL", async () => {
    const { db, labels } = setup(USERS, USERS, USERS, USERS, [USERS]);
    const statement = db.prepare("SELECT secret FROM vault");
    await statement.first();
    await statement.all();
    await statement.run();
    await statement.raw();
    await db.batch([statement]);
    await db.exec("SELECT 1");
    expect(labels).toEqual([
      "D1:payments/DB first",
      "D1:payments/DB all",
      "D1:payments/DB run",
      "D1:payments/DB raw",
      "D1:payments/DB batch",
      "D1:payments/DB exec",
    ]);
    expect(labels.join()).not.toContain("secret");
  });

  it("calls the engine only inside the effect's perform", () => {
    const { engine, calls } = fakeEngine();
    const { scope, labels } = fakeScope({ perform: false });
    const db = createD1Database("DB", scope, engine);
    void db.prepare("SELECT 1").all();
    void db.batch([db.prepare("SELECT 1")]);
    void db.exec("SELECT 1");
    expect(labels).toEqual(["D1:DB all", "D1:DB batch", "D1:DB exec"]);
    expect(calls).toEqual([]);
  });
});

describe("transient faults", () => {
  it("offers one on every call: statements, batch and exec", async () => {
    const { engine } = fakeEngine(USERS, USERS, USERS, USERS, [USERS]);
    const { scope, transients } = fakeScope();
    const db = createD1Database("DB", scope, engine);
    const statement = db.prepare("SELECT 1");
    await statement.first();
    await statement.all();
    await statement.run();
    await statement.raw();
    await db.batch([statement]);
    await db.exec("SELECT 1");
    expect(transients).toEqual([true, true, true, true, true, true]);
  });

  it("rejects with D1's documented D1_ERROR: Network connection lost., and never reaches the database", async () => {
    const { engine, calls } = fakeEngine();
    const { scope } = fakeScope({ transient: true });
    const db = createD1Database("DB", scope, engine);
    const statement = db.prepare("UPDATE accounts SET balance = balance - 1");
    for (const call of [statement.run(), statement.first(), db.batch([statement]), db.exec("SELECT 1")]) {
      const error = await rejection(call);
      expect(error.message).toBe("D1_ERROR: Network connection lost.");
      expect((error.cause as Error).message).toBe("Network connection lost.");
    }
    expect(calls).toEqual([]);
  });

  it("leaves a session's bookmark where it was", async () => {
    const { engine } = fakeEngine();
    const { scope } = fakeScope({ transient: true });
    const session = createD1Database("DB", scope, engine).withSession();
    await rejection(session.prepare("SELECT 1").all());
    expect(session.getBookmark()).toBeNull();
  });
});

describe("dump", () => {
  it("rejects: the simulation does not support it", async () => {
    const { db, labels } = setup();
    const error = await rejection(db.dump());
    expect(error).toBeInstanceOf(SimulationError);
    expect(error.message).toMatch(/not supported in eutaxy's simulation/);
    expect(labels).toEqual([]);
  });
});
