//! The envelope of one Claude Code record line: the fields every transcript
//! line and stream-json frame may carry, whatever its type, and what a
//! `user` line is (the human's direction, steering, or activity). Read by
//! both readers of the record: `finalize` ([`super::record`]) and the
//! recovery packet (`recover::claude`), so the two never disagree on a field.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::agents::wire::{optional_str, raw_json};
use crate::contract::Json;

/// The fields that say what a line is: read alone only when the whole
/// [`Frame`] is in no known shape, so that the line keeps its place in the
/// `parentUuid` chain and a type that carries nothing stays silent.
#[derive(Deserialize)]
pub(crate) struct Header<'a> {
    #[serde(rename = "type", borrow)]
    pub kind: Option<Cow<'a, str>>,
    pub subtype: Option<String>,
    #[serde(borrow)]
    pub uuid: Option<Cow<'a, str>>,
    #[serde(rename = "parentUuid", borrow)]
    pub parent_uuid: Option<Cow<'a, str>>,
}

/// A `message` read loosely for its text: its `content` as written, a
/// string or blocks or anything else (`harnery recover` shows it).
#[derive(Deserialize)]
pub(crate) struct MessageContent {
    #[serde(default)]
    pub content: serde_json::Value,
}

/// Every field either reader takes from a line, whatever its type; its
/// `message` as written (`M`), or read in the same pass when the reader
/// knows its shape (`finalize`'s reader, [`super::record`]).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Frame<'a, M = &'a RawValue> {
    #[serde(rename = "type", borrow, default)]
    pub kind: Option<Cow<'a, str>>,
    pub subtype: Option<String>,
    // The texts every line has are borrowed from it unless escaped (read
    // as `String`s they were most of a line's allocations).
    #[serde(default, borrow, deserialize_with = "optional_str")]
    pub timestamp: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "optional_str")]
    pub uuid: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "optional_str")]
    pub parent_uuid: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "optional_str")]
    pub prompt_id: Option<Cow<'a, str>>,
    #[serde(alias = "agent_id")]
    pub agent_id: Option<String>,
    #[serde(default, borrow, deserialize_with = "optional_str")]
    pub version: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "optional_str")]
    pub cwd: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "optional_str")]
    pub session_id: Option<Cow<'a, str>>,
    /// On an assistant line, the session that made the model call; another
    /// session's on the copy of a parent's messages `--fork-session` writes.
    pub request_session_id: Option<String>,
    /// Only a stream-json frame has it (null on the main thread).
    #[serde(rename = "parent_tool_use_id", default, deserialize_with = "present")]
    pub stream_frame: bool,
    pub message: Option<M>,
    // How a `user` line came to be (see [`UserKind`]).
    pub is_sidechain: Option<bool>,
    pub is_meta: Option<bool>,
    pub is_compact_summary: Option<bool>,
    pub prompt_source: Option<String>,
    pub turn_origin: Option<String>,
    // The stream's init frame.
    #[serde(rename = "claude_code_version")]
    pub claude_code_version: Option<String>,
    pub model: Option<String>,
    // Totals: a `result` frame or a `cost-state` line.
    #[serde(default)]
    pub model_usage: BTreeMap<String, ModelTotalWire>,
    #[serde(rename = "duration_api_ms", alias = "totalAPIDuration")]
    pub duration_api_ms: Option<f64>,
    #[serde(rename = "ttft_ms")]
    pub ttft_ms: Option<f64>,
}

/// One model's running totals in a `result` frame or `cost-state` line.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ModelTotalWire {
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    pub cache_read_input_tokens: Option<u64>,
    pub cache_creation_input_tokens: Option<u64>,
    #[serde(rename = "costUSD", default, deserialize_with = "raw_json")]
    pub cost_usd: Option<Json>,
}

fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    serde::de::IgnoredAny::deserialize(d).map(|_| true)
}

/// What a `user` line is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum UserKind {
    /// The human's own direction on the main thread.
    Direct,
    /// Text that reached the model from elsewhere, named by its source:
    /// `sidechain`, `compact-summary`, `local-command`, `system:<origin>`.
    Steering(String),
    /// Tool results: activity, not a message.
    ToolResults,
    /// A meta line (`isMeta`): neither.
    Meta,
}

impl<M> Frame<'_, M> {
    /// The session that made this line's model call, when the line says
    /// it was another than its own (a `--fork-session` copy).
    pub(crate) fn copied_from(&self) -> Option<&str> {
        let made_in = self.request_session_id.as_deref()?;
        (Some(made_in) != self.session_id.as_deref()).then_some(made_in)
    }

    /// What this `user` line is, given its text (the bare string or its
    /// text blocks joined) and whether it holds `tool_result` blocks.
    pub(crate) fn user_kind(&self, text: &str, has_tool_results: bool) -> UserKind {
        if has_tool_results {
            return UserKind::ToolResults;
        }
        if self.is_meta == Some(true) {
            return UserKind::Meta;
        }
        let steering = |s: &str| UserKind::Steering(s.to_string());
        if self.is_sidechain == Some(true) {
            return steering("sidechain");
        }
        if self.is_compact_summary == Some(true) {
            return steering("compact-summary");
        }
        let trimmed = text.trim_start();
        if trimmed.starts_with("<command-name>") || trimmed.starts_with("<local-command-") {
            return steering("local-command");
        }
        let origin = self.turn_origin.as_deref().unwrap_or("");
        if self.prompt_source.as_deref() == Some("system") || origin == "task_notification" {
            let origin = if origin.is_empty() {
                "notification"
            } else {
                origin
            };
            return UserKind::Steering(format!("system:{origin}"));
        }
        UserKind::Direct
    }
}
