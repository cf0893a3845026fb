//! The Claude Code dialect: `~/.claude/projects/<dir>/<session>.jsonl`.
//!
//! Rows are JSON objects chained by `parentUuid`; `type` is not first, so the
//! scan looks for `"type":"user"` / `"type":"assistant"` anywhere in a line and
//! confirms with a parse. A `user` row is the human's direction when it is on
//! the main chain (not `isSidechain`), not `isMeta`, not a compaction summary,
//! not a slash-command echo, not a system notification, and carries text rather
//! than tool results. Everything else a user row can be is steering or activity.

use std::borrow::Cow;

use memchr::memmem::Finder;
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use super::canonical::{Entry, EntryKind};
use super::copilot::value_text;
use super::stream::{
    ActivityRef, Dialect, RawMessage, ScanState, message_digest, salvage, trim_record,
};

/// Classifies Claude Code transcript rows.
pub struct ClaudeDialect {
    user_needle: Finder<'static>,
    assistant_needle: Finder<'static>,
}

impl Default for ClaudeDialect {
    fn default() -> Self {
        ClaudeDialect {
            user_needle: Finder::new(b"\"type\":\"user\"").into_owned(),
            assistant_needle: Finder::new(b"\"type\":\"assistant\"").into_owned(),
        }
    }
}

#[derive(Deserialize)]
struct WireRow<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(borrow, default)]
    uuid: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    timestamp: Option<Cow<'a, str>>,
    #[serde(rename = "isSidechain", default)]
    sidechain: Option<bool>,
    #[serde(rename = "isMeta", default)]
    meta: Option<bool>,
    #[serde(rename = "isCompactSummary", default)]
    compact_summary: Option<bool>,
    #[serde(rename = "promptSource", borrow, default)]
    prompt_source: Option<Cow<'a, str>>,
    #[serde(rename = "turnOrigin", borrow, default)]
    turn_origin: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    message: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct WireMessage {
    #[serde(default)]
    content: Value,
}

/// What a user row is.
enum UserRow {
    Direct(String),
    Steering(String, String),
    ToolResults,
    Meta,
}

impl Dialect for ClaudeDialect {
    fn on_line(&mut self, state: &mut ScanState, offset: u64, line: &[u8], terminated: bool) {
        let record = trim_record(line);
        if record.is_empty() {
            return;
        }
        let start = offset + (record.as_ptr() as usize - line.as_ptr() as usize) as u64;
        if self.classify(state, start, record).is_some() {
            return;
        }
        let before = state.skipped.total_skipped();
        for r in salvage(record, b"{\"", &mut state.skipped) {
            let at = start + r.start as u64;
            if self.classify(state, at, &record[r]).is_none() {
                state.skipped.invalid += 1;
            }
        }
        if !terminated && state.skipped.total_skipped() > before && state.skipped.torn > 0 {
            state.skipped.torn -= 1;
            state.skipped.unterminated_tail += 1;
        }
    }

    fn type_of_head(&self, head: &[u8]) -> Option<String> {
        if self.user_needle.find(head).is_some() {
            Some("user".into())
        } else if self.assistant_needle.find(head).is_some() {
            Some("assistant".into())
        } else {
            None
        }
    }

    fn is_user_message_type(&self, record_type: &str) -> bool {
        record_type == "user"
    }

    fn activity_entries(&self, offset: u64, record: &[u8], cap: usize) -> Option<Vec<Entry>> {
        let row: WireRow<'_> = serde_json::from_slice(record).ok()?;
        let message: WireMessage = serde_json::from_str(row.message?.get()).ok()?;
        let mut entries = match row.kind.as_ref() {
            "assistant" => assistant_entries(&message.content, cap),
            "user" => tool_result_entries(&message.content, cap),
            _ => return None,
        };
        for e in &mut entries {
            e.offset = Some(offset);
            e.timestamp = row.timestamp.as_deref().map(str::to_string);
            e.id = row.uuid.as_deref().map(str::to_string);
            if row.sidechain == Some(true) {
                e.source = Some("sidechain".into());
            }
        }
        Some(entries)
    }
}

impl ClaudeDialect {
    /// `None` when the bytes are no JSON row at all.
    fn classify(&self, state: &mut ScanState, offset: u64, record: &[u8]) -> Option<()> {
        let maybe_user = self.user_needle.find(record).is_some();
        let maybe_assistant = self.assistant_needle.find(record).is_some();
        if !maybe_user && !maybe_assistant {
            let shaped = record.first() == Some(&b'{') && record.last() == Some(&b'}');
            state.records += u64::from(shaped);
            return shaped.then_some(());
        }
        let row: WireRow<'_> = serde_json::from_slice(record).ok()?;
        state.records += 1;
        match row.kind.as_ref() {
            "user" => self.on_user(state, offset, record.len(), &row),
            "assistant" => push_activity(state, offset, record.len()),
            _ => {}
        }
        Some(())
    }

