//! Qwen Code's hook dialect: Claude Code's snake_case shape (the event in
//! `hook_event_name`, the turn in `prompt_id`), with an ISO `timestamp` on
//! every payload and two ids on each tool event.
//!
//! What the real client (0.24.4) sends, and how it is read here:
//!
//! - `PreToolUse`, `PostToolUse`, `PostToolUseFailure` carry `tool_use_id`
//!   (Qwen's own `toolu_<ms>_<suffix>`, written nowhere else) and
//!   `tool_call_id` (the model's call id, which Qwen's record also keys
//!   its calls and results by). `PostToolBatch` carries the model's id in
//!   both fields. The call id here is `tool_call_id`, so that pre, post,
//!   batch and record all name a call the same way; `tool_use_id` stands in
//!   only when a payload lacks it.
//! - `UserPromptSubmit` fires for the user's prompt (with `prompt` and
//!   `submitted_prompt`) and again, inside the same turn (same
//!   `prompt_id`), each time tool results go back to the model: `prompt` is
//!   empty and `submitted_prompt` absent. That second kind is no prompt of
//!   the user's: it is a notice (kind `UserPromptSubmit`) in the open turn.
//! - `MessageDisplay` names its text `displayed_text` and its end
//!   `is_final`; `StopFailure` is a turn that ended in an error.
//! - The events harnery has no payload of their own for are notices:
//!   [`Notification`] with the event's name as its kind and its subject as
//!   the message (`InstructionsLoaded`: the file; `UserPromptExpansion`:
//!   the command; `SessionDelete`: the deleted session; `PermissionDenied`:
//!   the tool and why; `TodoCreated`, `TodoCompleted`: the item). They are
//!   understood, so they do not make a session audit-only as an
//!   unrecognized signal would (`InstructionsLoaded` opens every run).
//!
//! Stateless: one payload in, one [`Normalized`] out; [`convert`] is the
//! one place that turns the wire into harnery's terms.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::Value;

use crate::agents::record::NamedRecord;
use crate::agents::signal::{BatchedCall, Normalized, SignalKind, ToolCall, ToolResult, TurnEnd};
use crate::agents::wire::{normalize_input, optional_str, owned, parse_payload, raw_json};
use crate::contract::{
    CompactionCompleted, CompactionStarted, Json, MessageDisplayed, Notification, Outcome, Payload,
    PermissionRequested, PromptSubmitted, SessionEnded, SessionStarted, TimeSource,
};

/// One Qwen Code hook payload, as sent. Unknown fields are ignored (the
/// raw bytes are kept anyway).
#[derive(Debug, Deserialize)]
struct Wire<'a> {
    #[serde(default, borrow, deserialize_with = "optional_str")]
    hook_event_name: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "optional_str")]
    timestamp: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "optional_str")]
    prompt_id: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "optional_str")]
    transcript_path: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "optional_str")]
    cwd: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "optional_str")]
    source: Option<Cow<'a, str>>,
    model: Option<Value>,
    #[serde(default, borrow, deserialize_with = "optional_str")]
    prompt: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "optional_str")]
    submitted_prompt: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "optional_str")]
    tool_name: Option<Cow<'a, str>>,
    #[serde(default, deserialize_with = "raw_json")]
    tool_input: Option<Json>,
    #[serde(default, deserialize_with = "raw_json")]
    tool_response: Option<Json>,
    #[serde(default, borrow, deserialize_with = "optional_str")]
    tool_use_id: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "optional_str")]
    tool_call_id: Option<Cow<'a, str>>,
    duration_ms: Option<u64>,
    error: Option<Value>,
    is_interrupt: Option<bool>,
    tool_calls: Option<Vec<WireBatchCall<'a>>>,
    #[serde(default, borrow, deserialize_with = "optional_str")]
    reason: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "optional_str")]
    message: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "optional_str")]
    notification_type: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "optional_str")]
    message_id: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "optional_str")]
    displayed_text: Option<Cow<'a, str>>,
    is_final: Option<bool>,
    #[serde(default, borrow, deserialize_with = "optional_str")]
    agent_id: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "optional_str")]
    agent_type: Option<Cow<'a, str>>,
    trigger: Option<Value>,
    #[serde(default, borrow, deserialize_with = "optional_str")]
    compact_summary: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "optional_str")]
    file_path: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "optional_str")]
    command_name: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "optional_str")]
    deleted_session_id: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "optional_str")]
    todo_content: Option<Cow<'a, str>>,
    background_tasks: Option<Vec<WireTask<'a>>>,
}

