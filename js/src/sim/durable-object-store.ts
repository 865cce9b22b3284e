/**
 * One Durable Object's storage as an engine store: a SQLite database the engine keeps for the
 * run (`do:<worker prefix><Class>:<id hex>`), opened on first use and dropped with the run.
 *
 * Storage calls are not effects: a Durable Object's storage is local to it (Cloudflare runs the
 * object beside its SQLite database), so nothing crosses the network and the engine has no
 * decision to make. Faults reach an object at the stub call that hosts it and at the effects its
 * own code makes to other bindings.
 */

import type { D1RawResult, D1StatementSpec, Engine } from "../engine.ts";

export type StoreEngine = Pick<Engine, "d1Open" | "d1Exists" | "d1Run" | "d1Batch" | "d1Exec">;

/**
 * The KV API's table, named as Cloudflare names it in SQLite-backed objects, so the KV API and
 * `ctx.storage.sql` share one database. `WITHOUT ROWID` keeps it a plain ordered map. Keys compare
 * with SQLite's BINARY collation, byte by byte over UTF-8, the order Cloudflare lists keys in.
 */
const KV_TABLE = "_cf_KV";
const KV_SCHEMA =
  "CREATE TABLE IF NOT EXISTS _cf_KV (key TEXT PRIMARY KEY, value BLOB NOT NULL) WITHOUT ROWID";

/**
 * The object's one alarm. `generation` grows with every `setAlarm`, so the platform work an
 * earlier `setAlarm` queued can tell it has been replaced.
 */
const ALARM_TABLE = "_cf_ALARM";
const ALARM_SCHEMA =
  "CREATE TABLE IF NOT EXISTS _cf_ALARM (id INTEGER PRIMARY KEY CHECK (id = 1), time REAL, generation INTEGER NOT NULL)";

/**
 * Which of the bookkeeping tables the run made itself, when the store was opened with them
 * already there (see `ObjectStore.open`). A temporary table, which `sqlite_master` does not list
 * and which rolls back with the run's savepoints as the tables it speaks of do.
 */
const MADE_TABLE = "_eutaxy_made";
const MADE_SCHEMA = `CREATE TEMP TABLE ${MADE_TABLE} (name TEXT PRIMARY KEY) WITHOUT ROWID`;

/**
 * Words of SQL that can tell whether a table exists other than by using it: listing the schema,
 * or naming one of Cloudflare's own tables (which a Worker may not touch, but whose refusal
 * differs from "no such table").
 */
const SEES_SCHEMA = /sqlite_master|sqlite_schema|sqlite_temp_master|sqlite_temp_schema|table_list|_cf_/i;

/** Whether SQL can see which tables exist (see `ObjectStore.showSchemaAsMade`). */
export function seesSchema(sql: string): boolean {
  return SEES_SCHEMA.test(sql);
}

/** What a statement on a table that does not exist yet answers. */
const NO_ROWS: D1RawResult = {
  columns: [],
  rows: [],
  changes: 0,
  lastRowId: 0,
  rowsRead: 0,
  rowsWritten: 0,
  changedDb: false,
};

/** The savepoint that holds the writes not confirmed yet (`beforeWrite`). */
const UNCONFIRMED = "_eutaxy_unconfirmed";

/** An open savepoint of an asynchronous transaction (`beginSavepoint`). */
export interface Savepoint {
  readonly name: string;
}

export class ObjectStore {
  private opened = false;
  /** Whether each bookkeeping table (`_cf_KV`, `_cf_ALARM`) exists, once known in this run. */
  private readonly tables = new Map<string, boolean>();
  /**
   * Whether the store keeps the record of the bookkeeping tables the run made (`MADE_TABLE`),
   * once known; tables the record does not name are there only because the store was opened
   * with them.
   */
  private madeRecord: boolean | undefined;
  /** The bookkeeping tables marked in the record as made by the run, once known. */
  private readonly made = new Set<string>();
  /**
   * The stored bytes of KV keys read or written in this run (null: no such key), so that a key
   * read again is not asked of the engine. Only the KV API writes `_cf_KV` (a Worker's SQL may
   * not touch it), so the memory holds until a rollback or `deleteAll` (`forgetTables`).
   */
  private readonly values = new Map<string, Uint8Array | null>();
  /** Savepoints of asynchronous transactions open now, outermost first. */
  private readonly savepoints: Savepoint[] = [];
  /** The event loop turn whose writes `UNCONFIRMED` holds, while it is open. */
  private unconfirmedTurn: number | undefined;

