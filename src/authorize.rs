//! What a Worker's SQL may do. D1 and a Durable Object's SQL storage run a Worker's statements
//! through workerd's authorizer, and inside a transaction of their own; Miniflare's workerd
//! (4.20260426.0) answers as listed here:
//!
//! - transaction statements (`BEGIN`, `COMMIT`, `ROLLBACK`, `END`, `SAVEPOINT`, `RELEASE`) are
//!   refused with workerd's advice to use `transactionSync()` (a D1 Worker uses `batch()`);
//! - `ATTACH`, `DETACH`, temporary tables, indexes, triggers and views are not authorized;
//! - of the pragmas, only those of `PRAGMAS_ALLOWED` run;
//! - `VACUUM` fails, as SQLite fails it inside a transaction.
//!
//! The engine's own statements (restoring the stores, the KV and queue bookkeeping, a Durable
//! Object's savepoints, invariants) are not a Worker's and are not judged.

use std::sync::{Arc, Mutex};

use rusqlite::fallible_iterator::FallibleIterator;
use rusqlite::hooks::{AuthAction, AuthContext, Authorization};
use rusqlite::{Batch, Connection};

/// workerd's refusal of `BEGIN`, `SAVEPOINT` and the like, which D1 shows after `D1_ERROR: `.
pub const TRANSACTION_REFUSED: &str = "To execute a transaction, please use the \
    state.storage.transaction() or state.storage.transactionSync() APIs instead of the SQL \
    BEGIN TRANSACTION or SAVEPOINT statements. The JavaScript API is safer because it will \
    automatically roll back on exceptions, and because it interacts correctly with Durable \
    Objects' automatic atomic write coalescing.";

/// SQLite's words for a statement its authorizer denied, with the code's name as D1 adds it.
pub const NOT_AUTHORIZED: &str = "not authorized: SQLITE_AUTH";

/// What SQLite says of `VACUUM` inside a transaction, which is where D1 runs it.
pub const VACUUM_REFUSED: &str = "cannot VACUUM from within a transaction: SQLITE_ERROR";

/// The pragmas workerd lets a Worker run; every other one is not authorized.
const PRAGMAS_ALLOWED: [&str; 18] = [
    "case_sensitive_like",
    "data_version",
    "defer_foreign_keys",
    "foreign_key_check",
    "foreign_key_list",
    "foreign_keys",
    "ignore_check_constraints",
    "index_info",
    "index_list",
    "index_xinfo",
    "legacy_alter_table",
    "optimize",
    "quick_check",
    "recursive_triggers",
    "reverse_unordered_selects",
    "table_info",
    "table_list",
    "table_xinfo",
];

/// The refusal the authorizer recorded while SQLite prepared a Worker's statement.
pub type Refused = Arc<Mutex<Option<&'static str>>>;

/// Whether workerd refuses what `action` does, and with which message.
fn refusal(action: &AuthAction<'_>) -> Option<&'static str> {
    match action {
        AuthAction::Transaction { .. } | AuthAction::Savepoint { .. } => Some(TRANSACTION_REFUSED),
        AuthAction::Attach { .. }
        | AuthAction::Detach { .. }
        | AuthAction::CreateTempIndex { .. }
        | AuthAction::CreateTempTable { .. }
        | AuthAction::CreateTempTrigger { .. }
        | AuthAction::CreateTempView { .. }
        | AuthAction::DropTempIndex { .. }
        | AuthAction::DropTempTable { .. }
        | AuthAction::DropTempTrigger { .. }
        | AuthAction::DropTempView { .. } => Some(NOT_AUTHORIZED),
        AuthAction::Pragma { pragma_name, .. } => {
            let allowed = PRAGMAS_ALLOWED
                .iter()
                .any(|name| name.eq_ignore_ascii_case(pragma_name));
            (!allowed).then_some(NOT_AUTHORIZED)
        }
        _ => None,
    }
}

/// Installs the authorizer on `connection` until `uninstall`: what it denies fails to prepare,
/// and `refused` says why.
pub fn install(connection: &Connection, refused: &Refused) -> rusqlite::Result<()> {
    let record = Arc::clone(refused);
    connection.authorizer(Some(move |context: AuthContext<'_>| {
        let Some(message) = refusal(&context.action) else {
            return Authorization::Allow;
        };
        if let Ok(mut refused) = record.lock() {
            refused.get_or_insert(message);
        }
        Authorization::Deny
    }))
}

