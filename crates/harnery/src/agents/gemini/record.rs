//! Gemini CLI's own record: `<home>/.gemini/tmp/<project>/chats/session-
//! <YYYY-MM-DDTHH-MM>-<first 8 of the session id>.jsonl`, appended one JSON
//! line at a time, in four kinds (the client's own reader,
//! `loadConversationRecord`, tells them apart in this order):
//!
//! - a rewind, `{"$rewindTo": <message id>}`: the conversation drops that
//!   message and every later one;
//! - a message, any line with a string `id`: an *upsert*, a later line with
//!   the same id stands for the same message (the client writes a model
//!   message once it is streamed, with its `tokens` and `model`, and the
//!   same message again, with `toolCalls`, once its tools ran);
//! - a metadata update, `{"$set": {…}}`: `lastUpdated`, `sessionId` on a
//!   resume, `summary`, `directories`, and `messages`, a restatement of the
//!   whole conversation (the synthetic `<session_context>` message at the
//!   start; on a resume the history rebuilt from the API's, without tokens,
//!   models or tool calls);
//! - a header, `{"sessionId", "projectHash", "startTime", …}`: the first
//!   line, and again at each resume.
//!
//! Read here, statelessly, line by line:
//!
//! - a `user` message with text is a [`RecordItem::UserMessage`] (one that
//!   only returns function responses to the model is none);
//! - a `gemini` message is its usage ([`RecordItem::Usage`], keyed by the
//!   message id, so the repeated line counts once) and, on the line without
//!   `toolCalls`, its text and thoughts; on the line with `toolCalls`, the
//!   calls: an assistant message naming them, and each call's start and
//!   finish (`status`; a shell call's exit code from its output text; the
//!   output, or the error, of its `functionResponse` is the result's
//!   text);
//! - a `$set` of `summary` is the session's title ([`RecordItem::Title`]);
//! - headers, the rest of `$set`, `$rewindTo` and `info` / `error` /
//!   `warning` messages carry nothing for the ledger; the session a line names is the
//!   header's `sessionId` (or a `$set`'s), except in a subagent's record
//!   (`kind: "subagent"`, `chats/<session>/<subagent>.jsonl`), whose header
//!   names the subagent and which is read as its session's.
//!
//! Tokens (`tokens {input, output, cached, thoughts, tool, total}`, the
//! API's `usageMetadata`): `input` includes `cached`, so harnery's input is
//! `input - cached + tool`; the client bills `thoughts` as output, so
//! harnery's output is `output + thoughts` with `thoughts` also given as
//! reasoning; the object as written is kept as `raw`.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::hooks::{SHELL_TOOL, shell_exit_code};
use crate::agents::record::{
    RecordItem, RecordLine, RecordTitle, RecordedCall, RecordedResult, parse_frame, time_ns,
};
use crate::agents::result_text::FunctionResult;
use crate::agents::wire::{input_digest, normalize_input, parse_payload, raw_json};
use crate::contract::{
    Json, MessageAssistant, MessageUser, ReasoningRecorded, RecordAt, UsageReported,
};

/// The part of a session id the client puts in its record's file name:
/// the first 8 characters, with what a file name may not hold as `_`.
pub(crate) fn file_id(session_id: &str) -> String {
    session_id
        .chars()
        .take(8)
        .map(
            |c| match c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                true => c,
                false => '_',
            },
        )
        .collect()
}

/// Every field of every line kind this reader looks at.
#[derive(Deserialize)]
struct Line<'a> {
    #[serde(rename = "$rewindTo", default, borrow)]
    rewind_to: Option<&'a RawValue>,
    #[serde(rename = "$set", default, borrow)]
    set: Option<&'a RawValue>,
    #[serde(rename = "sessionId", default)]
    session_id: Option<Cow<'a, str>>,
    #[serde(rename = "projectHash", default, borrow)]
    project_hash: Option<&'a RawValue>,
    /// The header's `kind`: `main`, or `subagent`.
    #[serde(rename = "kind", default)]
    record_kind: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    id: Option<&'a RawValue>,
    #[serde(default)]
    timestamp: Option<Cow<'a, str>>,
    #[serde(rename = "type", default)]
    kind: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    content: Option<&'a RawValue>,
    #[serde(default)]
    thoughts: Vec<Thought>,
    #[serde(default, borrow)]
    tokens: Option<&'a RawValue>,
    #[serde(default)]
    model: Option<String>,
    #[serde(rename = "toolCalls", default)]
    tool_calls: Option<Vec<CallWire>>,
}

#[derive(Deserialize)]
struct Thought {
    #[serde(default)]
    subject: Option<String>,
    #[serde(default)]
    description: Option<String>,
}

#[derive(Deserialize)]
struct Tokens {
    #[serde(default)]
    input: Option<u64>,
    #[serde(default)]
    output: Option<u64>,
    #[serde(default)]
    cached: Option<u64>,
    #[serde(default)]
    thoughts: Option<u64>,
    #[serde(default)]
    tool: Option<u64>,
}

