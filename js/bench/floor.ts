/**
 * The floor: the same Worker code with no simulation at all. The two Workers' bundles are loaded
 * once, in this process; `DB` is a tiny D1-like shim over a native SQLite (better-sqlite3, an
 * in-memory database) and the `PAYMENTS` service binding is a direct call into the payments
 * Worker's entrypoint (a new instance per call, as RPC makes one). A run starts from empty tables
 * and sends the scenario's requests one after the other, reading each answer. No scheduler, no
 * faults, no fresh module per run, no deterministic globals: what is left is the cost of the
 * handler code, of `Request` and `Response`, and of SQLite.
 */

import Database, { type Connection, type Statement } from "better-sqlite3";
import type { OrderRequest } from "./orders.ts";
import { toRequest, type WorkerSource } from "./workers.ts";

type Row = Record<string, unknown>;

/** A prepared statement with its parameters, D1's `D1PreparedStatement` in miniature. */
class ShimStatement {
  constructor(
    private readonly db: ShimD1,
    private readonly sql: string,
    private readonly params: readonly unknown[],
  ) {}

  bind(...params: unknown[]): ShimStatement {
    return new ShimStatement(this.db, this.sql, params);
  }

  async first(column?: string): Promise<unknown> {
    const row = this.db.statement(this.sql).get(this.db.args(this.sql, this.params)) as Row | undefined;
    if (row === undefined) return null;
    return column === undefined ? row : row[column];
  }

  async all(): Promise<{ success: true; results: unknown[]; meta: Record<string, unknown> }> {
    return { success: true, results: this.rows(), meta: { changes: 0 } };
  }

  async run(): Promise<{ success: true; results: unknown[]; meta: Record<string, unknown> }> {
    const statement = this.db.statement(this.sql);
    if (statement.reader) return this.all();
    const info = statement.run(this.db.args(this.sql, this.params));
    return {
      success: true,
      results: [],
      meta: { changes: info.changes, last_row_id: Number(info.lastInsertRowid), duration: 0 },
    };
  }

  async raw(): Promise<unknown[]> {
    return this.db.statement(this.sql).raw(true).all(this.db.args(this.sql, this.params));
  }

  private rows(): unknown[] {
    return this.db.statement(this.sql).all(this.db.args(this.sql, this.params));
  }
}

/** D1's `D1Database` in miniature, over one better-sqlite3 connection. */
class ShimD1 {
  private readonly statements = new Map<string, Statement>();
  private readonly numbered = new Map<string, boolean>();

  constructor(readonly sqlite: Connection) {}

  prepare(sql: string): ShimStatement {
    return new ShimStatement(this, sql, []);
  }

  async batch(statements: ShimStatement[]): Promise<unknown[]> {
    // Each statement runs synchronously inside the transaction; only the answers are promises.
    return Promise.all(this.sqlite.transaction(() => statements.map((s) => s.run()))());
  }

  async exec(sql: string): Promise<{ count: number; duration: number }> {
    this.sqlite.exec(sql);
    return { count: 1, duration: 0 };
  }

  /** better-sqlite3's statement for `sql`, prepared once (SQLite re-prepares it after a schema change). */
  statement(sql: string): Statement {
    let statement = this.statements.get(sql);
    if (statement === undefined) {
      statement = this.sqlite.prepare(sql);
      this.statements.set(sql, statement);
    }
    return statement;
  }

  /** D1's `?1`, `?2` … are bound by number in better-sqlite3 as an object keyed 1, 2, …; `?` by position. */
  args(sql: string, params: readonly unknown[]): unknown {
    let numbered = this.numbered.get(sql);
    if (numbered === undefined) {
      numbered = /\?\d/.test(sql);
      this.numbered.set(sql, numbered);
    }
    return numbered ? Object.fromEntries(params.map((p, i) => [i + 1, p])) : [...params];
  }
}

interface Handler {
  fetch(request: Request, env: unknown, ctx: unknown): Promise<Response>;
}

type EntrypointClass = new (ctx: unknown, env: unknown) => Record<string, (...args: unknown[]) => unknown>;

