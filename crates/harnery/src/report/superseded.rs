//! What the read side makes of a session's resumes and restores, beyond
//! `replay`: the counts a summary keeps once a resume superseded a range
//! (its turns and spans left out), and the session a `restore --apply`
//! started this one from (its first checkpoint's `restored_from` effect).
//! Both read only what they need: the session's resume or checkpoint
//! events, and the events of the superseded ranges.

use std::collections::HashSet;

use serde::Serialize;

use super::timeline::Timeline;
use crate::contract::{EventType, Payload, SessionRef};
use crate::ledger::{LedgerError, LedgerReader, SessionSummary, SpanCounts};
use crate::restore::log::SessionLog;

pub(crate) use crate::ledger::RESTORED_FROM;

/// The session and checkpoint a session was restored from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RestoredFrom {
    /// `<adapter>/<session id>` of the parent.
    pub session: String,
    pub checkpoint: String,
}

impl RestoredFrom {
    /// Read a `restored_from` effect's ref; `None` when it is not of the
    /// form `<adapter>/<id>@<checkpoint>`.
    pub(crate) fn parse(reference: &str) -> Option<RestoredFrom> {
        let (session, checkpoint) = reference.split_once('@')?;
        let (adapter, id) = session.split_once('/')?;
        if adapter.is_empty() || id.is_empty() || checkpoint.is_empty() {
            return None;
        }
        Some(RestoredFrom {
            session: session.to_string(),
            checkpoint: checkpoint.to_string(),
        })
    }
}

/// The parent `session` was restored from: `restore --apply` pins the
/// link as the new session's first checkpoint, which the session's row
/// keeps; in an epoch whose rows do not, only that one event is read.
pub(crate) fn restored_from(
    ledger: &LedgerReader,
    session: &SessionRef,
) -> Result<Option<RestoredFrom>, LedgerError> {
    if let Some(kept) = ledger.sessions().restored_from(session)? {
        return Ok(kept.as_deref().and_then(RestoredFrom::parse));
    }
    let first = ledger
        .events()
        .session_first_of(session, EventType::CheckpointRecorded)?;
    Ok(first.and_then(|e| match e.payload {
        Payload::CheckpointRecorded(c) => c
            .effects
            .iter()
            .find(|x| x.kind == RESTORED_FROM)
            .and_then(|x| RestoredFrom::parse(&x.reference)),
        _ => None,
    }))
}

/// What a session's superseded ranges hold: turns started and spans
/// requested there.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Superseded {
    pub turns: u64,
    pub spans: SpanCounts,
}

impl Superseded {
    /// Take these out of a summary's counts.
    pub(crate) fn leave_out(&self, s: &mut SessionSummary) {
        s.turns = s.turns.saturating_sub(self.turns);
        s.spans.open = s.spans.open.saturating_sub(self.spans.open);
        s.spans.closed_native = s
            .spans
            .closed_native
            .saturating_sub(self.spans.closed_native);
        s.spans.recovered = s.spans.recovered.saturating_sub(self.spans.recovered);
    }
}

/// What `session`'s superseded ranges hold in `ledger`; nothing read past
/// the row's resume count when the session was never resumed.
pub(crate) fn superseded(
    ledger: &LedgerReader,
    session: &SessionRef,
) -> Result<Superseded, LedgerError> {
    if ledger.sessions().resumes(session)? == Some(0) {
        return Ok(Superseded::default());
    }
    let log = SessionLog::read_resumes(ledger, session)?;
    superseded_in(ledger, &log)
}

/// [`superseded`] for a log already read.
pub(crate) fn superseded_in(
    ledger: &LedgerReader,
    log: &SessionLog,
) -> Result<Superseded, LedgerError> {
    let mut out = Superseded::default();
    let ranges = log.superseded();
    if ranges.is_empty() {
        return Ok(out);
    }
    let mut ids = HashSet::new();
    for r in &ranges {
        for e in ledger.events().session_range(&log.session, r.from, r.to)? {
            // Ranges may overlap; an event counts once.
            if ids.insert(e.id.0.clone()) && matches!(e.payload, Payload::TurnStarted(_)) {
                out.turns += 1;
            }
        }
    }
    for span in ledger.spans().list(Some(&log.session))? {
        if ids.contains(&span.request_event_id) {
            out.spans.add(span.state, 1);
        }
    }
    Ok(out)
}

/// Mark the timeline's entries a resume superseded, and, unless
/// `include_superseded`, leave what they hold out of its summary's counts.
pub(crate) fn mark_timeline(
    ledger: &LedgerReader,
    log: &SessionLog,
    timeline: &mut Timeline,
    include_superseded: bool,
) -> Result<(), LedgerError> {
    if log.resumes.is_empty() {
        return Ok(());
    }
    for e in &mut timeline.entries {
        e.superseded_by = log.superseded_by(e.offset);
        e.superseded = e.superseded_by.is_some();
    }
    if !include_superseded {
        superseded_in(ledger, log)?.leave_out(&mut timeline.summary);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_restored_from_ref_names_the_parent_and_its_checkpoint() {
        let r = RestoredFrom::parse("claude-code/65f5@turn:484a").unwrap();
        assert_eq!(r.session, "claude-code/65f5");
        assert_eq!(r.checkpoint, "turn:484a");
        assert_eq!(RestoredFrom::parse("claude-code/65f5"), None);
        assert_eq!(RestoredFrom::parse("65f5@cp"), None);
        assert_eq!(RestoredFrom::parse("claude-code/@cp"), None);
    }
}
