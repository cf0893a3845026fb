//! A session read as its conversation: the prompts, the assistant's
//! messages and reasoning (from the agent's own record, or what the hooks
//! saw), and each tool call with its input and output, in event order.
//!
//! A page holds one window of the session's offsets ([`WINDOW`] events)
//! and every text is cut (each at [`TEXT_CAP`] bytes, the page at
//! [`PAGE_BUDGET`]), so a session of any size makes a page of bounded
//! size; what is cut links to its event's whole stored text.

use std::collections::{HashMap, HashSet};

use crate::contract::{Event, Json, Outcome, Payload};

/// Offsets per page of a session.
pub(crate) const WINDOW: u64 = 500;
/// The most text of one message, input or output a page shows.
pub(crate) const TEXT_CAP: usize = 6 * 1024;
/// The most text all of a page's items show together.
pub(crate) const PAGE_BUDGET: usize = 768 * 1024;

/// What an item is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Said {
    Prompt,
    /// A user message someone else sent (Copilot's steering).
    Steering(String),
    Assistant,
    Reasoning,
    Tool(String),
    Command,
    Error,
}

/// Text as a page shows it: its first bytes, and how many were left out.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Clip {
    pub text: String,
    pub cut: usize,
}

/// A tool call's or command's end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Output {
    pub offset: u64,
    /// `success`, `failure`, `interrupted`, `unknown`.
    pub outcome: &'static str,
    pub exit_code: Option<i64>,
    pub text: Clip,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Item {
    pub said: Said,
    pub offset: u64,
    pub time_unix_ns: i64,
    pub agent_id: Option<String>,
    /// The model, for an assistant message that names one.
    pub model: Option<String>,
    /// For a tool call: the one line its summary shows (the command, the
    /// path, the pattern… its input names first).
    pub gist: String,
    pub text: Clip,
    pub output: Option<Output>,
}

/// One page of a session's conversation.
#[derive(Debug, Clone, Default)]
pub(crate) struct Conversation {
    pub items: Vec<Item>,
    /// The window's number, and whether windows come before or after it.
    pub page: u64,
    pub pages: u64,
    /// Texts the page budget left out entirely.
    pub over_budget: usize,
}

impl Conversation {
    /// The conversation in window `page` of `events` (offset order).
    pub(crate) fn of(events: &[Event], page: u64) -> Conversation {
        let last = events.last().map_or(0, |e| e.offset);
        let from = page.saturating_mul(WINDOW);
        let to = from.saturating_add(WINDOW);
        let mut budget = PAGE_BUDGET;
        let mut out = Conversation {
            page,
            pages: last / WINDOW + 1,
            ..Conversation::default()
        };
        // What the user said, as the hook and the record each tell it:
        // once (a record's copy may carry the harness's context around it).
        let mut users: Vec<String> = Vec::new();
        let mut assistants: HashSet<String> = HashSet::new();
        // Tool and command requests by event id: where their end goes.
        let mut calls: HashMap<String, usize> = HashMap::new();
        for e in events.iter().filter(|e| e.offset >= from && e.offset < to) {
            let mut clip = |text: &str| clip(text, &mut budget, &mut out.over_budget);
            let item = |said, text| Item {
                said,
                offset: e.offset,
                time_unix_ns: e.time_unix_ns,
                agent_id: e.agent_id.clone(),
                model: None,
                gist: String::new(),
                text,
                output: None,
            };
            let next = match &e.payload {
                Payload::PromptSubmitted(p) => p
                    .prompt
                    .as_deref()
                    .filter(|t| first_telling(&mut users, t))
                    .map(|t| item(Said::Prompt, clip(t))),
                Payload::MessageUser(m) => match (&m.source, m.text.as_deref()) {
                    (Some(from), Some(t)) => Some(item(Said::Steering(from.clone()), clip(t))),
                    (None, Some(t)) if first_telling(&mut users, t) => {
                        Some(item(Said::Prompt, clip(t)))
                    }
                    _ => None,
                },
                Payload::MessageAssistant(m) => m
                    .text
                    .as_deref()
                    .filter(|t| !t.trim().is_empty() && assistants.insert(t.trim().to_string()))
                    .map(|t| Item {
                        model: m.model.clone(),
                        ..item(Said::Assistant, clip(t))
                    }),
                Payload::MessageDisplayed(m) => m
                    .text
                    .as_deref()
                    .filter(|t| !t.trim().is_empty() && assistants.insert(t.trim().to_string()))
                    .map(|t| item(Said::Assistant, clip(t))),
                Payload::ReasoningRecorded(r) => r
                    .text
                    .as_deref()
                    .filter(|t| !t.trim().is_empty())
                    .map(|t| item(Said::Reasoning, clip(t))),
                Payload::ErrorReported(r) => Some(item(Said::Error, clip(&r.message))),
                Payload::ToolRequested(t) => {
                    calls.insert(e.id.0.clone(), out.items.len());
                    let input = t.input.as_ref().map(pretty).unwrap_or_default();
                    Some(Item {
                        gist: t.input.as_ref().map(gist).unwrap_or_default(),
                        ..item(Said::Tool(t.tool_name.clone()), clip(&input))
                    })
                }
                Payload::CommandRequested(c) => {
                    calls.insert(e.id.0.clone(), out.items.len());
                    let mut text = c.argv.join(" ");
                    let line = text.clone();
                    if let Some(cwd) = &c.cwd {
                        text.push_str(&format!("\n(in {cwd})"));
                    }
                    Some(Item {
                        gist: line,
                        ..item(Said::Command, clip(&text))
                    })
                }
                Payload::ToolCompleted(t) => {
                    let mut text = t.content.as_ref().map(pretty).unwrap_or_default();
                    if let Some(err) = &t.error {
                        if !text.is_empty() {
                            text.push('\n');
                        }
                        text.push_str(err);
                    }
                    let end = Output {
                        offset: e.offset,
                        outcome: outcome(t.outcome),
                        exit_code: t.exit_code,
                        text: clip(&text),
                    };
                    let req = t.requested_event_id.as_ref().map(|id| id.0.as_str());
                    attach(&mut out.items, &calls, req, end, || {
                        item(Said::Tool(t.tool_name.clone()), Clip::default())
                    })
                }
                Payload::CommandCompleted(c) => {
                    let end = Output {
                        offset: e.offset,
                        outcome: outcome(c.outcome),
                        exit_code: c.exit_code,
                        text: Clip::default(),
                    };
                    let req = c.requested_event_id.as_ref().map(|id| id.0.as_str());
                    attach(&mut out.items, &calls, req, end, || {
                        item(Said::Command, Clip::default())
                    })
                }
                _ => None,
            };
            out.items.extend(next);
        }
        out
    }
}

