//! Claude Code's own record: transcript lines (`<session>.jsonl`, and a
//! subagent's `subagents/agent-<id>.jsonl`) and the stream-json frames of
//! `-p --output-format stream-json`, which share the message shapes.
//!
//! Each line is read in two steps: its `type` (and `subtype`) first, then
//! only the frames that carry something are read in full, so a new field
//! in a frame we skip can never make it unrecognized.
//!
//! - `user`: bare-string content, or `text` blocks, are the prompt
//!   ([`RecordItem::UserMessage`], plus the line's session metadata);
//!   every `tool_result` block is a [`RecordItem::ToolFinished`]
//!   (`is_error` gives `success`, its absence meaning success; the record
//!   has no exit code).
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

/// Frame types that carry nothing for the ledger.
const SILENT_TYPES: &[&str] = &[
    "attachment",
    "queue-operation",
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
pub fn read_line(line: &[u8], at: &RecordAt) -> RecordLine {
    read_marked(line, at).0
}

/// As [`read_line`], with the session the line names as the same parse
/// found it (`None` when the line is in no known shape, so that
/// [`line_session`] must look: one parse per line, not two), and what the
/// line is to a turn's end ([`line_mark`]).
pub fn read_marked(line: &[u8], at: &RecordAt) -> (RecordLine, Option<Option<String>>, LineMark) {
    let mark = |kind: Option<&str>| kind.map_or(LineMark::None, line_mark);
    let (kind, uuid, parent_uuid, session, frame, mark) = match parse_frame::<Frame>(line) {
        Ok(frame) => {
            let kind = Kind::of(frame.kind.as_deref(), frame.subtype.as_deref());
            let mark = mark(frame.kind.as_deref());
            (
                kind,
                frame.uuid.as_deref().map(String::from),
                frame.parent_uuid.as_deref().map(String::from),
                Some(frame.session_id.as_deref().map(String::from)),
                Ok(frame),
                mark,
            )
        }
        Err(bad) => match parse_frame::<Header>(line) {
            Ok(h) => (
                Kind::of(h.kind.as_deref(), h.subtype.as_deref()),
                h.uuid.map(String::from),
                h.parent_uuid.map(String::from),
                None,
                Err(bad),
                mark(h.kind.as_deref()),
            ),
            Err(unrecognized) => return (unrecognized, None, LineMark::None),
        },
    };
    let result = match kind {
        Kind::User => frame.and_then(|f| user(f, at)),
        Kind::Assistant => frame.and_then(|f| assistant(f, at)),
        Kind::Init => frame.map(|f| init(f, at)),
        Kind::System => frame.map(|f| system(f, at)),
        Kind::Totals => frame.map(|f| totals(f, at)),
        Kind::Silent => Ok(RecordLine::empty()),
        Kind::Unknown(kind) => Err(RecordLine::unrecognized(format!(
            "unknown frame type {kind:?}"
        ))),
        Kind::Untyped => Err(RecordLine::unrecognized("frame without a type")),
    };
    let mut line = result.unwrap_or_else(|unrecognized| unrecognized);
    line.uuid = uuid.map(Box::from);
    line.parent_uuid = parent_uuid.map(Box::from);
    (line, session, mark)
}

/// The frame Claude Code writes before a prompt: the next turn's preamble.
const SNAPSHOT: &str = "file-history-snapshot";

/// What a line of type `kind` is to a turn's end: a file-history snapshot
/// is written for the prompt that follows (the next turn's preamble).
pub fn line_mark(kind: &str) -> LineMark {
    match kind {
        SNAPSHOT => LineMark::NextPrompt,
        _ => LineMark::None,
    }
}

/// What a line is, by its `type` and `subtype`.
enum Kind {
    User,
    Assistant,
    Init,
    System,
    Totals,
    Silent,
    Unknown(String),
    Untyped,
}

impl Kind {
    fn of(kind: Option<&str>, subtype: Option<&str>) -> Kind {
        match (kind, subtype) {
            (Some("user"), _) => Kind::User,
            (Some("assistant"), _) => Kind::Assistant,
            (Some("system"), Some("init")) => Kind::Init,
            (Some("system"), _) => Kind::System,
            (Some("result" | "cost-state"), _) => Kind::Totals,
            (Some(kind), _) if SILENT_TYPES.contains(&kind) => Kind::Silent,
            (Some(kind), _) => Kind::Unknown(kind.to_string()),
            (None, _) => Kind::Untyped,
        }
    }
}

impl Frame<'_> {
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

fn user(frame: Frame, at: &RecordAt) -> Result<RecordLine, RecordLine> {
    let content = message_text(&frame).and_then(|raw| user_content(raw).map_err(no_known_shape))?;
    let turn = frame.prompt_id.as_deref();
    let (texts, results): (Vec<_>, Vec<_>) = match content {
        Content::Text(text) => (vec![text], Vec::new()),
        Content::Blocks(blocks) => blocks.into_iter().fold((vec![], vec![]), |mut acc, b| {
            match (b.kind.as_str(), b.text, b.tool_use_id) {
                ("text", Some(text), _) => acc.0.push(text),
                ("tool_result", _, Some(id)) => acc.1.push(tool_finished(id, b.is_error, turn)),
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
    Ok(frame.line(items))
}

fn tool_finished(id: String, is_error: Option<bool>, turn: Option<&str>) -> RecordItem {
    RecordItem::ToolFinished(RecordedResult {
        tool_call_id: id,
        // Claude Code writes `is_error` only on a failure.
        success: Some(!is_error.unwrap_or(false)),
        exit_code: None,
        turn_id: turn.map(String::from),
    })
}

fn assistant(frame: Frame, at: &RecordAt) -> Result<RecordLine, RecordLine> {
    let mut wire: AssistantWire = message(&frame)?;
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

fn init(frame: Frame, at: &RecordAt) -> RecordLine {
    let version = frame.claude_code_version.as_deref();
    let item = frame.metadata(at, version, frame.model.as_deref());
    frame.line(vec![item])
}

/// Transcript system lines carry the session's version and cwd; the
/// stream's other system frames (hooks, tasks, notices) carry nothing.
fn system(frame: Frame, at: &RecordAt) -> RecordLine {
    if frame.stream_frame || frame.version.is_none() {
        return frame.line(Vec::new());
    }
    let item = frame.metadata(at, None, None);
    frame.line(vec![item])
}

/// One total per model; the session's API time and time to first token
/// are the model's own only when the session used one model.
fn totals(frame: Frame, at: &RecordAt) -> RecordLine {
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
pub fn line_session(line: &[u8]) -> Option<String> {
    #[derive(Deserialize)]
    struct Named {
        #[serde(rename = "sessionId")]
        session_id: Option<String>,
    }
    memchr::memmem::find(line, b"\"sessionId\"")?;
    parse_payload::<Named>(line).ok()?.session_id
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at() -> RecordAt {
        RecordAt {
            path: "t.jsonl".into(),
            offset: 7,
        }
    }

    fn read(line: &str) -> RecordLine {
        read_line(line.as_bytes(), &at())
    }

    #[test]
    fn a_bare_string_prompt_is_text_with_turn_time_and_metadata() {
        let line = read(
            r#"{"type":"user","promptId":"p1","uuid":"u1","timestamp":"2026-11-30T00:35:57.384Z",
                "version":"2.1.332","cwd":"/w","message":{"role":"user","content":"hi"}}"#,
        );
        assert_eq!(line.native_turn_id.as_deref(), Some("p1"));
        assert_eq!(line.time_unix_ns, Some(1_795_998_957_384_000_000));
        assert_eq!(
            line.items,
            vec![
                RecordItem::UserMessage(MessageUser {
                    record: at(),
                    message_id: Some("u1".into()),
                    text: Some("hi".into()),
                    source: None,
                }),
                RecordItem::Metadata(SessionMetadata {
                    record: at(),
                    agent_version: Some("2.1.332".into()),
                    head_commit: None,
                    cwd: Some("/w".into()),
                    model: None,
                }),
            ]
        );
    }

    #[test]
    fn a_result_without_is_error_is_a_success() {
        let line = read(
            r#"{"type":"user","promptId":"p","message":{"content":[
                {"type":"tool_result","tool_use_id":"t1","content":"ok"}]}}"#,
        );
        let RecordItem::ToolFinished(done) = &line.items[0] else {
            panic!("{line:?}")
        };
        assert_eq!(done.success, Some(true));
    }

    #[test]
    fn tool_results_are_finished_calls_and_not_messages() {
        let line = read(
            r#"{"type":"user","promptId":"p","agentId":"a9","isSidechain":true,"message":{"content":[
                {"type":"tool_result","tool_use_id":"t1","content":"x","is_error":true},
                {"type":"tool_result","tool_use_id":"t2","content":"y","is_error":false}]}}"#,
        );
        assert_eq!(line.agent_id.as_deref(), Some("a9"));
        let finished = |id: &str, ok| {
            RecordItem::ToolFinished(RecordedResult {
                tool_call_id: id.into(),
                success: Some(ok),
                exit_code: None,
                turn_id: Some("p".into()),
            })
        };
        assert_eq!(
            line.items,
            vec![finished("t1", false), finished("t2", true)]
        );
    }

    #[test]
    fn an_assistant_line_says_reasoning_message_usage_and_calls() {
        let line = read(
            r#"{"type":"assistant","promptId":"p","message":{"id":"m1","model":"claude-x",
                "content":[{"type":"thinking","thinking":"hmm","signature":"sig"},
                {"type":"text","text":"ok"},
                {"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}],
                "usage":{"input_tokens":3,"output_tokens":4,"cache_read_input_tokens":5,
                "cache_creation_input_tokens":6,"service_tier":"standard"}}}"#,
        );
        let digest = input_digest(Json::parse(r#"{"command":"ls"}"#).ok().as_ref());
        assert_eq!(
            line.items,
            vec![
                RecordItem::Reasoning(ReasoningRecorded {
                    record: at(),
                    message_id: Some("m1".into()),
                    text: Some("hmm".into()),
                    continuation: Some("sig".into()),
                }),
                RecordItem::AssistantMessage(MessageAssistant {
                    record: at(),
                    message_id: Some("m1".into()),
                    model: Some("claude-x".into()),
                    text: Some("ok".into()),
                    tool_call_ids: vec!["t1".into()],
                }),
                RecordItem::Usage(UsageReported {
                    record: at(),
                    message_id: Some("m1".into()),
                    model: Some("claude-x".into()),
                    input_tokens: Some(3),
                    output_tokens: Some(4),
                    cache_read_tokens: Some(5),
                    cache_write_tokens: Some(6),
                    cost: None,
                    duration_ms: None,
                    time_to_first_token_ms: None,
                    reasoning_tokens: None,
                    raw: Json::parse(
                        r#"{"cache_creation_input_tokens":6,"cache_read_input_tokens":5,"input_tokens":3,"output_tokens":4,"service_tier":"standard"}"#
                    )
                    .ok(),
                    copied_from_session: None,
                }),
                RecordItem::ToolStarted(RecordedCall {
                    tool_call_id: "t1".into(),
                    tool_name: "Bash".into(),
                    input_digest: digest,
                    turn_id: Some("p".into()),
                }),
            ]
        );
    }

    #[test]
    fn a_tool_input_given_as_a_json_string_digests_like_the_object() {
        let call = |input: &str| {
            let line = read(&format!(
                r#"{{"type":"assistant","message":{{"id":"m","content":[
                    {{"type":"tool_use","id":"t","name":"Read","input":{input}}}]}}}}"#
            ));
            match line.items.last() {
                Some(RecordItem::ToolStarted(call)) => call.input_digest.clone(),
                other => panic!("no call: {other:?}"),
            }
        };
        assert_eq!(call(r#"{"path":"/x"}"#), call(r#""{\"path\":\"/x\"}""#));
        assert_ne!(call(r#"{"path":"/x"}"#), call(r#"{"path":"/y"}"#));
    }

    #[test]
    fn a_stream_assistant_frame_keeps_its_calls_but_not_its_first_token_usage() {
        let line = read(
            r#"{"type":"assistant","parent_tool_use_id":null,"session_id":"s","message":{"id":"m",
                "content":[{"type":"text","text":"x"}],"usage":{"input_tokens":1,"output_tokens":1}}}"#,
        );
        assert!(matches!(
            line.items.as_slice(),
            [RecordItem::AssistantMessage(_)]
        ));
    }

    #[test]
    fn the_init_frame_is_metadata() {
        let line = read(
            r#"{"type":"system","subtype":"init","cwd":"/w","session_id":"s","model":"claude-x",
                "claude_code_version":"2.1.332","tools":["Bash"]}"#,
        );
        assert_eq!(
            line.items,
            vec![RecordItem::Metadata(SessionMetadata {
                record: at(),
                agent_version: Some("2.1.332".into()),
                head_commit: None,
                cwd: Some("/w".into()),
                model: Some("claude-x".into()),
            })]
        );
    }

    #[test]
    fn stream_system_frames_other_than_init_say_nothing() {
        let line =
            read(r#"{"type":"system","subtype":"hook_started","hook_id":"h","session_id":"s"}"#);
        assert_eq!(line, RecordLine::empty());
    }

    #[test]
    fn the_result_frame_is_a_total_per_model() {
        let line = read(
            r#"{"type":"result","subtype":"success","duration_api_ms":349,"ttft_ms":262,
                "total_cost_usd":0.0016,"modelUsage":{"claude-x":{"inputTokens":200,
                "outputTokens":40,"cacheReadInputTokens":1,"cacheCreationInputTokens":2,
                "costUSD":0.0016}}}"#,
        );
        assert_eq!(
            line.items,
            vec![RecordItem::UsageTotal(UsageReported {
                record: at(),
                message_id: None,
                model: Some("claude-x".into()),
                input_tokens: Some(200),
                output_tokens: Some(40),
                cache_read_tokens: Some(1),
                cache_write_tokens: Some(2),
                cost: Json::parse("0.0016").ok(),
                duration_ms: Some(349),
                time_to_first_token_ms: Some(262),
                reasoning_tokens: None,
                raw: None,
                copied_from_session: None,
            })]
        );
    }

    #[test]
    fn a_total_over_two_models_leaves_the_session_times_out() {
        let line = read(
            r#"{"type":"cost-state","totalAPIDuration":10,"modelUsage":{
                "a":{"inputTokens":1,"costUSD":0.1},"b":{"inputTokens":2,"costUSD":0.2}}}"#,
        );
        let times: Vec<_> = line
            .items
            .iter()
            .map(|i| match i {
                RecordItem::UsageTotal(u) => (u.model.clone(), u.duration_ms),
                other => panic!("not a total: {other:?}"),
            })
            .collect();
        assert_eq!(
            times,
            vec![(Some("a".into()), None), (Some("b".into()), None)]
        );
    }

    #[test]
    fn known_silent_frames_are_empty_and_unknown_ones_are_unrecognized() {
        for silent in ["attachment", "queue-operation", "last-prompt", "atis-latch"] {
            let line = read(&format!(r#"{{"type":"{silent}","sessionId":"s"}}"#));
            assert_eq!(line, RecordLine::empty(), "{silent}");
        }
        assert!(matches!(
            read(r#"{"type":"brand-new","x":1}"#).items.as_slice(),
            [RecordItem::Unrecognized { reason }] if reason.contains("brand-new")
        ));
    }

    #[test]
    fn malformed_lines_are_unrecognized() {
        for bad in [
            r#"{"type":"user","message":{"content":"#,
            "not json",
            r#"{"x":1}"#,
            r#"{"type":"assistant","message":{"content":[{"text":"no type"}]}}"#,
        ] {
            assert!(
                matches!(
                    read(bad).items.as_slice(),
                    [RecordItem::Unrecognized { .. }]
                ),
                "{bad}"
            );
        }
    }

    #[test]
    fn lines_name_their_session() {
        let named = br#"{"type":"user","sessionId":"s1","message":{}}"#;
        assert_eq!(line_session(named).as_deref(), Some("s1"));
        assert_eq!(line_session(br#"{"type":"x"}"#), None);
        // Reading the line finds it in the same parse; a line in no known
        // shape leaves the look to `line_session`.
        assert_eq!(read_marked(named, &at()).1, Some(Some("s1".into())));
        assert_eq!(read_marked(br#"{"type":"x"}"#, &at()).1, Some(None));
        assert_eq!(read_marked(b"not json", &at()).1, None);
    }

    /// The texts a frame borrows read as the `String`s they were: escapes
    /// undone, and a text of another type refused in the same words.
    #[test]
    fn borrowed_texts_read_as_strings_did() {
        let line = read(
            r#"{"type":"user","uuid":"u\"1","promptId":"p\u00e9","cwd":"/w\\x",
                "timestamp":"2026-11-30T00:35:57.384Z","message":{"content":"hi"}}"#,
        );
        assert_eq!(line.uuid.as_deref(), Some("u\"1"));
        assert_eq!(line.native_turn_id.as_deref(), Some("p\u{e9}"));
        let RecordItem::Metadata(meta) = &line.items[1] else {
            panic!("{line:?}")
        };
        assert_eq!(meta.cwd.as_deref(), Some("/w\\x"));
        let typed = read(r#"{"type":"user","uuid":5,"message":{"content":"hi"}}"#);
        let [RecordItem::Unrecognized { reason }] = typed.items.as_slice() else {
            panic!("{typed:?}")
        };
        assert_eq!(
            reason,
            "not a frame: invalid type: integer `5`, expected a string at line 1 column 23"
        );
    }
}
