//! The engine's SQLite stores: one in-memory database per name. They serve D1 bindings and,
//! through the host, everything else of the platform that keeps state (KV namespaces, Durable
//! Object storage, queues), so that resetting state per run stays one mechanism. Names are
//! opaque: the host picks them (`DB`, `payments/DB`, …) and the engine never parses them.
//!
//! The scenario's setup (schema, seed rows) runs once; `seal` then snapshots every database
//! with `sqlite3_serialize`. A database opened after `seal` (during a run) starts empty and
//! lives until the run ends: the next `restore` closes it, keeping its connection for the runs
//! that open it again (see `reuse.rs`).
//!
//! `restore` brings every sealed database back at the start of each run. The fast way: each
//! run executes inside one outer transaction that `restore` rolls back, so the connection and
//! its cache of prepared statements survive from run to run. SQLite re-prepares a cached
//! statement by itself when the schema changed under it (the rollback of a run's DDL resets the
//! schema and bumps its generation). The safe way, whenever a run may have stepped outside
//! that transaction (its SQL names a transaction or connection statement, see
//! `steps_outside`, or the connection left the transaction on its own): `sqlite3_deserialize`
//! of the snapshot into a fresh connection. Either way nothing survives from the last run: not
//! its rows, not its last insert rowid, not an open transaction.
//!
//! Deserializing into the same connection would keep the cache too, but is not safe: SQLite
//! does not expire prepared statements on deserialize, and the fresh schema's generation
//! counter restarts, so a cached statement could pass its schema check while holding pointers
//! into the freed schema.
//!
//! Results are raw: columns, rows and counters. The host shapes them as Cloudflare's D1
//! binding does (`results`, `meta`) and prefixes errors with `D1_ERROR: `.

use std::collections::{BTreeMap, HashSet};
use std::fmt;

use rusqlite::fallible_iterator::FallibleIterator;
use rusqlite::types::{ToSqlOutput, ValueRef};
use rusqlite::{Batch, Connection, ToSql, MAIN_DB};

use crate::authorize;
use crate::error::{Error, Result};
use crate::script::{self, Position};

mod reuse;
use reuse::{Counters, Phase, Reuse};

use std::cell::Cell;
use std::ffi::{c_int, c_void};
use std::sync::Once;

/// `sqlite3_test_control`'s opcode that seeds SQLite's PRNG (sqlite3.h).
const SQLITE_TESTCTRL_PRNG_SEED: c_int = 28;
/// `sqlite3_test_control`'s opcode that, given 2 and a function, replaces `localtime` (sqlite3.h).
const SQLITE_TESTCTRL_LOCALTIME_FAULT: c_int = 18;

/// The Unix epoch as a Julian day in milliseconds, SQLite's unit for the current time.
const UNIX_EPOCH_JULIAN_MS: i64 = 210_866_760_000_000;

thread_local! {
    /// What SQLite's `'now'` reads (`datetime('now')`, `CURRENT_TIMESTAMP`, …): the
    /// simulation's clock, in milliseconds since the epoch, as `set_now_ms` last set it.
    static NOW_MS: Cell<i64> = const { Cell::new(0) };
}

/// Sets the time SQLite's `'now'` reads until the next call: the simulation's virtual clock,
/// so that setup rows and statements record the same time in every check, on every machine.
pub fn set_now_ms(ms: u64) {
    NOW_MS.with(|now| now.set(i64::try_from(ms).unwrap_or(i64::MAX)));
}

unsafe extern "C" fn current_time_int64(
    _vfs: *mut rusqlite::ffi::sqlite3_vfs,
    out: *mut rusqlite::ffi::sqlite3_int64,
) -> c_int {
    // SAFETY: SQLite passes a valid pointer to write the time to.
    unsafe { *out = UNIX_EPOCH_JULIAN_MS + NOW_MS.with(Cell::get) };
    rusqlite::ffi::SQLITE_OK
}

unsafe extern "C" fn current_time(_vfs: *mut rusqlite::ffi::sqlite3_vfs, out: *mut f64) -> c_int {
    let julian_ms = UNIX_EPOCH_JULIAN_MS + NOW_MS.with(Cell::get);
    // SAFETY: SQLite passes a valid pointer to write the time to.
    unsafe { *out = julian_ms as f64 / 86_400_000.0 };
    rusqlite::ffi::SQLITE_OK
}

/// SQLite's `localtime` modifier, as D1 answers it: its databases run in UTC, so local time is
/// UTC whatever the time zone of the machine eutaxy runs on. `t` is a `time_t` (64 bits, in
/// the wasm build and natively), `tm` a `struct tm`, whose first nine `int`s it fills.
unsafe extern "C" fn utc_localtime(t: *const c_void, tm: *mut c_void) -> c_int {
    // SAFETY: SQLite passes its time_t and the struct tm it reads back.
    let seconds = unsafe { *t.cast::<i64>() };
    let days = seconds.div_euclid(86_400);
    let in_day = seconds.rem_euclid(86_400);
    let (year, month, day) = civil_from_days(days);
    let narrow = |v: i64| c_int::try_from(v).unwrap_or(c_int::MAX);
    let fields: [c_int; 9] = [
        narrow(in_day % 60),
        narrow((in_day / 60) % 60),
        narrow(in_day / 3600),
        narrow(day),
        narrow(month - 1),
        narrow(year - 1900),
        narrow((days + 4).rem_euclid(7)),
        narrow(days - days_from_civil(year, 1, 1)),
        0,
    ];
    // SAFETY: struct tm begins with these nine ints on every target SQLite is built for here.
    unsafe { tm.cast::<[c_int; 9]>().write(fields) };
    0
}

/// The proleptic Gregorian date of a day counted from 1970-01-01 (Howard Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// The day, counted from 1970-01-01, of a proleptic Gregorian date (the inverse of the above).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = if month > 2 { month - 3 } else { month + 9 };
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Gives SQLite the simulation's time, once: the default VFS's clock reads `NOW_MS` (every
/// connection, in-memory or deserialized, asks it: the memdb VFS asks the default one), and
/// `localtime` is UTC, as on D1.
fn use_simulation_clock() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // SAFETY: finding the default VFS initialises SQLite; its struct lives as long as the
        // library, and nothing reads its clock fields while this one thread writes them. The
        // test control takes 2 and a `int (*)(const void*, void*)`.
        unsafe {
            let vfs = rusqlite::ffi::sqlite3_vfs_find(std::ptr::null());
            if let Some(vfs) = vfs.as_mut() {
                vfs.xCurrentTime = Some(current_time);
                vfs.xCurrentTimeInt64 = Some(current_time_int64);
            }
            let localtime: unsafe extern "C" fn(*const c_void, *mut c_void) -> c_int =
                utc_localtime;
            sqlite3_test_control(SQLITE_TESTCTRL_LOCALTIME_FAULT, 2 as c_int, localtime);
        }
    });
}

extern "C" {
    // Variadic in sqlite3.h; the bundled bindings leave it out, so it is declared here.
    fn sqlite3_test_control(op: c_int, ...) -> c_int;
}

/// Upper bound on rows one statement returns, so that a runaway query fails instead of
/// exhausting memory.
pub const ROWS_PER_STATEMENT_MAX: usize = 1_000_000;

/// Upper bound on statements in one script or batch.
pub const STATEMENTS_MAX: usize = 100_000;

/// Prepared statements kept per connection. A Worker's SQL is a few dozen distinct texts.
const STATEMENT_CACHE_CAPACITY: usize = 256;

/// Words of statements that end, nest or need to be outside a transaction, or that change the
/// connection rather than the database. SQL naming one runs outside the run's transaction.
const OUTSIDE_WORDS: [&str; 9] = [
    "begin",
    "commit",
    "rollback",
    "savepoint",
    "release",
    "pragma",
    "attach",
    "detach",
    "vacuum",
];

#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Integer(i64),
    Real(f64),
    Text(String),
    Blob(Vec<u8>),
}

/// A value as reports show it: text JSON-quoted, numbers bare, blobs as `x'hex'`.
impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Null => f.write_str("null"),
            Value::Integer(i) => write!(f, "{i}"),
            Value::Real(r) => write!(f, "{r}"),
            Value::Text(t) => write_json_string(f, t),
            Value::Blob(b) => {
                f.write_str("x'")?;
                for byte in b {
                    write!(f, "{byte:02x}")?;
                }
                f.write_str("'")
            }
        }
    }
}

fn write_json_string(f: &mut fmt::Formatter<'_>, text: &str) -> fmt::Result {
    f.write_str("\"")?;
    for c in text.chars() {
        match c {
            '"' => f.write_str("\\\"")?,
            '\\' => f.write_str("\\\\")?,
            '\n' => f.write_str("\\n")?,
            '\r' => f.write_str("\\r")?,
            '\t' => f.write_str("\\t")?,
            c if u32::from(c) < 0x20 => write!(f, "\\u{:04x}", u32::from(c))?,
            c => write!(f, "{c}")?,
        }
    }
    f.write_str("\"")
}

impl ToSql for Value {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::Borrowed(match self {
            Value::Null => ValueRef::Null,
            Value::Integer(i) => ValueRef::Integer(*i),
            Value::Real(r) => ValueRef::Real(*r),
            Value::Text(t) => ValueRef::Text(t.as_bytes()),
            Value::Blob(b) => ValueRef::Blob(b),
        }))
    }
}

impl From<ValueRef<'_>> for Value {
    fn from(value: ValueRef<'_>) -> Self {
        match value {
            ValueRef::Null => Value::Null,
            ValueRef::Integer(i) => Value::Integer(i),
            ValueRef::Real(r) => Value::Real(r),
            ValueRef::Text(t) => Value::Text(String::from_utf8_lossy(t).into_owned()),
            ValueRef::Blob(b) => Value::Blob(b.to_vec()),
        }
    }
}

/// One statement's outcome, before the host shapes it as Cloudflare does.
#[derive(Debug, Clone, PartialEq)]
pub struct RawResult {
    pub columns: Vec<String>,
    pub rows: Vec<Vec<Value>>,
    /// Rows inserted, updated or deleted by the statement itself (not by triggers).
    pub changes: u64,
    pub last_row_id: i64,
    /// Rows returned plus rows changed. SQLite does not count rows scanned, so this is a lower
    /// bound of what D1 reports; it is only informational.
    pub rows_read: u64,
    /// Equal to `changes`.
    pub rows_written: u64,
    /// The database size after the statement, page count times page size, as D1 reports it;
    /// `None` where nothing reads it (see `Database::sized`).
    pub size_after: Option<u64>,
    /// Whether the statement may have written (SQLite's `sqlite3_stmt_readonly` is false) or
    /// changed rows.
    pub changed_db: bool,
}

/// A statement of a batch: SQL and its bound parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct Statement {
    pub sql: String,
    pub params: Vec<Value>,
}

struct Database {
    connection: Connection,
    /// The state every run starts from; `None` for a database opened during a run, which the
    /// next `restore` closes (starting empty when a run opens it again).
    snapshot: Option<Vec<u8>>,
    /// Whether runs may be reset by rollback: false when the schema behaves differently inside
    /// a transaction: it can roll one back (`ON CONFLICT ROLLBACK`, `RAISE(ROLLBACK)`), which
    /// would undo the whole run instead of one statement, or it defers constraints to a commit
    /// (`INITIALLY DEFERRED`), which would never come.
    rollback_safe: bool,
    /// Whether the current run executes inside the outer transaction `restore` rolls back.
    in_run_transaction: bool,
    /// Savepoints the host opened inside the run's transaction and has not released, outermost
    /// first (see `Database::nest`).
    savepoints: Vec<String>,
    size: SizeCache,
    /// Whether a Worker's statements report the database's size after them (D1's
    /// `meta.size_after`): a Durable Object's SQL storage reports none, and the engine's and the
    /// host's own statements need none, so those skip reading it (a `PRAGMA`, prepared afresh
    /// each time it runs).
    sized: bool,
    /// How traces name the database, when the host named it (`DO:Room/"lobby" SQL` for a
    /// Durable Object's storage); `D1 <name>` otherwise.
    label: Option<String>,
    /// For a database opened during a run, how it is kept for the next runs (see `reuse.rs`).
    reuse: Option<Reuse>,
    /// What the connection's `changes()` and `total_changes()` read, so that a run reads them
    /// as on a connection opened for it. Boxed, as the connection's functions read it by
    /// address, and after `connection`, so that it outlives it.
    counters: Box<Counters>,
}

