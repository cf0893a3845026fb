//! Copilot CLI: where it keeps its files (the one resolver of its home),
//! its hook dialect ([`hooks`]), the dialect of its own record,
//! `events.jsonl` ([`record`], and the shown frames' data, [`frames`]),
//! and where its package is installed and which version it is
//! ([`package`], [`version`]).

pub(crate) mod frames;
pub(crate) mod hooks;
pub mod package;
pub(crate) mod record;
pub(crate) mod version;

use std::path::{Path, PathBuf};

pub use hooks::{normalize, parent_session};

use crate::agents::record::place::{Refusal, is_plain_id};

/// The environment variable that moves Copilot's home.
pub(crate) const HOME_VAR: &str = "COPILOT_HOME";

/// `$COPILOT_HOME`, when it is set and not empty.
pub(crate) fn home_from_env() -> Option<PathBuf> {
    std::env::var_os(HOME_VAR)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// Copilot's home: `$COPILOT_HOME` when it is set and not empty, else
/// `.copilot` in `user_home`.
pub fn home(user_home: &Path) -> PathBuf {
    home_from_env().unwrap_or_else(|| default_home(user_home))
}

/// Copilot's home when `COPILOT_HOME` does not move it.
pub(crate) fn default_home(user_home: &Path) -> PathBuf {
    user_home.join(".copilot")
}

/// The record of session `session_id` under `home`, spelled out (the id
/// is not checked: see [`events_file`]).
pub(crate) fn events_path(home: &Path, session_id: &str) -> PathBuf {
    home.join("session-state")
        .join(session_id)
        .join("events.jsonl")
}

/// The record a Copilot session's id names under `home`, or why there is
/// none (an id with separators would leave the home).
pub(crate) fn events_file(home: &Path, session_id: &str) -> Result<PathBuf, Refusal> {
    if !is_plain_id(session_id) {
        return Err(Refusal(format!(
            "the session id {session_id:?} is not a Copilot session id (a plain name)"
        )));
    }
    Ok(events_path(home, session_id))
}

/// Copilot's indexed session store under `home`.
pub(crate) fn session_store(home: &Path) -> PathBuf {
    home.join("session-store.db")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_ids_never_leave_the_home() {
        assert!(events_file(Path::new("/c"), "../../outside").is_err());
        assert!(events_file(Path::new("/c"), "a/b").is_err());
        assert!(events_file(Path::new("/c"), "").is_err());
        assert_eq!(
            events_file(Path::new("/c"), "3390a855").unwrap(),
            Path::new("/c/session-state/3390a855/events.jsonl")
        );
    }
}
