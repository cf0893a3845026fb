//! Claude Code's hook dialect: snake_case hook payloads that name their event
//! in `hook_event_name`, carry `tool_use_id` on tool events and the native
//! turn id `prompt_id` on nearly everything, and no timestamp at all (the
//! hook's receive time stands in).
//!
//! Stateless: one payload in, one [`Normalized`] out. The wire struct mirrors
//! the JSON (borrowing strings where it can); [`convert`] is the one place
//! that turns it into harnery's terms.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::Value;

use crate::agents::record::{NamedRecord, names_camel_record};
use crate::agents::result_text::json_text;
use crate::agents::signal::{BatchedCall, Normalized, SignalKind, ToolCall, ToolResult, TurnEnd};
use crate::agents::wire::{normalize_input, optional_str, owned, parse_payload, raw_json};
use crate::contract::{
    CompactionCompleted, CompactionStarted, Json, MessageDisplayed, Notification, Outcome, Payload,
    PermissionRequested, PromptSubmitted, SessionEnded, SessionStarted, TimeSource,
};

/// One Claude Code hook payload, as sent. Unknown fields are ignored: the
/// client adds fields between versions and the raw bytes are kept anyway.
#[derive(Debug, Deserialize)]
struct Wire<'a> {
    #[serde(default, borrow, deserialize_with = "optional_str")]
    hook_event_name: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "optional_str")]
    prompt_id: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "optional_str")]
    agent_id: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "optional_str")]
    agent_type: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "optional_str")]
    source: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "optional_str")]
    cwd: Option<Cow<'a, str>>,
    model: Option<Value>,
    #[serde(default, borrow, deserialize_with = "optional_str")]
    transcript_path: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "optional_str")]
    prompt: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "optional_str")]
    tool_name: Option<Cow<'a, str>>,
    #[serde(default, deserialize_with = "raw_json")]
    tool_input: Option<Json>,
    #[serde(default, deserialize_with = "raw_json")]
    tool_response: Option<Json>,
    #[serde(default, borrow, deserialize_with = "optional_str")]
    tool_use_id: Option<Cow<'a, str>>,
    duration_ms: Option<u64>,
    error: Option<Value>,
    is_interrupt: Option<bool>,
    tool_calls: Option<Vec<WireBatchCall<'a>>>,
    background_tasks: Option<Vec<WireBackgroundTask<'a>>>,
    #[serde(default, borrow, deserialize_with = "optional_str")]
    reason: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "optional_str")]
    message: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "optional_str")]
    notification_type: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "optional_str")]
    message_id: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "optional_str")]
    delta: Option<Cow<'a, str>>,
    #[serde(rename = "final")]
    is_final: Option<bool>,
    trigger: Option<Value>,
    #[serde(default, borrow, deserialize_with = "optional_str")]
    compact_summary: Option<Cow<'a, str>>,
}

#[derive(Debug, Deserialize)]
struct WireBatchCall<'a> {
    #[serde(default, borrow, deserialize_with = "optional_str")]
    tool_name: Option<Cow<'a, str>>,
    #[serde(default, deserialize_with = "raw_json")]
    tool_input: Option<Json>,
    #[serde(default, borrow, deserialize_with = "optional_str")]
    tool_use_id: Option<Cow<'a, str>>,
    #[serde(default, deserialize_with = "raw_json")]
    tool_response: Option<Json>,
}

#[derive(Debug, Deserialize)]
struct WireBackgroundTask<'a> {
    #[serde(default, borrow, deserialize_with = "optional_str")]
    id: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "optional_str", rename = "type")]
    task_type: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "optional_str")]
    status: Option<Cow<'a, str>>,
}

/// Read one Claude Code payload received at `received_unix_ns`.
pub fn normalize(payload: &[u8], received_unix_ns: i64) -> Normalized {
    normalize_naming(payload, received_unix_ns, false).0
}

/// [`normalize`], and with `record` also the record file the payload names
/// (`transcript_path`), read with the rest of it; left [`NamedRecord::Unread`]
/// where it might differ from [`path_in_payload`](crate::agents::record::path_in_payload)'s
/// reading (a payload that is not read, or one that also holds `transcriptPath`).
pub fn normalize_naming(
    payload: &[u8],
    received_unix_ns: i64,
    record: bool,
) -> (Normalized, NamedRecord) {
    let kind = match parse_payload::<Wire>(payload) {
        Ok(wire) => {
            let named = if record && !names_camel_record(payload) {
                let path = wire.transcript_path.as_deref().filter(|p| !p.is_empty());
                NamedRecord::Read(path.map(String::from))
            } else {
                NamedRecord::Unread
            };
            return (convert(wire, received_unix_ns), named);
        }
        Err(err) => SignalKind::malformed(None, &err),
    };
    (
        Normalized::received(kind, received_unix_ns),
        NamedRecord::Unread,
    )
}

fn text_of(value: &Option<Value>) -> Option<String> {
    match value {
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Object(map)) => map
            .get("message")
            .and_then(Value::as_str)
            .map(str::to_string),
        Some(other) => Some(other.to_string()),
        None => None,
    }
}