/// Whose SQL a statement is: a Worker's, which runs as D1 (or a Durable Object's SQL storage)
/// runs it, or the engine's and the host's own (restoring, bookkeeping, invariants).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    Worker,
    Engine,
}

/// Worker statements remembered as allowed; past this many the memory starts over (SQL built
/// with its values in it is a new text every time).
const ALLOWED_MAX: usize = 4096;

/// What a run's seed that folds to 0 seeds SQLite's PRNG with instead (see `reseed`).
const PRNG_SEED_FOR_ZERO: u32 = 0x9e37_79b9;

/// What `size_after` needs, kept between statements: SQLite prepares a `PRAGMA` afresh every
/// time it runs, which costs more than most statements, so the size is read again only after a
/// statement that may have changed it.
#[derive(Default)]
struct SizeCache {
    page_size: Option<i64>,
    bytes: Option<u64>,
}

impl SizeCache {
    /// The database's size after a statement, when `wanted`; `readonly` statements cannot have
    /// changed it, and the size another statement may have changed is read again when next
    /// wanted.
    fn after(
        &mut self,
        connection: &Connection,
        readonly: bool,
        wanted: bool,
    ) -> rusqlite::Result<Option<u64>> {
        if !readonly {
            self.bytes = None;
        }
        if !wanted {
            return Ok(None);
        }
        if let Some(bytes) = self.bytes {
            return Ok(Some(bytes));
        }
        let page_size = match self.page_size {
            Some(size) => size,
            None => {
                let size = connection.query_row("PRAGMA page_size", [], |r| r.get(0))?;
                self.page_size = Some(size);
                size
            }
        };
        let pages: i64 = connection
            .prepare_cached("PRAGMA page_count")?
            .query_row([], |r| r.get(0))?;
        let bytes = u64::try_from(pages.saturating_mul(page_size)).unwrap_or(0);
        self.bytes = Some(bytes);
        Ok(Some(bytes))
    }
}

impl Database {
    fn new(connection: Connection) -> rusqlite::Result<Self> {
        connection.set_prepared_statement_cache_capacity(STATEMENT_CACHE_CAPACITY);
        let counters = Box::<Counters>::default();
        reuse::install(&connection, &counters)?;
        Ok(Self {
            connection,
            snapshot: None,
            rollback_safe: false,
            in_run_transaction: false,
            savepoints: Vec::new(),
            size: SizeCache::default(),
            sized: true,
            label: None,
            reuse: None,
            counters,
        })
    }

    /// A database opened during a run: empty, kept for the next runs as `reuse.rs` says.
    fn run_scoped(connection: Connection) -> rusqlite::Result<Self> {
        let mut database = Self::new(connection)?;
        database.reuse = Some(Reuse::new());
        Ok(database)
    }

    /// Leaves the record of a run-scoped database: from now on the run's statements execute on
    /// the connection, inside the run's transaction, with the counters a connection opened for
    /// this run would have. A run that left the prefix early gets a fresh connection that
    /// replays the prefix up to there, and the prefix is cut there.
    fn go_live(&mut self, name: &str) -> Result<()> {
        let Some(reuse) = &mut self.reuse else {
            return Ok(());
        };
        let cannot =
            |e: rusqlite::Error| Error::new(format!("cannot reopen D1 database '{name}': {e}"));
        match reuse.phase {
            Phase::Live => return Ok(()),
            Phase::Recording => {}
            Phase::Replaying(n) => {
                let (rowid, changes, total) = reuse.counters_after(n);
                // SAFETY: the handle is this connection's, open, and used by this thread only.
                let changes_now =
                    unsafe { rusqlite::ffi::sqlite3_changes64(self.connection.handle()) };
                if n < reuse.prefix.len() {
                    let connection = reuse::without_drawing(fresh_connection).map_err(cannot)?;
                    self.counters.changed_before.set(0);
                    self.counters.changes.set(None);
                    reuse::install(&connection, &self.counters).map_err(cannot)?;
                    self.size = SizeCache::default();
                    for recorded in &reuse.prefix[..n] {
                        let result = run_statement(
                            &connection,
                            recorded.sql(),
                            recorded.params(),
                            &mut self.size,
                            false,
                        )
                        .map_err(|e| Error::new(d1_message(&e)))?;
                        debug_assert_eq!(
                            result, recorded.result,
                            "a replayed statement answered otherwise"
                        );
                    }
                    reuse.prefix.truncate(n);
                    self.connection = connection;
                } else {
                    let connection = &self.connection;
                    // SAFETY: as above.
                    unsafe {
                        rusqlite::ffi::sqlite3_set_last_insert_rowid(connection.handle(), rowid)
                    };
                    let counters = &self.counters;
                    counters
                        .changed_before
                        .set(connection.total_changes() as i64 - total);
                    counters
                        .changes
                        .set((changes_now != changes).then_some(changes));
                }
            }
        }
        reuse.phase = Phase::Live;
        if !reuse.spoiled {
            execute_cached(&self.connection, "BEGIN").map_err(cannot)?;
            self.in_run_transaction = true;
        }
        Ok(())
    }

    /// Ends a run of a run-scoped database: whether it is kept for the next run, where it will
    /// start from its record.
    fn end_run(&mut self) -> bool {
        let Some(reuse) = &mut self.reuse else {
            return false;
        };
        let kept = match reuse.phase {
            Phase::Recording | Phase::Replaying(_) => !reuse.spoiled,
            Phase::Live => {
                !reuse.spoiled
                    && self.in_run_transaction
                    && !self.connection.is_autocommit()
                    && execute_cached(&self.connection, "ROLLBACK").is_ok()
            }
        };
        reuse.phase = Phase::Replaying(0);
        self.in_run_transaction = false;
        self.savepoints.clear();
        self.size.bytes = None;
        kept
    }

    /// Refuses a Worker's statement as workerd does (see `authorize.rs`). What is refused depends
    /// on the statement alone, so a text allowed once (on any database) is not judged again:
    /// judging sets SQLite's authorizer, which expires the connection's prepared statements.
    fn authorize(&mut self, sql: &str, allowed: &mut HashSet<String>) -> Result<()> {
        if allowed.contains(sql) {
            return Ok(());
        }
        let refused = authorize::judge(&self.connection, sql)
            .map_err(|e| Error::new(format!("cannot judge a statement: {e}")))?;
        if let Some(message) = refused {
            return Err(Error::new(message));
        }
        // SQLite applies `PRAGMA foreign_keys = …` as it prepares it, outside a transaction:
        // judging it there must not turn the checks off, which D1 never lets a Worker do.
        if self.connection.is_autocommit()
            && authorize::first_word(sql).eq_ignore_ascii_case("pragma")
        {
            enforce_foreign_keys(&self.connection)
                .map_err(|e| Error::new(format!("cannot enforce foreign keys: {e}")))?;
        }
        if allowed.len() >= ALLOWED_MAX {
            allowed.clear();
        }
        allowed.insert(sql.to_string());
        Ok(())
    }

    /// Called before the run's SQL: SQL that could end the run's transaction or depends on
    /// being outside one commits it first, so that it behaves exactly as in a connection of
    /// its own; the next `restore` then reloads the snapshot.
    fn before(&mut self, sql: &str) -> Result<bool> {
        let outside = steps_outside(sql) || (self.reuse.is_some() && reuse::defers(sql));
        if outside {
            // A pragma may change the page size.
            self.size = SizeCache::default();
        }
        if self.in_run_transaction && outside && !self.nest(sql) {
            self.in_run_transaction = false;
            execute_cached(&self.connection, "COMMIT")
                .map_err(|e| Error::new(format!("cannot leave the run's transaction: {e}")))?;
        }
        Ok(outside)
    }

    /// Whether SQL that would step outside the run's transaction can run inside it instead,
    /// keeping the run's connection for the next run. A storage API transaction opens a
    /// savepoint (`SAVEPOINT`, then `RELEASE` or `ROLLBACK TO`), which on a connection of its
    /// own begins a transaction and, released, commits it. Nested in the run's transaction it
    /// answers the same: the only SQL that could tell the two apart ends or begins a
    /// transaction, which a Worker may not send (see `authorize.rs`). While one is open, any
    /// SQL runs inside a transaction either way, so it stays in the run's.
    fn nest(&mut self, sql: &str) -> bool {
        let open = !self.savepoints.is_empty();
        match savepoint_statement(sql) {
            Some(SavepointStatement::Open(name)) => {
                self.savepoints.push(name.to_string());
                true
            }
            Some(SavepointStatement::Release(name)) if open => {
                if let Some(at) = self
                    .savepoints
                    .iter()
                    .rposition(|open| open.eq_ignore_ascii_case(name))
                {
                    self.savepoints.truncate(at);
                }
                true
            }
            _ => open,
        }
    }

    /// Called after the run's SQL: SQLite may end a transaction by itself (some errors roll it
    /// back), and then the run is no longer inside it.
    fn after(&mut self) {
        if self.in_run_transaction && self.connection.is_autocommit() {
            self.in_run_transaction = false;
        }
        if !self.in_run_transaction {
            self.savepoints.clear();
        }
    }

    /// Brings the database back to its snapshot and opens the next run's transaction.
    fn restore(&mut self, name: &str) -> Result<()> {
        let Some(snapshot) = &self.snapshot else {
            unreachable!("only sealed databases are restored");
        };
        let cannot =
            |e: rusqlite::Error| Error::new(format!("cannot restore D1 database '{name}': {e}"));
        let rolled_back = self.in_run_transaction
            && !self.connection.is_autocommit()
            && execute_cached(&self.connection, "ROLLBACK").is_ok();
        self.in_run_transaction = false;
        self.savepoints.clear();
        self.size.bytes = None;
        if rolled_back {
            // The last insert rowid and the counts of changes are the connection's, not the
            // database's: the run reads them as on a connection of its own.
            // SAFETY: the handle is this connection's, open, and used by this thread only.
            unsafe { rusqlite::ffi::sqlite3_set_last_insert_rowid(self.connection.handle(), 0) };
            let total = self.connection.total_changes() as i64;
            self.counters.changed_before.set(total);
        } else {
            let mut connection = Connection::open_in_memory().map_err(cannot)?;
            connection
                .deserialize_read_exact(MAIN_DB, &snapshot[..], snapshot.len(), false)
                .map_err(cannot)?;
            connection.set_prepared_statement_cache_capacity(STATEMENT_CACHE_CAPACITY);
            enforce_foreign_keys(&connection).map_err(cannot)?;
            self.counters.changed_before.set(0);
            reuse::install(&connection, &self.counters).map_err(cannot)?;
            self.connection = connection;
            self.size = SizeCache::default();
        }
        self.counters.changes.set(Some(0));
        if self.rollback_safe {
            execute_cached(&self.connection, "BEGIN").map_err(cannot)?;
            self.in_run_transaction = true;
        }
        Ok(())
    }
}

/// Whether SQL names a statement that must not run inside the run's transaction. Word-based
/// and conservative: a false alarm only costs the next run a reload. `END` is a transaction
/// statement only at the start of one, and also closes every `CASE`, so it counts only first
/// or in a script.
///
/// It runs before every statement, so it scans bytes and looks a word up only when its length
/// and first letter could make it one of the words.
fn steps_outside(sql: &str) -> bool {
    let bytes = sql.as_bytes();
    let script = bytes.contains(&b';');
    for (index, (start, end)) in words(sql).enumerate() {
        let word = &bytes[start..end];
        let candidate = (3..=9).contains(&word.len())
            && matches!(
                word[0].to_ascii_lowercase(),
                b'a' | b'b' | b'c' | b'd' | b'e' | b'p' | b'r' | b's' | b'v'
            );
        if candidate {
            if OUTSIDE_WORDS
                .iter()
                .any(|w| word.eq_ignore_ascii_case(w.as_bytes()))
            {
                return true;
            }
            if word.eq_ignore_ascii_case(b"end") && (index == 0 || script) {
                return true;
            }
        }
    }
    false
}

