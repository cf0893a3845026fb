//! Claude Code: where it keeps its files (the one resolver of its config
//! directory), its hook dialect ([`hooks`]) and the dialect of its own
//! record, the JSONL transcript and stream-json frames ([`record`], each
//! line's envelope in [`line`](mod@line)).

pub(crate) mod hooks;
pub(crate) mod line;
mod message;
pub(crate) mod record;

use std::path::{Path, PathBuf};

pub use hooks::{normalize, normalize_naming};

use crate::agents::adapter::{
    Adapter, AgentHome, EntryShape, HookPlace, Part, RecordShape, RecordTurns, Resume,
};
use crate::agents::capability::{CLAUDE_CODE, CapabilityProfile, RecoveryPolicy};
use crate::agents::record::place::{RecordRole, Refusal, is_plain_id};
use crate::agents::record::{LineMark, NamedRecord, RecordLine};
use crate::agents::signal::Normalized;
use crate::contract::RecordAt;

/// Claude Code 2.1.332's hook events (the SDK's `HOOK_EVENTS`).
pub(crate) const HOOK_EVENTS: [&str; 34] = [
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "PostToolBatch",
    "Notification",
    "UserPromptSubmit",
    "UserPromptExpansion",
    "SessionStart",
    "SessionEnd",
    "Stop",
    "StopFailure",
    "SubagentStart",
    "SubagentStop",
    "PreCompact",
    "PostCompact",
    "PreModelSwitch",
    "PostModelSwitch",
    "PermissionRequest",
    "PermissionDenied",
    "Setup",
    "TeammateIdle",
    "TaskCreated",
    "TaskCompleted",
    "Elicitation",
    "ElicitationResult",
    "ConfigChange",
    "WorktreeCreate",
    "WorktreeRemove",
    "InstructionsLoaded",
    "CwdChanged",
    "FileChanged",
    "DirectoryAdded",
    "MessageDisplay",
    "PreSkillShellCommand",
];

/// Claude Code hook timeout, seconds. The hook's own worst case is about
/// 1.1 s (1 s stdin stall bound + 100 ms lease wait) and 5 s for stdin that
/// keeps trickling; normal runs take a few ms.
pub(crate) const TIMEOUT_S: u64 = 10;
/// SessionEnd hooks run while Claude Code exits (default budget 1.5 s); an
/// explicit timeout raises that budget, so keep it just above the hook's bound.
pub(crate) const SESSION_END_TIMEOUT_S: u64 = 2;

/// Claude Code, as an [`Adapter`].
pub(crate) struct ClaudeCode;

impl Adapter for ClaudeCode {
    fn name(&self) -> &'static str {
        "Claude Code"
    }
    fn capability(&self) -> CapabilityProfile {
        CLAUDE_CODE
    }
    fn recovery(&self) -> RecoveryPolicy {
        RecoveryPolicy::FULL
    }
    fn normalize(
        &self,
        _event: Option<&str>,
        payload: &[u8],
        received_unix_ns: i64,
        record: bool,
    ) -> (Normalized, NamedRecord) {
        normalize_naming(payload, received_unix_ns, record)
    }
    fn read_marked(
        &self,
        line: &[u8],
        at: &RecordAt,
    ) -> (RecordLine, Option<Option<String>>, LineMark) {
        record::read_marked(line, at)
    }
    fn line_session(&self, line: &[u8]) -> Option<String> {
        record::line_session(line)
    }
    fn line_mark(&self, kind: &str) -> LineMark {
        record::line_mark(kind)
    }
    fn record_turns(&self) -> RecordTurns {
        RecordTurns::PromptChain
    }
    fn record_shape(&self, session_id: &str, role: RecordRole) -> Result<RecordShape, Refusal> {
        let is = |s: &str| Part::Is(s.to_string());
        Ok(match role {
            RecordRole::Session => RecordShape {
                tail: vec![
                    is("projects"),
                    Part::AnyDir,
                    is(&format!("{session_id}.jsonl")),
                ],
                text: format!("<config dir>/projects/<project dir>/{session_id}.jsonl"),
            },
            RecordRole::Subagent(agent) => {
                if !is_plain_id(agent) {
                    return Err(Refusal(format!(
                        "the agent id {agent:?} is not a plain name"
                    )));
                }
                RecordShape {
                    tail: vec![
                        is("projects"),
                        Part::AnyDir,
                        is(session_id),
                        is("subagents"),
                        is(&format!("agent-{agent}.jsonl")),
                    ],
                    text: format!(
                        "<config dir>/projects/<project dir>/{session_id}/subagents/agent-{agent}.jsonl"
                    ),
                }
            }
        })
    }
    fn records_dir(&self, home: &Path) -> PathBuf {
        projects_dir(home)
    }
    fn recorded_sessions(&self, home: &Path) -> Vec<(String, i64)> {
        crate::agents::record::listing::claude_sessions(&projects_dir(home))
    }
    fn recorded_files(&self, home: &Path) -> Vec<super::adapter::RecordedFile> {
        crate::agents::record::listing::claude_files(&projects_dir(home))
    }
    fn home(&self) -> AgentHome {
        AgentHome {
            var: CONFIG_VAR,
            default: ".claude",
        }
    }
    fn hooks(&self) -> HookPlace {
        HookPlace::Settings {
            user_file: "settings.json",
            project_file: ".claude/settings.json",
            events: &HOOK_EVENTS,
            entry: EntryShape::ExecGroup,
            timeout_s: TIMEOUT_S,
            end_timeout_s: Some(("SessionEnd", SESSION_END_TIMEOUT_S)),
        }
    }
    fn resume(&self) -> Resume {
        Resume {
            program: "claude",
            before_id: &["--resume"],
        }
    }
}

/// The environment variable that moves Claude Code's config directory.
pub(crate) const CONFIG_VAR: &str = "CLAUDE_CONFIG_DIR";

/// Claude Code's config directory: `$CLAUDE_CONFIG_DIR` when it is set and
/// not empty, else `.claude` in `user_home`.
pub fn config_dir(user_home: &Path) -> PathBuf {
    std::env::var_os(CONFIG_VAR)
        .filter(|v| !v.is_empty())
        .map_or_else(|| user_home.join(".claude"), PathBuf::from)
}

/// The folder of per-project transcript folders under `config_dir`.
pub(crate) fn projects_dir(config_dir: &Path) -> PathBuf {
    config_dir.join("projects")
}

/// The transcript file of `session_id` in one project folder.
pub(crate) fn transcript_in(project_dir: &Path, session_id: &str) -> PathBuf {
    project_dir.join(format!("{session_id}.jsonl"))
}

/// Every recorded transcript under `tests/fixtures/records` (the record
/// reader's tests read each of their lines).
#[cfg(test)]
fn recorded_transcripts() -> Vec<PathBuf> {
    fn under(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("the fixtures dir reads") {
            let path = entry.expect("an entry").path();
            if path.is_dir() {
                under(&path, out);
            } else if path.extension().is_some_and(|e| e == "jsonl") {
                out.push(path);
            }
        }
    }
    let mut out = Vec::new();
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/records");
    under(Path::new(root), &mut out);
    out
}