/// One of `Stop`'s `background_tasks`: a background subagent, by its
/// agent id.
#[derive(Debug, Deserialize)]
struct WireTask<'a> {
    #[serde(default, borrow, deserialize_with = "optional_str")]
    id: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "optional_str")]
    status: Option<Cow<'a, str>>,
}

#[derive(Debug, Deserialize)]
struct WireBatchCall<'a> {
    #[serde(default, borrow, deserialize_with = "optional_str")]
    tool_name: Option<Cow<'a, str>>,
    #[serde(default, deserialize_with = "raw_json")]
    tool_input: Option<Json>,
    #[serde(default, borrow, deserialize_with = "optional_str")]
    tool_use_id: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "optional_str")]
    tool_call_id: Option<Cow<'a, str>>,
    #[serde(default, deserialize_with = "raw_json")]
    tool_response: Option<Json>,
}

/// Read one Qwen Code payload received at `received_unix_ns` (`argv_event`:
/// the event its hook's command line names, for a payload that names
/// none); with `record`, also the record file it names (`transcript_path`).
pub(crate) fn normalize_naming(
    argv_event: Option<&str>,
    payload: &[u8],
    received_unix_ns: i64,
    record: bool,
) -> (Normalized, NamedRecord) {
    match parse_payload::<Wire>(payload) {
        Ok(wire) => {
            let named = match record {
                true => NamedRecord::Read(owned(&wire.transcript_path).filter(|p| !p.is_empty())),
                false => NamedRecord::Unread,
            };
            (convert(argv_event, wire, received_unix_ns), named)
        }
        Err(err) => (
            Normalized::received(SignalKind::malformed(None, &err), received_unix_ns),
            NamedRecord::Unread,
        ),
    }
}

