//! The Copilot CLI dialect: `session-state/<id>/events.jsonl`.
//!
//! Every record is one JSON object per line, `type` first as the CLI writes
//! it (`{"type":"user.message","data":{...},"id":...,"timestamp":...}`).
//! A `user.message` without `data.source` is the human's own direction; one
//! with a source (`agent-<id>` from a subagent task, `skill-…`) is steering.
//! The scan parses user messages fully (they are rare and decide the packet)
//! and only notes where activity records are; everything else is classified
//! from its first bytes and never parsed.
//!
//! What a line *is* (its envelope, its frame types) is read by the one
//! reader of Copilot's record, `agents::copilot::record`, shared with the
//! finalizer, and what the shown frames' data holds by
//! `agents::copilot::frames`; this module turns them into packet entries.

use std::borrow::Cow;

use memchr::memmem::Finder;

use super::canonical::{Entry, EntryKind};
use super::stream::{
    ActivityRef, Dialect, RawMessage, ScanState, message_digest, salvage, trim_record,
};
use crate::agents::copilot::frames::{
    AssistantMessageData, ReasoningData, ToolCompleteData, UserMessageData, frame_type,
};
use crate::agents::copilot::record::{Envelope, frame};

const TYPE_PREFIX: &[u8] = b"{\"type\":\"";
const USER_MESSAGE: &str = frame::USER_MESSAGE;

/// Activity record types the packet shows (read again after the scan).
const ACTIVITY_TYPES: [&str; 3] = [
    frame::ASSISTANT_MESSAGE,
    frame::ASSISTANT_REASONING,
    frame::TOOL_EXECUTION_COMPLETE,
];

/// Classifies Copilot event lines.
pub(crate) struct CopilotDialect {
    user_needle: Finder<'static>,
}

impl Default for CopilotDialect {
    fn default() -> Self {
        CopilotDialect {
            user_needle: Finder::new(b"\"type\":\"user.message\"").into_owned(),
        }
    }
}

impl Dialect for CopilotDialect {
    fn on_line(&mut self, state: &mut ScanState, offset: u64, line: &[u8], terminated: bool) {
        let record = trim_record(line);
        if record.is_empty() {
            return;
        }
        let start = offset + (record.as_ptr() as usize - line.as_ptr() as usize) as u64;
        if self.classify(state, start, record).is_err() {
            self.salvage_line(state, start, record, terminated);
        }
    }

    fn type_of_head(&self, head: &[u8]) -> Option<String> {
        type_from_prefix(head).map(str::to_string)
    }

    fn is_user_message_type(&self, record_type: &str) -> bool {
        record_type == USER_MESSAGE
    }

    fn activity_entries(&self, offset: u64, record: &[u8], cap: usize) -> Option<Vec<Entry>> {
        let event = Envelope::read(record).ok()?;
        let id = event.id().ok()?;
        let data = event.data?;
        let mut entries = match event.kind.as_ref() {
            frame::ASSISTANT_MESSAGE => assistant_entries(data.get(), cap),
            frame::ASSISTANT_REASONING => reasoning_entries(data.get(), cap),
            frame::TOOL_EXECUTION_COMPLETE => tool_result_entries(data.get(), cap),
            _ => None,
        }?;
        for e in &mut entries {
            e.offset = Some(offset);
            e.timestamp = event.timestamp.as_deref().map(str::to_string);
            e.id = id.clone();
            e.source = event.agent_id.as_deref().map(|a| format!("subagent:{a}"));
        }
        Some(entries)
    }
}

/// Not a record this classifier could place; try to salvage it.
struct Unplaced;

impl CopilotDialect {
    fn classify(&self, state: &mut ScanState, offset: u64, record: &[u8]) -> Result<(), Unplaced> {
        if record.first() != Some(&b'{') || record.last() != Some(&b'}') {
            return Err(Unplaced);
        }
        if self.user_needle.find(record).is_some() {
            return self.parse_user_message(state, offset, record);
        }
        let kind = match type_from_prefix(record) {
            Some(kind) => Cow::Borrowed(kind),
            None => Cow::Owned(frame_type(record).ok_or(Unplaced)?),
        };
        note_record(state, offset, record.len(), &kind);
        Ok(())
    }

