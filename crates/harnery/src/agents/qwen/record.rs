//! Qwen Code's own record: `<runtime dir>/projects/<project>/chats/<session
//! id>.jsonl`, one JSON object per line, appended (a resumed session
//! appends to the same file). Every line has `uuid`, `parentUuid`,
//! `sessionId`, `timestamp`, `type`, `cwd` and `version`; the message
//! shapes are Gemini's (`role`, `parts`).
//!
//! - `user`: the prompt's `text` parts ([`RecordItem::UserMessage`], with
//!   the line's session metadata).
//! - `assistant`: `text` parts are the message, `thought` parts reasoning,
//!   each `functionCall` a [`RecordItem::ToolStarted`] (its `id` is the
//!   model's call id, the hooks' `tool_call_id`); `usageMetadata` is the
//!   call's usage (see [`usage`]), keyed by the line's parent: the
//!   telemetry line that reported the same call first.
//! - `tool_result`: each `functionResponse` is a [`RecordItem::ToolFinished`]
//!   whose output is its `response`'s `output` (else its `error`, a failed
//!   or refused call's text); `toolCallResult` says whether it succeeded
//!   and, for the shell tool, its exit code.
//! - `system`: snapshots, the `ui_telemetry` that reports every model
//!   call and every subagent's tool call (see [`super::telemetry`]), and
//!   `custom_title`, the session's title ([`RecordItem::Title`]).
//!
//! Stateless: one line in, its items out.

use serde::Deserialize;
use serde_json::value::RawValue;

use super::telemetry::{self, uncached};
use crate::agents::record::{
    LineMark, RecordItem, RecordLine, RecordTitle, RecordedCall, RecordedResult, parse_frame,
    time_ns,
};
use crate::agents::result_text::FunctionResult;
use crate::agents::wire::{input_digest, normalize_input, parse_payload, raw_json};
use crate::contract::{
    Json, MessageAssistant, MessageUser, ReasoningRecorded, RecordAt, SessionMetadata,
    UsageReported,
};

/// One record line, as written.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Frame {
    uuid: Option<String>,
    parent_uuid: Option<String>,
    session_id: Option<String>,
    timestamp: Option<String>,
    #[serde(rename = "type")]
    kind: Option<String>,
    cwd: Option<String>,
    version: Option<String>,
    model: Option<String>,
    /// `real_user` on the user's own prompts; `system` on what Qwen writes
    /// as the user (a background task's completion notice).
    provenance: Option<String>,
    /// A subagent's line (in its own record): the subagent.
    agent_id: Option<String>,
    /// A `system` line's kind (`ui_telemetry`, `custom_title`, …).
    subtype: Option<String>,
    system_payload: Option<Box<RawValue>>,
    message: Option<Message>,
    #[serde(default, deserialize_with = "raw_json")]
    usage_metadata: Option<Json>,
    tool_call_result: Option<ToolCallResult>,
}

