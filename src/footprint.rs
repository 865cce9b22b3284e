//! What a D1 statement touches, for partial-order reduction: `d1Footprint(db, sql)`.
//!
//! The statement is prepared, never run, with SQLite's authorizer callback installed; SQLite
//! reports every table it reads (`SQLITE_READ`) and writes (`SQLITE_INSERT`, `SQLITE_UPDATE`,
//! `SQLITE_DELETE`), including from the triggers and views the statement fires, which are
//! compiled into it. Foreign keys are not reported, so a written table also reads the tables it
//! references and writes the tables that reference it (a cascade). Resources are tables,
//! `D1:<db>:<table>`, so two statements on different rows of one table still conflict.
//!
//! What cannot be told apart safely answers the empty footprint, which conflicts with every
//! step: schema changes, transactions, pragmas, attachments, and reads of connection state
//! (`last_insert_rowid()`, `changes()`), which any write on the connection changes.
//! `random()` and `randomblob()` draw from SQLite's PRNG, global to the library, so they write
//! the resource `SQLite:random`. A statement that touches no table (or does not prepare, and
//! so touches nothing until the schema changes) reads `D1:<db>`, which nothing writes.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use rusqlite::fallible_iterator::FallibleIterator;
use rusqlite::hooks::{AuthAction, AuthContext, Authorization};
use rusqlite::{Batch, Connection};

use crate::d1::STATEMENTS_MAX;
use crate::error::{Error, Result};
use crate::strategy::Access;

/// Functions whose results depend on SQLite's global PRNG.
const RANDOM_FUNCTIONS: [&str; 2] = ["random", "randomblob"];

/// Functions that read the connection's state, which every write changes.
const CONNECTION_FUNCTIONS: [&str; 3] = ["last_insert_rowid", "changes", "total_changes"];

/// The resource every `random()` draw writes.
pub const RANDOM_RESOURCE: &str = "SQLite:random";

/// Upper bound on the foreign keys followed per statement.
const FOREIGN_KEYS_MAX: usize = 10_000;

#[derive(Debug, Default)]
struct Seen {
    reads: BTreeSet<String>,
    writes: BTreeSet<String>,
    random: bool,
    /// Something the footprint cannot express happened: conflict with everything.
    unknown: bool,
}

fn observe(seen: &mut Seen, context: &AuthContext<'_>) {
    // The temp schema belongs to the connection and is shared by every invocation using it.
    if context.database_name == Some("temp") {
        seen.unknown = true;
    }
    match context.action {
        AuthAction::Read { table_name, .. } => {
            seen.reads.insert(table_name.to_lowercase());
        }
        AuthAction::Insert { table_name }
        | AuthAction::Delete { table_name }
        | AuthAction::Update { table_name, .. } => {
            seen.writes.insert(table_name.to_lowercase());
        }
        AuthAction::Function { function_name } => {
            let name = function_name.to_lowercase();
            if RANDOM_FUNCTIONS.contains(&name.as_str()) {
                seen.random = true;
            }
            if CONNECTION_FUNCTIONS.contains(&name.as_str()) {
                seen.unknown = true;
            }
        }
        AuthAction::Select | AuthAction::Recursive => {}
        _ => seen.unknown = true,
    }
}

