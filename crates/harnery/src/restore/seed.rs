//! Restore: the seed a fresh incarnation of the agent starts from (the
//! session's live events below a checkpoint, the offset the log goes on
//! at, the checkpoint with its commit and effects), and the shim that
//! resumes the agent natively (`shim`).
//!
//! Building a seed reads only. Recording that a restore was handed out is
//! the caller's (`harnery restore` appends a `harnery.restore` signal to
//! the session's spool), so that the session's next native activity is
//! taken for the resume.

use serde::{Serialize, Serializer, ser::SerializeSeq};

use super::log::{Checkpoint, CheckpointError, ReplayError, SessionLog};
use super::shim::ResumeShim;
use crate::contract::{Effect, Event, OffsetRange, SessionRef};
use crate::ledger::{LedgerError, LedgerReader};

/// What `harnery restore` hands a fresh incarnation.
#[derive(Debug, Serialize)]
pub struct RestoreSeed<'a> {
    pub session: SessionRef,
    pub checkpoint: Checkpoint,
    /// The effect ledger up to the checkpoint: the effects of every valid
    /// checkpoint at or below it, oldest first, then the `harnery exec`
    /// commands below the boundary that no checkpoint names
    /// (`seed_effects`).
    pub effects: Vec<Effect>,
    /// Spans below the boundary that lost a side (a derived terminal, a
    /// minted request) or are still open: they may have run.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub may_have_run: Vec<Effect>,
    /// The events handed back are those below this offset (the
    /// checkpoint's).
    pub boundary_offset: u64,
    /// The offset the session's log goes on at: the restore is recorded
    /// there, and the resumed leg follows it.
    pub next_offset: u64,
    /// The incarnation the resume will start.
    pub next_incarnation: u64,
    /// The live events below the boundary, in offset order (with
    /// `include_superseded`, superseded ones too, listed in
    /// `superseded_offsets`), read from the ledger as they are written.
    pub events: SeedEvents<'a>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub superseded_offsets: Vec<u64>,
}

/// A seed's events, not yet read: [`SeedEvents::for_each`] and its
/// `Serialize` read them one at a time, so a seed of any size is handed
/// out in bounded memory.
pub struct SeedEvents<'a> {
    ledger: &'a LedgerReader,
    session: SessionRef,
    boundary: u64,
    superseded: Vec<OffsetRange>,
    include_superseded: bool,
}

impl std::fmt::Debug for SeedEvents<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SeedEvents")
            .field("session", &self.session)
            .field("boundary", &self.boundary)
            .field("superseded", &self.superseded)
            .field("include_superseded", &self.include_superseded)
            .finish_non_exhaustive()
    }
}

impl SeedEvents<'_> {
    /// Each event of the seed, in offset order.
    pub(crate) fn for_each<E: From<LedgerError>>(
        &self,
        mut f: impl FnMut(Event) -> Result<(), E>,
    ) -> Result<(), E> {
        self.ledger
            .events()
            .for_each_in_session_range(&self.session, 0, self.boundary, |e| {
                let superseded = self.superseded.iter().any(|r| r.contains(e.offset));
                if superseded && !self.include_superseded {
                    return Ok(());
                }
                f(e)
            })
    }

    /// How many events the seed holds (read through once).
    pub fn count(&self) -> Result<u64, LedgerError> {
        let mut n = 0;
        self.for_each(|_| {
            n += 1;
            Ok::<(), LedgerError>(())
        })?;
        Ok(n)
    }
}

impl Serialize for SeedEvents<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        /// Why the stream stopped: the ledger, or the serializer (whose
        /// error is kept aside).
        struct Stop(Option<LedgerError>);
        impl From<LedgerError> for Stop {
            fn from(e: LedgerError) -> Stop {
                Stop(Some(e))
            }
        }
        let mut seq = serializer.serialize_seq(None)?;
        let mut failed = None;
        let read = self.for_each(|e| {
            seq.serialize_element(&e).map_err(|err| {
                failed = Some(err);
                Stop(None)
            })
        });
        match (read, failed) {
            (Ok(()), _) => seq.end(),
            (Err(_), Some(err)) => Err(err),
            (Err(Stop(e)), None) => Err(serde::ser::Error::custom(format!(
                "the seed's events could not be read: {}",
                e.map_or_else(|| "unknown".to_string(), |e| e.to_string())
            ))),
        }
    }
}

/// A restore that could not be built.
#[derive(Debug, thiserror::Error)]
pub enum RestoreError {
    #[error(transparent)]
    Checkpoint(#[from] CheckpointError),
    #[error(transparent)]
    Replay(#[from] ReplayError),
}

/// The seed of `session` at `checkpoint` (an id, `latest`, or none for the
/// latest). Its events are read when it is written out.
pub(crate) fn seed<'a>(
    ledger: &'a LedgerReader,
    log: &SessionLog,
    checkpoint: Option<&str>,
    include_superseded: bool,
) -> Result<RestoreSeed<'a>, RestoreError> {
    let cp = log.choose(checkpoint)?.clone();
    let head = ledger
        .events()
        .session_head(&log.session)
        .map_err(ReplayError::from)?;
    // A checkpoint is at an offset the log has reached.
    let boundary = super::log::check_window(0, Some(cp.offset as i64), head)
        .map_err(ReplayError::from)?
        .1;
    // Offsets run from 0 without gaps: a superseded range below the
    // boundary is that many events.
    let superseded = log.superseded();
    let superseded_offsets = if include_superseded {
        let mut at: Vec<u64> = superseded
            .iter()
            .flat_map(|r| r.from.min(boundary)..r.to.min(boundary))
            .collect();
        at.sort_unstable();
        at.dedup();
        at
    } else {
        Vec::new()
    };
    let mut effects: Vec<Effect> = log
        .checkpoints
        .iter()
        .filter(|c| c.valid && c.offset <= cp.offset && !log.is_superseded(c.event_offset))
        .flat_map(|c| c.effects.iter().cloned())
        .collect();
    let (commands, may_have_run) =
        super::seed_effects::beyond_checkpoints(ledger, log, boundary, &effects)
            .map_err(ReplayError::from)?;
    effects.extend(commands);
    Ok(RestoreSeed {
        session: log.session.clone(),
        boundary_offset: cp.offset,
        next_offset: log.head,
        next_incarnation: log.incarnation + 1,
        checkpoint: cp,
        effects,
        may_have_run,
        events: SeedEvents {
            ledger,
            session: log.session.clone(),
            boundary,
            superseded,
            include_superseded,
        },
        superseded_offsets,
    })
}

/// A seed with the shim that resumes it: what `restore --json` prints.
#[derive(Debug, Serialize)]
pub struct Restore<'a> {
    pub seed: RestoreSeed<'a>,
    pub shim: ResumeShim,
}
