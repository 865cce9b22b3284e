//! D1, simulated with one in-memory SQLite database per binding.
//!
//! The scenario's setup (schema, seed rows) runs once; `seal` then snapshots every database
//! with `sqlite3_serialize`, and `restore` brings each back at the start of every run with
//! `sqlite3_deserialize` into a fresh connection: a copy of a few pages instead of re-running
//! the schema, and nothing (last insert rowid, open transactions) survives from the last run.
//!
//! Results are raw: columns, rows and counters. The host shapes them as Cloudflare's D1
//! binding does (`results`, `meta`) and prefixes errors with `D1_ERROR: `.

use std::collections::BTreeMap;
use std::fmt;

use rusqlite::fallible_iterator::FallibleIterator;
use rusqlite::types::{ToSqlOutput, ValueRef};
use rusqlite::{Batch, Connection, ToSql, MAIN_DB};

use crate::error::{Error, Result};

use std::ffi::{c_int, c_void};

/// `sqlite3_test_control`'s opcode that seeds SQLite's PRNG (sqlite3.h).
const SQLITE_TESTCTRL_PRNG_SEED: c_int = 28;

extern "C" {
    // Variadic in sqlite3.h; the bundled bindings leave it out, so it is declared here.
    fn sqlite3_test_control(op: c_int, ...) -> c_int;
}

/// Upper bound on rows one statement returns, so that a runaway query fails instead of
/// exhausting memory.
pub const ROWS_PER_STATEMENT_MAX: usize = 1_000_000;

/// Upper bound on statements in one script or batch.
pub const STATEMENTS_MAX: usize = 100_000;

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
    /// The database size after the statement: page count times page size.
    pub size_after: u64,
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
    snapshot: Option<Vec<u8>>,
}

#[derive(Default)]
pub struct Databases {
    databases: BTreeMap<String, Database>,
    sealed: bool,
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

    /// Opens the database of a binding (`DB`, or `payments/DB` for a callee's); opening it
    /// again is harmless.
    pub fn open(&mut self, name: &str) -> Result<()> {
        if self.databases.contains_key(name) {
            return Ok(());
        }
        if self.sealed {
            return Err(Error::new(format!(
                "cannot open D1 database '{name}' after setup is sealed"
            )));
        }
        let connection = Connection::open_in_memory()
            .map_err(|e| Error::new(format!("cannot open D1 database '{name}': {e}")))?;
        self.databases.insert(
            name.to_string(),
            Database {
                connection,
                snapshot: None,
            },
        );
        Ok(())
    }

    /// Runs a setup script (schema and seed rows). An error names the statement, counting
    /// from 1, and carries SQLite's message: `statement 2: near "CREAT": syntax error`.
    pub fn setup(&mut self, name: &str, sql: &str) -> Result<()> {
        if self.sealed {
            return Err(Error::new(format!(
                "cannot set up D1 database '{name}' after setup is sealed"
            )));
        }
        let connection = &self.database(name)?.connection;
        run_script(connection, sql)
            .map(|_| ())
            .map_err(|(statement, e)| {
                let message = match &e {
                    StatementError::Sqlite(e) => message(e),
                    StatementError::Message(m) => m.clone(),
                };
                Error::new(format!("statement {statement}: {message}"))
            })
    }

    /// Snapshots every database; from now on `restore` returns to this state.
    pub fn seal(&mut self) -> Result<()> {
        for (name, database) in &mut self.databases {
            let data = database
                .connection
                .serialize(MAIN_DB)
                .map_err(|e| Error::new(format!("cannot snapshot D1 database '{name}': {e}")))?;
            database.snapshot = Some(data.to_vec());
        }
        self.sealed = true;
        Ok(())
    }

