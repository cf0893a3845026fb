//! Where the read commands get their events: the live ledger epoch.
//!
//! The one place the read side touches storage, so the pure modules beside
//! it stay pure. A session is named by its id, or `adapter/id` when the same
//! id exists under two adapters.

use crate::contract::{AdapterId, Event, SessionRef};
use crate::home::Home;

#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    #[error("the ledger read API is not wired in this build")]
    NoLedger,
    #[error("no session matches {0:?}")]
    NoSuchSession(String),
}

/// Whether `name` (an id, or `adapter/id`) names `session`.
pub fn names(name: &str, session: &SessionRef) -> bool {
    match name.split_once('/') {
        Some((adapter, id)) if AdapterId::parse(adapter).is_some() => {
            adapter == session.adapter.as_str() && id == session.session_id
        }
        _ => name == session.session_id,
    }
}

/// Every event of the live epoch, or only those of the session `name`.
pub fn load_events(home: &Home, name: Option<&str>) -> Result<Vec<Event>, SourceError> {
    let _ = (home, name);
    Err(SourceError::NoLedger)
}

/// Adapters under which the ledger knows `session_id`.
pub fn ledger_adapters(home: &Home, session_id: &str) -> Vec<AdapterId> {
    let _ = (home, session_id);
    Vec::new()
}