  /**
   * `label`: how traces name the store, once an object's run opens it (`DO:Room/"lobby" SQL`, as
   * its storage calls are named). `eventLoopTurn`: the run's count of event loop turns, for an
   * object's store, whose writes are confirmed only once its code lets the event loop run
   * (`beforeWrite`); a store only read (an invariant's) needs none.
   */
  constructor(
    private readonly engine: StoreEngine,
    readonly name: string,
    private readonly label?: string,
    private readonly eventLoopTurn?: () => number,
  ) {}

  /** The object's own SQL (`ctx.storage.sql`), shown in the trace as it ran. */
  run(sql: string, params: readonly unknown[] = []): D1RawResult {
    this.open();
    if (seesSchema(sql)) this.showSchemaAsMade();
    return this.engine.d1Run(this.name, sql, params);
  }

  /**
   * The simulation's own bookkeeping in the store (the KV API's table, the alarm, savepoints),
   * left out of the trace: the storage API traces its calls as calls instead.
   */
  own(sql: string, params: readonly unknown[] = []): D1RawResult {
    this.open();
    return this.engine.d1Run(this.name, sql, params, true);
  }

  /** Bookkeeping statements as one transaction: all apply or none (the engine's batch is atomic). */
  batch(statements: readonly D1StatementSpec[]): D1RawResult[] {
    this.open();
    return statements.length === 0 ? [] : this.engine.d1Batch(this.name, statements, true);
  }

  ensureKv(): void {
    this.ensureTable(KV_TABLE, KV_SCHEMA);
  }

  ensureAlarm(): void {
    this.ensureTable(ALARM_TABLE, ALARM_SCHEMA);
  }

  /**
   * Runs `sql` on the KV table if it exists, and answers no rows if not: as in workerd, only a
   * write creates the table (`SqliteKv::ensureInitialized`), so an object that only reads shows
   * no `_cf_KV` in `sqlite_master` and its size does not grow.
   */
  kvIfExists(sql: string, params: readonly unknown[] = []): D1RawResult {
    return this.hasTable(KV_TABLE) ? this.own(sql, params) : NO_ROWS;
  }

  /** Runs `sql` on the alarm's table if it exists (only setting an alarm creates it), and answers no rows if not. */
  alarmIfExists(sql: string, params: readonly unknown[] = []): D1RawResult {
    return this.hasTable(ALARM_TABLE) ? this.own(sql, params) : NO_ROWS;
  }

  private ensureTable(table: string, schema: string): void {
    if (this.made.has(table)) return;
    if (!this.tables.get(table)) {
      this.own(schema);
      this.tables.set(table, true);
    }
    if (this.hasMadeRecord())
      this.own(`INSERT OR IGNORE INTO temp.${MADE_TABLE} (name) VALUES (?1)`, [table]);
    this.made.add(table);
  }

  /** Whether the store keeps the record of the tables the run made: asked once, until it may change. */
  private hasMadeRecord(): boolean {
    this.madeRecord ??=
      this.own(`SELECT 1 FROM temp.sqlite_master WHERE name = '${MADE_TABLE}'`).rows.length > 0;
    return this.madeRecord;
  }

  /**
   * Before SQL that can see the schema (`SEES_SCHEMA`): drops the bookkeeping tables the store
   * was opened with that the run did not make, and the record, so that the schema is the one
   * the run made, as on Cloudflare. Only such SQL pays for it (a change of schema makes SQLite
   * prepare the connection's statements again); a rollback that brings them back brings the
   * record back too, and the next such statement drops them again.
   */
  showSchemaAsMade(): void {
    if (!this.exists() || !this.hasMadeRecord()) return;
    const made = new Set(this.own(`SELECT name FROM temp.${MADE_TABLE}`).rows.map((row) => row[0]));
    for (const table of [KV_TABLE, ALARM_TABLE]) {
      if (!made.has(table) && this.hasTable(table)) this.own(`DROP TABLE main.${table}`);
    }
    this.own(`DROP TABLE temp.${MADE_TABLE}`);
    this.forgetTables();
    this.madeRecord = false;
  }

  /** Whether a bookkeeping table exists: asked of the store once for both, until they may change. */
  private hasTable(table: string): boolean {
    const known = this.tables.get(table);
    if (known !== undefined) return known;
    const found = this.exists()
      ? this.own(
          `SELECT name FROM sqlite_master WHERE type = 'table' AND name IN ('${KV_TABLE}', '${ALARM_TABLE}')`,
        ).rows.map((row) => row[0])
      : [];
    for (const name of [KV_TABLE, ALARM_TABLE]) this.tables.set(name, found.includes(name));
    return this.tables.get(table) === true;
  }

