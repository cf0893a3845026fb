//! What finalize asks the ledger before it appends: whether a batch or an
//! intake segment was already applied, whether a raw signal is already
//! kept, the producer state of a session and its next offset, and one read
//! snapshot held across those questions.

use rusqlite::{OptionalExtension, params};

use super::LedgerReader;
use crate::contract::SessionRef;
use crate::ledger::LedgerError;

/// One stored producer state of a session, told apart from the others it
/// had: every batch that writes a state has an id of its own.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub(crate) struct StateVersion {
    pub batch: String,
    pub len: i64,
}

/// What the finalizer keeps beside the events: applied batches, drained segments, known signals, producer state, next offsets.
pub(crate) struct Bookkeeping<'r> {
    pub(super) r: &'r LedgerReader,
}

impl Bookkeeping<'_> {
    /// Whether a batch with this id was already committed.
    pub(crate) fn batch_applied(&self, id: &str) -> Result<bool, LedgerError> {
        Ok(self.r.conn.query_row(
            "SELECT EXISTS (SELECT 1 FROM applied_batches WHERE batch = ?1)",
            [id],
            |r| r.get(0),
        )?)
    }

    /// Hold one read snapshot until [`Bookkeeping::end_snapshot`], instead of one
    /// per query (each costs a lock round trip on the WAL index).
    pub(crate) fn begin_snapshot(&self) -> Result<(), LedgerError> {
        Ok(self.r.conn.execute_batch("BEGIN DEFERRED")?)
    }

    pub(crate) fn end_snapshot(&self) -> Result<(), LedgerError> {
        if !self.r.conn.is_autocommit() {
            self.r.conn.execute_batch("COMMIT")?;
        }
        Ok(())
    }

    /// Whether a raw signal with this record digest (which covers the
    /// receive time) is already kept.
    pub(crate) fn signal_known(
        &self,
        received_unix_ns: i64,
        record_digest: &str,
    ) -> Result<bool, LedgerError> {
        Ok(self.r
            .conn
            .prepare_cached("SELECT EXISTS (SELECT 1 FROM raw_signals WHERE received_unix_ns = ?1 AND record_digest = ?2)")?
            .query_row(params![received_unix_ns, record_digest], |r| r.get(0))?)
    }

    /// The newest receive time among the kept raw signals. A record
    /// received later cannot be one of them (its digest covers its receive
    /// time), so it needs no lookup.
    pub(crate) fn newest_signal_ns(&self) -> Result<Option<i64>, LedgerError> {
        Ok(self
            .r
            .conn
            .prepare_cached("SELECT max(received_unix_ns) FROM raw_signals")?
            .query_row([], |r| r.get(0))?)
    }

    /// Whether an intake segment was drained by a committed batch.
    pub(crate) fn segment_drained(&self, segment: &str) -> Result<bool, LedgerError> {
        Ok(self.r.conn.query_row(
            "SELECT EXISTS (SELECT 1 FROM drained_segments WHERE segment = ?1)",
            [segment],
            |r| r.get(0),
        )?)
    }

    /// The producer state stored for a session, as serde JSON text.
    pub(crate) fn producer_state(
        &self,
        session: &SessionRef,
    ) -> Result<Option<String>, LedgerError> {
        let mut stmt = self.r.conn.prepare_cached(
            "SELECT state, adapter, session_id FROM producer_state WHERE adapter = ?1 AND session_id = ?2",
        )?;
        let mut rows = stmt.query(params![session.adapter.as_str(), session.session_id])?;
        let Some(r) = rows.next()? else {
            return Ok(None);
        };
        match r.get(0) {
            Ok(state) => Ok(Some(state)),
            Err(e) if super::unreadable::is_conversion(&e) => {
                Err(LedgerError::Unreadable(Box::new(
                    super::unreadable::describe("producer_state", r, &[1, 2], &e),
                )))
            }
            Err(e) => Err(e.into()),
        }
    }

    /// How many bytes of producer state a session has stored (0: none):
    /// the length of its text. A compact ledger's stored state names that
    /// length in its frame, so it is read there, not by decompressing the
    /// state (a drain weighs every file it plans by its session's state).
    pub(crate) fn producer_state_len(
        &self,
        adapter: &str,
        session_id: &str,
    ) -> Result<u64, LedgerError> {
        if crate::ledger::eventz::is_compact(&self.r.conn)? {
            let declared = self
                .r
                .conn
                .prepare_cached(
                    "SELECT state FROM producer_state_store WHERE adapter = ?1 AND session_id = ?2",
                )?
                .query_row(params![adapter, session_id], |r| {
                    Ok(r.get_ref(0)?
                        .as_blob()
                        .ok()
                        .and_then(crate::ledger::eventz::declared_len))
                })
                .optional()?;
            match declared {
                None => return Ok(0),
                Some(Some(len)) => return Ok(len),
                // A body that names no length: decoded below, as a
                // plain ledger's text is measured.
                Some(None) => {}
            }
        }
        let mut stmt = self.r.conn.prepare_cached(
            "SELECT octet_length(state) FROM producer_state WHERE adapter = ?1 AND session_id = ?2",
        )?;
        let len: Option<i64> = stmt
            .query_row(params![adapter, session_id], |r| r.get(0))
            .optional()?;
        Ok(len.unwrap_or(0).max(0) as u64)
    }

    /// Every session that has producer state, in a stable order, with
    /// what tells one stored state of it from another without reading it:
    /// the batch that wrote it and its stored length (a compact ledger's
    /// compressed bytes, read from the row's header only).
    pub(crate) fn producer_state_versions(
        &self,
    ) -> Result<Vec<(SessionRef, StateVersion)>, LedgerError> {
        let table = match crate::ledger::eventz::is_compact(&self.r.conn)? {
            true => "producer_state_store",
            false => "producer_state",
        };
        let mut stmt = self.r.conn.prepare(&format!(
            "SELECT adapter, session_id, batch, octet_length(state) FROM {table} ORDER BY adapter, session_id"
        ))?;
        let rows = stmt.query([])?;
        let rows = self.r.lenient_rows(rows, "producer_state", &[0, 1], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, i64>(3)?,
            ))
        })?;
        Ok(rows
            .into_iter()
            .filter_map(|(adapter, session_id, batch, len)| {
                let adapter = crate::contract::AdapterId::parse(&adapter)?;
                Some((
                    SessionRef {
                        adapter,
                        session_id,
                    },
                    StateVersion { batch, len },
                ))
            })
            .collect())
    }

    /// Every session that has producer state, in a stable order.
    pub(crate) fn producer_sessions(&self) -> Result<Vec<SessionRef>, LedgerError> {
        let mut stmt = self.r.conn.prepare(
            "SELECT adapter, session_id FROM producer_state ORDER BY adapter, session_id",
        )?;
        let rows = stmt.query([])?;
        let rows = self.r.lenient_rows(rows, "producer_state", &[0, 1], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
        })?;
        let mut out = Vec::new();
        for (adapter, session_id) in rows {
            if let Some(adapter) = crate::contract::AdapterId::parse(&adapter) {
                out.push(SessionRef {
                    adapter,
                    session_id,
                });
            }
        }
        Ok(out)
    }

    /// How many events a session has (its next offset).
    pub(crate) fn next_offset(&self, session: &SessionRef) -> Result<u64, LedgerError> {
        let n: Option<i64> = self
            .r
            .conn
            .query_row(
                "SELECT events FROM sessions WHERE adapter = ?1 AND session_id = ?2",
                params![session.adapter.as_str(), session.session_id],
                |r| r.get(0),
            )
            .optional()?;
        Ok(n.unwrap_or(0) as u64)
    }
}

