//! Copilot CLI's own record: `session-state/<session>/events.jsonl`, one
//! `{"type", "data", "id", "timestamp", "parentId"}` envelope a line; a
//! subagent's frames carry its `agentId` beside them.
//!
//! The envelope is read first and `data` only for the types that carry
//! something, so a field added to a skipped type cannot make it
//! unrecognized. `data.turnId` is the line's native turn.
//!
//! - `session.start` is metadata; `session.resume` is [`RecordItem::Resumed`]
//!   and the metadata it restates; `session.shutdown` is the end, and its
//!   `modelMetrics` the agent's own totals per model
//!   ([`RecordItem::UsageSummary`]: requests, premium requests, credits,
//!   tokens; cumulative over the session's resumes).
//! - `user.message` and `assistant.message` are messages (an empty
//!   `content` is no text); an assistant message's `reasoningText` or
//!   opaque reasoning is also [`RecordItem::Reasoning`], the opaque form
//!   kept as the continuation.
//! - `tool.execution_start` / `tool.execution_complete` are the record's
//!   tool calls, with the hook side's digest of `arguments`, `success` and
//!   `shellExecution.exitCode`.
//! - `session.usage_record` is one model call's usage, keyed by the call's
//!   own id (`accounting.usageId`, else `apiCallId`) as its `message_id`,
//!   so a call recorded twice (a session copied, a record read again) is
//!   counted once.
//!
//! `assistant.reasoning` is read as `reasoningId` + `content`; the corpus
//! has none, so that shape is the documented one, not one seen.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::agents::record::{
    LineMark, RecordItem, RecordLine, RecordedCall, RecordedResult, millis, parse_frame, time_ns,
};
use crate::agents::result_text::result_text;
use crate::agents::wire::{input_digest, normalize_input, parse_payload, raw_json};
use crate::contract::{
    Json, MessageAssistant, MessageUser, ReasoningRecorded, RecordAt, SessionMetadata,
    UsageReported, UsageSummary,
};

/// Frame types that carry nothing for the ledger.
const SILENT_TYPES: &[&str] = &[
    "hook.start",
    "hook.end",
    "system.message",
    frame::ABORT,
    "permission.requested",
    "permission.completed",
    "session.error",
    "session.warning",
    "session.info",
    "session.model_change",
    "subagent.started",
    "subagent.configured",
    "subagent.completed",
    "subagent.failed",
];

/// The frame types more than one reader of this record names.
pub(crate) mod frame {
    pub(crate) const SESSION_START: &str = "session.start";
    pub(crate) const SESSION_RESUME: &str = "session.resume";
    pub(crate) const SESSION_SHUTDOWN: &str = "session.shutdown";
    pub(crate) const ABORT: &str = "abort";
    pub(crate) const USER_MESSAGE: &str = "user.message";
    pub(crate) const ASSISTANT_MESSAGE: &str = "assistant.message";
    pub(crate) const ASSISTANT_REASONING: &str = "assistant.reasoning";
    pub(crate) const TOOL_EXECUTION_COMPLETE: &str = "tool.execution_complete";
}

/// One line of `events.jsonl` with its envelope read and `data` left as
/// text: the first step of every reader of this record (the finalizer's
/// `read_line` and `harnery recover`'s scan, `recover::copilot`).
#[derive(Deserialize)]
pub(crate) struct Envelope<'a> {
    #[serde(rename = "type", borrow)]
    pub kind: Cow<'a, str>,
    #[serde(borrow, default)]
    pub data: Option<&'a RawValue>,
    /// The event's own id as written; [`Envelope::id`] reads it as text.
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub timestamp: Option<Cow<'a, str>>,
    /// The subagent that wrote the frame.
    #[serde(rename = "agentId", borrow, default)]
    pub agent_id: Option<Cow<'a, str>>,
}

