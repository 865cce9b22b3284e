//! A store opened during a run (a Durable Object's storage) kept from run to run. Each run
//! starts it empty, as before; what is kept is the connection, with its prepared statements and
//! SQLite's parsed schema, which cost more than the statements a run executes.
//!
//! The first run to open the store records its statements as they run for real, committed, in
//! a fresh connection: the *prefix*, which ends at the first statement that could answer
//! differently in another run (one that reads the clock, draws from SQLite's PRNG, defers a
//! constraint, fails having changed rows, or steps outside a transaction) or at a batch or script.
//! The connection then stays at the state the prefix leaves.
//!
//! A later run that opens the store is answered from the record as long as its statements are
//! the prefix's, in order (same source, SQL and parameters): from empty, the same statements
//! free of the clock and of randomness answer the same. At its first other statement (or a batch,
//! a script) the run goes *live*: if it followed the whole prefix, the connection is where the run
//! is, and the rest of the run executes in a transaction the next run rolls back; if it left the
//! prefix earlier, a fresh connection replays the prefix up to there for real, and the prefix is
//! cut to what runs share. Going live also gives the connection the counters a fresh one would
//! have there (`last_insert_rowid()`, `changes()`, `total_changes()`).
//!
//! A run that steps outside its transaction (its SQL names a transaction statement, a pragma,
//! `ROLLBACK` conflict handling or a deferred constraint) leaves the connection where the run
//! left it, and the store is dropped at the end of the run as before.

use std::cell::Cell;
use std::ffi::{c_int, c_void};

use rusqlite::{ffi, Connection};

use super::{RawResult, Source, Value};

/// `sqlite3_test_control`'s opcodes that copy SQLite's PRNG state aside and back (sqlite3.h).
const SQLITE_TESTCTRL_PRNG_SAVE: c_int = 5;
const SQLITE_TESTCTRL_PRNG_RESTORE: c_int = 6;

/// Stores kept between runs at most; a Worker that makes new objects in every run (`newUniqueId`
/// from a changing stream) opens the others afresh, as before.
pub(super) const KEPT_MAX: usize = 64;

/// SQLite's date and time functions: a statement that calls one reads the clock.
const CLOCK_FUNCTIONS: [&str; 7] = [
    "date",
    "time",
    "datetime",
    "julianday",
    "unixepoch",
    "strftime",
    "timediff",
];

/// Keywords that read the clock, or defer a constraint to a commit the run's transaction never
/// makes, wherever they stand.
const UNREPEATABLE_KEYWORDS: [&str; 4] = [
    "current_date",
    "current_time",
    "current_timestamp",
    "deferred",
];

/// Whether SQL names a word of `words` (case-insensitive, whole words, quoted text included:
/// a false alarm only ends the prefix early).
pub(super) fn mentions(sql: &str, words: &[&str]) -> bool {
    super::words(sql).any(|(start, end)| {
        let word = &sql[start..end];
        words.iter().any(|w| word.eq_ignore_ascii_case(w))
    })
}

/// Whether SQL may call a function of `functions`: one of them named as a whole word and not
/// plainly something else (a column called `time`, followed by a comma, an operator, a word
/// or the end). Whatever could still lead to a call (`(`, a quote, a comment) counts as one: a false
/// alarm only ends the prefix early.
fn may_call(sql: &str, functions: &[&str]) -> bool {
    let bytes = sql.as_bytes();
    for (start, end) in super::words(sql) {
        let word = &sql[start..end];
        if !functions.iter().any(|f| word.eq_ignore_ascii_case(f)) {
            continue;
        }
        let next = bytes[end..].iter().find(|b| !b.is_ascii_whitespace());
        let plainly_not_a_call = next.is_none_or(|&b| {
            super::is_word_byte(b)
                || matches!(
                    b,
                    b',' | b')'
                        | b';'
                        | b'='
                        | b'<'
                        | b'>'
                        | b'!'
                        | b'+'
                        | b'*'
                        | b'%'
                        | b'|'
                        | b'&'
                        | b'.'
                )
        });
        if !plainly_not_a_call {
            return true;
        }
    }
    false
}

