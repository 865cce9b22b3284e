/**
 * The simulated D1 binding. It gives the Worker the object Cloudflare's D1 binding gives it
 * (`prepare`, `bind`, `first`, `all`, `run`, `raw`, `batch`, `exec`, `withSession`) and turns
 * every call that reaches the database into exactly one effect, labelled `D1:<db> <method>`;
 * the engine runs the SQL inside that effect's `perform`.
 *
 * Sources for the shapes and messages below:
 * - Cloudflare's docs, "Workers Binding API" (developers.cloudflare.com/d1/worker-api/): the
 *   type conversion table, "Prepared statement methods", "D1 Database", "Return objects".
 * - Cloudflare's docs, "Debug D1" (developers.cloudflare.com/d1/observability/debug-d1/): the
 *   error list (`D1_ERROR`, `D1_EXEC_ERROR`, `D1_TYPE_ERROR`, `D1_COLUMN_NOTFOUND`).
 * - workerd's binding, src/cloudflare/internal/d1-api.ts, for what the docs leave open: when
 *   `bind` validates, the exact error texts, how rows become objects, sessions and bookmarks.
 * - `@cloudflare/workers-types` for the types.
 *
 * The binding as workerd ships it sends its requests as JSON (the default, without the
 * `d1_binding_jsrpc` compatibility flag); several behaviours below follow from that and are
 * marked "(JSON)".
 */

import type {
  D1Database,
  D1DatabaseSession,
  D1ExecResult,
  D1Meta,
  D1PreparedStatement,
  D1Result,
  D1SessionBookmark,
} from "@cloudflare/workers-types/index.ts";
import type { D1RawResult, D1StatementSpec, Engine, FootprintEntry } from "../engine.ts";
import { SimulationError } from "../errors.ts";
import type { EffectScope } from "./effect-scope.ts";

export type D1Engine = Pick<Engine, "d1Run" | "d1Batch" | "d1Exec" | "d1Footprint">;

type D1Method = "first" | "all" | "run" | "raw" | "batch" | "exec";

/** What D1 answers for a batch without statements or an empty query, as Workers see it. */
const NO_STATEMENTS = "No SQL statements detected.";

/**
 * D1's documented transient failure, offered as every call's transient fault: Cloudflare's
 * "Debug D1" error list has "Network connection lost." among the D1_ERRORs ("A network error.
 * Retry the operation."), and "Retry queries" (developers.cloudflare.com/d1/best-practices/
 * retry-queries/) tells Workers to retry on it. As the transient fault the request never reached
 * the database, so nothing is applied. D1 itself retries read-only queries up to two more times
 * before a Worker sees the error, which makes it rarer for reads but still possible, so reads
 * offer it too. A call that writes also offers it as a lost response: the write committed and
 * the error came back all the same, which is why Cloudflare asks that only writes that are
 * idempotent be retried (changelog, 2025-09-11: D1 retries read-only queries only).
 */
const TRANSIENT = {
  transient: (): never => {
    throw d1Error("Network connection lost.");
  },
} as const;

/** What `d1Footprint` answered, per engine (one per check), database and statement. */
const footprints = new WeakMap<D1Engine, Map<string, Map<string, FootprintEntry[]>>>();

/** The session constraint a session starts from when given nothing (docs: "the default"). */
const FIRST_UNCONSTRAINED = "first-unconstrained";
const FIRST_PRIMARY = "first-primary";

/**
 * Creates the binding a Worker sees as `env.<binding>` for the D1 database `db` (namespaced:
 * `DB`, or `payments/DB` for a callee's). Every call that reaches the database is one effect of
 * `scope`.
 */
export function createD1Database(
  db: string,
  scope: EffectScope,
  engine: D1Engine,
  schema: SchemaWatch = newSchemaWatch(),
  replicaSession: () => void = () => {},
): D1Database {
  return new SimD1Database(new Connection(db, scope, engine, schema), replicaSession);
}

