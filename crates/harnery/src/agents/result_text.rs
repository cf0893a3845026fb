//! The text of a tool's result as an agent gives it to the model: a
//! string, or a list of content blocks whose `text` blocks are the text
//! (Claude Code's `tool_result` content and its `PostToolBatch`
//! `tool_response`, Copilot's `result.content`, Codex's
//! `function_call_output` `output`, whose blocks are `input_text`).
//!
//! Read as the value comes, never buffered whole: an image block's data is
//! skipped, not kept. Any other shape (a number, an object, a block's
//! `text` that is not a string) is no text, never an error, so a result in
//! a shape not seen before cannot make its line unrecognized. Like
//! `wire`, this imports nothing else from `agents`.

use serde::de::{IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};

/// Deserialize a result's text (see the module note): `None` when the
/// value holds none.
pub(crate) fn result_text<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    d.deserialize_any(Text(Level::Top))
}

/// A `functionResponse`'s `response` as Gemini CLI and Qwen Code (its
/// fork) write it: `output` when the tool ran, `error` when it failed or
/// was refused, each read as text only when it is a string.
#[derive(Deserialize)]
pub(crate) struct FunctionResult {
    #[serde(default, deserialize_with = "result_text")]
    pub(crate) output: Option<String>,
    #[serde(default, deserialize_with = "result_text")]
    pub(crate) error: Option<String>,
}

impl FunctionResult {
    /// The text the model was given: the output, else the error.
    pub(crate) fn text(&self) -> Option<String> {
        self.output.clone().or_else(|| self.error.clone())
    }
}

/// The `type`s of a text block: Claude Code's `text`, Codex's
/// `input_text` (a function call output's content items).
const TEXT_KINDS: &[&str] = &["text", "input_text"];

/// The text of a result kept as JSON text (a hook's `tool_response`).
pub(crate) fn json_text(json: &crate::contract::Json) -> Option<String> {
    let mut de = serde_json::Deserializer::from_str(json.as_str());
    result_text(&mut de).ok().flatten()
}

/// A value read for its text, by where it is: at the top a list is a list
/// of blocks; a block is a string, or an object whose `text` is the text
/// unless its `type` says it is another kind of block; a block's member is
/// text only when it is a string.
struct Text(Level);

#[derive(Clone, Copy, PartialEq)]
enum Level {
    Top,
    Block,
    Member,
}

impl<'de> Visitor<'de> for Text {
    type Value = Option<String>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a tool result")
    }

    fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<Self::Value, E> {
        Ok(Some(text.to_owned()))
    }

    fn visit_string<E: serde::de::Error>(self, text: String) -> Result<Self::Value, E> {
        Ok(Some(text))
    }

    fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_none<E: serde::de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        if self.0 != Level::Top {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            return Ok(None);
        }
        let mut texts: Vec<String> = Vec::new();
        while let Some(block) = seq.next_element_seed(Text(Level::Block))? {
            texts.extend(block);
        }
        Ok((!texts.is_empty()).then(|| texts.join("\n")))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut kind = None;
        let mut text = None;
        let block = self.0 != Level::Member;
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            match key.as_ref() {
                "type" if block => kind = map.next_value_seed(Text(Level::Member))?,
                "text" if block => text = map.next_value_seed(Text(Level::Member))?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(text.filter(|_| kind.as_deref().is_none_or(|k| TEXT_KINDS.contains(&k))))
    }
}

impl<'de> serde::de::DeserializeSeed<'de> for Text {
    type Value = Option<String>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize)]
    struct Holder {
        #[serde(default, deserialize_with = "result_text")]
        content: Option<String>,
    }

    fn text(content: &str) -> Option<String> {
        let holder: Holder = serde_json::from_str(&format!(r#"{{"content":{content}}}"#))
            .unwrap_or_else(|e| panic!("{content}: {e}"));
        holder.content
    }

    #[test]
    fn a_string_is_the_text_and_text_blocks_are_joined() {
        assert_eq!(
            text(r#""needs approval""#).as_deref(),
            Some("needs approval")
        );
        assert_eq!(
            text(r#"[{"type":"text","text":"Async agent launched"},{"type":"image","source":{"data":"AAAA"}},{"type":"text","text":"agentId: a1"}]"#)
                .as_deref(),
            Some("Async agent launched\nagentId: a1")
        );
        assert_eq!(text(r#"["a",{"text":"b"}]"#).as_deref(), Some("a\nb"));
        // Codex's content items.
        assert_eq!(
            text(
                r#"[{"type":"input_text","text":"ok"},{"type":"input_image","image_url":"data:x"}]"#
            )
            .as_deref(),
            Some("ok")
        );
    }

    #[test]
    fn a_shape_without_text_is_none_never_an_error() {
        for content in [
            "null",
            "3",
            "true",
            "{}",
            r#"{"type":"image","text":"x"}"#,
            "[]",
            r#"[{"type":"image","source":{"data":"AAAA"}}]"#,
            r#"[{"type":"text","text":{"nested":"x"}}]"#,
            r#"[[1,2],{"text":[1]},{"text":{"text":"x"}}]"#,
        ] {
            assert_eq!(text(content), None, "{content}");
        }
        let absent: Holder = serde_json::from_str("{}").unwrap();
        assert_eq!(absent.content, None);
        assert_eq!(text(r#"{"type":"text","text":"x"}"#).as_deref(), Some("x"));
    }

    #[test]
    fn hostile_text_is_kept_as_written() {
        let got = text(r#""\u0000<script>\u001b[31m\n""#).unwrap();
        assert_eq!(got, "\u{0}<script>\u{1b}[31m\n");
    }
}