  /**
   * Before a write of the object's code: holds the writes of this turn of the event loop in a
   * savepoint, confirming those of an earlier turn. workerd commits an object's writes (ActorSqlite's
   * implicit transaction; ActorCache's flush too) once its code lets the event loop run, that is,
   * once it waits on anything but microtasks, and a reset before then drops them
   * (`dropUnconfirmed`). Writes inside a `transaction()` are left to its own savepoint, which the
   * reset rolls back; one opens only once the writes before it are confirmed (`beginSavepoint`),
   * so that the two never interleave.
   */
  beforeWrite(): void {
    if (!this.eventLoopTurn || this.savepoints.length > 0) return;
    const turn = this.eventLoopTurn();
    if (this.unconfirmedTurn === turn) return;
    this.confirm();
    this.own(`SAVEPOINT ${UNCONFIRMED}`);
    this.unconfirmedTurn = turn;
  }

  /**
   * Confirms the writes `beforeWrite` holds: the object's code waited for something that
   * commits them in workerd (a `transaction()` beginning or committing, a
   * `blockConcurrencyWhile` call, `sync()`).
   */
  confirm(): void {
    if (this.unconfirmedTurn === undefined) return;
    this.unconfirmedTurn = undefined;
    this.own(`RELEASE ${UNCONFIRMED}`);
  }

  /**
   * At a reset: drops the writes made since the object's code last let the event loop run,
   * which workerd had not committed, and keeps those of earlier turns.
   */
  dropUnconfirmed(): void {
    if (this.unconfirmedTurn === undefined) return;
    if (this.unconfirmedTurn !== this.eventLoopTurn?.()) {
      this.confirm();
      return;
    }
    this.unconfirmedTurn = undefined;
    this.own(`ROLLBACK TO ${UNCONFIRMED}`);
    this.own(`RELEASE ${UNCONFIRMED}`);
    this.forgetTables();
  }

  /**
   * Opens a savepoint for an asynchronous `transaction()` of a SQLite-backed object, named by its
   * depth as workerd names them, and answers it.
   */
  beginSavepoint(): Savepoint {
    this.confirm();
    const savepoint = { name: `_cf_savepoint_${this.savepoints.length}` };
    this.own(`SAVEPOINT ${savepoint.name}`);
    this.savepoints.push(savepoint);
    return savepoint;
  }

  /**
   * Ends `savepoint` and any opened after it: kept (`commit`) or undone. Does nothing if it has
   * ended already (a later savepoint of the same depth has the same name, not the same identity).
   */
  endSavepoint(savepoint: Savepoint, commit: boolean): void {
    const at = this.savepoints.indexOf(savepoint);
    if (at === -1) return;
    this.savepoints.length = at;
    if (!commit) {
      this.own(`ROLLBACK TO ${savepoint.name}`);
      this.forgetTables();
    }
    this.own(`RELEASE ${savepoint.name}`);
  }

  /**
   * Rolls back every savepoint of an asynchronous transaction still open: the instance that
   * opened them was reset, and none of them will commit.
   */
  abandonSavepoints(): void {
    const outermost = this.savepoints[0];
    if (outermost) this.endSavepoint(outermost, false);
  }

  /**
   * After `deleteAll` dropped tables, or a rollback undid their creation: ask again whether they
   * exist, and create them at the next write (`IF NOT EXISTS`, so no harm if they are there).
   */
  forgetTables(): void {
    this.tables.clear();
    this.values.clear();
    this.made.clear();
    this.madeRecord = undefined;
  }

  /** The bytes remembered for `key`: a Uint8Array, null if it has none, undefined if not known. */
  remembered(key: string): Uint8Array | null | undefined {
    return this.values.get(key);
  }

  /** Remembers what `key` holds now (null: nothing), as read or as just written. */
  remember(key: string, value: Uint8Array | null): void {
    this.values.set(key, value);
  }

  /** The store exists in the engine; false until the object first touched its storage. */
  exists(): boolean {
    return this.opened || this.engine.d1Exists(this.name);
  }

  /**
   * Opens the store. One opened in this run starts with the bookkeeping tables, empty, and the
   * record of which the run makes: every run of the object then begins with the same statements
   * and no later one changes the schema, so the engine keeps its connection from run to run with
   * its prepared statements (`src/d1/reuse.rs`), where tables made in some runs and not in
   * others would have SQLite prepare every statement again in each run. Reads on an empty table
   * answer as on none; SQL that could see the difference sees the tables the run made
   * (`showSchemaAsMade`).
   */
  private open(): void {
    if (this.opened) return;
    this.opened = true;
    if (this.engine.d1Exists(this.name)) return;
    this.engine.d1Open(this.name, this.label);
    this.own(KV_SCHEMA);
    this.own(ALARM_SCHEMA);
    this.own(MADE_SCHEMA);
    this.tables.set(KV_TABLE, true);
    this.tables.set(ALARM_TABLE, true);
    this.madeRecord = true;
  }
}