pub fn uninstall(connection: &Connection) -> rusqlite::Result<()> {
    connection.authorizer(None::<fn(AuthContext<'_>) -> Authorization>)
}

/// Takes what the authorizer recorded since the last take.
pub fn take(refused: &Refused) -> Option<&'static str> {
    refused.lock().ok().and_then(|mut refused| refused.take())
}

/// Why workerd refuses the Worker's `sql` (one statement, or a script judged statement by
/// statement until one fails to prepare, which running it reports), or `None`.
pub fn judge(connection: &Connection, sql: &str) -> rusqlite::Result<Option<&'static str>> {
    let refused = Refused::default();
    install(connection, &refused)?;
    let mut batch = Batch::new(connection, sql);
    let mut vacuum = false;
    while let Ok(Some(statement)) = batch.next() {
        if statement
            .expanded_sql()
            .is_some_and(|text| first_word(&text).eq_ignore_ascii_case("vacuum"))
        {
            vacuum = true;
            break;
        }
    }
    uninstall(connection)?;
    Ok(take(&refused).or(vacuum.then_some(VACUUM_REFUSED)))
}

/// The first word of a statement, after whitespace and comments.
pub fn first_word(sql: &str) -> &str {
    let mut rest = sql;
    loop {
        rest = rest.trim_start();
        if let Some(comment) = rest.strip_prefix("--") {
            rest = comment.split_once('\n').map_or("", |(_, after)| after);
        } else if let Some(comment) = rest.strip_prefix("/*") {
            rest = comment.split_once("*/").map_or("", |(_, after)| after);
        } else {
            break;
        }
    }
    let end = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(rest.len());
    &rest[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn connection() -> Connection {
        let connection = Connection::open_in_memory().unwrap();
        connection
            .execute_batch("CREATE TABLE t (id INTEGER PRIMARY KEY)")
            .unwrap();
        connection
    }

    #[test]
    fn refuses_what_workerd_refuses() {
        let connection = connection();
        for (sql, expected) in [
            ("BEGIN", TRANSACTION_REFUSED),
            ("begin transaction", TRANSACTION_REFUSED),
            ("COMMIT", TRANSACTION_REFUSED),
            ("END", TRANSACTION_REFUSED),
            ("SAVEPOINT a", TRANSACTION_REFUSED),
            ("RELEASE a", TRANSACTION_REFUSED),
            ("ROLLBACK TO a", TRANSACTION_REFUSED),
            ("ATTACH DATABASE ':memory:' AS x", NOT_AUTHORIZED),
            ("DETACH x", NOT_AUTHORIZED),
            ("CREATE TEMP TABLE x (a)", NOT_AUTHORIZED),
            ("PRAGMA journal_mode", NOT_AUTHORIZED),
            ("PRAGMA user_version = 3", NOT_AUTHORIZED),
            ("pragma Page_Count", NOT_AUTHORIZED),
            ("  /* tidy */ VACUUM", VACUUM_REFUSED),
            ("SELECT 1; BEGIN", TRANSACTION_REFUSED),
        ] {
            assert_eq!(judge(&connection, sql).unwrap(), Some(expected), "{sql}");
        }
    }

    #[test]
    fn lets_the_rest_run() {
        let connection = connection();
        for sql in [
            "SELECT * FROM t",
            "INSERT INTO t (id) VALUES (1)",
            "PRAGMA foreign_keys",
            "PRAGMA foreign_keys = off",
            "PRAGMA defer_foreign_keys = true",
            "PRAGMA table_info(t)",
            "PRAGMA optimize",
            "SELECT * FROM pragma_table_info('t')",
            "CREATE TABLE u (a)",
            // Fails to prepare (no such table), which running it reports.
            "SELECT * FROM missing",
        ] {
            assert_eq!(judge(&connection, sql).unwrap(), None, "{sql}");
        }
        // The authorizer is gone afterwards: the engine's own statements run.
        connection.execute_batch("BEGIN; ROLLBACK").unwrap();
    }

    #[test]
    fn finds_the_first_word() {
        assert_eq!(first_word("  -- note\n /* a */ Vacuum;"), "Vacuum");
        assert_eq!(first_word("SELECT 1"), "SELECT");
        assert_eq!(first_word("-- only a comment"), "");
    }
}