/// Whether a byte can be part of a word of SQL (a keyword, a name, a number).
fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// Where the words of SQL are, as byte ranges: runs of ASCII letters, digits and `_`, quoted
/// text included (callers that only need to be conservative read them all).
fn words(sql: &str) -> impl Iterator<Item = (usize, usize)> + '_ {
    let bytes = sql.as_bytes();
    let mut at = 0;
    std::iter::from_fn(move || {
        while at < bytes.len() && !is_word_byte(bytes[at]) {
            at += 1;
        }
        if at == bytes.len() {
            return None;
        }
        let start = at;
        while at < bytes.len() && is_word_byte(bytes[at]) {
            at += 1;
        }
        Some((start, at))
    })
}

/// A savepoint statement on its own, as the host writes them: `SAVEPOINT name`,
/// `RELEASE [SAVEPOINT] name` or `ROLLBACK [TRANSACTION] TO [SAVEPOINT] name`.
#[derive(Debug, PartialEq)]
enum SavepointStatement<'a> {
    Open(&'a str),
    Release(&'a str),
    RollbackTo(&'a str),
}

fn savepoint_statement(sql: &str) -> Option<SavepointStatement<'_>> {
    let mut words = sql.split_ascii_whitespace();
    let word =
        |w: Option<&str>, expected: &str| w.is_some_and(|w| w.eq_ignore_ascii_case(expected));
    let first = words.next()?;
    let mut rest: Vec<&str> = words.collect();
    let name = rest.pop()?;
    if !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        return None;
    }
    let mut rest = rest.into_iter();
    let statement = if first.eq_ignore_ascii_case("savepoint") {
        SavepointStatement::Open(name)
    } else if first.eq_ignore_ascii_case("release") {
        let mut next = rest.next();
        if word(next, "savepoint") {
            next = rest.next();
        }
        if next.is_some() {
            return None;
        }
        SavepointStatement::Release(name)
    } else if first.eq_ignore_ascii_case("rollback") {
        let mut next = rest.next();
        if word(next, "transaction") {
            next = rest.next();
        }
        if !word(next, "to") {
            return None;
        }
        next = rest.next();
        if word(next, "savepoint") {
            next = rest.next();
        }
        if next.is_some() {
            return None;
        }
        SavepointStatement::RollbackTo(name)
    } else {
        return None;
    };
    match statement {
        SavepointStatement::Open(_) if rest.next().is_some() => None,
        statement => Some(statement),
    }
}

/// SQL on one line, as traces and messages show it.
pub fn one_line(sql: &str) -> String {
    without_line_comments(sql)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// `sql` with each `-- comment` written `/* comment */`, so that on one line it still ends where
/// its line did instead of seeming to comment out the rest of the statement. Quoted text
/// (`'…'`, `"…"`, `` `…` ``, `[…]`) and block comments are left as they are.
fn without_line_comments(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        let close = match c {
            '\'' | '"' | '`' => Some(c),
            '[' => Some(']'),
            _ => None,
        };
        if let Some(close) = close {
            out.push(c);
            for inner in chars.by_ref() {
                out.push(inner);
                if inner == close {
                    break;
                }
            }
        } else if c == '/' && chars.peek() == Some(&'*') {
            out.push(c);
            let mut previous = ' ';
            for inner in chars.by_ref() {
                out.push(inner);
                if previous == '*' && inner == '/' {
                    break;
                }
                previous = inner;
            }
        } else if c == '-' && chars.peek() == Some(&'-') {
            chars.next();
            let comment: String = chars.by_ref().take_while(|&n| n != '\n').collect();
            out.push_str(&format!(
                "/*{} */\n",
                comment.trim_end().replace("*/", "* /")
            ));
        } else {
            out.push(c);
        }
    }
    out
}

/// D1 and a Durable Object's SQL storage enforce foreign keys (D1's docs: "by default, as if
/// `PRAGMA foreign_keys = on`"). Outside a transaction only: inside one the pragma does nothing.
fn enforce_foreign_keys(connection: &Connection) -> rusqlite::Result<()> {
    connection.execute_batch("PRAGMA foreign_keys = ON")
}

/// An empty database as D1 and a Durable Object's storage start.
fn fresh_connection() -> rusqlite::Result<Connection> {
    use_simulation_clock();
    let connection = Connection::open_in_memory()?;
    // D1's page size (SQLite's default); the wasm build of SQLite defaults to 8 KiB pages,
    // which doubles what the run's transaction journals for every page it first writes.
    connection.execute_batch("PRAGMA page_size = 4096")?;
    enforce_foreign_keys(&connection)?;
    Ok(connection)
}

fn execute_cached(connection: &Connection, sql: &str) -> rusqlite::Result<()> {
    connection.prepare_cached(sql)?.execute([]).map(|_| ())
}

#[derive(Default)]
pub struct Databases {
    databases: BTreeMap<String, Database>,
    /// Databases opened during earlier runs, closed for this one until it opens them again.
    kept: BTreeMap<String, Database>,
    /// Tests compare kept stores with stores opened afresh in every run, as before.
    #[cfg(test)]
    fresh_every_run: bool,
    sealed: bool,
    /// The Worker statements `Database::authorize` let run, each judged once for the check.
    allowed: HashSet<String>,
}

impl Databases {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn is_sealed(&self) -> bool {
        self.sealed
    }

    pub fn contains(&self, name: &str) -> bool {
        self.databases.contains_key(name)
    }

    /// Opens a database; opening it again is harmless. Before `seal` it is set up and sealed
    /// with the others; after, it starts empty and lasts until the run ends.
    pub fn open(&mut self, name: &str) -> Result<()> {
        self.open_labeled(name, None)
    }

    /// `open`, with how traces name the database (see `Database::label`); a label given when
    /// the database is already open replaces its own.
    pub fn open_labeled(&mut self, name: &str, label: Option<&str>) -> Result<()> {
        if let Some(database) = self.databases.get_mut(name) {
            if let Some(label) = label {
                database.label = Some(label.to_string());
            }
            return Ok(());
        }
        let cannot =
            |e: rusqlite::Error| Error::new(format!("cannot open D1 database '{name}': {e}"));
        let mut database = if let Some(mut database) = self.kept.remove(name) {
            reuse::draw_as_open();
            database.label = label.map(str::to_string);
            self.databases.insert(name.to_string(), database);
            return Ok(());
        } else if self.sealed && !self.opens_fresh() {
            let connection = reuse::opening(fresh_connection).map_err(cannot)?;
            Database::run_scoped(connection).map_err(cannot)?
        } else {
            Database::new(fresh_connection().map_err(cannot)?).map_err(cannot)?
        };
        // Only a Durable Object's store is named by the host (see `Databases::shown`).
        database.sized = label.is_none();
        database.label = label.map(str::to_string);
        self.databases.insert(name.to_string(), database);
        Ok(())
    }

    #[cfg(test)]
    fn opens_fresh(&self) -> bool {
        self.fresh_every_run
    }

    #[cfg(not(test))]
    fn opens_fresh(&self) -> bool {
        false
    }

    /// How traces name database `name`: the label the host gave it, else `D1 <name>`.
    pub fn shown(&self, name: &str) -> String {
        match self.databases.get(name).and_then(|d| d.label.as_deref()) {
            Some(label) => label.to_string(),
            None => format!("D1 {name}"),
        }
    }

    /// Runs a setup script (schema and seed rows). An error names the statement, counting
    /// from 1, and carries SQLite's message: `statement 2: near "CREAT": syntax error`; it
    /// says where in `sql` that is too (see `SetupError`).
    /// A database opened during a run can be set up too, until the run ends.
    pub fn setup(&mut self, name: &str, sql: &str) -> std::result::Result<(), SetupError> {
        self.database_mut(name)?.go_live(name)?;
        let database = self.database(name)?;
        if database.snapshot.is_some() {
            return Err(Error::new(format!(
                "cannot set up D1 database '{name}' after setup is sealed"
            ))
            .into());
        }
        // D1 applies a file as one batch, one transaction (`wrangler d1 execute` and `wrangler
        // d1 migrations apply` send it so): `PRAGMA foreign_keys = off` changes nothing there,
        // and `PRAGMA defer_foreign_keys = on` lets a row refer to one a later statement of the
        // file inserts, checked when the file commits. A database opened during a run is inside
        // the run's transaction already, so the file is a savepoint there.
        let connection = &database.connection;
        let outermost = connection.is_autocommit();
        let (open, close, undo) = if outermost {
            ("BEGIN", "COMMIT", "ROLLBACK")
        } else {
            (
                "SAVEPOINT eutaxy_setup",
                "RELEASE eutaxy_setup",
                "ROLLBACK TO eutaxy_setup; RELEASE eutaxy_setup",
            )
        };
        let cannot =
            |e: rusqlite::Error| Error::new(format!("cannot set up D1 database '{name}': {e}"));
        connection.execute_batch(open).map_err(cannot)?;
        let applied = run_setup_script(connection, sql).map_err(|(statement, offset, e)| {
            let message = match &e {
                StatementError::Sqlite(e) | StatementError::Unprepared(e, _) => message(e),
                StatementError::Message(m) => m.clone(),
            };
            SetupError {
                error: Error::new(format!("statement {statement}: {message}")),
                at: Some(script::position(sql, offset)),
            }
        });
        let committed = applied.and_then(|()| {
            connection.execute_batch(close).map_err(|e| SetupError {
                error: Error::new(format!(
                    "{} as the file's transaction commits: a row its PRAGMA defer_foreign_keys \
                     let through still refers to none",
                    message(&e)
                )),
                at: None,
            })
        });
        if committed.is_err() {
            connection.execute_batch(undo).map_err(cannot)?;
        }
        committed
    }

    /// Snapshots every database; from now on `restore` returns to this state.
    pub fn seal(&mut self) -> Result<()> {
        for (name, database) in &mut self.databases {
            let data = database
                .connection
                .serialize(MAIN_DB)
                .map_err(|e| Error::new(format!("cannot snapshot D1 database '{name}': {e}")))?;
            database.snapshot = Some(data.to_vec());
            database.rollback_safe = !schema_needs_own_transactions(&database.connection)
                .map_err(|e| Error::new(format!("cannot read D1 database '{name}': {e}")))?;
        }
        self.sealed = true;
        Ok(())
    }

    /// Seeds SQLite's own PRNG (`random()`, `randomblob()`), which is global to the library.
    /// Seeded, SQLite never asks the platform for entropy, so a run's SQL draws the same
    /// numbers on every replay.
    pub fn reseed(&mut self, seed: u64) {
        // Only the low 32 bits reach SQLite; the fold keeps both halves of the seed in them.
        // Seed 0 would tell SQLite to seed itself from the platform's randomness on next use
        // (a replay of run seed 0000000000000000 or ffffffffffffffff asked the host for entropy
        // in the middle of a statement), so it becomes another fixed seed.
        let folded = match (seed ^ (seed >> 32)) as u32 {
            0 => PRNG_SEED_FOR_ZERO,
            folded => folded,
        } as c_int;
        // SAFETY: SQLITE_TESTCTRL_PRNG_SEED takes an int and a database handle that may be
        // null; it only writes SQLite's global PRNG state, and runs are single-threaded.
        unsafe {
            sqlite3_test_control(
                SQLITE_TESTCTRL_PRNG_SEED,
                folded,
                std::ptr::null_mut::<c_void>(),
            );
        }
    }