export interface Floor {
  /** One run: the requests in order, on fresh tables. */
  run(): Promise<void>;
  /** One run, answering how many rows the first database's table `countTable` had at its end. */
  charged(): Promise<number>;
  close(): void;
}

const ctx = { waitUntil: (_p: Promise<unknown>) => {}, passThroughOnException: () => {}, props: undefined };

/**
 * Loads `workers` (the first is the one the requests reach) with plain bindings: a D1 shim per
 * `d1_databases` entry and a direct call per service binding, then returns the runner.
 */
export async function createFloor(
  workers: readonly WorkerSource[],
  schema: readonly string[],
  requests: readonly OrderRequest[],
  countTable: string,
): Promise<Floor> {
  const modules = new Map<string, Record<string, unknown>>();
  for (const worker of workers) {
    modules.set(
      worker.name,
      await import(`data:text/javascript;base64,${Buffer.from(worker.code).toString("base64")}`),
    );
  }
  const databases: ShimD1[] = [];
  const envs = new Map<string, Record<string, unknown>>();
  for (const worker of workers) {
    const env: Record<string, unknown> = {};
    for (const binding of Object.keys(worker.d1)) {
      const db = new ShimD1(new Database(":memory:"));
      databases.push(db);
      env[binding] = db;
    }
    envs.set(worker.name, env);
  }
  for (const worker of workers) {
    const env = envs.get(worker.name) as Record<string, unknown>;
    for (const [binding, { service, entrypoint }] of Object.entries(worker.services)) {
      const target = modules.get(service);
      const targetEnv = envs.get(service);
      if (!target || !targetEnv)
        throw new Error(`${worker.name}: service ${service} is not among the floor's Workers`);
      env[binding] = serviceBinding(target, targetEnv, entrypoint);
    }
  }
  const main = modules.get(workers[0]?.name ?? "")?.default as Handler | undefined;
  if (!main || typeof main.fetch !== "function")
    throw new Error("the floor's first Worker has no fetch handler");
  const mainEnv = envs.get(workers[0]?.name ?? "");
  for (const db of databases) for (const statement of schema) db.sqlite.exec(statement);
  const first = databases[0];

  const run = async (count: boolean): Promise<number> => {
    // Every run starts from the tables the schema made, empty: it runs in a transaction that is
    // rolled back after it, as the engine restores its stores (dropping and re-creating the
    // tables would cost ~100 µs more per run, and make the floor look slower than it is).
    for (const db of databases) db.sqlite.exec("BEGIN");
    try {
      for (const request of requests) {
        const response = await main.fetch(toRequest(request.path, request.body), mainEnv, ctx);
        const text = await response.text();
        if (response.status !== 200)
          throw new Error(`floor: ${request.path} answered ${response.status}: ${text}`);
      }
      if (!count || !first) return 0;
      return (first.sqlite.prepare(`SELECT count(*) AS n FROM ${countTable}`).get() as { n: number }).n;
    } finally {
      for (const db of databases) db.sqlite.exec("ROLLBACK");
    }
  };
  return {
    async run() {
      await run(false);
    },
    charged: () => run(true),
    close() {
      for (const db of databases) db.sqlite.close();
    },
  };
}

/**
 * A service binding as a direct call: each RPC method call makes a new instance of the named
 * entrypoint (as workerd does per call) and calls the method; `fetch` reaches the default export.
 */
function serviceBinding(
  target: Record<string, unknown>,
  env: Record<string, unknown>,
  entrypoint: string | undefined,
): Record<string, unknown> {
  const binding: Record<string, unknown> = {
    fetch: (request: Request) => (target.default as Handler).fetch(request, env, ctx),
  };
  if (entrypoint === undefined) return binding;
  const Entrypoint = target[entrypoint] as EntrypointClass | undefined;
  if (typeof Entrypoint !== "function") throw new Error(`no entrypoint ${entrypoint}`);
  for (const method of Object.getOwnPropertyNames(Entrypoint.prototype)) {
    if (method === "constructor") continue;
    binding[method] = (...args: unknown[]) => new Entrypoint(ctx, env)[method]?.(...args);
  }
  return binding;
}
