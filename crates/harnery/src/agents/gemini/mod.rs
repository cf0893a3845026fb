//! Gemini CLI (adapter id `gemini-cli`): where it keeps its files, its
//! hook dialect ([`hooks`]) and the dialect of its own record, the chat
//! JSONL under `<home>/.gemini/tmp/<project>/chats/` ([`record`]).
//!
//! Everything here was read off the real client (`@google/gemini-cli`
//! 0.61.0, offline against a scripted model); the captures are
//! `tests/fixtures/gemini-cli/` and `docs/agents/gemini-cli.md` says what
//! the client does and does not send.
//!
//! Its directory: `GEMINI_CLI_HOME` moves the client's idea of the *user's
//! home*, not of its directory: settings and records are then under
//! `$GEMINI_CLI_HOME/.gemini` ([`Adapter::dir`] here, where the other
//! agents' variables name their directory itself).

pub(crate) mod hooks;
mod listing;
pub(crate) mod record;

use std::path::{Path, PathBuf};

use crate::agents::adapter::{
    Adapter, AgentHome, EntryShape, HookPlace, Part, RecordShape, RecordTurns, Resume,
};
use crate::agents::capability::{CapabilityProfile, RecoveryPolicy, TimestampSource};
use crate::agents::record::place::{RecordRole, Refusal, is_plain_id};
use crate::agents::record::{LineMark, NamedRecord, RecordLine};
use crate::agents::signal::Normalized;
use crate::contract::{AdapterId, RecordAt};

/// Gemini CLI, as an [`Adapter`].
pub(crate) struct GeminiCli;

/// What its hooks deliver, as probed: no tool-call id, no turn id, a turn
/// boundary (`AfterAgent`) and a session end (`SessionEnd`, which the
/// interactive UI sends up to three times), ISO timestamps on every event.
pub(crate) const GEMINI_CLI: CapabilityProfile = CapabilityProfile {
    adapter: AdapterId::GeminiCli,
    tool_call_ids: false,
    native_turn_ids: false,
    turn_end_signal: true,
    session_end_signal: true,
    subagent_routing: false,
    duplicate_delivery: true,
    timestamps: TimestampSource::AgentMillisOrIso,
};

/// The variable that moves the user's home as Gemini CLI sees it.
pub(crate) const HOME_VAR: &str = "GEMINI_CLI_HOME";
/// Its directory under that home.
pub(crate) const DIR_NAME: &str = ".gemini";

/// The hook events harnery installs: every one the client has.
pub(crate) const EVENTS: [&str; 11] = [
    "SessionStart",
    "SessionEnd",
    "BeforeAgent",
    "AfterAgent",
    "BeforeModel",
    "AfterModel",
    "BeforeToolSelection",
    "BeforeTool",
    "AfterTool",
    "PreCompress",
    "Notification",
];
/// Every hook's timeout, in seconds (the client's default is 60).
const TIMEOUT_S: u64 = 10;