/**
 * What a run knows of a database's schema, shared by every binding of it in the run. Footprints
 * are remembered for the whole check only as the schema was when runs start; once a statement
 * the footprint cannot tell apart has run (a `CREATE TABLE` on first use, a trigger added), the
 * tables a statement touches may have changed, so the run asks the engine again, remembering
 * answers only until the next such statement.
 */
export interface SchemaWatch {
  changed: boolean;
  readonly footprints: Map<string, FootprintEntry[]>;
}

export function newSchemaWatch(): SchemaWatch {
  return { changed: false, footprints: new Map() };
}

/** What every session of one binding shares: the database, the effects, the bookmark counter. */
class Connection {
  /** Queries answered so far; bookmarks derive from it, so they are deterministic. */
  private answered = 0;

  constructor(
    readonly db: string,
    readonly scope: EffectScope,
    private readonly engine: D1Engine,
    private readonly schema: SchemaWatch,
  ) {}

  /** One statement as one effect; rejects with D1's `D1_ERROR: …` when the engine throws. */
  query(method: Exclude<D1Method, "batch" | "exec">, spec: D1StatementSpec): Promise<D1RawResult> {
    return this.scope.effect(
      this.label(method),
      () => {
        if (isBlank(spec.sql)) throw d1Error(NO_STATEMENTS);
        this.running([spec.sql]);
        const result = engineCall(() => this.engine.d1Run(this.db, spec.sql, spec.params));
        this.answered++;
        return result;
      },
      {
        ...TRANSIENT,
        footprint: () => this.footprint([spec.sql]),
        lostResponseOffered: () => this.writes([spec.sql]),
      },
    );
  }

  /** The statements as one effect and one transaction (the engine's `d1Batch` is atomic). */
  batch(specs: readonly D1StatementSpec[]): Promise<D1RawResult[]> {
    return this.scope.effect(
      this.label("batch"),
      () => {
        // D1 rejects an empty batch; the check happens on D1's side, after the round trip.
        if (specs.length === 0 || specs.some((spec) => isBlank(spec.sql))) throw d1Error(NO_STATEMENTS);
        this.running(specs.map((spec) => spec.sql));
        const results = engineCall(() => this.engine.d1Batch(this.db, specs));
        this.answered++;
        return results;
      },
      {
        ...TRANSIENT,
        footprint: () => this.footprint(specs.map((spec) => spec.sql)),
        lostResponseOffered: () => this.writes(specs.map((spec) => spec.sql)),
      },
    );
  }

  /**
   * `exec` as workerd implements it: the trimmed query is split on `\n` and every line is one
   * query, so a statement that spans lines fails as it does on D1. `count` is the number of
   * lines that are not blank (D1 drops those). Lines before a failing one stay applied ("execution stops and further statements
   * are not executed"). D1 reports a failure as line 1 with the first line's text whichever
   * line failed (workerd: "the line number is always going to be 1 because the DO is only
   * returning the first error"); this keeps that.
   */
  exec(lines: readonly string[]): Promise<D1ExecResult> {
    return this.scope.effect(
      this.label("exec"),
      () => {
        const fail = (message: string): never => {
          const detail = `Error in line 1: ${lines[0]}: ${message}`;
          throw new Error(`D1_EXEC_ERROR: ${detail}`, { cause: new Error(detail) });
        };
        // D1 drops blank lines; with none left it answers as for an empty batch.
        const statements = lines.filter((line) => !isBlank(line));
        if (statements.length === 0) fail(NO_STATEMENTS);
        this.running(statements);
        for (const line of statements) {
          try {
            this.engine.d1Exec(this.db, line);
          } catch (error) {
            fail(sqliteMessage(error));
          }
        }
        this.answered++;
        return { count: statements.length, duration: 0 };
      },
      {
        ...TRANSIENT,
        footprint: () => this.footprint(lines.filter((line) => !isBlank(line))),
        lostResponseOffered: () => this.writes(lines.filter((line) => !isBlank(line))),
      },
    );
  }

  /** Whether the statements may write: one writes a table, or what one touches is unknown. */
  private writes(statements: readonly string[]): boolean {
    // Asked at every call's decision: it reads the remembered footprints, building nothing.
    return statements.some((sql) => {
      const footprint = this.statementFootprint(sql);
      return footprint.length === 0 || footprint.some((entry) => entry.write);
    });
  }

