//! Producer state as the ledger keeps it: loaded for a session (and
//! checked against this build's capability profile), saved with the batch
//! that advanced it, and ticked by the time rules at the end of a run.

use super::quiet::Quiet;
use super::steps::Run;
use super::{FinalizeError, ready};
use crate::contract::SessionRef;
use crate::ledger::{
    AppendBatch, BatchState, LedgerError, LedgerReader, ReadyEvent, binary_digest,
};
use crate::session::SessionProducer;
use std::path::Path;

/// Sessions ticked per batch in the time-rule pass.
const TICK_CHUNK: usize = 256;

/// The session's producer as the ledger keeps it, else a new one. Stored
/// state is checked against this build's capability profile; the
/// condition a changed profile raises is queued on `events` at once, so it
/// precedes whatever the producer emits next.
pub(super) fn load_producer(
    ledger: &LedgerReader,
    session: &SessionRef,
    now_unix_ns: i64,
    events: &mut Vec<ReadyEvent>,
) -> Result<SessionProducer, FinalizeError> {
    let Some(text) = ledger.bookkeeping().producer_state(session)? else {
        return Ok(carried_producer(ledger, session)?
            .unwrap_or_else(|| SessionProducer::new(session.clone())));
    };
    let mut producer = parse_state(session, &text)?;
    events.extend(
        producer
            .check_capability_profile(now_unix_ns)
            .map(ReadyEvent::new),
    );
    Ok(producer)
}

/// Archived epochs searched, newest first, for a session's record state.
const CARRY_DEPTH: usize = 16;

/// A session new to this epoch that an earlier epoch followed the record
/// of: a producer that follows it on from where that epoch left it (see
/// [`SessionProducer::carrying_record`]). The archives this epoch is
/// anchored to are searched newest first; an archive that does not open
/// is passed over (its record is then read again from its start, as
/// before).
fn carried_producer(
    ledger: &LedgerReader,
    session: &SessionRef,
) -> Result<Option<SessionProducer>, FinalizeError> {
    // The live epoch is `<home>/ledgers/<live>`; archives are named
    // relative to the home.
    let Some(home) = ledger.dir().parent().and_then(Path::parent) else {
        return Ok(None);
    };
    let mut anchor = ledger.genesis().anchor.clone();
    for _ in 0..CARRY_DEPTH {
        let Some(a) = anchor else {
            break;
        };
        let Ok(archived) = LedgerReader::open_dir(&home.join(&a.archive), None) else {
            break;
        };
        if let Some(text) = archived.bookkeeping().producer_state(session)? {
            return Ok(SessionProducer::carrying_record(session.clone(), &text));
        }
        anchor = archived.genesis().anchor.clone();
    }
    Ok(None)
}

pub(super) fn parse_state(
    session: &SessionRef,
    text: &str,
) -> Result<SessionProducer, FinalizeError> {
    serde_json::from_str(text).map_err(|e| {
        FinalizeError::Spool(format!(
            "producer state of {} {} does not load: {e}",
            session.adapter, session.session_id
        ))
    })
}

pub(super) fn save_producer(session: &SessionRef, producer: &SessionProducer) -> BatchState {
    BatchState {
        session: session.clone(),
        state: serde_json::to_string(producer)
            .expect("producer state serializes")
            .into(),
    }
}

impl Run<'_> {
    /// The time rules: tick every session the ledger holds producer state
    /// for, in batches, and append what they emit. A session whose stored
    /// state an earlier run found to tick to nothing, and that no batch
    /// wrote since, is passed over unread ([`Quiet`]).
    pub(super) fn tick_all(&mut self) -> Result<(), FinalizeError> {
        let now_unix_ns = self.opts.now_unix_ns;
        let sessions = self.ledger.bookkeeping().producer_state_versions()?;
        let mut quiet = Quiet::load(self.home, &self.ledger);
        for group in sessions.chunks(TICK_CHUNK) {
            let mut batch = AppendBatch {
                id: ready::new_batch_id(now_unix_ns),
                contract_digest: binary_digest(),
                sources: Vec::new(),
                signals: Vec::new(),
                events: Vec::new(),
                states: Vec::new(),
            };
            for (session, version) in group {
                if quiet.holds(session, version) {
                    continue;
                }
                let before = batch.events.len();
                // A session whose stored state cannot be read is not ticked:
                // it is set aside (and reported), and the others go on.
                let mut producer =
                    match load_producer(&self.ledger, session, now_unix_ns, &mut batch.events) {
                        Err(FinalizeError::Ledger(LedgerError::Unreadable(row))) => {
                            self.ledger.set_aside(*row);
                            continue;
                        }
                        loaded => loaded?,
                    };
                let stays_quiet = batch.events.len() == before && producer.ticks_nothing();
                let events = producer.tick(now_unix_ns, &self.opts.clock);
                batch.events.extend(events.into_iter().map(ReadyEvent::new));
                if batch.events.len() > before {
                    batch.states.push(save_producer(session, &producer));
                } else if stays_quiet {
                    quiet.add(session, version);
                }
            }
            if batch.events.is_empty() {
                continue;
            }
            // Nothing to release: a tick that stops before its commit is
            // made again by the next run's.
            let origin = || format!("tick batch {}", batch.id);
            self.append_batch(&origin, &batch, None)?;
        }
        quiet.save();
        Ok(())
    }
}