    /// Brings every sealed database back to its sealed state and drops the databases opened
    /// during the last run.
    pub fn restore(&mut self) -> Result<()> {
        assert!(self.sealed, "restore before seal");
        let opened: Vec<String> = self
            .databases
            .iter()
            .filter(|(_, database)| database.snapshot.is_none())
            .map(|(name, _)| name.clone())
            .collect();
        for name in opened {
            let Some(mut database) = self.databases.remove(&name) else {
                continue;
            };
            if database.end_run() && self.kept.len() < reuse::KEPT_MAX && reuse::can_keep() {
                self.kept.insert(name, database);
            }
        }
        for (name, database) in &mut self.databases {
            database.restore(name)?;
        }
        Ok(())
    }

    /// Checks that `sql` is one statement that only reads, as an invariant's query must be.
    pub fn check_query(&self, name: &str, sql: &str) -> Result<()> {
        let connection = &self.database(name)?.connection;
        if sql.trim().is_empty() {
            return Err(Error::new("the query is empty"));
        }
        let statement = connection.prepare(sql).map_err(|e| match e {
            rusqlite::Error::MultipleStatement => {
                Error::new("the query must be a single statement")
            }
            e => Error::new(format!("the query does not prepare: {}", message(&e))),
        })?;
        if statement.parameter_count() > 0 {
            return Err(Error::new("the query must not take parameters"));
        }
        if !statement.readonly() {
            return Err(Error::new("the query must only read"));
        }
        Ok(())
    }

    /// The tables `sql` reads and writes in database `name` (see `footprint.rs`).
    pub fn footprint(&self, name: &str, sql: &str) -> Result<Vec<crate::strategy::Access>> {
        crate::footprint::footprint(&self.database(name)?.connection, name, sql)
    }

    /// Runs one of the engine's own statements. Errors read as D1 shows them after `D1_ERROR: `.
    pub fn run(&mut self, name: &str, sql: &str, params: &[Value]) -> Result<RawResult> {
        self.run_as(name, sql, params, Source::Engine)
    }

    /// Runs one statement of `source`. A Worker's is judged first, and a pragma of its runs in
    /// a transaction of its own, as D1 runs every query: `PRAGMA foreign_keys = off` changes
    /// nothing there, and `defer_foreign_keys` lasts the statement.
    pub fn run_as(
        &mut self,
        name: &str,
        sql: &str,
        params: &[Value],
        source: Source,
    ) -> Result<RawResult> {
        let (database, allowed) = self.database_and_allowed(name)?;
        let mut recording = false;
        if let Some(reuse) = &mut database.reuse {
            if let Some(result) = reuse.replay(source, sql, params) {
                return Ok(result);
            }
            recording =
                reuse.phase == Phase::Recording && !steps_outside(sql) && reuse::repeatable(sql);
            if !recording {
                database.go_live(name)?;
            }
        }
        if source == Source::Worker {
            if let Err(e) = database.authorize(sql, allowed) {
                // A refused statement touches nothing; the next one is not the prefix's.
                if recording {
                    database.go_live(name)?;
                }
                return Err(e);
            }
        }
        let outside = database.before(sql)?;
        let own = source == Source::Worker && outside && database.connection.is_autocommit();
        let sized = source == Source::Worker && database.sized;
        let (prng_before, total_before) = if recording {
            (reuse::prng_peek(), database.connection.total_changes())
        } else {
            (Vec::new(), 0)
        };
        let result = in_own_transaction(
            &database.connection,
            own,
            || run_statement(&database.connection, sql, params, &mut database.size, sized),
            StatementError::Sqlite,
        )?;
        database.after();
        if recording {
            let Database {
                connection, reuse, ..
            } = database;
            let reuse = reuse.as_mut().expect("recording a run-scoped database");
            match &result {
                // A statement that drew randomness answers otherwise in another run.
                Ok(ran) if reuse::prng_peek() == prng_before => {
                    reuse.record(source, sql, params, ran, connection);
                }
                Ok(_) => reuse.spoiled = true,
                // A failed statement may have kept rows it changed (`OR FAIL`).
                Err(_) => reuse.spoiled = connection.total_changes() != total_before,
            }
            if reuse.phase == Phase::Recording && (result.is_err() || reuse.spoiled) {
                database.go_live(name)?;
            }
        }
        result.map_err(|e| Error::new(d1_message(&e)))
    }

    /// Runs the engine's statements as one transaction (see `batch_as`).
    pub fn batch(&mut self, name: &str, statements: &[Statement]) -> Result<Vec<RawResult>> {
        self.batch_as(name, statements, Source::Engine)
    }

    /// Runs statements as one transaction: the first error rolls all of them back, and the
    /// message says which statement failed, counting from 1. A Worker's are judged first.
    pub fn batch_as(
        &mut self,
        name: &str,
        statements: &[Statement],
        source: Source,
    ) -> Result<Vec<RawResult>> {
        if statements.len() > STATEMENTS_MAX {
            return Err(Error::new(format!(
                "a batch may hold at most {STATEMENTS_MAX} statements"
            )));
        }
        let (database, allowed) = self.database_and_allowed(name)?;
        database.go_live(name)?;
        if source == Source::Worker {
            for (index, statement) in statements.iter().enumerate() {
                database
                    .authorize(&statement.sql, allowed)
                    .map_err(|e| Error::new(format!("statement {}: {e}", index + 1)))?;
            }
        }
        for statement in statements {
            database.before(&statement.sql)?;
        }
        let sized = source == Source::Worker && database.sized;
        let result = run_batch(&database.connection, statements, &mut database.size, sized);
        database.after();
        result
    }

    /// Runs a script of the engine's own (see `exec_as`).
    pub fn exec(&mut self, name: &str, sql: &str) -> Result<u64> {
        self.exec_as(name, sql, Source::Engine)
    }

    /// Runs a script of statements without a transaction, as D1's `exec` does, and returns how
    /// many ran. A Worker's statements are judged as each is prepared, and a script of its that
    /// steps outside the run's transaction runs in a transaction of its own.
    pub fn exec_as(&mut self, name: &str, sql: &str, source: Source) -> Result<u64> {
        let database = self.database_mut(name)?;
        database.go_live(name)?;
        let worker = source == Source::Worker;
        let outside = database.before(sql)?;
        let own = worker && outside && database.connection.is_autocommit();
        let refused = authorize::Refused::default();
        let connection = &database.connection;
        let judging = |on: bool| {
            if on {
                authorize::install(connection, &refused)
            } else {
                authorize::uninstall(connection)
            }
            .map_err(|e| {
                (
                    0,
                    StatementError::Message(format!("cannot judge a statement: {e}")),
                )
            })
        };
        // Judged inside the script's own transaction: BEGIN and COMMIT are the engine's.
        let result = in_own_transaction(
            connection,
            own,
            || {
                if worker {
                    judging(true)?;
                }
                let ran = run_script(connection, sql, worker);
                if worker {
                    judging(false)?;
                }
                ran
            },
            |e| (0, StatementError::Sqlite(e)),
        )?;
        database.size.bytes = None;
        database.after();
        result.map_err(|(statement, e)| {
            let message = authorize::take(&refused).map_or_else(|| d1_message(&e), str::to_string);
            Error::new(format!("statement {statement}: {message}"))
        })
    }

    fn database(&self, name: &str) -> Result<&Database> {
        self.databases.get(name).ok_or_else(|| no_database(name))
    }

    fn database_mut(&mut self, name: &str) -> Result<&mut Database> {
        self.databases
            .get_mut(name)
            .ok_or_else(|| no_database(name))
    }

    /// The database `name` and the memory of allowed Worker statements, borrowed together.
    fn database_and_allowed(
        &mut self,
        name: &str,
    ) -> Result<(&mut Database, &mut HashSet<String>)> {
        let database = self
            .databases
            .get_mut(name)
            .ok_or_else(|| no_database(name))?;
        Ok((database, &mut self.allowed))
    }
}

fn no_database(name: &str) -> Error {
    Error::new(format!("no D1 database named '{name}'"))
}

/// Runs `work`, in a transaction of its own when `own`: a Worker's pragma or script that steps
/// outside the run's transaction runs in one, as D1 runs every query. A failed COMMIT or
/// ROLLBACK becomes `work`'s error through `end_failed`.
fn in_own_transaction<T, E>(
    connection: &Connection,
    own: bool,
    work: impl FnOnce() -> std::result::Result<T, E>,
    end_failed: impl FnOnce(rusqlite::Error) -> E,
) -> Result<std::result::Result<T, E>> {
    if own {
        execute_cached(connection, "BEGIN").map_err(|e| Error::new(e.to_string()))?;
    }
    let result = work();
    if !own || connection.is_autocommit() {
        return Ok(result);
    }
    let end = if result.is_ok() { "COMMIT" } else { "ROLLBACK" };
    Ok(match execute_cached(connection, end) {
        Ok(()) => result,
        Err(e) => result.and(Err(end_failed(e))),
    })
}

/// Bound parameters as the host sends them, one string: per value `n` (NULL), `i<integer>;`,
/// `r<number>;` or `t<length>:<text>`, the length in UTF-16 units (JavaScript's `length`).
/// JavaScript writes a number as the shortest decimal that reads back as the same number, so
/// `r` gives the REAL it was. `None` if `encoded` is not that.
pub fn decode_params(encoded: &str) -> Option<Vec<Value>> {
    let bytes = encoded.as_bytes();
    let mut values = Vec::new();
    let mut at = 0;
    while let Some(&tag) = bytes.get(at) {
        at += 1;
        let until = |at: usize, end: u8| bytes[at..].iter().position(|&b| b == end).map(|n| at + n);
        match tag {
            b'n' => values.push(Value::Null),
            b'i' | b'r' => {
                let end = until(at, b';')?;
                let number = &encoded[at..end];
                values.push(if tag == b'i' {
                    Value::Integer(number.parse().ok()?)
                } else {
                    Value::Real(number.parse().ok()?)
                });
                at = end + 1;
            }
            b't' => {
                let colon = until(at, b':')?;
                let units: usize = encoded[at..colon].parse().ok()?;
                let start = colon + 1;
                let mut end = start;
                let mut counted = 0;
                let mut chars = encoded[start..].chars();
                while counted < units {
                    let c = chars.next()?;
                    counted += c.len_utf16();
                    end += c.len_utf8();
                }
                if counted != units {
                    return None;
                }
                values.push(Value::Text(encoded[start..end].to_owned()));
                at = end;
            }
            _ => return None,
        }
    }
    Some(values)
}

/// Whether the schema mentions rolling back or deferring (see `Database::rollback_safe`).
fn schema_needs_own_transactions(connection: &Connection) -> rusqlite::Result<bool> {
    let mut statement =
        connection.prepare("SELECT sql FROM sqlite_schema WHERE sql IS NOT NULL")?;
    let mut rows = statement.query([])?;
    while let Some(row) = rows.next()? {
        let sql: String = row.get(0)?;
        let needs = sql
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .any(|word| {
                word.eq_ignore_ascii_case("rollback") || word.eq_ignore_ascii_case("deferred")
            });
        if needs {
            return Ok(true);
        }
    }
    Ok(false)
}

fn run_batch(
    connection: &Connection,
    statements: &[Statement],
    size: &mut SizeCache,
    sized: bool,
) -> Result<Vec<RawResult>> {
    // Cached statements rather than rusqlite's `Savepoint`, which prepares its statements
    // afresh every time: a Durable Object's storage writes are batches.
    let failed = |e: rusqlite::Error| Error::new(d1_message(&StatementError::Sqlite(e)));
    execute_cached(connection, "SAVEPOINT _eutaxy_batch").map_err(failed)?;
    let mut results = Vec::with_capacity(statements.len());
    for (index, statement) in statements.iter().enumerate() {
        match run_statement(connection, &statement.sql, &statement.params, size, sized) {
            Ok(result) => results.push(result),
            Err(e) => {
                size.bytes = None;
                // Nothing to undo if SQLite already rolled the transaction back.
                let _ = execute_cached(connection, "ROLLBACK TO _eutaxy_batch")
                    .and_then(|()| execute_cached(connection, "RELEASE _eutaxy_batch"));
                return Err(Error::new(format!(
                    "statement {}: {}",
                    index + 1,
                    d1_message(&e)
                )));
            }
        }
    }
    execute_cached(connection, "RELEASE _eutaxy_batch").map_err(failed)?;
    Ok(results)
}

