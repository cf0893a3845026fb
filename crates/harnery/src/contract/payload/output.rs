//! How much of a tool result's text a `tool.recorded` (generation 11) or a
//! `tool.batch_result` (generation 12) keeps, and the cut that keeps it.

use serde::{Deserialize, Serialize};

use super::ToolRecorded;
use crate::contract::EventId;

payload_struct!(
    /// One call's result as a hook's batch summary lists it (generation
    /// 12): the text the model was given (Claude Code's `PostToolBatch`
    /// `tool_response`, a string or its text blocks joined by newlines),
    /// written after the batch's `tool.batch_completed` for a call whose
    /// span is known, unless that call's hook completion already holds the
    /// same text as one of its strings (one of the first eight of a content
    /// of at most 64 KiB). Hostile text, kept as written up to
    /// [`OUTPUT_CAP`] bytes. Evidence, never a terminal: the span's own
    /// rows stay as they are.
    ToolBatchResult {
        #[serde(default)] tool_call_id: Option<String>,
        tool_name: String,
        /// The request of the call's span, open or closed.
        #[serde(default)] requested_event_id: Option<EventId>,
        output: String,
        /// How many bytes of the text were cut off at [`OUTPUT_CAP`]; absent
        /// when it is whole.
        #[serde(default, skip_serializing_if = "Option::is_none")] output_cut_bytes: Option<u64>,
    }
);

/// The most bytes of a recorded tool result's text a `tool.recorded`
/// keeps (generation 11); the rest is counted in `output_cut_bytes` and
/// stays in the raw archive.
pub const OUTPUT_CAP: usize = 64 * 1024;

impl ToolRecorded {
    /// `text`, cut at [`OUTPUT_CAP`] bytes (see [`capped_output`]).
    pub fn capped_output(text: String) -> (String, Option<u64>) {
        capped_output(text)
    }
}

/// `text`, cut at [`OUTPUT_CAP`] bytes (at a character boundary), and how
/// many bytes were cut off (`None`: none).
pub fn capped_output(mut text: String) -> (String, Option<u64>) {
    if text.len() <= OUTPUT_CAP {
        return (text, None);
    }
    let mut end = OUTPUT_CAP;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let cut = (text.len() - end) as u64;
    text.truncate(end);
    (text, Some(cut))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_text_is_cut_at_a_character_boundary_and_says_how_much() {
        let whole = format!("a{}", "é".repeat(OUTPUT_CAP));
        let (kept, cut) = ToolRecorded::capped_output(whole.clone());
        // `a` then two-byte characters: the cap falls inside one.
        assert_eq!(kept.len(), OUTPUT_CAP - 1);
        assert!(whole.starts_with(&kept));
        assert_eq!(cut, Some((whole.len() - kept.len()) as u64));
        let short = "needs approval".to_string();
        assert_eq!(ToolRecorded::capped_output(short.clone()), (short, None));
        let exact = "x".repeat(OUTPUT_CAP);
        assert_eq!(ToolRecorded::capped_output(exact.clone()), (exact, None));
    }
}