/// The one conversion from the wire into harnery's terms. It takes the
/// wire's JSON values rather than copying them: each goes to one place.
fn convert(mut wire: Wire, received_unix_ns: i64) -> Normalized {
    let name = wire.hook_event_name.take();
    let event = name.as_deref().unwrap_or("");
    let subject_agent = matches!(event, "SubagentStart" | "SubagentStop");
    let kind = kind_of(event, &mut wire);
    Normalized {
        time_unix_ns: received_unix_ns,
        time_source: TimeSource::Received,
        // A subagent start/stop is spoken by the parent about the agent.
        agent_id: if subject_agent {
            None
        } else {
            owned(&wire.agent_id)
        },
        native_turn_id: owned(&wire.prompt_id),
        delivery_key: None,
        kind,
    }
}

fn kind_of(event: &str, wire: &mut Wire) -> SignalKind {
    match event {
        "SessionStart" => SignalKind::SessionStarted(SessionStarted {
            source: owned(&wire.source),
            cwd: owned(&wire.cwd),
            model: text_of(&wire.model),
            transcript_path: owned(&wire.transcript_path),
        }),
        "SessionEnd" => SignalKind::SessionEnded(SessionEnded {
            reason: owned(&wire.reason),
        }),
        "UserPromptSubmit" => SignalKind::PromptSubmitted(PromptSubmitted {
            prompt: owned(&wire.prompt),
            transformed: false,
        }),
        "Stop" => SignalKind::TurnEnded(turn_end(wire)),
        "PreToolUse" => tool_call(wire).map_or_else(
            || SignalKind::unrecognized(event, "tool event without tool_name"),
            SignalKind::ToolRequested,
        ),
        "PostToolUse" | "PostToolUseFailure" => tool_result(event, wire),
        "PostToolBatch" => SignalKind::ToolBatch(batch(wire)),
        "SubagentStart" | "SubagentStop" => subagent(event, wire),
        _ => lifecycle(event, wire),
    }
}

fn lifecycle(event: &str, wire: &mut Wire) -> SignalKind {
    let payload = match event {
        "Notification" => Payload::Notification(Notification {
            kind: owned(&wire.notification_type),
            message: owned(&wire.message),
        }),
        "MessageDisplay" => Payload::MessageDisplayed(MessageDisplayed {
            message_id: owned(&wire.message_id),
            text: owned(&wire.delta),
            is_final: wire.is_final,
        }),
        "PermissionRequest" => match &wire.tool_name {
            Some(tool) => Payload::PermissionRequested(PermissionRequested {
                tool_name: tool.to_string(),
                input: wire.tool_input.take(),
            }),
            None => return SignalKind::unrecognized(event, "permission request without tool_name"),
        },
        "PreCompact" => Payload::CompactionStarted(CompactionStarted {
            trigger: text_of(&wire.trigger),
        }),
        "PostCompact" => Payload::CompactionCompleted(CompactionCompleted {
            trigger: text_of(&wire.trigger),
            summary: owned(&wire.compact_summary),
        }),
        "" => return SignalKind::unrecognized(event, "no hook_event_name"),
        _ => return SignalKind::unrecognized(event, "unknown_event"),
    };
    SignalKind::Lifecycle(payload)
}

fn tool_call(wire: &mut Wire) -> Option<ToolCall> {
    Some(ToolCall {
        call_id: owned(&wire.tool_use_id),
        tool_name: wire.tool_name.as_ref()?.to_string(),
        input: wire.tool_input.take().map(normalize_input),
    })
}

fn tool_result(event: &str, wire: &mut Wire) -> SignalKind {
    let Some(call) = tool_call(wire) else {
        return SignalKind::unrecognized(event, "tool event without tool_name");
    };
    let failed = event == "PostToolUseFailure";
    let interrupted = wire.is_interrupt == Some(true) || response_says_interrupted(wire);
    let outcome = match (interrupted, failed) {
        (true, _) => Outcome::Interrupted,
        (false, true) => Outcome::Failure,
        (false, false) => Outcome::Success,
    };
    SignalKind::ToolCompleted(ToolResult {
        call,
        outcome,
        duration_ms: wire.duration_ms,
        exit_code: None,
        error: text_of(&wire.error),
        content: wire.tool_response.take(),
    })
}

fn response_says_interrupted(wire: &Wire) -> bool {
    /// The one member asked for; serde skips the rest without keeping it.
    #[derive(Deserialize)]
    struct Probe {
        interrupted: Option<bool>,
    }
    // Canonical text has no blanks: a response that was not interrupted
    // (nearly all) is told by a substring search, without parsing it.
    wire.tool_response.as_ref().is_some_and(|r| {
        r.as_str().starts_with('{')
            && r.as_str().contains("\"interrupted\":true")
            && serde_json::from_str::<Probe>(r.as_str()).is_ok_and(|p| p.interrupted == Some(true))
    })
}