/// A setup script that failed: the engine's message, and where in the script it failed (the
/// token SQLite blames, or the failing statement's first token), so that the host can name
/// the line of the user's schema file. `at` is `None` when no statement ran (an unknown or
/// sealed database).
#[derive(Debug)]
pub struct SetupError {
    pub error: Error,
    pub at: Option<Position>,
}

impl SetupError {
    pub fn message(&self) -> &str {
        self.error.message()
    }
}

impl From<Error> for SetupError {
    fn from(error: Error) -> Self {
        SetupError { error, at: None }
    }
}

enum StatementError {
    Sqlite(rusqlite::Error),
    /// A statement that did not prepare, with the byte of its text where SQLite stopped.
    Unprepared(rusqlite::Error, usize),
    /// An error of our own, already worded for the user.
    Message(String),
}

impl From<rusqlite::Error> for StatementError {
    fn from(e: rusqlite::Error) -> Self {
        StatementError::Sqlite(e)
    }
}

/// Why a statement did not prepare, with where in its text SQLite stopped when it says
/// (`sqlite3_error_offset`: a syntax error, a name it could not resolve), which workerd adds to
/// the message (`near "SELEC": syntax error at offset 0`).
fn unprepared(connection: &Connection, error: rusqlite::Error) -> StatementError {
    // SAFETY: the connection's own handle, read right after its failed prepare, on the thread
    // that owns the connection; the call only reads the error state.
    let offset = unsafe { rusqlite::ffi::sqlite3_error_offset(connection.handle()) };
    match usize::try_from(offset) {
        Ok(offset) => StatementError::Unprepared(error, offset),
        Err(_) => StatementError::Sqlite(error),
    }
}

fn run_statement(
    connection: &Connection,
    sql: &str,
    params: &[Value],
    size: &mut SizeCache,
    sized: bool,
) -> std::result::Result<RawResult, StatementError> {
    if sql.trim().is_empty() {
        return Err(StatementError::Message(
            "No SQL statements detected.".into(),
        ));
    }
    let mut statement = connection.prepare_cached(sql).map_err(|e| match e {
        rusqlite::Error::MultipleStatement => StatementError::Message(
            "A prepared SQL statement must contain only one statement.".into(),
        ),
        e => unprepared(connection, e),
    })?;
    if statement.parameter_count() != params.len() {
        return Err(StatementError::Message(format!(
            "Wrong number of parameter bindings for SQL query: the statement takes {}, {} given",
            statement.parameter_count(),
            params.len()
        )));
    }
    for (index, value) in params.iter().enumerate() {
        statement.raw_bind_parameter(index + 1, value)?;
    }
    let readonly = statement.readonly();
    // A statement may change the schema and no row (`CREATE`, `DROP`, `ALTER`): D1 says it
    // changed the database only if the schema did (`CREATE TABLE IF NOT EXISTS` may not).
    let schema_before = if readonly || !changes_schema(sql) {
        None
    } else {
        Some(schema_version(connection)?)
    };
    let total_changes_before = connection.total_changes();
    let mut rows: Vec<Vec<Value>> = Vec::new();
    {
        let mut cursor = statement.raw_query();
        while let Some(row) = cursor.next()? {
            if rows.len() >= ROWS_PER_STATEMENT_MAX {
                return Err(StatementError::Message(format!(
                    "the statement returned more than {ROWS_PER_STATEMENT_MAX} rows"
                )));
            }
            let width = row.as_ref().column_count();
            let mut values = Vec::with_capacity(width);
            for index in 0..width {
                values.push(Value::from(row.get_ref(index)?));
            }
            rows.push(values);
        }
    }
    // Read after stepping: a cached statement compiled before a schema change re-prepares
    // itself at its first step, and only then names the current columns.
    let columns: Vec<String> = statement
        .column_names()
        .iter()
        .map(|c| c.to_string())
        .collect();
    // D1 counts the rows triggers and foreign key actions changed too: the connection's total
    // before and after, not sqlite3_changes (the statement's own rows, kept after a SELECT).
    let changes = connection.total_changes() - total_changes_before;
    let changed = changes > 0;
    let schema_changed = match schema_before {
        Some(before) => schema_version(connection)? != before,
        None => false,
    };
    let rows_returned = rows.len() as u64;
    Ok(RawResult {
        columns,
        rows,
        changes,
        last_row_id: connection.last_insert_rowid(),
        rows_read: rows_returned + changes,
        rows_written: changes,
        size_after: size.after(connection, readonly && !changed, sized)?,
        changed_db: changed || schema_changed,
    })
}

/// Whether a statement is one that changes the schema, by its first word.
fn changes_schema(sql: &str) -> bool {
    let word = authorize::first_word(sql);
    ["create", "drop", "alter"]
        .iter()
        .any(|w| word.eq_ignore_ascii_case(w))
}

/// SQLite's schema cookie, which every change of the schema bumps.
fn schema_version(connection: &Connection) -> rusqlite::Result<i64> {
    connection.query_row("PRAGMA schema_version", [], |row| row.get(0))
}

/// Runs every statement of `sql`; on error returns the failing statement's number, from 1.
fn run_script(
    connection: &Connection,
    sql: &str,
    worker: bool,
) -> std::result::Result<u64, (u64, StatementError)> {
    let mut batch = Batch::new(connection, sql);
    let mut count: u64 = 0;
    loop {
        let next = batch
            .next()
            .map_err(|e| (count + 1, unprepared(connection, e)))?;
        let Some(mut statement) = next else {
            return Ok(count);
        };
        count += 1;
        if count > STATEMENTS_MAX as u64 {
            let message = format!("a script may hold at most {STATEMENTS_MAX} statements");
            return Err((count, StatementError::Message(message)));
        }
        if worker
            && statement
                .expanded_sql()
                .is_some_and(|text| authorize::first_word(&text).eq_ignore_ascii_case("vacuum"))
        {
            let message = authorize::VACUUM_REFUSED.to_string();
            return Err((count, StatementError::Message(message)));
        }
        let mut rows = statement.raw_query();
        while rows.next().map_err(|e| (count, e.into()))?.is_some() {}
    }
}

/// Runs a setup script as `run_script` runs a Worker's, knowing where each statement is: a
/// failure gives the statement's number, the byte offset in `sql` to point at (the token
/// SQLite blames, or else the statement's first token), and the error. It compiles each
/// statement twice (once to learn where it ends), which setup, done once a check, can afford.
/// The first words of the statements that manage a transaction, which D1 refuses in a file.
const SETUP_TRANSACTION_WORDS: [&str; 6] =
    ["BEGIN", "COMMIT", "END", "ROLLBACK", "SAVEPOINT", "RELEASE"];

fn run_setup_script(
    connection: &Connection,
    sql: &str,
) -> std::result::Result<(), (u64, usize, StatementError)> {
    let mut start = 0;
    let mut count: u64 = 0;
    loop {
        let length = match script::first_statement(connection, &sql[start..]) {
            Ok(None) => return Ok(()),
            Ok(Some(length)) => length,
            Err(e) => {
                let blamed = e.offset.map(|offset| start + offset);
                let at = blamed
                    .filter(|&at| sql.is_char_boundary(at))
                    .unwrap_or_else(|| script::first_token(sql, start));
                return Err((count + 1, at, e.error.into()));
            }
        };
        assert!(length > 0, "a statement SQLite compiled has no text");
        let end = start + length;
        let at = script::first_token(sql, start);
        count += 1;
        // The file is one transaction, which D1 lets no statement of it open, end or nest.
        let word = authorize::first_word(&sql[start..end]);
        if SETUP_TRANSACTION_WORDS
            .iter()
            .any(|w| w.eq_ignore_ascii_case(word))
        {
            let message = format!(
                "{} (D1 applies a file in a transaction of its own, as wrangler d1 execute and \
                 wrangler d1 migrations apply do)",
                authorize::TRANSACTION_REFUSED
            );
            return Err((count, at, StatementError::Message(message)));
        }
        if count > STATEMENTS_MAX as u64 {
            let message = format!("a script may hold at most {STATEMENTS_MAX} statements");
            return Err((count, at, StatementError::Message(message)));
        }
        let mut statement = connection
            .prepare(&sql[start..end])
            .map_err(|e| (count, at, unprepared(connection, e)))?;
        let mut rows = statement.raw_query();
        while rows.next().map_err(|e| (count, at, e.into()))?.is_some() {}
        start = end;
    }
}

/// SQLite's own message, without the code.
fn message(error: &rusqlite::Error) -> String {
    match error {
        rusqlite::Error::SqliteFailure(_, Some(message)) => message.clone(),
        // rusqlite appends the SQL and the offset to syntax errors when it links a modern SQLite
        // natively (its `modern_sqlite` feature); D1 shows SQLite's words only.
        #[cfg(not(target_arch = "wasm32"))]
        rusqlite::Error::SqlInputError { msg, .. } => msg.clone(),
        rusqlite::Error::SqliteFailure(failure, None) => failure.to_string(),
        other => other.to_string(),
    }
}

/// The message as D1 shows it after `D1_ERROR: `: SQLite's message, where in the statement's
/// text it stopped when the statement did not prepare (`near "SELEC": syntax error at offset
/// 0: SQLITE_ERROR`), the primary result code's name and, as workerd adds it, the extended
/// code's name when there is one:
/// `UNIQUE constraint failed: charges.id: SQLITE_CONSTRAINT (extended: SQLITE_CONSTRAINT_PRIMARYKEY)`.
fn d1_message(error: &StatementError) -> String {
    let (e, at) = match error {
        StatementError::Message(message) => return message.clone(),
        StatementError::Sqlite(e) => (e, String::new()),
        StatementError::Unprepared(e, offset) => (e, format!(" at offset {offset}")),
    };
    let extended_code = match e {
        rusqlite::Error::SqliteFailure(failure, _) => failure.extended_code,
        #[cfg(not(target_arch = "wasm32"))]
        rusqlite::Error::SqlInputError { error, .. } => error.extended_code,
        _ => return format!("{}{at}", message(e)),
    };
    let primary = code_name(extended_code);
    match extended_name(extended_code) {
        Some(extended) => format!("{}{at}: {primary} (extended: {extended})", message(e)),
        None => format!("{}{at}: {primary}", message(e)),
    }
}

/// The name of an SQLite extended result code a statement can fail with, for those that are
/// not a primary code alone (the constraint kinds above all, which a Worker may tell apart).
fn extended_name(extended_code: i32) -> Option<&'static str> {
    Some(match extended_code {
        257 => "SQLITE_ERROR_MISSING_COLLSEQ",
        513 => "SQLITE_ERROR_RETRY",
        769 => "SQLITE_ERROR_SNAPSHOT",
        516 => "SQLITE_ABORT_ROLLBACK",
        275 => "SQLITE_CONSTRAINT_CHECK",
        531 => "SQLITE_CONSTRAINT_COMMITHOOK",
        787 => "SQLITE_CONSTRAINT_FOREIGNKEY",
        1043 => "SQLITE_CONSTRAINT_FUNCTION",
        1299 => "SQLITE_CONSTRAINT_NOTNULL",
        1555 => "SQLITE_CONSTRAINT_PRIMARYKEY",
        1811 => "SQLITE_CONSTRAINT_TRIGGER",
        2067 => "SQLITE_CONSTRAINT_UNIQUE",
        2323 => "SQLITE_CONSTRAINT_VTAB",
        2579 => "SQLITE_CONSTRAINT_ROWID",
        2835 => "SQLITE_CONSTRAINT_PINNED",
        3091 => "SQLITE_CONSTRAINT_DATATYPE",
        _ => return None,
    })
}

