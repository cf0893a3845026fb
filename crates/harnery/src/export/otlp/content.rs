//! What of the agent's and the user's words a trace carries: nothing
//! (`otlp push --content none`, the default), the words with their
//! secrets masked by the shipper's own [`Masker`] (`masked`), or the words
//! as recorded (`full`); and `export --format otlp`'s own choice, which
//! writes no words but a command's argv as recorded, as it always did.
//!
//! The words are an event's prompt, an assistant message's text, a tool's
//! input and its result (the hook's, else the agent's record's). A worker
//! takes them out of the event as it parses it ([`SpanContent::words_of`]),
//! masks them and cuts each to [`TEXT_BYTES`], so what a session's trace
//! holds of them stays bounded whatever the rows' size; the spans carry
//! them as the GenAI conventions put them (`gen_ai.input.messages` and
//! `gen_ai.output.messages` on a model call, `gen_ai.tool.call.arguments`
//! and `gen_ai.tool.call.result` on a tool call).

use std::borrow::Cow;

use crate::contract::{Event, Payload};
use crate::fleet::Masker;
use crate::fleet::ship::Content;

/// The most bytes of one text a span carries (cut at a character
/// boundary, saying how much was left out).
pub const TEXT_BYTES: usize = 16 * 1024;

/// What of the words a trace carries.
#[derive(Clone, Copy)]
pub enum SpanContent<'m> {
    /// `export --format otlp`: no words; a command's argv as recorded.
    Export,
    /// Names, ids, times, outcomes and counts only: no words, no command
    /// line (a command span is `exec`, without its program).
    None,
    /// The words with their secrets masked as `ship --content masked`
    /// masks them (labels keyed by this host's ship key).
    Masked(&'m Masker),
    /// The words as recorded.
    Full,
}

impl<'m> SpanContent<'m> {
    /// `otlp push --content`'s mode, masking with `masker`.
    pub fn of(content: Content, masker: &'m Masker) -> SpanContent<'m> {
        match content {
            Content::Full => SpanContent::Full,
            Content::Masked => SpanContent::Masked(masker),
            Content::None => SpanContent::None,
        }
    }

    /// Whether spans carry words: rows must then be read whole, their
    /// text parsed (trace chunks hold none).
    pub(crate) fn carries_words(self) -> bool {
        matches!(self, SpanContent::Masked(_) | SpanContent::Full)
    }

    /// A command's argv as a span shows it: as recorded, masked, or not
    /// at all.
    pub(crate) fn argv<'a>(self, argv: &'a [String]) -> Option<Vec<Cow<'a, str>>> {
        match self {
            SpanContent::Export | SpanContent::Full => {
                Some(argv.iter().map(|a| Cow::Borrowed(a.as_str())).collect())
            }
            SpanContent::Masked(m) => Some(
                argv.iter()
                    .map(|a| Cow::Owned(m.mask_text(a, false, &mut Vec::new()).into_owned()))
                    .collect(),
            ),
            SpanContent::None => None,
        }
    }

    /// The words `event` carries into its trace (masked, cut), if spans
    /// carry words and it has some.
    pub(crate) fn words_of(self, event: &Event) -> Option<String> {
        if !self.carries_words() {
            return None;
        }
        let (text, json) = match &event.payload {
            Payload::PromptSubmitted(p) => (p.prompt.as_deref()?, false),
            Payload::MessageAssistant(p) => (p.text.as_deref()?, false),
            Payload::ToolRequested(p) => (p.input.as_ref()?.as_str(), true),
            Payload::ToolCompleted(p) => match (&p.content, &p.error) {
                (Some(c), _) => (c.as_str(), true),
                (None, Some(e)) => (e.as_str(), false),
                (None, None) => return None,
            },
            Payload::ToolRecorded(p) => (p.output.as_deref()?, false),
            _ => return None,
        };
        Some(self.shaped(text, json))
    }

    /// `text` masked (a JSON text as the shipper masks a row: a string
    /// under a key that names a secret masked whole) and cut.
    fn shaped(self, text: &str, json: bool) -> String {
        let masked = match self {
            SpanContent::Masked(m) if json => match m.mask(text.as_bytes()) {
                Some(masked) => Cow::Owned(String::from_utf8_lossy(&masked.text).into_owned()),
                None => Cow::Borrowed(text),
            },
            SpanContent::Masked(m) => m.mask_text(text, false, &mut Vec::new()),
            _ => Cow::Borrowed(text),
        };
        cut(&masked)
    }
}

/// `text` cut to [`TEXT_BYTES`] at a character boundary, naming what was
/// left out.
pub(super) fn cut(text: &str) -> String {
    if text.len() <= TEXT_BYTES {
        return text.to_string();
    }
    let mut end = TEXT_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} more bytes)", &text[..end], text.len() - end)
}

/// `gen_ai.input.messages` / `gen_ai.output.messages`: one message of
/// `role` with one text part, as the conventions' JSON schema has it.
pub(crate) fn messages(role: &str, text: &str) -> String {
    let mut out = String::from("[{\"role\":");
    crate::contract::json::string(&mut out, role);
    out.push_str(",\"parts\":[{\"type\":\"text\",\"content\":");
    crate::contract::json::string(&mut out, text);
    out.push_str("}]}]");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_text_is_cut_at_a_character_boundary_and_says_so() {
        let text = "é".repeat(TEXT_BYTES);
        let kept = cut(&text);
        assert!(kept.ends_with(&format!("… ({} more bytes)", TEXT_BYTES)));
        assert_eq!(cut("short"), "short");
    }

    #[test]
    fn a_message_is_the_conventions_json() {
        let m = messages("user", "say \"hi\"\n");
        let v: serde_json::Value = serde_json::from_str(&m).unwrap();
        assert_eq!(
            v,
            serde_json::json!([{"role": "user", "parts": [{"type": "text", "content": "say \"hi\"\n"}]}])
        );
    }
}