    fn parse_user_message(
        &self,
        state: &mut ScanState,
        offset: u64,
        record: &[u8],
    ) -> Result<(), Unplaced> {
        let event = Envelope::read(record).map_err(|_| Unplaced)?;
        let id = event.id().map_err(|_| Unplaced)?;
        if event.kind != USER_MESSAGE {
            note_record(state, offset, record.len(), &event.kind);
            return Ok(());
        }
        let Some(data) = event
            .data
            .and_then(|d| serde_json::from_str::<UserMessageData<'_>>(d.get()).ok())
        else {
            state.records += 1;
            state.skipped.invalid += 1;
            return Ok(());
        };
        state.records += 1;
        let text = data.content.as_deref().unwrap_or("");
        let mut entry = Entry::new(EntryKind::User, text, state.limits.text_cap);
        entry.offset = Some(offset);
        entry.timestamp = event.timestamp.as_deref().map(str::to_string);
        entry.id = id;
        entry.source = source_of(data.source.as_ref());
        let msg = RawMessage {
            digest: message_digest(text),
            entry,
        };
        if msg.entry.source.is_some() {
            state.steering.push(msg);
        } else {
            state.push_direct(msg);
        }
        Ok(())
    }

    fn salvage_line(&self, state: &mut ScanState, offset: u64, record: &[u8], terminated: bool) {
        let before = state.skipped.clone();
        let ranges = salvage(record, TYPE_PREFIX, &mut state.skipped);
        let mut placed = 0;
        for r in ranges {
            let piece = trim_record(&record[r.clone()]);
            let at = offset
                + r.start as u64
                + (piece.as_ptr() as usize - record[r].as_ptr() as usize) as u64;
            if self.classify(state, at, piece).is_ok() {
                placed += 1;
            } else {
                state.skipped.invalid += 1;
            }
        }
        let counted = state.skipped.total_skipped() > before.total_skipped();
        if placed == 0 && !counted {
            if terminated {
                state.skipped.torn += 1
            } else {
                state.skipped.unterminated_tail += 1
            }
        } else if !terminated && state.skipped.torn > before.torn {
            state.skipped.torn -= 1;
            state.skipped.unterminated_tail += 1;
        }
    }
}

/// A present, non-empty `data.source` marks steering. `null` or `""` count as
/// absent: the human's direction must never be filed away as steering.
fn source_of(source: Option<&serde_json::Value>) -> Option<String> {
    match source? {
        serde_json::Value::Null => None,
        serde_json::Value::String(s) if s.is_empty() => None,
        serde_json::Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

fn note_record(state: &mut ScanState, offset: u64, len: usize, kind: &str) {
    state.records += 1;
    if ACTIVITY_TYPES.contains(&kind) {
        if let Ok(len) = u32::try_from(len) {
            state.activity.push(ActivityRef { offset, len });
        }
        return;
    }
    let life = &mut state.lifecycle;
    match kind {
        frame::SESSION_START => life.starts += 1,
        frame::SESSION_RESUME => life.resumes += 1,
        frame::ABORT => life.aborts += 1,
        frame::SESSION_SHUTDOWN => {
            life.shutdowns += 1;
            life.last_shutdown_offset = Some(offset);
        }
        _ => {}
    }
}

/// The type named by a record that starts the way the CLI writes them.
fn type_from_prefix(record: &[u8]) -> Option<&str> {
    let rest = record.strip_prefix(TYPE_PREFIX)?;
    let end = memchr::memchr2(b'"', b'\\', &rest[..rest.len().min(128)])?;
    if rest[end] != b'"' {
        return None;
    }
    std::str::from_utf8(&rest[..end]).ok()
}

fn assistant_entries(data: &str, cap: usize) -> Option<Vec<Entry>> {
    let wire: AssistantMessageData<'_> = serde_json::from_str(data).ok()?;
    let mut out = Vec::new();
    if let Some(r) = wire.reasoning.as_deref().filter(|r| !r.is_empty()) {
        out.push(Entry::new(EntryKind::Reasoning, r, cap));
    }
    if let Some(c) = wire.content.as_deref().filter(|c| !c.is_empty()) {
        out.push(Entry::new(EntryKind::Assistant, c, cap));
    }
    for call in wire.tool_requests {
        let args = call.arguments.map(|a| a.to_string()).unwrap_or_default();
        let mut e = Entry::new(EntryKind::ToolCall, &args, cap);
        e.tool = call.name;
        e.call_id = call.call_id;
        out.push(e);
    }
    Some(out)
}

fn reasoning_entries(data: &str, cap: usize) -> Option<Vec<Entry>> {
    let wire: ReasoningData<'_> = serde_json::from_str(data).ok()?;
    Some(vec![Entry::new(
        EntryKind::Reasoning,
        wire.content.as_deref().unwrap_or(""),
        cap,
    )])
}

fn tool_result_entries(data: &str, cap: usize) -> Option<Vec<Entry>> {
    let wire: ToolCompleteData = serde_json::from_str(data).ok()?;
    let text = wire
        .result
        .as_ref()
        .and_then(|r| r.get("content"))
        .or(wire.error.as_ref().and_then(|e| e.get("message")))
        .or(wire.error.as_ref())
        .map(value_text)
        .unwrap_or_default();
    let mut e = Entry::new(EntryKind::ToolResult, &text, cap);
    e.call_id = wire.call_id;
    e.ok = wire.success;
    Some(vec![e])
}

/// A JSON value as display text: strings bare, anything else as JSON.
pub(crate) fn value_text(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_prefix_is_read_without_parsing() {
        assert_eq!(
            type_from_prefix(br#"{"type":"session.info","data":{}}"#),
            Some("session.info")
        );
        assert_eq!(type_from_prefix(br#"{"data":{},"type":"x"}"#), None);
    }

    #[test]
    fn null_or_empty_source_is_direct() {
        assert_eq!(source_of(None), None);
        assert_eq!(source_of(Some(&serde_json::Value::Null)), None);
        assert_eq!(source_of(Some(&serde_json::json!(""))), None);
        assert_eq!(
            source_of(Some(&serde_json::json!("agent-1"))),
            Some("agent-1".into())
        );
    }
}
