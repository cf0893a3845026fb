//! The agent's own record of a session, read line by line.
//!
//! Hooks carry what the agent is about to do or just did; the agent also
//! writes its own record of the session, and that record holds what hooks
//! never carry: what the model said and thought, token usage, and (for
//! Copilot) the tool call ids, turn ids and exit codes its hooks lack.
//!
//! - Claude Code: the JSONL transcript at `transcript_path`, and the same
//!   frames on stdout with `-p --output-format stream-json`.
//! - Copilot CLI: `session-state/<session>/events.jsonl` under
//!   `COPILOT_HOME` (default `~/.copilot`).
//!
//! This module holds what both agents' record readers share (the typed
//! line, the frame parser, where a hook says the record is); each agent's
//! own reader is `agents::<agent>::record`, and `agents::harnery::chunk`
//! picks one by adapter. Each dialect's normalizer is stateless: one line in, the [`RecordItem`]s
//! it says out. Which session a record belongs to, where the cursor is and
//! how an item joins a hook span is the finalizer's business
//! (`finalize::record`). A line that is not JSON, or JSON in a shape the
//! dialect does not know as any frame, is [`RecordItem::Unrecognized`]:
//! kept and reported, never dropped. A frame the dialect knows and that
//! carries nothing for the ledger is no item at all.
//!
//! Usage has two rules a stateless reader cannot apply and the finalizer
//! must:
//!
//! - Claude Code writes one transcript line per content block of a model
//!   message and repeats the message's `usage` on every one of them. Each
//!   line yields its [`RecordItem::Usage`] with `message_id` set; keep the
//!   first per message id. A `Usage` without a message id stands alone.
//! - Totals (Claude Code's stream-json `result` frame and transcript
//!   `cost-state` lines) are [`RecordItem::UsageTotal`], never summed with
//!   per-call usage: they already include it.

pub(crate) mod lines;
pub(crate) mod listing;
pub(crate) mod place;

use std::sync::LazyLock;

use memchr::memmem;

use super::wire::parse_payload;
use crate::contract::{
    MessageAssistant, MessageUser, ReasoningRecorded, SessionMetadata, UsageReported, UsageSummary,
};

/// One line of a record, read.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordLine {
    /// The agent's own timestamp of the line (UTC ns), when it wrote one.
    pub time_unix_ns: Option<i64>,
    /// The subagent that wrote the line, when the record says so (Claude
    /// Code sidechains, Copilot subagent frames).
    pub agent_id: Option<String>,
    /// The agent's own turn id for the line, when the record has one
    /// (Copilot `turnId`; Claude Code `promptId`).
    pub native_turn_id: Option<String>,
    /// The line's own id and the line it follows on from (Claude Code
    /// `uuid` and `parentUuid`, on every line that has them, even one that
    /// says nothing else): an assistant line carries no `promptId`, so its
    /// turn is that of the user line its chain leads back to.
    pub uuid: Option<Box<str>>,
    pub parent_uuid: Option<Box<str>>,
    pub items: Vec<RecordItem>,
}

/// What a line is to the place of a turn's end in the record (see
/// `restore::record_cut`): each agent's reader says it (`line_mark`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum LineMark {
    #[default]
    None,
    /// Written for the prompt that follows (Claude Code's
    /// `file-history-snapshot`): the next turn's preamble.
    NextPrompt,
    /// A turn is over after it (Copilot's `assistant.turn_end`).
    TurnEnd,
}

