//! Claude Code's own record: transcript lines (`<session>.jsonl`, and a
//! subagent's `subagents/agent-<id>.jsonl`) and the stream-json frames of
//! `-p --output-format stream-json`, which share the message shapes.
//!
//! Each line is parsed once, its message with it, whenever the message is
//! in a shape that pass takes, else its message is read again from its
//! text (see [`read_marked`]); a line whose frame is in no known shape is
//! read for its header alone, so a type that carries nothing stays silent
//! whatever its other fields hold and a new field in a frame we skip can
//! never make it unrecognized.
//!
//! - `user`: bare-string content, or `text` blocks, are the prompt
//!   ([`RecordItem::UserMessage`], plus the line's session metadata);
//!   every `tool_result` block is a [`RecordItem::ToolFinished`]
//!   (`is_error` gives `success`, its absence meaning success; the record
//!   has no exit code; its content's text is the output).
//! - `assistant`: one item per meaning: `thinking` (its `signature` is the
//!   continuation) and `redacted_thinking` are reasoning; the text blocks,
//!   joined by newlines, and the `tool_use` ids are the message; each
//!   `tool_use` is a [`RecordItem::ToolStarted`] whose digest is the hook
//!   side's; `message.usage` is usage, keyed by `message.id`.
//! - `system`: the init frame and transcript system lines are metadata.
//! - `result` (stream) and `cost-state` (transcript) are session totals.
//!
//! A stream-json `assistant` frame (it has `parent_tool_use_id`) carries the
//! usage of the message's first streamed token, not the final count (real
//! frames show `output_tokens: 1` where the transcript has the total), so
//! its usage is not reported; the `result` frame's totals stand for it.

use serde::Deserialize;

use super::line::{Frame, Header};
use super::message::{Block, Content, user_content};
use crate::agents::record::{
    LineMark, RecordItem, RecordLine, RecordedCall, RecordedResult, millis, parse_frame, time_ns,
};
use crate::agents::wire::{input_digest, normalize_input, parse_payload, raw_json};
use crate::contract::{
    Json, MessageAssistant, MessageUser, ReasoningRecorded, RecordAt, SessionMetadata,
    UsageReported,
};

/// The prompt queue's rows: written before the prompt they queue.
const QUEUE_OPERATION: &str = "queue-operation";

/// Frame types that carry nothing for the ledger.
const SILENT_TYPES: &[&str] = &[
    "attachment",
    QUEUE_OPERATION,
    "last-prompt",
    "api-request",
    "api-request-blob",
    "api-request-shape",
    "tools-used",
    "atis-latch",
    "summary",
    SNAPSHOT,
    "mode",
    "permission-mode",
    "progress",
];

#[derive(Deserialize)]
struct AssistantWire {
    id: Option<String>,
    model: Option<String>,
    #[serde(default)]
    content: Vec<Block>,
    /// The usage object as written (kept whole as `raw`).
    #[serde(default, deserialize_with = "raw_json")]
    usage: Option<Json>,
}

#[derive(Deserialize)]
struct UsageWire {
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    cache_read_input_tokens: Option<u64>,
    cache_creation_input_tokens: Option<u64>,
}

/// Read one line of the record: one parse of the whole frame, and the
/// header alone only when the frame is in no known shape (a skipped type
/// stays silent whatever its other fields hold).
#[cfg(test)]
pub(crate) fn read_line(line: &[u8], at: &RecordAt) -> RecordLine {
    read_marked(line, at).0
}

/// As `read_line`, with the session the line names as the same parse
/// found it (`None` when the line is in no known shape, so that
/// [`line_session`] must look: one parse per line, not two), and what the
/// line is to a turn's end ([`line_mark`]).
///
/// A line is read in one pass, its message with it, when it is UTF-8 and
/// its message is in a shape that pass takes ([`InOnePass`]); any other
/// line is read in two (the frame, then the message from its text), which
/// is also what says why a line is in no known shape. The two agree on
/// every line the first takes (a test reads the recorded transcripts both
/// ways): the one pass only spares reading a message's text twice.
pub(crate) fn read_marked(
    line: &[u8],
    at: &RecordAt,
) -> (RecordLine, Option<Option<String>>, LineMark) {
    read_in_one_pass(line, at).unwrap_or_else(|| read_in_two_passes(line, at))
}

