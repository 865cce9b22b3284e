//! Invariants the engine evaluates itself over the simulated state at the end of a run, in
//! the configured order; the first that breaks is the run's violation.
//!
//! - `unique`: no two rows of a D1 table agree on a set of columns. Rows with a NULL in any of
//!   the columns are ignored, as a SQL UNIQUE constraint ignores them.
//! - `query`: a read-only query that finds what must not exist returns no row.
//! - `conserved`: a read-only query returns the same single value after every run as after
//!   setup.
//!
//! The host may evaluate invariants of its own and pass their violation to `endRun`; it counts
//! only when every invariant here holds.

use serde::Deserialize;

use crate::config::InvariantSpec;
use crate::d1::{one_line, Databases, RawResult, Value};
use crate::error::{Error, Result};

/// A broken invariant: its name and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Violation {
    pub invariant: String,
    pub message: String,
}

/// Checks, before setup is sealed, that everything an invariant names exists and that its
/// query prepares and only reads, so that a typo is a clear error before any run instead of a
/// failure in every run. Answers what a `conserved` invariant's query returns after setup, the
/// value every run must leave.
pub fn validate(spec: &InvariantSpec, databases: &mut Databases) -> Result<Option<Value>> {
    let fail = |why: String| Error::new(format!("invariant {}: {why}", spec.name()));
    match spec {
        InvariantSpec::Unique {
            name,
            db,
            table,
            columns,
        } => validate_unique(name, db, table, columns, databases).map(|()| None),
        InvariantSpec::Query { db, sql, .. } | InvariantSpec::Conserved { db, sql, .. } => {
            if !databases.contains(db) {
                return Err(fail(format!("no D1 database named '{db}'")));
            }
            databases
                .check_query(db, sql)
                .map_err(|e| fail(format!("D1:{db}: {e}")))?;
            if !matches!(spec, InvariantSpec::Conserved { .. }) {
                return Ok(None);
            }
            let result = databases
                .run(db, sql, &[])
                .map_err(|e| fail(format!("D1:{db}: {e}")))?;
            match single_value(&result.rows) {
                Some(value) => Ok(Some(value.clone())),
                None => Err(fail(format!(
                    "a conserved invariant's query must return one row of one value, but \
                     after setup it returned {}",
                    describe_shape(&result.rows)
                ))),
            }
        }
    }
}

/// Evaluates the invariant; `None` when it holds. `baseline` is what `validate` answered.
pub fn evaluate(
    spec: &InvariantSpec,
    baseline: Option<&Value>,
    databases: &mut Databases,
) -> Result<Option<Violation>> {
    evaluate_reading(spec, baseline, databases, |_, _, _| {})
}

/// `evaluate`, telling `read` the database, SQL and result of each query it made (the one the
/// scenario wrote, or the one a `unique` invariant makes), so that a traced run can show what
/// it read.
pub fn evaluate_reading(
    spec: &InvariantSpec,
    baseline: Option<&Value>,
    databases: &mut Databases,
    mut read: impl FnMut(&str, &str, &RawResult),
) -> Result<Option<Violation>> {
    let violation = |message: String| {
        Some(Violation {
            invariant: spec.name().to_string(),
            message,
        })
    };
    match spec {
        InvariantSpec::Unique {
            name,
            db,
            table,
            columns,
        } => evaluate_unique(name, db, table, columns, databases, read),
        InvariantSpec::Query { name, db, sql } => {
            let result = databases
                .run(db, sql, &[])
                .map_err(|e| Error::new(format!("invariant {name}: {e}")))?;
            read(db, sql, &result);
            let Some(first) = result.rows.first() else {
                return Ok(None);
            };
            let row = describe_row(&result.columns, first);
            Ok(violation(match result.rows.len() {
                1 => format!("1 row from D1:{db} breaks it: {row}"),
                n => format!("{n} rows from D1:{db} break it, the first: {row}"),
            }))
        }
        InvariantSpec::Conserved { name, db, sql } => {
            let Some(expected) = baseline else {
                unreachable!("validate answers a conserved invariant's baseline");
            };
            let result = databases
                .run(db, sql, &[])
                .map_err(|e| Error::new(format!("invariant {name}: {e}")))?;
            read(db, sql, &result);
            let actual = match single_value(&result.rows) {
                Some(value) if value == expected => return Ok(None),
                Some(value) => value.to_string(),
                None => describe_shape(&result.rows),
            };
            Ok(violation(format!(
                "{} is {actual} after the run, but was {expected} after setup in D1:{db}",
                one_line(sql)
            )))
        }
    }
}

