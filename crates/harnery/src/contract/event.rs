//! The event envelope: the fields every canonical event carries, whatever
//! its type.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::event_id::EventId;
use super::payload::{EventType, Payload, RecordAt, Recovery};
use crate::clock::ClockSample;

/// Which agent dialect a session speaks.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum AdapterId {
    ClaudeCode,
    Copilot,
    Codex,
    GeminiCli,
    QwenCode,
    Opencode,
}

impl AdapterId {
    pub const ALL: [AdapterId; 6] = [
        AdapterId::ClaudeCode,
        AdapterId::Copilot,
        AdapterId::Codex,
        AdapterId::GeminiCli,
        AdapterId::QwenCode,
        AdapterId::Opencode,
    ];

    /// The name used on the command line and in spool paths.
    pub fn as_str(self) -> &'static str {
        match self {
            AdapterId::ClaudeCode => "claude-code",
            AdapterId::Copilot => "copilot",
            AdapterId::Codex => "codex",
            AdapterId::GeminiCli => "gemini-cli",
            AdapterId::QwenCode => "qwen-code",
            AdapterId::Opencode => "opencode",
        }
    }

    pub fn parse(name: &str) -> Option<AdapterId> {
        AdapterId::ALL.into_iter().find(|a| a.as_str() == name)
    }

    /// Every id, for a message naming what is accepted: "claude-code,
    /// copilot, …, qwen-code or opencode".
    pub fn choices() -> String {
        let names: Vec<&str> = AdapterId::ALL.iter().map(|a| a.as_str()).collect();
        let (last, rest) = names.split_last().expect("there are adapters");
        format!("{} or {last}", rest.join(", "))
    }
}

impl std::fmt::Display for AdapterId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The session an event belongs to. Copilot subagent hooks arrive under the
/// agent id and are mapped here to their parent session; `agent_id` keeps
/// which agent within the session spoke.
#[derive(
    Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(deny_unknown_fields)]
pub struct SessionRef {
    pub adapter: AdapterId,
    pub session_id: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Attestation {
    /// The agent itself reported this event.
    Native,
    /// harnery minted or teed it; see the payload's `recovery` block.
    Derived,
    /// The agent's own record of the session (its transcript or event
    /// log) reported it, not a hook (generation 2).
    Record,
}

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Confidence {
    Low,
    Medium,
    High,
}

impl Confidence {
    /// One step lower, as for events whose turn was stamped by producer state.
    pub fn downgraded(self) -> Confidence {
        match self {
            Confidence::High => Confidence::Medium,
            Confidence::Medium | Confidence::Low => Confidence::Low,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Provenance {
    pub attestation: Attestation,
    pub confidence: Confidence,
}

impl Provenance {
    pub const NATIVE: Provenance = Provenance {
        attestation: Attestation::Native,
        confidence: Confidence::High,
    };
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TurnSource {
    /// The adapter named the turn (Claude Code `prompt_id`).
    Native,
    /// Producer state stamped it (Copilot: prompt … agentStop).
    Stamped,
    /// No trustworthy turn.
    None,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TurnAttribution {
    pub source: TurnSource,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<String>,
}

impl TurnAttribution {
    pub fn none() -> TurnAttribution {
        TurnAttribution {
            source: TurnSource::None,
            turn_id: None,
        }
    }
}

/// Where the event's time came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TimeSource {
    /// A timestamp inside the agent's payload.
    Agent,
    /// The hook's receive time (Claude Code payloads carry none).
    Received,
    /// The finalizer's own clock (derived events).
    Finalizer,
}

/// A pointer back to one raw spool record: its digest (the key of the
/// ledger's raw-signal table) and where it was read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawRef {
    pub record_digest: String,
    pub event_name: Option<String>,
}

/// One canonical event, as appended to the ledger.
///
/// `Deserialize` is written out in `event_de.rs`: it reads the payload
/// straight into the struct its type names, where the derive, flattening
/// an adjacently tagged enum, buffered every row into a tree first.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
// The reader in `event_de.rs` refuses unknown members, as the schema says.
#[schemars(deny_unknown_fields)]
pub struct Event {
    pub id: EventId,
    pub session: SessionRef,
    /// Position in the session's event sequence, from 0, without gaps.
    pub offset: u64,
    /// UTC nanoseconds since the Unix epoch.
    pub time_unix_ns: i64,
    pub time_source: TimeSource,
    /// The boot-relative clock sample behind the event, when one exists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock: Option<ClockSample>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    pub turn: TurnAttribution,
    pub provenance: Provenance,
    /// The raw records this event came from; empty only for events the
    /// finalizer minted with no single raw trigger.
    pub raw: Vec<RawRef>,
    #[serde(flatten)]
    pub payload: Payload,
}

impl Event {
    pub fn event_type(&self) -> EventType {
        self.payload.event_type()
    }
}

impl std::fmt::Display for EventType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Payload {
    /// The line of the agent's own record an event was read from (its
    /// `record`), on the event types the record produces.
    pub fn record_line(&self) -> Option<&RecordAt> {
        match self {
            Payload::MessageUser(p) => Some(&p.record),
            Payload::MessageAssistant(p) => Some(&p.record),
            Payload::ReasoningRecorded(p) => Some(&p.record),
            Payload::UsageReported(p) => Some(&p.record),
            Payload::SessionMetadata(p) => Some(&p.record),
            Payload::ToolRecorded(p) => Some(&p.record),
            Payload::SignalUnrecognized(p) => p.record.as_ref(),
            _ => None,
        }
    }

    /// The recovery block, on the three event types that may carry one.
    pub fn recovery(&self) -> Option<&Recovery> {
        match self {
            Payload::ToolRequested(p) => p.recovery.as_ref(),
            Payload::ToolCompleted(p) => p.recovery.as_ref(),
            Payload::CommandCompleted(p) => p.recovery.as_ref(),
            _ => None,
        }
    }
}