type Marked = (RecordLine, Option<Option<String>>, LineMark);

fn read_in_one_pass(line: &[u8], at: &RecordAt) -> Option<Marked> {
    let text = std::str::from_utf8(line).ok()?;
    let mut frame = serde_json::from_str::<Frame<InOnePass>>(text).ok()?;
    let kind = Kind::of(frame.kind.as_deref(), frame.subtype.as_deref());
    let result = match kind {
        Kind::User => {
            let content = frame.message.take()?.user_content()?;
            Ok(user(&frame, content, at))
        }
        Kind::Assistant => {
            let wire = frame.message.take()?.assistant()?;
            assistant(&frame, wire, at)
        }
        Kind::Plain(plain) => plain_line(plain, Ok(&frame), at),
    };
    Some(marked(result, &frame))
}

fn read_in_two_passes(line: &[u8], at: &RecordAt) -> Marked {
    let frame = match parse_frame::<Frame>(line) {
        Ok(frame) => frame,
        Err(bad) => return read_header(line, bad, at),
    };
    let kind = Kind::of(frame.kind.as_deref(), frame.subtype.as_deref());
    let result = match kind {
        Kind::User => message_text(&frame)
            .and_then(|raw| user_content(raw).map_err(no_known_shape))
            .map(|content| user(&frame, content, at)),
        Kind::Assistant => message(&frame).and_then(|wire| assistant(&frame, wire, at)),
        Kind::Plain(plain) => plain_line(plain, Ok(&frame), at),
    };
    marked(result, &frame)
}

/// A line whose frame is in no known shape: its header alone, so that it
/// keeps its place in the `parentUuid` chain and a type that carries
/// nothing stays silent.
fn read_header(line: &[u8], bad: RecordLine, at: &RecordAt) -> Marked {
    let h = match parse_frame::<Header>(line) {
        Ok(h) => h,
        Err(unrecognized) => return (unrecognized, None, LineMark::None),
    };
    let result = match Kind::of(h.kind.as_deref(), h.subtype.as_deref()) {
        Kind::Plain(plain) => plain_line::<()>(plain, Err(bad), at),
        Kind::User | Kind::Assistant => Err(bad),
    };
    let mut line = result.unwrap_or_else(|unrecognized| unrecognized);
    line.uuid = h.uuid.as_deref().map(Box::from);
    line.parent_uuid = h.parent_uuid.as_deref().map(Box::from);
    (line, None, mark_of(h.kind.as_deref()))
}

/// The line read, with its frame's place in the chain, session and mark.
fn marked<M>(result: Result<RecordLine, RecordLine>, frame: &Frame<'_, M>) -> Marked {
    let mut line = result.unwrap_or_else(|unrecognized| unrecognized);
    line.uuid = frame.uuid.as_deref().map(Box::from);
    line.parent_uuid = frame.parent_uuid.as_deref().map(Box::from);
    let session = frame.session_id.as_deref().map(String::from);
    (line, Some(session), mark_of(frame.kind.as_deref()))
}

fn mark_of(kind: Option<&str>) -> LineMark {
    kind.map_or(LineMark::None, line_mark)
}

/// A message read with its frame: a user or an assistant message's
/// fields, or nothing for a message in any other shape (the two-pass read
/// then reads the line).
#[derive(Deserialize)]
struct InOnePass {
    id: Option<String>,
    model: Option<String>,
    /// `null` is refused as the two-pass read refuses it (an absent content
    /// is not the same).
    #[serde(default, deserialize_with = "present_content")]
    content: Option<Content>,
    #[serde(default, deserialize_with = "raw_json")]
    usage: Option<Json>,
}