    /// Seeds SQLite's own PRNG (`random()`, `randomblob()`), which is global to the library.
    /// Seeded, SQLite never asks the platform for entropy, so a run's SQL draws the same
    /// numbers on every replay.
    pub fn reseed(&mut self, seed: u64) {
        // Only the low 32 bits reach SQLite; the fold keeps both halves of the seed in them.
        let folded = (seed ^ (seed >> 32)) as u32 as c_int;
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

    /// Brings every database back to its sealed state.
    pub fn restore(&mut self) -> Result<()> {
        assert!(self.sealed, "restore before seal");
        for (name, database) in &mut self.databases {
            let Some(snapshot) = &database.snapshot else {
                unreachable!("sealed databases have snapshots");
            };
            let cannot = |e: rusqlite::Error| {
                Error::new(format!("cannot restore D1 database '{name}': {e}"))
            };
            let mut connection = Connection::open_in_memory().map_err(cannot)?;
            connection
                .deserialize_read_exact(MAIN_DB, &snapshot[..], snapshot.len(), false)
                .map_err(cannot)?;
            database.connection = connection;
        }
        Ok(())
    }

    /// Runs one statement. Errors read as D1 shows them after `D1_ERROR: `.
    pub fn run(&mut self, name: &str, sql: &str, params: &[Value]) -> Result<RawResult> {
        let connection = &self.database(name)?.connection;
        run_statement(connection, sql, params).map_err(|e| Error::new(d1_message(&e)))
    }

    /// Runs statements as one transaction: the first error rolls all of them back, and the
    /// message says which statement failed, counting from 1.
    pub fn batch(&mut self, name: &str, statements: &[Statement]) -> Result<Vec<RawResult>> {
        if statements.len() > STATEMENTS_MAX {
            return Err(Error::new(format!(
                "a batch may hold at most {STATEMENTS_MAX} statements"
            )));
        }
        let connection = &mut self.database_mut(name)?.connection;
        let savepoint = connection
            .savepoint()
            .map_err(|e| Error::new(d1_message(&StatementError::Sqlite(e))))?;
        let mut results = Vec::with_capacity(statements.len());
        for (index, statement) in statements.iter().enumerate() {
            match run_statement(&savepoint, &statement.sql, &statement.params) {
                Ok(result) => results.push(result),
                // Dropping the savepoint rolls it back.
                Err(e) => {
                    return Err(Error::new(format!(
                        "statement {}: {}",
                        index + 1,
                        d1_message(&e)
                    )))
                }
            }
        }
        savepoint
            .commit()
            .map_err(|e| Error::new(d1_message(&StatementError::Sqlite(e))))?;
        Ok(results)
    }

    /// Runs a script of statements without a transaction, as D1's `exec` does, and returns how
    /// many ran.
    pub fn exec(&mut self, name: &str, sql: &str) -> Result<u64> {
        let connection = &self.database(name)?.connection;
        run_script(connection, sql).map_err(|(statement, e)| {
            Error::new(format!("statement {statement}: {}", d1_message(&e)))
        })
    }

    fn database(&self, name: &str) -> Result<&Database> {
        self.databases
            .get(name)
            .ok_or_else(|| Error::new(format!("no D1 database named '{name}'")))
    }

    fn database_mut(&mut self, name: &str) -> Result<&mut Database> {
        self.databases
            .get_mut(name)
            .ok_or_else(|| Error::new(format!("no D1 database named '{name}'")))
    }
}

enum StatementError {
    Sqlite(rusqlite::Error),
    /// An error of our own, already worded for the user.
    Message(String),
}

impl From<rusqlite::Error> for StatementError {
    fn from(e: rusqlite::Error) -> Self {
        StatementError::Sqlite(e)
    }
}

fn run_statement(
    connection: &Connection,
    sql: &str,
    params: &[Value],
) -> std::result::Result<RawResult, StatementError> {
    if sql.trim().is_empty() {
        return Err(StatementError::Message(
            "No SQL statements detected.".into(),
        ));
    }
    let mut statement = connection.prepare(sql).map_err(|e| match e {
        rusqlite::Error::MultipleStatement => StatementError::Message(
            "A prepared SQL statement must contain only one statement.".into(),
        ),
        e => StatementError::Sqlite(e),
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
    let columns: Vec<String> = statement
        .column_names()
        .iter()
        .map(|c| c.to_string())
        .collect();
    let readonly = statement.readonly();
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
            let mut values = Vec::with_capacity(columns.len());
            for index in 0..columns.len() {
                values.push(Value::from(row.get_ref(index)?));
            }
            rows.push(values);
        }
    }
    // sqlite3_changes keeps the count of the last INSERT, UPDATE or DELETE, even after a
    // SELECT or DDL statement; only trust it when this statement changed rows.
    let changed = connection.total_changes() != total_changes_before;
    let changes = if changed { connection.changes() } else { 0 };
    let rows_returned = rows.len() as u64;
    Ok(RawResult {
        columns,
        rows,
        changes,
        last_row_id: connection.last_insert_rowid(),
        rows_read: rows_returned + changes,
        rows_written: changes,
        size_after: size_bytes(connection)?,
        changed_db: changed || !readonly,
    })
}

/// Runs every statement of `sql`; on error returns the failing statement's number, from 1.
fn run_script(
    connection: &Connection,
    sql: &str,
) -> std::result::Result<u64, (u64, StatementError)> {
    let mut batch = Batch::new(connection, sql);
    let mut count: u64 = 0;
    loop {
        let next = batch.next().map_err(|e| (count + 1, e.into()))?;
        let Some(mut statement) = next else {
            return Ok(count);
        };
        count += 1;
        if count > STATEMENTS_MAX as u64 {
            let message = format!("a script may hold at most {STATEMENTS_MAX} statements");
            return Err((count, StatementError::Message(message)));
        }
        let mut rows = statement.raw_query();
        while rows.next().map_err(|e| (count, e.into()))?.is_some() {}
    }
}

fn size_bytes(connection: &Connection) -> rusqlite::Result<u64> {
    let page_count: i64 = connection.query_row("PRAGMA page_count", [], |r| r.get(0))?;
    let page_size: i64 = connection.query_row("PRAGMA page_size", [], |r| r.get(0))?;
    Ok(u64::try_from(page_count.saturating_mul(page_size)).unwrap_or(0))
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

/// The message as D1 shows it after `D1_ERROR: `: SQLite's message and the primary result
/// code's name, `UNIQUE constraint failed: charges.idempotency_key: SQLITE_CONSTRAINT`.
fn d1_message(error: &StatementError) -> String {
    match error {
        StatementError::Message(message) => message.clone(),
        StatementError::Sqlite(e @ rusqlite::Error::SqliteFailure(failure, _)) => {
            format!("{}: {}", message(e), code_name(failure.extended_code))
        }
        #[cfg(not(target_arch = "wasm32"))]
        StatementError::Sqlite(e @ rusqlite::Error::SqlInputError { error, .. }) => {
            format!("{}: {}", message(e), code_name(error.extended_code))
        }
        StatementError::Sqlite(e) => message(e),
    }
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
    fn setup_error_names_the_statement() {
        let mut databases = Databases::new();
        databases.open("DB").unwrap();
        let error = databases
            .setup("DB", "CREATE TABLE a (x);\nCREAT TABLE b (y);")
            .unwrap_err();
        assert_eq!(error.message(), "statement 2: near \"CREAT\": syntax error");
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
            .run(
                "payments/DB",
                "INSERT INTO charges (order_id, idempotency_key, amount, receipt) \
                 VALUES (?, ?, ?, ?)",
                &[
                    Value::Text("o-2".into()),
                    Value::Text("k-2".into()),
                    Value::Real(9.5),
                    Value::Blob(vec![1, 2]),
                ],
            )
            .unwrap();
        assert_eq!(insert.columns, Vec::<String>::new());
        assert_eq!(insert.changes, 1);
        assert_eq!(insert.rows_written, 1);
        assert_eq!(insert.last_row_id, 2);
        assert!(insert.changed_db);
        assert!(insert.size_after > 0);

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

    #[test]
    fn errors_carry_the_code_name() {
        let mut databases = sealed();
        let syntax = databases.run("payments/DB", "SELEC 1", &[]).unwrap_err();
        assert_eq!(
            syntax.message(),
            "near \"SELEC\": syntax error: SQLITE_ERROR"
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
            "UNIQUE constraint failed: charges.idempotency_key: SQLITE_CONSTRAINT"
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
            "statement 2: UNIQUE constraint failed: charges.idempotency_key: SQLITE_CONSTRAINT"
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
    fn sealing_closes_setup() {
        let mut databases = sealed();
        assert!(databases.setup("payments/DB", "SELECT 1").is_err());
        assert!(databases.open("other").is_err());
    }
}