/// Whether a statement may join the prefix (besides not stepping outside a transaction): it
/// reads no clock and defers no constraint. A default, trigger or view that reads the clock is
/// created by a statement that does, which ends the prefix before anything can run it.
pub(super) fn repeatable(sql: &str) -> bool {
    !mentions(sql, &UNREPEATABLE_KEYWORDS) && !may_call(sql, &CLOCK_FUNCTIONS)
}

/// Whether a statement defers a constraint to the commit, which the run's transaction would
/// never make: such SQL runs outside it, as in a connection of its own.
pub(super) fn defers(sql: &str) -> bool {
    mentions(sql, &["deferred"])
}

/// One statement of the prefix and what it answered.
pub(super) struct Recorded {
    source: Source,
    sql: String,
    params: Vec<Value>,
    pub(super) result: RawResult,
    /// `sqlite3_changes64` after it: what `changes()` reads.
    changes_after: i64,
}

impl Recorded {
    fn matches(&self, source: Source, sql: &str, params: &[Value]) -> bool {
        self.source == source
            && self.sql == sql
            && self.params.len() == params.len()
            && self
                .params
                .iter()
                .zip(params)
                .all(|(a, b)| same_value(a, b))
    }

    pub(super) fn sql(&self) -> &str {
        &self.sql
    }

    pub(super) fn params(&self) -> &[Value] {
        &self.params
    }
}

/// Equal as SQLite would store them: reals by their bits (`-0.0` is not `0.0`).
fn same_value(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Real(a), Value::Real(b)) => a.to_bits() == b.to_bits(),
        (a, b) => a == b,
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Phase {
    /// The store's first run, on a fresh connection: every statement so far is in the prefix.
    Recording,
    /// A later run that has issued the prefix's first `n` statements, answered from the record.
    Replaying(usize),
    /// The run's statements execute on the connection.
    Live,
}

pub(super) struct Reuse {
    pub(super) prefix: Vec<Recorded>,
    pub(super) phase: Phase,
    /// The connection no longer holds the prefix's state outside the run's transaction (a
    /// recorded statement drew randomness or failed having changed rows): drop it with the run.
    pub(super) spoiled: bool,
}

/// What `total_changes()` and `changes()` read on a connection kept from run to run (a D1
/// database's, rolled back after each run, or a Durable Object's store), so that they answer as
/// on a connection opened for the run: SQLite cannot set either.
#[derive(Default)]
pub(super) struct Counters {
    /// What `total_changes()` leaves out of SQLite's count: the rows earlier runs changed.
    pub(super) changed_before: Cell<i64>,
    /// What `changes()` answers until the run's first `INSERT`, `UPDATE` or `DELETE` ends, when
    /// SQLite's own count is an earlier run's.
    pub(super) changes: Cell<Option<i64>>,
}

impl Reuse {
    pub(super) fn new() -> Self {
        Self {
            prefix: Vec::new(),
            phase: Phase::Recording,
            spoiled: false,
        }
    }

    /// The recorded answer to the run's next statement, if it is the prefix's next one.
    pub(super) fn replay(
        &mut self,
        source: Source,
        sql: &str,
        params: &[Value],
    ) -> Option<RawResult> {
        let Phase::Replaying(n) = self.phase else {
            return None;
        };
        let recorded = self.prefix.get(n)?;
        if !recorded.matches(source, sql, params) {
            return None;
        }
        self.phase = Phase::Replaying(n + 1);
        Some(recorded.result.clone())
    }

    pub(super) fn record(
        &mut self,
        source: Source,
        sql: &str,
        params: &[Value],
        result: &RawResult,
        connection: &Connection,
    ) {
        self.prefix.push(Recorded {
            source,
            sql: sql.to_string(),
            params: params.to_vec(),
            result: result.clone(),
            // SAFETY: the handle is this connection's, open, and used by this thread only.
            changes_after: unsafe { ffi::sqlite3_changes64(connection.handle()) },
        });
    }

    /// What a fresh connection that ran the prefix's first `n` statements reads as
    /// `last_insert_rowid()`, `changes()` and `total_changes()`.
    pub(super) fn counters_after(&self, n: usize) -> (i64, i64, i64) {
        let ran = &self.prefix[..n];
        let total = ran
            .iter()
            .map(|r| i64::try_from(r.result.changes).unwrap_or(i64::MAX))
            .sum();
        ran.last().map_or((0, 0, total), |r| {
            (r.result.last_row_id, r.changes_after, total)
        })
    }
}

