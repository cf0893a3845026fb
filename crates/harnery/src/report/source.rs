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
use crate::ledger::{GENESIS_FILE, LedgerError, LedgerReader};

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
pub(crate) fn names(name: &str, session: &SessionRef) -> bool {
    match split_adapter(name) {
        Some((adapter, id)) => adapter == session.adapter && id == session.session_id,
        None => name == session.session_id,
    }
}

fn split_adapter(name: &str) -> Option<(AdapterId, &str)> {
    let (adapter, id) = name.split_once('/')?;
    Some((AdapterId::parse(adapter)?, id))
}

pub(crate) fn resolve(ledger: &LedgerReader, name: &str) -> Result<SessionRef, SourceError> {
    Ok(ledger.sessions().resolve(name)?)
}

/// The live epoch, or `None` when no ledger exists yet (a new home: see
/// `ledger::integrity`); a live epoch with files but no genesis is damage.
pub(crate) fn live_or_none(home: &Home) -> Result<Option<LedgerReader>, SourceError> {
    let dir = LedgerReader::live_dir(home);
    if !dir.join(GENESIS_FILE).exists() && crate::ledger::integrity::is_new(&dir)? {
        return Ok(None);
    }
    Ok(Some(LedgerReader::open(home)?))
}

/// The live epoch's raw archive, its size on disk and its original size
/// (`archive status`); a home with no ledger yet has an empty archive.
pub fn live_archive_size(home: &Home) -> Result<crate::ledger::ArchiveSize, SourceError> {
    match live_or_none(home)? {
        Some(ledger) => Ok(ledger.raw().size()?),
        None => Ok(Default::default()),
    }
}

/// The session `name` picks (a full id or a unique prefix, see
/// [`crate::contract::session_name`]) among those the intake spool holds
/// records of and the live ledger knows, under `adapter` when given: for
/// the commands that write a signal into a session's spool (`end`,
/// `checkpoint`, `exec`), so a session the agent has spooled but
/// `finalize` has not drained yet is found too. Never a session neither
/// knows: an unknown or ambiguous name is an error.
pub(crate) fn find_session(
    home: &Home,
    name: &str,
    adapter: Option<AdapterId>,
) -> Result<SessionRef, SourceError> {
    use crate::contract::session_name::{id_parts, pick};
    let mut known = crate::report::spool_facts::spooled_sessions(home).unwrap_or_default();
    if let Ok(Some(ledger)) = live_or_none(home) {
        for id in id_parts(name) {
            known.extend(ledger.sessions().by_prefix(id)?);
        }
    }
    let looked = "neither the intake spool nor the live ledger holds it";
    Ok(pick(name, adapter, known, looked).map_err(LedgerError::from)?)
}

/// The reasons every advance's administrative closure holds against each
/// session it closed (ADR 0078, disposition of pre-advance epochs), with
/// the archives that closed it. A session keeps these in every view, the
/// live one too: it is classified as a whole.
pub(crate) fn closed_sessions(home: &Home) -> Result<BTreeMap<SessionRef, Closed>, EpochError> {
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
pub(crate) struct Closed {
    pub reasons: Vec<String>,
    /// Genesis ids of the archives that left it unfinished, in chain order.
    pub archives: Vec<String>,
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
