//! Qwen Code (adapter id `qwen-code`, npm `@qwen-code/qwen-code`, seen at
//! 0.24.4): where it keeps its files, its hook dialect ([`hooks`]) and the
//! dialect of its own record, the chat JSONL ([`record`]).
//!
//! Its directory is `$QWEN_HOME`, else `~/.qwen`: the user settings
//! (`settings.json`, whose `hooks` it reads in Claude Code's shape, on by
//! default) live there, and so do the records unless `QWEN_RUNTIME_DIR` (or
//! the setting `advanced.runtimeOutputDir`) moves the runtime output. A
//! record is `<runtime dir>/projects/<project root, every character but
//! [A-Za-z0-9] as '-'>/chats/<session id>.jsonl`; every hook payload names it
//! in `transcript_path`, so the trust gate is that tail, wherever the root
//! is. A subagent's own record is `<same project
//! dir>/subagents/<session id>/agent-<agent id>.jsonl`, which a background
//! subagent's `SubagentStop` names in `agent_transcript_path` (a foreground
//! one's names the session's record there, which is already followed).

pub(crate) mod hooks;
pub(crate) mod record;
mod telemetry;

use std::path::{Path, PathBuf};

use crate::agents::adapter::{
    Adapter, AgentHome, EntryShape, HookPlace, Part, RecordShape, RecordTurns, Resume,
};
use crate::agents::capability::{CapabilityProfile, RecoveryPolicy, TimestampSource};
use crate::agents::record::listing::RecordedFile;
use crate::agents::record::place::{RecordRole, Refusal, is_plain_id};
use crate::agents::record::{LineMark, NamedRecord, RecordLine};
use crate::agents::signal::Normalized;
use crate::contract::{AdapterId, RecordAt};

/// The variable that moves Qwen's runtime output, its records included,
/// out of its directory.
const RUNTIME_VAR: &str = "QWEN_RUNTIME_DIR";

/// Where Qwen writes its records: `runtime` (the value of
/// [`RUNTIME_VAR`]) when it is an absolute path, else its directory
/// `home`. (Qwen also takes a relative or `~` path there, and the setting
/// `advanced.runtimeOutputDir`; those are not followed here.)
fn runtime_dir(home: &Path, runtime: Option<std::ffi::OsString>) -> PathBuf {
    runtime
        .map(PathBuf::from)
        .filter(|dir| dir.is_absolute())
        .unwrap_or_else(|| home.to_path_buf())
}

/// `<projects>/<project>/chats/<id>.jsonl` for a plain id, with its
/// modification time (names and times only).
fn sessions_in(projects: &Path) -> Vec<RecordedFile> {
    use crate::agents::record::listing::{entries, modified_ns};
    let mut out = Vec::new();
    for project in entries(projects).filter(|p| p.is_dir()) {
        for file in entries(&project.join("chats")) {
            let name = file.file_name().and_then(|n| n.to_str());
            let Some(id) = name
                .and_then(|n| n.strip_suffix(".jsonl"))
                .filter(|id| is_plain_id(id))
            else {
                continue;
            };
            out.extend(modified_ns(&file).map(|modified_ns| RecordedFile {
                session_id: id.to_string(),
                path: file.clone(),
                modified_ns,
                subagents: Vec::new(),
            }));
        }
    }
    out
}

/// Qwen Code, as an [`Adapter`].
pub(crate) struct QwenCode;

/// Every hook event Qwen Code 0.24.4 knows (its `HookEventName`); a
/// settings key outside this list is skipped by the client with a warning.
pub(crate) const EVENTS: [&str; 22] = [
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "PostToolBatch",
    "Notification",
    "UserPromptSubmit",
    "UserPromptExpansion",
    "SessionStart",
    "Stop",
    "MessageDisplay",
    "SubagentStart",
    "SubagentStop",
    "PreCompact",
    "PostCompact",
    "SessionEnd",
    "SessionDelete",
    "PermissionRequest",
    "PermissionDenied",
    "StopFailure",
    "TodoCreated",
    "TodoCompleted",
    "InstructionsLoaded",
];