thread_local! {
    /// How many bytes of SQLite's PRNG opening a connection draws (FTS5 seeds a vector per
    /// connection): `None` until an open measured it, `Some(None)` if it could not be measured.
    static OPEN_DRAWS: Cell<Option<Option<usize>>> = const { Cell::new(None) };
}

/// The most an open is measured to draw; more (or a varying amount) turns keeping stores off.
const OPEN_DRAWS_MAX: usize = 256;

fn prng(op: c_int) {
    // SAFETY: PRNG_SAVE and PRNG_RESTORE take no arguments and copy SQLite's global PRNG state;
    // runs are single-threaded.
    unsafe {
        super::sqlite3_test_control(op);
    }
}

/// Draws `n` bytes from SQLite's PRNG.
fn draw(n: usize) -> Vec<u8> {
    let mut bytes = vec![0u8; n];
    if n > 0 {
        // SAFETY: writes `n` bytes into `bytes`. The PRNG is seeded (`Databases::reseed`)
        // before any run, so drawing never asks the platform.
        unsafe { ffi::sqlite3_randomness(n as c_int, bytes.as_mut_ptr().cast::<c_void>()) };
    }
    bytes
}

/// Opens a connection for a run-scoped store, learning the first time how many bytes of
/// SQLite's PRNG an open draws, so that reopening a kept store can draw as many.
pub(super) fn opening<T>(open: impl FnOnce() -> T) -> T {
    if OPEN_DRAWS.with(Cell::get).is_some() {
        return open();
    }
    prng(SQLITE_TESTCTRL_PRNG_SAVE);
    let opened = open();
    let next = draw(16);
    let drawn = (0..=OPEN_DRAWS_MAX).find(|&n| {
        prng(SQLITE_TESTCTRL_PRNG_RESTORE);
        draw(n);
        draw(16) == next
    });
    prng(SQLITE_TESTCTRL_PRNG_RESTORE);
    draw(drawn.unwrap_or(0));
    OPEN_DRAWS.with(|d| d.set(Some(drawn)));
    opened
}

/// Draws from SQLite's PRNG what opening a connection would: a kept store reopened in a run
/// leaves the PRNG as a fresh one would. False when that is not known.
pub(super) fn draw_as_open() -> bool {
    match OPEN_DRAWS.with(Cell::get) {
        Some(Some(n)) => {
            draw(n);
            true
        }
        _ => false,
    }
}

/// Whether reopening a store can leave SQLite's PRNG as opening it would.
pub(super) fn can_keep() -> bool {
    matches!(OPEN_DRAWS.with(Cell::get), Some(Some(_)))
}

/// Runs `work` with SQLite's PRNG left as it was: a store reopened to replay its prefix
/// mid-run must not draw what its first opening already drew.
pub(super) fn without_drawing<T>(work: impl FnOnce() -> T) -> T {
    prng(SQLITE_TESTCTRL_PRNG_SAVE);
    let result = work();
    prng(SQLITE_TESTCTRL_PRNG_RESTORE);
    result
}

/// Sixteen bytes SQLite's PRNG would give next, leaving its state as it was.
pub(super) fn prng_peek() -> Vec<u8> {
    prng(SQLITE_TESTCTRL_PRNG_SAVE);
    let next = draw(16);
    prng(SQLITE_TESTCTRL_PRNG_RESTORE);
    next
}

/// `total_changes()` as a connection opened for this run alone would count: SQLite's count less
/// what the runs before changed.
unsafe extern "C" fn total_changes(
    context: *mut ffi::sqlite3_context,
    _argc: c_int,
    _argv: *mut *mut ffi::sqlite3_value,
) {
    // SAFETY: the user data is the `Counters` `install` was given, which the `Database` owning
    // the connection keeps alive (and in place, boxed) longer than the connection.
    unsafe {
        let counters = &*(ffi::sqlite3_user_data(context) as *const Counters);
        let db = ffi::sqlite3_context_db_handle(context);
        let total = ffi::sqlite3_total_changes64(db) - counters.changed_before.get();
        ffi::sqlite3_result_int64(context, total);
    }
}

