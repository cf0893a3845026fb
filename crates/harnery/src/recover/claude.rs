//! The Claude Code dialect: `~/.claude/projects/<dir>/<session>.jsonl`.
//!
//! Rows are JSON objects chained by `parentUuid`; `type` is not first, so the
//! scan looks for `"type":"user"` / `"type":"assistant"` anywhere in a line and
//! confirms with a parse. A `user` row is the human's direction when it is on
//! the main chain (not `isSidechain`), not `isMeta`, not a compaction summary,
//! not a slash-command echo, not a system notification, and carries text rather
//! than tool results. Everything else a user row can be is steering or activity.
//! The line's envelope, its message's content and that rule are the
//! agent's own reader's (`agents::claude_code::line`); this module renders
//! what it says.

use memchr::memmem::Finder;
use serde_json::Value;

use super::canonical::{Entry, EntryKind};
use super::copilot::value_text;
use super::stream::{
    ActivityRef, Dialect, RawMessage, ScanState, message_digest, salvage, trim_record,
};
use crate::agents::claude_code::line::{Frame, MessageContent, UserKind};

/// Classifies Claude Code transcript rows.
pub(crate) struct ClaudeDialect {
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
        let row: Frame<'_> = serde_json::from_slice(record).ok()?;
        let message: MessageContent = serde_json::from_str(row.message?.get()).ok()?;
        let mut entries = match row.kind.as_deref()? {
            "assistant" => assistant_entries(&message.content, cap),
            "user" => tool_result_entries(&message.content, cap),
            _ => return None,
        };
        for e in &mut entries {
            e.offset = Some(offset);
            e.timestamp = row.timestamp.as_deref().map(str::to_string);
            e.id = row.uuid.as_deref().map(str::to_string);
            if row.is_sidechain == Some(true) {
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
        let row: Frame<'_> = serde_json::from_slice(record).ok()?;
        let kind = row.kind.as_deref()?;
        state.records += 1;
        match kind {
            "user" => self.on_user(state, offset, record.len(), &row),
            "assistant" => push_activity(state, offset, record.len()),
            _ => {}
        }
        Some(())
    }

    fn on_user(&self, state: &mut ScanState, offset: u64, len: usize, row: &Frame<'_>) {
        let Some(message) = row
            .message
            .and_then(|m| serde_json::from_str::<MessageContent>(m.get()).ok())
        else {
            state.skipped.invalid += 1;
            return;
        };
        let text = content_text(&message.content);
        let source = match row.user_kind(&text, has_block(&message.content, "tool_result")) {
            UserKind::ToolResults => return push_activity(state, offset, len),
            UserKind::Meta => return,
            UserKind::Direct => None,
            UserKind::Steering(source) => Some(source),
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
