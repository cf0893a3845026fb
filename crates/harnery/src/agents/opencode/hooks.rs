//! OpenCode's hook dialect. OpenCode has no command hooks: harnery's plugin
//! (`plugin.js`, installed into OpenCode's `plugins/` folder) hands each
//! event to `harnery-hook opencode <event>` as one JSON object:
//!
//! - `session_id`, `hook_event_name`, `timestamp` (ISO, taken in OpenCode's
//!   process when the event fired), `seq`, `pid`, added by the plugin;
//! - `input` and `output`, the two objects OpenCode passes a plugin hook
//!   (`chat.message`, `tool.execute.before`, `tool.execute.after`);
//! - `event`, a bus event `{id, type, properties}`: every event of the
//!   session but those that restate OpenCode's record (`message.updated`,
//!   `message.part.updated`, `session.updated`, `session.status`, ...).
//!   `session.created`, `session.idle`, `session.error`,
//!   `session.compacted`, `session.deleted`, `permission.asked` and
//!   `permission.replied` are read; any other is `hook.observed`.
//!
//! Tool events carry the model's tool call id (`input.callID`), the same id
//! OpenCode's record keeps. There is no turn id and no record path; a
//! session's end is never signalled by `opencode run` (only `session.idle`,
//! which ends the turn, and twice after a model error).

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::Value;

use crate::agents::signal::{Normalized, SignalKind, ToolCall, ToolResult, TurnEnd};
use crate::agents::wire::{normalize_input, optional_str, owned, parse_payload, raw_json};
use crate::contract::{
    CompactionCompleted, ErrorReported, HookObserved, Json, Notification, Outcome, Payload,
    PermissionRequested, PromptSubmitted, SessionEnded, SessionStarted, TimeSource,
};

/// One payload of harnery's OpenCode plugin, as sent.
#[derive(Debug, Deserialize)]
struct Wire<'a> {
    #[serde(default, borrow, deserialize_with = "optional_str")]
    hook_event_name: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "optional_str")]
    timestamp: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    input: Option<Input<'a>>,
    /// Kept whole: `tool.execute.after`'s is the tool's result.
    #[serde(default, deserialize_with = "raw_json")]
    output: Option<Json>,
    #[serde(default, borrow)]
    event: Option<Event<'a>>,
}

/// A plugin hook's `input`.
#[derive(Debug, Default, Deserialize)]
struct Input<'a> {
    #[serde(default, borrow, deserialize_with = "optional_str")]
    tool: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "optional_str", rename = "callID")]
    call_id: Option<Cow<'a, str>>,
    #[serde(default, deserialize_with = "raw_json")]
    args: Option<Json>,
}

/// What is read of a plugin hook's `output`: `tool.execute.before` gives
/// `args`, `tool.execute.after` the tool's `title`, `output` and `metadata`
/// (`exit` for the shell tool), `chat.message` the user `message` and its
/// `parts`.
#[derive(Debug, Default, Deserialize)]
struct Output {
    #[serde(default, deserialize_with = "raw_json")]
    args: Option<Json>,
    #[serde(default)]
    metadata: Option<Value>,
    #[serde(default)]
    message: Option<Value>,
    #[serde(default)]
    parts: Option<Vec<PromptPart>>,
}

#[derive(Debug, Deserialize)]
struct PromptPart {
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    synthetic: Option<bool>,
}

impl Output {
    fn of(raw: Option<&Json>) -> Output {
        raw.and_then(|r| serde_json::from_str(r.as_str()).ok())
            .unwrap_or_default()
    }
}

/// A bus event.
#[derive(Debug, Deserialize)]
struct Event<'a> {
    #[serde(default, borrow, deserialize_with = "optional_str")]
    id: Option<Cow<'a, str>>,
    #[serde(default)]
    properties: Option<Value>,
}

/// Read one plugin payload received at `received_unix_ns`; `argv_event` is
/// the event name the hook's argv gave (the payload's own name wins).
pub(crate) fn normalize(
    argv_event: Option<&str>,
    payload: &[u8],
    received_unix_ns: i64,
) -> Normalized {
    let (time, kind, delivery_key) = match parse_payload::<Wire>(payload) {
        Ok(wire) => {
            let event = wire
                .hook_event_name
                .as_deref()
                .or(argv_event)
                .unwrap_or("")
                .to_string();
            let time = wire
                .timestamp
                .as_deref()
                .and_then(crate::clock::parse_rfc3339_ns);
            let output = Output::of(wire.output.as_ref());
            let key = delivery_key(&event, &wire, &output);
            (time, kind_of(&event, wire, output), key)
        }
        Err(err) => (None, SignalKind::malformed(argv_event, &err), None),
    };
    Normalized {
        time_unix_ns: time.unwrap_or(received_unix_ns),
        time_source: match time {
            Some(_) => TimeSource::Agent,
            None => TimeSource::Received,
        },
        agent_id: None,
        native_turn_id: None,
        delivery_key,
        kind,
    }
}