fn present_content<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Content>, D::Error> {
    Content::deserialize(d).map(Some)
}

impl InOnePass {
    /// A user message's content, unless only the buffered read takes it
    /// (see `message::user_content`).
    fn user_content(self) -> Option<Content> {
        self.content?.taken_as_buffered()
    }

    /// An assistant message, unless its content is a bare string (which
    /// the two-pass read refuses).
    fn assistant(self) -> Option<AssistantWire> {
        let content = match self.content {
            None => Vec::new(),
            Some(Content::Blocks(blocks)) => blocks,
            Some(Content::Text(_)) => return None,
        };
        Some(AssistantWire {
            id: self.id,
            model: self.model,
            content,
            usage: self.usage,
        })
    }
}

/// The frame Claude Code writes before a prompt: the next turn's preamble.
const SNAPSHOT: &str = "file-history-snapshot";

/// What a line of type `kind` is to a turn's end: a file-history snapshot
/// (interactive) and the prompt queue's `queue-operation` rows (print
/// mode: `enqueue` carries the prompt's text) are written for the prompt
/// that follows (the next turn's preamble).
pub(crate) fn line_mark(kind: &str) -> LineMark {
    match kind {
        SNAPSHOT | QUEUE_OPERATION => LineMark::NextPrompt,
        _ => LineMark::None,
    }
}

/// What a line is, by its `type` and `subtype`: a message, read by each
/// reader its own way, or a line read from its frame alone.
enum Kind {
    User,
    Assistant,
    Plain(Plain),
}

enum Plain {
    Init,
    System,
    Totals,
    Silent,
    Unknown(String),
    Untyped,
}

impl Kind {
    fn of(kind: Option<&str>, subtype: Option<&str>) -> Kind {
        let plain = match (kind, subtype) {
            (Some("user"), _) => return Kind::User,
            (Some("assistant"), _) => return Kind::Assistant,
            (Some("system"), Some("init")) => Plain::Init,
            (Some("system"), _) => Plain::System,
            (Some("result" | "cost-state"), _) => Plain::Totals,
            (Some(kind), _) if SILENT_TYPES.contains(&kind) => Plain::Silent,
            (Some(kind), _) => Plain::Unknown(kind.to_string()),
            (None, _) => Plain::Untyped,
        };
        Kind::Plain(plain)
    }
}

/// A line that is no message, from its frame (or why its frame is in no
/// known shape: a type that carries nothing stays silent whatever it
/// holds, and an unknown type is named).
fn plain_line<M>(
    plain: Plain,
    frame: Result<&Frame<'_, M>, RecordLine>,
    at: &RecordAt,
) -> Result<RecordLine, RecordLine> {
    match plain {
        Plain::Init => frame.map(|f| init(f, at)),
        Plain::System => frame.map(|f| system(f, at)),
        Plain::Totals => frame.map(|f| totals(f, at)),
        Plain::Silent => Ok(RecordLine::empty()),
        Plain::Unknown(kind) => Err(RecordLine::unrecognized(format!(
            "unknown frame type {kind:?}"
        ))),
        Plain::Untyped => Err(RecordLine::unrecognized("frame without a type")),
    }
}

impl<M> Frame<'_, M> {
    fn line(&self, items: Vec<RecordItem>) -> RecordLine {
        RecordLine {
            time_unix_ns: time_ns(self.timestamp.as_deref()),
            agent_id: self.agent_id.clone(),
            native_turn_id: self.prompt_id.as_deref().map(String::from),
            uuid: None,
            parent_uuid: None,
            items,
        }
    }

    fn metadata(&self, at: &RecordAt, version: Option<&str>, model: Option<&str>) -> RecordItem {
        RecordItem::Metadata(SessionMetadata {
            record: at.clone(),
            agent_version: version.or(self.version.as_deref()).map(str::to_owned),
            head_commit: None,
            cwd: self.cwd.as_deref().map(String::from),
            model: model.map(str::to_owned),
        })
    }
}

