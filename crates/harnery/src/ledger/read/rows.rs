//! Rows as stored, streamed for whoever copies the ledger elsewhere (the
//! fleet shipper): event rows with their chain columns, in chain order
//! from a given row on, and span rows one at a time. Nothing is parsed
//! or kept; each row is borrowed from SQLite for the length of a callback.

use rusqlite::OptionalExtension;

use super::{LedgerReader, SpanRow, span_row};
use crate::contract::{Event, SessionRef};
use crate::ledger::LedgerError;

/// One event row with its chain columns, exactly as stored (text columns
/// as their bytes: a NUL or a byte that is not UTF-8 is passed on, not
/// refused).
#[derive(Debug, Clone, Copy)]
pub struct ChainRow<'r> {
    pub seq: i64,
    pub id: &'r [u8],
    pub adapter: &'r [u8],
    pub session_id: &'r [u8],
    pub offset: i64,
    pub ty: &'r [u8],
    pub time_unix_ns: i64,
    pub json: &'r [u8],
    pub prev_hash: &'r [u8],
    pub hash: &'r [u8],
}

/// Stored rows streamed in sequence order: the chain, a session's events, the spans.
pub struct Rows<'r> {
    pub(super) r: &'r LedgerReader,
}

impl Rows<'_> {
    /// Every event of one session in offset order, parsed one at a time
    /// (a row that does not parse is left out, as
    /// `session_events_lenient` leaves it out), so a caller that folds a
    /// session need not hold it.
    pub(crate) fn for_each_session_event<E: From<LedgerError>>(
        &self,
        session: &SessionRef,
        mut f: impl FnMut(Event) -> Result<(), E>,
    ) -> Result<(), E> {
        let read = |e: rusqlite::Error| E::from(LedgerError::from(e));
        let mut stmt = self.r
            .conn
            .prepare_cached(
                "SELECT CAST(json AS BLOB) FROM events WHERE adapter = ?1 AND session_id = ?2 ORDER BY offset",
            )
            .map_err(read)?;
        let mut rows = stmt
            .query(rusqlite::params![
                session.adapter.as_str(),
                session.session_id
            ])
            .map_err(read)?;
        while let Some(r) = rows.next().map_err(read)? {
            let json = r.get_ref(0).map_err(read)?.as_blob().unwrap_or_default();
            if let Ok(e) = serde_json::from_slice::<Event>(json) {
                f(e)?;
            }
        }
        Ok(())
    }

    /// Up to `limit` event rows after `after_seq`, in chain order; the
    /// number of rows `f` saw.
    pub(crate) fn for_each_chain_row<E: From<LedgerError>>(
        &self,
        after_seq: i64,
        limit: u64,
        mut f: impl FnMut(ChainRow<'_>) -> Result<(), E>,
    ) -> Result<u64, E> {
        let read = |e: rusqlite::Error| E::from(LedgerError::from(e));
        let mut stmt = self.r
            .conn
            .prepare_cached(
                "SELECT seq, id, adapter, session_id, offset, type, time_unix_ns, CAST(json AS BLOB), prev_hash, hash \
                 FROM events WHERE seq > ?1 ORDER BY seq LIMIT ?2",
            )
            .map_err(read)?;
        let mut rows = stmt
            .query(rusqlite::params![
                after_seq,
                limit.min(i64::MAX as u64) as i64
            ])
            .map_err(read)?;
        let mut n = 0;
        while let Some(r) = rows.next().map_err(read)? {
            let text = |i: usize| -> Result<&[u8], E> {
                let v = r.get_ref(i).map_err(read)?;
                v.as_bytes().map_err(|e| read(e.into()))
            };
            let blob = |i: usize| -> Result<&[u8], E> {
                let v = r.get_ref(i).map_err(read)?;
                v.as_blob().map_err(|e| read(e.into()))
            };
            f(ChainRow {
                seq: r.get(0).map_err(read)?,
                id: text(1)?,
                adapter: text(2)?,
                session_id: text(3)?,
                offset: r.get(4).map_err(read)?,
                ty: text(5)?,
                time_unix_ns: r.get(6).map_err(read)?,
                json: blob(7)?,
                prev_hash: blob(8)?,
                hash: blob(9)?,
            })?;
            n += 1;
        }
        Ok(n)
    }

    /// The stored hash of row `seq`, if the epoch has that row.
    pub(crate) fn row_hash(&self, seq: i64) -> Result<Option<Vec<u8>>, LedgerError> {
        Ok(self
            .r
            .conn
            .query_row("SELECT hash FROM events WHERE seq = ?1", [seq], |r| {
                r.get(0)
            })
            .optional()?)
    }

    /// The event of row `seq`, if the epoch has that row and it parses
    /// (what `search` checks a hit's text against).
    pub(crate) fn event_at(&self, seq: i64) -> Result<Option<Event>, LedgerError> {
        let json: Option<Vec<u8>> = self
            .r
            .conn
            .prepare_cached("SELECT CAST(json AS BLOB) FROM events WHERE seq = ?1")?
            .query_row([seq], |r| r.get(0))
            .optional()?;
        Ok(json.and_then(|j| serde_json::from_slice(&j).ok()))
    }

    /// The last row's sequence number (0 for an empty epoch).
    pub(crate) fn last_seq(&self) -> Result<i64, LedgerError> {
        Ok(self
            .r
            .conn
            .query_row("SELECT coalesce(max(seq), 0) FROM events", [], |r| r.get(0))?)
    }

    /// Every span row, one at a time, in storage order.
    pub(crate) fn for_each_span<E: From<LedgerError>>(
        &self,
        mut f: impl FnMut(SpanRow) -> Result<(), E>,
    ) -> Result<(), E> {
        let read = |e: rusqlite::Error| E::from(LedgerError::from(e));
        let mut stmt = self.r
            .conn
            .prepare(
                "SELECT request_event_id, adapter, session_id, kind, name, tool_call_id, agent_id, turn_id, \
                 requested_unix_ns, state, reason, completed_event_id, outcome, duration_ms, completed_unix_ns FROM spans",
            )
            .map_err(read)?;
        let mut rows = stmt.query([]).map_err(read)?;
        while let Some(r) = rows.next().map_err(read)? {
            f(span_row(r).map_err(read)?)?;
        }
        Ok(())
    }
}
