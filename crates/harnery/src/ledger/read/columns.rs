//! Typed columns read from a row, shared by the queries: a session
//! reference (adapter and session id side by side).

use rusqlite::Row;

use crate::contract::{AdapterId, SessionRef};

pub(in crate::ledger) fn session_at(r: &Row, at: usize) -> rusqlite::Result<SessionRef> {
    let adapter: String = r.get(at)?;
    let adapter = AdapterId::parse(&adapter).ok_or_else(|| {
        rusqlite::Error::FromSqlConversionFailure(
            at,
            rusqlite::types::Type::Text,
            format!("unknown adapter {adapter}").into(),
        )
    })?;
    Ok(SessionRef {
        adapter,
        session_id: r.get(at + 1)?,
    })
}