/// The hook's timeout, seconds (Qwen's default is 60; the hook's own worst
/// case is about 1.1 s, see `claude_code::TIMEOUT_S`).
const TIMEOUT_S: u64 = 10;

/// What Qwen Code's hooks deliver, as captured: both call ids on every
/// tool event, the turn in `prompt_id`, `Stop` at every turn's end,
/// `SessionEnd` only when an interactive session exits (never headless,
/// never on a kill), each hook once, an ISO `timestamp` on every payload.
const CAPABILITY: CapabilityProfile = CapabilityProfile {
    adapter: AdapterId::QwenCode,
    tool_call_ids: true,
    native_turn_ids: true,
    turn_end_signal: true,
    session_end_signal: true,
    subagent_routing: false,
    duplicate_delivery: false,
    timestamps: TimestampSource::AgentMillisOrIso,
};

impl Adapter for QwenCode {
    fn name(&self) -> &'static str {
        "Qwen Code"
    }
    fn capability(&self) -> CapabilityProfile {
        CAPABILITY
    }
    /// Every rule, as for Claude Code: the turns are native (`prompt_id`,
    /// which a resumed run continues from the record's history instead of
    /// restarting) and `Stop` closes every turn that is not killed.
    fn recovery(&self) -> RecoveryPolicy {
        RecoveryPolicy::FULL
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
    fn line_mark(&self, _kind: &str) -> LineMark {
        LineMark::None
    }
    /// The record's lines carry no turn id (only its telemetry lines name
    /// `prompt_id`); a user line repeats the hook's prompt word for word.
    fn record_turns(&self) -> RecordTurns {
        RecordTurns::PromptText
    }
    fn record_shape(&self, session_id: &str, role: RecordRole) -> Result<RecordShape, Refusal> {
        let is = |s: &str| Part::Is(s.to_string());
        match role {
            RecordRole::Session => Ok(RecordShape {
                tail: vec![
                    is("projects"),
                    Part::AnyDir,
                    is("chats"),
                    is(&format!("{session_id}.jsonl")),
                ],
                text: format!("<qwen runtime dir>/projects/<project dir>/chats/{session_id}.jsonl"),
            }),
            RecordRole::Subagent(agent) if !is_plain_id(agent) => Err(Refusal(format!(
                "the agent id {agent:?} is not a plain name"
            ))),
            RecordRole::Subagent(agent) => Ok(RecordShape {
                tail: vec![
                    is("projects"),
                    Part::AnyDir,
                    is("subagents"),
                    is(session_id),
                    is(&format!("agent-{agent}.jsonl")),
                ],
                text: format!(
                    "<qwen runtime dir>/projects/<project dir>/subagents/{session_id}/agent-{agent}.jsonl"
                ),
            }),
        }
    }
    /// `<runtime dir>/projects`: `$QWEN_RUNTIME_DIR` moves the records out
    /// of Qwen's directory `home` (as `health` is run, in the user's
    /// environment).
    fn records_dir(&self, home: &Path) -> PathBuf {
        runtime_dir(home, std::env::var_os(RUNTIME_VAR)).join("projects")
    }
    fn recorded_sessions(&self, home: &Path) -> Vec<(String, i64)> {
        crate::agents::record::listing::ids_and_times(sessions_in(&self.records_dir(home)))
    }
    fn recorded_files(&self, home: &Path) -> Vec<RecordedFile> {
        sessions_in(&self.records_dir(home))
    }
    fn home(&self) -> AgentHome {
        AgentHome {
            var: "QWEN_HOME",
            default: ".qwen",
        }
    }
    fn hooks(&self) -> HookPlace {
        HookPlace::Settings {
            user_file: "settings.json",
            project_file: ".qwen/settings.json",
            events: &EVENTS,
            // Qwen runs a hook's `command` with `bash -c`; it has no
            // argument list.
            entry: EntryShape::CommandGroup { per_second: 1 },
            timeout_s: TIMEOUT_S,
            end_timeout_s: None,
        }
    }
    /// `qwen --resume <id>` takes the session up again, in the session's
    /// project directory (Qwen looks for it under that project's records).
    fn resume(&self) -> Resume {
        Resume {
            program: "qwen",
            before_id: &["--resume"],
        }
    }
}

#[cfg(test)]
mod tests;
