//! Codex's own record: the rollout,
//! `<codex home>/sessions/YYYY/MM/DD/rollout-<local time>-<session id>.jsonl`,
//! one `{"timestamp", "ordinal", "type", "payload"}` line at a time,
//! appended to (a resume appends to the same file, its ordinals going on).
//!
//! The envelope is read first and the payload only for the types that
//! carry something, so a field added to a skipped type cannot make it
//! unrecognized. A line's native turn is the `turn_id` it names (its own,
//! or `internal_chat_message_metadata_passthrough.turn_id` on a response
//! item): the very id Codex's hooks send.
//!
//! - `session_meta` is metadata (its `cli_version`, `cwd`, and the git
//!   commit when Codex ran in a repository); `turn_context` is metadata
//!   too, with the turn's `model`.
//! - `event_msg` `item_completed` with a `UserMessage` item is what the
//!   user typed (the `response_item` user messages also hold the context
//!   Codex injects, so they are not read as the user's words).
//! - `response_item` `message` from the assistant is its message,
//!   `reasoning` its reasoning (summary text; `encrypted_content` kept as
//!   the continuation), `function_call` / `custom_tool_call` a tool call
//!   (`call_id` is the hooks' `tool_use_id`), `function_call_output` /
//!   `custom_tool_call_output` its result: its text (a string, or its
//!   `input_text` content items) is the output, with the exit code that
//!   the unified-exec output states (`Process exited with code N`).
//! - `token_usage_record` is one model response's usage, keyed by its
//!   `response_id`. Codex's `input_tokens` include the cached ones and are
//!   reduced by them here; `output_tokens` include the reasoning ones, which
//!   are also reported apart. The line names no model: the turn's
//!   `turn_context` does. `event_msg` `token_count` restates the same
//!   numbers as running totals and is not read.
//! - `event_msg` `task_started` / `task_complete` are the turn's start and
//!   end; `turn_aborted` (the user interrupted it) is its end too, and the
//!   interrupted call's output (`aborted by user`) its unsuccessful end.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::agents::record::{
    LineMark, RecordItem, RecordLine, RecordedCall, RecordedResult, parse_frame, time_ns,
};
use crate::agents::result_text::result_text;
use crate::agents::wire::{input_digest, normalize_input, parse_payload, raw_json};
use crate::contract::{
    Json, MessageAssistant, MessageUser, ReasoningRecorded, RecordAt, SessionMetadata,
    UsageReported,
};

/// Line types.
mod kind {
    pub(crate) const SESSION_META: &str = "session_meta";
    pub(crate) const TURN_CONTEXT: &str = "turn_context";
    pub(crate) const RESPONSE_ITEM: &str = "response_item";
    pub(crate) const EVENT_MSG: &str = "event_msg";
    pub(crate) const TOKEN_USAGE: &str = "token_usage_record";
}

/// Line types that carry nothing for the ledger.
const SILENT_TYPES: &[&str] = &["world_state", "compacted"];

/// `event_msg` types that carry nothing for the ledger: running totals,
/// settings, and the mirrored forms of what other lines hold.
const SILENT_EVENTS: &[&str] = &[
    "token_count",
    "thread_settings_applied",
    "agent_message",
    "user_message",
    "agent_reasoning",
    "exec_command_begin",
    "exec_command_end",
    "turn_diff",
    "item_started",
];

/// `item_completed` items that restate what a response item holds (the
/// command's exit code is read from the call's output, which every tool
/// has, so that each call finishes once).
const SILENT_ITEMS: &[&str] = &[
    "AgentMessage",
    "Reasoning",
    "CommandExecution",
    "CollabAgentToolCall",
];

/// The `event_msg`s that end a turn: done, or interrupted (Ctrl-C).
const TASK_COMPLETE: &str = "task_complete";
const TURN_ABORTED: &str = "turn_aborted";

/// One rollout line with its payload left as text.
#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(borrow, default)]
    payload: Option<&'a RawValue>,
    #[serde(borrow, default)]
    timestamp: Option<Cow<'a, str>>,
}

/// The `type` of a payload (response items and `event_msg`s).
#[derive(Deserialize)]
struct Typed<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
}

/// `session_id` is the session's; a subagent's rollout (its own `id`, a
/// thread of the session) names its parent's there.
#[derive(Deserialize)]
struct MetaWire {
    id: Option<String>,
    session_id: Option<String>,
    cli_version: Option<String>,
    cwd: Option<String>,
    git: Option<GitWire>,
}