  /**
   * The tables the statements read and write, from the engine (remembered per statement for the
   * check); unknown (empty) if any of them is, and for no statements at all.
   */
  private footprint(statements: readonly string[]): FootprintEntry[] {
    const entries: FootprintEntry[] = [];
    for (const sql of statements) {
      const footprint = this.statementFootprint(sql);
      if (footprint.length === 0) return [];
      entries.push(...footprint);
    }
    return entries;
  }

  /**
   * Notes statements about to run: one whose footprint is unknown may change the schema, and
   * with it what the statements after it touch.
   */
  private running(statements: readonly string[]): void {
    if (statements.some((sql) => this.statementFootprint(sql).length === 0)) {
      this.schema.changed = true;
      this.schema.footprints.clear();
    }
  }

  /**
   * What one statement touches, from the engine once per check, database and text while the
   * schema is as runs start, and once per schema after a run changed it.
   */
  private statementFootprint(sql: string): readonly FootprintEntry[] {
    if (this.schema.changed) return this.askedFootprint(this.schema.footprints, sql);
    let byDb = footprints.get(this.engine);
    if (!byDb) {
      byDb = new Map();
      footprints.set(this.engine, byDb);
    }
    let known = byDb.get(this.db);
    if (!known) {
      known = new Map();
      byDb.set(this.db, known);
    }
    return this.askedFootprint(known, sql);
  }

  /** What `known` remembers of `sql`, else what the engine answers, remembered there. */
  private askedFootprint(known: Map<string, FootprintEntry[]>, sql: string): readonly FootprintEntry[] {
    let footprint = known.get(sql);
    if (!footprint) {
      try {
        footprint = this.engine.d1Footprint(this.db, sql);
      } catch {
        footprint = [];
      }
      known.set(sql, footprint);
    }
    return footprint;
  }

  /**
   * A bookmark for the database's state after the latest answer. Shaped like D1's
   * (`<hex>-<hex>-<hex>-<hash>`) and increasing under `localeCompare`, which is how a session
   * keeps the latest of the bookmarks it has seen.
   */
  bookmark(): D1SessionBookmark {
    return `${this.answered.toString(16).padStart(8, "0")}-00000000-00000000-eutaxy`;
  }

  private label(method: D1Method): string {
    return `D1:${this.db} ${method}`;
  }
}

/** A session: queries through it advance its bookmark (`withSession`, docs "D1 Database"). */
class SimD1DatabaseSession implements D1DatabaseSession {
  #bookmarkOrConstraint: string | null;

  constructor(
    protected readonly connection: Connection,
    /** `null` for the database's own session: always the primary, never a bookmark. */
    bookmarkOrConstraint: string | null,
  ) {
    this.#bookmarkOrConstraint = bookmarkOrConstraint;
  }

  prepare(query: string): D1PreparedStatement {
    return new SimD1PreparedStatement(this, query, []);
  }

  batch<T = unknown>(statements: D1PreparedStatement[]): Promise<D1Result<T>[]> {
    let specs: D1StatementSpec[];
    try {
      specs = statements.map(specOf);
    } catch (error) {
      // workerd's `batch` is an async function: a bad argument rejects, nothing is sent.
      return Promise.reject(error);
    }
    return settled(this.connection.batch(specs), (results) => {
      this.advance();
      return results.map((result) => toD1Result<T>(result));
    });
  }

  /** The latest bookmark seen, or `null` before any query (and always for the database's own). */
  getBookmark(): D1SessionBookmark | null {
    const current = this.#bookmarkOrConstraint;
    return current === FIRST_UNCONSTRAINED || current === FIRST_PRIMARY ? null : current;
  }

  /** @internal */
  query(method: Exclude<D1Method, "batch" | "exec">, spec: D1StatementSpec): Promise<D1RawResult> {
    return this.connection.query(method, spec).then((result) => {
      this.advance();
      return result;
    });
  }

