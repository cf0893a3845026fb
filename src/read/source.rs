//! Where the read commands get their events from the live ledger epoch,
//! how a session is named, and what the epoch advances closed (for the
//! epochs `--epoch` selects, see [`super::epochs`]).
//!
//! With [`super::epochs`], the one place the read side touches storage,
//! so the pure modules beside it stay pure. A session is named by its id
//! (or a unique prefix, as everywhere in harnery), or `adapter/id` when one
//! id exists under two adapters.

use std::collections::BTreeMap;

use crate::contract::{AdapterId, SessionRef};
use crate::epoch::{EpochError, archived_open_span_sessions};
use crate::home::Home;
use crate::ledger::{GENESIS_FILE, Ledger, LedgerError, SessionSummary};
use crate::read::audit::Classification;

#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    #[error(transparent)]
    Ledger(#[from] LedgerError),
    #[error("no session matches {0:?}")]
    NoSuchSession(String),
    #[error(transparent)]
    Epoch(#[from] EpochError),
    #[error("no selected epoch could be read: {0}")]
    NoReadableEpoch(String),
    #[error(
        "{name:?} names {}/{} in one epoch and {}/{} in another; give more of the id or pick one with --epoch", first.adapter, first.session_id, second.adapter, second.session_id
    )]
    AcrossEpochs {
        name: String,
        first: SessionRef,
        second: SessionRef,
    },
}

/// Whether `name` (an id, or `adapter/id`) names `session` exactly.
pub fn names(name: &str, session: &SessionRef) -> bool {
    match split_adapter(name) {
        Some((adapter, id)) => adapter == session.adapter && id == session.session_id,
        None => name == session.session_id,
    }
}

fn split_adapter(name: &str) -> Option<(AdapterId, &str)> {
    let (adapter, id) = name.split_once('/')?;
    Some((AdapterId::parse(adapter)?, id))
}

pub(crate) fn resolve(ledger: &Ledger, name: &str) -> Result<SessionRef, SourceError> {
    match split_adapter(name) {
        Some(_) => ledger
            .sessions()?
            .into_iter()
            .map(|s| s.session)
            .find(|s| names(name, s))
            .ok_or_else(|| SourceError::NoSuchSession(name.into())),
        None => Ok(ledger.resolve_session(name)?),
    }
}

/// The live epoch, or `None` when no ledger exists yet (a new home: see
/// `ledger::integrity`); a live epoch with files but no genesis is damage.
pub fn live_or_none(home: &Home) -> Result<Option<Ledger>, SourceError> {
    let dir = Ledger::live_dir(home);
    if !dir.join(GENESIS_FILE).exists() && crate::ledger::integrity::is_new(&dir)? {
        return Ok(None);
    }
    Ok(Some(Ledger::open_read(home)?))
}

/// Adapters under which the live ledger knows `session_id` exactly.
pub fn ledger_adapters(home: &Home, session_id: &str) -> Vec<AdapterId> {
    let Ok(ledger) = Ledger::open_read(home) else {
        return Vec::new();
    };
    let sessions = ledger.sessions().unwrap_or_default();
    sessions
        .into_iter()
        .filter(|s| s.session.session_id == session_id)
        .map(|s| s.session.adapter)
        .collect()
}

/// The reasons every advance's administrative closure holds against each
/// session it closed (ADR 0078, disposition of pre-advance epochs), with
/// the archives that closed it. A session keeps these in every view, the
/// live one too: it is classified as a whole.
pub fn closed_sessions(home: &Home) -> Result<BTreeMap<SessionRef, Closed>, EpochError> {
    let mut out: BTreeMap<SessionRef, Closed> = BTreeMap::new();
    for archived in archived_open_span_sessions(home)? {
        let closed = out.entry(archived.session.clone()).or_default();
        closed.reasons.extend(archived.reasons);
        closed.archives.push(archived.genesis_id);
    }
    Ok(out)
}

/// What the advances closed of one session.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Closed {
    pub reasons: Vec<String>,
    /// Genesis ids of the archives that left it unfinished, in chain order.
    pub archives: Vec<String>,
}

/// The audit classification of each listed session of the live ledger, in
/// the order given (for `harnery sessions`).
pub fn classify_summaries(
    ledger: &Ledger,
    sessions: &[SessionSummary],
) -> Result<Vec<Classification>, LedgerError> {
    sessions
        .iter()
        .map(|s| {
            let mut c = Classification::eligible();
            c.add_reasons(crate::read::epochs::part_reasons(ledger, &s.session)?);
            Ok(c)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_is_named_by_id_or_adapter_and_id() {
        let s = SessionRef {
            adapter: AdapterId::Copilot,
            session_id: "abc".into(),
        };
        assert!(names("abc", &s));
        assert!(names("copilot/abc", &s));
        assert!(!names("claude-code/abc", &s));
        assert!(!names("ab", &s));
    }
}
