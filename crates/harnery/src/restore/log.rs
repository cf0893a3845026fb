//! The session log of seed 004, read from the ledger: a session's events
//! as a gapless log of offsets from 0, its checkpoints (pinned to an
//! offset, with a commit and an effect ledger; first write wins on an id;
//! the latest is the valid one pinned highest), the resumes that supersede
//! a range and start a new incarnation, replay by half-open range, and
//! restore (`restore`).
//!
//! The producer writes the log (`session::session_log`, contract generation
//! 3); this module only reads it. The ledger is append-only, so a
//! superseded range is never deleted: it is named by the `session.resumed`
//! event that superseded it, and read commands leave it out unless asked.
//! An event's incarnation is not stored on its row: it is one more than the
//! number of `session.resumed` events at or below its offset.

use serde::Serialize;

use crate::contract::{
    CheckpointLocated, Effect, Event, EventType, Observation, OffsetRange, Payload, SessionRef,
    SessionResumed, ToolRecorded,
};
use crate::ledger::{LedgerError, LedgerReader};

/// Why a replay window was refused, naming the bound.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RangeError {
    #[error("replay bound `{bound}` is negative ({value})")]
    Negative { bound: &'static str, value: i64 },
    #[error("replay bound `to` ({to}) is below `from` ({from})")]
    Inverted { from: i64, to: i64 },
    #[error("replay bound `{bound}` ({value}) is past the session's head ({head})")]
    PastHead {
        bound: &'static str,
        value: i64,
        head: u64,
    },
}

/// A replay that could not be answered.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error(transparent)]
    Range(#[from] RangeError),
    #[error(transparent)]
    Ledger(#[from] LedgerError),
}

/// Check a `[from, to)` window against a session whose next offset is
/// `head`; `to` defaults to the head.
pub(crate) fn check_window(
    from: i64,
    to: Option<i64>,
    head: u64,
) -> Result<(u64, u64), RangeError> {
    let checked = |bound: &'static str, value: i64| {
        if value < 0 {
            return Err(RangeError::Negative { bound, value });
        }
        if value as u64 > head {
            return Err(RangeError::PastHead { bound, value, head });
        }
        Ok(value as u64)
    };
    let from_at = checked("from", from)?;
    let to_at = match to {
        Some(to) => checked("to", to)?,
        None => head,
    };
    if to_at < from_at {
        return Err(RangeError::Inverted {
            from,
            to: to_at as i64,
        });
    }
    Ok((from_at, to_at))
}

/// The session's events with `from <= offset < to` (`to` defaults to the
/// head), superseded ones included: one SQL range read.
pub fn replay(
    ledger: &LedgerReader,
    session: &SessionRef,
    from: i64,
    to: Option<i64>,
) -> Result<Vec<Event>, ReplayError> {
    let head = ledger.events().session_head(session)?;
    let (from, to) = check_window(from, to, head)?;
    Ok(ledger.events().session_range(session, from, to)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_is_checked_bound_by_bound() {
        assert_eq!(check_window(0, None, 5), Ok((0, 5)));
        assert_eq!(check_window(5, None, 5), Ok((5, 5)), "empty at the head");
        assert_eq!(check_window(1, Some(3), 5), Ok((1, 3)));
        let neg = check_window(-2, None, 5).unwrap_err();
        assert_eq!(neg.to_string(), "replay bound `from` is negative (-2)");
        let past = check_window(6, None, 5).unwrap_err();
        assert_eq!(
            past.to_string(),
            "replay bound `from` (6) is past the session's head (5)"
        );
        let past = check_window(0, Some(9), 5).unwrap_err();
        assert!(matches!(past, RangeError::PastHead { bound: "to", .. }));
        let inverted = check_window(4, Some(2), 5).unwrap_err();
        assert_eq!(
            inverted.to_string(),
            "replay bound `to` (2) is below `from` (4)"
        );
    }
}

/// One checkpoint, as the log stands now.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Checkpoint {
    pub checkpoint_id: String,
    /// The offset it pins: a restore hands back the live events below it.
    pub offset: u64,
    /// The offset of the `checkpoint.recorded` event itself.
    pub event_offset: u64,
    pub event_id: String,
    pub time_unix_ns: i64,
    /// `operator` or `turn`.
    pub origin: String,
    pub commit: Observation<String>,
    pub commit_source: Option<String>,
    pub effects: Vec<Effect>,
    /// The session's working directory at the checkpoint, where the
    /// checkpoint names it (generation 6).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// Where it stands in the agent's own record, once finalize placed it
    /// (`checkpoint.located`, generation 7).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub located: Option<Located>,
    /// The incarnation that recorded it.
    pub incarnation: u64,
    /// False once a resume below it invalidated it.
    pub valid: bool,
    /// The offset of the `session.resumed` event that invalidated it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub invalidated_at: Option<u64>,
}