/// Put `end` on the request it names when that is on the page; else it
/// becomes an item of its own (its request is on an earlier page).
fn attach(
    items: &mut [Item],
    calls: &HashMap<String, usize>,
    request: Option<&str>,
    end: Output,
    alone: impl FnOnce() -> Item,
) -> Option<Item> {
    match request.and_then(|id| calls.get(id)) {
        Some(&at) if items[at].output.is_none() => {
            items[at].output = Some(end);
            None
        }
        _ => Some(Item {
            output: Some(end),
            ..alone()
        }),
    }
}

fn outcome(o: Outcome) -> &'static str {
    match o {
        Outcome::Success => "success",
        Outcome::Failure => "failure",
        Outcome::Interrupted => "interrupted",
        Outcome::Unknown => "unknown",
    }
}

/// Whether `text` tells what the user said for the first time: no text
/// kept in `told` holds it or is held in it (the hook's prompt and the
/// record's copy of it, which may carry the harness's context around it).
fn first_telling(told: &mut Vec<String>, text: &str) -> bool {
    let text = text.trim();
    if text.is_empty()
        || told
            .iter()
            .any(|t| t.contains(text) || text.contains(t.as_str()))
    {
        return false;
    }
    told.push(text.to_string());
    true
}

/// The input's key a tool call is best known by, in this order.
const GIST_KEYS: [&str; 9] = [
    "command",
    "file_path",
    "path",
    "pattern",
    "query",
    "url",
    "description",
    "prompt",
    "skill",
];

/// One line for a tool call's summary: the first of [`GIST_KEYS`] its
/// input has, else its first string.
fn gist(json: &Json) -> String {
    let Ok(value) = serde_json::from_str::<serde_json::Value>(json.as_str()) else {
        return String::new();
    };
    let named = GIST_KEYS
        .iter()
        .find_map(|k| value.get(k).and_then(|v| v.as_str()));
    let any = || match &value {
        serde_json::Value::String(s) => Some(s.as_str()),
        serde_json::Value::Object(m) => m.values().find_map(|v| v.as_str()),
        _ => None,
    };
    named.or_else(any).unwrap_or("").to_string()
}

/// A JSON value for reading: a string as its text, anything else
/// pretty-printed.
fn pretty(json: &Json) -> String {
    match serde_json::from_str::<serde_json::Value>(json.as_str()) {
        Ok(serde_json::Value::String(s)) => s,
        Ok(v) => serde_json::to_string_pretty(&v).unwrap_or_else(|_| json.as_str().to_string()),
        Err(_) => json.as_str().to_string(),
    }
}

/// The first [`TEXT_CAP`] bytes of `text` (at a character boundary), out
/// of what is left of the page's `budget`.
fn clip(text: &str, budget: &mut usize, over: &mut usize) -> Clip {
    let mut end = text.len().min(TEXT_CAP).min(*budget);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    if end == 0 && !text.is_empty() {
        *over += 1;
    }
    *budget -= end;
    Clip {
        text: text[..end].to_string(),
        cut: text.len() - end,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_cut_at_a_character_and_the_page_budget_runs_out() {
        let mut budget = TEXT_CAP + 10;
        let mut over = 0;
        let long = "é".repeat(TEXT_CAP);
        let first = clip(&long, &mut budget, &mut over);
        assert!(first.text.len() <= TEXT_CAP && first.text.len() >= TEXT_CAP - 1);
        assert_eq!(first.text.len() + first.cut, long.len());
        let second = clip(&long, &mut budget, &mut over);
        assert!(second.text.len() <= 10 && second.text.chars().all(|c| c == 'é'));
        let third = clip("more", &mut budget, &mut over);
        assert_eq!((third.text.as_str(), third.cut, over), ("", 4, 1));
    }

    #[test]
    fn a_prompt_told_twice_is_shown_once_and_a_call_by_its_command() {
        let mut told = Vec::new();
        assert!(first_telling(&mut told, "Fix the build"));
        assert!(!first_telling(&mut told, "<ctx>now</ctx>\n\nFix the build"));
        assert!(first_telling(&mut told, "Now the tests"));
        assert!(!first_telling(&mut told, "  "));
        let input = Json::parse(r#"{"description":"list","command":"ls -la"}"#).unwrap();
        assert_eq!(gist(&input), "ls -la");
        let other = Json::parse(r#"{"n":1,"x":"first string"}"#).unwrap();
        assert_eq!(gist(&other), "first string");
    }
}