#[derive(Deserialize)]
struct GitWire {
    commit_hash: Option<String>,
}

#[derive(Deserialize)]
struct TurnContextWire {
    turn_id: Option<String>,
    cwd: Option<String>,
    model: Option<String>,
}

/// A response item: what the model said or did, as sent to it again.
#[derive(Deserialize)]
struct ItemWire<'a> {
    id: Option<String>,
    role: Option<String>,
    #[serde(borrow, default)]
    content: Option<&'a RawValue>,
    #[serde(borrow, default)]
    summary: Option<&'a RawValue>,
    encrypted_content: Option<String>,
    call_id: Option<String>,
    name: Option<String>,
    arguments: Option<String>,
    input: Option<String>,
    #[serde(borrow, default)]
    output: Option<&'a RawValue>,
    internal_chat_message_metadata_passthrough: Option<Passthrough>,
}

#[derive(Deserialize)]
struct Passthrough {
    turn_id: Option<String>,
}

#[derive(Deserialize)]
struct EventWire<'a> {
    turn_id: Option<String>,
    #[serde(borrow, default)]
    item: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct CompletedWire {
    #[serde(rename = "type")]
    kind: Option<String>,
    id: Option<String>,
    #[serde(default)]
    content: Vec<TextPart>,
}

/// A content part; only its text is read.
#[derive(Deserialize)]
struct TextPart {
    text: Option<String>,
}

#[derive(Deserialize)]
struct TokenUsageWire {
    turn_id: Option<String>,
    response_id: Option<String>,
    #[serde(default, deserialize_with = "raw_json")]
    usage: Option<Json>,
}

#[derive(Deserialize)]
struct UsageWire {
    input_tokens: Option<u64>,
    cached_input_tokens: Option<u64>,
    cache_write_input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    reasoning_output_tokens: Option<u64>,
}

type Marked = (RecordLine, Option<Option<String>>, LineMark);

/// Read one line of the rollout, with the session it names (only
/// `session_meta` names one) and what it is to a turn's end.
pub(crate) fn read_marked(line: &[u8], at: &RecordAt) -> Marked {
    let envelope: Envelope = match parse_frame(line) {
        Ok(envelope) => envelope,
        Err(unrecognized) => return (unrecognized, None, LineMark::None),
    };
    let kind = envelope.kind.as_ref();
    if SILENT_TYPES.contains(&kind) {
        return (
            line_of(&envelope, None, Vec::new()),
            Some(None),
            LineMark::None,
        );
    }
    let Some(payload) = envelope.payload.map(RawValue::get) else {
        let why = format!("{kind} without payload");
        return (RecordLine::unrecognized(why), Some(None), LineMark::None);
    };
    let read = match kind {
        kind::SESSION_META => session_meta(payload, at),
        kind::TURN_CONTEXT => turn_context(payload, at),
        kind::RESPONSE_ITEM => response_item(payload, at),
        kind::EVENT_MSG => event(payload, at),
        kind::TOKEN_USAGE => usage(payload, at),
        other => Err(format!("unknown line type {other:?}")),
    };
    match read {
        Ok((turn, items, session, mark)) => (line_of(&envelope, turn, items), Some(session), mark),
        Err(why) => (RecordLine::unrecognized(why), None, LineMark::None),
    }
}

/// What one line says: its turn, its items, the session it names, its
/// mark; or why it is in no known shape.
type Read = Result<(Option<String>, Vec<RecordItem>, Option<String>, LineMark), String>;

fn parse<'a, T: Deserialize<'a>>(what: &str, payload: &'a str) -> Result<T, String> {
    serde_json::from_str(payload).map_err(|e| format!("{what}: {e}"))
}

fn line_of(envelope: &Envelope, turn: Option<String>, items: Vec<RecordItem>) -> RecordLine {
    RecordLine {
        time_unix_ns: time_ns(envelope.timestamp.as_deref()),
        native_turn_id: turn,
        items,
        ..RecordLine::empty()
    }
}

fn session_meta(payload: &str, at: &RecordAt) -> Read {
    let meta: MetaWire = parse(kind::SESSION_META, payload)?;
    let item = RecordItem::Metadata(SessionMetadata {
        record: at.clone(),
        agent_version: meta.cli_version,
        head_commit: meta.git.and_then(|g| g.commit_hash),
        cwd: meta.cwd,
        model: None,
    });
    Ok((
        None,
        vec![item],
        meta.session_id.or(meta.id),
        LineMark::None,
    ))
}

