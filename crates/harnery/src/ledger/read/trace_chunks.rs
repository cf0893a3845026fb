//! The trace chunks as export reads them: whether the ledger keeps them,
//! the chunks of a range of sessions, and the sessions with notes and their
//! texts.

use std::collections::HashSet;

use rusqlite::params;

use super::{LedgerReader, StoredText, each_stored_text, session_at};
use crate::contract::SessionRef;
use crate::ledger::LedgerError;
use crate::ledger::trace_rows::{TracePart, entries};

/// One session's trace chunks as [`Trace::read_trace_chunks`] hands
/// them on: each chunk's entries, then the stored text of each of its
/// whole entries, in offset order.
pub enum ChunkRead<'a> {
    /// A chunk: its first offset, how many events it counts, and its
    /// entries' text.
    Entries {
        first_offset: u64,
        events: u64,
        entries: &'a [u8],
    },
    Whole(StoredText<'a>),
}

/// The trace rows (span notes and chunks) kept beside the events.
pub struct Trace<'r> {
    pub(super) r: &'r LedgerReader,
}

impl Trace<'_> {
    /// Whether this ledger keeps trace chunks (migration `trace_chunks`; an
    /// archived epoch an older build wrote may not). In a compact ledger
    /// `trace_chunks` is a view (`ledger::eventz`).
    pub(crate) fn keeps_trace_rows(&self) -> Result<bool, LedgerError> {
        Ok(self.r.conn.query_row(
            "SELECT EXISTS (SELECT 1 FROM sqlite_schema WHERE type IN ('table', 'view') AND name = 'trace_chunks')",
            [],
            |r| r.get(0),
        )?)
    }

    /// One session's trace chunks in offset order, each followed by the
    /// text of its whole entries. A whole entry whose event row is not
    /// there has no text: the decoder finds it missing.
    pub(crate) fn read_trace_chunks<E: From<LedgerError>>(
        &self,
        session: &SessionRef,
        mut f: impl FnMut(ChunkRead<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        let read = |e: rusqlite::Error| E::from(LedgerError::from(e));
        let mut stmt = self
            .r
            .conn
            .prepare_cached(
                "SELECT wholes, CAST(entries AS BLOB), events, first_offset FROM trace_chunks \
                 WHERE adapter = ?1 AND session_id = ?2 ORDER BY first_offset",
            )
            .map_err(read)?;
        let mut rows = stmt
            .query(params![session.adapter.as_str(), session.session_id])
            .map_err(read)?;
        while let Some(r) = rows.next().map_err(read)? {
            let entries = r.get_ref(1).map_err(read)?.as_blob().unwrap_or_default();
            let events = r.get::<_, i64>(2).map_err(read)?.max(0) as u64;
            let first_offset = r.get::<_, i64>(3).map_err(read)?.max(0) as u64;
            f(ChunkRead::Entries {
                first_offset,
                events,
                entries,
            })?;
            let Some(wholes) = r.get_ref(0).map_err(read)?.as_str_or_null().ok().flatten() else {
                continue;
            };
            // A list that does not read is left to the decoder, which
            // names each whole entry without its text.
            let seqs: Vec<i64> = serde_json::from_str(wholes).unwrap_or_default();
            self.each_text_of_seqs(&seqs, |t| f(ChunkRead::Whole(t)))?;
        }
        Ok(())
    }

    /// The sessions with a `note` entry (by the index of the chunks that
    /// hold one).
    pub(crate) fn sessions_with_notes(&self) -> Result<HashSet<SessionRef>, LedgerError> {
        let mut stmt = self
            .r
            .conn
            .prepare("SELECT DISTINCT adapter, session_id FROM trace_chunks WHERE notes > 0")?;
        let rows = stmt.query_map([], |r| session_at(r, 0))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// One session's `note` events, in offset order, as
    /// [`Events::for_each_stored_text`](super::Events::for_each_stored_text) gives rows.
    pub(crate) fn for_each_note_text<E: From<LedgerError>>(
        &self,
        session: &SessionRef,
        f: impl FnMut(StoredText<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        let read = |e: rusqlite::Error| E::from(LedgerError::from(e));
        let mut chunks = self.r
            .conn
            .prepare_cached(
                "SELECT entries FROM trace_chunks WHERE adapter = ?1 AND session_id = ?2 AND notes > 0 \
                 ORDER BY first_offset",
            )
            .map_err(read)?;
        let mut seqs = Vec::new();
        let mut rows = chunks
            .query(params![session.adapter.as_str(), session.session_id])
            .map_err(read)?;
        while let Some(r) = rows.next().map_err(read)? {
            let text: String = r.get(0).map_err(read)?;
            // A chunk that does not decode is named by `validate`; here its
            // notes are missing, as a damaged note row's are.
            for (seq, facts) in entries(&text).unwrap_or_default() {
                if facts.is_ok_and(|f| f.part == TracePart::Note) {
                    seqs.push(seq);
                }
            }
        }
        self.each_text_of_seqs(&seqs, f)
    }

    /// The stored text of the event rows `seqs`, in that order, as
    /// [`Events::for_each_stored_text`](super::Events::for_each_stored_text) gives rows; a seq no row has is
    /// passed over.
    fn each_text_of_seqs<E: From<LedgerError>>(
        &self,
        seqs: &[i64],
        mut f: impl FnMut(StoredText<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        let read = |e: rusqlite::Error| E::from(LedgerError::from(e));
        let mut text = self
            .r
            .conn
            .prepare_cached("SELECT seq, id, CAST(json AS BLOB) FROM events WHERE seq = ?1")
            .map_err(read)?;
        for seq in seqs {
            each_stored_text(text.query([seq]).map_err(read)?, &mut f)?;
        }
        Ok(())
    }
}
