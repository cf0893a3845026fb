//! Copilot CLI's hook dialect. Two payload shapes reach the same hook:
//!
//! - camelCase (`sessionId`, `toolArgs`, `toolResult.resultType`, epoch-ms
//!   `timestamp`), with the event name only on the hook's argv;
//! - PascalCase hook files get snake_case payloads (`session_id`,
//!   `tool_input`, `tool_result.result_type`, ISO `timestamp`) that name the
//!   event in `hook_event_name`.
//!
//! One wire struct reads both through serde aliases. Copilot has no tool call
//! ids and no turn ids; a subagent's hooks arrive with `sessionId` = the
//! agent id and `parentAgentId` = the session that owns it (see
//! [`parent_session`]). Every hook usually fires twice (user and repo hook
//! files), byte-identical; a PascalCase hook file repeats the same signal in
//! the other shape with the same timestamp. [`Normalized::delivery_key`]
//! names the delivery independently of the shape, so the producer can tell.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::Value;

use crate::agents::signal::{Normalized, SignalKind, ToolCall, ToolResult, TurnEnd};
use crate::agents::wire::{normalize_input, optional_str, owned, parse_payload};
use crate::contract::{
    CompactionStarted, ErrorReported, Json, Outcome, Payload, PermissionRequested, PromptSubmitted,
    SessionEnded, SessionStarted, SignalUnrecognized, SubagentStarted, SubagentStopped, TimeSource,
};

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum WireTime<'a> {
    Millis(i64),
    Fractional(f64),
    #[serde(borrow)]
    Text(Cow<'a, str>),
}

/// One Copilot hook payload in either shape.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Wire<'a> {
    #[serde(
        default,
        borrow,
        deserialize_with = "optional_str",
        alias = "hook_event_name"
    )]
    hook_event_name: Option<Cow<'a, str>>,
    #[serde(borrow)]
    timestamp: Option<WireTime<'a>>,
    #[serde(default, borrow, deserialize_with = "optional_str")]
    cwd: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "optional_str")]
    source: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "optional_str")]
    prompt: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "optional_str")]
    transformed_prompt: Option<Cow<'a, str>>,
    #[serde(
        default,
        borrow,
        deserialize_with = "optional_str",
        alias = "tool_name"
    )]
    tool_name: Option<Cow<'a, str>>,
    #[serde(alias = "tool_input")]
    tool_args: Option<Value>,
    tool_input: Option<Value>,
    #[serde(alias = "tool_result")]
    tool_result: Option<Value>,
    error: Option<Value>,
    #[serde(default, borrow, deserialize_with = "optional_str")]
    error_context: Option<Cow<'a, str>>,
    recoverable: Option<bool>,
    #[serde(default, borrow, deserialize_with = "optional_str")]
    reason: Option<Cow<'a, str>>,
    #[serde(
        default,
        borrow,
        deserialize_with = "optional_str",
        alias = "stop_reason"
    )]
    stop_reason: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "optional_str")]
    agent_id: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "optional_str")]
    agent_type: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "optional_str")]
    agent_name: Option<Cow<'a, str>>,
    trigger: Option<Value>,
}

/// Just enough of a payload to route it.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RoutingWire<'a> {
    #[serde(
        default,
        borrow,
        deserialize_with = "optional_str",
        alias = "session_id"
    )]
    session_id: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "optional_str")]
    agent_id: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "optional_str")]
    parent_agent_id: Option<Cow<'a, str>>,
}

/// The session a payload belongs to when it came from a subagent: the
/// `parentAgentId` of a hook whose `sessionId` is the agent's own id.
/// (A subagent's `permissionRequest` already carries the parent's
/// `sessionId`, and `subagentStart/Stop` are the parent speaking.) `None`
/// means the payload's own session is the right one.
pub fn parent_session(payload: &[u8]) -> Option<String> {
    let wire: RoutingWire = parse_payload(payload).ok()?;
    let parent = wire.parent_agent_id.filter(|p| !p.is_empty())?;
    let speaker_is_agent = match (&wire.session_id, &wire.agent_id) {
        (Some(session), Some(agent)) => session == agent,
        (Some(session), None) => *session != parent,
        _ => true,
    };
    speaker_is_agent.then(|| parent.to_string())
}