  /** Keeps the newer bookmark, as workerd does: the later one under `localeCompare`. */
  private advance(): void {
    if (this.#bookmarkOrConstraint === null) return;
    const next = this.connection.bookmark();
    const current = this.getBookmark();
    if (current === null || current.localeCompare(next) < 0) this.#bookmarkOrConstraint = next;
  }
}

class SimD1Database implements D1Database {
  /** Queries on the database itself go to the primary and carry no bookmark. */
  readonly #primary: SimD1DatabaseSession;

  /**
   * `replicaSession` hears of each session that may read a replica (`first-unconstrained`):
   * the simulation has none, and answers every read from the primary.
   */
  constructor(
    private readonly connection: Connection,
    private readonly replicaSession: () => void,
  ) {
    this.#primary = new SimD1DatabaseSession(connection, null);
  }

  prepare(query: string): D1PreparedStatement {
    return this.#primary.prepare(query);
  }

  batch<T = unknown>(statements: D1PreparedStatement[]): Promise<D1Result<T>[]> {
    return this.#primary.batch<T>(statements);
  }

  exec(query: string): Promise<D1ExecResult> {
    let lines: string[];
    try {
      lines = query.trim().split("\n");
    } catch (error) {
      return Promise.reject(error);
    }
    return settled(this.connection.exec(lines), (result) => result);
  }

  withSession(constraintOrBookmark?: string): D1DatabaseSession {
    const given = constraintOrBookmark?.trim();
    const constraint = given ? given : FIRST_UNCONSTRAINED;
    if (constraint === FIRST_UNCONSTRAINED) this.replicaSession();
    return new SimD1DatabaseSession(this.connection, constraint);
  }

  /** Only D1's alpha databases supported `dump`; the simulation does not model it. */
  dump(): Promise<ArrayBuffer> {
    return Promise.reject(
      new SimulationError(
        "D1_DUMP_ERROR: D1Database.dump() is not supported in eutaxy's simulation " +
          "(on Cloudflare it only works on deprecated alpha databases)",
      ),
    );
  }
}

/** An immutable statement: `bind` returns a new one, with its values converted as D1 does. */
class SimD1PreparedStatement implements D1PreparedStatement {
  constructor(
    private readonly session: SimD1DatabaseSession,
    readonly statement: string,
    readonly params: readonly unknown[],
  ) {}

  /** Validates and converts now, throwing synchronously, as workerd's `bind` does. */
  bind(...values: unknown[]): D1PreparedStatement {
    return new SimD1PreparedStatement(this.session, this.statement, values.map(toParam));
  }

  first<T = unknown>(colName: string): Promise<T | null>;
  first<T = Record<string, unknown>>(): Promise<T | null>;
  first(colName?: string): Promise<unknown> {
    return settled(this.session.query("first", this.spec()), (result) => {
      const row = toObjects(result)[0];
      if (row === undefined) return null;
      if (colName === undefined) return row;
      // workerd looks the column up on the row object, so only `undefined` means "not found".
      const value = row[colName];
      if (value === undefined) {
        throw new Error(`D1_COLUMN_NOTFOUND: Column not found (${colName})`, {
          cause: new Error("Column not found"),
        });
      }
      return value;
    });
  }

  /** D1 returns the rows from `run` too (docs: "functionally equivalent to `all`"). */
  run<T = Record<string, unknown>>(): Promise<D1Result<T>> {
    return settled(this.session.query("run", this.spec()), (result) => toD1Result<T>(result));
  }

  all<T = Record<string, unknown>>(): Promise<D1Result<T>> {
    return settled(this.session.query("all", this.spec()), (result) => toD1Result<T>(result));
  }

  raw<T = unknown[]>(options: { columnNames: true }): Promise<[string[], ...T[]]>;
  raw<T = unknown[]>(options?: { columnNames?: false }): Promise<T[]>;
  raw(options?: { columnNames?: boolean }): Promise<unknown[]> {
    return settled(this.session.query("raw", this.spec()), (result) => {
      const rows = result.rows.map((row) => row.map(toCell));
      // The column names come first even when there are no rows (ROWS_AND_COLUMNS format).
      return options?.columnNames ? [[...result.columns], ...rows] : rows;
    });
  }