/// A checkpoint's place in the agent's own record: the record is kept
/// from byte 0 up to `end`; its last line kept is `line_id`, starting at
/// `line_offset`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Located {
    pub path: String,
    pub end: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line_offset: Option<u64>,
}

impl From<CheckpointLocated> for Located {
    fn from(c: CheckpointLocated) -> Located {
        Located {
            path: c.path,
            end: c.end,
            line_id: c.line_id,
            line_offset: c.line_offset,
        }
    }
}

/// One resume, with the offset of its event.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Resume {
    pub offset: u64,
    pub event_id: String,
    #[serde(flatten)]
    pub resumed: SessionResumed,
}

/// A session's log: its head, checkpoints and resumes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SessionLog {
    pub session: SessionRef,
    /// The offset the session's next event takes.
    pub head: u64,
    pub incarnation: u64,
    pub checkpoints: Vec<Checkpoint>,
    pub resumes: Vec<Resume>,
    /// Places this part of the session wrote for checkpoints it does not
    /// hold (pinned in an earlier epoch, placed after the advance): see
    /// [`SessionLog::place_from`].
    #[serde(skip)]
    pub placed_elsewhere: Vec<CheckpointLocated>,
}

/// Why a checkpoint could not be chosen.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CheckpointError {
    #[error("session {0} has no valid checkpoint")]
    NoneValid(String),
    #[error("session {session} has no checkpoint {id:?}")]
    Unknown { session: String, id: String },
    #[error("checkpoint {id:?} of session {session} was invalidated by the resume at offset {at}")]
    Invalidated {
        session: String,
        id: String,
        at: u64,
    },
}

impl SessionLog {
    /// Read the session's log: its checkpoint and resume events, and the
    /// record's joins, which name the effects' calls (see [`Self::join_record`]).
    pub fn read(ledger: &LedgerReader, session: &SessionRef) -> Result<SessionLog, LedgerError> {
        let types = [
            EventType::CheckpointRecorded,
            EventType::CheckpointLocated,
            EventType::SessionResumed,
            EventType::ToolRecorded,
            EventType::CommandRequested,
            EventType::CommandCompleted,
        ];
        SessionLog::read_types(ledger, session, &types)
    }

    /// Only the resumes (superseded ranges and incarnations), without the
    /// checkpoints: what a read command needs to leave ranges out.
    pub(crate) fn read_resumes(
        ledger: &LedgerReader,
        session: &SessionRef,
    ) -> Result<SessionLog, LedgerError> {
        SessionLog::read_types(ledger, session, &[EventType::SessionResumed])
    }

    fn read_types(
        ledger: &LedgerReader,
        session: &SessionRef,
        types: &[EventType],
    ) -> Result<SessionLog, LedgerError> {
        let events = ledger.events().session_events_of(session, types)?;
        let mut log = SessionLog {
            session: session.clone(),
            head: ledger.events().session_head(session)?,
            incarnation: 1,
            checkpoints: Vec::new(),
            resumes: Vec::new(),
            placed_elsewhere: Vec::new(),
        };
        let mut joins = std::collections::HashMap::new();
        let mut commands = Vec::new();
        for e in events {
            match e.payload {
                Payload::ToolRecorded(r) => {
                    if let Some(span) = r.span_request_event_id.clone() {
                        joins.insert(span.0, r);
                    }
                }
                Payload::CommandRequested(_) | Payload::CommandCompleted(_) => commands.push(e),
                _ => log.take(e),
            }
        }
        log.join_record(&joins);
        log.join_commands(commands);
        Ok(log)
    }