fn batch(wire: &mut Wire) -> Vec<BatchedCall> {
    let calls = wire.tool_calls.take().unwrap_or_default();
    calls
        .into_iter()
        .map(|c| BatchedCall {
            call: ToolCall {
                call_id: owned(&c.tool_use_id),
                tool_name: owned(&c.tool_name).unwrap_or_default(),
                input: c.tool_input.map(normalize_input),
            },
            text: c.tool_response.as_ref().and_then(json_text),
            response: c.tool_response,
        })
        .collect()
}

fn turn_end(wire: &Wire) -> TurnEnd {
    let tasks = wire.background_tasks.as_deref().unwrap_or_default();
    let running_agents = tasks
        .iter()
        .filter(|t| t.task_type.as_deref() == Some("subagent"))
        .filter(|t| t.status.as_deref() == Some("running"))
        .filter_map(|t| owned(&t.id))
        .collect();
    TurnEnd {
        stop_reason: Some("stop".to_string()),
        running_agents,
    }
}

fn subagent(event: &str, wire: &Wire) -> SignalKind {
    SignalKind::subagent(event, owned(&wire.agent_id), owned(&wire.agent_type))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(json: &str) -> Normalized {
        normalize(json.as_bytes(), 7)
    }

    #[test]
    fn the_record_a_payload_names_is_read_with_it_as_path_in_payload_finds_it() {
        use crate::agents::record::path_in_payload;
        let pre = r#""hook_event_name":"PreToolUse","tool_name":"Bash","tool_use_id":"t""#;
        let cases: [(String, bool); 9] = [
            // Read with the payload: the common case, every hook of a session.
            (format!(r#"{{{pre},"transcript_path":"/t/s.jsonl"}}"#), true),
            (
                format!(r#"{{"transcript_path":"/t/a\u0062.jsonl",{pre}}}"#),
                true,
            ),
            (format!(r#"{{{pre},"transcript_path":""}}"#), true),
            (format!(r#"{{{pre},"transcript_path":null}}"#), true),
            // A key only inside the tool's input names no record.
            (
                format!(r#"{{{pre},"tool_input":{{"transcript_path":"/x"}}}}"#),
                true,
            ),
            // Left to `path_in_payload`: the other spelling, both, a key
            // twice, a payload the dialect does not read.
            (format!(r#"{{{pre},"transcriptPath":"/c.jsonl"}}"#), false),
            (
                format!(r#"{{{pre},"transcript_path":"/a","transcriptPath":"/b"}}"#),
                false,
            ),
            (
                format!(r#"{{{pre},"transcript_path":"/a","transcript_path":"/b"}}"#),
                false,
            ),
            (r#"{"transcript_path":"/t/s.jsonl","#.to_string(), false),
        ];
        for (payload, read_with_it) in cases {
            let bytes = payload.as_bytes();
            let (_, named) = normalize_naming(bytes, 7, true);
            assert_eq!(
                matches!(named, NamedRecord::Read(_)),
                read_with_it,
                "{payload}"
            );
            assert_eq!(named.or_look_in(bytes), path_in_payload(bytes), "{payload}");
            // Not asked, not read.
            assert_eq!(normalize_naming(bytes, 7, false).1, NamedRecord::Unread);
        }
    }

    #[test]
    fn a_pre_carries_call_id_turn_and_input() {
        let n = read(
            r#"{"hook_event_name":"PreToolUse","prompt_id":"p1","tool_name":"Bash",
                "tool_input":{"command":"ls"},"tool_use_id":"t1","agent_id":"a1"}"#,
        );
        assert_eq!(n.native_turn_id.as_deref(), Some("p1"));
        assert_eq!(n.agent_id.as_deref(), Some("a1"));
        assert_eq!(n.time_source, TimeSource::Received);
        let SignalKind::ToolRequested(call) = n.kind else {
            panic!("not a request: {:?}", n.kind)
        };
        assert_eq!(call.call_id.as_deref(), Some("t1"));
    }

    #[test]
    fn failure_with_is_interrupt_is_interrupted() {
        let n = read(
            r#"{"hook_event_name":"PostToolUseFailure","tool_name":"Bash","tool_use_id":"t",
                "error":"boom","is_interrupt":true}"#,
        );
        let SignalKind::ToolCompleted(result) = n.kind else {
            panic!("not a completion")
        };
        assert_eq!(result.outcome, Outcome::Interrupted);
        assert_eq!(result.error.as_deref(), Some("boom"));
    }

    #[test]
    fn stop_lists_running_subagents() {
        let n = read(
            r#"{"hook_event_name":"Stop","background_tasks":[
                {"id":"a1","type":"subagent","status":"running"},
                {"id":"a2","type":"subagent","status":"completed"}]}"#,
        );
        let SignalKind::TurnEnded(end) = n.kind else {
            panic!("not a turn end")
        };
        assert_eq!(end.running_agents, vec!["a1".to_string()]);
    }

    #[test]
    fn unknown_and_malformed_are_kept_as_unrecognized() {
        for raw in [r#"{"hook_event_name":"Mystery"}"#, "{not json", "{}"] {
            assert!(
                matches!(read(raw).kind, SignalKind::Unrecognized(_)),
                "{raw}"
            );
        }
    }
}