/// `changes()`: what the statement that last changed rows changed, the one before this run's
/// first when that came from the prefix.
unsafe extern "C" fn changes(
    context: *mut ffi::sqlite3_context,
    _argc: c_int,
    _argv: *mut *mut ffi::sqlite3_value,
) {
    // SAFETY: as in `total_changes`.
    unsafe {
        let counters = &*(ffi::sqlite3_user_data(context) as *const Counters);
        let db = ffi::sqlite3_context_db_handle(context);
        let changes = counters
            .changes
            .get()
            .unwrap_or_else(|| ffi::sqlite3_changes64(db));
        ffi::sqlite3_result_int64(context, changes);
    }
}

/// Called by SQLite as each statement ends: an `INSERT`, `UPDATE` or `DELETE` (SQLite counts
/// the changes of those alone) sets what `changes()` reads.
unsafe extern "C" fn statement_ended(
    _kind: std::ffi::c_uint,
    counters: *mut c_void,
    statement: *mut c_void,
    _nanoseconds: *mut c_void,
) -> c_int {
    // SAFETY: `counters` is what `install` registered (see `total_changes`); `statement` is the
    // statement that ended, valid during the call, and its text a C string SQLite keeps.
    unsafe {
        let counters = &*(counters as *const Counters);
        if counters.changes.get().is_none() {
            return 0;
        }
        let statement = statement.cast::<ffi::sqlite3_stmt>();
        if ffi::sqlite3_stmt_readonly(statement) != 0 {
            return 0;
        }
        let text = ffi::sqlite3_sql(statement);
        if text.is_null() {
            return 0;
        }
        let text = std::ffi::CStr::from_ptr(text).to_string_lossy();
        let word = crate::authorize::first_word(&text);
        if ["insert", "replace", "update", "delete", "with"]
            .iter()
            .any(|w| word.eq_ignore_ascii_case(w))
        {
            counters.changes.set(None);
        }
    }
    0
}

/// Gives `connection` the `total_changes()` and `changes()` of `counters`.
pub(super) fn install(connection: &Connection, counters: &Counters) -> rusqlite::Result<()> {
    let data = std::ptr::from_ref(counters).cast_mut().cast::<c_void>();
    // SAFETY: the handle is used while the connection is open, by this thread only.
    let handle = unsafe { connection.handle() };
    type Function =
        unsafe extern "C" fn(*mut ffi::sqlite3_context, c_int, *mut *mut ffi::sqlite3_value);
    let functions: [(&std::ffi::CStr, Function); 2] =
        [(c"total_changes", total_changes), (c"changes", changes)];
    for (name, function) in functions {
        // SAFETY: the handle is this connection's and open; `counters` outlives the connection
        // (see `total_changes`); the name is a C string literal.
        let code = unsafe {
            ffi::sqlite3_create_function_v2(
                handle,
                name.as_ptr(),
                0,
                ffi::SQLITE_UTF8,
                data,
                Some(function),
                None,
                None,
                None,
            )
        };
        check(code)?;
    }
    // SAFETY: as above.
    let code = unsafe {
        ffi::sqlite3_trace_v2(
            handle,
            ffi::SQLITE_TRACE_PROFILE,
            Some(statement_ended),
            data,
        )
    };
    check(code)
}

fn check(code: c_int) -> rusqlite::Result<()> {
    if code == ffi::SQLITE_OK {
        Ok(())
    } else {
        Err(rusqlite::Error::SqliteFailure(ffi::Error::new(code), None))
    }
}

#[cfg(test)]
mod tests {
    use super::repeatable;
    use crate::d1::{Databases, Statement, Value};

