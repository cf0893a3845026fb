//! `sessions` (the recorded sessions, newest first) and `session` (one
//! session's prompts, messages, tool calls and commands, in order).

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::budget::{Budget, Page, text_chars};
use super::{Answer, CallError, chain, epoch, instant, open};
use crate::clock::format_time;
use crate::contract::{AdapterId, Event, Payload};
use crate::home::Home;
use crate::report::session_list::{Listed, SessionFilter, list};
use crate::search::extract::doc_of;

/// The most sessions or entries one call may ask for.
const MAX_LIMIT: usize = 200;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionsArgs {
    /// Only sessions of this agent: claude-code, copilot, codex,
    /// gemini-cli, qwen-code, opencode.
    pub agent: Option<String>,
    /// Only sessions with activity at or after this time (RFC 3339).
    pub since: Option<String>,
    /// Only sessions of this project: its root path, or a trailing part
    /// of it such as the repository's name.
    pub project: Option<String>,
    /// Skip this many sessions first (to page on).
    #[serde(default)]
    pub offset: usize,
    /// At most this many sessions (default 20, at most 200).
    pub limit: Option<usize>,
    /// Which ledger epoch: live (the default), all, or a genesis id.
    pub epoch: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionArgs {
    /// The session: its id, a unique prefix of one, or agent/id.
    pub session: String,
    /// Start at this event offset (e.g. a search hit's); 0 by default.
    #[serde(default)]
    pub offset: u64,
    /// At most this many entries (default 40, at most 200).
    pub limit: Option<usize>,
    /// Characters of each text (default 600, at most 4000).
    pub max_chars: Option<usize>,
    /// Which ledger epoch: live (the default), all, or a genesis id.
    pub epoch: Option<String>,
}

pub(super) fn sessions(home: &Home, b: &Budget, a: &SessionsArgs) -> Result<Answer, CallError> {
    let limit = a.limit.unwrap_or(20).clamp(1, MAX_LIMIT);
    let adapter = a.agent.as_deref().map(agent).transpose()?;
    let filter = SessionFilter {
        since: instant("since", a.since.as_deref())?,
        adapter,
        project: a.project.clone(),
        skip: a.offset,
        limit: Some(limit + 1),
        ..SessionFilter::default()
    };
    let epochs = open(home, &epoch(a.epoch.as_deref())?)?;
    let listed = list(home, &epochs, "mcp", &filter)
        .map_err(|e| CallError::Failed(format!("the sessions cannot be listed: {}", chain(&e))))?;
    let mut page = Page::new("sessions, most recently active first:");
    for l in listed.iter().take(limit) {
        if !page.push(session_line(b, l), session_item(b, l)) {
            break;
        }
    }
    let next = a.offset + page.len();
    let more = (page.full || listed.len() > limit)
        .then(|| format!("More sessions: call sessions again with offset {next}."));
    let empty = page.is_empty();
    let mut answer = page.finish("sessions", more, json!({"offset": a.offset}));
    if empty {
        answer.text = "no sessions recorded (or none the filters keep)".into();
    }
    Ok(answer)
}

pub(super) fn agent(name: &str) -> Result<AdapterId, CallError> {
    AdapterId::parse(name).ok_or_else(|| {
        CallError::BadArguments(format!(
            "agent: {name:?} is not an agent ({})",
            AdapterId::choices()
        ))
    })
}

/// A session's title, masked and cut to one short line.
fn title(b: &Budget, l: &Listed) -> Option<String> {
    l.summary.title.as_deref().map(|t| b.clip(t, TITLE_CHARS))
}

/// The most characters of a title a listing shows.
const TITLE_CHARS: usize = 120;

fn session_line(b: &Budget, l: &Listed) -> String {
    let s = &l.summary;
    let about = match (title(b, l), &s.project) {
        (Some(t), Some(p)) => format!("  {t:?} in {}", b.mask(p)),
        (Some(t), None) => format!("  {t:?}"),
        (None, Some(p)) => format!("  in {}", b.mask(p)),
        (None, None) => String::new(),
    };
    format!(
        "- {}/{}{about}  started {}  last {}  {} turns  {} events  spans: {} closed, {} recovered, {} open  (class {})",
        s.session.adapter,
        s.session.session_id,
        format_time(s.first_unix_ns),
        format_time(s.last_unix_ns),
        s.turns,
        s.events,
        s.spans.closed_native,
        s.spans.recovered,
        s.spans.open,
        class(l),
    )
}

/// The session's evidence class, as `sessions --json` names it.
fn class(l: &Listed) -> String {
    match serde_json::to_value(l.class.class) {
        Ok(Value::String(s)) => s,
        _ => format!("{:?}", l.class.class),
    }
}

fn session_item(b: &Budget, l: &Listed) -> Value {
    let s = &l.summary;
    json!({
        "agent": s.session.adapter.as_str(),
        "session": s.session.session_id,
        "title": title(b, l),
        "project": s.project.as_deref().map(|p| b.mask(p)),
        "started": format_time(s.first_unix_ns),
        "last_activity": format_time(s.last_unix_ns),
        "turns": s.turns,
        "events": s.events,
        "spans": {
            "closed_native": s.spans.closed_native,
            "recovered": s.spans.recovered,
            "open": s.spans.open,
        },
        "class": class(l),
        "record": l.record,
        "epochs": l.epochs,
    })
}

pub(super) fn session(home: &Home, b: &Budget, a: &SessionArgs) -> Result<Answer, CallError> {
    let limit = a.limit.unwrap_or(40).clamp(1, MAX_LIMIT);
    let chars = text_chars(a.max_chars);
    let epochs = open(home, &epoch(a.epoch.as_deref())?)?;
    let found = epochs
        .session("mcp", &a.session)
        .map_err(|e| CallError::BadArguments(format!("session: {}", chain(&e))))?;
    let name = format!("{}/{}", found.session.adapter, found.session.session_id);
    let mut page = Page::new(format!("session {name}, from offset {}:", a.offset));
    let mut next = None;
    let mut damaged = 0;
    'parts: for part in &found.parts {
        let (events, bad) = part
            .ledger
            .events()
            .session_events_lenient(&found.session)
            .map_err(|e| CallError::Failed(format!("session {name}: {}", chain(&e))))?;
        damaged += bad.len();
        for e in events.iter().filter(|e| e.offset >= a.offset) {
            let Some((line, item)) = entry(b, e, chars) else {
                continue;
            };
            if page.len() >= limit || !page.push(line, item) {
                next = Some(e.offset);
                break 'parts;
            }
        }
    }
    let more = next.map(|n| format!("More entries: call session again with offset {n}."));
    let extra = json!({
        "agent": found.session.adapter.as_str(),
        "session": found.session.session_id,
        "offset": a.offset,
        "next_offset": next,
        "damaged_rows": damaged,
    });
    let empty = page.is_empty();
    let mut answer = page.finish("entries", more, extra);
    if empty {
        answer.text = format!("session {name}: nothing to show from offset {}", a.offset);
    }
    if damaged > 0 {
        answer.text.push_str(&format!(
            "\n({damaged} rows of this session could not be read and are left out)"
        ));
    }
    Ok(answer)
}

