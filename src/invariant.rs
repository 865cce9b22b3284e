//! Invariants the engine evaluates itself over the simulated state at the end of a run.
//!
//! `unique`: no two rows of a D1 table agree on a set of columns. Rows with a NULL in any of
//! the columns are ignored, as a SQL UNIQUE constraint ignores them.

use crate::config::InvariantSpec;
use crate::d1::{Databases, Value};
use crate::error::{Error, Result};

/// A broken invariant: its name and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    pub invariant: String,
    pub message: String,
}

/// Checks, once setup is sealed, that everything an invariant names exists, so that a typo is
/// a clear error before any run instead of a failure in every run.
pub fn validate(spec: &InvariantSpec, databases: &mut Databases) -> Result<()> {
    let InvariantSpec::Unique {
        name,
        db,
        table,
        columns,
    } = spec;
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
        &[Value::Text(table.clone())],
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

/// Evaluates the invariant; `None` when it holds.
pub fn evaluate(spec: &InvariantSpec, databases: &mut Databases) -> Result<Option<Violation>> {
    let InvariantSpec::Unique {
        name,
        db,
        table,
        columns,
    } = spec;
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
        invariant: name.clone(),
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
}
