//! Event types and their strict payloads. Every payload struct rejects
//! unknown fields, so a row can only mean what this file says it means.

use serde::{Deserialize, Serialize};

use super::canonical::Json;
use super::event_id::EventId;

/// An observed value, or `unknown` with a reason code. Unknown stays unknown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Observation<T> {
    Observed(T),
    Unknown(String),
}

impl<T> Observation<T> {
    pub fn unknown(reason: &str) -> Observation<T> {
        Observation::Unknown(reason.to_string())
    }

    pub(crate) fn observed(&self) -> Option<&T> {
        match self {
            Observation::Observed(v) => Some(v),
            Observation::Unknown(_) => None,
        }
    }
}

/// How a tool or command span ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Success,
    Failure,
    Interrupted,
    Unknown,
}

/// How a tool completion found its request, where no call id joins them
/// (generation 9): the agent sends none (Copilot, Gemini CLI), so the
/// completion took the oldest open request of the same tool and input in
/// this session. Shown as such, never passed off as an id match.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PairedBy {
    /// The oldest open request of the same tool name and input digest.
    Order,
}

/// The six reasons of ADR 0078 for which the finalizer mints a terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RecoveryReason {
    RequestNotObserved,
    CompletionNotObservedBeforeTurnEnd,
    CompletionNotObservedBeforeNextTurn,
    SpanCapPressure,
    ExplicitEndSalvage,
    CommandCompletionNotObserved,
}

impl RecoveryReason {
    pub const ALL: [RecoveryReason; 6] = [
        RecoveryReason::RequestNotObserved,
        RecoveryReason::CompletionNotObservedBeforeTurnEnd,
        RecoveryReason::CompletionNotObservedBeforeNextTurn,
        RecoveryReason::SpanCapPressure,
        RecoveryReason::ExplicitEndSalvage,
        RecoveryReason::CommandCompletionNotObserved,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            RecoveryReason::RequestNotObserved => "request_not_observed",
            RecoveryReason::CompletionNotObservedBeforeTurnEnd => {
                "completion_not_observed_before_turn_end"
            }
            RecoveryReason::CompletionNotObservedBeforeNextTurn => {
                "completion_not_observed_before_next_turn"
            }
            RecoveryReason::SpanCapPressure => "span_cap_pressure",
            RecoveryReason::ExplicitEndSalvage => "explicit_end_salvage",
            RecoveryReason::CommandCompletionNotObserved => "command_completion_not_observed",
        }
    }

    /// The one event type this reason may appear on (validator rule 4).
    pub(crate) fn event_type(self) -> EventType {
        match self {
            RecoveryReason::RequestNotObserved => EventType::ToolRequested,
            RecoveryReason::CommandCompletionNotObserved => EventType::CommandCompleted,
            _ => EventType::ToolCompleted,
        }
    }
}

impl std::fmt::Display for RecoveryReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The marker of a recovery event (ADR 0078).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Recovery {
    pub reason: RecoveryReason,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested_event_id: Option<EventId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elapsed_upper_bound_ms: Option<Observation<u64>>,
}

