//! The agent's own record of a session as the raw archive keeps it: the
//! `harnery.record` payloads the finalizer spooled for the session, read
//! back in the order they were received (each a header line, then the
//! record's bytes `start..end` exactly as the agent wrote them); and one
//! event by id, for what a restore looks up beside it.

use super::events::Events;
use crate::contract::SessionRef;
use crate::ledger::LedgerError;
use crate::ledger::raw::{Archive, RAW_DIR};

impl Events<'_> {
    /// Each `harnery.record` payload spooled for `session`, oldest first,
    /// read from its batch's archive (or the row, for rows kept inline).
    /// One payload is in memory at a time.
    pub(crate) fn for_each_record_payload(
        &self,
        session: &SessionRef,
        mut f: impl FnMut(&[u8]) -> Result<(), LedgerError>,
    ) -> Result<(), LedgerError> {
        let mut stmt = self.r.conn.prepare(
            "SELECT batch, archive_at, payload FROM raw_signals \
             WHERE adapter = ?1 AND session_key = ?2 AND event_name = 'harnery.record' \
             ORDER BY received_unix_ns",
        )?;
        let mut rows = stmt.query(rusqlite::params![
            session.adapter.as_str(),
            session.session_id
        ])?;
        let mut open: Option<(String, Archive)> = None;
        while let Some(r) = rows.next()? {
            let batch: String = r.get(0)?;
            let at: Option<i64> = r.get(1)?;
            let Some(at) = at else {
                let inline: Vec<u8> = r.get(2)?;
                f(&inline)?;
                continue;
            };
            if open.as_ref().is_none_or(|(b, _)| *b != batch) {
                open = Some((batch.clone(), Archive::open(self.r.dir(), &batch)?));
            }
            let (_, archive) = open.as_mut().expect("just opened");
            let record = archive
                .record_at(at as u64)
                .map_err(|detail| LedgerError::Corrupt {
                    path: self.r.dir().join(RAW_DIR).join(&batch),
                    detail,
                })?;
            f(&record.payload)?;
        }
        Ok(())
    }
}

impl Events<'_> {
    /// One event of `session` by its id (one indexed row).
    pub(crate) fn session_event(
        &self,
        session: &crate::contract::SessionRef,
        id: &str,
    ) -> Result<Option<crate::contract::Event>, LedgerError> {
        use rusqlite::OptionalExtension;
        let json: Option<String> = self
            .r
            .conn
            .query_row(
                "SELECT json FROM events WHERE adapter = ?1 AND session_id = ?2 AND id = ?3",
                rusqlite::params![session.adapter.as_str(), session.session_id, id],
                |r| r.get(0),
            )
            .optional()?;
        json.map(|j| self.parse_event(&j)).transpose()
    }
}
