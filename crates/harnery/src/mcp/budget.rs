//! How much an answer may hold, and the masking every text passes through.
//!
//! An answer is built as a [`Page`]: a head line, then one text line and
//! one JSON item per entry, as long as both together stay within
//! [`ANSWER_BYTES`]. The first entry that would not fit ends the page, and
//! the answer names the offset that asks for the rest. Single texts (a
//! prompt, a tool's output) are cut first, at a character boundary, to a
//! per-text limit the caller may raise up to [`MAX_TEXT_CHARS`].

use std::path::Path;

use serde::Deserialize;
use serde_json::{Value, json};

use super::Answer;
use crate::fleet::{HostKey, MaskRules, Masker, PatternError, ShipConfig};

/// The most an answer holds: its text and its structured JSON together.
pub const ANSWER_BYTES: usize = 48 * 1024;

/// The default cut of one text (a prompt, a message, a tool output).
pub const TEXT_CHARS: usize = 600;

/// The most one text may be asked to hold (`max_chars`): small enough
/// that one entry (its line and its JSON, each character escaped at
/// worst to six bytes) always fits an empty page, so paging always moves on.
pub const MAX_TEXT_CHARS: usize = 4_000;

/// Whether text leaves masked (the default) or whole.
pub enum Content {
    /// Secrets replaced as `ship --content masked` replaces them; labels
    /// keyed by a key of this server run only (no key file is read or
    /// written: the same secret has the same label within one run).
    Masked(Box<Masker>),
    /// `[mcp] content = "full"`: text as the ledger holds it.
    Full,
}

/// `[mcp]` of the config.
#[derive(Debug, Default, Deserialize)]
struct ConfigFile {
    #[serde(default)]
    mcp: McpConfig,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct McpConfig {
    /// `masked` (the default) or `full`.
    content: Option<String>,
}

/// Why the tools cannot start.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
    #[error(transparent)]
    Pattern(#[from] PatternError),
    #[error("{path}: [mcp] content = {value:?}: use \"masked\" or \"full\"")]
    Content { path: String, value: String },
}

impl Content {
    /// What the config in `home_root` asks: `[mcp] content`, and the
    /// user's `[mask]` patterns and allow-list.
    pub fn configured(home_root: &Path) -> Result<Content, SetupError> {
        let file: ConfigFile = crate::config::read(home_root)?;
        match file.mcp.content.as_deref() {
            None | Some("masked") => {}
            Some("full") => return Ok(Content::Full),
            Some(other) => {
                return Err(SetupError::Content {
                    path: crate::config::config_path(home_root).display().to_string(),
                    value: other.to_string(),
                });
            }
        }
        let rules: MaskRules = ShipConfig::load(home_root)?.rules;
        Ok(Content::Masked(Box::new(Masker::new(&rules, run_key())?)))
    }
}

/// A key for this run's mask labels: random, never stored.
fn run_key() -> HostKey {
    let mut seed = [0u8; 32];
    seed[..16].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
    seed[16..].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
    HostKey::from_bytes(*blake3::hash(&seed).as_bytes())
}

/// The masking and cutting every answer's text passes through.
pub struct Budget {
    content: Content,
}

impl Budget {
    pub fn new(content: Content) -> Budget {
        Budget { content }
    }

    /// `text` with its secrets masked (as it is, with `content = "full"`).
    pub fn mask(&self, text: &str) -> String {
        match &self.content {
            Content::Full => text.to_string(),
            Content::Masked(m) => m.mask_text(text, false, &mut Vec::new()).into_owned(),
        }
    }

    /// A JSON document's text with its secrets masked, a string whose key
    /// names a secret (`"password": …`) masked whole.
    pub fn mask_json(&self, json: &str) -> String {
        match &self.content {
            Content::Full => json.to_string(),
            Content::Masked(m) => match m.mask(json.as_bytes()) {
                Some(masked) => String::from_utf8_lossy(&masked.text).into_owned(),
                None => json.to_string(),
            },
        }
    }