/// The value of a result that is one row of one value.
fn single_value(rows: &[Vec<Value>]) -> Option<&Value> {
    match rows {
        [row] => match &row[..] {
            [value] => Some(value),
            _ => None,
        },
        _ => None,
    }
}

/// What a result that is not one value is, for messages: `no row`, `3 rows`, `1 row of 2
/// values`.
fn describe_shape(rows: &[Vec<Value>]) -> String {
    match rows {
        [] => "no row".to_string(),
        [row] => format!("1 row of {} values", row.len()),
        rows => format!("{} rows", rows.len()),
    }
}

/// A row as reports show it: `("alice", -5)`.
/// A row as `(name = "alice", balance = -5)`, its values named by its columns.
fn describe_row(columns: &[String], row: &[Value]) -> String {
    let values: Vec<String> = row
        .iter()
        .enumerate()
        .map(|(i, value)| match columns.get(i) {
            Some(column) => format!("{column} = {value}"),
            None => value.to_string(),
        })
        .collect();
    format!("({})", values.join(", "))
}

fn validate_unique(
    name: &str,
    db: &str,
    table: &str,
    columns: &[String],
    databases: &mut Databases,
) -> Result<()> {
    let fail = |why: String| Error::new(format!("invariant {name}: {why}"));
    if columns.is_empty() {
        return Err(fail("a unique invariant needs at least one column".into()));
    }
    if !databases.contains(db) {
        return Err(fail(format!("no D1 database named '{db}'")));
    }
    let tables = databases.run(
        db,
        "SELECT name FROM sqlite_schema WHERE type IN ('table', 'view') AND name = ?1",
        &[Value::Text(table.to_string())],
    )?;
    if tables.rows.is_empty() {
        return Err(fail(format!(
            "D1:{db} has no table {}",
            Value::Text(table.to_string())
        )));
    }
    let info = databases.run(
        db,
        &format!("SELECT name FROM pragma_table_info({})", sql_string(table)),
        &[],
    )?;
    let existing: Vec<&Value> = info.rows.iter().filter_map(|row| row.first()).collect();
    for column in columns {
        if !existing.contains(&&Value::Text(column.clone())) {
            return Err(fail(format!(
                "D1:{db} table {table} has no column {}",
                Value::Text(column.to_string())
            )));
        }
    }
    Ok(())
}

fn evaluate_unique(
    name: &str,
    db: &str,
    table: &str,
    columns: &[String],
    databases: &mut Databases,
    mut read: impl FnMut(&str, &str, &RawResult),
) -> Result<Option<Violation>> {
    debug_assert!(!columns.is_empty(), "validated at seal");
    let quoted: Vec<String> = columns.iter().map(|c| identifier(c)).collect();
    let list = quoted.join(", ");
    let not_null = quoted
        .iter()
        .map(|c| format!("{c} IS NOT NULL"))
        .collect::<Vec<_>>()
        .join(" AND ");
    // Ordering by the group's values makes the reported group the same in every run with the
    // same state, whatever order the rows were inserted in.
    let sql = format!(
        "SELECT {list}, COUNT(*) FROM {} WHERE {not_null} GROUP BY {list} \
         HAVING COUNT(*) > 1 ORDER BY {list} LIMIT 1",
        identifier(table)
    );
    let result = databases
        .run(db, &sql, &[])
        .map_err(|e| Error::new(format!("invariant {name}: {e}")))?;
    read(db, &sql, &result);
    let Some(row) = result.rows.first() else {
        return Ok(None);
    };
    let count = match row.last() {
        Some(Value::Integer(count)) => *count,
        _ => unreachable!("COUNT(*) is an integer"),
    };
    let values: Vec<String> = row[..columns.len()]
        .iter()
        .map(ToString::to_string)
        .collect();
    let share = if columns.len() == 1 {
        format!("{} = {}", columns[0], values[0])
    } else {
        format!("({}) = ({})", columns.join(", "), values.join(", "))
    };
    Ok(Some(Violation {
        invariant: name.to_string(),
        message: format!("{count} rows of {table} in D1:{db} share {share}"),
    }))
}