#[derive(Deserialize)]
struct Message {
    #[serde(default)]
    parts: Vec<Part>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Part {
    text: Option<String>,
    thought: Option<bool>,
    function_call: Option<FunctionCall>,
    function_response: Option<FunctionResponse>,
}

#[derive(Deserialize)]
struct FunctionCall {
    id: Option<String>,
    name: Option<String>,
    #[serde(default, deserialize_with = "raw_json")]
    args: Option<Json>,
}

#[derive(Deserialize)]
struct FunctionResponse {
    id: Option<String>,
    response: Option<FunctionResult>,
}

impl FunctionResponse {
    /// The text the model was given: the output, else the error.
    fn text(&self) -> Option<String> {
        self.response.as_ref()?.text()
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ToolCallResult {
    call_id: Option<String>,
    status: Option<String>,
    result_display: Option<Box<RawValue>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct UsageWire {
    prompt_token_count: Option<u64>,
    candidates_token_count: Option<u64>,
    cached_content_token_count: Option<u64>,
    thoughts_token_count: Option<u64>,
}

/// Read one line of the record, with the session it names and its mark.
pub(crate) fn read_marked(
    line: &[u8],
    at: &RecordAt,
) -> (RecordLine, Option<Option<String>>, LineMark) {
    let frame = match parse_frame::<Frame>(line) {
        Ok(frame) => frame,
        Err(unrecognized) => return (unrecognized, None, LineMark::None),
    };
    let items = match frame.kind.as_deref() {
        Some("user") if spoken_by_qwen(&frame) => Vec::new(),
        Some("user") => user(&frame, at),
        Some("assistant") if frame.agent_id.is_some() => subagent_said(&frame, at),
        Some("assistant") => match assistant(&frame, at) {
            Ok(items) => items,
            Err(reason) => vec![RecordItem::Unrecognized { reason }],
        },
        Some("tool_result") if frame.agent_id.is_some() => Vec::new(),
        Some("tool_result") => tool_results(&frame),
        Some("system") if frame.subtype.as_deref() == Some("custom_title") => {
            custom_title(frame.system_payload.as_deref())
        }
        Some("system") => match &frame.system_payload {
            Some(payload) => telemetry::items(payload, frame.uuid.as_deref(), at),
            None => Vec::new(),
        },
        Some(kind) => vec![unrecognized(format!("unknown line type {kind:?}"))],
        None => vec![unrecognized("line without a type".into())],
    };
    let line = RecordLine {
        time_unix_ns: time_ns(frame.timestamp.as_deref()),
        agent_id: frame.agent_id.clone(),
        native_turn_id: None,
        uuid: frame.uuid.as_deref().map(Box::from),
        parent_uuid: frame.parent_uuid.as_deref().map(Box::from),
        items,
    };
    (line, Some(frame.session_id), LineMark::None)
}

/// A `custom_title` line's title: `systemPayload.customTitle`, given by
/// the user (`titleSource: manual`, `/rename`) or made by Qwen (`auto`).
/// Qwen writes the title again every 32 KB of record (the session takes
/// only a change).
fn custom_title(payload: Option<&RawValue>) -> Vec<RecordItem> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Titled {
        custom_title: String,
        title_source: Option<String>,
    }
    let Some(payload) = payload else {
        return vec![unrecognized("custom_title without a systemPayload".into())];
    };
    match serde_json::from_str::<Titled>(payload.get()) {
        Ok(t) => vec![RecordItem::Title(RecordTitle {
            title: t.custom_title,
            field: "custom_title".to_string(),
            user_named: t.title_source.map(|s| s == "manual"),
        })],
        Err(e) => vec![unrecognized(format!("custom_title in no known shape: {e}"))],
    }
}

fn unrecognized(reason: String) -> RecordItem {
    RecordItem::Unrecognized { reason }
}

fn parts(frame: &Frame) -> &[Part] {
    frame.message.as_ref().map_or(&[], |m| m.parts.as_slice())
}

/// The text parts of a line (not its thoughts), joined by newlines.
fn text(parts: &[Part], thought: bool) -> Option<String> {
    let texts: Vec<&str> = parts
        .iter()
        .filter(|p| p.thought.unwrap_or(false) == thought)
        .filter_map(|p| p.text.as_deref())
        .collect();
    (!texts.is_empty()).then(|| texts.join("\n"))
}

fn metadata(frame: &Frame, at: &RecordAt, model: Option<&str>) -> RecordItem {
    RecordItem::Metadata(SessionMetadata {
        record: at.clone(),
        agent_version: frame.version.clone(),
        head_commit: None,
        cwd: frame.cwd.clone(),
        model: model.map(String::from),
    })
}

/// A user line Qwen wrote itself (a background task's completion notice,
/// `provenance: system`): no prompt of the user's, and no text a hook
/// prompt could repeat, so not a message that starts an interaction.
fn spoken_by_qwen(frame: &Frame) -> bool {
    frame
        .provenance
        .as_deref()
        .is_some_and(|p| p != "real_user")
}

/// A subagent's assistant line, in its own record: what it said and
/// thought. Its calls and its tokens are the session record's telemetry
/// (see [`super::telemetry`]), read there once.
fn subagent_said(frame: &Frame, at: &RecordAt) -> Vec<RecordItem> {
    let mut items = assistant(frame, at).unwrap_or_else(|reason| vec![unrecognized(reason)]);
    items.retain(|i| !matches!(i, RecordItem::Usage(_) | RecordItem::ToolStarted(_)));
    items
}

fn user(frame: &Frame, at: &RecordAt) -> Vec<RecordItem> {
    let Some(text) = text(parts(frame), false) else {
        return Vec::new();
    };
    vec![
        RecordItem::UserMessage(MessageUser {
            record: at.clone(),
            message_id: frame.uuid.clone(),
            text: Some(text),
            source: None,
        }),
        metadata(frame, at, None),
    ]
}

fn assistant(frame: &Frame, at: &RecordAt) -> Result<Vec<RecordItem>, String> {
    let parts = parts(frame);
    let calls: Vec<RecordedCall> = parts.iter().filter_map(call).collect();
    let mut items = Vec::new();
    if let Some(thought) = text(parts, true) {
        items.push(RecordItem::Reasoning(ReasoningRecorded {
            record: at.clone(),
            message_id: frame.uuid.clone(),
            text: Some(thought),
            continuation: None,
        }));
    }
    let said = text(parts, false);
    if said.is_some() || !calls.is_empty() {
        items.push(RecordItem::AssistantMessage(MessageAssistant {
            record: at.clone(),
            message_id: frame.uuid.clone(),
            model: frame.model.clone(),
            text: said,
            tool_call_ids: calls.iter().map(|c| c.tool_call_id.clone()).collect(),
        }));
    }
    if let Some(raw) = &frame.usage_metadata {
        items.push(usage(frame, raw, at)?);
    }
    items.extend(calls.into_iter().map(RecordItem::ToolStarted));
    Ok(items)
}

fn call(part: &Part) -> Option<RecordedCall> {
    let call = part.function_call.as_ref()?;
    Some(RecordedCall {
        tool_call_id: call.id.clone()?,
        tool_name: call.name.clone()?,
        input_digest: input_digest(call.args.clone().map(normalize_input).as_ref()),
        turn_id: None,
    })
}

/// One model call's usage. Qwen writes the OpenAI-compatible figures in
/// Gemini's names: `promptTokenCount` is the whole prompt, its cached part
/// included (`cachedContentTokenCount`); `candidatesTokenCount` is the
/// output, reasoning (`thoughtsTokenCount`) included. The ledger's input is
/// the uncached part; the figures as written are kept in `raw`. Keyed by
/// the line's parent, the `api_response` telemetry line of the same call
/// (see [`super::telemetry`]): of the two, the finalizer keeps the first.
fn usage(frame: &Frame, raw: &Json, at: &RecordAt) -> Result<RecordItem, String> {
    let wire: UsageWire = serde_json::from_str(raw.as_str())
        .map_err(|e| format!("usageMetadata in no known shape: {e}"))?;
    Ok(RecordItem::Usage(UsageReported {
        record: at.clone(),
        message_id: frame.parent_uuid.clone(),
        model: frame.model.clone(),
        input_tokens: uncached(wire.prompt_token_count, wire.cached_content_token_count),
        output_tokens: wire.candidates_token_count,
        cache_read_tokens: wire.cached_content_token_count,
        cache_write_tokens: None,
        cost: None,
        duration_ms: None,
        time_to_first_token_ms: None,
        reasoning_tokens: wire.thoughts_token_count,
        raw: Some(raw.clone()),
        copied_from_session: None,
    }))
}

/// Each answered call of a `tool_result` line; the line's `toolCallResult`
/// gives the outcome of the call it names.
fn tool_results(frame: &Frame) -> Vec<RecordItem> {
    parts(frame)
        .iter()
        .filter_map(|p| p.function_response.as_ref())
        .filter_map(|response| Some((response.id.clone()?, response.text())))
        .map(|(id, output)| {
            let result = frame
                .tool_call_result
                .as_ref()
                .filter(|r| r.call_id.as_deref() == Some(id.as_str()));
            RecordItem::ToolFinished(RecordedResult {
                success: result
                    .and_then(|r| r.status.as_deref())
                    .map(|s| s == "success"),
                exit_code: result.and_then(exit_code),
                tool_call_id: id,
                turn_id: None,
                output,
            })
        })
        .collect()
}

/// A shell call's exit code (`resultDisplay.exitCode`; other tools'
/// displays are text or have none).
fn exit_code(result: &ToolCallResult) -> Option<i64> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Display {
        exit_code: Option<i64>,
    }
    let raw = result.result_display.as_ref()?.get();
    raw.starts_with('{')
        .then(|| serde_json::from_str::<Display>(raw).ok()?.exit_code)
        .flatten()
}

/// The session a record line names (`sessionId`, on every line).
pub(crate) fn line_session(line: &[u8]) -> Option<String> {
    #[derive(Deserialize)]
    struct Named {
        #[serde(rename = "sessionId")]
        session_id: Option<String>,
    }
    memchr::memmem::find(line, b"\"sessionId\"")?;
    parse_payload::<Named>(line).ok()?.session_id
}