/// The name of an SQLite primary result code (the low byte of an extended code).
pub fn code_name(extended_code: i32) -> &'static str {
    match extended_code & 0xff {
        0 => "SQLITE_OK",
        1 => "SQLITE_ERROR",
        2 => "SQLITE_INTERNAL",
        3 => "SQLITE_PERM",
        4 => "SQLITE_ABORT",
        5 => "SQLITE_BUSY",
        6 => "SQLITE_LOCKED",
        7 => "SQLITE_NOMEM",
        8 => "SQLITE_READONLY",
        9 => "SQLITE_INTERRUPT",
        10 => "SQLITE_IOERR",
        11 => "SQLITE_CORRUPT",
        12 => "SQLITE_NOTFOUND",
        13 => "SQLITE_FULL",
        14 => "SQLITE_CANTOPEN",
        15 => "SQLITE_PROTOCOL",
        16 => "SQLITE_EMPTY",
        17 => "SQLITE_SCHEMA",
        18 => "SQLITE_TOOBIG",
        19 => "SQLITE_CONSTRAINT",
        20 => "SQLITE_MISMATCH",
        21 => "SQLITE_MISUSE",
        22 => "SQLITE_NOLFS",
        23 => "SQLITE_AUTH",
        24 => "SQLITE_FORMAT",
        25 => "SQLITE_RANGE",
        26 => "SQLITE_NOTADB",
        27 => "SQLITE_NOTICE",
        28 => "SQLITE_WARNING",
        100 => "SQLITE_ROW",
        101 => "SQLITE_DONE",
        _ => "SQLITE_UNKNOWN",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCHEMA: &str = "CREATE TABLE charges (id INTEGER PRIMARY KEY, order_id TEXT, \
                          idempotency_key TEXT UNIQUE, amount REAL, receipt BLOB);\n\
                          INSERT INTO charges (order_id, idempotency_key) VALUES ('o-1', 'k-1');";

    fn sealed() -> Databases {
        let mut databases = Databases::new();
        databases.open("payments/DB").unwrap();
        databases.setup("payments/DB", SCHEMA).unwrap();
        databases.seal().unwrap();
        databases
    }

    fn count(databases: &mut Databases) -> Value {
        let result = databases
            .run("payments/DB", "SELECT COUNT(*) FROM charges", &[])
            .unwrap();
        result.rows[0][0].clone()
    }

    #[test]
    fn decodes_the_parameters_the_host_encodes() {
        let values = decode_params("nt3:o-1i-42;r0.1;r1e+21;t0:i9007199254740992;").unwrap();
        assert_eq!(
            values,
            vec![
                Value::Null,
                Value::Text("o-1".into()),
                Value::Integer(-42),
                Value::Real(0.1),
                Value::Real(1e21),
                Value::Text(String::new()),
                Value::Integer(9_007_199_254_740_992),
            ]
        );
        // Lengths count UTF-16 units: "é" is one, "𝄞" two; a text may hold the tags themselves.
        assert_eq!(
            decode_params("t6:é𝄞;:nt1:x").unwrap(),
            vec![Value::Text("é𝄞;:n".into()), Value::Text("x".into())]
        );
        assert_eq!(decode_params("").unwrap(), vec![]);
    }

    #[test]
    fn refuses_what_the_host_does_not_encode() {
        for encoded in ["x", "i12", "t4:abc", "t:a", "r1.5", "iabc;", "t2:𝄞x"] {
            assert_eq!(decode_params(encoded), None, "{encoded}");
        }
    }

    #[test]
    fn setup_error_names_the_statement() {
        let mut databases = Databases::new();
        databases.open("DB").unwrap();
        let error = databases
            .setup("DB", "CREATE TABLE a (x);\nCREAT TABLE b (y);")
            .unwrap_err();
        assert_eq!(error.message(), "statement 2: near \"CREAT\": syntax error");
        assert_eq!(error.at, Some(Position { line: 2, column: 1 }));
    }

    /// The message a setup script fails with, and the line and column it names.
    fn setup_failure_at(sql: &str) -> (String, usize, usize) {
        let mut databases = Databases::new();
        databases.open("DB").unwrap();
        let error = databases.setup("DB", sql).unwrap_err();
        let at = error.at.expect("a position");
        (error.message().to_string(), at.line, at.column)
    }

    #[test]
    fn setup_error_says_where_in_the_script_it_is() {
        let at = |line, column, message: &str| (message.to_string(), line, column);
        // Comments (with semicolons), blank lines and empty statements before the statement.
        assert_eq!(
            setup_failure_at(
                "-- accounts; and charges\nCREATE TABLE a (x);\n\n/* next;\n   one */ ;\n\n  \
                 CREAT TABLE b (y);"
            ),
            at(7, 3, "statement 2: near \"CREAT\": syntax error")
        );
        // A semicolon in a string does not end a statement.
        assert_eq!(
            setup_failure_at(
                "CREATE TABLE a (x);\nINSERT INTO a VALUES ('a;b');\nINSERT INTO a VALUES ('c;d'),\n  (1 2);"
            ),
            at(4, 6, "statement 3: near \"2\": syntax error")
        );
        // Nor does one inside a trigger: the error is in the trigger's body, the third line.
        assert_eq!(
            setup_failure_at(
                "CREATE TABLE a (x);\nCREATE TRIGGER t AFTER INSERT ON a BEGIN\n  INSERT INTO a VALUES (1);\n  \
                 DELET FROM a;\nEND;"
            ),
            at(4, 3, "statement 2: near \"DELET\": syntax error")
        );
        // CRLF line endings.
        assert_eq!(
            setup_failure_at("CREATE TABLE a (x);\r\n\r\n-- b\r\nCREAT TABLE b (y);\r\n"),
            at(4, 1, "statement 2: near \"CREAT\": syntax error")
        );
        // A byte-order mark before the first line takes no column.
        assert_eq!(
            setup_failure_at("\u{feff}CREATE TABLE a (x); CREAT TABLE b (y);"),
            at(1, 21, "statement 2: near \"CREAT\": syntax error")
        );
        // A table not yet created: SQLite blames no token, so the statement's first one.
        assert_eq!(
            setup_failure_at("CREATE TABLE a (x);\n\n  -- index\n  CREATE INDEX i ON b (y);"),
            at(4, 3, "statement 2: no such table: main.b")
        );
        // A statement that fails as it runs, not as it is compiled.
        assert_eq!(
            setup_failure_at(
                "CREATE TABLE a (x UNIQUE);\nINSERT INTO a VALUES (1);\n\nINSERT INTO a VALUES (1);"
            ),
            at(4, 1, "statement 3: UNIQUE constraint failed: a.x")
        );
        // A statement cut short by the end of the file.
        assert_eq!(
            setup_failure_at("CREATE TABLE a (x);\nCREATE TABLE b (y"),
            at(2, 1, "statement 2: incomplete input")
        );
    }

    /// A setup file is one transaction, as D1 applies it (compared with Miniflare 4.20260426.0's
    /// D1, which `wrangler d1 execute --local` and `wrangler d1 migrations apply --local` use).
    #[test]
    fn setup_applies_a_file_as_one_transaction() {
        let mut databases = Databases::new();
        databases.open("DB").unwrap();
        let tables = "CREATE TABLE users (id TEXT PRIMARY KEY);\n\
                      CREATE TABLE orders (id TEXT PRIMARY KEY, user_id TEXT REFERENCES users(id));\n";
        databases.setup("DB", tables).unwrap();
        // `wrangler d1 export` starts a file so: a row may refer to one a later statement inserts.
        databases
            .setup(
                "DB",
                "PRAGMA defer_foreign_keys = on;\nINSERT INTO orders VALUES ('o1', 'u1');\n\
                 INSERT INTO users VALUES ('u1');",
            )
            .unwrap();
        // Turning foreign keys off does nothing inside it: a drizzle-kit migration that rebuilds
        // a table other rows refer to fails, as it does on D1.
        let (message, line, column) = setup_failure_at_after(
            &mut databases,
            "PRAGMA foreign_keys = OFF;\nCREATE TABLE users2 (id TEXT PRIMARY KEY);\nDROP TABLE users;",
        );
        assert_eq!(
            (message.as_str(), line, column),
            ("statement 3: FOREIGN KEY constraint failed", 3, 1)
        );
        // What failed left nothing behind: users2 is gone with it.
        let left = databases
            .run(
                "DB",
                "SELECT count(*) FROM sqlite_master WHERE name = 'users2'",
                &[],
            )
            .unwrap();
        assert_eq!(left.rows[0][0], Value::Integer(0));
        // A deferred reference still dangling when the file commits fails the file, at no statement.
        let error = databases
            .setup(
                "DB",
                "PRAGMA defer_foreign_keys = on;\nINSERT INTO orders VALUES ('o2', 'nobody');",
            )
            .unwrap_err();
        assert_eq!(error.at, None);
        assert!(
            error
                .message()
                .starts_with("FOREIGN KEY constraint failed as the file's transaction commits"),
            "{}",
            error.message()
        );
        let orders = databases
            .run("DB", "SELECT count(*) FROM orders", &[])
            .unwrap();
        assert_eq!(orders.rows[0][0], Value::Integer(1));
        // A statement that would open, end or nest a transaction is refused, as D1 refuses it.
        let (message, line, column) = setup_failure_at_after(
            &mut databases,
            "BEGIN TRANSACTION;\nCREATE TABLE t (x);\nCOMMIT;",
        );
        assert!(
            message.starts_with("statement 1: To execute a transaction, please use"),
            "{message}"
        );
        assert_eq!((line, column), (1, 1));
    }

    fn setup_failure_at_after(databases: &mut Databases, sql: &str) -> (String, usize, usize) {
        let error = databases.setup("DB", sql).unwrap_err();
        let at = error.at.expect("a position");
        (error.message().to_string(), at.line, at.column)
    }

    #[test]
    fn setup_error_without_a_statement_has_no_position() {
        let mut databases = Databases::new();
        let error = databases.setup("DB", "SELECT 1").unwrap_err();
        assert_eq!(error.at, None);
    }

    fn text(databases: &mut Databases, sql: &str) -> Value {
        databases.run("DB", sql, &[]).unwrap().rows[0][0].clone()
    }

    /// `changes()`, `total_changes()` and `last_insert_rowid()` as the run's statements read
    /// them: every run starts as a connection opened on the post-setup database would, whatever
    /// the runs before it did, and whether it reuses the connection or reloads the snapshot.
    #[test]
    fn each_run_counts_changes_from_zero() {
        let mut databases = sealed();
        let counters = |databases: &mut Databases| {
            let sql = "SELECT changes(), total_changes(), last_insert_rowid()";
            databases
                .run_as("payments/DB", sql, &[], Source::Worker)
                .unwrap()
                .rows[0]
                .clone()
        };
        let int = |values: [i64; 3]| values.map(Value::Integer).to_vec();
        let insert = |databases: &mut Databases, key: &str| {
            let sql = "INSERT INTO charges (order_id, idempotency_key) VALUES ('o-2', ?1)";
            let params = [Value::Text(key.to_string())];
            databases
                .run_as("payments/DB", sql, &params, Source::Worker)
                .unwrap();
        };
        for run in 0..3 {
            databases.restore().unwrap();
            assert_eq!(counters(&mut databases), int([0, 0, 0]), "run {run} starts");
            insert(&mut databases, "k-2");
            insert(&mut databases, "k-3");
            assert_eq!(
                counters(&mut databases),
                int([1, 2, 3]),
                "run {run} after two inserts"
            );
            databases
                .run_as(
                    "payments/DB",
                    "UPDATE charges SET amount = 1",
                    &[],
                    Source::Worker,
                )
                .unwrap();
            assert_eq!(
                counters(&mut databases),
                int([3, 5, 3]),
                "run {run} after the update"
            );
            if run == 1 {
                // Steps outside the run's transaction: the next run reloads the snapshot.
                databases
                    .run_as("payments/DB", "PRAGMA optimize", &[], Source::Worker)
                    .unwrap();
            }
        }
    }

    #[test]
    fn now_is_the_simulation_clock_in_setup_runs_and_reloads() {
        // 2026-01-01T00:00:00Z, then one minute and one second and a half later.
        let start = 1_767_225_600_000;
        set_now_ms(start);
        let mut databases = Databases::new();
        databases.open("DB").unwrap();
        databases
            .setup(
                "DB",
                "CREATE TABLE t (at TEXT DEFAULT CURRENT_TIMESTAMP); INSERT INTO t DEFAULT VALUES;",
            )
            .unwrap();
        databases.seal().unwrap();
        databases.restore().unwrap();
        let at = |s: &str| Value::Text(s.to_string());
        assert_eq!(
            text(&mut databases, "SELECT at FROM t"),
            at("2026-01-01 00:00:00")
        );
        set_now_ms(start + 61_500);
        assert_eq!(
            text(
                &mut databases,
                "SELECT strftime('%Y-%m-%d %H:%M:%f', 'now')"
            ),
            at("2026-01-01 00:01:01.500")
        );
        assert_eq!(
            text(&mut databases, "SELECT CAST(unixepoch('now') AS TEXT)"),
            at("1767225661")
        );
        // A PRAGMA steps outside the run's transaction: the next run reloads the snapshot into
        // a fresh connection (the memdb VFS), which reads the same clock.
        databases.run("DB", "PRAGMA user_version = 1", &[]).unwrap();
        databases.restore().unwrap();
        assert_eq!(
            text(&mut databases, "SELECT at FROM t"),
            at("2026-01-01 00:00:00")
        );
        assert_eq!(
            text(&mut databases, "SELECT datetime('now')"),
            at("2026-01-01 00:01:01")
        );
        // D1 runs in UTC: local time is UTC, whatever the machine's time zone.
        assert_eq!(
            text(&mut databases, "SELECT datetime('now', 'localtime')"),
            at("2026-01-01 00:01:01")
        );
        assert_eq!(
            text(
                &mut databases,
                "SELECT datetime(951782400, 'unixepoch', 'localtime')"
            ),
            at("2000-02-29 00:00:00")
        );
    }

    #[test]
    fn days_convert_to_dates_and_back() {
        for days in [-719_468, -1, 0, 1, 11_016, 11_017, 20_454, 2_932_896] {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days, "{y}-{m}-{d}");
        }
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
    }

    #[test]
    fn one_line_keeps_a_line_comment_from_swallowing_the_rest() {
        assert_eq!(
            one_line(
                "CREATE TABLE holds ( -- one row per hold\n  id TEXT, -- the hold's id\n  note TEXT DEFAULT '--not a comment' /* kept -- as is */\n)"
            ),
            "CREATE TABLE holds ( /* one row per hold */ id TEXT, /* the hold's id */ note TEXT \
             DEFAULT '--not a comment' /* kept -- as is */ )"
        );
        assert_eq!(one_line("SELECT 1 -- last"), "SELECT 1 /* last */");
        assert_eq!(
            one_line("SELECT [a--b], \"c--d\""),
            "SELECT [a--b], \"c--d\""
        );
    }

    #[test]
    fn only_a_d1_database_reports_its_size_to_the_worker() {
        let mut databases = sealed();
        let size = |databases: &mut Databases, name: &str, source: Source| {
            databases
                .run_as(name, "SELECT 1", &[], source)
                .unwrap()
                .size_after
        };
        let before = size(&mut databases, "payments/DB", Source::Worker).unwrap();
        // A statement that reports no size still changes it: 200 rows of 1 KB take new pages.
        let insert = databases
            .run(
                "payments/DB",
                "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 200) \
                 INSERT INTO charges (order_id, idempotency_key) \
                 SELECT hex(zeroblob(500)), 'key-' || i FROM n",
                &[],
            )
            .unwrap();
        assert_eq!(insert.size_after, None);
        let after = size(&mut databases, "payments/DB", Source::Worker).unwrap();
        assert!(after >= before + 100 * 1024, "{before} then {after}");

        databases
            .open_labeled("do:Room:ab12", Some("DO:Room/\"lobby\" SQL"))
            .unwrap();
        assert_eq!(size(&mut databases, "do:Room:ab12", Source::Worker), None);
    }

    #[test]
    fn traces_name_a_database_by_its_label_or_as_d1() {
        let mut databases = sealed();
        assert_eq!(databases.shown("DB"), "D1 DB");
        databases
            .open_labeled("do:Room:ab12", Some("DO:Room/\"lobby\" SQL"))
            .unwrap();
        // Opening it again without a label keeps the one it has.
        databases.open("do:Room:ab12").unwrap();
        assert_eq!(databases.shown("do:Room:ab12"), "DO:Room/\"lobby\" SQL");
    }

    #[test]
    fn unknown_database_is_an_error() {
        let mut databases = sealed();
        let error = databases.run("DB", "SELECT 1", &[]).unwrap_err();
        assert_eq!(error.message(), "no D1 database named 'DB'");
    }

    #[test]
    fn result_shapes() {
        let mut databases = sealed();
        let insert = databases
            .run_as(
                "payments/DB",
                "INSERT INTO charges (order_id, idempotency_key, amount, receipt) \
                 VALUES (?, ?, ?, ?)",
                &[
                    Value::Text("o-2".into()),
                    Value::Text("k-2".into()),
                    Value::Real(9.5),
                    Value::Blob(vec![1, 2]),
                ],
                Source::Worker,
            )
            .unwrap();
        assert_eq!(insert.columns, Vec::<String>::new());
        assert_eq!(insert.changes, 1);
        assert_eq!(insert.rows_written, 1);
        assert_eq!(insert.last_row_id, 2);
        assert!(insert.changed_db);
        assert!(insert.size_after.is_some_and(|bytes| bytes > 0));

        let select = databases
            .run(
                "payments/DB",
                "SELECT id, order_id, amount, receipt, NULL AS absent FROM charges \
                 WHERE id = ?1",
                &[Value::Integer(2)],
            )
            .unwrap();
        assert_eq!(
            select.columns,
            vec!["id", "order_id", "amount", "receipt", "absent"]
        );
        assert_eq!(
            select.rows,
            vec![vec![
                Value::Integer(2),
                Value::Text("o-2".into()),
                Value::Real(9.5),
                Value::Blob(vec![1, 2]),
                Value::Null,
            ]]
        );
        assert_eq!(select.changes, 0);
        assert_eq!(select.rows_read, 1);
        assert!(!select.changed_db);
    }

    /// A database with a parent and a child table, the child's rows going with their parent.
    fn families() -> Databases {
        let mut databases = Databases::new();
        databases.open("DB").unwrap();
        databases
            .setup(
                "DB",
                "CREATE TABLE p (id INTEGER PRIMARY KEY);\n\
                 CREATE TABLE c (id INTEGER PRIMARY KEY, \
                 pid INTEGER REFERENCES p(id) ON DELETE CASCADE);\n\
                 INSERT INTO p (id) VALUES (1);\n\
                 INSERT INTO c (id, pid) VALUES (1, 1);",
            )
            .unwrap();
        databases.seal().unwrap();
        databases.restore().unwrap();
        databases
    }

    fn worker(databases: &mut Databases, sql: &str) -> Result<RawResult> {
        databases.run_as("DB", sql, &[], Source::Worker)
    }

    fn children(databases: &mut Databases) -> Value {
        let result = databases.run("DB", "SELECT COUNT(*) FROM c", &[]).unwrap();
        result.rows[0][0].clone()
    }

    #[test]
    fn enforces_foreign_keys_as_d1_does() {
        let mut databases = families();
        let orphan = worker(&mut databases, "INSERT INTO c (id, pid) VALUES (2, 99)");
        assert_eq!(
            orphan.unwrap_err().to_string(),
            "FOREIGN KEY constraint failed: SQLITE_CONSTRAINT (extended: SQLITE_CONSTRAINT_FOREIGNKEY)"
        );
        // D1 counts the child row the cascade deleted.
        let deleted = worker(&mut databases, "DELETE FROM p WHERE id = 1").unwrap();
        assert_eq!((deleted.changes, deleted.rows_written), (2, 2));
        assert_eq!(children(&mut databases), Value::Integer(0));
        // A pragma steps out of the run's transaction, so the next run starts from a fresh
        // connection: foreign keys hold there too, and turning them off changes nothing.
        worker(&mut databases, "PRAGMA foreign_keys = off").unwrap();
        databases.restore().unwrap();
        assert_eq!(children(&mut databases), Value::Integer(1));
        worker(&mut databases, "PRAGMA foreign_keys = off").unwrap();
        let on = worker(&mut databases, "PRAGMA foreign_keys").unwrap();
        assert_eq!(on.rows, vec![vec![Value::Integer(1)]]);
        // Outside the run's transaction (the pragma left it) judging one does not turn them off.
        worker(&mut databases, "PRAGMA foreign_keys = 0").unwrap();
        let on = worker(&mut databases, "PRAGMA foreign_keys").unwrap();
        assert_eq!(on.rows, vec![vec![Value::Integer(1)]]);
        let orphan = worker(&mut databases, "INSERT INTO c (id, pid) VALUES (3, 99)");
        assert!(orphan.is_err());
    }

    #[test]
    fn refuses_a_workers_transaction_and_keeps_the_run() {
        let mut databases = families();
        worker(&mut databases, "DELETE FROM c").unwrap();
        for sql in ["BEGIN", "COMMIT", "SAVEPOINT s", "ROLLBACK"] {
            let refused = worker(&mut databases, sql).unwrap_err().to_string();
            assert!(
                refused.starts_with("To execute a transaction"),
                "{sql}: {refused}"
            );
        }
        assert_eq!(
            worker(&mut databases, "ATTACH DATABASE ':memory:' AS x")
                .unwrap_err()
                .to_string(),
            "not authorized: SQLITE_AUTH"
        );
        assert_eq!(
            worker(&mut databases, "VACUUM").unwrap_err().to_string(),
            "cannot VACUUM from within a transaction: SQLITE_ERROR"
        );
        let batch = databases.batch_as(
            "DB",
            &[
                Statement {
                    sql: "DELETE FROM p".into(),
                    params: vec![],
                },
                Statement {
                    sql: "BEGIN".into(),
                    params: vec![],
                },
            ],
            Source::Worker,
        );
        assert!(batch
            .unwrap_err()
            .to_string()
            .starts_with("statement 2: To execute a transaction"));
        let exec = databases.exec_as(
            "DB",
            "DELETE FROM p; ATTACH ':memory:' AS x",
            Source::Worker,
        );
        assert_eq!(
            exec.unwrap_err().to_string(),
            "statement 2: not authorized: SQLITE_AUTH"
        );
        // The engine's own statements are not judged, and the next run starts over.
        databases.run("DB", "PRAGMA page_count", &[]).unwrap();
        databases.restore().unwrap();
        assert_eq!(children(&mut databases), Value::Integer(1));
    }

    #[test]
    fn says_the_database_changed_only_when_it_did() {
        let mut databases = families();
        let changed =
            |databases: &mut Databases, sql: &str| worker(databases, sql).unwrap().changed_db;
        assert!(!changed(
            &mut databases,
            "INSERT OR IGNORE INTO p (id) VALUES (1)"
        ));
        assert!(!changed(
            &mut databases,
            "UPDATE p SET id = 5 WHERE id = 1000"
        ));
        assert!(changed(&mut databases, "INSERT INTO p (id) VALUES (2)"));
        assert!(changed(&mut databases, "UPDATE p SET id = 5 WHERE id = 2"));
        assert!(changed(&mut databases, "CREATE TABLE z (a)"));
        assert!(!changed(&mut databases, "CREATE TABLE IF NOT EXISTS z (a)"));
        assert!(changed(&mut databases, "DROP TABLE z"));
        assert!(!changed(&mut databases, "SELECT * FROM p"));
    }

    #[test]
    fn sqlites_randomness_follows_the_seed_even_one_that_folds_to_zero() {
        let mut databases = sealed();
        let draw = |databases: &mut Databases, seed: u64| {
            databases.reseed(seed);
            let result = databases
                .run("payments/DB", "SELECT random(), hex(randomblob(8))", &[])
                .unwrap();
            result.rows[0].clone()
        };
        for seed in [0, u64::MAX, 0x0000_0001_0000_0001, 42] {
            let first = draw(&mut databases, seed);
            assert_eq!(draw(&mut databases, seed), first, "seed {seed:#x}");
        }
        assert_ne!(draw(&mut databases, 42), draw(&mut databases, 43));
    }

    #[test]
    fn errors_carry_the_code_name() {
        let mut databases = sealed();
        let syntax = databases.run("payments/DB", "SELEC 1", &[]).unwrap_err();
        assert_eq!(
            syntax.message(),
            "near \"SELEC\": syntax error at offset 0: SQLITE_ERROR"
        );
        let missing = databases
            .run("payments/DB", "SELECT * FROM foo", &[])
            .unwrap_err();
        assert_eq!(missing.message(), "no such table: foo: SQLITE_ERROR");
        let duplicate = databases
            .run(
                "payments/DB",
                "INSERT INTO charges (idempotency_key) VALUES ('k-1')",
                &[],
            )
            .unwrap_err();
        assert_eq!(
            duplicate.message(),
            "UNIQUE constraint failed: charges.idempotency_key: SQLITE_CONSTRAINT (extended: SQLITE_CONSTRAINT_UNIQUE)"
        );
        let two = databases
            .run("payments/DB", "SELECT 1; SELECT 2", &[])
            .unwrap_err();
        assert_eq!(
            two.message(),
            "A prepared SQL statement must contain only one statement."
        );
    }

    #[test]
    fn batch_rolls_back_on_error() {
        let mut databases = sealed();
        let statements = [
            Statement {
                sql: "INSERT INTO charges (idempotency_key) VALUES (?)".into(),
                params: vec![Value::Text("k-9".into())],
            },
            Statement {
                sql: "INSERT INTO charges (idempotency_key) VALUES ('k-1')".into(),
                params: vec![],
            },
        ];
        let error = databases.batch("payments/DB", &statements).unwrap_err();
        assert_eq!(
            error.message(),
            "statement 2: UNIQUE constraint failed: charges.idempotency_key: SQLITE_CONSTRAINT (extended: SQLITE_CONSTRAINT_UNIQUE)"
        );
        assert_eq!(count(&mut databases), Value::Integer(1));

        let results = databases.batch("payments/DB", &statements[..1]).unwrap();
        assert_eq!(results.len(), 1);
        assert_eq!(results[0].changes, 1);
        assert_eq!(count(&mut databases), Value::Integer(2));
    }

    #[test]
    fn restore_returns_to_the_sealed_state() {
        let mut databases = sealed();
        databases
            .run("payments/DB", "DELETE FROM charges", &[])
            .unwrap();
        databases
            .exec(
                "payments/DB",
                "CREATE TABLE extra (x); INSERT INTO extra VALUES (1)",
            )
            .unwrap();
        assert_eq!(count(&mut databases), Value::Integer(0));
        databases.restore().unwrap();
        assert_eq!(count(&mut databases), Value::Integer(1));
        let gone = databases
            .run("payments/DB", "SELECT * FROM extra", &[])
            .unwrap_err();
        assert_eq!(gone.message(), "no such table: extra: SQLITE_ERROR");
        // Nothing of the previous run leaks, not even the last insert rowid.
        let select = databases.run("payments/DB", "SELECT 1", &[]).unwrap();
        assert_eq!(select.last_row_id, 0);
    }

    #[test]
    fn exec_counts_statements_and_names_the_failing_one() {
        let mut databases = sealed();
        let count = databases
            .exec("payments/DB", "SELECT 1; SELECT 2;\n-- done\n")
            .unwrap();
        assert_eq!(count, 2);
        let error = databases
            .exec("payments/DB", "SELECT 1; SELECT * FROM nope")
            .unwrap_err();
        assert_eq!(
            error.message(),
            "statement 2: no such table: nope: SQLITE_ERROR"
        );
    }

    #[test]
    fn sealing_closes_setup_of_the_sealed_databases() {
        let mut databases = sealed();
        assert_eq!(
            databases
                .setup("payments/DB", "SELECT 1")
                .unwrap_err()
                .message(),
            "cannot set up D1 database 'payments/DB' after setup is sealed"
        );
    }

    #[test]
    fn databases_opened_during_a_run_end_with_it() {
        let mut databases = sealed();
        databases.restore().unwrap();
        databases.open("KV:CACHE").unwrap();
        assert!(databases.contains("KV:CACHE"));
        databases
            .setup("KV:CACHE", "CREATE TABLE kv (k TEXT PRIMARY KEY, v)")
            .unwrap();
        databases
            .run("KV:CACHE", "INSERT INTO kv VALUES ('a', 1)", &[])
            .unwrap();
        // Opening again keeps what is there.
        databases.open("KV:CACHE").unwrap();
        databases.open("payments/DB").unwrap();
        let rows = databases.run("KV:CACHE", "SELECT v FROM kv", &[]).unwrap();
        assert_eq!(rows.rows, vec![vec![Value::Integer(1)]]);
        databases.restore().unwrap();
        assert!(!databases.contains("KV:CACHE"));
        assert!(databases.contains("payments/DB"));
        assert_eq!(
            databases
                .run("KV:CACHE", "SELECT 1", &[])
                .unwrap_err()
                .message(),
            "no D1 database named 'KV:CACHE'"
        );
        // The next run opens it empty.
        databases.open("KV:CACHE").unwrap();
        let tables = databases
            .run("KV:CACHE", "SELECT count(*) FROM sqlite_schema", &[])
            .unwrap();
        assert_eq!(tables.rows, vec![vec![Value::Integer(0)]]);
    }

    fn columns(databases: &mut Databases, sql: &str) -> Vec<String> {
        databases.run("payments/DB", sql, &[]).unwrap().columns
    }

    #[test]
    fn cached_statements_follow_schema_changes_across_runs() {
        let mut databases = sealed();
        let star = "SELECT * FROM charges WHERE id = 1";
        let sealed_columns = vec!["id", "order_id", "idempotency_key", "amount", "receipt"];
        for _ in 0..2 {
            databases.restore().unwrap();
            assert_eq!(columns(&mut databases, star), sealed_columns);
            databases
                .exec("payments/DB", "ALTER TABLE charges ADD COLUMN note TEXT")
                .unwrap();
            let altered = columns(&mut databases, star);
            assert_eq!(altered.last().map(String::as_str), Some("note"));
        }
        // Two runs create a table of the same name with different columns: the schema cookie
        // is the same in both, the statement cached in the first must not serve the second.
        let extra = "SELECT * FROM extra";
        databases.restore().unwrap();
        databases
            .exec(
                "payments/DB",
                "CREATE TABLE extra (x); INSERT INTO extra VALUES (1)",
            )
            .unwrap();
        assert_eq!(columns(&mut databases, extra), vec!["x"]);
        databases.restore().unwrap();
        assert_eq!(
            databases
                .run("payments/DB", extra, &[])
                .unwrap_err()
                .message(),
            "no such table: extra: SQLITE_ERROR"
        );
        databases.restore().unwrap();
        databases
            .exec(
                "payments/DB",
                "CREATE TABLE extra (y, z); INSERT INTO extra VALUES (2, 3)",
            )
            .unwrap();
        let result = databases.run("payments/DB", extra, &[]).unwrap();
        assert_eq!(result.columns, vec!["y", "z"]);
        assert_eq!(
            result.rows,
            vec![vec![Value::Integer(2), Value::Integer(3)]]
        );
    }

    #[test]
    fn sql_outside_the_run_transaction_behaves_as_in_its_own_connection() {
        let mut databases = sealed();
        databases.restore().unwrap();
        // A transaction of the run's own commits as it would alone.
        databases
            .exec(
                "payments/DB",
                "BEGIN; INSERT INTO charges (idempotency_key) VALUES ('k-2'); COMMIT",
            )
            .unwrap();
        assert_eq!(count(&mut databases), Value::Integer(2));
        // OR ROLLBACK undoes its own statement only, as in autocommit mode.
        databases
            .run(
                "payments/DB",
                "INSERT OR ROLLBACK INTO charges (idempotency_key) VALUES ('k-1')",
                &[],
            )
            .unwrap_err();
        assert_eq!(count(&mut databases), Value::Integer(2));
        databases
            .run("payments/DB", "PRAGMA case_sensitive_like = ON", &[])
            .unwrap();
        let like = "SELECT 'a' LIKE 'A'";
        let run = |databases: &mut Databases| databases.run("payments/DB", like, &[]).unwrap().rows;
        assert_eq!(run(&mut databases), vec![vec![Value::Integer(0)]]);
        // Nothing of it survives the restore.
        databases.restore().unwrap();
        assert_eq!(count(&mut databases), Value::Integer(1));
        assert_eq!(run(&mut databases), vec![vec![Value::Integer(1)]]);
        let select = databases.run("payments/DB", "SELECT 1", &[]).unwrap();
        assert_eq!(select.last_row_id, 0);
    }

    #[test]
    fn a_schema_that_rolls_back_is_reloaded_every_run() {
        let mut databases = Databases::new();
        databases.open("DB").unwrap();
        databases
            .setup("DB", "CREATE TABLE t (k TEXT UNIQUE ON CONFLICT ROLLBACK)")
            .unwrap();
        databases.seal().unwrap();
        for _ in 0..2 {
            databases.restore().unwrap();
            databases
                .run("DB", "INSERT INTO t VALUES ('a')", &[])
                .unwrap();
            databases
                .run("DB", "INSERT INTO t VALUES ('a')", &[])
                .unwrap_err();
            let rows = databases.run("DB", "SELECT count(*) FROM t", &[]).unwrap();
            assert_eq!(rows.rows, vec![vec![Value::Integer(1)]]);
        }
    }

    #[test]
    fn finds_the_words_that_step_outside() {
        assert!(steps_outside("begin"));
        assert!(steps_outside("END TRANSACTION"));
        assert!(steps_outside("SELECT 1; end"));
        assert!(steps_outside("pragma foreign_keys = on"));
        assert!(steps_outside("INSERT OR ROLLBACK INTO t VALUES (1)"));
        assert!(!steps_outside("SELECT CASE WHEN x THEN 1 END FROM t"));
        assert!(!steps_outside("SELECT began, ended, pragma_x FROM t"));
    }

    #[test]
    fn savepoint_statements_are_told_apart_from_other_transaction_statements() {
        use SavepointStatement::{Open, Release, RollbackTo};
        assert_eq!(
            savepoint_statement("SAVEPOINT _cf_sync_1"),
            Some(Open("_cf_sync_1"))
        );
        assert_eq!(savepoint_statement("release a"), Some(Release("a")));
        assert_eq!(
            savepoint_statement("RELEASE SAVEPOINT a"),
            Some(Release("a"))
        );
        assert_eq!(savepoint_statement("ROLLBACK TO a"), Some(RollbackTo("a")));
        assert_eq!(
            savepoint_statement("ROLLBACK TRANSACTION TO SAVEPOINT a"),
            Some(RollbackTo("a"))
        );
        for sql in [
            "ROLLBACK",
            "ROLLBACK a",
            "SAVEPOINT",
            "SAVEPOINT a b",
            "RELEASE a; COMMIT",
            "BEGIN",
        ] {
            assert_eq!(savepoint_statement(sql), None, "{sql}");
        }
        for word in [
            "SAVEPOINT a",
            "release a",
            "Vacuum",
            "ATTACH 'x' AS y",
            "detach y",
            "COMMIT",
            "rollback",
        ] {
            assert!(steps_outside(word), "{word}");
        }
        // A word ends at any byte that is not ASCII alphanumeric or `_`, a UTF-8 letter too.
        assert!(steps_outside("SELECT 'é'; éBEGIN"));
        assert!(!steps_outside("SELECT x_begin, commits FROM t"));
        assert!(!steps_outside("SELECT 1 AS end_"));
    }
}