/// What one line of an agent's record says, in harnery's terms.
#[derive(Debug, Clone, PartialEq)]
pub enum RecordItem {
    UserMessage(MessageUser),
    AssistantMessage(MessageAssistant),
    Reasoning(ReasoningRecorded),
    /// One model call's usage. Claude Code repeats a message's usage on
    /// each of its lines: keep the first per `message_id` (see the module
    /// doc).
    Usage(UsageReported),
    /// The agent's own running total for the session, one per model; a
    /// later total replaces an earlier one and none is added to `Usage`.
    UsageTotal(UsageReported),
    /// The agent's own cumulative totals for one model (Copilot's
    /// `session.shutdown` `modelMetrics`), recorded as they stand.
    UsageSummary(UsageSummary),
    Metadata(SessionMetadata),
    /// The record's tool call, asked for (Claude `tool_use`, Copilot
    /// `tool.execution_start`).
    ToolStarted(RecordedCall),
    /// A tool call the record copied from the session that made it (a
    /// Claude Code `--fork-session` copy): it ran there, not here, so it
    /// joins no hook span of this session and its result is no loss.
    CopiedCall {
        tool_call_id: String,
    },
    /// The record's tool result (Claude `tool_result`, Copilot
    /// `tool.execution_complete`).
    ToolFinished(RecordedResult),
    /// A turn's start and end as the record marks them (Copilot
    /// `assistant.turn_start` / `assistant.turn_end`).
    TurnStarted {
        turn_id: String,
    },
    TurnEnded {
        turn_id: String,
    },
    /// The agent's own title of the session on this line (Qwen Code's
    /// `custom_title`, Gemini CLI's `summary`), as written: the session
    /// cleans it (`session.titled`).
    Title(RecordTitle),
    /// The agent resumed the session (Copilot `session.resume`).
    Resumed,
    /// The agent closed the session (Copilot `session.shutdown`).
    Shutdown,
    /// Not a frame this dialect knows; `reason` says why.
    Unrecognized {
        reason: String,
    },
}

/// A title as the record has it.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordTitle {
    pub title: String,
    /// The agent's name of the field.
    pub field: String,
    pub user_named: Option<bool>,
}

/// A tool call as the record has it.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedCall {
    pub tool_call_id: String,
    pub tool_name: String,
    /// [`crate::agents::wire::input_digest`] of the call's arguments, computed
    /// exactly as the hook side computes it for the same tool, so that a
    /// record call can be matched to a hook span by name and digest.
    pub input_digest: String,
    pub turn_id: Option<String>,
}

/// A tool result as the record has it.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedResult {
    pub tool_call_id: String,
    pub success: Option<bool>,
    /// A shell tool's exit code (Copilot `shellExecution.exitCode`).
    pub exit_code: Option<i64>,
    pub turn_id: Option<String>,
    /// The result's text, whole, as the record gives it to the model
    /// (Claude Code's `tool_result` content, Copilot's `result.content`,
    /// Codex's call output, Gemini CLI's and Qwen Code's function response,
    /// OpenCode's tool part state); `tool.recorded` keeps its first
    /// `OUTPUT_CAP` bytes.
    pub output: Option<String>,
}

/// The keys [`path_in_payload`] and [`subagent_record_in_payload`] look
/// for before they parse anything (searchers built once: a payload is
/// looked at for every hook signal of a session whose record is unread).
static TRANSCRIPT_PATH: LazyLock<memmem::Finder<'static>> =
    LazyLock::new(|| memmem::Finder::new(b"\"transcript_path\""));
static TRANSCRIPT_PATH_CAMEL: LazyLock<memmem::Finder<'static>> =
    LazyLock::new(|| memmem::Finder::new(b"\"transcriptPath\""));
static AGENT_TRANSCRIPT_PATH: LazyLock<memmem::Finder<'static>> =
    LazyLock::new(|| memmem::Finder::new(b"\"agent_transcript_path\""));

/// The record file a hook payload names: Claude Code's `transcript_path`
/// (on every payload), Copilot's `transcriptPath` (on `agentStop`). Cheap
/// for payloads that name none: the key is searched for before anything
/// is parsed.
pub(crate) fn path_in_payload(payload: &[u8]) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Named {
        #[serde(default, alias = "transcriptPath")]
        transcript_path: Option<String>,
    }
    let has_key = TRANSCRIPT_PATH.find(payload).is_some() || names_camel_record(payload);
    if !has_key {
        return None;
    }
    serde_json::from_slice::<Named>(payload)
        .ok()?
        .transcript_path
        .filter(|p| !p.is_empty())
}

/// Whether `payload` holds the key `transcriptPath` anywhere: a dialect
/// that reads `transcript_path` alone leaves such a payload to
/// [`path_in_payload`], which takes either (and neither when both are
/// there).
pub(crate) fn names_camel_record(payload: &[u8]) -> bool {
    TRANSCRIPT_PATH_CAMEL.find(payload).is_some()
}

