//! Where things are in a SQL script: where SQLite's parser ends the statement a text starts
//! with, where a statement's first token is, and a byte offset as the line and column an
//! editor shows. A setup script that fails is reported at the failing statement's line.
//!
//! The end of a statement is SQLite's to say, not a tokenizer's of our own: a semicolon inside
//! a string, a comment or a trigger's `BEGIN … END` does not end one, and a statement runs
//! through its semicolon. rusqlite's `Batch` keeps that end to itself, so `first_statement`
//! asks SQLite directly.

use std::ffi::{c_int, CStr};
use std::ptr;

use rusqlite::{ffi, Connection};

/// A place in a text, counted as editors count: lines from 1, split at `\n`, `\r\n` or `\r`;
/// columns from 1, in UTF-16 code units (what JavaScript and editors count), past a
/// byte-order mark.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Position {
    pub line: usize,
    pub column: usize,
}

/// Where byte `offset` of `text` is (the end of `text` when past it).
pub fn position(text: &str, offset: usize) -> Position {
    let mut line = 1;
    let mut column = 1;
    let mut chars = text.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        if at >= offset {
            break;
        }
        match c {
            // A byte-order mark opening the file takes no column in an editor.
            '\u{feff}' if at == 0 => {}
            // `\r\n` is one break: the `\r` waits for the `\n` after it.
            '\r' if chars.peek().is_some_and(|&(_, next)| next == '\n') => {}
            '\n' | '\r' => {
                line += 1;
                column = 1;
            }
            c => column += c.len_utf16(),
        }
    }
    Position { line, column }
}

/// The byte offset of the first token at or after `from`: past blank space, `--` and `/* */`
/// comments, and the semicolons of empty statements, which SQLite reads as part of the
/// statement after them.
pub fn first_token(text: &str, from: usize) -> usize {
    let bytes = text.as_bytes();
    let mut at = from;
    while at < bytes.len() {
        match bytes[at] {
            b' ' | b'\t' | b'\n' | b'\x0c' | b'\r' | b';' => at += 1,
            b'-' if bytes.get(at + 1) == Some(&b'-') => {
                at = text[at..]
                    .find('\n')
                    .map_or(bytes.len(), |end| at + end + 1);
            }
            b'/' if bytes.get(at + 1) == Some(&b'*') => {
                at = text[at + 2..]
                    .find("*/")
                    .map_or(bytes.len(), |end| at + 2 + end + 2);
            }
            _ => break,
        }
    }
    at
}

/// SQLite's error preparing a statement, and the byte offset of the token it blames (in the
/// text it was given) when it names one.
#[derive(Debug)]
pub struct PrepareError {
    pub error: rusqlite::Error,
    pub offset: Option<usize>,
}

/// How long the statement `sql` starts with is, as SQLite's parser reads it: through its
/// semicolon (or the end of `sql`), with the blank space, comments and empty statements
/// before it. `None` when `sql` holds no statement, only those.
///
/// It compiles the statement against `connection` and throws it away, so it fails as
/// preparing that statement would: a syntax error, or a table not yet created.
pub fn first_statement(
    connection: &Connection,
    sql: &str,
) -> std::result::Result<Option<usize>, PrepareError> {
    let Ok(len) = c_int::try_from(sql.len()) else {
        let error = rusqlite::Error::SqliteFailure(ffi::Error::new(ffi::SQLITE_TOOBIG), None);
        return Err(PrepareError {
            error,
            offset: None,
        });
    };
    let mut statement: *mut ffi::sqlite3_stmt = ptr::null_mut();
    let mut tail: *const std::ffi::c_char = ptr::null();
    // SAFETY: the handle is the open connection's, used on this thread only; `sql` outlives
    // the call and `len` is its length, so SQLite reads only `sql`; `tail` points into it or
    // is null. The statement is finalized before return, and finalizing null is a no-op.
    unsafe {
        let db = connection.handle();
        let code =
            ffi::sqlite3_prepare_v3(db, sql.as_ptr().cast(), len, 0, &mut statement, &mut tail);
        if code != ffi::SQLITE_OK {
            let message = CStr::from_ptr(ffi::sqlite3_errmsg(db))
                .to_string_lossy()
                .into_owned();
            let offset = usize::try_from(ffi::sqlite3_error_offset(db)).ok();
            let error = rusqlite::Error::SqliteFailure(ffi::Error::new(code), Some(message));
            return Err(PrepareError { error, offset });
        }
        if statement.is_null() {
            return Ok(None);
        }
        ffi::sqlite3_finalize(statement);
        let end = if tail.is_null() {
            sql.len()
        } else {
            (tail as usize - sql.as_ptr() as usize).min(sql.len())
        };
        Ok(Some(end))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(line: usize, column: usize) -> Position {
        Position { line, column }
    }

    #[test]
    fn positions_count_lines_as_editors_do() {
        let text = "a\nbc\r\nd\re";
        assert_eq!(position(text, 0), at(1, 1));
        assert_eq!(position(text, 3), at(2, 2));
        // A `\r\n` ends line 2 once: the line after starts past it.
        assert_eq!(position(text, 4), at(2, 3));
        assert_eq!(position(text, 6), at(3, 1));
        assert_eq!(position(text, 8), at(4, 1));
        assert_eq!(position(text, 99), at(4, 2));
        // Columns count UTF-16 code units: `é` is one, `𝄞` two.
        assert_eq!(position("é𝄞x", "é𝄞".len()), at(1, 4));
        assert_eq!(position("\u{feff}x", 3), at(1, 1));
    }

    #[test]
    fn first_token_skips_comments_space_and_empty_statements() {
        let text = " ;\r\n-- note; here\n/* a; b */ ;CREATE";
        assert_eq!(first_token(text, 0), text.find("CREATE").unwrap());
        assert_eq!(first_token("x", 0), 0);
        assert_eq!(first_token("-- only", 0), 7);
        assert_eq!(first_token("/* open", 0), 7);
        // One `-` or `/` is a token.
        assert_eq!(first_token(" -1", 0), 1);
        assert_eq!(first_token(" /2", 0), 1);
    }

    #[test]
    fn statements_end_where_sqlite_ends_them() {
        let connection = Connection::open_in_memory().unwrap();
        let script = "-- a; comment\n;; SELECT ';' /* ; */;\n\
                      CREATE TRIGGER t AFTER INSERT ON x BEGIN SELECT 1; SELECT 2; END; \n -- end";
        connection.execute_batch("CREATE TABLE x (v)").unwrap();
        let first = first_statement(&connection, script).unwrap().unwrap();
        assert_eq!(&script[..first], "-- a; comment\n;; SELECT ';' /* ; */;");
        let second = first
            + first_statement(&connection, &script[first..])
                .unwrap()
                .unwrap();
        assert!(
            script[..second].ends_with("END;"),
            "{}",
            &script[first..second]
        );
        assert_eq!(
            first_statement(&connection, &script[second..]).unwrap(),
            None
        );
        // Without a semicolon, the statement runs to the end.
        assert_eq!(first_statement(&connection, "SELECT 1").unwrap(), Some(8));
    }

    #[test]
    fn a_statement_that_cannot_be_prepared_names_the_token_sqlite_blames() {
        let connection = Connection::open_in_memory().unwrap();
        let error = first_statement(&connection, "  CREAT TABLE t (v);").unwrap_err();
        assert_eq!(error.offset, Some(2));
        assert_eq!(
            error.error.to_string(),
            "near \"CREAT\": syntax error",
            "{:?}",
            error.error
        );
    }
}
