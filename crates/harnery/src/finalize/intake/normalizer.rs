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
    /// The names signal rows repeat, shared among them.
    pub(super) names: SharedNames,
}

/// The names a drain's signal rows repeat (adapter, session key, event
/// name), each made once while it recurs and shared by the rows that have
/// it, instead of a copy a row. Rows come session by session, and a
/// session has a few event names, so the latest few of each kind are
/// kept.
#[derive(Default)]
pub(super) struct SharedNames {
    adapters: Recent<2>,
    session_keys: Recent<4>,
    events: Recent<16>,
}

/// Rows' names of one kind: a row's adapter, session key and event name.
pub(super) type RowNames = (Arc<str>, Arc<str>, Option<Arc<str>>);

impl SharedNames {
    pub(super) fn row(
        &mut self,
        adapter: &str,
        session_key: &str,
        event: Option<&str>,
    ) -> RowNames {
        (
            self.adapters.get(adapter),
            self.session_keys.get(session_key),
            event.map(|e| self.events.get(e)),
        )
    }
}

/// The latest `N` names of a kind, newest last.
#[derive(Default)]
struct Recent<const N: usize>(Vec<Arc<str>>);

impl<const N: usize> Recent<N> {
    fn get(&mut self, name: &str) -> Arc<str> {
        if let Some(kept) = self.0.iter().rev().find(|kept| ***kept == *name) {
            return kept.clone();
        }
        if self.0.len() == N {
            self.0.remove(0);
        }
        let made: Arc<str> = name.into();
        self.0.push(made.clone());
        made
    }
}

impl Normalizer {
    /// A view of `ledger` as this run leaves it, from `now_unix_ns`.
    pub(super) fn new(ledger: LedgerReader, now_unix_ns: i64) -> Normalizer {
        Normalizer {
            ledger,
            now_unix_ns,
            states: HashMap::new(),
            offsets: BTreeMap::new(),
            recent: HashMap::default(),
            newest_kept: None,
            chunk: 0,
            names: SharedNames::default(),
        }
    }

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_that_recurs_is_shared_and_each_kind_keeps_its_latest_few() {
        let mut names = SharedNames::default();
        let (a, s, e) = names.row("claude-code", "s1", Some("PreToolUse"));
        let (a2, s2, e2) = names.row("claude-code", "s1", Some("PreToolUse"));
        assert!(Arc::ptr_eq(&a, &a2) && Arc::ptr_eq(&s, &s2));
        assert!(Arc::ptr_eq(e.as_ref().unwrap(), e2.as_ref().unwrap()));
        // Past the four latest session keys, the first is made again: the
        // same text, another copy.
        for key in ["s2", "s3", "s4", "s5"] {
            assert_eq!(&*names.row("claude-code", key, None).1, key);
        }
        let (_, again, none) = names.row("claude-code", "s1", None);
        assert_eq!(&*again, "s1");
        assert!(!Arc::ptr_eq(&s, &again));
        assert!(none.is_none());
        // An event name stays shared while fifteen others come after it.
        for i in 0..15 {
            names.row("claude-code", "s1", Some(&format!("E{i}")));
        }
        let (_, _, e3) = names.row("claude-code", "s1", Some("PreToolUse"));
        assert!(Arc::ptr_eq(e.as_ref().unwrap(), e3.as_ref().unwrap()));
    }
}