/// The record file a payload names, as far as its dialect read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NamedRecord {
    /// Not read with the payload: [`path_in_payload`] looks for it.
    Unread,
    /// Read with the rest of the payload: what [`path_in_payload`] finds
    /// in it.
    Read(Option<String>),
}

impl NamedRecord {
    /// The record file `payload` names: as read, else looked for.
    pub(crate) fn or_look_in(self, payload: &[u8]) -> Option<String> {
        match self {
            NamedRecord::Read(path) => path,
            NamedRecord::Unread => path_in_payload(payload),
        }
    }
}

/// A subagent's own record a hook payload names: Claude Code's
/// `agent_transcript_path` with its `agent_id` (on `SubagentStop`; each
/// subagent writes a transcript of its own). Cheap for payloads that name
/// none, as [`path_in_payload`] is.
pub(crate) fn subagent_record_in_payload(payload: &[u8]) -> Option<(String, String)> {
    #[derive(serde::Deserialize)]
    struct Named {
        #[serde(default)]
        agent_id: Option<String>,
        #[serde(default)]
        agent_transcript_path: Option<String>,
    }
    AGENT_TRANSCRIPT_PATH.find(payload)?;
    let named = serde_json::from_slice::<Named>(payload).ok()?;
    let path = named.agent_transcript_path.filter(|p| !p.is_empty())?;
    Some((named.agent_id.unwrap_or_default(), path))
}

impl RecordLine {
    /// A line that says nothing the ledger keeps.
    pub(crate) fn empty() -> RecordLine {
        RecordLine {
            time_unix_ns: None,
            agent_id: None,
            native_turn_id: None,
            uuid: None,
            parent_uuid: None,
            items: Vec::new(),
        }
    }

    /// A line that is not a frame of the dialect.
    pub(crate) fn unrecognized(reason: impl Into<String>) -> RecordLine {
        RecordLine {
            items: vec![RecordItem::Unrecognized {
                reason: reason.into(),
            }],
            ..RecordLine::empty()
        }
    }
}

/// A record line as JSON: the dialect's frame, or why it is not one.
pub(crate) fn parse_frame<'a, T: serde::Deserialize<'a>>(line: &'a [u8]) -> Result<T, RecordLine> {
    parse_payload(line).map_err(|e| RecordLine::unrecognized(format!("not a frame: {e}")))
}

/// A duration the agent wrote in (possibly fractional) milliseconds,
/// rounded to whole milliseconds; a negative or non-finite one is absent.
pub(crate) fn millis(ms: f64) -> Option<u64> {
    (ms.is_finite() && ms >= 0.0).then(|| ms.round() as u64)
}

/// An agent's ISO-8601 timestamp as UTC nanoseconds.
pub(crate) fn time_ns(text: Option<&str>) -> Option<i64> {
    text.and_then(crate::clock::parse_rfc3339_ns)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hook_payloads_name_records() {
        let claude = br#"{"session_id":"s","transcript_path":"/t/s.jsonl"}"#;
        assert_eq!(path_in_payload(claude).as_deref(), Some("/t/s.jsonl"));
        let copilot = br#"{"sessionId":"s","transcriptPath":"/c/events.jsonl"}"#;
        assert_eq!(path_in_payload(copilot).as_deref(), Some("/c/events.jsonl"));
        assert_eq!(path_in_payload(br#"{"transcript_path":""}"#), None);
        assert_eq!(path_in_payload(br#"{"cwd":"/"}"#), None);

        let stop = br#"{"hook_event_name":"SubagentStop","agent_id":"a1","transcript_path":"/t/s.jsonl","agent_transcript_path":"/t/s/subagents/agent-a1.jsonl"}"#;
        assert_eq!(
            subagent_record_in_payload(stop),
            Some(("a1".into(), "/t/s/subagents/agent-a1.jsonl".into()))
        );
        assert_eq!(subagent_record_in_payload(claude), None);
        assert_eq!(
            subagent_record_in_payload(br#"{"agent_transcript_path":""}"#),
            None
        );
        assert_eq!(
            subagent_record_in_payload(br#"{"agent_transcript_path": 3}"#),
            None,
            "a path that is not a string names nothing"
        );
    }
}
