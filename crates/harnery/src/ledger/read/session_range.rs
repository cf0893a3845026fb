//! One session's events by offset range and by type, read as SQL ranges
//! over the `(adapter, session_id, offset)` key rather than a whole
//! session filtered in memory: the storage half of the session log's
//! replay and checkpoint reads (`crate::resume::log`).

use rusqlite::{OptionalExtension, params};

use super::events::Events;
use crate::contract::{Event, EventType, SessionRef};
use crate::ledger::LedgerError;

impl Events<'_> {
    /// The offset the session's next event would take: one past its last
    /// stored offset, 0 for a session with no events.
    pub fn session_head(&self, session: &SessionRef) -> Result<u64, LedgerError> {
        let mut stmt = self.r.conn.prepare_cached(
            "SELECT COALESCE(MAX(offset) + 1, 0) FROM events WHERE adapter = ?1 AND session_id = ?2",
        )?;
        let head: i64 = stmt
            .query_row(params![session.adapter.as_str(), session.session_id], |r| {
                r.get(0)
            })?;
        Ok(head as u64)
    }

    /// The session's events with `from <= offset < to`, in offset order.
    /// The bounds are the caller's to check (`session_log::replay`).
    pub(crate) fn session_range(
        &self,
        session: &SessionRef,
        from: u64,
        to: u64,
    ) -> Result<Vec<Event>, LedgerError> {
        let mut out = Vec::new();
        self.for_each_in_session_range(session, from, to, |e| {
            out.push(e);
            Ok::<(), LedgerError>(())
        })?;
        Ok(out)
    }

    /// [`Events::session_range`] one event at a time: each is parsed,
    /// handed to `f` and dropped, so a session of any length reads in
    /// bounded memory.
    pub(crate) fn for_each_in_session_range<E: From<LedgerError>>(
        &self,
        session: &SessionRef,
        from: u64,
        to: u64,
        mut f: impl FnMut(Event) -> Result<(), E>,
    ) -> Result<(), E> {
        let mut stmt = self
            .r
            .conn
            .prepare_cached(
                "SELECT json FROM events WHERE adapter = ?1 AND session_id = ?2 \
                 AND offset >= ?3 AND offset < ?4 ORDER BY offset",
            )
            .map_err(LedgerError::from)?;
        let key = params![
            session.adapter.as_str(),
            session.session_id,
            from as i64,
            to as i64
        ];
        let mut rows = stmt.query(key).map_err(LedgerError::from)?;
        while let Some(row) = rows.next().map_err(LedgerError::from)? {
            let json = row.get_ref(0).map_err(LedgerError::from)?;
            let json = json
                .as_str()
                .map_err(|e| LedgerError::from(rusqlite::Error::from(e)))?;
            f(self.parse_event(json)?)?;
        }
        Ok(())
    }

    /// The session's events of the given types, in offset order.
    pub(crate) fn session_events_of(
        &self,
        session: &SessionRef,
        types: &[EventType],
    ) -> Result<Vec<Event>, LedgerError> {
        let mut out = Vec::new();
        self.for_each_stored_text_of_types(session, types, |row| {
            let text = std::str::from_utf8(row.json).map_err(|e| LedgerError::Corrupt {
                path: self.r.dir.join(crate::ledger::DB_FILE),
                detail: format!("event seq {} is not UTF-8: {e}", row.seq),
            })?;
            out.push(self.parse_event(text)?);
            Ok::<(), LedgerError>(())
        })?;
        Ok(out)
    }

    /// The session's first event of type `ty` (lowest offset), if any:
    /// read along the session's offset index, stopping at the first.
    pub(crate) fn session_first_of(
        &self,
        session: &SessionRef,
        ty: EventType,
    ) -> Result<Option<Event>, LedgerError> {
        let mut stmt = self.r.conn.prepare_cached(
            "SELECT CAST(json AS TEXT) FROM events \
             WHERE adapter = ?1 AND session_id = ?2 AND type = ?3 ORDER BY offset LIMIT 1",
        )?;
        let key = params![session.adapter.as_str(), session.session_id, ty.as_str()];
        let text: Option<String> = stmt.query_row(key, |r| r.get(0)).optional()?;
        text.map(|t| self.parse_event(&t)).transpose()
    }

    /// The stored text of the session's event at `offset`, and its seq
    /// (one indexed row; `None` when there is none).
    pub(crate) fn event_text(
        &self,
        session: &SessionRef,
        offset: u64,
    ) -> Result<Option<(i64, String)>, LedgerError> {
        let mut stmt = self.r.conn.prepare_cached(
            "SELECT seq, CAST(json AS TEXT) FROM events \
             WHERE adapter = ?1 AND session_id = ?2 AND offset = ?3",
        )?;
        let key = params![session.adapter.as_str(), session.session_id, offset as i64];
        Ok(stmt
            .query_row(key, |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?)
    }
}