macro_rules! payload_struct {
    ($(#[$meta:meta])* $name:ident { $($(#[$fmeta:meta])* $field:ident : $ty:ty),* $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
        #[serde(deny_unknown_fields)]
        pub struct $name {
            $($(#[$fmeta])* pub $field: $ty,)*
        }
    };
}

mod output;
mod session_log;
pub use output::{OUTPUT_CAP, ToolBatchResult, capped_output};
pub use session_log::*;

payload_struct!(SessionStarted {
    /// startup, resume, compact, clear, new …, as the agent said it.
    #[serde(default)] source: Option<String>,
    #[serde(default)] cwd: Option<String>,
    #[serde(default)] model: Option<String>,
    #[serde(default)] transcript_path: Option<String>,
});
payload_struct!(SessionEnded {
    #[serde(default)] reason: Option<String>,
});
payload_struct!(PromptSubmitted {
    #[serde(default)] prompt: Option<String>,
    /// The agent rewrote the prompt (Copilot `userPromptTransformed`).
    #[serde(default)] transformed: bool,
});
payload_struct!(TurnStarted {
    #[serde(default)] prompt_event_id: Option<EventId>,
});
payload_struct!(TurnCompleted {
    #[serde(default)] stop_reason: Option<String>,
});
payload_struct!(ToolRequested {
    #[serde(default)] tool_call_id: Option<String>,
    tool_name: String,
    /// blake3 of the canonical JSON of the tool input; the pairing key of
    /// adapters without tool call ids.
    input_digest: String,
    #[serde(default)] input: Option<Json>,
    #[serde(default)] recovery: Option<Recovery>,
});
payload_struct!(ToolCompleted {
    #[serde(default)] tool_call_id: Option<String>,
    tool_name: String,
    #[serde(default)] requested_event_id: Option<EventId>,
    outcome: Outcome,
    duration_ms: Observation<u64>,
    #[serde(default)] exit_code: Option<i64>,
    #[serde(default)] error: Option<String>,
    #[serde(default)] content: Option<Json>,
    #[serde(default)] recovery: Option<Recovery>,
    /// Set when the request was found without a call id (generation 9).
    #[serde(default, skip_serializing_if = "Option::is_none")] paired_by: Option<PairedBy>,
});
payload_struct!(CommandRequested {
    argv: Vec<String>,
    #[serde(default)] cwd: Option<String>,
    #[serde(default)] pid: Option<u32>,
});
payload_struct!(CommandCompleted {
    #[serde(default)] requested_event_id: Option<EventId>,
    outcome: Outcome,
    duration_ms: Observation<u64>,
    #[serde(default)] exit_code: Option<i64>,
    #[serde(default)] signal: Option<i32>,
    #[serde(default)] recovery: Option<Recovery>,
});
payload_struct!(SubagentStarted {
    agent_id: String,
    #[serde(default)] agent_type: Option<String>,
    #[serde(default)] agent_name: Option<String>,
});
payload_struct!(SubagentStopped {
    agent_id: String,
    #[serde(default)] agent_type: Option<String>,
    #[serde(default)] stop_reason: Option<String>,
});
payload_struct!(CompactionStarted {
    #[serde(default)] trigger: Option<String>,
});
payload_struct!(CompactionCompleted {
    #[serde(default)] trigger: Option<String>,
    #[serde(default)] summary: Option<String>,
});
payload_struct!(ErrorReported {
    message: String,
    #[serde(default)] context: Option<String>,
    #[serde(default)] recoverable: Option<bool>,
});
payload_struct!(PermissionRequested {
    tool_name: String,
    #[serde(default)] input: Option<Json>,
});
payload_struct!(Notification {
    #[serde(default)] kind: Option<String>,
    #[serde(default)] message: Option<String>,
});
payload_struct!(MessageDisplayed {
    #[serde(default)] message_id: Option<String>,
    #[serde(default)] text: Option<String>,
    #[serde(default)] is_final: Option<bool>,
});
payload_struct!(
    /// A hook the agent fired that the ledger models as no more than that
    /// it fired (generation 9): a model step (Gemini CLI's `BeforeModel`,
    /// `AfterModel`, `BeforeToolSelection`; Codex's `PreModelRequest`), or
    /// a check that changed nothing (Gemini CLI's automatic
    /// `PreCompress`). The payload's bulk (the whole conversation) stays in
    /// the raw archive.
    HookObserved {
    /// The agent's own name of the hook.
    event: String,
    #[serde(default)] model: Option<String>,
    /// What the hook said of why it fired (a trigger), where it said.
    #[serde(default)] detail: Option<String>,
});
payload_struct!(ToolBatchCompleted { calls: u64 });
payload_struct!(
    /// A native completion that arrived after its span was already
    /// recovered: evidence, not a second terminal.
    LateEvidence {
        span_request_event_id: EventId,
        recovered_event_id: EventId,
        outcome: Outcome,
        #[serde(default)] error: Option<String>,
    }
);
payload_struct!(EndRequested {
    /// `native` (the agent's session end) or `operator` (`harnery end`).
    origin: String,
    #[serde(default)] reason: Option<String>,
    /// The open spans the request approves for salvage, by request event id.
    approved_spans: Vec<EventId>,
});
payload_struct!(EndSalvaged {
    end_event_id: EventId,
    salvaged_spans: u64,
});
payload_struct!(EndCancelled {
    end_event_id: EventId,
    /// `native_work` or `superseded`.
    cause: String,
});
payload_struct!(EndExpired {
    end_event_id: EventId,
});
payload_struct!(HealthCondition {
    code: String,
    detail: String,
});
payload_struct!(SignalUnrecognized {
    #[serde(default)] adapter_event: Option<String>,
    reason: String,
    /// Where in the agent's own record the frame is (generation 2), when
    /// it came from there rather than from a hook.
    #[serde(default, skip_serializing_if = "Option::is_none")] record: Option<RecordAt>,
});

/// One line of an agent's own record of a session: the file and the byte
/// offset the line starts at (generation 2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecordAt {
    pub path: String,
    pub offset: u64,
}

// Generation 2: what the agent's own record holds and hooks never carry.
payload_struct!(
    /// A user message as the agent recorded it (bare-string content is
    /// text; tool results are not messages).
    MessageUser {
        record: RecordAt,
        #[serde(default)] message_id: Option<String>,
        #[serde(default)] text: Option<String>,
        /// Who sent it when it was not the user (generation 6: Copilot's
        /// `data.source`, a subagent `agent-<id>` steering its parent,
        /// ADR-0007). Absent on the user's own words and on older rows.
        #[serde(default, skip_serializing_if = "Option::is_none")] source: Option<String>,
    }
);
payload_struct!(
    /// An assistant message: its text blocks joined, and the tool calls it
    /// asked for, by the agent's call id.
    MessageAssistant {
        record: RecordAt,
        #[serde(default)] message_id: Option<String>,
        #[serde(default)] model: Option<String>,
        #[serde(default)] text: Option<String>,
        tool_call_ids: Vec<String>,
    }
);
payload_struct!(
    /// The model's reasoning, with the provider's continuation token kept
    /// as the agent recorded it (Claude's `signature`, Copilot's opaque
    /// reasoning).
    ReasoningRecorded {
        record: RecordAt,
        #[serde(default)] message_id: Option<String>,
        #[serde(default)] text: Option<String>,
        #[serde(default)] continuation: Option<String>,
    }
);
payload_struct!(
    /// One model call's usage as the agent reported it. Nothing here is
    /// estimated: a count or a cost the agent did not report is absent.
    /// From generation 4 the token kinds mean the same for every agent:
    /// `input_tokens` excludes cache reads (Copilot's `inputTokens`
    /// include them and are reduced by them), `cache_read_tokens`,
    /// `cache_write_tokens`, `output_tokens`, and `reasoning_tokens` where
    /// the agent reports them apart; `raw` keeps the agent's own numbers
    /// as it wrote them. A generation-3 row has no `raw`: its Copilot
    /// input still includes cache reads (readers normalize it).
    UsageReported {
        record: RecordAt,
        #[serde(default)] message_id: Option<String>,
        #[serde(default)] model: Option<String>,
        #[serde(default)] input_tokens: Option<u64>,
        #[serde(default)] output_tokens: Option<u64>,
        #[serde(default)] cache_read_tokens: Option<u64>,
        #[serde(default)] cache_write_tokens: Option<u64>,
        /// The agent's cost figure, as it wrote the number.
        #[serde(default)] cost: Option<Json>,
        #[serde(default)] duration_ms: Option<u64>,
        #[serde(default)] time_to_first_token_ms: Option<u64>,
        #[serde(default)] reasoning_tokens: Option<u64>,
        /// The agent's own usage object, as written (generation 4).
        #[serde(default)] raw: Option<Json>,
        /// The session that made this model call, where the record says
        /// another one did (generation 5: Claude Code's `requestSessionId`
        /// on the copy of a parent's messages that `--fork-session`
        /// writes). Such a record is inherited: never counted again.
        #[serde(default)] copied_from_session: Option<String>,
    }
);
payload_struct!(
    /// The agent's own running totals for one model of the session, as it
    /// last wrote them (generation 5: Copilot's `session.shutdown`
    /// `modelMetrics`). They are cumulative over the session's resumes, so a
    /// later summary of the same session and model replaces an earlier one,
    /// and they restate the calls' usage: never added to `usage.reported`.
    /// Token kinds as in `usage.reported` (input excludes cache reads), the
    /// agent's own object kept as `raw`.
    UsageSummary {
        record: RecordAt,
        model: String,
        #[serde(default)] requests: Option<u64>,
        /// Premium requests the agent counted, as it wrote the number.
        #[serde(default)] premium_requests: Option<Json>,
        #[serde(default)] input_tokens: Option<u64>,
        #[serde(default)] output_tokens: Option<u64>,
        #[serde(default)] cache_read_tokens: Option<u64>,
        #[serde(default)] cache_write_tokens: Option<u64>,
        #[serde(default)] reasoning_tokens: Option<u64>,
        /// Credits in the agent's nano-AIU, as it wrote the number.
        #[serde(default)] credits_nano_aiu: Option<Json>,
        #[serde(default)] raw: Option<Json>,
    }
);
payload_struct!(
    /// What the record says of the session itself (init and system frames
    /// are metadata, not events of their own).
    SessionMetadata {
        record: RecordAt,
        #[serde(default)] agent_version: Option<String>,
        #[serde(default)] head_commit: Option<String>,
        #[serde(default)] cwd: Option<String>,
        #[serde(default)] model: Option<String>,
    }
);
payload_struct!(
    /// A tool call as the record has it, joined to the hook span it matches
    /// (`span_request_event_id`) or, with none, evidence that a hook signal
    /// was lost. Never a terminal: the span's own rows stay as they are.
    ToolRecorded {
        record: RecordAt,
        #[serde(default)] span_request_event_id: Option<EventId>,
        tool_call_id: String,
        tool_name: String,
        #[serde(default)] turn_id: Option<String>,
        #[serde(default)] success: Option<bool>,
        #[serde(default)] exit_code: Option<i64>,
        /// The result's text as the record gives it to the model
        /// (generation 11): Claude Code's `tool_result` content (its text
        /// blocks joined by newlines), Copilot's `result.content`; from
        /// generation 12 also Codex's `function_call_output` /
        /// `custom_tool_call_output` `output`, Gemini CLI's and Qwen Code's
        /// `functionResponse` `response` (`output`, else `error`) and
        /// OpenCode's tool part state (`output`, else `error`). Hostile
        /// text, kept as written up to [`OUTPUT_CAP`] bytes (cut at a
        /// character boundary). Absent on a call's start, where the record
        /// has no text, and on older rows.
        #[serde(default, skip_serializing_if = "Option::is_none")] output: Option<String>,
        /// How many bytes of the text were cut off at [`OUTPUT_CAP`]
        /// (generation 11): the marker that `output` is not whole. Absent
        /// when it is.
        #[serde(default, skip_serializing_if = "Option::is_none")] output_cut_bytes: Option<u64>,
    }
);

payload_struct!(
    /// The agent's record could not be followed: `missing`, `unreadable`,
    /// `rewritten` (the bytes before the cursor changed) or `truncated`.
    RecordProblem {
        path: String,
        kind: String,
        detail: String,
    }
);

// Generation 3: the session log of seed 004 (checkpoints, restores,
// resumes and the ranges they supersede).

/// One entry of a checkpoint's effect ledger: something the session did
/// that a restore cannot take back. `kind` is `tool` or `command` for a
/// span closed natively (`ref` its request event id), or the operator's
/// own kind (`harnery checkpoint --effect KIND:REF`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Effect {
    pub kind: String,
    #[serde(rename = "ref")]
    pub reference: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<Outcome>,
    /// The files a file tool named.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<String>,
    /// The command line a shell tool (or `harnery exec`) ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i64>,
}

/// A half-open range of a session's offsets, `from <= offset < to`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OffsetRange {
    pub from: u64,
    pub to: u64,
}