impl Adapter for GeminiCli {
    fn name(&self) -> &'static str {
        "Gemini CLI"
    }
    fn capability(&self) -> CapabilityProfile {
        GEMINI_CLI
    }
    /// No turn-boundary sweeps: its turns are stamped (no turn id) and its
    /// calls paired in order (no call id), as Copilot's are; and a killed
    /// client sends no `AfterAgent` (see `agents`' module doc).
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
        record: bool,
    ) -> (Normalized, NamedRecord) {
        hooks::normalize_naming(event, payload, received_unix_ns, record)
    }
    fn subagent_record(&self, payload: &[u8]) -> Option<(String, String)> {
        hooks::subagent_record(payload)
    }
    fn read_marked(
        &self,
        line: &[u8],
        at: &RecordAt,
    ) -> (RecordLine, Option<Option<String>>, LineMark) {
        let (read, session) = record::read_line(line, at);
        (read, Some(session), LineMark::None)
    }
    fn line_session(&self, line: &[u8]) -> Option<String> {
        record::line_session(line)
    }
    fn line_mark(&self, _kind: &str) -> LineMark {
        LineMark::None
    }
    fn record_turns(&self) -> RecordTurns {
        RecordTurns::PromptText
    }
    fn record_shape(&self, session_id: &str, role: RecordRole) -> Result<RecordShape, Refusal> {
        let is = |s: &str| Part::Is(s.to_string());
        if let RecordRole::Subagent(agent) = role {
            if !is_plain_id(agent) {
                return Err(Refusal(format!(
                    "the subagent id {agent:?} is not a plain name"
                )));
            }
            return Ok(RecordShape {
                tail: vec![
                    is(DIR_NAME),
                    is("tmp"),
                    Part::AnyDir,
                    is("chats"),
                    is(session_id),
                    is(&format!("{agent}.jsonl")),
                ],
                text: format!("<home>/.gemini/tmp/<project>/chats/{session_id}/{agent}.jsonl"),
            });
        }
        let short = record::file_id(session_id);
        Ok(RecordShape {
            tail: vec![
                is(DIR_NAME),
                is("tmp"),
                Part::AnyDir,
                is("chats"),
                Part::Framed("session-", format!("-{short}.jsonl")),
            ],
            text: format!("<home>/.gemini/tmp/<project>/chats/session-<time>-{short}.jsonl"),
        })
    }
    fn records_dir(&self, home: &Path) -> PathBuf {
        home.join("tmp")
    }
    /// None: a record's name holds only the first 8 characters of its
    /// session's id, and this listing reads names, never bytes, so it
    /// cannot name a session (`health` cannot tell a Gemini session whose
    /// hooks never ran; `docs/agents/gemini-cli.md` says so).
    fn recorded_sessions(&self, _home: &Path) -> Vec<(String, i64)> {
        Vec::new()
    }
    /// Read from each record's header (`harnery import`; see `listing`).
    fn recorded_files(&self, home: &Path) -> Vec<crate::agents::adapter::RecordedFile> {
        listing::files(home)
    }
    fn home(&self) -> AgentHome {
        AgentHome {
            var: HOME_VAR,
            default: DIR_NAME,
        }
    }
    fn dir(&self, user_home: &Path) -> (PathBuf, bool) {
        dir(user_home)
    }
    fn hooks(&self) -> HookPlace {
        HookPlace::Settings {
            user_file: "settings.json",
            project_file: ".gemini/settings.json",
            events: &EVENTS,
            // The client runs every command hook as `bash -c <line>`: there
            // is no argument-list form. Its timeouts are milliseconds.
            entry: EntryShape::CommandGroup { per_second: 1000 },
            timeout_s: TIMEOUT_S,
            end_timeout_s: None,
        }
    }
    /// `gemini --resume <id>`, run in the session's project directory (the
    /// client looks the id up in that project's `chats/`); it keeps the
    /// session id and appends to the same record.
    fn resume(&self) -> Resume {
        Resume {
            program: "gemini",
            before_id: &["--resume"],
        }
    }
}

/// Gemini CLI's directory as the client resolves it: `.gemini` under
/// `$GEMINI_CLI_HOME` when that is set and not empty, else under the
/// user's home; and whether the variable moved it.
pub(crate) fn dir(user_home: &Path) -> (PathBuf, bool) {
    match std::env::var_os(HOME_VAR).filter(|v| !v.is_empty()) {
        Some(home) => (PathBuf::from(home).join(DIR_NAME), true),
        None => (user_home.join(DIR_NAME), false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agents::record::place::check_shape;

    fn shape(path: &str) -> Result<(), Refusal> {
        check_shape(
            AdapterId::GeminiCli,
            "735e7804-a692-4f55-ae13-59a7effd07f2",
            RecordRole::Session,
            Path::new(path),
        )
    }

    #[test]
    fn only_the_sessions_own_chat_file_is_a_record() {
        shape("/h/.gemini/tmp/proj/chats/session-2026-12-06T10-08-735e7804.jsonl").unwrap();
        // Another session's file, another folder, a subagent's, a dot.
        for bad in [
            "/h/.gemini/tmp/proj/chats/session-2026-12-06T10-08-c877edbd.jsonl",
            "/h/.gemini/tmp/proj/logs/session-2026-12-06T10-08-735e7804.jsonl",
            "/h/.gemini/tmp/proj/chats/735e7804/session-x-735e7804.jsonl",
            "/h/.gemini/tmp/.hidden/chats/session-x-735e7804.jsonl",
            "/h/.gemini/tmp/proj/chats/../chats/session-x-735e7804.jsonl",
            "/etc/passwd",
            "h/.gemini/tmp/proj/chats/session-x-735e7804.jsonl",
        ] {
            assert!(shape(bad).is_err(), "{bad} was taken for a record");
        }
    }

    #[test]
    fn a_subagent_record_is_its_own_file_beside_the_sessions() {
        let sub = |agent, path| {
            check_shape(
                AdapterId::GeminiCli,
                "s",
                RecordRole::Subagent(agent),
                Path::new(path),
            )
        };
        sub("a", "/h/.gemini/tmp/p/chats/s/a.jsonl").unwrap();
        assert!(
            sub("a", "/h/.gemini/tmp/p/chats/t/a.jsonl").is_err(),
            "another session's"
        );
        assert!(
            sub("a", "/h/.gemini/tmp/p/chats/s/b.jsonl").is_err(),
            "another subagent's"
        );
        assert!(sub("../a", "/h/.gemini/tmp/p/chats/s/../a.jsonl").is_err());
    }
}
