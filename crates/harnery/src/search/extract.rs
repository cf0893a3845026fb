//! Which text of a canonical event is searchable, and as what kind: the
//! one place that reads payloads for the index. An event type not named
//! here has no searchable text (ids, counts, clock readings).
//!
//! | kind          | from                                                        |
//! |---------------|-------------------------------------------------------------|
//! | `prompt`      | `prompt.submitted` (hook), `message.user` (the agent's record; a subagent's, under its parent session) |
//! | `message`     | `message.assistant` (record), `message.displayed` (hook); what the agent told the user: `notification`, `error.reported` (message, context), `compaction.completed` (its summary) |
//! | `reasoning`   | `reasoning.recorded` (record)                               |
//! | `tool-input`  | `tool.requested`, `permission.requested`: the tool's name and every string of its input |
//! | `tool-output` | `tool.completed`: every string of its content, and its error; `late.evidence`: its error; `tool.recorded`: its `output` (the agent's record); `tool.batch_result`: its `output` (a hook's batch) |
//! | `command`     | `command.requested` (`harnery exec`): the argv, then the cwd |
//!
//! A tool's result as the agent's record has it is `tool.recorded`'s
//! `output` (Claude Code and Copilot from generation 11; Codex, Gemini
//! CLI, Qwen Code and OpenCode from generation 12); as Claude Code's
//! `PostToolBatch` lists it, `tool.batch_result`'s (generation 12). Where
//! a hook and the record hold the same text for one call, it is one hit
//! (`update::said_before`).

use serde::{Deserialize, Serialize};

use crate::contract::{Event, EventType, Json, Payload};

/// The kinds of searchable text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    Prompt,
    Message,
    Reasoning,
    ToolInput,
    ToolOutput,
    Command,
}

impl Kind {
    pub const ALL: [Kind; 6] = [
        Kind::Prompt,
        Kind::Message,
        Kind::Reasoning,
        Kind::ToolInput,
        Kind::ToolOutput,
        Kind::Command,
    ];

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Kind::Prompt => "prompt",
            Kind::Message => "message",
            Kind::Reasoning => "reasoning",
            Kind::ToolInput => "tool-input",
            Kind::ToolOutput => "tool-output",
            Kind::Command => "command",
        }
    }
}

impl std::str::FromStr for Kind {
    type Err = String;

    fn from_str(s: &str) -> Result<Kind, String> {
        Kind::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = Kind::ALL.iter().map(|k| k.as_str()).collect();
                format!("{s:?} is not a kind of text; one of {}", names.join(", "))
            })
    }
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The most text one event contributes: the first 64 KiB (cut at a
/// character boundary). A longer tool output is found by its beginning.
pub(crate) const MAX_TEXT: usize = 64 * 1024;

/// One event's searchable text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Doc {
    pub kind: Kind,
    pub tool: Option<String>,
    pub text: String,
}

/// The searchable text of `event`, if it has any.
pub(crate) fn doc_of(event: &Event) -> Option<Doc> {
    let (kind, tool, text) = match &event.payload {
        Payload::PromptSubmitted(p) => (Kind::Prompt, None, p.prompt.clone()?),
        Payload::MessageUser(p) => (Kind::Prompt, None, p.text.clone()?),
        Payload::MessageAssistant(p) => (Kind::Message, None, p.text.clone()?),
        Payload::MessageDisplayed(p) => (Kind::Message, None, p.text.clone()?),
        Payload::ReasoningRecorded(p) => (Kind::Reasoning, None, p.text.clone()?),
        Payload::ToolRequested(p) => {
            let mut text = p.tool_name.clone();
            push_json(&mut text, p.input.as_ref());
            (Kind::ToolInput, Some(p.tool_name.clone()), text)
        }
        Payload::ToolCompleted(p) => {
            let mut text = String::new();
            push_json(&mut text, p.content.as_ref());
            push_line(&mut text, p.error.as_deref());
            (Kind::ToolOutput, Some(p.tool_name.clone()), text)
        }
        Payload::CommandRequested(p) => {
            let mut text = p.argv.join(" ");
            push_line(&mut text, p.cwd.as_deref());
            (Kind::Command, None, text)
        }
        Payload::PermissionRequested(p) => {
            let mut text = p.tool_name.clone();
            push_json(&mut text, p.input.as_ref());
            (Kind::ToolInput, Some(p.tool_name.clone()), text)
        }
        Payload::LateEvidence(p) => (Kind::ToolOutput, None, p.error.clone()?),
        // The record's text of a result (generation 11), often the only
        // one: a denied call's message, a `Write`'s confirmation.
        Payload::ToolRecorded(p) => (
            Kind::ToolOutput,
            Some(p.tool_name.clone()),
            p.output.clone()?,
        ),
        // A result as a hook's batch lists it (generation 12): a denied or
        // blocked call's message, a `Write`'s confirmation.
        Payload::ToolBatchResult(p) => (
            Kind::ToolOutput,
            Some(p.tool_name.clone()),
            p.output.clone(),
        ),
        Payload::Notification(p) => (Kind::Message, None, p.message.clone()?),
        Payload::ErrorReported(p) => {
            let mut text = p.message.clone();
            push_line(&mut text, p.context.as_deref());
            (Kind::Message, None, text)
        }
        Payload::CompactionCompleted(p) => (Kind::Message, None, p.summary.clone()?),
        _ => return None,
    };
    let text = capped(text);
    (!text.trim().is_empty()).then_some(Doc { kind, tool, text })
}

