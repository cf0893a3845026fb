//! Restore: the seed a fresh incarnation of the agent starts from (the
//! session's live events below a checkpoint, the offset the log goes on
//! at, the checkpoint with its commit and effects), and the shim that
//! resumes the agent natively (`shim`).
//!
//! Building a seed reads only. Recording that a restore was handed out is
//! the caller's (`harnery restore` appends a `harnery.restore` signal to
//! the session's spool), so that the session's next native activity is
//! taken for the resume.

use serde::Serialize;

use super::shim::ResumeShim;
use super::{Checkpoint, CheckpointError, ReplayError, SessionLog, replay};
use crate::contract::{Effect, Event, SessionRef};
use crate::ledger::Ledger;

/// What `harnery restore` hands a fresh incarnation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RestoreSeed {
    pub session: SessionRef,
    pub checkpoint: Checkpoint,
    /// The effect ledger up to the checkpoint: the effects of every valid
    /// checkpoint at or below it, oldest first.
    pub effects: Vec<Effect>,
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
    /// `superseded_offsets`).
    pub events: Vec<Event>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub superseded_offsets: Vec<u64>,
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
/// latest).
pub fn seed(
    ledger: &Ledger,
    log: &SessionLog,
    checkpoint: Option<&str>,
    include_superseded: bool,
) -> Result<RestoreSeed, RestoreError> {
    let cp = log.choose(checkpoint)?.clone();
    let all = replay(ledger, &log.session, 0, Some(cp.offset as i64))?;
    let mut superseded_offsets = Vec::new();
    let mut events = Vec::with_capacity(all.len());
    for e in all {
        if log.is_superseded(e.offset) {
            if !include_superseded {
                continue;
            }
            superseded_offsets.push(e.offset);
        }
        events.push(e);
    }
    let effects = log
        .checkpoints
        .iter()
        .filter(|c| c.valid && c.offset <= cp.offset && !log.is_superseded(c.event_offset))
        .flat_map(|c| c.effects.iter().cloned())
        .collect();
    Ok(RestoreSeed {
        session: log.session.clone(),
        boundary_offset: cp.offset,
        next_offset: log.head,
        next_incarnation: log.incarnation + 1,
        checkpoint: cp,
        effects,
        events,
        superseded_offsets,
    })
}

/// A seed with the shim that resumes it: what `restore --json` prints.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Restore {
    pub seed: RestoreSeed,
    pub shim: ResumeShim,
}
