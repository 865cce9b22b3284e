/**
 * `ctx.storage.sql` of a SQLite-backed Durable Object: `exec(query, ...bindings)`, synchronous,
 * returning a cursor, over the object's engine store.
 *
 * Sources: Cloudflare's docs, "SQLite-backed Durable Object Storage" (the SQL API: `exec`,
 * `databaseSize`, the cursor's `next`, `toArray`, `one`, `raw`, `columnNames`, `rowsRead`,
 * `rowsWritten`; `transactionSync`); workerd's src/workerd/api/sql.c++ for what the docs leave
 * open: the texts of `one()`'s errors and of the refusal of transaction statements, names
 * starting `_cf_` being reserved, integers coming back as numbers and BLOBs as ArrayBuffers.
 *
 * Differences from production, all in what a Worker cannot rely on:
 * - Statements run to completion inside `exec`; the cursor walks rows already read. workerd
 *   steps lazily, so its `rowsRead` grows as the cursor advances; here it is final at once.
 * - With several statements in one `exec`, every statement runs and the cursor is over the last,
 *   as in workerd; the bindings go to the last statement.
 * - A number with an integral value is bound as an INTEGER; workerd binds every number as a
 *   double (`typeof(?)` is `real`, `'x' || 7` is `x7.0`). The engine cannot bind an integral
 *   double yet (src/wasm.rs); js/test/fidelity-durable-objects.test.ts asserts the difference.
 */

import type { D1RawResult } from "../engine.ts";
import type { ObjectStore } from "./durable-object-store.ts";

type SqlValue = ArrayBuffer | string | number | null;
type Row = Record<string, SqlValue>;

/** workerd's refusal of BEGIN, SAVEPOINT and the like (SqlStorage::allowTransactions). */
export const TRANSACTION_REFUSED =
  "To execute a transaction, please use the state.storage.transaction() or " +
  "state.storage.transactionSync() APIs instead of the SQL BEGIN TRANSACTION or SAVEPOINT " +
  "statements. The JavaScript API is safer because it will automatically roll back on " +
  "exceptions, and because it interacts correctly with Durable Objects' automatic atomic " +
  "write coalescing.";

const TRANSACTION_WORDS = new Set(["BEGIN", "COMMIT", "END", "ROLLBACK", "SAVEPOINT", "RELEASE"]);

/** Statements one `exec` may hold; a limit so a runaway script ends. */
const STATEMENTS_PER_EXEC_MAX = 10_000;

export class SimSqlCursor<T extends Row = Row> {
  readonly columnNames: string[];
  readonly #rows: SqlValue[][];
  readonly #rowsRead: number;
  readonly #rowsWritten: number;
  #next = 0;

  constructor(columns: string[], rows: SqlValue[][], rowsRead: number, rowsWritten: number) {
    this.columnNames = columns;
    this.#rows = rows;
    this.#rowsRead = rowsRead;
    this.#rowsWritten = rowsWritten;
  }

  get rowsRead(): number {
    return this.#rowsRead;
  }

  get rowsWritten(): number {
    return this.#rowsWritten;
  }

  next(): { done?: false; value: T } | { done: true; value?: never } {
    const row = this.#take();
    return row === undefined ? { done: true } : { done: false, value: this.#object(row) };
  }

  toArray(): T[] {
    const rows: T[] = [];
    for (let row = this.#take(); row !== undefined; row = this.#take()) rows.push(this.#object(row));
    return rows;
  }

  one(): T {
    const row = this.#take();
    if (row === undefined) throw new Error("Expected exactly one result from SQL query, but got no results.");
    if (this.#next < this.#rows.length) {
      this.#next = this.#rows.length;
      throw new Error("Expected exactly one result from SQL query, but got multiple results.");
    }
    return this.#object(row);
  }

  /** The remaining rows as arrays, in column order; shares its position with the cursor. */
  raw<U extends SqlValue[]>(): IterableIterator<U> {
    return new RowIterator(() => this.#take() as U | undefined);
  }

  [Symbol.iterator](): IterableIterator<T> {
    return new RowIterator(() => {
      const row = this.#take();
      return row === undefined ? undefined : this.#object(row);
    });
  }

  #take(): SqlValue[] | undefined {
    const row = this.#rows[this.#next];
    if (row !== undefined) this.#next++;
    return row;
  }

  #object(row: SqlValue[]): T {
    const object: Row = {};
    for (const [i, name] of this.columnNames.entries()) object[name] = row[i] as SqlValue;
    return object as T;
  }
}

/**
 * The iterator `raw()` and `[Symbol.iterator]()` return. workerd's inherit from the platform's
 * %IteratorPrototype%, so the iterator helpers work on them (`raw().toArray()`, which Drizzle's
 * Durable Object driver calls for every query); so do these.
 */
class RowIterator<V> {
  readonly #take: () => V | undefined;