    /// The `harnery exec` commands closed by their own completion, each in
    /// the effects of the checkpoint that first pins past it (the
    /// producer's effect ledger takes native closes only, and harnery
    /// attests its command telemetry as derived): what `restore` lists
    /// below a checkpoint, each checkpoint shows as its own.
    fn join_commands(&mut self, events: Vec<Event>) {
        let live = events.into_iter().filter(|e| !self.is_superseded(e.offset));
        let (closed, _) = super::command_effects::pair(live);
        for c in closed.into_iter().filter(|c| !c.derived) {
            let owner = self
                .checkpoints
                .iter_mut()
                .filter(|cp| cp.offset > c.closed_at)
                .min_by_key(|cp| (cp.offset, cp.event_offset));
            if let Some(cp) = owner
                && cp.effects.iter().all(|e| e.reference != c.effect.reference)
            {
                cp.effects.push(c.effect);
            }
        }
    }

    /// A tool effect's call as the agent's record has it, where the hook
    /// did not say: the call id and exit code of the `tool.recorded` that
    /// joined its span (Copilot's hooks carry neither). The record may
    /// join a span after the checkpoint was taken, so this is read, not
    /// stored.
    fn join_record(&mut self, joins: &std::collections::HashMap<String, ToolRecorded>) {
        let effects = self
            .checkpoints
            .iter_mut()
            .flat_map(|c| c.effects.iter_mut());
        for effect in effects.filter(|e| e.kind == "tool") {
            let Some(joined) = joins.get(&effect.reference) else {
                continue;
            };
            if effect.tool_call_id.is_none() {
                effect.tool_call_id = Some(joined.tool_call_id.clone());
            }
            if effect.exit_code.is_none() {
                effect.exit_code = joined.exit_code;
            }
        }
    }

    fn take(&mut self, e: Event) {
        match e.payload {
            Payload::CheckpointRecorded(c) => {
                // First write wins: the producer records an id once; a
                // ledger that holds it twice keeps the first.
                if self.by_id(&c.checkpoint_id).is_some() {
                    return;
                }
                self.checkpoints.push(Checkpoint {
                    checkpoint_id: c.checkpoint_id,
                    offset: c.offset,
                    event_offset: e.offset,
                    event_id: e.id.0,
                    time_unix_ns: e.time_unix_ns,
                    origin: c.origin,
                    commit: c.commit,
                    commit_source: c.commit_source,
                    effects: c.effects,
                    cwd: c.cwd,
                    located: None,
                    incarnation: self.incarnation,
                    valid: true,
                    invalidated_at: None,
                });
            }
            Payload::CheckpointLocated(c) => self.place(c),
            Payload::SessionResumed(r) => {
                for cp in &mut self.checkpoints {
                    if cp.valid && r.invalidated_checkpoints.contains(&cp.checkpoint_id) {
                        cp.valid = false;
                        cp.invalidated_at = Some(e.offset);
                    }
                }
                self.incarnation = r.incarnation;
                self.resumes.push(Resume {
                    offset: e.offset,
                    event_id: e.id.0,
                    resumed: r,
                });
            }
            _ => {}
        }
    }

    /// Give the checkpoint `c` names its place (the first place written
    /// for it stands); a place for a checkpoint of another part of the
    /// session is kept for [`SessionLog::place_from`].
    fn place(&mut self, c: CheckpointLocated) {
        let cp = self
            .checkpoints
            .iter_mut()
            .find(|cp| cp.event_id == c.checkpoint_event_id.0);
        match cp {
            Some(cp) if cp.located.is_none() => cp.located = Some(c.into()),
            Some(_) => {}
            None => self.placed_elsewhere.push(c),
        }
    }