fn turn_context(payload: &str, at: &RecordAt) -> Read {
    let context: TurnContextWire = parse(kind::TURN_CONTEXT, payload)?;
    let item = RecordItem::Metadata(SessionMetadata {
        record: at.clone(),
        agent_version: None,
        head_commit: None,
        cwd: context.cwd,
        model: context.model,
    });
    Ok((context.turn_id, vec![item], None, LineMark::None))
}

fn response_item(payload: &str, at: &RecordAt) -> Read {
    let typed: Typed = parse(kind::RESPONSE_ITEM, payload)?;
    let item: ItemWire = parse(kind::RESPONSE_ITEM, payload)?;
    let turn = item
        .internal_chat_message_metadata_passthrough
        .as_ref()
        .and_then(|p| p.turn_id.clone());
    let items = match typed.kind.as_deref().unwrap_or("") {
        // The user's words come from `item_completed` (see the module doc).
        "message" if item.role.as_deref() == Some("assistant") => vec![assistant(&item, at)],
        "message" => Vec::new(),
        "reasoning" => vec![reasoning(&item, at)],
        "function_call" => call(&item, item.arguments.as_deref(), &turn),
        "custom_tool_call" => call(&item, item.input.as_deref(), &turn),
        "function_call_output" | "custom_tool_call_output" => finished(&item, &turn),
        other => return Err(format!("unknown response item {other:?}")),
    };
    Ok((turn, items, None, LineMark::None))
}

/// The texts of a list of content parts, joined by newlines (none: no
/// text).
fn joined_text(parts: Option<&RawValue>) -> Option<String> {
    let parts: Vec<TextPart> = serde_json::from_str(parts?.get()).ok()?;
    let texts: Vec<String> = parts.into_iter().filter_map(|p| p.text).collect();
    (!texts.is_empty()).then(|| texts.join("\n"))
}

fn assistant(item: &ItemWire, at: &RecordAt) -> RecordItem {
    RecordItem::AssistantMessage(MessageAssistant {
        record: at.clone(),
        message_id: item.id.clone(),
        model: None,
        text: joined_text(item.content),
        tool_call_ids: Vec::new(),
    })
}

fn reasoning(item: &ItemWire, at: &RecordAt) -> RecordItem {
    RecordItem::Reasoning(ReasoningRecorded {
        record: at.clone(),
        message_id: item.id.clone(),
        text: joined_text(item.summary),
        continuation: item.encrypted_content.clone(),
    })
}

/// A tool call; its arguments are JSON text (a function call) or the
/// tool's own input text (a custom tool such as `apply_patch`).
fn call(item: &ItemWire, arguments: Option<&str>, turn: &Option<String>) -> Vec<RecordItem> {
    let Some(tool_call_id) = item.call_id.clone() else {
        return Vec::new();
    };
    let input = arguments.map(|text| match Json::parse(text) {
        Ok(json) => normalize_input(json),
        Err(_) => Json::from_value(&serde_json::Value::String(text.to_string())),
    });
    vec![RecordItem::ToolStarted(RecordedCall {
        tool_call_id,
        tool_name: item.name.clone().unwrap_or_default(),
        input_digest: input_digest(input.as_ref()),
        turn_id: turn.clone(),
    })]
}

/// A tool call's output. Unified exec states how its process ended in the
/// text it hands the model (`Process exited with code N`); a process still
/// running, and every other tool, states no exit code.
fn finished(item: &ItemWire, turn: &Option<String>) -> Vec<RecordItem> {
    let Some(tool_call_id) = item.call_id.clone() else {
        return Vec::new();
    };
    let text = item.output.and_then(output_text);
    let exit_code = text.as_deref().and_then(exit_code_in);
    let aborted = text.as_deref().is_some_and(|t| t.ends_with(ABORTED));
    vec![RecordItem::ToolFinished(RecordedResult {
        tool_call_id,
        success: exit_code.map(|code| code == 0).or(aborted.then_some(false)),
        exit_code,
        turn_id: turn.clone(),
        output: text,
    })]
}

/// An output's text: a string, or its `input_text` content items joined
/// by newlines (an image item is no text).
fn output_text(raw: &RawValue) -> Option<String> {
    let mut de = serde_json::Deserializer::from_str(raw.get());
    result_text(&mut de).ok().flatten()
}

/// How Codex ends the output of a call the user interrupted.
const ABORTED: &str = "\naborted by user";

