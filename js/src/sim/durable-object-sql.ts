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
 * Differences from production:
 * - Statements run to completion inside `exec`; the cursor walks rows already read. workerd
 *   steps lazily, one row ahead, so its `rowsRead` grows as the cursor advances (here it is final
 *   at once), and a row written while a cursor is being read (by the loop, or by another request
 *   during an `await` in it) may be seen there and is not here (docs/fidelity.md). And a
 *   write with `RETURNING` whose cursor is left unread keeps its statement open in workerd, which
 *   fails the turn's commit and resets the object (docs/fidelity.md); here the write stands.
 * - With several statements in one `exec`, every statement runs and the cursor is over the last,
 *   as in workerd; the bindings go to the last statement, and `rowsRead` and `rowsWritten` are
 *   the last statement's.
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

  next(): { done?: false; value: T } | { done: true; value?: undefined } {
    const row = this.#take();
    // workerd's result has `value: undefined` once done, as an iterator's does.
    return row === undefined ? { done: true, value: undefined } : { done: false, value: this.#object(row) };
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

  /** workerd's class is `Cursor` (`Object.prototype.toString` gives `[object Cursor]`). */
  get [Symbol.toStringTag](): string {
    return "Cursor";
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
    const { statements, emptyTail } = parsed(String(query));
    if (statements.length === 0) throw new Error(NO_STATEMENT);
    if (statements.length > STATEMENTS_PER_EXEC_MAX) {
      throw new Error(`eutaxy runs at most ${STATEMENTS_PER_EXEC_MAX} statements per exec`);
    }
    const params = bindings.map(toBinding);
    this.store.beforeWrite();
    let last: D1RawResult | undefined;
    for (const [i, { sql, refused }] of statements.entries()) {
      if (refused !== undefined) refuse(refused);
      // workerd runs each statement that has text after it before it prepares that text; so
      // with an empty statement at the end (`…; -- done`), the last real one is not the last.
      const isLast = i === statements.length - 1 && !emptyTail;
      last = sqlCall(() => this.store.run(sql, isLast ? params : []), !isLast);
    }
    // The statements before it ran (and wrote), as in workerd, before this one fails to prepare.
    if (emptyTail) throw new Error(NO_STATEMENT);
    const result = last as D1RawResult;
    const rows = result.rows.map((row) => row.map(toValue));
    // The cursor is the last statement's, and so are its counts, as workerd's.
    return new SimSqlCursor<T>([...result.columns], rows, result.rowsRead, result.rowsWritten);
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

/** workerd's text for a query, or the text after a statement, that holds no statement. */
const NO_STATEMENT = "SQL code did not contain a statement.";

/** workerd's text for a statement with parameters that is not the last of its `exec`. */
const NOT_LAST_WITH_PARAMETERS =
  "When executing multiple SQL statements in a single call, only the last statement can have parameters.";

/**
 * Runs an engine call; its error (`no such table: t: SQLITE_ERROR`) is an Error, as workerd's.
 * The engine says how many bindings a statement takes; workerd does not. A statement that is
 * not the last one is run with no bindings, so one that takes any is refused as workerd
 * refuses it before running it.
 */
function sqlCall<T>(call: () => T, notLast = false): T {
  try {
    return call();
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    if (!message.startsWith(WRONG_BINDINGS.slice(0, -1))) throw new Error(message);
    throw new Error(notLast ? NOT_LAST_WITH_PARAMETERS : WRONG_BINDINGS);
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

/** A query's statements, and whether text workerd would take for one more follows the last. */
interface ParsedQuery {
  readonly statements: readonly ParsedStatement[];
  readonly emptyTail: boolean;
}

const parsedQueries = new Map<string, ParsedQuery>();

function parsed(query: string): ParsedQuery {
  const known = parsedQueries.get(query);
  if (known !== undefined) return known;
  const { statements, emptyTail } = splitQuery(query);
  const result = { statements: statements.map((sql) => ({ sql, refused: refusal(sql) })), emptyTail };
  if (parsedQueries.size >= PARSED_MAX) parsedQueries.clear();
  parsedQueries.set(query, result);
  return result;
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
  return splitQuery(sql).statements;
}

/**
 * The statements, and `emptyTail`: whether anything but whitespace (a comment, another `;`)
 * follows the `;` that ends the last one. workerd's `exec` prepares the text after each
 * statement unless it is only whitespace; SQLite skips comments and empty statements before a
 * statement, but text that holds none fails with `SQL code did not contain a statement.`, so
 * `SELECT 1; -- done` fails where `SELECT 1 -- done` does not (compared with Miniflare's).
 */
export function splitQuery(sql: string): { statements: string[]; emptyTail: boolean } {
  const statements: string[] = [];
  let start = 0;
  let words: string[] = [];
  let i = 0;
  let lastEnd = -1;
  const flush = (end: number) => {
    if (words.length > 0) {
      statements.push(sql.slice(start, end).trim());
      lastEnd = end;
    }
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
  const emptyTail = statements.length > 0 && !/^\s*$/.test(sql.slice(lastEnd + 1));
  return { statements, emptyTail };
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