    /// Take the places a later part of the session (after an epoch
    /// advance) wrote for this part's checkpoints.
    pub(crate) fn place_from(&mut self, later: &SessionLog) {
        for c in &later.placed_elsewhere {
            let cp = self
                .checkpoints
                .iter_mut()
                .find(|cp| cp.event_id == c.checkpoint_event_id.0);
            if let Some(cp) = cp.filter(|cp| cp.located.is_none()) {
                cp.located = Some(c.clone().into());
            }
        }
    }

    /// The checkpoint recorded first under `id`.
    pub(crate) fn by_id(&self, id: &str) -> Option<&Checkpoint> {
        self.checkpoints.iter().find(|c| c.checkpoint_id == id)
    }

    /// The valid checkpoint pinned highest (the later one on a tie).
    pub fn latest(&self) -> Option<&Checkpoint> {
        self.checkpoints
            .iter()
            .filter(|c| c.valid)
            .max_by_key(|c| (c.offset, c.event_offset))
    }

    /// What `checkpoints --id ID` or `--latest` lists: that one checkpoint
    /// (`None` when neither was asked: the whole log), or why there is none.
    pub fn listed(&self, id: Option<&str>, latest: bool) -> Result<Option<&Checkpoint>, String> {
        let session = &self.session.session_id;
        match (id, latest) {
            (Some(id), _) => self
                .by_id(id)
                .map(Some)
                .ok_or_else(|| format!("session {session} has no checkpoint {id:?}")),
            (None, true) => self
                .latest()
                .map(Some)
                .ok_or_else(|| format!("session {session} has no valid checkpoint")),
            (None, false) => Ok(None),
        }
    }

    /// `latest`, or the valid checkpoint `id`.
    pub(crate) fn choose(&self, wanted: Option<&str>) -> Result<&Checkpoint, CheckpointError> {
        let session = self.session.session_id.clone();
        let Some(id) = wanted.filter(|w| *w != "latest") else {
            return self.latest().ok_or(CheckpointError::NoneValid(session));
        };
        let Some(cp) = self.by_id(id) else {
            return Err(CheckpointError::Unknown {
                session,
                id: id.into(),
            });
        };
        match cp.invalidated_at {
            Some(at) => Err(CheckpointError::Invalidated {
                session,
                id: id.into(),
                at,
            }),
            None => Ok(cp),
        }
    }

    /// Every superseded range, in the order the resumes recorded them.
    pub(crate) fn superseded(&self) -> Vec<OffsetRange> {
        self.resumes
            .iter()
            .map(|r| r.resumed.superseded)
            .filter(|r| !r.is_empty())
            .collect()
    }

    pub(crate) fn is_superseded(&self, offset: u64) -> bool {
        self.resumes
            .iter()
            .any(|r| r.resumed.superseded.contains(offset))
    }

    /// The offset of the resume that superseded the event at `offset`
    /// (the first that did), if one did.
    pub(crate) fn superseded_by(&self, offset: u64) -> Option<u64> {
        self.resumes
            .iter()
            .find(|r| r.resumed.superseded.contains(offset))
            .map(|r| r.offset)
    }

    /// The incarnation an event at `offset` belongs to.
    pub(crate) fn incarnation_at(&self, offset: u64) -> u64 {
        self.resumes
            .iter()
            .rev()
            .find(|r| r.offset <= offset)
            .map_or(1, |r| r.resumed.incarnation)
    }
}

/// Events as a read command shows them: superseded ones left out, or,
/// with `include_superseded`, kept and marked.
pub(crate) fn live_events<'a>(
    log: &SessionLog,
    events: &'a [Event],
    include_superseded: bool,
) -> Vec<(&'a Event, bool)> {
    events
        .iter()
        .map(|e| (e, log.is_superseded(e.offset)))
        .filter(|(_, superseded)| include_superseded || !superseded)
        .collect()
}
