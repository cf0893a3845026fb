//! The adapter-neutral shape of one raw signal, after its dialect was read.
//!
//! Every dialect module converts its wire structs into a [`Normalized`] in
//! exactly one place. The producer state machine reads only these types, so
//! it never needs to know whether a field was `tool_use_id` or `toolArgs`.

use serde_json::Value;

use crate::contract::{
    CommandRequested, Outcome, Payload, PromptSubmitted, SessionEnded, SessionStarted,
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
}

impl SignalKind {
    /// A signal no rule knows: `event` is the agent's name for it (empty
    /// when it gave none), `reason` says why it was not understood.
    pub fn unrecognized(event: &str, reason: &str) -> SignalKind {
        SignalKind::Unrecognized(SignalUnrecognized {
            adapter_event: (!event.is_empty()).then(|| event.to_string()),
            reason: reason.to_string(),
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
        )
    }

    /// Whether the signal was written by harnery itself rather than the agent.
    pub fn is_harnery_own(&self) -> bool {
        matches!(
            self,
            SignalKind::EndRequested { .. }
                | SignalKind::CommandRequested { .. }
                | SignalKind::CommandCompleted(_)
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
    pub input: Option<Value>,
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
    pub content: Option<Value>,
}

/// One call listed in a tool batch summary.
#[derive(Debug, Clone, PartialEq)]
pub struct BatchedCall {
    pub call: ToolCall,
    pub response: Option<Value>,
}

/// `harnery exec`'s completion record.
#[derive(Debug, Clone, PartialEq)]
pub struct CommandResult {
    pub command_id: String,
    pub exit_code: Option<i64>,
    pub signal: Option<i32>,
    pub duration_ms: Option<u64>,
}

/// An optional borrowed wire string, owned.
pub fn owned(value: &Option<std::borrow::Cow<'_, str>>) -> Option<String> {
    value.as_ref().map(|v| v.to_string())
}

/// Canonical JSON: object keys sorted, no insignificant whitespace. Built by
/// hand so that no serde_json feature flag can change the bytes.
pub fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String((*key).clone()).to_string());
                out.push(':');
                write_canonical(&map[*key], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

/// The digest of a tool input; a missing input has its own fixed digest.
pub fn input_digest(input: Option<&Value>) -> String {
    let text = match input {
        Some(value) => canonical_json(value),
        None => String::from("<absent>"),
    };
    blake3::hash(text.as_bytes()).to_hex().to_string()
}

/// Tool inputs sometimes arrive as a JSON string holding JSON: parse it so
/// that both shapes digest the same.
pub fn normalize_input(value: Value) -> Value {
    match value {
        Value::String(text) => match serde_json::from_str::<Value>(&text) {
            Ok(parsed @ (Value::Object(_) | Value::Array(_))) => parsed,
            _ => Value::String(text),
        },
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn canonical_json_sorts_keys_at_every_depth() {
        let value = json!({"b": 1, "a": {"d": [1, {"z": 0, "y": "é"}], "c": null}});
        assert_eq!(
            canonical_json(&value),
            r#"{"a":{"c":null,"d":[1,{"y":"é","z":0}]},"b":1}"#
        );
    }

    #[test]
    fn string_and_object_inputs_digest_the_same() {
        let object = json!({"command": "ls", "description": "x"});
        let string = Value::String(r#"{"description":"x","command":"ls"}"#.into());
        assert_eq!(
            input_digest(Some(&normalize_input(string))),
            input_digest(Some(&object))
        );
        assert_ne!(input_digest(None), input_digest(Some(&json!({}))));
    }

    #[test]
    fn a_plain_string_input_stays_a_string() {
        let value = normalize_input(Value::String("not json".into()));
        assert_eq!(value, Value::String("not json".into()));
    }
}