    /// `text` masked, then cut to `chars` characters (saying how many more
    /// there were).
    pub fn clip(&self, text: &str, chars: usize) -> String {
        cut(&self.mask(text), chars)
    }
}

/// `text` cut to `chars` characters, naming what was left out.
pub fn cut(text: &str, chars: usize) -> String {
    match text.char_indices().nth(chars) {
        None => text.to_string(),
        Some((end, _)) => {
            let rest = text[end..].chars().count();
            format!("{}… ({rest} more characters)", &text[..end])
        }
    }
}

/// The per-text cut a `max_chars` argument asks, within bounds.
pub fn text_chars(asked: Option<usize>) -> usize {
    asked.unwrap_or(TEXT_CHARS).clamp(40, MAX_TEXT_CHARS)
}

/// An answer being filled, entry by entry, within [`ANSWER_BYTES`].
pub struct Page {
    head: String,
    lines: Vec<String>,
    items: Vec<Value>,
    used: usize,
    /// Whether an entry was refused for want of room.
    pub full: bool,
}

impl Page {
    pub fn new(head: impl Into<String>) -> Page {
        let head = cut(&head.into(), 400);
        Page {
            used: head.len() * 2 + 512,
            head,
            lines: Vec::new(),
            items: Vec::new(),
            full: false,
        }
    }

    /// Add one entry; false (and nothing added) when it does not fit.
    pub fn push(&mut self, line: String, item: Value) -> bool {
        let size = line.len() + 1 + item.to_string().len() + 1;
        if self.full || self.used + size > ANSWER_BYTES {
            self.full = true;
            return false;
        }
        self.used += size;
        self.lines.push(line);
        self.items.push(item);
        true
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// The answer: the head, the lines, and `more` (how to ask for the
    /// rest) when there is more; the JSON holds `key`'s items and `extra`.
    pub fn finish(self, key: &str, more: Option<String>, mut extra: Value) -> Answer {
        let mut text = self.head;
        for line in &self.lines {
            text.push('\n');
            text.push_str(line);
        }
        if let Some(more) = &more {
            text.push_str("\n\n");
            text.push_str(more);
        }
        if !extra.is_object() {
            extra = json!({});
        }
        extra[key] = Value::Array(self.items);
        extra["more"] = more.map_or(Value::Null, Value::String);
        Answer {
            text,
            structured: extra,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cut_names_what_it_left_out_and_keeps_characters_whole() {
        assert_eq!(cut("héllo", 10), "héllo");
        assert_eq!(cut("héllo wörld", 3), "hél… (8 more characters)");
    }

    #[test]
    fn a_page_stops_at_its_budget() {
        let mut page = Page::new("head");
        let line = "x".repeat(1000);
        let mut n = 0;
        while page.push(line.clone(), json!({"t": line})) {
            n += 1;
        }
        assert!(page.full && n > 10);
        let answer = page.finish("items", Some("ask offset".into()), json!({}));
        let size = answer.text.len() + answer.structured.to_string().len();
        assert!(size <= ANSWER_BYTES, "{size}");
        assert!(!page_push_after_full());
    }

    #[test]
    fn the_largest_entry_always_fits_an_empty_page() {
        // Control characters: six bytes each once escaped in JSON.
        let text = cut(
            &"\u{1}".repeat(MAX_TEXT_CHARS * 2),
            text_chars(Some(usize::MAX)),
        );
        let line = format!("[1] {text}");
        let mut page = Page::new("h".repeat(10_000));
        assert!(page.push(line, json!({"text": text})));
    }

    fn page_push_after_full() -> bool {
        let mut page = Page::new("h");
        page.full = true;
        page.push("a".into(), json!(1))
    }

    #[test]
    fn masked_content_hides_a_key_and_full_content_keeps_it() {
        let key = "ghp_0123456789abcdefghijABCDEFGHIJ012345";
        let masked = Budget::new(Content::Masked(Box::new(
            Masker::new(&MaskRules::default(), run_key()).unwrap(),
        )));
        let text = masked.mask(&format!("token {key} here"));
        assert!(!text.contains(key) && text.contains("[masked:"), "{text}");
        let json = masked.mask_json(r#"{"password":"hunter2-hunter2"}"#);
        assert!(!json.contains("hunter2-hunter2"), "{json}");
        assert!(Budget::new(Content::Full).mask(key).contains(key));
    }
}
