//! The adapter-neutral shape of one raw signal, after its dialect was read.
//!
//! Every dialect module converts its wire structs into a [`Normalized`] in
//! exactly one place. The producer state machine reads only these types, so
//! it never needs to know whether a field was `tool_use_id` or `toolArgs`.

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
    RecordChunk(Box<super::harnery::RecordChunk>),
    /// The agent's own record could not be followed.
    RecordProblem(crate::contract::RecordProblem),
    /// `harnery checkpoint`.
    CheckpointRequested(super::harnery::CheckpointPayload),
    /// `harnery restore`.
    RestoreRequested(super::harnery::RestorePayload),
}

impl SignalKind {
    /// A signal no rule knows: `event` is the agent's name for it (empty
    /// when it gave none), `reason` says why it was not understood.
    pub fn unrecognized(event: &str, reason: &str) -> SignalKind {
        SignalKind::Unrecognized(SignalUnrecognized {
            adapter_event: (!event.is_empty()).then(|| event.to_string()),
            reason: reason.to_string(),
            record: None,
        })
    }

    /// Whether this signal is the agent doing something new in the session
    /// (which cancels a pending explicit end). harnery's own signals and the
    /// end signals themselves are not.
    pub fn is_native_work(&self) -> bool {
        !matches!(
            self,
            SignalKind::SessionEnded(_)
                | SignalKind::EndRequested { .. }
                | SignalKind::CommandRequested { .. }
                | SignalKind::CommandCompleted(_)
                | SignalKind::CheckpointRequested(_)
                | SignalKind::RestoreRequested(_)
        )
    }

    /// Whether the signal was written by harnery itself rather than the agent.
    pub fn is_harnery_own(&self) -> bool {
        matches!(
            self,
            SignalKind::EndRequested { .. }
                | SignalKind::CommandRequested { .. }
                | SignalKind::CommandCompleted(_)
                | SignalKind::CheckpointRequested(_)
                | SignalKind::RestoreRequested(_)
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
}

/// `harnery exec`'s completion record.
#[derive(Debug, Clone, PartialEq)]
pub struct CommandResult {
    pub command_id: String,
    pub exit_code: Option<i64>,
    pub signal: Option<i32>,
    pub duration_ms: Option<u64>,
}

/// Parse a payload as JSON. A payload that is valid UTF-8 as a whole is
/// parsed as text, which spares serde_json from validating every string it
/// reads one by one; any other payload is parsed as bytes, so a malformed
/// one fails with exactly the error it always did.
pub fn parse_payload<'a, T: serde::Deserialize<'a>>(payload: &'a [u8]) -> serde_json::Result<T> {
    match std::str::from_utf8(payload) {
        Ok(text) => serde_json::from_str(text),
        Err(_) => serde_json::from_slice(payload),
    }
}

/// An optional borrowed wire string, owned.
pub fn owned(value: &Option<std::borrow::Cow<'_, str>>) -> Option<String> {
    value.as_ref().map(|v| v.to_string())
}

/// The digest of a tool input (of its canonical text); a missing input
/// has its own fixed digest.
pub fn input_digest(input: Option<&Json>) -> String {
    let digest = match input {
        Some(json) => blake3::hash(json.as_str().as_bytes()),
        None => blake3::hash(b"<absent>"),
    };
    digest.to_hex().as_str().to_owned()
}

/// Tool inputs sometimes arrive as a JSON string holding JSON: parse it so
/// that both shapes digest the same.
pub fn normalize_input(value: Json) -> Json {
    value
        .as_string()
        .and_then(|text| Json::parse(&text).ok())
        .filter(|parsed| parsed.as_str().starts_with(['{', '[']))
        .unwrap_or(value)
}

/// An optional string field of a wire struct, borrowed from the payload
/// unless it holds escapes: `#[serde(default, borrow, deserialize_with =
/// "optional_str")]`. (Left to serde, an `Option<Cow<str>>` is always an
/// owned copy: `borrow` reaches a `Cow` only when it is the field itself.)
pub fn optional_str<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<std::borrow::Cow<'de, str>>, D::Error> {
    #[derive(serde::Deserialize)]
    struct Text<'a>(#[serde(borrow)] std::borrow::Cow<'a, str>);
    let text: Option<Text<'de>> = serde::Deserialize::deserialize(d)?;
    Ok(text.map(|t| t.0))
}

/// A JSON field of a wire struct, read as borrowed text and kept in
/// canonical form (no `Value` tree is built for it):
/// `#[serde(default, deserialize_with = "raw_json")]`.
pub fn raw_json<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Json>, D::Error> {
    let raw: Option<&'de serde_json::value::RawValue> = serde::Deserialize::deserialize(d)?;
    raw.map(|r| Json::parse(r.get()).map_err(serde::de::Error::custom))
        .transpose()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn optional_strings_are_borrowed_unless_escaped() {
        #[derive(serde::Deserialize)]
        struct Wire<'a> {
            #[serde(default, borrow, deserialize_with = "optional_str")]
            plain: Option<std::borrow::Cow<'a, str>>,
            #[serde(default, borrow, deserialize_with = "optional_str")]
            escaped: Option<std::borrow::Cow<'a, str>>,
            #[serde(default, borrow, deserialize_with = "optional_str")]
            null: Option<std::borrow::Cow<'a, str>>,
            #[serde(default, borrow, deserialize_with = "optional_str")]
            absent: Option<std::borrow::Cow<'a, str>>,
        }
        let wire: Wire = parse_payload(br#"{"plain":"a","escaped":"b\nc","null":null}"#).unwrap();
        assert!(matches!(wire.plain, Some(std::borrow::Cow::Borrowed("a"))));
        assert!(matches!(wire.escaped.as_deref(), Some("b\nc")));
        assert!(matches!(wire.escaped, Some(std::borrow::Cow::Owned(_))));
        assert!(wire.null.is_none() && wire.absent.is_none());
    }

    #[test]
    fn string_and_object_inputs_digest_the_same() {
        let object = Json::from_value(&json!({"command": "ls", "description": "x"}));
        let string = Json::from_value(&json!(r#"{"description":"x","command":"ls"}"#));
        assert_eq!(
            input_digest(Some(&normalize_input(string))),
            input_digest(Some(&object))
        );
        assert_ne!(
            input_digest(None),
            input_digest(Some(&Json::from_value(&json!({}))))
        );
    }

    #[test]
    fn a_plain_string_input_stays_a_string() {
        let text = Json::from_value(&json!("not json"));
        assert_eq!(normalize_input(text.clone()), text);
        let number = Json::from_value(&json!("42"));
        assert_eq!(normalize_input(number.clone()), number);
    }
}