impl OffsetRange {
    pub(crate) fn contains(&self, offset: u64) -> bool {
        self.from <= offset && offset < self.to
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.from >= self.to
    }
}

payload_struct!(
    /// A checkpoint pinned to `offset` (the events below it are what a
    /// restore hands back). The first checkpoint recorded under an id is
    /// the one that counts; a later one with the same id is not recorded.
    CheckpointRecorded {
        checkpoint_id: String,
        /// `operator` (`harnery checkpoint`) or `turn` (a natively
        /// completed turn).
        origin: String,
        offset: u64,
        /// The head commit, or unknown with the reason.
        commit: Observation<String>,
        /// Where the commit came from (`operator`, `record`), when known.
        #[serde(default)] commit_source: Option<String>,
        /// The effects since the session's previous checkpoint.
        effects: Vec<Effect>,
        /// The session's working directory at the checkpoint, as the agent
        /// named it last (its session start, else its record; generation 6).
        #[serde(default, skip_serializing_if = "Option::is_none")] cwd: Option<String>,
    }
);
payload_struct!(
    /// Where a checkpoint stands in the agent's own record (generation 7),
    /// written once the record was read past the checkpoint's turn: the
    /// record is kept from byte 0 up to `end` (whole lines; the same cut
    /// `resume::record_cut` derives), and `line_id` is the agent's own id of
    /// the last line kept (Claude Code's `uuid`, Copilot's event `id`),
    /// starting at `line_offset`. One per checkpoint, after it.
    CheckpointLocated {
        checkpoint_id: String,
        /// The `checkpoint.recorded` event it places (a checkpoint pinned
        /// in an archived epoch is placed in a later one).
        checkpoint_event_id: EventId,
        /// The agent's record, as the record events name it.
        path: String,
        end: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")] line_id: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")] line_offset: Option<u64>,
    }
);
/// The payload of an event, tagged with its type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "type", content = "payload")]
pub enum Payload {
    #[serde(rename = "session.started")]
    SessionStarted(SessionStarted),
    #[serde(rename = "session.ended")]
    SessionEnded(SessionEnded),
    #[serde(rename = "prompt.submitted")]
    PromptSubmitted(PromptSubmitted),
    #[serde(rename = "turn.started")]
    TurnStarted(TurnStarted),
    #[serde(rename = "turn.completed")]
    TurnCompleted(TurnCompleted),
    #[serde(rename = "tool.requested")]
    ToolRequested(ToolRequested),
    #[serde(rename = "tool.completed")]
    ToolCompleted(ToolCompleted),
    #[serde(rename = "command.requested")]
    CommandRequested(CommandRequested),
    #[serde(rename = "command.completed")]
    CommandCompleted(CommandCompleted),
    #[serde(rename = "subagent.started")]
    SubagentStarted(SubagentStarted),
    #[serde(rename = "subagent.stopped")]
    SubagentStopped(SubagentStopped),
    #[serde(rename = "compaction.started")]
    CompactionStarted(CompactionStarted),
    #[serde(rename = "compaction.completed")]
    CompactionCompleted(CompactionCompleted),
    #[serde(rename = "error.reported")]
    ErrorReported(ErrorReported),
    #[serde(rename = "permission.requested")]
    PermissionRequested(PermissionRequested),
    #[serde(rename = "notification")]
    Notification(Notification),
    #[serde(rename = "message.displayed")]
    MessageDisplayed(MessageDisplayed),
    #[serde(rename = "hook.observed")]
    HookObserved(HookObserved),
    #[serde(rename = "tool.batch_completed")]
    ToolBatchCompleted(ToolBatchCompleted),
    #[serde(rename = "tool.late_evidence")]
    LateEvidence(LateEvidence),
    #[serde(rename = "end.requested")]
    EndRequested(EndRequested),
    #[serde(rename = "end.salvaged")]
    EndSalvaged(EndSalvaged),
    #[serde(rename = "end.cancelled")]
    EndCancelled(EndCancelled),
    #[serde(rename = "end.expired")]
    EndExpired(EndExpired),
    #[serde(rename = "health.condition")]
    HealthCondition(HealthCondition),
    #[serde(rename = "signal.unrecognized")]
    SignalUnrecognized(SignalUnrecognized),
    #[serde(rename = "message.user")]
    MessageUser(MessageUser),
    #[serde(rename = "message.assistant")]
    MessageAssistant(MessageAssistant),
    #[serde(rename = "reasoning.recorded")]
    ReasoningRecorded(ReasoningRecorded),
    #[serde(rename = "usage.reported")]
    UsageReported(UsageReported),
    #[serde(rename = "usage.summary")]
    UsageSummary(UsageSummary),
    #[serde(rename = "session.metadata")]
    SessionMetadata(SessionMetadata),
    #[serde(rename = "tool.recorded")]
    ToolRecorded(ToolRecorded),
    #[serde(rename = "record.problem")]
    RecordProblem(RecordProblem),
    #[serde(rename = "checkpoint.recorded")]
    CheckpointRecorded(CheckpointRecorded),
    #[serde(rename = "checkpoint.located")]
    CheckpointLocated(CheckpointLocated),
    #[serde(rename = "restore.recorded")]
    RestoreRecorded(RestoreRecorded),
    #[serde(rename = "session.resumed")]
    SessionResumed(SessionResumed),
    #[serde(rename = "session.stale_signal")]
    StaleSignal(StaleSignal),
    #[serde(rename = "session.imported")]
    SessionImported(SessionImported),
    #[serde(rename = "session.titled")]
    SessionTitled(SessionTitled),
    #[serde(rename = "tool.batch_result")]
    ToolBatchResult(ToolBatchResult),
}

