//! OpenCode's record, one rendered journal row at a time (see `store` for
//! the rendering): what each row says in harnery's terms.
//!
//! - a user's text part: the user message (the prompt as OpenCode stored
//!   it; `opencode run` wraps a prompt holding spaces in double quotes, in
//!   its hooks too);
//! - a finished text or reasoning part of the model: the assistant message
//!   or its reasoning;
//! - a tool part: the call once it is under way (`starts`), its result once
//!   it is `completed` (the shell tool's `metadata.exit`; the state's
//!   `output` is the result's text) or `error` (its `error` is the text);
//! - a finished assistant message: one model call's usage. OpenCode's
//!   `tokens.input` leaves cache reads out and `tokens.output` leaves
//!   reasoning out (they are `cache.read` and `reasoning`), which is how
//!   harnery counts them; `cost` is OpenCode's own figure;
//! - `session.created`: the session's metadata (OpenCode's version, the
//!   directory);
//! - `session.created` and `session.updated`: the session's `title`
//!   ([`RecordItem::Title`]) once it is not OpenCode's placeholder (`New
//!   session - <time>`, until its title request answers); every
//!   `session.updated` repeats it, and the session takes only a change.
//!
//! Every other row (a user message's own row, a part's intermediate
//! states, step markers) says nothing for the ledger.

use serde::Deserialize;
use serde_json::Value;

use crate::agents::record::{
    LineMark, RecordItem, RecordLine, RecordTitle, RecordedCall, RecordedResult, parse_frame,
};
use crate::agents::wire::{input_digest, normalize_input};
use crate::contract::{
    Json, MessageAssistant, MessageUser, ReasoningRecorded, RecordAt, SessionMetadata,
    UsageReported,
};

/// One rendered journal row.
#[derive(Debug, Deserialize)]
struct Row {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    role: Option<String>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    starts: bool,
    #[serde(default)]
    ends: bool,
    #[serde(default)]
    data: Option<Value>,
}

/// Read one line of the rendering.
pub(crate) fn read_marked(
    line: &[u8],
    at: &RecordAt,
) -> (RecordLine, Option<Option<String>>, LineMark) {
    let row: Row = match parse_frame(line) {
        Ok(row) => row,
        Err(unrecognized) => return (unrecognized, None, LineMark::None),
    };
    let Some(data) = row.data.as_ref() else {
        let line = RecordLine::unrecognized(format!("a {} row whose data is not JSON", row.kind));
        return (line, Some(None), LineMark::None);
    };
    let session = data["sessionID"].as_str().map(str::to_string);
    let mut line = RecordLine::empty();
    line.time_unix_ns = row_time(&row, data);
    match kind_base(&row.kind) {
        "session.created" => {
            line.items.push(metadata(data, at));
            line.items.extend(title(data));
        }
        "session.updated" => line.items.extend(title(data)),
        "message.updated" => {
            if row.ends {
                line.items.push(usage(&data["info"], at));
            }
        }
        "message.part.updated" => line.items.extend(part_items(&row, &data["part"], at)),
        other => line = RecordLine::unrecognized(format!("unknown journal row type {other:?}")),
    }
    (line, Some(session), LineMark::None)
}

/// The session a line names.
pub(crate) fn line_session(line: &[u8]) -> Option<String> {
    let row: Row = parse_frame(line).ok()?;
    row.data?["sessionID"].as_str().map(str::to_string)
}

/// `message.updated.1` → `message.updated`: the journal versions its types.
fn kind_base(kind: &str) -> &str {
    match kind.rsplit_once('.') {
        Some((base, version)) if version.bytes().all(|b| b.is_ascii_digit()) => base,
        _ => kind,
    }
}

/// The row's time: the event's own (`time`, epoch ms, on part rows), else
/// the message's completion or creation.
fn row_time(row: &Row, data: &Value) -> Option<i64> {
    let ms = data["time"].as_i64().or_else(|| {
        let t = &data["info"]["time"];
        if row.kind.starts_with("message.") {
            t["completed"].as_i64().or_else(|| t["created"].as_i64())
        } else {
            t["updated"].as_i64().or_else(|| t["created"].as_i64())
        }
    })?;
    ms.checked_mul(1_000_000)
}

fn text(v: &Value) -> Option<String> {
    v.as_str().map(str::to_string)
}