#[derive(Deserialize)]
struct CallWire {
    id: String,
    name: String,
    #[serde(default, deserialize_with = "raw_json")]
    args: Option<Json>,
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    result: Option<Vec<ResultPart>>,
}

#[derive(Deserialize)]
struct ResultPart {
    #[serde(rename = "functionResponse", default)]
    function_response: Option<FunctionResponse>,
}

#[derive(Deserialize)]
struct FunctionResponse {
    #[serde(default)]
    response: Option<FunctionResult>,
}

/// One part of a message's content (`{"text": …}`; function calls and
/// responses have no text).
#[derive(Deserialize)]
struct Part<'a> {
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
}

/// Message types that carry nothing for the ledger (the client's notes to
/// the user).
const SILENT_TYPES: &[&str] = &["info", "error", "warning"];

/// Read one line of the record (without its newline): what it says, and
/// the session it names (`None`: it names none).
pub(crate) fn read_line(line: &[u8], at: &RecordAt) -> (RecordLine, Option<String>) {
    let wire: Line = match parse_frame(line) {
        Ok(wire) => wire,
        Err(unrecognized) => return (unrecognized, None),
    };
    if wire.rewind_to.is_some() {
        return (RecordLine::empty(), None);
    }
    if wire.id.is_some() {
        return (message(wire, at), None);
    }
    if let Some(set) = wire.set {
        let line = RecordLine {
            items: set_summary(set).into_iter().collect(),
            ..RecordLine::empty()
        };
        return (line, set_session(set));
    }
    match (wire.session_id, wire.project_hash) {
        // A subagent's record is read as its session's, which it does not
        // name: the header names the subagent's own id.
        (Some(_), Some(_)) if wire.record_kind.as_deref() == Some("subagent") => {
            (RecordLine::empty(), None)
        }
        (Some(session), Some(_)) => (RecordLine::empty(), Some(session.into_owned())),
        _ => (
            RecordLine::unrecognized("not a line kind Gemini CLI writes"),
            None,
        ),
    }
}

/// The session a line names, where it names one (a header, or a `$set` of
/// `sessionId`).
pub(crate) fn line_session(line: &[u8]) -> Option<String> {
    #[derive(Deserialize)]
    struct Named<'a> {
        #[serde(rename = "sessionId", default)]
        session_id: Option<String>,
        #[serde(default)]
        kind: Option<String>,
        #[serde(rename = "$set", default, borrow)]
        set: Option<&'a RawValue>,
    }
    let named: Named = parse_payload(line).ok()?;
    if named.kind.as_deref() == Some("subagent") {
        return None;
    }
    named.session_id.or_else(|| named.set.and_then(set_session))
}

fn set_session(set: &RawValue) -> Option<String> {
    #[derive(Deserialize)]
    struct Set {
        #[serde(rename = "sessionId", default)]
        session_id: Option<String>,
    }
    serde_json::from_str::<Set>(set.get()).ok()?.session_id
}

/// The session's summary a `$set` gives (the client's own title of the
/// session, shown in its session browser).
fn set_summary(set: &RawValue) -> Option<RecordItem> {
    #[derive(Deserialize)]
    struct Set {
        #[serde(default)]
        summary: Option<String>,
    }
    let summary = serde_json::from_str::<Set>(set.get()).ok()?.summary?;
    Some(RecordItem::Title(RecordTitle {
        title: summary,
        field: "summary".to_string(),
        user_named: None,
    }))
}

fn message(wire: Line, at: &RecordAt) -> RecordLine {
    let id = match wire.id.map(|raw| serde_json::from_str::<String>(raw.get())) {
        Some(Ok(id)) => id,
        _ => return RecordLine::unrecognized("a message whose id is not a string"),
    };
    let items = match wire.kind.as_deref() {
        Some("user") => user(&id, &wire, at),
        Some("gemini") => model(&id, &wire, at),
        Some(kind) if SILENT_TYPES.contains(&kind) => Vec::new(),
        other => {
            return RecordLine::unrecognized(format!("a message of unknown type {other:?}"));
        }
    };
    RecordLine {
        time_unix_ns: time_ns(wire.timestamp.as_deref()),
        items,
        ..RecordLine::empty()
    }
}

/// A message's text: a string content, or its text parts joined as the
/// client joins them (without a separator); the client's content type
/// also allows one part alone.
fn text_of(content: Option<&RawValue>) -> Option<String> {
    let raw = content?.get();
    if let Ok(text) = serde_json::from_str::<String>(raw) {
        return Some(text);
    }
    if let Ok(part) = serde_json::from_str::<Part>(raw) {
        return part.text.map(Cow::into_owned);
    }
    let parts: Vec<Part> = serde_json::from_str(raw).ok()?;
    let texts: Vec<&str> = parts.iter().filter_map(|p| p.text.as_deref()).collect();
    (!texts.is_empty()).then(|| texts.concat())
}