/// Read one Copilot payload. `argv_event` is the event name the hook was
/// invoked with; the payload's `hook_event_name` wins when present.
pub fn normalize(argv_event: Option<&str>, payload: &[u8], received_unix_ns: i64) -> Normalized {
    match parse_payload::<Wire>(payload) {
        Ok(wire) => convert(argv_event, wire, received_unix_ns),
        Err(err) => Normalized {
            time_unix_ns: received_unix_ns,
            time_source: TimeSource::Received,
            agent_id: None,
            native_turn_id: None,
            delivery_key: None,
            kind: SignalKind::Unrecognized(SignalUnrecognized {
                adapter_event: argv_event.map(str::to_string),
                reason: format!("malformed_json: {err}"),
                record: None,
            }),
        },
    }
}

/// Both shapes' event names, mapped onto one vocabulary.
fn canonical_event(name: &str) -> &str {
    match name {
        "SessionStart" => "sessionStart",
        "SessionEnd" => "sessionEnd",
        "UserPromptSubmit" => "userPromptSubmitted",
        "PreToolUse" => "preToolUse",
        "PostToolUse" => "postToolUse",
        "PostToolUseFailure" => "postToolUseFailure",
        "Stop" => "agentStop",
        "SubagentStart" => "subagentStart",
        "SubagentStop" => "subagentStop",
        "PreCompact" => "preCompact",
        "PermissionRequest" => "permissionRequest",
        "ErrorOccurred" => "errorOccurred",
        other => other,
    }
}

fn agent_time_ns(time: &Option<WireTime>) -> Option<i64> {
    match time.as_ref()? {
        WireTime::Millis(ms) => ms.checked_mul(1_000_000),
        WireTime::Fractional(ms) if ms.is_finite() => Some((ms * 1_000_000.0) as i64),
        WireTime::Fractional(_) => None,
        WireTime::Text(text) => crate::clock::parse_rfc3339_ns(text),
    }
}

/// The one conversion from the wire into harnery's terms.
fn convert(argv_event: Option<&str>, wire: Wire, received_unix_ns: i64) -> Normalized {
    let raw_event = wire
        .hook_event_name
        .as_deref()
        .or(argv_event)
        .unwrap_or("")
        .to_string();
    let event = canonical_event(&raw_event);
    let agent_time = agent_time_ns(&wire.timestamp);
    let kind = kind_of(event, &raw_event, &wire);
    let delivery_key = agent_time.map(|t| delivery_key(event, t, &wire, &kind));
    let subject_agent = matches!(event, "subagentStart" | "subagentStop");
    Normalized {
        time_unix_ns: agent_time.unwrap_or(received_unix_ns),
        time_source: match agent_time {
            Some(_) => TimeSource::Agent,
            None => TimeSource::Received,
        },
        agent_id: if subject_agent {
            None
        } else {
            owned(&wire.agent_id)
        },
        native_turn_id: None,
        delivery_key,
        kind,
    }
}

/// kind + agent timestamp + speaking agent + tool name (case-folded: the
/// PascalCase shape says `Bash` where camelCase says `bash`) + input digest.
fn delivery_key(event: &str, time_ns: i64, wire: &Wire, kind: &SignalKind) -> String {
    let tool = wire.tool_name.as_deref().unwrap_or("").to_lowercase();
    let input = match kind {
        SignalKind::ToolRequested(call) => call.input_digest(),
        SignalKind::ToolCompleted(result) => result.call.input_digest(),
        _ => String::new(),
    };
    let agent = wire.agent_id.as_deref().unwrap_or("");
    format!("copilot:{event}:{time_ns}:{agent}:{tool}:{input}")
}