  constructor(take: () => V | undefined) {
    this.#take = take;
  }

  next(): IteratorResult<V> {
    const value = this.#take();
    return value === undefined ? { done: true, value: undefined } : { done: false, value };
  }

  [Symbol.iterator](): this {
    return this;
  }
}
Object.setPrototypeOf(
  RowIterator.prototype,
  Object.getPrototypeOf(Object.getPrototypeOf([][Symbol.iterator]())),
);

/** workerd has prepared statements behind `sql.Statement`; Workers only see the class. */
export class SimSqlStatement {}

export class SimSqlStorage {
  readonly Cursor = SimSqlCursor;
  readonly Statement = SimSqlStatement;

  constructor(
    private readonly store: ObjectStore,
    /** Throws when the object was reset under the instance this belongs to (see `StorageHooks.gone`). */
    private readonly requireCurrent: (call: string) => void = () => {},
  ) {}

  exec<T extends Row = Row>(query: string, ...bindings: unknown[]): SimSqlCursor<T> {
    this.requireCurrent("sql.exec()");
    const statements = parsed(String(query));
    if (statements.length === 0) throw new Error("SQL code did not contain a statement.");
    if (statements.length > STATEMENTS_PER_EXEC_MAX) {
      throw new Error(`eutaxy runs at most ${STATEMENTS_PER_EXEC_MAX} statements per exec`);
    }
    const params = bindings.map(toBinding);
    this.store.beforeWrite();
    let last: D1RawResult | undefined;
    let rowsRead = 0;
    let rowsWritten = 0;
    for (const [i, { sql, refused }] of statements.entries()) {
      if (refused !== undefined) refuse(refused);
      const isLast = i === statements.length - 1;
      last = sqlCall(() => this.store.run(sql, isLast ? params : []));
      rowsRead += last.rowsRead;
      rowsWritten += last.rowsWritten;
    }
    const result = last as D1RawResult;
    const rows = result.rows.map((row) => row.map(toValue));
    return new SimSqlCursor<T>([...result.columns], rows, rowsRead, rowsWritten);
  }