/// The session's title, unless it is OpenCode's placeholder for one not
/// made yet (`New session - ` or `Child session - ` and the time).
fn title(data: &Value) -> Option<RecordItem> {
    let title = data["info"]["title"].as_str()?;
    let placeholder = ["New session - ", "Child session - "]
        .iter()
        .filter_map(|p| title.strip_prefix(p))
        .any(|rest| crate::clock::parse_rfc3339_ns(rest).is_some());
    (!placeholder).then(|| {
        RecordItem::Title(RecordTitle {
            title: title.to_string(),
            field: "title".to_string(),
            user_named: None,
        })
    })
}

fn metadata(data: &Value, at: &RecordAt) -> RecordItem {
    let info = &data["info"];
    RecordItem::Metadata(SessionMetadata {
        record: at.clone(),
        agent_version: text(&info["version"]),
        head_commit: None,
        cwd: text(&info["directory"]),
        model: None,
    })
}

fn usage(info: &Value, at: &RecordAt) -> RecordItem {
    let tokens = &info["tokens"];
    RecordItem::Usage(UsageReported {
        record: at.clone(),
        message_id: text(&info["id"]),
        model: text(&info["modelID"]),
        input_tokens: tokens["input"].as_u64(),
        output_tokens: tokens["output"].as_u64(),
        cache_read_tokens: tokens["cache"]["read"].as_u64(),
        cache_write_tokens: tokens["cache"]["write"].as_u64(),
        cost: info.get("cost").map(Json::from_value),
        duration_ms: match (
            info["time"]["created"].as_u64(),
            info["time"]["completed"].as_u64(),
        ) {
            (Some(start), Some(end)) => end.checked_sub(start),
            _ => None,
        },
        time_to_first_token_ms: None,
        reasoning_tokens: tokens["reasoning"].as_u64(),
        raw: (!tokens.is_null()).then(|| Json::from_value(tokens)),
        copied_from_session: None,
    })
}

fn part_items(row: &Row, part: &Value, at: &RecordAt) -> Vec<RecordItem> {
    let message_id = text(&part["messageID"]);
    match part["type"].as_str() {
        Some("text") if row.ends && part["synthetic"] != Value::Bool(true) => {
            match row.role.as_deref() {
                Some("user") => vec![RecordItem::UserMessage(MessageUser {
                    record: at.clone(),
                    message_id,
                    text: text(&part["text"]),
                    source: None,
                })],
                Some("assistant") => vec![RecordItem::AssistantMessage(MessageAssistant {
                    record: at.clone(),
                    message_id,
                    model: row.model.clone(),
                    text: text(&part["text"]),
                    tool_call_ids: Vec::new(),
                })],
                _ => Vec::new(),
            }
        }
        Some("reasoning") if row.ends => vec![RecordItem::Reasoning(ReasoningRecorded {
            record: at.clone(),
            message_id,
            text: text(&part["text"]),
            continuation: None,
        })],
        Some("tool") => tool_items(row, part),
        _ => Vec::new(),
    }
}

fn tool_items(row: &Row, part: &Value) -> Vec<RecordItem> {
    let (Some(call_id), Some(tool)) = (text(&part["callID"]), text(&part["tool"])) else {
        return Vec::new();
    };
    let state = &part["state"];
    let mut items = Vec::new();
    if row.starts {
        let input = state
            .get("input")
            .map(|i| normalize_input(Json::from_value(i)));
        items.push(RecordItem::ToolStarted(RecordedCall {
            tool_call_id: call_id.clone(),
            tool_name: tool,
            input_digest: input_digest(input.as_ref()),
            turn_id: None,
        }));
    }
    if row.ends {
        let exit_code = state["metadata"]["exit"].as_i64();
        let success = match state["status"].as_str() {
            Some("error") => false,
            _ => exit_code.is_none_or(|c| c == 0),
        };
        // The text the model was given: a finished call's output, a failed
        // (or rejected) one's error.
        let output = match state["status"].as_str() {
            Some("error") => text(&state["error"]),
            _ => text(&state["output"]),
        };
        items.push(RecordItem::ToolFinished(RecordedResult {
            tool_call_id: call_id,
            success: Some(success),
            exit_code,
            turn_id: None,
            output,
        }));
    }
    items
}