fn message<'a, T: Deserialize<'a>>(frame: &Frame<'a>) -> Result<T, RecordLine> {
    serde_json::from_str(message_text(frame)?).map_err(no_known_shape)
}

fn message_text<'a>(frame: &Frame<'a>) -> Result<&'a str, RecordLine> {
    frame
        .message
        .map(|raw| raw.get())
        .ok_or_else(|| RecordLine::unrecognized("message frame without a message"))
}

fn no_known_shape(e: serde_json::Error) -> RecordLine {
    RecordLine::unrecognized(format!("message in no known shape: {e}"))
}

fn user<M>(frame: &Frame<'_, M>, content: Content, at: &RecordAt) -> RecordLine {
    let turn = frame.prompt_id.as_deref();
    let (texts, results): (Vec<_>, Vec<_>) = match content {
        Content::Text(text) => (vec![text], Vec::new()),
        Content::Blocks(blocks) => blocks.into_iter().fold((vec![], vec![]), |mut acc, b| {
            match (b.kind.as_str(), b.text, b.tool_use_id) {
                ("text", Some(text), _) => acc.0.push(text),
                ("tool_result", _, Some(id)) => {
                    acc.1.push(tool_finished(id, b.is_error, b.content, turn))
                }
                _ => {}
            }
            acc
        }),
    };
    let mut items = Vec::new();
    if !texts.is_empty() {
        items.push(RecordItem::UserMessage(MessageUser {
            record: at.clone(),
            message_id: frame.uuid.as_deref().map(String::from),
            text: Some(texts.join("\n")),
            source: None,
        }));
        if !frame.stream_frame {
            items.push(frame.metadata(at, None, None));
        }
    }
    items.extend(results);
    frame.line(items)
}

fn tool_finished(
    id: String,
    is_error: Option<bool>,
    output: Option<String>,
    turn: Option<&str>,
) -> RecordItem {
    RecordItem::ToolFinished(RecordedResult {
        tool_call_id: id,
        // Claude Code writes `is_error` only on a failure.
        success: Some(!is_error.unwrap_or(false)),
        exit_code: None,
        turn_id: turn.map(String::from),
        output,
    })
}

fn assistant<M>(
    frame: &Frame<'_, M>,
    mut wire: AssistantWire,
    at: &RecordAt,
) -> Result<RecordLine, RecordLine> {
    let turn = frame.prompt_id.as_deref();
    let mut items = Vec::new();
    let mut texts = Vec::new();
    let mut calls = Vec::new();
    for block in std::mem::take(&mut wire.content) {
        match block.kind.as_str() {
            "text" => texts.extend(block.text),
            "thinking" => items.push(reasoning(at, &wire.id, block.thinking, block.signature)),
            "redacted_thinking" => items.push(reasoning(at, &wire.id, None, block.data)),
            "tool_use" => calls.extend(tool_use(block, turn)),
            _ => {}
        }
    }
    if !texts.is_empty() || !calls.is_empty() {
        items.push(RecordItem::AssistantMessage(MessageAssistant {
            record: at.clone(),
            message_id: wire.id.clone(),
            model: wire.model.clone(),
            text: (!texts.is_empty()).then(|| texts.join("\n")),
            tool_call_ids: calls.iter().map(|c| c.tool_call_id.clone()).collect(),
        }));
    }
    if let Some(raw) = wire.usage.as_ref().filter(|_| !frame.stream_frame) {
        let usage: UsageWire = serde_json::from_str(raw.as_str())
            .map_err(|e| RecordLine::unrecognized(format!("usage in no known shape: {e}")))?;
        let mut call = call_usage(at, &wire, &usage);
        call.copied_from_session = frame.copied_from().map(str::to_owned);
        items.push(RecordItem::Usage(call));
    }
    let copied = frame.copied_from().is_some();
    items.extend(calls.into_iter().map(|call| match copied {
        false => RecordItem::ToolStarted(call),
        true => RecordItem::CopiedCall {
            tool_call_id: call.tool_call_id,
        },
    }));
    Ok(frame.line(items))
}