fn kind_of(event: &str, raw_event: &str, wire: &Wire) -> SignalKind {
    match event {
        "sessionStart" => SignalKind::SessionStarted(SessionStarted {
            source: owned(&wire.source),
            cwd: owned(&wire.cwd),
            model: None,
            transcript_path: None,
        }),
        "sessionEnd" => SignalKind::SessionEnded(SessionEnded {
            reason: owned(&wire.reason),
        }),
        "userPromptSubmitted" => SignalKind::PromptSubmitted(PromptSubmitted {
            prompt: owned(&wire.prompt),
            transformed: false,
        }),
        "userPromptTransformed" => SignalKind::PromptSubmitted(PromptSubmitted {
            prompt: owned(&wire.transformed_prompt).or_else(|| owned(&wire.prompt)),
            transformed: true,
        }),
        "agentStop" => SignalKind::TurnEnded(TurnEnd {
            stop_reason: owned(&wire.stop_reason),
            running_agents: Vec::new(),
        }),
        "preToolUse" => tool_call(wire).map_or_else(
            || SignalKind::unrecognized(raw_event, "tool event without toolName"),
            SignalKind::ToolRequested,
        ),
        "postToolUse" | "postToolUseFailure" => tool_result(event, raw_event, wire),
        "subagentStart" | "subagentStop" => subagent(event, raw_event, wire),
        _ => lifecycle(event, raw_event, wire),
    }
}

fn lifecycle(event: &str, raw_event: &str, wire: &Wire) -> SignalKind {
    let payload = match event {
        "errorOccurred" => Payload::ErrorReported(ErrorReported {
            message: error_text(&wire.error).unwrap_or_default(),
            context: owned(&wire.error_context),
            recoverable: wire.recoverable,
        }),
        "preCompact" => Payload::CompactionStarted(CompactionStarted {
            trigger: wire.trigger.as_ref().map(value_text),
        }),
        "permissionRequest" => match &wire.tool_name {
            Some(tool) => Payload::PermissionRequested(PermissionRequested {
                tool_name: tool.to_string(),
                input: wire
                    .tool_input
                    .as_ref()
                    .or(wire.tool_args.as_ref())
                    .map(Json::from_value),
            }),
            None => {
                return SignalKind::unrecognized(raw_event, "permission request without toolName");
            }
        },
        "" => return SignalKind::unrecognized(raw_event, "no event name on argv or in payload"),
        _ => return SignalKind::unrecognized(raw_event, "unknown_event"),
    };
    SignalKind::Lifecycle(payload)
}

fn value_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn error_text(error: &Option<Value>) -> Option<String> {
    match error.as_ref()? {
        Value::Object(map) => Some(
            map.get("message")
                .map_or_else(|| Value::Object(map.clone()).to_string(), value_text),
        ),
        other => Some(value_text(other)),
    }
}

fn tool_call(wire: &Wire) -> Option<ToolCall> {
    Some(ToolCall {
        call_id: None,
        tool_name: wire.tool_name.as_ref()?.to_string(),
        input: wire
            .tool_args
            .as_ref()
            .map(|args| normalize_input(Json::from_value(args))),
    })
}

fn tool_result(event: &str, raw_event: &str, wire: &Wire) -> SignalKind {
    let Some(call) = tool_call(wire) else {
        return SignalKind::unrecognized(raw_event, "tool event without toolName");
    };
    let result = wire.tool_result.as_ref();
    let outcome = if event == "postToolUseFailure" {
        Outcome::Failure
    } else {
        outcome_of(result)
    };
    SignalKind::ToolCompleted(ToolResult {
        call,
        outcome,
        duration_ms: None,
        // The hook payload carries no exit code (a failing shell command is
        // still `resultType: success`); events.jsonl has it, hooks do not.
        exit_code: None,
        error: error_text(&wire.error),
        content: result.map(Json::from_value),
    })
}

fn outcome_of(result: Option<&Value>) -> Outcome {
    let kind = result
        .and_then(|r| r.get("resultType").or_else(|| r.get("result_type")))
        .and_then(Value::as_str);
    match kind {
        Some("success") => Outcome::Success,
        Some("failure" | "error" | "denied" | "rejected") => Outcome::Failure,
        Some("interrupted" | "cancelled") => Outcome::Interrupted,
        _ => Outcome::Unknown,
    }
}

