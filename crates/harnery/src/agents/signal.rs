//! The adapter-neutral shape of one raw signal, after its dialect was read.
//!
//! Every dialect module converts its wire structs into a [`Normalized`] in
//! exactly one place. The producer state machine reads only these types, so
//! it never needs to know whether a field was `tool_use_id` or `toolArgs`.

use super::harnery::payload::{CheckpointPayload, RecordChunk, RestorePayload};
use super::wire::input_digest;
use crate::contract::{
    CommandRequested, Json, Outcome, Payload, PromptSubmitted, SessionEnded, SessionStarted,
    SignalUnrecognized, SubagentStarted, SubagentStopped, TimeSource,
};

/// One raw signal, read: when it happened, who spoke, and what it says.
#[derive(Debug, Clone, PartialEq)]
pub struct Normalized {
    /// UTC nanoseconds: the agent's own timestamp when it sent one, else the
    /// hook's receive time.
    pub time_unix_ns: i64,
    pub time_source: TimeSource,
    /// The agent (subagent) within the session that produced the signal.
    pub agent_id: Option<String>,
    /// The adapter's own turn id (Claude Code `prompt_id`).
    pub native_turn_id: Option<String>,
    /// A dialect-independent identity of the signal, where the dialect gives
    /// enough to build one (Copilot: kind + agent timestamp + tool + input).
    /// Two signals with the same key are one delivery seen twice.
    pub delivery_key: Option<String>,
    pub kind: SignalKind,
}

impl Normalized {
    /// A signal timed by its receipt, naming no agent, turn or delivery key.
    pub(crate) fn received(kind: SignalKind, received_unix_ns: i64) -> Normalized {
        Normalized {
            time_unix_ns: received_unix_ns,
            time_source: TimeSource::Received,
            agent_id: None,
            native_turn_id: None,
            delivery_key: None,
            kind,
        }
    }
}

/// What a signal says, in harnery's terms.
#[derive(Debug, Clone, PartialEq)]
pub enum SignalKind {
    SessionStarted(SessionStarted),
    /// A native session end: also an explicit end request.
    SessionEnded(SessionEnded),
    /// A prompt. It starts a turn unless `transformed` (a rewrite of the
    /// prompt that already started it).
    PromptSubmitted(PromptSubmitted),
    /// The agent's turn-boundary signal (Claude `Stop`, Copilot `agentStop`).
    TurnEnded(TurnEnd),
    ToolRequested(ToolCall),
    ToolCompleted(ToolResult),
    /// Claude Code `PostToolBatch`: a summary of the calls of one batch.
    ToolBatch(Vec<BatchedCall>),
    SubagentStarted(SubagentStarted),
    SubagentStopped(SubagentStopped),
    /// Events that change no producer state; emitted as they are.
    Lifecycle(Payload),
    /// `harnery end` (operator origin).
    EndRequested {
        reason: Option<String>,
    },
    CommandRequested {
        command_id: String,
        request: CommandRequested,
    },
    CommandCompleted(CommandResult),
    /// No rule knows this signal, or it is not valid JSON. Kept, never dropped.
    Unrecognized(SignalUnrecognized),
    /// Lines of the agent's own record, read by the finalizer.
    RecordChunk(Box<RecordChunk>),
    /// The agent's own record could not be followed.
    RecordProblem(crate::contract::RecordProblem),
    /// `harnery checkpoint`.
    CheckpointRequested(CheckpointPayload),
    /// `harnery restore`.
    RestoreRequested(RestorePayload),
    /// `harnery import`: the session is read from the agent's record.
    Imported(Box<Imported>),
    /// The title the agent keeps beside its record, read by the finalizer.
    Titled(crate::contract::SessionTitled),
}

/// A `harnery.import` signal, read.
#[derive(Debug, Clone, PartialEq)]
pub struct Imported {
    pub session: crate::contract::SessionImported,
    /// Its subagents' own records: (agent id, path).
    pub subagents: Vec<(String, String)>,
}