/// An SQL identifier, quoted so that any name is safe.
fn identifier(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// An SQL string literal.
fn sql_string(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The unique invariant needs no baseline.
    fn evaluate(spec: &InvariantSpec, databases: &mut Databases) -> Result<Option<Violation>> {
        super::evaluate(spec, None, databases)
    }

    fn spec(table: &str, columns: &[&str]) -> InvariantSpec {
        InvariantSpec::Unique {
            name: "one-charge-per-order".into(),
            db: "payments/DB".into(),
            table: table.into(),
            columns: columns.iter().map(|c| (*c).to_string()).collect(),
        }
    }

    fn databases(rows: &str) -> Databases {
        let mut databases = Databases::new();
        databases.open("payments/DB").unwrap();
        databases
            .setup(
                "payments/DB",
                &format!(
                    "CREATE TABLE charges (id INTEGER PRIMARY KEY, order_id TEXT, n INTEGER, \
                     b BLOB); {rows}"
                ),
            )
            .unwrap();
        databases.seal().unwrap();
        databases
    }

    #[test]
    fn reports_the_duplicate_exactly() {
        let mut db = databases(
            "INSERT INTO charges (order_id, n) VALUES ('o-2', 1), ('o-2', 1), ('o-1', 2), \
             (NULL, 3), (NULL, 3);",
        );
        let violation = evaluate(&spec("charges", &["order_id"]), &mut db)
            .unwrap()
            .unwrap();
        assert_eq!(violation.invariant, "one-charge-per-order");
        assert_eq!(
            violation.message,
            "2 rows of charges in D1:payments/DB share order_id = \"o-2\""
        );
        let pair = evaluate(&spec("charges", &["order_id", "n"]), &mut db)
            .unwrap()
            .unwrap();
        assert_eq!(
            pair.message,
            "2 rows of charges in D1:payments/DB share (order_id, n) = (\"o-2\", 1)"
        );
        // NULLs never collide.
        assert!(evaluate(&spec("charges", &["n"]), &mut db)
            .unwrap()
            .unwrap()
            .message
            .ends_with("share n = 1"));
    }

    #[test]
    fn holds_without_duplicates_and_shows_blobs_as_hex() {
        let mut db = databases("INSERT INTO charges (b) VALUES (x'00ff'), (x'00ff');");
        assert_eq!(
            evaluate(&spec("charges", &["order_id"]), &mut db).unwrap(),
            None
        );
        let blob = evaluate(&spec("charges", &["b"]), &mut db)
            .unwrap()
            .unwrap();
        assert!(
            blob.message.ends_with("share b = x'00ff'"),
            "{}",
            blob.message
        );
    }

    #[test]
    fn validation_names_what_is_missing() {
        let mut db = databases("");
        validate(&spec("charges", &["order_id"]), &mut db).unwrap();
        assert_eq!(
            validate(&spec("charge", &["order_id"]), &mut db)
                .unwrap_err()
                .message(),
            "invariant one-charge-per-order: D1:payments/DB has no table \"charge\""
        );
        assert_eq!(
            validate(&spec("charges", &["order_idx"]), &mut db)
                .unwrap_err()
                .message(),
            "invariant one-charge-per-order: D1:payments/DB table charges has no column \
             \"order_idx\""
        );
        let elsewhere = InvariantSpec::Unique {
            name: "x".into(),
            db: "DB".into(),
            table: "charges".into(),
            columns: vec!["order_id".into()],
        };
        assert_eq!(
            validate(&elsewhere, &mut db).unwrap_err().message(),
            "invariant x: no D1 database named 'DB'"
        );
    }

    fn accounts(rows: &str) -> Databases {
        let mut databases = Databases::new();
        databases.open("DB").unwrap();
        databases
            .setup(
                "DB",
                &format!(
                    "CREATE TABLE accounts (name TEXT PRIMARY KEY, balance INTEGER NOT NULL); \
                     INSERT INTO accounts VALUES ('alice', 10), ('bob', 0); {rows}"
                ),
            )
            .unwrap();
        databases
    }

    fn query(sql: &str) -> InvariantSpec {
        InvariantSpec::Query {
            name: "no-overdraft".into(),
            db: "DB".into(),
            sql: sql.into(),
        }
    }

    fn conserved(sql: &str) -> InvariantSpec {
        InvariantSpec::Conserved {
            name: "money-is-conserved".into(),
            db: "DB".into(),
            sql: sql.into(),
        }
    }

    #[test]
    fn a_query_breaks_with_its_rows() {
        let spec = query("SELECT name, balance FROM accounts WHERE balance < 0 ORDER BY name");
        let mut db = accounts("");
        assert_eq!(validate(&spec, &mut db).unwrap(), None);
        db.seal().unwrap();
        assert_eq!(super::evaluate(&spec, None, &mut db).unwrap(), None);
        db.run(
            "DB",
            "UPDATE accounts SET balance = -5 WHERE name = 'alice'",
            &[],
        )
        .unwrap();
        let one = super::evaluate(&spec, None, &mut db).unwrap().unwrap();
        assert_eq!(one.invariant, "no-overdraft");
        assert_eq!(
            one.message,
            "1 row from D1:DB breaks it: (name = \"alice\", balance = -5)"
        );
        db.run(
            "DB",
            "INSERT INTO accounts VALUES ('carol', -1), ('dave', -2)",
            &[],
        )
        .unwrap();
        let three = super::evaluate(&spec, None, &mut db).unwrap().unwrap();
        assert_eq!(
            three.message,
            "3 rows from D1:DB break it, the first: (name = \"alice\", balance = -5)"
        );
    }

    #[test]
    fn a_conserved_value_must_survive_the_run() {
        let spec = conserved("SELECT SUM(balance)\n  FROM accounts");
        let mut db = accounts("");
        let baseline = validate(&spec, &mut db).unwrap();
        assert_eq!(baseline, Some(Value::Integer(10)));
        db.seal().unwrap();
        db.run(
            "DB",
            "UPDATE accounts SET balance = 7 WHERE name = 'bob'",
            &[],
        )
        .unwrap();
        db.run(
            "DB",
            "UPDATE accounts SET balance = 3 WHERE name = 'alice'",
            &[],
        )
        .unwrap();
        assert_eq!(
            super::evaluate(&spec, baseline.as_ref(), &mut db).unwrap(),
            None
        );
        db.run(
            "DB",
            "UPDATE accounts SET balance = 0 WHERE name = 'bob'",
            &[],
        )
        .unwrap();
        let broken = super::evaluate(&spec, baseline.as_ref(), &mut db)
            .unwrap()
            .unwrap();
        assert_eq!(broken.invariant, "money-is-conserved");
        assert_eq!(
            broken.message,
            "SELECT SUM(balance) FROM accounts is 3 after the run, but was 10 after setup in \
             D1:DB"
        );
        db.run("DB", "DELETE FROM accounts", &[]).unwrap();
        let gone = super::evaluate(&spec, baseline.as_ref(), &mut db)
            .unwrap()
            .unwrap();
        assert!(
            gone.message.contains(" is null after the run"),
            "{}",
            gone.message
        );
    }

    #[test]
    fn query_validation_names_what_is_wrong() {
        let mut db = accounts("");
        let error = |spec: InvariantSpec, db: &mut Databases| {
            validate(&spec, db).unwrap_err().message().to_string()
        };
        let elsewhere = InvariantSpec::Query {
            name: "x".into(),
            db: "DB2".into(),
            sql: "SELECT 1".into(),
        };
        assert_eq!(
            error(elsewhere, &mut db),
            "invariant x: no D1 database named 'DB2'"
        );
        assert_eq!(
            error(query("SELECT * FROM nope"), &mut db),
            "invariant no-overdraft: D1:DB: the query does not prepare: no such table: nope"
        );
        assert_eq!(
            error(query("DELETE FROM accounts"), &mut db),
            "invariant no-overdraft: D1:DB: the query must only read"
        );
        assert_eq!(
            error(query("SELECT 1; SELECT 2"), &mut db),
            "invariant no-overdraft: D1:DB: the query must be a single statement"
        );
        assert_eq!(
            error(query("SELECT ?1"), &mut db),
            "invariant no-overdraft: D1:DB: the query must not take parameters"
        );
        assert_eq!(
            error(conserved("SELECT balance FROM accounts"), &mut db),
            "invariant money-is-conserved: a conserved invariant's query must return one row \
             of one value, but after setup it returned 2 rows"
        );
        assert_eq!(
            error(conserved("SELECT 1, 2"), &mut db),
            "invariant money-is-conserved: a conserved invariant's query must return one row \
             of one value, but after setup it returned 1 row of 2 values"
        );
    }
}