fn subagent(event: &str, raw_event: &str, wire: &Wire) -> SignalKind {
    let Some(agent_id) = owned(&wire.agent_id) else {
        return SignalKind::unrecognized(raw_event, "subagent event without agentId");
    };
    if event == "subagentStart" {
        return SignalKind::SubagentStarted(SubagentStarted {
            agent_id,
            agent_type: owned(&wire.agent_type),
            agent_name: owned(&wire.agent_name),
        });
    }
    SignalKind::SubagentStopped(SubagentStopped {
        agent_id,
        agent_type: owned(&wire.agent_type),
        stop_reason: owned(&wire.stop_reason),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn camel_and_pascal_shapes_share_a_delivery_key() {
        let camel = normalize(
            Some("preToolUse"),
            br#"{"sessionId":"s","timestamp":1795997722372,"toolName":"bash",
                "toolArgs":{"command":"ls","description":"d"}}"#,
            0,
        );
        let pascal = normalize(
            Some("PreToolUse"),
            br#"{"hook_event_name":"PreToolUse","session_id":"s",
                "timestamp":"2026-11-30T00:15:22.372Z","tool_name":"Bash",
                "tool_input":{"description":"d","command":"ls"}}"#,
            0,
        );
        assert_eq!(camel.time_unix_ns, 1_795_997_722_372_000_000);
        assert_eq!(camel.time_unix_ns, pascal.time_unix_ns);
        assert_eq!(camel.time_source, TimeSource::Agent);
        assert!(camel.delivery_key.is_some());
        assert_eq!(camel.delivery_key, pascal.delivery_key);
    }

    #[test]
    fn tool_args_as_a_json_string_pair_with_an_object() {
        let pre = normalize(
            Some("preToolUse"),
            br#"{"sessionId":"s","toolName":"view","toolArgs":{"path":"/x"}}"#,
            0,
        );
        let post = normalize(
            Some("postToolUse"),
            br#"{"sessionId":"s","toolName":"view","toolArgs":"{\"path\":\"/x\"}",
                "toolResult":{"resultType":"success"}}"#,
            0,
        );
        let (SignalKind::ToolRequested(a), SignalKind::ToolCompleted(b)) = (pre.kind, post.kind)
        else {
            panic!("wrong kinds")
        };
        assert_eq!(a.input_digest(), b.call.input_digest());
        assert_eq!(b.outcome, Outcome::Success);
    }

    #[test]
    fn subagent_hooks_route_to_the_parent() {
        let child = br#"{"sessionId":"agent","agentId":"agent","parentAgentId":"parent"}"#;
        assert_eq!(parent_session(child).as_deref(), Some("parent"));
        let permission = br#"{"sessionId":"parent","agentId":"agent","parentAgentId":"parent"}"#;
        assert_eq!(parent_session(permission), None);
        assert_eq!(parent_session(br#"{"sessionId":"s"}"#), None);
        assert_eq!(parent_session(b"nonsense"), None);
    }

    #[test]
    fn failure_and_error_payloads() {
        let n = normalize(
            Some("postToolUseFailure"),
            br#"{"sessionId":"s","timestamp":1,"toolName":"view","toolArgs":{},"error":"nope"}"#,
            0,
        );
        let SignalKind::ToolCompleted(r) = n.kind else {
            panic!("not a completion")
        };
        assert_eq!(
            (r.outcome, r.error.as_deref()),
            (Outcome::Failure, Some("nope"))
        );
        let e = normalize(
            Some("errorOccurred"),
            br#"{"sessionId":"s","timestamp":1,"error":{"message":"m"},"errorContext":"model_call","recoverable":true}"#,
            0,
        );
        assert!(
            matches!(e.kind, SignalKind::Lifecycle(Payload::ErrorReported(ref p)) if p.message == "m")
        );
    }

    #[test]
    fn unknown_events_and_garbage_are_unrecognized() {
        for (event, raw) in [(Some("mystery"), &b"{}"[..]), (Some("preToolUse"), b"[")] {
            assert!(matches!(
                normalize(event, raw, 0).kind,
                SignalKind::Unrecognized(_)
            ));
        }
    }
}