#[cfg(test)]
mod tests {
    use crate::contract::{AdapterId, SessionRef};
    use crate::home::Home;
    use crate::ledger::{AppendBatch, AppendOutcome, BatchState, LedgerWriter};

    #[test]
    fn a_states_length_is_its_texts_without_reading_the_text() {
        let dir = tempfile::tempdir().unwrap();
        let mut ledger = LedgerWriter::open(&Home::at(dir.path()), 1).unwrap();
        let incarnation = ledger.take_incarnation().unwrap();
        let state = format!(r#"{{"next_offset":1,"note":"{}"}}"#, "é".repeat(40_000));
        let session = SessionRef {
            adapter: AdapterId::ClaudeCode,
            session_id: "s".into(),
        };
        let batch = AppendBatch {
            id: "00000000000000000001-00000000-x".into(),
            contract_digest: ledger.genesis().schema_digest.clone(),
            sources: Vec::new(),
            signals: Vec::new(),
            events: Vec::new(),
            states: vec![BatchState {
                session: session.clone(),
                state: state.as_str().into(),
            }],
        };
        let outcome = ledger.append(&batch, incarnation, 1, &|| {}).unwrap();
        assert_eq!(
            outcome,
            AppendOutcome::Appended {
                events: 0,
                signals: 0
            }
        );
        let books = ledger.bookkeeping();
        assert!(crate::ledger::eventz::is_compact(&ledger.conn).unwrap());
        assert_eq!(
            books.producer_state_len("claude-code", "s").unwrap(),
            state.len() as u64
        );
        assert_eq!(books.producer_state_len("claude-code", "other").unwrap(), 0);
        assert_eq!(
            books.producer_state(&session).unwrap().as_deref(),
            Some(&*state)
        );
        // The length comes from the frame's header: a body whose last byte
        // was flipped (it no longer decodes) still names it.
        let mut body: Vec<u8> = ledger
            .conn
            .query_row("SELECT state FROM producer_state_store", [], |r| r.get(0))
            .unwrap();
        *body.last_mut().unwrap() ^= 1;
        ledger
            .conn
            .execute("UPDATE producer_state_store SET state = ?1", [&body])
            .unwrap();
        let books = ledger.bookkeeping();
        let read = books.producer_state(&session);
        assert!(read.is_err() || read.unwrap().as_deref() != Some(&*state));
        assert_eq!(
            books.producer_state_len("claude-code", "s").unwrap(),
            state.len() as u64
        );
    }
}