impl<'a> Envelope<'a> {
    /// Read the envelope of one line (without its newline).
    pub(crate) fn read(line: &'a [u8]) -> serde_json::Result<Envelope<'a>> {
        parse_payload(line)
    }

    /// The event's id: `None` when absent or null, an error when it is
    /// not a string (a reader that shows ids refuses such a line).
    pub(crate) fn id(&self) -> serde_json::Result<Option<String>> {
        self.id
            .map(|raw| serde_json::from_str::<String>(raw.get()))
            .transpose()
    }
}

/// Every `data` field this module reads, whatever the frame's type.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Data {
    turn_id: Option<String>,
    // Session start and resume.
    copilot_version: Option<String>,
    selected_model: Option<String>,
    context: Option<ContextWire>,
    // Messages and reasoning.
    message_id: Option<String>,
    reasoning_id: Option<String>,
    model: Option<String>,
    content: Option<String>,
    /// Who sent a `user.message` that was not the user (steering).
    source: Option<String>,
    #[serde(default)]
    tool_requests: Vec<ToolRequestWire>,
    reasoning_text: Option<String>,
    #[serde(alias = "encryptedContent")]
    reasoning_opaque: Option<String>,
    // Tools.
    tool_call_id: Option<String>,
    tool_name: Option<String>,
    arguments: Option<serde_json::Value>,
    success: Option<bool>,
    shell_execution: Option<ShellWire>,
    result: Option<ResultWire>,
    usage: Option<UsageWire>,
    // Shutdown: the session's totals per model, cumulative over resumes.
    #[serde(default)]
    model_metrics: BTreeMap<String, Box<RawValue>>,
}