  /** Bytes the database takes, pages in use times the page size (as workerd counts it). */
  get databaseSize(): number {
    this.requireCurrent("sql.databaseSize");
    // Tables the store was opened with and the run did not make take pages Cloudflare's would not.
    this.store.showSchemaAsMade();
    const result = this.store.run(
      "SELECT ((SELECT * FROM pragma_page_count) - (SELECT * FROM pragma_freelist_count)) * (SELECT * FROM pragma_page_size)",
    );
    return Number(result.rows[0]?.[0] ?? 0);
  }
}

/** workerd's text for a statement given the wrong number of bindings. */
const WRONG_BINDINGS = "Wrong number of parameter bindings for SQL query.";

/**
 * Runs an engine call; its error (`no such table: t: SQLITE_ERROR`) is an Error, as workerd's.
 * The engine says how many bindings a statement takes; workerd does not.
 */
function sqlCall<T>(call: () => T): T {
  try {
    return call();
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    throw new Error(message.startsWith(WRONG_BINDINGS.slice(0, -1)) ? WRONG_BINDINGS : message);
  }
}

/**
 * A binding as workerd converts it (a BLOB, a string or a double, or null): `undefined` is
 * null, a bigint is refused as V8 refuses it as a number, and anything else (a boolean, an
 * object, a Date) is bound as its string (`true` is `"true"`).
 */
function toBinding(value: unknown): unknown {
  if (value === null || value === undefined) return null;
  if (typeof value === "string" || typeof value === "number") return value;
  if (typeof value === "bigint") throw new TypeError("Cannot convert a BigInt value to a number");
  if (value instanceof ArrayBuffer) return new Uint8Array(value.slice(0));
  if (ArrayBuffer.isView(value)) {
    return new Uint8Array(value.buffer.slice(value.byteOffset, value.byteOffset + value.byteLength));
  }
  return String(value);
}

/** A value as workerd gives it: integers and reals as numbers, BLOBs as ArrayBuffers. */
function toValue(cell: unknown): SqlValue {
  if (cell instanceof Uint8Array) return cell.slice().buffer as ArrayBuffer;
  return cell as SqlValue;
}

/** One statement of an `exec`'s query, and why workerd refuses it, if it does. */
interface ParsedStatement {
  readonly sql: string;
  readonly refused: Refusal | undefined;
}

type Refusal = "transaction" | "reserved";

/**
 * Queries already split and judged: an object runs the same few query texts in every run. Past
 * this many the memory starts over (SQL built with its values in it is a new text every time).
 */
const PARSED_MAX = 4096;
const parsedQueries = new Map<string, readonly ParsedStatement[]>();

function parsed(query: string): readonly ParsedStatement[] {
  const known = parsedQueries.get(query);
  if (known !== undefined) return known;
  const statements = splitStatements(query).map((sql) => ({ sql, refused: refusal(sql) }));
  if (parsedQueries.size >= PARSED_MAX) parsedQueries.clear();
  parsedQueries.set(query, statements);
  return statements;
}

/**
 * What workerd's authorizer refuses: transaction statements (use `transactionSync`) and names
 * starting `_cf_`, which are Cloudflare's (the KV API's table among them).
 */
function refusal(statement: string): Refusal | undefined {
  const words = wordsOf(statement);
  if (TRANSACTION_WORDS.has(words[0] ?? "")) return "transaction";
  if (words.some((word) => word.startsWith("_CF_"))) return "reserved";
  return undefined;
}

function refuse(refused: Refusal): never {
  throw new Error(refused === "transaction" ? TRANSACTION_REFUSED : "not authorized: SQLITE_AUTH");
}

/**
 * Splits SQL into statements at `;`, as SQLite's `sqlite3_complete` reads it: semicolons inside
 * quotes, brackets and comments do not count, and inside `CREATE TRIGGER` only one after `END`
 * ends the statement. Statements of nothing but whitespace and comments are dropped.
 */
export function splitStatements(sql: string): string[] {
  const statements: string[] = [];
  let start = 0;
  let words: string[] = [];
  let i = 0;
  const flush = (end: number) => {
    if (words.length > 0) statements.push(sql.slice(start, end).trim());
    start = end + 1;
    words = [];
  };
  while (i < sql.length) {
    const c = sql[i] as string;
    if (c === "'" || c === '"' || c === "`" || c === "[") {
      const close = c === "[" ? "]" : c;
      let j = i + 1;
      for (; j < sql.length; j++) {
        if (sql[j] !== close) continue;
        // A doubled quote is an escaped quote inside the literal.
        if (close !== "]" && sql[j + 1] === close) {
          j++;
          continue;
        }
        break;
      }
      // A quoted identifier counts as a word (it may name a table); a string literal does not.
      if (c !== "'") words.push(sql.slice(i + 1, j).toUpperCase());
      else words.push("'");
      i = j + 1;
    } else if (c === "-" && sql[i + 1] === "-") {
      const end = sql.indexOf("\n", i);
      i = end < 0 ? sql.length : end + 1;
    } else if (c === "/" && sql[i + 1] === "*") {
      const end = sql.indexOf("*/", i + 2);
      i = end < 0 ? sql.length : end + 2;
    } else if (/[\w$]/.test(c)) {
      let j = i + 1;
      while (j < sql.length && /[\w$]/.test(sql[j] as string)) j++;
      words.push(sql.slice(i, j).toUpperCase());
      i = j;
    } else if (c === ";") {
      if (!isTrigger(words) || words[words.length - 1] === "END") flush(i);
      else words.push(";");
      i++;
    } else {
      if (!/\s/.test(c)) words.push(c);
      i++;
    }
  }
  flush(sql.length);
  return statements;
}

function isTrigger(words: readonly string[]): boolean {
  if (words[0] !== "CREATE") return false;
  const next = words[1] === "TEMP" || words[1] === "TEMPORARY" ? words[2] : words[1];
  return next === "TRIGGER";
}

/** The words of one statement, upper-cased, string literals and comments left out. */
function wordsOf(statement: string): string[] {
  const words: string[] = [];
  let i = 0;
  while (i < statement.length) {
    const c = statement[i] as string;
    if (c === "'") {
      let j = i + 1;
      while (j < statement.length && !(statement[j] === "'" && statement[j + 1] !== "'")) {
        j += statement[j] === "'" ? 2 : 1;
      }
      i = j + 1;
    } else if (c === '"' || c === "`" || c === "[") {
      const close = c === "[" ? "]" : c;
      const end = statement.indexOf(close, i + 1);
      const stop = end < 0 ? statement.length : end;
      words.push(statement.slice(i + 1, stop).toUpperCase());
      i = stop + 1;
    } else if (c === "-" && statement[i + 1] === "-") {
      const end = statement.indexOf("\n", i);
      i = end < 0 ? statement.length : end + 1;
    } else if (c === "/" && statement[i + 1] === "*") {
      const end = statement.indexOf("*/", i + 2);
      i = end < 0 ? statement.length : end + 2;
    } else if (/[\w$]/.test(c)) {
      let j = i + 1;
      while (j < statement.length && /[\w$]/.test(statement[j] as string)) j++;
      words.push(statement.slice(i, j).toUpperCase());
      i = j;
    } else {
      i++;
    }
  }
  return words;
}