macro_rules! event_types {
    ($($variant:ident => $name:literal),* $(,)?) => {
        /// The type of an event, without its payload.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum EventType { $($variant,)* }

        impl EventType {
            pub const ALL: &'static [EventType] = &[$(EventType::$variant,)*];

            pub fn as_str(self) -> &'static str {
                match self { $(EventType::$variant => $name,)* }
            }

            pub(crate) fn parse(name: &str) -> Option<EventType> {
                match name { $($name => Some(EventType::$variant),)* _ => None }
            }
        }

        impl Payload {
            pub(crate) fn event_type(&self) -> EventType {
                match self { $(Payload::$variant(_) => EventType::$variant,)* }
            }

            /// The payload of an event of type `ty`, read straight into
            /// that type's struct.
            pub(super) fn deserialize_typed<'de, D: serde::Deserializer<'de>>(
                ty: EventType,
                deserializer: D,
            ) -> Result<Payload, D::Error> {
                match ty {
                    $(EventType::$variant => $variant::deserialize(deserializer).map(Payload::$variant),)*
                }
            }
        }

        /// The type names, in the order serde lists them in its errors.
        pub(super) const TYPE_NAMES: &[&str] = &[$($name,)*];
    };
}

event_types! {
    SessionStarted => "session.started",
    SessionEnded => "session.ended",
    PromptSubmitted => "prompt.submitted",
    TurnStarted => "turn.started",
    TurnCompleted => "turn.completed",
    ToolRequested => "tool.requested",
    ToolCompleted => "tool.completed",
    CommandRequested => "command.requested",
    CommandCompleted => "command.completed",
    SubagentStarted => "subagent.started",
    SubagentStopped => "subagent.stopped",
    CompactionStarted => "compaction.started",
    CompactionCompleted => "compaction.completed",
    ErrorReported => "error.reported",
    PermissionRequested => "permission.requested",
    Notification => "notification",
    MessageDisplayed => "message.displayed",
    ToolBatchCompleted => "tool.batch_completed",
    LateEvidence => "tool.late_evidence",
    EndRequested => "end.requested",
    EndSalvaged => "end.salvaged",
    EndCancelled => "end.cancelled",
    EndExpired => "end.expired",
    HealthCondition => "health.condition",
    SignalUnrecognized => "signal.unrecognized",
    MessageUser => "message.user",
    MessageAssistant => "message.assistant",
    ReasoningRecorded => "reasoning.recorded",
    UsageReported => "usage.reported",
    UsageSummary => "usage.summary",
    SessionMetadata => "session.metadata",
    ToolRecorded => "tool.recorded",
    RecordProblem => "record.problem",
    CheckpointRecorded => "checkpoint.recorded",
    CheckpointLocated => "checkpoint.located",
    RestoreRecorded => "restore.recorded",
    SessionResumed => "session.resumed",
    StaleSignal => "session.stale_signal",
    HookObserved => "hook.observed",
    SessionImported => "session.imported",
    SessionTitled => "session.titled",
    ToolBatchResult => "tool.batch_result",
}