/// The one conversion from the wire into harnery's terms.
fn convert(argv_event: Option<&str>, mut wire: Wire, received_unix_ns: i64) -> Normalized {
    let agent_time = wire
        .timestamp
        .as_deref()
        .and_then(crate::clock::parse_rfc3339_ns);
    let name = wire.hook_event_name.take();
    let event = name.as_deref().or(argv_event).unwrap_or("");
    // A subagent's start and stop are the parent's words about it; its
    // own tool events carry its `agent_id`.
    let agent_id = match event {
        "SubagentStart" | "SubagentStop" => None,
        _ => owned(&wire.agent_id),
    };
    let kind = kind_of(event, &mut wire);
    Normalized {
        time_unix_ns: agent_time.unwrap_or(received_unix_ns),
        time_source: match agent_time {
            Some(_) => TimeSource::Agent,
            None => TimeSource::Received,
        },
        agent_id,
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
        "UserPromptSubmit" => prompt(event, wire),
        "Stop" => turn_end("stop", wire),
        "StopFailure" => turn_end("error", wire),
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

/// The user's prompt; or Qwen's second `UserPromptSubmit` of a turn, the
/// tool results going back to the model (an empty `prompt`, no
/// `submitted_prompt`), which is a notice.
fn prompt(event: &str, wire: &Wire) -> SignalKind {
    if wire.submitted_prompt.is_none() && wire.prompt.as_deref() == Some("") {
        return SignalKind::Lifecycle(Payload::Notification(Notification {
            kind: Some(event.to_string()),
            message: Some("tool results sent back to the model".to_string()),
        }));
    }
    SignalKind::PromptSubmitted(PromptSubmitted {
        prompt: owned(&wire.prompt),
        transformed: false,
    })
}

/// A turn's end, with the background subagents still running (their
/// spans are not the ending turn's to sweep).
fn turn_end(reason: &str, wire: &Wire) -> SignalKind {
    let tasks = wire.background_tasks.as_deref().unwrap_or_default();
    let running_agents = tasks
        .iter()
        .filter(|t| t.status.as_deref() == Some("running"))
        .filter_map(|t| owned(&t.id))
        .collect();
    SignalKind::TurnEnded(TurnEnd {
        stop_reason: Some(reason.to_string()),
        running_agents,
    })
}

fn lifecycle(event: &str, wire: &mut Wire) -> SignalKind {
    let payload = match event {
        "Notification" => Payload::Notification(Notification {
            kind: owned(&wire.notification_type),
            message: owned(&wire.message),
        }),
        "MessageDisplay" => Payload::MessageDisplayed(MessageDisplayed {
            message_id: owned(&wire.message_id),
            text: owned(&wire.displayed_text),
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
        _ => match notice(event, wire) {
            Some(notice) => Payload::Notification(notice),
            None => return SignalKind::unrecognized(event, "unknown_event"),
        },
    };
    SignalKind::Lifecycle(payload)
}

/// An event of Qwen's that only tells something, as a notification of
/// its own kind (see the module doc); `None` for an event Qwen 0.24.4
/// does not have.
fn notice(event: &str, wire: &Wire) -> Option<Notification> {
    let message = match event {
        "InstructionsLoaded" => owned(&wire.file_path),
        "UserPromptExpansion" => owned(&wire.command_name),
        "SessionDelete" => owned(&wire.deleted_session_id),
        "PermissionDenied" => {
            let tool = owned(&wire.tool_name).unwrap_or_default();
            Some(match owned(&wire.reason) {
                Some(why) => format!("{tool}: {why}"),
                None => tool,
            })
        }
        "TodoCreated" | "TodoCompleted" => owned(&wire.todo_content),
        _ => return None,
    };
    Some(Notification {
        kind: Some(event.to_string()),
        message,
    })
}

/// The call id of a tool event: the model's (`tool_call_id`), which the
/// batch and the record use too; Qwen's own `tool_use_id` only without it.
fn call_id(model: &Option<Cow<'_, str>>, own: &Option<Cow<'_, str>>) -> Option<String> {
    owned(model)
        .or_else(|| owned(own))
        .filter(|id| !id.is_empty())
}

fn tool_call(wire: &mut Wire) -> Option<ToolCall> {
    Some(ToolCall {
        call_id: call_id(&wire.tool_call_id, &wire.tool_use_id),
        tool_name: wire.tool_name.as_ref()?.to_string(),
        input: wire.tool_input.take().map(normalize_input),
    })
}

fn tool_result(event: &str, wire: &mut Wire) -> SignalKind {
    let Some(call) = tool_call(wire) else {
        return SignalKind::unrecognized(event, "tool event without tool_name");
    };
    let outcome = match (
        wire.is_interrupt == Some(true),
        event == "PostToolUseFailure",
    ) {
        (true, _) => Outcome::Interrupted,
        (false, true) => Outcome::Failure,
        (false, false) => Outcome::Success,
    };
    let error = text_of(&wire.error);
    SignalKind::ToolCompleted(ToolResult {
        call,
        outcome,
        duration_ms: wire.duration_ms,
        exit_code: error.as_deref().and_then(shell_exit_code),
        error,
        content: wire.tool_response.take(),
    })
}

/// The exit code a failed shell call states in its error text (`Exit
/// Code: 2`); hooks carry it nowhere else.
fn shell_exit_code(text: &str) -> Option<i64> {
    let rest = &text[text.find("\nExit Code: ")? + "\nExit Code: ".len()..];
    rest.lines().next()?.trim().parse().ok()
}

fn batch(wire: &mut Wire) -> Vec<BatchedCall> {
    let calls = wire.tool_calls.take().unwrap_or_default();
    calls
        .into_iter()
        .map(|c| BatchedCall {
            call: ToolCall {
                call_id: call_id(&c.tool_call_id, &c.tool_use_id),
                tool_name: owned(&c.tool_name).unwrap_or_default(),
                input: c.tool_input.map(normalize_input),
            },
            response: c.tool_response,
            // Qwen's response is an object of parts; its text reaches the
            // ledger from its `PostToolUse` and its record.
            text: None,
        })
        .collect()
}

fn subagent(event: &str, wire: &Wire) -> SignalKind {
    SignalKind::subagent(event, owned(&wire.agent_id), owned(&wire.agent_type))
}

fn text_of(value: &Option<Value>) -> Option<String> {
    match value {
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Object(map)) => map.get("message").and_then(Value::as_str).map(String::from),
        Some(other) => Some(other.to_string()),
        None => None,
    }
}
