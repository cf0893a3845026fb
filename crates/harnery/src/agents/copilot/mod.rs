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
pub(crate) mod workspace;

use std::path::{Path, PathBuf};

pub use hooks::{normalize, parent_session};

use crate::agents::adapter::{
    Adapter, AgentHome, EntryShape, HookPlace, Part, RecordShape, RecordTurns, Resume,
};
use crate::agents::capability::{COPILOT, CapabilityProfile, RecoveryPolicy};
use crate::agents::record::place::{RecordRole, Refusal, is_plain_id};
use crate::agents::record::{LineMark, NamedRecord, RecordLine};
use crate::agents::signal::Normalized;
use crate::contract::RecordAt;

/// Copilot CLI 1.0.102's hook keys (camelCase).
pub(crate) const HOOK_EVENTS: [&str; 15] = [
    "sessionStart",
    "sessionEnd",
    "userPromptSubmitted",
    "userPromptTransformed",
    "preToolUse",
    "preMcpToolCall",
    "postToolUse",
    "postToolUseFailure",
    "errorOccurred",
    "agentStop",
    "subagentStart",
    "subagentStop",
    "preCompact",
    "permissionRequest",
    "notification",
];

/// Copilot hook timeout, seconds (`timeoutSec`).
pub(crate) const TIMEOUT_S: u64 = 10;

/// Copilot CLI, as an [`Adapter`].
pub(crate) struct Copilot;

impl Adapter for Copilot {
    fn name(&self) -> &'static str {
        "Copilot"
    }
    fn capability(&self) -> CapabilityProfile {
        COPILOT
    }
    /// No turn-boundary sweeps (see `agents`' module doc): its turns are
    /// stamped and its boundary is not sent on interrupt.
    fn recovery(&self) -> RecoveryPolicy {
        RecoveryPolicy {
            turn_end_sweep: false,
            next_turn_sweep: false,
            ..RecoveryPolicy::FULL
        }
    }
    fn normalize(
        &self,
        event: Option<&str>,
        payload: &[u8],
        received_unix_ns: i64,
        _record: bool,
    ) -> (Normalized, NamedRecord) {
        (
            normalize(event, payload, received_unix_ns),
            NamedRecord::Unread,
        )
    }
    fn parent_session(&self, payload: &[u8]) -> Option<String> {
        parent_session(payload)
    }
    fn read_marked(
        &self,
        line: &[u8],
        at: &RecordAt,
    ) -> (RecordLine, Option<Option<String>>, LineMark) {
        let (read, mark) = record::read_marked(line, at);
        (read, None, mark)
    }
    fn line_session(&self, line: &[u8]) -> Option<String> {
        record::line_session(line)
    }
    fn line_mark(&self, kind: &str) -> LineMark {
        record::line_mark(kind)
    }
    fn record_turns(&self) -> RecordTurns {
        RecordTurns::PromptText
    }
    fn record_shape(&self, session_id: &str, role: RecordRole) -> Result<RecordShape, Refusal> {
        if let RecordRole::Subagent(_) = role {
            return Err(Refusal(
                "Copilot writes no record of its own for a subagent".into(),
            ));
        }
        let is = |s: &str| Part::Is(s.to_string());
        Ok(RecordShape {
            tail: vec![is("session-state"), is(session_id), is("events.jsonl")],
            text: format!("<copilot home>/session-state/{session_id}/events.jsonl"),
        })
    }
    fn finds_record_by_id(&self) -> bool {
        true
    }
    /// `events.jsonl` under its home (`$COPILOT_HOME`, else `~/.copilot`).
    fn found_record(&self, session_id: &str) -> Result<Option<PathBuf>, (PathBuf, String)> {
        let Some(home) =
            home_from_env().or_else(|| crate::home::env_home().map(|h| default_home(&h)))
        else {
            return Ok(None);
        };
        match events_file(&home, session_id) {
            Ok(path) => Ok(path.exists().then_some(path)),
            Err(Refusal(why)) => {
                let path = events_path(&home, session_id);
                match std::fs::symlink_metadata(&path) {
                    Ok(_) => Err((path, why)),
                    Err(_) => Ok(None),
                }
            }
        }
    }
    fn records_dir(&self, home: &Path) -> PathBuf {
        home.join("session-state")
    }
    fn recorded_sessions(&self, home: &Path) -> Vec<(String, i64)> {
        crate::agents::record::listing::copilot_sessions(&home.join("session-state"))
    }
    fn title_beside(&self, record: &Path) -> Option<crate::contract::SessionTitled> {
        workspace::title_beside(record)
    }
    fn recorded_files(&self, home: &Path) -> Vec<super::adapter::RecordedFile> {
        crate::agents::record::listing::copilot_files(&home.join("session-state"))
    }
    fn home(&self) -> AgentHome {
        AgentHome {
            var: HOME_VAR,
            default: ".copilot",
        }
    }
    fn hooks(&self) -> HookPlace {
        HookPlace::Settings {
            user_file: "hooks/harnery.json",
            project_file: ".github/hooks/harnery.json",
            events: &HOOK_EVENTS,
            entry: EntryShape::CopilotEntry,
            timeout_s: TIMEOUT_S,
            end_timeout_s: None,
        }
    }
    fn resume(&self) -> Resume {
        Resume {
            program: "copilot",
            before_id: &["--resume"],
        }
    }
}

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
