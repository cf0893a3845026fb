//! Rows that cannot be read as they were written: a text column that is
//! not UTF-8, a number where text belongs (a damaged disk, a hand edit).
//! Such a row is named where a user can find it (table, key, column) and
//! never stops a read that can go on without it: the listings below pass
//! it over and set it aside on the [`LedgerReader`], and the command reports
//! what was set aside ([`LedgerReader::take_set_aside`]). A read that needs the
//! row gets [`LedgerError::Unreadable`] naming it.

use rusqlite::Row;
use serde::Serialize;

use super::LedgerReader;
use crate::ledger::LedgerError;

/// One row a read could not use.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UnreadableRow {
    pub table: String,
    /// The row's key as stored (bytes that are not UTF-8 shown as `\xNN`).
    pub row: String,
    pub detail: String,
}

impl std::fmt::Display for UnreadableRow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "table {} row {} cannot be read: {}",
            self.table, self.row, self.detail
        )
    }
}

/// Whether `e` says a value could not be read as its type (as opposed to
/// the database failing).
pub(super) fn is_conversion(e: &rusqlite::Error) -> bool {
    matches!(
        e,
        rusqlite::Error::FromSqlConversionFailure(..)
            | rusqlite::Error::Utf8Error(..)
            | rusqlite::Error::InvalidColumnType(..)
            | rusqlite::Error::IntegralValueOutOfRange(..)
    )
}

/// The row `r` of `table`, named by its `key` columns, and what `e` says
/// is wrong with it.
pub(super) fn describe(table: &str, r: &Row, key: &[usize], e: &rusqlite::Error) -> UnreadableRow {
    let part = |i: usize| match r.get_ref(i) {
        Ok(v) => match v.as_bytes() {
            Ok(b) => shown_bytes(b),
            Err(_) => format!("{v:?}"),
        },
        Err(_) => "?".into(),
    };
    let row = key.iter().map(|&i| part(i)).collect::<Vec<_>>().join("/");
    let column = |i: usize| r.as_ref().column_name(i).unwrap_or("?").to_string();
    let detail = match e {
        rusqlite::Error::FromSqlConversionFailure(i, _, why) => {
            format!("column {} is not valid: {why}", column(*i))
        }
        // Text that is not UTF-8, read as a string.
        rusqlite::Error::Utf8Error(i, why) => {
            format!("column {} is not valid: {why}", column(*i))
        }
        rusqlite::Error::InvalidColumnType(i, name, ty) => {
            format!("column {name} (#{i}) holds a {ty} value")
        }
        other => other.to_string(),
    };
    UnreadableRow {
        table: table.into(),
        row,
        detail,
    }
}

/// `bytes` as text, each byte that is not UTF-8 written `\xNN`, so the
/// name shows exactly which bytes are wrong.
fn shown_bytes(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        out.push_str(chunk.valid());
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out
}

impl LedgerReader {
    /// Each row `read` can read, in order; a row it cannot (a conversion
    /// error) is set aside, named by its `key` columns. Any other error
    /// stops the read.
    pub(super) fn lenient_rows<T>(
        &self,
        mut rows: rusqlite::Rows<'_>,
        table: &str,
        key: &[usize],
        mut read: impl FnMut(&Row) -> rusqlite::Result<T>,
    ) -> Result<Vec<T>, LedgerError> {
        let mut out = Vec::new();
        while let Some(r) = rows.next()? {
            match read(r) {
                Ok(v) => out.push(v),
                Err(e) if is_conversion(&e) => self.set_aside(describe(table, r, key, &e)),
                Err(e) => return Err(e.into()),
            }
        }
        Ok(out)
    }

    /// [`Bookkeeping::producer_state`](super::Bookkeeping::producer_state), with a state that cannot be read set
    /// aside (as none): for the sweeps over every session.
    pub(crate) fn producer_state_or_set_aside(
        &self,
        session: &crate::contract::SessionRef,
    ) -> Result<Option<String>, LedgerError> {
        match self.bookkeeping().producer_state(session) {
            Err(LedgerError::Unreadable(row)) => {
                self.set_aside(*row);
                Ok(None)
            }
            other => other,
        }
    }

    /// Keep `row` to report (once).
    pub fn set_aside(&self, row: UnreadableRow) {
        let mut kept = self.set_aside.borrow_mut();
        if !kept.contains(&row) {
            kept.push(row);
        }
    }

    /// An error naming the first row the reads so far passed over, if
    /// any: for a reader that must not leave a row out (shipping a copy).
    pub(crate) fn refuse_set_aside(&self) -> Result<(), LedgerError> {
        match self.take_set_aside().into_iter().next() {
            Some(row) => Err(LedgerError::Unreadable(Box::new(row))),
            None => Ok(()),
        }
    }

    /// The rows lenient reads have passed over since the last call.
    pub fn take_set_aside(&self) -> Vec<UnreadableRow> {
        std::mem::take(&mut *self.set_aside.borrow_mut())
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_key_shows_its_bad_bytes() {
        assert_eq!(super::shown_bytes(b"abc\xff\xfed"), "abc\\xff\\xfed");
        assert_eq!(super::shown_bytes("é".as_bytes()), "é");
    }
}