    fn on_user(&self, state: &mut ScanState, offset: u64, len: usize, row: &WireRow<'_>) {
        let Some(message) = row
            .message
            .and_then(|m| serde_json::from_str::<WireMessage>(m.get()).ok())
        else {
            state.skipped.invalid += 1;
            return;
        };
        let (text, source) = match classify_user(row, &message.content) {
            UserRow::ToolResults => return push_activity(state, offset, len),
            UserRow::Meta => return,
            UserRow::Direct(text) => (text, None),
            UserRow::Steering(text, source) => (text, Some(source)),
        };
        let mut entry = Entry::new(EntryKind::User, &text, state.limits.text_cap);
        entry.offset = Some(offset);
        entry.timestamp = row.timestamp.as_deref().map(str::to_string);
        entry.id = row.uuid.as_deref().map(str::to_string);
        entry.source = source;
        let msg = RawMessage {
            digest: message_digest(&text),
            entry,
        };
        if msg.entry.source.is_some() {
            state.steering.push(msg);
        } else {
            state.push_direct(msg);
        }
    }
}

fn classify_user(row: &WireRow<'_>, content: &Value) -> UserRow {
    if has_block(content, "tool_result") {
        return UserRow::ToolResults;
    }
    if row.meta == Some(true) {
        return UserRow::Meta;
    }
    let text = content_text(content);
    let steering = |s: &str| UserRow::Steering(text.clone(), s.to_string());
    if row.sidechain == Some(true) {
        return steering("sidechain");
    }
    if row.compact_summary == Some(true) {
        return steering("compact-summary");
    }
    let trimmed = text.trim_start();
    if trimmed.starts_with("<command-name>") || trimmed.starts_with("<local-command-") {
        return steering("local-command");
    }
    let origin = row.turn_origin.as_deref().unwrap_or("");
    if row.prompt_source.as_deref() == Some("system") || origin == "task_notification" {
        return UserRow::Steering(
            text.clone(),
            format!(
                "system:{}",
                if origin.is_empty() {
                    "notification"
                } else {
                    origin
                }
            ),
        );
    }
    UserRow::Direct(text)
}

fn has_block(content: &Value, kind: &str) -> bool {
    content.as_array().is_some_and(|blocks| {
        blocks
            .iter()
            .any(|b| b.get("type").and_then(Value::as_str) == Some(kind))
    })
}

/// The text of a message: a bare string, or its text blocks joined.
fn content_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

fn push_activity(state: &mut ScanState, offset: u64, len: usize) {
    if let Ok(len) = u32::try_from(len) {
        state.activity.push(ActivityRef { offset, len });
    }
}

fn assistant_entries(content: &Value, cap: usize) -> Vec<Entry> {
    let Value::Array(blocks) = content else {
        return vec![Entry::new(EntryKind::Assistant, &value_text(content), cap)];
    };
    blocks
        .iter()
        .filter_map(|b| assistant_block(b, cap))
        .collect()
}

fn assistant_block(block: &Value, cap: usize) -> Option<Entry> {
    let field = |name: &str| block.get(name).and_then(Value::as_str).unwrap_or("");
    match block.get("type").and_then(Value::as_str)? {
        "text" => Some(Entry::new(EntryKind::Assistant, field("text"), cap)),
        "thinking" => Some(Entry::new(EntryKind::Reasoning, field("thinking"), cap)),
        "redacted_thinking" => Some(Entry::new(EntryKind::Reasoning, "[redacted]", cap)),
        "tool_use" => {
            let input = block.get("input").map(Value::to_string).unwrap_or_default();
            let mut e = Entry::new(EntryKind::ToolCall, &input, cap);
            e.tool = Some(field("name").to_string());
            e.call_id = Some(field("id").to_string());
            Some(e)
        }
        _ => None,
    }
}

fn tool_result_entries(content: &Value, cap: usize) -> Vec<Entry> {
    let Value::Array(blocks) = content else {
        return Vec::new();
    };
    blocks
        .iter()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"))
        .map(|b| {
            let text = b.get("content").map(content_or_text).unwrap_or_default();
            let mut e = Entry::new(EntryKind::ToolResult, &text, cap);
            e.call_id = b
                .get("tool_use_id")
                .and_then(Value::as_str)
                .map(str::to_string);
            e.ok = Some(!b.get("is_error").and_then(Value::as_bool).unwrap_or(false));
            e
        })
        .collect()
}

fn content_or_text(v: &Value) -> String {
    match v {
        Value::Array(_) => content_text(v),
        other => value_text(other),
    }
}
