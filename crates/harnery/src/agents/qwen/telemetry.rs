//! The `ui_telemetry` lines of Qwen Code's record (`type: system`), the
//! only place the session's own record speaks of its subagents' work:
//!
//! - `qwen-code.api_response`, one per model call, the main agent's and
//!   every subagent's alike (a subagent's `assistant` lines go to a record
//!   of its own, `subagents/<session>/agent-<id>.jsonl`, which no hook
//!   names). Each is that call's [`RecordItem::Usage`], keyed by the line's
//!   `uuid`. A main-agent call also has an `assistant` line whose
//!   `usageMetadata` repeats the figures and whose `parentUuid` is this
//!   line: the record reader keys that usage by its parent, so the
//!   finalizer keeps one of the two.
//! - `qwen-code.tool_call`, one per finished tool call. A subagent's (its
//!   `prompt_id` is `<session>#<agent id>#<n>`, the main agent's
//!   `<session>########<n>`) is that call's start and finish, so that the
//!   subagent's hook span joins it; the main agent's calls are read from
//!   their `functionCall` and `tool_result` lines instead.

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::agents::record::{RecordItem, RecordedCall, RecordedResult, millis};
use crate::agents::wire::{input_digest, normalize_input, raw_json};
use crate::contract::{Json, RecordAt, UsageReported};

/// A `system` line's payload, read for its telemetry event's name alone
/// first: a snapshot, or an event this reader does not use, is nothing,
/// whatever else it holds.
#[derive(Deserialize)]
struct Named {
    #[serde(rename = "uiEvent")]
    ui_event: Option<EventName>,
}

#[derive(Deserialize)]
struct EventName {
    #[serde(rename = "event.name")]
    name: Option<String>,
}

/// The payload of an event this reader uses.
#[derive(Deserialize)]
struct Payload {
    #[serde(rename = "uiEvent")]
    ui_event: UiEvent,
}

#[derive(Deserialize)]
struct UiEvent {
    model: Option<String>,
    duration_ms: Option<f64>,
    ttft_ms: Option<f64>,
    input_token_count: Option<u64>,
    output_token_count: Option<u64>,
    cached_content_token_count: Option<u64>,
    thoughts_token_count: Option<u64>,
    prompt_id: Option<String>,
    call_id: Option<String>,
    function_name: Option<String>,
    #[serde(default, deserialize_with = "raw_json")]
    function_args: Option<Json>,
    success: Option<bool>,
}

/// The telemetry events this reader uses.
enum Used {
    ModelCall,
    ToolCall,
}

/// What a `system` line with `payload` (its `systemPayload`, as written)
/// says (`uuid`: the line's own).
pub(super) fn items(payload: &RawValue, uuid: Option<&str>, at: &RecordAt) -> Vec<RecordItem> {
    let named = serde_json::from_str::<Named>(payload.get()).ok();
    let name = named.and_then(|n| n.ui_event?.name).unwrap_or_default();
    let used = match name.as_str() {
        "qwen-code.api_response" => Used::ModelCall,
        "qwen-code.tool_call" => Used::ToolCall,
        _ => return Vec::new(),
    };
    let event = match serde_json::from_str::<Payload>(payload.get()) {
        Ok(p) => p.ui_event,
        Err(e) => {
            let reason = format!("{name} telemetry in no known shape: {e}");
            return vec![RecordItem::Unrecognized { reason }];
        }
    };
    match used {
        Used::ModelCall => vec![usage(&event, uuid, at)],
        Used::ToolCall if subagent_of(event.prompt_id.as_deref()).is_some() => {
            subagent_call(&event)
        }
        Used::ToolCall => Vec::new(),
    }
}

/// The subagent a prompt id belongs to: `<session>#<agent id>#<n>`; the
/// main agent's `<session>########<n>` names none.
fn subagent_of(prompt_id: Option<&str>) -> Option<&str> {
    let mut parts = prompt_id?.split('#');
    let (_session, agent, _n) = (parts.next()?, parts.next()?, parts.next()?);
    (parts.next().is_none() && !agent.is_empty()).then_some(agent)
}

/// One model call's usage; the input without its cached part (Qwen's
/// `input_token_count` includes it), the output with its reasoning.
fn usage(event: &UiEvent, uuid: Option<&str>, at: &RecordAt) -> RecordItem {
    let cached = event.cached_content_token_count;
    let raw = serde_json::json!({
        "input_token_count": event.input_token_count,
        "output_token_count": event.output_token_count,
        "cached_content_token_count": cached,
        "thoughts_token_count": event.thoughts_token_count,
    });
    RecordItem::Usage(UsageReported {
        record: at.clone(),
        message_id: uuid.map(String::from),
        model: event.model.clone(),
        input_tokens: uncached(event.input_token_count, cached),
        output_tokens: event.output_token_count,
        cache_read_tokens: cached,
        cache_write_tokens: None,
        cost: None,
        duration_ms: event.duration_ms.and_then(millis),
        time_to_first_token_ms: event.ttft_ms.and_then(millis),
        reasoning_tokens: event.thoughts_token_count,
        raw: Some(Json::from_value(&raw)),
        copied_from_session: None,
    })
}

/// A prompt's tokens without its cached part: Qwen, as the OpenAI API it
/// speaks, counts the cached tokens into the prompt; the ledger's input
/// is the uncached part.
pub(super) fn uncached(prompt: Option<u64>, cached: Option<u64>) -> Option<u64> {
    prompt.map(|n| n.saturating_sub(cached.unwrap_or(0)))
}

/// A subagent's finished tool call: its start and its end.
fn subagent_call(event: &UiEvent) -> Vec<RecordItem> {
    let (Some(id), Some(name)) = (&event.call_id, &event.function_name) else {
        return Vec::new();
    };
    let args = event.function_args.clone().map(normalize_input);
    vec![
        RecordItem::ToolStarted(RecordedCall {
            tool_call_id: id.clone(),
            tool_name: name.clone(),
            input_digest: input_digest(args.as_ref()),
            turn_id: None,
        }),
        RecordItem::ToolFinished(RecordedResult {
            tool_call_id: id.clone(),
            success: event.success,
            exit_code: None,
            turn_id: None,
            output: None,
        }),
    ]
}

#[cfg(test)]
mod tests {
    use super::subagent_of;

    #[test]
    fn a_subagents_prompt_id_names_it_and_the_main_agents_names_none() {
        let s = "8bda782e-6f65-43bb-b2c3-5c620d9db539";
        assert_eq!(
            subagent_of(Some(&format!("{s}#general-purpose-call_1#0"))),
            Some("general-purpose-call_1")
        );
        assert_eq!(subagent_of(Some(&format!("{s}########0"))), None);
        assert_eq!(subagent_of(Some(s)), None);
        assert_eq!(subagent_of(None), None);
    }
}