/// The delivery's own name, the same however often it arrives (the plugin
/// installed for the user and in a project hands each event over twice):
/// a bus event's id, a tool event's call id, a prompt's message id.
fn delivery_key(event: &str, wire: &Wire, output: &Output) -> Option<String> {
    let id = match (&wire.event, &wire.input) {
        (Some(e), _) => owned(&e.id),
        (None, Some(input)) if input.call_id.is_some() => owned(&input.call_id),
        _ => text_at(output.message.as_ref(), &["id"]),
    }?;
    Some(format!("opencode:{event}:{id}"))
}

fn kind_of(event: &str, wire: Wire, output: Output) -> SignalKind {
    let props = wire.event.as_ref().and_then(|e| e.properties.as_ref());
    match event {
        "chat.message" => SignalKind::PromptSubmitted(PromptSubmitted {
            prompt: prompt_text(&output),
            transformed: false,
        }),
        "tool.execute.before" => match tool_call(wire.input, output.args) {
            Some(call) => SignalKind::ToolRequested(call),
            None => SignalKind::unrecognized(event, "tool event without a tool name"),
        },
        "tool.execute.after" => tool_result(event, wire, &output),
        "session.created" => SignalKind::SessionStarted(SessionStarted {
            source: None,
            cwd: text_at(props, &["info", "directory"]),
            model: None,
            transcript_path: None,
        }),
        "session.idle" => SignalKind::TurnEnded(TurnEnd {
            stop_reason: Some("idle".to_string()),
            running_agents: Vec::new(),
        }),
        "session.deleted" => SignalKind::SessionEnded(SessionEnded {
            reason: Some("deleted".to_string()),
        }),
        _ => lifecycle(event, props),
    }
}

fn lifecycle(event: &str, props: Option<&Value>) -> SignalKind {
    let payload = match event {
        "session.error" => Payload::ErrorReported(ErrorReported {
            message: text_at(props, &["error", "data", "message"])
                .or_else(|| text_at(props, &["error", "name"]))
                .unwrap_or_default(),
            context: text_at(props, &["error", "name"]),
            recoverable: props
                .and_then(|p| p.pointer("/error/data/isRetryable"))
                .and_then(Value::as_bool),
        }),
        "session.compacted" => Payload::CompactionCompleted(CompactionCompleted {
            trigger: None,
            summary: None,
        }),
        "permission.asked" => match text_at(props, &["permission"]) {
            Some(tool_name) => Payload::PermissionRequested(PermissionRequested {
                tool_name,
                input: props.and_then(|p| p.get("metadata")).map(Json::from_value),
            }),
            None => {
                return SignalKind::unrecognized(event, "permission request without a permission");
            }
        },
        "permission.replied" => Payload::Notification(Notification {
            kind: Some("permission.replied".to_string()),
            message: text_at(props, &["reply"]),
        }),
        "" => return SignalKind::unrecognized(event, "no hook_event_name"),
        // Any other event of the session (`todo.updated`,
        // `command.executed`, `message.removed`, ...): it fired, and says
        // nothing more the ledger models.
        _ => Payload::HookObserved(HookObserved {
            event: event.to_string(),
            model: None,
            detail: None,
        }),
    };
    SignalKind::Lifecycle(payload)
}

fn text_at(value: Option<&Value>, path: &[&str]) -> Option<String> {
    let mut v = value?;
    for key in path {
        v = v.get(*key)?;
    }
    v.as_str().map(str::to_string)
}

/// The prompt: the text of the user message's parts the user wrote
/// (OpenCode adds `synthetic` parts of its own).
fn prompt_text(output: &Output) -> Option<String> {
    let texts: Vec<&str> = output
        .parts
        .as_deref()?
        .iter()
        .filter(|p| p.kind.as_deref() == Some("text") && p.synthetic != Some(true))
        .filter_map(|p| p.text.as_deref())
        .collect();
    (!texts.is_empty()).then(|| texts.join("\n"))
}

fn tool_call(input: Option<Input>, args: Option<Json>) -> Option<ToolCall> {
    let input = input?;
    Some(ToolCall {
        call_id: owned(&input.call_id),
        tool_name: input.tool.as_ref()?.to_string(),
        input: args.or(input.args).map(normalize_input),
    })
}

/// `tool.execute.after`: the shell tool's exit code is in
/// `output.metadata.exit`; a non-zero one is a failure. OpenCode calls no
/// hook after a call that threw (a refused permission): its record says so.
fn tool_result(event: &str, mut wire: Wire, output: &Output) -> SignalKind {
    let exit_code = output
        .metadata
        .as_ref()
        .and_then(|m| m.get("exit"))
        .and_then(Value::as_i64);
    let Some(call) = tool_call(wire.input.take(), None) else {
        return SignalKind::unrecognized(event, "tool event without a tool name");
    };
    let outcome = match exit_code {
        Some(code) if code != 0 => Outcome::Failure,
        _ => Outcome::Success,
    };
    SignalKind::ToolCompleted(ToolResult {
        call,
        outcome,
        duration_ms: None,
        exit_code,
        error: None,
        content: wire.output.take(),
    })
}