  /** @internal */
  spec(): D1StatementSpec {
    return { sql: this.statement, params: this.params };
  }
}

function specOf(statement: unknown): D1StatementSpec {
  if (statement instanceof SimD1PreparedStatement) return statement.spec();
  throw new TypeError("D1Database.batch() takes an array of statements made by D1Database.prepare()");
}

/**
 * One bound value, converted as D1 converts it (docs, "Type conversion"; workerd's `bind`):
 * - strings and numbers as they are, except what JSON changes: `NaN` and infinities become
 *   `null` and `-0` becomes `0`, because the binding sends its parameters as JSON (JSON);
 * - booleans become 1 and 0;
 * - `null` stays `null`;
 * - an `ArrayBuffer` becomes a BLOB of its bytes; an `ArrayBuffer` view becomes a BLOB of
 *   `Array.from(view)` (docs footnote 4), so a `DataView` binds as an empty BLOB; an array of
 *   numbers in 0..255 is a BLOB too. The engine takes a BLOB as a `Uint8Array`, copied here so
 *   later writes to the Worker's buffer do not change the statement;
 * - anything else (`undefined`, bigints, functions, plain objects, arrays of other values)
 *   throws `D1_TYPE_ERROR` from `bind` itself. As in workerd the message interpolates the
 *   value, so a symbol throws the `TypeError` that interpolation throws.
 * One case the sources leave open: a view whose elements are not all bytes (a `Uint16Array`
 * holding 300) reaches D1 as a JSON array of those numbers; here it is a `D1_TYPE_ERROR`.
 */
function toParam(value: unknown): unknown {
  const type = typeof value;
  if (type === "string") return value;
  if (type === "number") return Number.isFinite(value) ? (value as number) + 0 : null;
  if (type === "boolean") return value ? 1 : 0;
  if (type === "object") {
    if (value === null) return null;
    if (Array.isArray(value) && value.every(isByte)) return Uint8Array.from(value);
    if (value instanceof ArrayBuffer) return new Uint8Array(value.slice(0));
    if (ArrayBuffer.isView(value)) {
      const elements = Array.from(value as unknown as ArrayLike<unknown>);
      if (elements.every(isByte)) return Uint8Array.from(elements);
    }
  }
  const detail = `Type '${type}' not supported for value '${value}'`;
  throw new Error(`D1_TYPE_ERROR: ${detail}`, { cause: new Error(detail) });
}

function isByte(element: unknown): element is number {
  return typeof element === "number" && element >= 0 && element < 256;
}

/**
 * One value of a row as the Worker gets it. BLOBs come back as arrays of numbers: the docs'
 * type conversion table reads "ArrayBuffer → BLOB → Array" (footnote 4: "converted using
 * Array.from"), and the binding receives rows as JSON (JSON). JSON also has no infinities and
 * no negative zero: a REAL that overflowed (`1e308 * 10`) reaches the Worker as `null` and
 * `-0.0` as `0`, as Miniflare's binding shows (js/test/fidelity.test.ts).
 */
function toCell(cell: unknown): unknown {
  if (cell instanceof Uint8Array) return Array.from(cell);
  if (typeof cell === "number") return Number.isFinite(cell) ? cell + 0 : null;
  return cell;
}

/**
 * Rows as objects, keys in column order. A name that appears twice keeps the later column's
 * value in the first one's place (workerd builds each row with `Object.fromEntries`; its test
 * "still sadly lose data for duplicate columns in a join").
 */
function toObjects(result: D1RawResult): Record<string, unknown>[] {
  return result.rows.map((row) =>
    Object.fromEntries(row.map((cell, i) => [result.columns[i], toCell(cell)])),
  );
}

function toD1Result<T>(result: D1RawResult): D1Result<T> {
  return { success: true, meta: toMeta(result), results: toObjects(result) as T[] };
}

/**
 * `meta` as the docs' "Return objects" lists it. The simulation has one database instance, the
 * primary; durations are 0 so that nothing real leaks into a run. Region and colo are left out
 * (optional in workers-types): the simulation runs nowhere.
 */
function toMeta(result: D1RawResult): D1Meta & Record<string, unknown> {
  return {
    served_by: "eutaxy",
    served_by_primary: true,
    timings: { sql_duration_ms: 0 },
    duration: 0,
    changes: result.changes,
    last_row_id: result.lastRowId,
    changed_db: result.changedDb,
    // The engine reports it for every Worker statement on a D1 database.
    size_after: result.sizeAfter ?? 0,
    rows_read: result.rowsRead,
    rows_written: result.rowsWritten,
  };
}

/**
 * What `call` settles with, through `answer`, as the Worker awaits it. An error gets the stack of
 * the code awaiting it (the Worker's, and its libraries', as V8 follows the awaits), captured here
 * when it arrives: workerd's D1 errors show the code that called D1 (`at async lookup
 * (index.js:2:36)`), where one the simulation makes as it settles the call would show the run
 * loop (the host's own files), and none of the Worker's. Nothing is captured for a call that
 * succeeds, and the Worker resumes as many turns later as through `call.then(answer)`.
 */
async function settled<R, T>(call: Promise<R>, answer: (result: R) => T): Promise<T> {
  let result: R;
  try {
    result = await call;
  } catch (error) {
    throw withAwaitersStack(error);
  }
  try {
    return answer(result);
  } catch (error) {
    throw withAwaitersStack(error);
  }
}

/** `error` with the frames that await it now (see `settled`) as its stack, the host's left out. */
function withAwaitersStack(error: unknown): unknown {
  if (!(error instanceof Error)) return error;
  const here: { stack?: string } = {};
  Error.captureStackTrace(here, settled);
  // The host's frames that called the Worker's handler are the runtime's, which workerd does not show.
  const frames = (here.stack ?? "")
    .split("\n")
    .slice(1)
    .filter((frame) => HOST_CODE === undefined || !frame.includes(HOST_CODE));
  error.stack = [`${error.name}: ${error.message}`, ...frames].join("\n");
  return error;
}

/**
 * Where the host's own code is, as its stack frames name it: its bundle (`js/dist/…`, or the
 * script workerd runs it as), or, run from its sources (the tests), their folder.
 */
const HOST_CODE = ((): string | undefined => {
  const frame = new Error().stack?.split("\n").find((line) => /^\s+at /.test(line));
  const file = /\(?((?:file:\/\/)?[^()\s]+?):\d+:\d+\)?$/.exec(frame ?? "")?.[1];
  const source = file === undefined ? null : /[\\/]sim[\\/]d1\.ts$/.exec(file);
  return source ? file?.slice(0, source.index + 1) : file;
})();

/** Runs an engine call; an engine error (`no such table: foo: SQLITE_ERROR`) becomes D1's. */
function engineCall<T>(call: () => T): T {
  try {
    return call();
  } catch (error) {
    const message = sqliteMessage(error);
    throw d1Error(message, message === messageOf(error) ? error : undefined);
  }
}

/** workerd's text for a statement given the wrong number of values (Miniflare shows it). */
const WRONG_BINDINGS = "Wrong number of parameter bindings for SQL query.";

/**
 * The engine's message as D1 words it. The engine says which statement of a batch or script
 * failed (`statement 2: …`) and how many values a statement takes; D1 says neither, so a Worker
 * that matches on the message sees D1's text (js/test/fidelity.test.ts compares them).
 */
function sqliteMessage(error: unknown): string {
  const message = messageOf(error).replace(/^statement \d+: /, "");
  return message.startsWith(WRONG_BINDINGS.slice(0, -1)) ? WRONG_BINDINGS : message;
}

/** D1's error: `D1_ERROR: <message>`, the bare message as its `cause` (workerd's `_sendOrThrow`). */
function d1Error(message: string, cause?: unknown): Error {
  return new Error(`D1_ERROR: ${message}`, {
    cause: cause instanceof Error ? cause : new Error(message),
  });
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function isBlank(sql: unknown): boolean {
  return typeof sql === "string" && sql.trim() === "";
}
