//! The `message` of a Claude Code `user` or `assistant` line: its content
//! blocks, and a user message's content (a bare string or blocks) read in
//! one pass over its text.
//!
//! A user message's content is read by a visitor that sees the string or
//! the list as it comes, so the whole content (every tool result's output
//! with it) is never buffered to try each shape. Where the visitor and a
//! buffered untagged read could differ (any content the visitor refuses,
//! and a block with an `input`, which the buffered read cannot take) the
//! message is read again the buffered way, so a line reads the same (its
//! items, or why it is in no known shape) either way.

use serde::Deserialize;
use serde::de::{SeqAccess, Visitor};

use crate::agents::result_text::result_text;
use crate::agents::wire::raw_json;
use crate::contract::Json;

/// A content block, every kind in one struct: an internally tagged enum
/// would buffer the block and lose the tool input's text.
#[derive(Debug, Deserialize)]
pub(super) struct Block {
    #[serde(rename = "type")]
    pub kind: String,
    pub text: Option<String>,
    pub thinking: Option<String>,
    pub signature: Option<String>,
    pub data: Option<String>,
    pub id: Option<String>,
    pub name: Option<String>,
    #[serde(default, deserialize_with = "raw_json")]
    pub input: Option<Json>,
    pub tool_use_id: Option<String>,
    pub is_error: Option<bool>,
    /// A `tool_result`'s content, as text (see `result_text`).
    #[serde(default, deserialize_with = "result_text")]
    pub content: Option<String>,
}

/// A user message's content.
#[derive(Debug)]
pub(super) enum Content {
    Text(String),
    Blocks(Vec<Block>),
}

/// A user message's content, read in one pass (see the module note):
/// what the buffered read gives, or its error.
pub(super) fn user_content(message: &str) -> Result<Content, serde_json::Error> {
    match serde_json::from_str::<UserWire>(message).map(|wire| wire.content.taken_as_buffered()) {
        Ok(Some(content)) => Ok(content),
        _ => buffered(message),
    }
}

/// The buffered read: the untagged enum, as user messages were read.
fn buffered(message: &str) -> Result<Content, serde_json::Error> {
    #[derive(Deserialize)]
    struct Wire {
        content: Buffered,
    }
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Buffered {
        Text(String),
        Blocks(Vec<Block>),
    }
    serde_json::from_str::<Wire>(message).map(|wire| match wire.content {
        Buffered::Text(text) => Content::Text(text),
        Buffered::Blocks(blocks) => Content::Blocks(blocks),
    })
}

#[derive(Deserialize)]
struct UserWire {
    content: Content,
}

impl Content {
    /// The content as the visitor read it, when the buffered read gives
    /// the same: unless a block carries an `input`, which only the buffered
    /// read reads as it always did (`None`: read the message that way).
    pub(super) fn taken_as_buffered(self) -> Option<Content> {
        let has_input =
            matches!(&self, Content::Blocks(blocks) if blocks.iter().any(|b| b.input.is_some()));
        (!has_input).then_some(self)
    }
}

impl<'de> Deserialize<'de> for Content {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ContentVisitor)
    }
}

struct ContentVisitor;

impl<'de> Visitor<'de> for ContentVisitor {
    type Value = Content;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a string or a list of content blocks")
    }

    fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<Content, E> {
        Ok(Content::Text(text.to_owned()))
    }

    fn visit_string<E: serde::de::Error>(self, text: String) -> Result<Content, E> {
        Ok(Content::Text(text))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Content, A::Error> {
        let mut blocks = Vec::new();
        while let Some(block) = seq.next_element::<Block>()? {
            blocks.push(block);
        }
        Ok(Content::Blocks(blocks))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The one-pass read and the buffered one agree: the same content, or
    /// the same error.
    fn same(message: &str) {
        let fast = user_content(message).map_err(|e| e.to_string());
        let slow = buffered(message).map_err(|e| e.to_string());
        assert_eq!(format!("{fast:?}"), format!("{slow:?}"), "{message}");
    }

    #[test]
    fn both_reads_agree_on_every_shape() {
        for content in [
            r#""hi""#,
            r#""a\nb\u00e9\"""#,
            r#""""#,
            "[]",
            r#"[{"type":"text","text":"a"},{"type":"text","text":"b"}]"#,
            r#"[{"type":"tool_result","tool_use_id":"t","content":"out","is_error":true}]"#,
            r#"[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"x"}]}]"#,
            r#"[{"type":"image","source":{"data":"AAAA"}}]"#,
            r#"[{"type":"tool_use","id":"t","name":"Bash","input":{"command":"ls"}}]"#,
            r#"[{"type":"tool_use","id":"t","name":"Bash","input":null}]"#,
            r#"[{"type":"text","text":"a","text":"b"}]"#,
            r#"[{"text":"no type"}]"#,
            r#"[{"type":"text","text":5}]"#,
            r#"[{"type":"tool_result","is_error":"yes"}]"#,
            r#"["a string block"]"#,
            r#"[{"type":"text"},7]"#,
            "5",
            "true",
            "null",
            r#"{"type":"text"}"#,
        ] {
            same(&format!(r#"{{"role":"user","content":{content}}}"#));
            same(&format!(r#"{{"content":{content},"role":"user","id":1}}"#));
        }
        for message in [
            r#"{"role":"user"}"#,
            r#"{"content":"a","content":"b"}"#,
            r#"{"content":"a""#,
            "[]",
            "",
        ] {
            same(message);
        }
    }

    /// Every user message in the recorded transcripts reads the same both
    /// ways.
    #[test]
    fn both_reads_agree_on_the_recorded_transcripts() {
        let mut seen = 0;
        for path in super::super::recorded_transcripts() {
            let text = std::fs::read_to_string(&path).expect("a fixture reads");
            for line in text.lines() {
                #[derive(Deserialize)]
                struct Line<'a> {
                    #[serde(rename = "type")]
                    kind: Option<String>,
                    #[serde(borrow)]
                    message: Option<&'a serde_json::value::RawValue>,
                }
                let Ok(Line {
                    kind: Some(kind),
                    message: Some(message),
                }) = serde_json::from_str::<Line>(line)
                else {
                    continue;
                };
                if kind == "user" {
                    same(message.get());
                    seen += 1;
                }
            }
        }
        assert!(seen > 50, "only {seen} user messages in the fixtures");
    }
}