impl SignalKind {
    /// A signal no rule knows: `event` is the agent's name for it (empty
    /// when it gave none), `reason` says why it was not understood.
    pub(crate) fn unrecognized(event: &str, reason: &str) -> SignalKind {
        SignalKind::Unrecognized(SignalUnrecognized {
            adapter_event: (!event.is_empty()).then(|| event.to_string()),
            reason: reason.to_string(),
            record: None,
        })
    }

    /// A payload that is not JSON in its dialect's shape: kept, never
    /// dropped; `event` is the name the hook's argv gave, if any.
    pub(crate) fn malformed(event: Option<&str>, err: &serde_json::Error) -> SignalKind {
        SignalKind::Unrecognized(SignalUnrecognized {
            adapter_event: event.map(str::to_string),
            reason: format!("malformed_json: {err}"),
            record: None,
        })
    }

    /// A subagent's start (`SubagentStart`) or stop (any other event
    /// name), in the Claude-shaped dialects, which name the agent and its
    /// type and nothing more.
    pub(crate) fn subagent(
        event: &str,
        agent_id: Option<String>,
        agent_type: Option<String>,
    ) -> SignalKind {
        let Some(agent_id) = agent_id else {
            return SignalKind::unrecognized(event, "subagent event without agent_id");
        };
        match event {
            "SubagentStart" => SignalKind::SubagentStarted(SubagentStarted {
                agent_id,
                agent_type,
                agent_name: None,
            }),
            _ => SignalKind::SubagentStopped(SubagentStopped {
                agent_id,
                agent_type,
                stop_reason: None,
            }),
        }
    }

    /// Whether this signal is the agent doing something new in the session
    /// (which cancels a pending explicit end). harnery's own signals and the
    /// end signals themselves are not.
    pub(crate) fn is_native_work(&self) -> bool {
        !matches!(
            self,
            SignalKind::SessionEnded(_)
                | SignalKind::EndRequested { .. }
                | SignalKind::CommandRequested { .. }
                | SignalKind::CommandCompleted(_)
                | SignalKind::CheckpointRequested(_)
                | SignalKind::RestoreRequested(_)
                | SignalKind::Imported(_)
                | SignalKind::Titled(_)
        )
    }
}

/// The turn-boundary signal's content.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TurnEnd {
    pub stop_reason: Option<String>,
    /// Subagents the agent reports as still running in the background; their
    /// spans may still complete after the boundary.
    pub running_agents: Vec<String>,
}

/// A tool call as the agent described it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    pub call_id: Option<String>,
    pub tool_name: String,
    /// The tool input, already normalized (a JSON string holding JSON is
    /// parsed), or `None` when the signal did not carry it.
    pub input: Option<Json>,
}

impl ToolCall {
    /// blake3 of the canonical JSON of the input; the pairing key of
    /// adapters without call ids.
    pub fn input_digest(&self) -> String {
        input_digest(self.input.as_ref())
    }
}

/// A tool completion as the agent described it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResult {
    pub call: ToolCall,
    pub outcome: Outcome,
    pub duration_ms: Option<u64>,
    pub exit_code: Option<i64>,
    pub error: Option<String>,
    pub content: Option<Json>,
}

/// One call listed in a tool batch summary.
#[derive(Debug, Clone, PartialEq)]
pub struct BatchedCall {
    pub call: ToolCall,
    pub response: Option<Json>,
    /// The response's text as the model was given it, where the agent's
    /// batch carries it as text (Claude Code's `tool_response`, a string or
    /// text blocks); `None` for a response in another shape.
    pub text: Option<String>,
}

/// `harnery exec`'s completion record.
#[derive(Debug, Clone, PartialEq)]
pub struct CommandResult {
    pub command_id: String,
    pub exit_code: Option<i64>,
    pub signal: Option<i32>,
    pub duration_ms: Option<u64>,
}