/// The exit code in unified exec's output header: the lines before
/// `Output:` hold `Process exited with code N`.
pub(crate) fn exit_code_in(text: &str) -> Option<i64> {
    text.lines()
        .take_while(|line| *line != "Output:")
        .find_map(|line| line.strip_prefix("Process exited with code "))
        .and_then(|code| code.trim().parse().ok())
}

fn event(payload: &str, at: &RecordAt) -> Read {
    let typed: Typed = parse(kind::EVENT_MSG, payload)?;
    let kind = typed.kind.as_deref().unwrap_or("");
    if SILENT_EVENTS.contains(&kind) {
        return Ok((None, Vec::new(), None, LineMark::None));
    }
    let event: EventWire = parse(kind, payload)?;
    let turn = event.turn_id.clone();
    let (items, mark) = match kind {
        "task_started" => (
            turn_item(&turn, |turn_id| RecordItem::TurnStarted { turn_id }),
            LineMark::None,
        ),
        TASK_COMPLETE | TURN_ABORTED => (
            turn_item(&turn, |turn_id| RecordItem::TurnEnded { turn_id }),
            LineMark::TurnEnd,
        ),
        "item_completed" => (completed(event.item, at)?, LineMark::None),
        other => return Err(format!("unknown event_msg {other:?}")),
    };
    Ok((turn, items, None, mark))
}

fn turn_item(turn: &Option<String>, item: impl Fn(String) -> RecordItem) -> Vec<RecordItem> {
    turn.clone().map(item).into_iter().collect()
}

fn completed(item: Option<&RawValue>, at: &RecordAt) -> Result<Vec<RecordItem>, String> {
    let Some(item) = item else {
        return Err("item_completed without item".into());
    };
    let item: CompletedWire = parse("item_completed", item.get())?;
    Ok(match item.kind.as_deref().unwrap_or("") {
        "UserMessage" => {
            let texts: Vec<String> = item.content.into_iter().filter_map(|p| p.text).collect();
            vec![RecordItem::UserMessage(MessageUser {
                record: at.clone(),
                message_id: item.id,
                text: (!texts.is_empty()).then(|| texts.join("\n")),
                source: None,
            })]
        }
        k if SILENT_ITEMS.contains(&k) => Vec::new(),
        other => return Err(format!("unknown completed item {other:?}")),
    })
}

/// One model response's usage, token kinds normalized (see the module
/// doc), Codex's own object kept as `raw`.
fn usage(payload: &str, at: &RecordAt) -> Read {
    let record: TokenUsageWire = parse(kind::TOKEN_USAGE, payload)?;
    let Some(raw) = record.usage else {
        return Err("token_usage_record without usage".into());
    };
    let wire: UsageWire = parse("usage", raw.as_str())?;
    let cached = wire.cached_input_tokens;
    let item = RecordItem::Usage(UsageReported {
        record: at.clone(),
        message_id: record.response_id,
        model: None,
        input_tokens: wire
            .input_tokens
            .map(|n| n.saturating_sub(cached.unwrap_or(0))),
        output_tokens: wire.output_tokens,
        cache_read_tokens: cached,
        cache_write_tokens: wire.cache_write_input_tokens,
        cost: None,
        duration_ms: None,
        time_to_first_token_ms: None,
        reasoning_tokens: wire.reasoning_output_tokens,
        raw: Some(raw),
        copied_from_session: None,
    });
    Ok((record.turn_id, vec![item], None, LineMark::None))
}

/// What a line whose `event_msg` type is `kind` is to a turn's end.
pub(crate) fn line_mark(kind: &str) -> LineMark {
    match kind {
        TASK_COMPLETE | TURN_ABORTED => LineMark::TurnEnd,
        _ => LineMark::None,
    }
}

/// The session a rollout line names: `session_meta`'s `session_id` (a
/// subagent's rollout names its parent's), else its `id`. Cheap for lines
/// that name none.
pub(crate) fn line_session(line: &[u8]) -> Option<String> {
    #[derive(Deserialize)]
    struct Meta {
        id: Option<String>,
        session_id: Option<String>,
    }
    #[derive(Deserialize)]
    struct Named {
        #[serde(rename = "type")]
        kind: Option<String>,
        payload: Option<Meta>,
    }
    memchr::memmem::find(line, b"\"session_meta\"")?;
    let frame = parse_payload::<Named>(line).ok()?;
    (frame.kind.as_deref() == Some(kind::SESSION_META))
        .then_some(frame.payload?)
        .and_then(|m| m.session_id.or(m.id))
}

#[cfg(test)]
#[path = "record_tests.rs"]
mod tests;