/// The footprint of `sql` (one statement or a script) on the database `db` behind
/// `connection`.
pub fn footprint(connection: &Connection, db: &str, sql: &str) -> Result<Vec<Access>> {
    let seen = Arc::new(Mutex::new(Seen::default()));
    let recorder = Arc::clone(&seen);
    connection
        .authorizer(Some(move |context: AuthContext<'_>| {
            if let Ok(mut seen) = recorder.lock() {
                observe(&mut seen, &context);
            }
            Authorization::Allow
        }))
        .map_err(|e| Error::new(format!("d1Footprint: {e}")))?;
    let prepared = prepare_all(connection, sql);
    connection
        .authorizer(None::<fn(AuthContext<'_>) -> Authorization>)
        .map_err(|e| Error::new(format!("d1Footprint: {e}")))?;
    let seen = std::mem::take(
        &mut *seen
            .lock()
            .map_err(|_| Error::new("d1Footprint: poisoned"))?,
    );
    if prepared.is_err() {
        // It fails when it runs, touching nothing, until the schema changes (which conflicts
        // with every step anyway).
        return Ok(vec![nothing(db)]);
    }
    if seen.unknown {
        return Ok(Vec::new());
    }
    let mut reads = seen.reads;
    let mut writes = seen.writes;
    if !writes.is_empty() {
        follow_foreign_keys(connection, &mut reads, &mut writes)?;
    }
    let mut accesses: Vec<Access> = writes
        .iter()
        .map(|table| Access {
            resource: format!("D1:{db}:{table}"),
            write: true,
        })
        .chain(reads.difference(&writes).map(|table| Access {
            resource: format!("D1:{db}:{table}"),
            write: false,
        }))
        .collect();
    if seen.random {
        accesses.push(Access {
            resource: RANDOM_RESOURCE.to_string(),
            write: true,
        });
    }
    if accesses.is_empty() {
        accesses.push(nothing(db));
    }
    accesses.sort();
    Ok(accesses)
}

fn nothing(db: &str) -> Access {
    Access {
        resource: format!("D1:{db}"),
        write: false,
    }
}

fn prepare_all(connection: &Connection, sql: &str) -> rusqlite::Result<()> {
    let mut batch = Batch::new(connection, sql);
    let mut statements = 0;
    while let Some(_statement) = batch.next()? {
        statements += 1;
        if statements > STATEMENTS_MAX {
            break;
        }
    }
    Ok(())
}

/// A write to a table checks the rows it references (a read of the parent tables) and may
/// cascade to the rows that reference it (a write of the child tables), transitively.
fn follow_foreign_keys(
    connection: &Connection,
    reads: &mut BTreeSet<String>,
    writes: &mut BTreeSet<String>,
) -> Result<()> {
    let mut statement = connection
        .prepare(
            "SELECT lower(m.name), lower(f.\"table\") FROM sqlite_schema AS m \
             JOIN pragma_foreign_key_list(m.name) AS f WHERE m.type = 'table'",
        )
        .map_err(|e| Error::new(format!("d1Footprint: {e}")))?;
    let keys: Vec<(String, String)> = statement
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
        .map_err(|e| Error::new(format!("d1Footprint: {e}")))?
        .take(FOREIGN_KEYS_MAX)
        .collect::<rusqlite::Result<_>>()
        .map_err(|e| Error::new(format!("d1Footprint: {e}")))?;
    // Each pass adds at least one table or stops; there are at most as many tables as keys.
    for _ in 0..=keys.len() {
        let mut grew = false;
        for (child, parent) in &keys {
            if writes.contains(child) {
                reads.insert(parent.clone());
            }
            if writes.contains(parent) && writes.insert(child.clone()) {
                grew = true;
            }
        }
        if !grew {
            break;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn connection() -> Connection {
        let connection = Connection::open_in_memory().unwrap();
        connection
            .execute_batch(
                "CREATE TABLE orders (id TEXT PRIMARY KEY, status TEXT);
                 CREATE TABLE charges (id INTEGER PRIMARY KEY, order_id TEXT
                   REFERENCES orders(id) ON DELETE CASCADE, amount INTEGER);
                 CREATE TABLE audit (what TEXT);
                 CREATE TRIGGER charged AFTER INSERT ON charges
                   BEGIN INSERT INTO audit VALUES ('charge'); END;",
            )
            .unwrap();
        connection
    }

    fn show(accesses: &[Access]) -> Vec<String> {
        accesses
            .iter()
            .map(|a| format!("{}{}", if a.write { "w " } else { "r " }, a.resource))
            .collect()
    }

    fn of(sql: &str) -> Vec<String> {
        show(&footprint(&connection(), "DB", sql).unwrap())
    }

    #[test]
    fn reads_and_writes_by_table() {
        assert_eq!(
            of("SELECT status FROM orders WHERE id = ?1"),
            ["r D1:DB:orders"]
        );
        assert_eq!(
            of("UPDATE orders SET status = 'paid' WHERE id = ?1"),
            ["w D1:DB:charges", "w D1:DB:orders"],
            "a cascade reaches the tables that reference it"
        );
        assert_eq!(
            of("INSERT INTO charges (order_id, amount) VALUES (?1, 5)"),
            ["w D1:DB:audit", "w D1:DB:charges", "r D1:DB:orders"],
            "the trigger's insert and the foreign key's parent count"
        );
        assert_eq!(of("SELECT 1"), ["r D1:DB"]);
        assert_eq!(of("SELECT * FROM nowhere"), ["r D1:DB"]);
        assert_eq!(
            of("INSERT INTO audit VALUES (hex(randomblob(4)))"),
            ["w D1:DB:audit", "w SQLite:random"]
        );
    }

    #[test]
    fn what_it_cannot_tell_conflicts_with_everything() {
        assert!(of("CREATE TABLE t (x)").is_empty());
        assert!(of("BEGIN").is_empty());
        assert!(of("PRAGMA foreign_keys = OFF").is_empty());
        assert!(of("SELECT last_insert_rowid()").is_empty());
        assert!(of("SELECT 1; DROP TABLE audit").is_empty());
    }
}