/// Whether events of type `ty` can have searchable text (what
/// [`doc_of`] reads).
pub(crate) fn has_text(ty: EventType) -> bool {
    matches!(
        ty,
        EventType::PromptSubmitted
            | EventType::MessageUser
            | EventType::MessageAssistant
            | EventType::MessageDisplayed
            | EventType::ReasoningRecorded
            | EventType::ToolRequested
            | EventType::ToolCompleted
            | EventType::CommandRequested
            | EventType::PermissionRequested
            | EventType::LateEvidence
            | EventType::ToolRecorded
            | EventType::ToolBatchResult
            | EventType::Notification
            | EventType::ErrorReported
            | EventType::CompactionCompleted
    )
}

fn push_line(text: &mut String, line: Option<&str>) {
    let Some(line) = line.filter(|l| !l.is_empty()) else {
        return;
    };
    if !text.is_empty() {
        text.push('\n');
    }
    text.push_str(line);
}

/// Every string and number of a JSON value, one per line, in document
/// order (keys are left out: they name fields, not what was done).
fn push_json(text: &mut String, json: Option<&Json>) {
    let Some(value) = json.and_then(|j| serde_json::from_str(j.as_str()).ok()) else {
        return;
    };
    push_value(text, &value);
}

fn push_value(text: &mut String, value: &serde_json::Value) {
    use serde_json::Value;
    match value {
        Value::String(s) => push_line(text, Some(s)),
        Value::Number(n) => push_line(text, Some(&n.to_string())),
        Value::Array(items) => items.iter().for_each(|v| push_value(text, v)),
        Value::Object(map) => map.values().for_each(|v| push_value(text, v)),
        Value::Null | Value::Bool(_) => {}
    }
}

/// Each string of a JSON value (a hook's tool content), trimmed, in
/// document order: the pieces a record's text of the same result may
/// equal (Copilot's hook wraps the text the record keeps in an object).
pub(crate) fn output_pieces(json: Option<&Json>) -> Vec<String> {
    let Some(value) = json.and_then(|j| serde_json::from_str(j.as_str()).ok()) else {
        return Vec::new();
    };
    let mut pieces = Vec::new();
    collect_strings(&value, &mut pieces);
    pieces
}

fn collect_strings(value: &serde_json::Value, out: &mut Vec<String>) {
    use serde_json::Value;
    match value {
        Value::String(s) if !s.trim().is_empty() => out.push(s.trim().to_string()),
        Value::Array(items) => items.iter().for_each(|v| collect_strings(v, out)),
        Value::Object(map) => map.values().for_each(|v| collect_strings(v, out)),
        _ => {}
    }
}

fn capped(mut text: String) -> String {
    if text.len() > MAX_TEXT {
        let mut end = MAX_TEXT;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_round_trip_their_names() {
        for k in Kind::ALL {
            assert_eq!(k.as_str().parse::<Kind>(), Ok(k));
        }
        assert!("tool".parse::<Kind>().unwrap_err().contains("tool-input"));
    }

    #[test]
    fn json_strings_and_numbers_are_the_text_keys_are_not() {
        let mut text = String::new();
        let json =
            Json::parse(r#"{"command":"rm -rf build","n":3,"x":{"y":["a",true,null]}}"#).unwrap();
        push_json(&mut text, Some(&json));
        assert_eq!(text, "rm -rf build\n3\na");
    }

    #[test]
    fn long_text_is_cut_at_a_character_boundary() {
        let text = "é".repeat(MAX_TEXT);
        let cut = capped(text);
        assert!(cut.len() <= MAX_TEXT && cut.len() >= MAX_TEXT - 1);
        assert!(cut.chars().all(|c| c == 'é'));
    }
}