/// One event as a line and an item, if it says something a reader wants:
/// a prompt, a message, reasoning, a tool call or its result, a command.
fn entry(b: &Budget, e: &Event, chars: usize) -> Option<(String, Value)> {
    let time = format_time(e.time_unix_ns);
    let (what, tool, outcome, text) = match &e.payload {
        Payload::ToolRequested(t) => {
            let input = t.input.as_ref().map(|j| b.mask_json(j.as_str()));
            let text = input.unwrap_or_default();
            ("tool call", Some(t.tool_name.clone()), None, text)
        }
        Payload::ToolCompleted(t) => {
            let outcome = format!("{:?}", t.outcome).to_lowercase();
            let text = doc_of(e).map(|d| d.text).unwrap_or_default();
            (
                "tool result",
                Some(t.tool_name.clone()),
                Some(outcome),
                b.mask(&text),
            )
        }
        Payload::CommandCompleted(c) => {
            let outcome = format!("{:?}", c.outcome).to_lowercase();
            let exit = c.exit_code.map(|x| format!("exit {x}")).unwrap_or_default();
            ("command result", None, Some(outcome), exit)
        }
        Payload::TurnCompleted(_) => ("turn completed", None, None, String::new()),
        _ => {
            let doc = doc_of(e)?;
            let what = match e.payload {
                Payload::PromptSubmitted(_) | Payload::MessageUser(_) => "prompt",
                Payload::ReasoningRecorded(_) => "reasoning",
                Payload::CommandRequested(_) => "command",
                _ => "message",
            };
            (what, None, None, b.mask(&doc.text))
        }
    };
    let text = super::budget::cut(&text, chars);
    let mut line = format!("[{}] {time} {what}", e.offset);
    if let Some(tool) = &tool {
        line.push_str(&format!(" {}", b.clip(tool, 80)));
    }
    if let Some(outcome) = &outcome {
        line.push_str(&format!(" ({outcome})"));
    }
    if !text.is_empty() {
        line.push_str(": ");
        line.push_str(&text);
    }
    let item = json!({
        "offset": e.offset,
        "time": time,
        "kind": what,
        "tool": tool.as_deref().map(|t| b.clip(t, 80)),
        "outcome": outcome,
        "text": text,
    });
    Some((line, item))
}