/// A tool's result: the text the model was given.
#[derive(Deserialize)]
struct ResultWire {
    #[serde(default, deserialize_with = "result_text")]
    content: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ModelMetricsWire {
    requests: Option<RequestsWire>,
    usage: Option<MetricsUsageWire>,
    #[serde(default, deserialize_with = "raw_json")]
    total_nano_aiu: Option<Json>,
}

#[derive(Deserialize)]
struct RequestsWire {
    count: Option<u64>,
    #[serde(default, deserialize_with = "raw_json")]
    cost: Option<Json>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct MetricsUsageWire {
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    cache_read_tokens: Option<u64>,
    cache_write_tokens: Option<u64>,
    reasoning_tokens: Option<u64>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ContextWire {
    cwd: Option<String>,
    head_commit: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ToolRequestWire {
    tool_call_id: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ShellWire {
    exit_code: Option<i64>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct UsageWire {
    model: Option<String>,
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    cache_read_tokens: Option<u64>,
    cache_write_tokens: Option<u64>,
    reasoning_tokens: Option<u64>,
    #[serde(default, deserialize_with = "raw_json")]
    cost: Option<Json>,
    duration: Option<f64>,
    time_to_first_token_ms: Option<f64>,
    api_call_id: Option<String>,
    accounting: Option<AccountingWire>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct AccountingWire {
    usage_id: Option<String>,
}

/// Read one line of the record.
#[cfg(test)]
pub(crate) fn read_line(line: &[u8], at: &RecordAt) -> RecordLine {
    read_marked(line, at).0
}

/// As `read_line`, with what the line is to a turn's end ([`line_mark`]).
pub(crate) fn read_marked(line: &[u8], at: &RecordAt) -> (RecordLine, LineMark) {
    let envelope: Envelope = match parse_frame(line) {
        Ok(envelope) => envelope,
        Err(unrecognized) => return (unrecognized, LineMark::None),
    };
    let mut read = read_frame(&envelope, at);
    // Every line whose envelope reads names its own id, whatever its data
    // says.
    read.uuid = envelope.id().ok().flatten().map(Box::from);
    (read, line_mark(&envelope.kind))
}

/// The frame that ends a turn.
const TURN_END: &str = "assistant.turn_end";

/// What a line of type `kind` is to a turn's end: a turn is over after
/// `assistant.turn_end`.
pub(crate) fn line_mark(kind: &str) -> LineMark {
    match kind {
        TURN_END => LineMark::TurnEnd,
        _ => LineMark::None,
    }
}

fn read_frame(envelope: &Envelope, at: &RecordAt) -> RecordLine {
    let kind = envelope.kind.as_ref();
    if SILENT_TYPES.contains(&kind) {
        return envelope.line(None, Vec::new());
    }
    let data: Data = match envelope.data.map(|raw| serde_json::from_str(raw.get())) {
        Some(Ok(data)) => data,
        Some(Err(e)) => return RecordLine::unrecognized(format!("{kind} data: {e}")),
        None => return RecordLine::unrecognized(format!("{kind} without data")),
    };
    match items(kind, &data, at) {
        Some(items) => envelope.line(data.turn_id.clone(), items),
        None => RecordLine::unrecognized(format!("unknown frame type {kind:?}")),
    }
}

impl Envelope<'_> {
    fn line(&self, turn: Option<String>, items: Vec<RecordItem>) -> RecordLine {
        RecordLine {
            time_unix_ns: time_ns(self.timestamp.as_deref()),
            agent_id: self.agent_id.as_deref().map(str::to_owned),
            native_turn_id: turn,
            items,
            ..RecordLine::empty()
        }
    }
}

/// What a frame of type `kind` says; `None` for a type this dialect does
/// not know.
fn items(kind: &str, data: &Data, at: &RecordAt) -> Option<Vec<RecordItem>> {
    let items = match kind {
        frame::SESSION_START => vec![metadata(data, at)],
        frame::SESSION_RESUME => vec![RecordItem::Resumed, metadata(data, at)],
        frame::SESSION_SHUTDOWN => std::iter::once(RecordItem::Shutdown)
            .chain(
                data.model_metrics
                    .iter()
                    .map(|(m, raw)| summary(m, raw, at)),
            )
            .collect(),
        frame::USER_MESSAGE => vec![user(data, at)],
        frame::ASSISTANT_MESSAGE => assistant(data, at),
        frame::ASSISTANT_REASONING => vec![reasoning(data.reasoning_id.clone(), data, at)],
        "assistant.turn_start" => turn(data, |turn_id| RecordItem::TurnStarted { turn_id }),
        TURN_END => turn(data, |turn_id| RecordItem::TurnEnded { turn_id }),
        "tool.execution_start" => tool_started(data).into_iter().collect(),
        frame::TOOL_EXECUTION_COMPLETE => tool_finished(data).into_iter().collect(),
        "session.usage_record" => data.usage.iter().map(|u| usage(u, at)).collect(),
        _ => return None,
    };
    Some(items)
}

fn metadata(data: &Data, at: &RecordAt) -> RecordItem {
    let context = data.context.as_ref();
    RecordItem::Metadata(SessionMetadata {
        record: at.clone(),
        agent_version: data.copilot_version.clone(),
        head_commit: context.and_then(|c| c.head_commit.clone()),
        cwd: context.and_then(|c| c.cwd.clone()),
        model: data.selected_model.clone(),
    })
}

fn user(data: &Data, at: &RecordAt) -> RecordItem {
    RecordItem::UserMessage(MessageUser {
        record: at.clone(),
        message_id: data.message_id.clone(),
        text: data.content.clone(),
        source: data.source.clone().filter(|s| !s.is_empty()),
    })
}

fn assistant(data: &Data, at: &RecordAt) -> Vec<RecordItem> {
    let mut items = Vec::new();
    if data.reasoning_text.is_some() || data.reasoning_opaque.is_some() {
        items.push(RecordItem::Reasoning(ReasoningRecorded {
            record: at.clone(),
            message_id: data.message_id.clone(),
            text: data.reasoning_text.clone(),
            continuation: data.reasoning_opaque.clone(),
        }));
    }
    items.push(RecordItem::AssistantMessage(MessageAssistant {
        record: at.clone(),
        message_id: data.message_id.clone(),
        model: data.model.clone(),
        text: data.content.clone().filter(|text| !text.is_empty()),
        tool_call_ids: data
            .tool_requests
            .iter()
            .map(|r| r.tool_call_id.clone())
            .collect(),
    }));
    items
}

fn reasoning(message_id: Option<String>, data: &Data, at: &RecordAt) -> RecordItem {
    RecordItem::Reasoning(ReasoningRecorded {
        record: at.clone(),
        message_id,
        text: data.content.clone(),
        continuation: data.reasoning_opaque.clone(),
    })
}

fn turn(data: &Data, item: fn(String) -> RecordItem) -> Vec<RecordItem> {
    data.turn_id.clone().map(item).into_iter().collect()
}

fn tool_started(data: &Data) -> Option<RecordItem> {
    let input = data.arguments.as_ref().map(Json::from_value);
    Some(RecordItem::ToolStarted(RecordedCall {
        tool_call_id: data.tool_call_id.clone()?,
        tool_name: data.tool_name.clone()?,
        input_digest: input_digest(input.map(normalize_input).as_ref()),
        turn_id: data.turn_id.clone(),
    }))
}

fn tool_finished(data: &Data) -> Option<RecordItem> {
    Some(RecordItem::ToolFinished(RecordedResult {
        tool_call_id: data.tool_call_id.clone()?,
        success: data.success,
        exit_code: data.shell_execution.as_ref().and_then(|s| s.exit_code),
        turn_id: data.turn_id.clone(),
        output: data.result.as_ref().and_then(|r| r.content.clone()),
    }))
}

/// One call's usage, its token kinds normalized (Copilot's `inputTokens`
/// are the whole prompt, cache reads and cache writes included, with
/// either provider; harnery's `input_tokens` are neither) and the agent's
/// own numbers kept beside them in `raw`.
fn usage(usage: &UsageWire, at: &RecordAt) -> RecordItem {
    let raw = serde_json::json!({
        "inputTokens": usage.input_tokens,
        "outputTokens": usage.output_tokens,
        "cacheReadTokens": usage.cache_read_tokens,
        "cacheWriteTokens": usage.cache_write_tokens,
        "reasoningTokens": usage.reasoning_tokens,
    });
    RecordItem::Usage(UsageReported {
        record: at.clone(),
        message_id: usage
            .accounting
            .as_ref()
            .and_then(|a| a.usage_id.clone())
            .or_else(|| usage.api_call_id.clone()),
        model: usage.model.clone(),
        input_tokens: uncached_input(
            usage.input_tokens,
            usage.cache_read_tokens,
            usage.cache_write_tokens,
        ),
        output_tokens: usage.output_tokens,
        cache_read_tokens: usage.cache_read_tokens,
        cache_write_tokens: usage.cache_write_tokens,
        cost: usage.cost.clone(),
        duration_ms: usage.duration.and_then(millis),
        time_to_first_token_ms: usage.time_to_first_token_ms.and_then(millis),
        reasoning_tokens: usage.reasoning_tokens,
        raw: Some(Json::from_value(&raw)),
        copied_from_session: None,
    })
}

/// Copilot's `inputTokens` are the whole prompt: the real client adds the
/// cache reads and the cache writes to the provider's own input (seen with
/// the Anthropic provider, whose `input_tokens` exclude both, and with the
/// OpenAI one, whose `prompt_tokens` include both). The ledger's input is
/// the uncached part for every agent, so both are taken out once here.
pub(crate) fn uncached_input(
    input: Option<u64>,
    cache_read: Option<u64>,
    cache_write: Option<u64>,
) -> Option<u64> {
    let cached = cache_read
        .unwrap_or(0)
        .saturating_add(cache_write.unwrap_or(0));
    input.map(|n| n.saturating_sub(cached))
}

/// One model's totals at shutdown, token kinds normalized as for a call;
/// an entry in no known shape is unrecognized, the others still read.
fn summary(model: &str, raw: &RawValue, at: &RecordAt) -> RecordItem {
    let wire: ModelMetricsWire = match serde_json::from_str(raw.get()) {
        Ok(wire) => wire,
        Err(e) => {
            return RecordItem::Unrecognized {
                reason: format!("session.shutdown modelMetrics of {model:?}: {e}"),
            };
        }
    };
    let usage = wire.usage.unwrap_or_default();
    let requests = wire.requests.as_ref();
    RecordItem::UsageSummary(UsageSummary {
        record: at.clone(),
        model: model.to_string(),
        requests: requests.and_then(|r| r.count),
        premium_requests: requests.and_then(|r| r.cost.clone()),
        input_tokens: uncached_input(
            usage.input_tokens,
            usage.cache_read_tokens,
            usage.cache_write_tokens,
        ),
        output_tokens: usage.output_tokens,
        cache_read_tokens: usage.cache_read_tokens,
        cache_write_tokens: usage.cache_write_tokens,
        reasoning_tokens: usage.reasoning_tokens,
        credits_nano_aiu: wire.total_nano_aiu,
        raw: Json::parse(raw.get()).ok(),
    })
}

/// The session a record line says it belongs to: Copilot names the
/// session on `session.start` (its hook echoes carry a subagent's id, so
/// only that frame is looked at). Cheap for lines that name none.
pub(crate) fn line_session(line: &[u8]) -> Option<String> {
    #[derive(Deserialize)]
    struct NamedData {
        #[serde(rename = "sessionId")]
        session_id: Option<String>,
    }
    #[derive(Deserialize)]
    struct Named {
        #[serde(rename = "type")]
        kind: Option<String>,
        data: Option<NamedData>,
    }
    memchr::memmem::find(line, b"\"sessionId\"")?;
    let frame = parse_payload::<Named>(line).ok()?;
    (frame.kind.as_deref() == Some(self::frame::SESSION_START))
        .then_some(frame.data?.session_id)
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at() -> RecordAt {
        RecordAt {
            path: "events.jsonl".into(),
            offset: 3,
        }
    }

    fn read(kind: &str, data: &str) -> RecordLine {
        let line = format!(
            r#"{{"type":"{kind}","data":{data},"id":"e","timestamp":"2026-11-30T00:18:44.791Z","parentId":null}}"#
        );
        read_line(line.as_bytes(), &at())
    }

    #[test]
    fn session_start_is_metadata_with_the_head_commit() {
        let line = read(
            "session.start",
            r#"{"copilotVersion":"1.0.102","selectedModel":"gpt-4.1",
                "context":{"cwd":"/p","gitRoot":"/p","headCommit":"e1a6"}}"#,
        );
        assert_eq!(line.time_unix_ns, Some(1_795_997_924_791_000_000));
        assert_eq!(
            line.items,
            vec![RecordItem::Metadata(SessionMetadata {
                record: at(),
                agent_version: Some("1.0.102".into()),
                head_commit: Some("e1a6".into()),
                cwd: Some("/p".into()),
                model: Some("gpt-4.1".into()),
            })]
        );
    }

    #[test]
    fn an_assistant_message_lists_its_tool_calls_and_keeps_opaque_reasoning() {
        let line = read(
            "assistant.message",
            r#"{"messageId":"m","model":"gpt-4.1","content":"","turnId":"0",
                "reasoningText":"think","reasoningOpaque":"blob",
                "toolRequests":[{"toolCallId":"c1","name":"bash","arguments":{}}]}"#,
        );
        assert_eq!(line.native_turn_id.as_deref(), Some("0"));
        assert_eq!(
            line.items,
            vec![
                RecordItem::Reasoning(ReasoningRecorded {
                    record: at(),
                    message_id: Some("m".into()),
                    text: Some("think".into()),
                    continuation: Some("blob".into()),
                }),
                RecordItem::AssistantMessage(MessageAssistant {
                    record: at(),
                    message_id: Some("m".into()),
                    model: Some("gpt-4.1".into()),
                    text: None,
                    tool_call_ids: vec!["c1".into()],
                }),
            ]
        );
    }

    #[test]
    fn tool_frames_carry_ids_turns_digest_and_exit_code() {
        let start = read(
            "tool.execution_start",
            r#"{"toolCallId":"c1","toolName":"bash","arguments":{"command":"ls"},"turnId":"2"}"#,
        );
        let digest = input_digest(Json::parse(r#"{"command":"ls"}"#).ok().as_ref());
        assert_eq!(
            start.items,
            vec![RecordItem::ToolStarted(RecordedCall {
                tool_call_id: "c1".into(),
                tool_name: "bash".into(),
                input_digest: digest,
                turn_id: Some("2".into()),
            })]
        );
        let done = read(
            "tool.execution_complete",
            r#"{"toolCallId":"c1","success":false,"shellExecution":{"exitCode":3},"turnId":"2","result":{"content":"boom\n<shellId: 0 completed with exit code 3>"}}"#,
        );
        assert_eq!(
            done.items,
            vec![RecordItem::ToolFinished(RecordedResult {
                tool_call_id: "c1".into(),
                success: Some(false),
                exit_code: Some(3),
                turn_id: Some("2".into()),
                output: Some("boom\n<shellId: 0 completed with exit code 3>".into()),
            })]
        );
        // A result in a shape without text is no output, and no error.
        let odd = read(
            "tool.execution_complete",
            r#"{"toolCallId":"c2","success":true,"result":{"content":{"lines":3}}}"#,
        );
        assert!(matches!(
            &odd.items[..],
            [RecordItem::ToolFinished(RecordedResult {
                output: None,
                ..
            })]
        ));
    }

    #[test]
    fn a_usage_record_keeps_cost_as_written_and_rounds_latency() {
        // inputTokens include the cache reads and writes; input_tokens do
        // not, and the agent's numbers are kept as raw. The call's id keys it.
        let line = read(
            "session.usage_record",
            r#"{"usage":{"model":"gpt-4.1","inputTokens":100,"outputTokens":10,
                "cacheReadTokens":1,"cacheWriteTokens":2,"cost":0.0,"duration":34,
                "timeToFirstTokenMs":33.6,"apiCallId":"x"}}"#,
        );
        assert_eq!(
            line.items,
            vec![RecordItem::Usage(UsageReported {
                record: at(),
                message_id: Some("x".into()),
                model: Some("gpt-4.1".into()),
                input_tokens: Some(97),
                output_tokens: Some(10),
                cache_read_tokens: Some(1),
                cache_write_tokens: Some(2),
                cost: Json::parse("0.0").ok(),
                duration_ms: Some(34),
                time_to_first_token_ms: Some(34),
                reasoning_tokens: None,
                raw: Json::parse(
                    r#"{"cacheReadTokens":1,"cacheWriteTokens":2,"inputTokens":100,"outputTokens":10,"reasoningTokens":null}"#
                )
                .ok(),
                copied_from_session: None,
            })]
        );
    }

    #[test]
    fn turns_resume_shutdown_and_a_subagent_frame() {
        let turn = read("assistant.turn_end", r#"{"turnId":"4"}"#);
        assert_eq!(
            turn.items,
            vec![RecordItem::TurnEnded {
                turn_id: "4".into()
            }]
        );
        let resumed = read("session.resume", r#"{"selectedModel":"gpt-4.1"}"#);
        assert_eq!(resumed.items[0], RecordItem::Resumed);
        assert!(matches!(resumed.items[1], RecordItem::Metadata(_)));
        let shutdown = read("session.shutdown", r#"{"shutdownType":"routine"}"#);
        assert_eq!(shutdown.items, vec![RecordItem::Shutdown]);
        let sub = read_line(
            br#"{"type":"user.message","data":{"content":"go","turnId":"0"},"agentId":"a1"}"#,
            &at(),
        );
        assert_eq!(sub.agent_id.as_deref(), Some("a1"));
    }

    #[test]
    fn known_silent_frames_are_empty_and_the_rest_unrecognized() {
        let hook = read("hook.start", r#"{"hookType":"preToolUse","input":{}}"#);
        assert_eq!(hook.items, Vec::new());
        for bad in [
            r#"{"type":"session.start","data":"#.to_owned(),
            r#"{"type":"brand.new","data":{}}"#.to_owned(),
            r#"{"type":"user.message"}"#.to_owned(),
            r#"{"data":{}}"#.to_owned(),
        ] {
            let line = read_line(bad.as_bytes(), &at());
            assert!(
                matches!(line.items.as_slice(), [RecordItem::Unrecognized { .. }]),
                "{bad}"
            );
        }
    }

    #[test]
    fn only_session_start_names_the_session() {
        let start = br#"{"type":"session.start","data":{"sessionId":"c1"}}"#;
        assert_eq!(line_session(start).as_deref(), Some("c1"));
        let echo = br#"{"type":"hook.start","data":{"input":{"sessionId":"agent"}}}"#;
        assert_eq!(line_session(echo), None);
    }
}
