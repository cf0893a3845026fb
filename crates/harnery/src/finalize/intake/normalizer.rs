//! Stage one's view of the ledger while it drains: a read connection plus
//! what this run's own not-yet-committed batches changed (producer state,
//! spool-health offsets, record digests), which the database cannot show
//! yet.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use super::IN_FLIGHT;
use crate::contract::SessionRef;
use crate::finalize::FinalizeError;
use crate::finalize::state::{load_producer, parse_state, save_producer};
use crate::fingerprint::FingerprintState;
use crate::ledger::{AppendBatch, LedgerReader};
use crate::session::SessionProducer;

/// Stage one's view of the ledger: a read connection plus what this run's
/// own not-yet-committed batches changed (producer state, spool-health
/// offsets), which the database cannot show yet.
pub(super) struct Normalizer {
    pub(super) ledger: LedgerReader,
    /// The run's "now": the time of conditions found while loading state.
    pub(super) now_unix_ns: i64,
    /// The states of the producers this run advanced, as their batches
    /// store them; one whose chunk is committed is dropped (the ledger
    /// has it).
    pub(super) states: HashMap<SessionRef, Kept>,
    pub(super) offsets: BTreeMap<SessionRef, u64>,
    /// Record digests of the chunks that may not be committed yet (see
    /// [`IN_FLIGHT`]), with the chunk that drained each; older ones are
    /// visible in the ledger's raw-signal table.
    pub(super) recent: HashMap<String, u64, FingerprintState>,
    /// The chunk being normalized, counted from 1.
    pub(super) chunk: u64,
    /// The newest receive time among the raw signals the ledger keeps, as
    /// of the chunk's snapshot: records received later need no lookup.
    pub(super) newest_kept: Option<i64>,
}

impl Normalizer {
    pub(super) fn start_chunk(&mut self) {
        self.chunk += 1;
        // Chunks this many back are committed (see IN_FLIGHT), and the
        // snapshot this chunk is about to take shows their raw signals and
        // producer states.
        let committed = self.chunk.saturating_sub(IN_FLIGHT as u64);
        self.recent.retain(|_, chunk| *chunk > committed);
        self.states.retain(|_, kept| kept.chunk > committed);
    }

    /// Whether this record digest was already drained; remembers it.
    pub(super) fn seen(
        &mut self,
        received_unix_ns: i64,
        digest: &str,
    ) -> Result<bool, FinalizeError> {
        let may_be_kept = self.newest_kept.is_some_and(|n| received_unix_ns <= n);
        if self.recent.contains_key(digest)
            || (may_be_kept
                && self
                    .ledger
                    .bookkeeping()
                    .signal_known(received_unix_ns, digest)?)
        {
            return Ok(true);
        }
        self.recent.insert(digest.to_string(), self.chunk);
        Ok(false)
    }

    /// The session's producer as this run left it, else as the ledger
    /// keeps it (checked against this build's capability profile; a
    /// condition that check raises goes into `batch`), else a new one.
    /// Hand it back with [`Normalizer::keep_state`].
    pub(super) fn producer(
        &mut self,
        session: &SessionRef,
        batch: &mut AppendBatch,
    ) -> Result<SessionProducer, FinalizeError> {
        if let Some(kept) = self.states.remove(session) {
            return parse_state(session, &kept.saved);
        }
        load_producer(&self.ledger, session, self.now_unix_ns, &mut batch.events)
    }

    /// Queue the producer's state with the batch and keep that state for
    /// the rest of the run, so a later chunk that brings more of the
    /// session goes on from it, as the next run would. The producer itself
    /// is dropped: parsed, a state is several times its text, and a
    /// thousand small sessions in a row (the record pass) would otherwise
    /// hold a parsed producer for each session of the chunks in flight; a
    /// session's signals come in one chunk but where its files are cut
    /// between two, or a subagent's spool brings its parent back.
    pub(super) fn keep_state(
        &mut self,
        session: &SessionRef,
        producer: SessionProducer,
        batch: &mut AppendBatch,
    ) {
        let saved = save_producer(session, &producer);
        let kept = Kept {
            saved: saved.state.clone(),
            chunk: self.chunk,
        };
        batch.states.push(saved);
        self.states.insert(session.clone(), kept);
    }

    pub(super) fn next_offset(&mut self, session: &SessionRef) -> Result<u64, FinalizeError> {
        let offset = match self.offsets.get(session) {
            Some(n) => *n,
            None => self.ledger.bookkeeping().next_offset(session)?,
        };
        self.offsets.insert(session.clone(), offset + 1);
        Ok(offset)
    }
}

/// A producer this run advanced, and the chunk that last did.
pub(super) struct Kept {
    /// Its state as that chunk's batch stores it (shared with the batch):
    /// what the ledger will hold once the batch commits, and so what a
    /// later run would load.
    saved: Arc<str>,
    chunk: u64,
}
