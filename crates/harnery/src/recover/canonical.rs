//! The one vocabulary every packet speaks, whatever the agent's dialect:
//! `user`, `assistant`, `reasoning`, `tool-call`, `tool-result` (the names of
//! the session normalizers), plus the bounded ring that keeps the newest few.

use std::collections::VecDeque;

use serde::Serialize;

/// What a conversation entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum EntryKind {
    User,
    Assistant,
    Reasoning,
    ToolCall,
    ToolResult,
}

impl EntryKind {
    /// The canonical name, as in JSON.
    pub(crate) fn name(self) -> &'static str {
        match self {
            EntryKind::User => "user",
            EntryKind::Assistant => "assistant",
            EntryKind::Reasoning => "reasoning",
            EntryKind::ToolCall => "tool-call",
            EntryKind::ToolResult => "tool-result",
        }
    }
}

/// One normalized entry. `text` may already be cut; `text_bytes` is the
/// length of the whole text in the source.
#[derive(Debug, Clone, Serialize)]
pub struct Entry {
    pub kind: EntryKind,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
    /// Byte offset of the source record in the stream (raw parts only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offset: Option<u64>,
    /// The record's own id (Copilot event id, Claude Code uuid).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Where a sourced message came from (`agent-…`, `skill-…`, `sidechain`, ...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// Tool name for tool calls and results.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// Tool call id, to pair calls with results.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    /// For tool results: whether the tool reported success.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ok: Option<bool>,
    pub text: String,
    pub text_bytes: usize,
}

impl Entry {
    /// An entry whose text is cut to at most `cap` bytes.
    pub(crate) fn new(kind: EntryKind, text: &str, cap: usize) -> Entry {
        Entry {
            kind,
            timestamp: None,
            offset: None,
            id: None,
            source: None,
            tool: None,
            call_id: None,
            ok: None,
            text: cut(text, cap).to_string(),
            text_bytes: text.len(),
        }
    }

    /// Whether the text was cut.
    pub(crate) fn is_cut(&self) -> bool {
        self.text.len() < self.text_bytes
    }
}

/// The longest prefix of `text` of at most `cap` bytes that ends on a char boundary.
pub(crate) fn cut(text: &str, cap: usize) -> &str {
    if text.len() <= cap {
        return text;
    }
    let mut end = cap;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// Keeps the newest `capacity` items pushed, and how many were pushed.
#[derive(Debug, Clone)]
pub(crate) struct Ring<T> {
    items: VecDeque<T>,
    capacity: usize,
    seen: u64,
}

impl<T> Ring<T> {
    pub(crate) fn new(capacity: usize) -> Ring<T> {
        Ring {
            items: VecDeque::with_capacity(capacity.min(1024)),
            capacity,
            seen: 0,
        }
    }

    pub(crate) fn push(&mut self, item: T) {
        self.seen += 1;
        if self.capacity == 0 {
            return;
        }
        if self.items.len() == self.capacity {
            self.items.pop_front();
        }
        self.items.push_back(item);
    }

    /// Everything ever pushed, kept or not.
    pub(crate) fn seen(&self) -> u64 {
        self.seen
    }

    /// Newest first.
    pub(crate) fn newest_first(&self) -> impl Iterator<Item = &T> {
        self.items.iter().rev()
    }

    pub(crate) fn newest(&self) -> Option<&T> {
        self.items.back()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_keeps_newest_and_counts_all() {
        let mut r = Ring::new(2);
        for i in 0..5 {
            r.push(i);
        }
        assert_eq!(r.seen(), 5);
        assert_eq!(r.newest_first().copied().collect::<Vec<_>>(), [4, 3]);
    }

    #[test]
    fn cut_respects_char_boundaries() {
        assert_eq!(cut("héllo", 2), "h");
        assert_eq!(cut("héllo", 3), "hé");
        assert_eq!(cut("abc", 10), "abc");
    }
}