    /// One call a run makes on an object's store.
    enum Call {
        Run(&'static str, Vec<Value>),
        Batch(Vec<&'static str>),
        Exec(&'static str),
    }
    use Call::{Batch, Exec, Run};

    fn run(sql: &'static str) -> Call {
        Run(sql, vec![])
    }

    fn text(value: &str) -> Value {
        Value::Text(value.to_string())
    }

    const STORE: &str = "do:Room:1";

    /// What a run's calls answer (results or errors), then what SQLite's PRNG gives next and
    /// whether the store exists: everything a run can see.
    fn answers(databases: &mut Databases, seed: u64, calls: &[Call]) -> Vec<String> {
        databases.restore().unwrap();
        databases.reseed(seed);
        let mut seen = vec![format!("exists {}", databases.contains(STORE))];
        databases.open_labeled(STORE, Some("DO:Room")).unwrap();
        for call in calls {
            let answer = match call {
                Run(sql, params) => format!("{:?}", databases.run(STORE, sql, params)),
                Batch(sqls) => {
                    let statements: Vec<Statement> = sqls
                        .iter()
                        .map(|sql| Statement {
                            sql: sql.to_string(),
                            params: vec![],
                        })
                        .collect();
                    format!("{:?}", databases.batch(STORE, &statements))
                }
                Exec(sql) => format!("{:?}", databases.exec(STORE, sql)),
            };
            seen.push(answer);
        }
        let after = "SELECT * FROM sqlite_schema ORDER BY name";
        seen.push(format!("{:?}", databases.run(STORE, after, &[])));
        seen.push(format!(
            "{:?}",
            databases.run("other", "SELECT random()", &[])
        ));
        seen
    }

    fn sealed() -> Databases {
        let mut databases = Databases::new();
        databases.fresh_every_run = false;
        databases.open("other").unwrap();
        databases.seal().unwrap();
        databases
    }

    /// Stores as they were before they were kept: opened afresh in every run.
    fn opened_afresh() -> Databases {
        let mut databases = sealed();
        databases.fresh_every_run = true;
        databases
    }

    /// Every run answers, on a store kept from run to run, what it answers on a fresh store.
    fn assert_runs_answer_as_fresh(runs: &[Vec<Call>]) {
        let mut kept = sealed();
        for (index, calls) in runs.iter().enumerate() {
            let seed = 7 + index as u64;
            let expected = answers(&mut opened_afresh(), seed, calls);
            let got = answers(&mut kept, seed, calls);
            assert_eq!(got, expected, "run {index}");
        }
    }

    const CREATE: &str = "CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY, v TEXT UNIQUE)";
    const SEED_ROW: &str = "INSERT OR IGNORE INTO t (v) VALUES ('a')";
    const COUNTERS: &str = "SELECT changes(), total_changes(), last_insert_rowid()";

    fn constructor() -> Vec<Call> {
        vec![run(CREATE), run(SEED_ROW), run(COUNTERS)]
    }

    fn with(mut calls: Vec<Call>, more: Vec<Call>) -> Vec<Call> {
        calls.extend(more);
        calls
    }

    #[test]
    fn a_kept_store_answers_as_a_fresh_one_whatever_each_run_does() {
        let update = || Run("UPDATE t SET v = ? WHERE id = 1", vec![text("b")]);
        let insert = |v: &str| Run("INSERT INTO t (v) VALUES (?)", vec![text(v)]);
        let counters_live = || run("SELECT last_insert_rowid(), changes(), total_changes()");
        assert_runs_answer_as_fresh(&[
            // Records the constructor and more.
            with(constructor(), vec![update(), insert("c"), run(COUNTERS)]),
            // The same, answered from the record, then live.
            with(
                constructor(),
                vec![update(), insert("c"), run(COUNTERS), insert("d")],
            ),
            // Ends inside the record; the counters read live are the record's.
            with(constructor(), vec![counters_live()]),
            // A statement that changes no row keeps `changes()` as the prefix left it.
            with(
                constructor(),
                vec![
                    insert("q"),
                    run("DELETE FROM t WHERE v = 'none'"),
                    counters_live(),
                ],
            ),
            with(
                constructor(),
                vec![run("UPDATE t SET v = v WHERE 0"), counters_live()],
            ),
            with(
                constructor(),
                vec![run("CREATE TABLE u (x)"), counters_live()],
            ),
            // Batches and scripts go live.
            with(
                constructor(),
                vec![
                    Batch(vec![
                        "INSERT INTO t (v) VALUES ('e')",
                        "INSERT INTO t (v) VALUES ('f')",
                    ]),
                    counters_live(),
                ],
            ),
            with(
                constructor(),
                vec![
                    Exec("INSERT INTO t (v) VALUES ('g'); DELETE FROM t WHERE v = 'a'"),
                    counters_live(),
                ],
            ),
            // A failure, and an `OR FAIL` that keeps a row.
            with(constructor(), vec![insert("a"), counters_live()]),
            with(
                constructor(),
                vec![
                    run("INSERT OR FAIL INTO t (id, v) VALUES (50, 'x'), (51, 'a')"),
                    counters_live(),
                ],
            ),
            with(constructor(), vec![counters_live()]),
            // Schema changes and their undoing across runs.
            with(
                constructor(),
                vec![run("DROP TABLE t"), run(CREATE), counters_live()],
            ),
            with(
                constructor(),
                vec![run("ALTER TABLE t ADD COLUMN w"), run("SELECT * FROM t")],
            ),
            with(constructor(), vec![run("SELECT * FROM t")]),
            // Stops before the end of the record, then its counters.
            vec![run(CREATE), counters_live()],
            // Leaves the record at the second statement.
            vec![run(CREATE), insert("z"), run(COUNTERS)],
            with(constructor(), vec![counters_live()]),
        ]);
    }

    #[test]
    fn changes_reads_the_prefix_until_the_run_changes_rows() {
        let counters_live = || run("SELECT changes(), total_changes(), last_insert_rowid()");
        assert_runs_answer_as_fresh(&[
            constructor(),
            with(constructor(), vec![run("UPDATE t SET v = v WHERE 0")]),
            with(
                constructor(),
                vec![run("CREATE TABLE u (x)"), counters_live()],
            ),
            with(
                constructor(),
                vec![run("INSERT INTO t (v) VALUES ('p'), ('q')")],
            ),
            with(
                constructor(),
                vec![run("UPDATE t SET v = v WHERE 0"), counters_live()],
            ),
            with(
                constructor(),
                vec![
                    run("WITH n AS (SELECT 1) DELETE FROM t WHERE v = 'none'"),
                    counters_live(),
                ],
            ),
        ]);
    }

    #[test]
    fn randomness_clock_and_failures_while_recording_answer_as_fresh() {
        let random_insert = || run("INSERT INTO t (v) VALUES (hex(randomblob(4)))");
        assert_runs_answer_as_fresh(&[
            // Randomness in the record's first run: the store is not kept.
            vec![run(CREATE), random_insert(), run(COUNTERS)],
            vec![run(CREATE), random_insert(), run(COUNTERS)],
            // A table whose default draws randomness.
            vec![
                run("CREATE TABLE r (id INTEGER PRIMARY KEY, x DEFAULT (random()))"),
                run("INSERT INTO r (id) VALUES (1)"),
                run("SELECT * FROM r"),
            ],
            vec![
                run("CREATE TABLE r (id INTEGER PRIMARY KEY, x DEFAULT (random()))"),
                run("INSERT INTO r (id) VALUES (1)"),
                run("SELECT * FROM r"),
            ],
            // The largest rowid: SQLite picks the next at random.
            vec![
                run(CREATE),
                run("INSERT INTO t (id, v) VALUES (9223372036854775807, 'm')"),
                run("INSERT INTO t (v) VALUES ('n')"),
                run("SELECT id FROM t WHERE v = 'n'"),
            ],
            vec![
                run(CREATE),
                run("INSERT INTO t (id, v) VALUES (9223372036854775807, 'm')"),
                run("INSERT INTO t (v) VALUES ('n')"),
                run("SELECT id FROM t WHERE v = 'n'"),
            ],
            // A failure in the record's first run, one that keeps a row, then the same again.
            vec![
                run(CREATE),
                run(SEED_ROW),
                run("INSERT INTO t (v) VALUES ('a')"),
                run(COUNTERS),
            ],
            vec![
                run(CREATE),
                run(SEED_ROW),
                run("INSERT INTO t (v) VALUES ('a')"),
                run(COUNTERS),
            ],
            vec![
                run(CREATE),
                run("INSERT OR FAIL INTO t (id, v) VALUES (1, 'x'), (2, 'x')"),
                run(COUNTERS),
            ],
            vec![
                run(CREATE),
                run("INSERT OR FAIL INTO t (id, v) VALUES (1, 'x'), (2, 'x')"),
                run(COUNTERS),
            ],
            // A deferred constraint fails at the statement, as outside a transaction.
            vec![
                run("CREATE TABLE p (id INTEGER PRIMARY KEY)"),
                run("CREATE TABLE c (p REFERENCES p (id) DEFERRABLE INITIALLY DEFERRED)"),
                run("INSERT INTO c VALUES (1)"),
                run("SELECT count(*) FROM c"),
            ],
            vec![
                run("CREATE TABLE p (id INTEGER PRIMARY KEY)"),
                run("CREATE TABLE c (p REFERENCES p (id) DEFERRABLE INITIALLY DEFERRED)"),
                run("INSERT INTO c VALUES (1)"),
                run("SELECT count(*) FROM c"),
            ],
            // Savepoints, as the storage API's transactions open them.
            vec![
                run(CREATE),
                run("SAVEPOINT s"),
                run(SEED_ROW),
                run("RELEASE s"),
                run(COUNTERS),
            ],
            vec![
                run(CREATE),
                run("SAVEPOINT s"),
                run(SEED_ROW),
                run("ROLLBACK TO s"),
                run("RELEASE s"),
                run(COUNTERS),
            ],
            // Nested, and left open when the run ends.
            vec![
                run(CREATE),
                run("SAVEPOINT a"),
                run("SAVEPOINT b"),
                run(SEED_ROW),
                run("RELEASE a"),
                run("SAVEPOINT c"),
                run("INSERT INTO t (v) VALUES ('c')"),
                run(COUNTERS),
            ],
            with(constructor(), vec![]),
            with(constructor(), vec![run("SELECT * FROM t")]),
        ]);
    }

    #[test]
    fn a_run_whose_storage_transactions_open_savepoints_keeps_its_store() {
        let mut databases = sealed();
        let transactions = with(
            constructor(),
            vec![
                run("SAVEPOINT _cf_savepoint_0"),
                run("INSERT INTO t (v) VALUES ('b')"),
                run("RELEASE _cf_savepoint_0"),
                run("SAVEPOINT _cf_sync_1"),
                run("INSERT INTO t (v) VALUES ('c')"),
                run("ROLLBACK TO _cf_sync_1"),
                run("RELEASE _cf_sync_1"),
            ],
        );
        answers(&mut databases, 1, &transactions);
        databases.restore().unwrap();
        assert!(databases.kept.contains_key(STORE));
    }

    #[test]
    fn a_failure_that_kept_rows_while_recording_is_not_kept() {
        let fail = || run("INSERT OR FAIL INTO t (id, v) VALUES (1, 'x'), (2, 'x')");
        assert_runs_answer_as_fresh(&[
            vec![run(CREATE), fail(), run(COUNTERS)],
            vec![run(CREATE), fail(), run(COUNTERS)],
            vec![run(CREATE), run("SELECT * FROM t")],
        ]);
    }

    #[test]
    fn the_clock_keeps_a_statement_out_of_the_record() {
        let mut kept = sealed();
        let calls = || {
            vec![
                run(CREATE),
                run("INSERT INTO t (v) VALUES (datetime('now'))"),
                run("SELECT v FROM t"),
            ]
        };
        for (index, now) in [1_000_000u64, 2_000_000_000].into_iter().enumerate() {
            crate::d1::set_now_ms(now);
            let expected = answers(&mut opened_afresh(), index as u64, &calls());
            assert_eq!(answers(&mut kept, index as u64, &calls()), expected);
        }
    }

    #[test]
    fn a_column_named_after_a_clock_function_reads_no_clock() {
        // A table with a `time` column (as the alarm's is) may join the record; calls may not.
        for sql in [
            "CREATE TABLE a (id INTEGER PRIMARY KEY, time REAL, date TEXT)",
            "INSERT INTO a (id, time) VALUES (1, ?1) ON CONFLICT (id) DO UPDATE SET time = excluded.time",
            "SELECT time, date FROM a WHERE time IS NOT NULL AND date<>'x'",
        ] {
            assert!(repeatable(sql), "{sql}");
        }
        for sql in [
            "SELECT date('now')",
            "SELECT TIME ( 'now' )",
            "SELECT \"datetime\"('now')",
            "SELECT strftime/* a comment */('%s')",
            "CREATE TABLE b (at TEXT DEFAULT CURRENT_TIMESTAMP)",
            "CREATE TABLE c (p INTEGER REFERENCES a DEFERRABLE INITIALLY DEFERRED)",
        ] {
            assert!(!repeatable(sql), "{sql}");
        }
    }

    #[test]
    fn a_store_is_kept_closed_between_runs() {
        let mut databases = sealed();
        answers(&mut databases, 1, &constructor());
        databases.restore().unwrap();
        assert!(!databases.contains(STORE));
    }
}