fn tool_use(block: Block, turn: Option<&str>) -> Option<RecordedCall> {
    Some(RecordedCall {
        tool_call_id: block.id?,
        tool_name: block.name?,
        input_digest: input_digest(block.input.map(normalize_input).as_ref()),
        turn_id: turn.map(String::from),
    })
}

fn reasoning(
    at: &RecordAt,
    message_id: &Option<String>,
    text: Option<String>,
    continuation: Option<String>,
) -> RecordItem {
    RecordItem::Reasoning(ReasoningRecorded {
        record: at.clone(),
        message_id: message_id.clone(),
        text,
        continuation,
    })
}

fn call_usage(at: &RecordAt, wire: &AssistantWire, usage: &UsageWire) -> UsageReported {
    UsageReported {
        record: at.clone(),
        message_id: wire.id.clone(),
        model: wire.model.clone(),
        input_tokens: usage.input_tokens,
        output_tokens: usage.output_tokens,
        cache_read_tokens: usage.cache_read_input_tokens,
        cache_write_tokens: usage.cache_creation_input_tokens,
        cost: None,
        duration_ms: None,
        time_to_first_token_ms: None,
        reasoning_tokens: None,
        raw: wire.usage.clone(),
        copied_from_session: None,
    }
}

fn init<M>(frame: &Frame<'_, M>, at: &RecordAt) -> RecordLine {
    let version = frame.claude_code_version.as_deref();
    let item = frame.metadata(at, version, frame.model.as_deref());
    frame.line(vec![item])
}

/// Transcript system lines carry the session's version and cwd; the
/// stream's other system frames (hooks, tasks, notices) carry nothing.
fn system<M>(frame: &Frame<'_, M>, at: &RecordAt) -> RecordLine {
    if frame.stream_frame || frame.version.is_none() {
        return frame.line(Vec::new());
    }
    let item = frame.metadata(at, None, None);
    frame.line(vec![item])
}

/// One total per model; the session's API time and time to first token
/// are the model's own only when the session used one model.
fn totals<M>(frame: &Frame<'_, M>, at: &RecordAt) -> RecordLine {
    let single = frame.model_usage.len() == 1;
    let items = frame
        .model_usage
        .iter()
        .map(|(model, total)| {
            RecordItem::UsageTotal(UsageReported {
                record: at.clone(),
                message_id: None,
                model: Some(model.clone()),
                input_tokens: total.input_tokens,
                output_tokens: total.output_tokens,
                cache_read_tokens: total.cache_read_input_tokens,
                cache_write_tokens: total.cache_creation_input_tokens,
                cost: total.cost_usd.clone(),
                duration_ms: frame.duration_api_ms.filter(|_| single).and_then(millis),
                time_to_first_token_ms: frame.ttft_ms.filter(|_| single).and_then(millis),
                reasoning_tokens: None,
                raw: None,
                copied_from_session: None,
            })
        })
        .collect();
    frame.line(items)
}

/// The session a transcript line says it belongs to: Claude Code writes
/// `sessionId` on its lines. Cheap for lines that name none. ([`read_marked`]
/// finds it while reading the line.)
pub(crate) fn line_session(line: &[u8]) -> Option<String> {
    #[derive(Deserialize)]
    struct Named {
        #[serde(rename = "sessionId")]
        session_id: Option<String>,
    }
    memchr::memmem::find(line, b"\"sessionId\"")?;
    parse_payload::<Named>(line).ok()?.session_id
}

#[cfg(test)]
#[path = "record_tests.rs"]
mod tests;