fn user(id: &str, wire: &Line, at: &RecordAt) -> Vec<RecordItem> {
    text_of(wire.content)
        .map(|text| {
            RecordItem::UserMessage(MessageUser {
                record: at.clone(),
                message_id: Some(id.to_string()),
                text: Some(text),
                source: None,
            })
        })
        .into_iter()
        .collect()
}

fn model(id: &str, wire: &Line, at: &RecordAt) -> Vec<RecordItem> {
    let mut items = Vec::new();
    match &wire.tool_calls {
        // The message again, now with the calls its tools ran: its text
        // and thoughts were on its first line.
        Some(calls) => {
            items.push(assistant(id, wire, None, calls, at));
            for call in calls {
                items.extend(tool_items(call));
            }
        }
        None => {
            items.extend(wire.thoughts.iter().filter_map(|t| reasoning(id, t, at)));
            let text = text_of(wire.content).filter(|t| !t.is_empty());
            if text.is_some() {
                items.push(assistant(id, wire, text, &[], at));
            }
        }
    }
    match wire
        .tokens
        .map(|raw| (raw, serde_json::from_str::<Tokens>(raw.get())))
    {
        Some((raw, Ok(tokens))) => items.push(usage(id, wire, &tokens, raw, at)),
        Some((_, Err(e))) => items.push(RecordItem::Unrecognized {
            reason: format!("tokens of message {id:?}: {e}"),
        }),
        None => {}
    }
    items
}

fn assistant(
    id: &str,
    wire: &Line,
    text: Option<String>,
    calls: &[CallWire],
    at: &RecordAt,
) -> RecordItem {
    RecordItem::AssistantMessage(MessageAssistant {
        record: at.clone(),
        message_id: Some(id.to_string()),
        model: wire.model.clone(),
        text,
        tool_call_ids: calls.iter().map(|c| c.id.clone()).collect(),
    })
}

fn reasoning(id: &str, thought: &Thought, at: &RecordAt) -> Option<RecordItem> {
    let parts: Vec<&str> = [&thought.subject, &thought.description]
        .into_iter()
        .filter_map(|p| p.as_deref().filter(|s| !s.is_empty()))
        .collect();
    (!parts.is_empty()).then(|| {
        RecordItem::Reasoning(ReasoningRecorded {
            record: at.clone(),
            message_id: Some(id.to_string()),
            text: Some(parts.join("\n")),
            continuation: None,
        })
    })
}

/// A finished call's start and finish. The client writes a call only once
/// it finished (`success`, `error` or `cancelled`); a status it never
/// ends on leaves the call started.
fn tool_items(call: &CallWire) -> Vec<RecordItem> {
    let input = call.args.clone().map(normalize_input);
    let started = RecordItem::ToolStarted(RecordedCall {
        tool_call_id: call.id.clone(),
        tool_name: call.name.clone(),
        input_digest: input_digest(input.as_ref()),
        turn_id: None,
    });
    let success = match call.status.as_deref() {
        Some("success") => Some(true),
        Some("error" | "cancelled") => Some(false),
        _ => return vec![started],
    };
    let exit_code = match call.name == SHELL_TOOL {
        true => output_of(call).and_then(shell_exit_code),
        false => None,
    };
    let finished = RecordItem::ToolFinished(RecordedResult {
        tool_call_id: call.id.clone(),
        success,
        exit_code,
        turn_id: None,
        output: result_of(call),
    });
    vec![started, finished]
}

/// The call's function response.
fn response_of(call: &CallWire) -> Option<&FunctionResult> {
    call.result
        .as_deref()?
        .iter()
        .find_map(|p| p.function_response.as_ref()?.response.as_ref())
}

/// The text the call returned to the model.
fn output_of(call: &CallWire) -> Option<&str> {
    response_of(call)?.output.as_deref()
}

/// The text the call returned to the model, or the error it reported.
fn result_of(call: &CallWire) -> Option<String> {
    response_of(call)?.text()
}

fn usage(id: &str, wire: &Line, tokens: &Tokens, raw: &RawValue, at: &RecordAt) -> RecordItem {
    let cached = tokens.cached;
    let input = tokens
        .input
        .map(|i| i.saturating_sub(cached.unwrap_or(0)) + tokens.tool.unwrap_or(0));
    let output = match (tokens.output, tokens.thoughts) {
        (None, None) => None,
        (o, t) => Some(o.unwrap_or(0) + t.unwrap_or(0)),
    };
    RecordItem::Usage(UsageReported {
        record: at.clone(),
        message_id: Some(id.to_string()),
        model: wire.model.clone(),
        input_tokens: input,
        output_tokens: output,
        cache_read_tokens: cached,
        cache_write_tokens: None,
        cost: None,
        duration_ms: None,
        time_to_first_token_ms: None,
        reasoning_tokens: tokens.thoughts,
        raw: Json::parse(raw.get()).ok(),
        copied_from_session: None,
    })
}

#[cfg(test)]
#[path = "record_tests.rs"]
mod tests;
