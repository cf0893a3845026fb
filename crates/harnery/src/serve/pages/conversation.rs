//! A session's conversation as HTML: prompts and assistant messages as
//! text (a fenced block is a `<pre><code>`), reasoning and tool calls
//! collapsed in `<details>` with their input and output in code blocks.
//! Every text is ledger text, escaped as it is written; a text the page
//! cut links to its event's whole stored text.

use maud::{Markup, html};

use super::session_href;
use crate::serve::data::conversation::{Clip, Conversation, Item, Output, Said, WINDOW};
use crate::view::html::since;

/// The conversation of session `id` (whose first event was at `start_ns`).
pub(crate) fn render(id: &str, start_ns: i64, c: &Conversation) -> Markup {
    html! {
        (pager(id, c))
        @if c.items.is_empty() { p.muted { "No prompt, message or tool call in these events." } }
        ol.talk {
            @for item in &c.items {
                li id={ "c" (item.offset) } class=(class(&item.said)) {
                    (said(item, start_ns, id))
                }
            }
        }
        @if c.over_budget > 0 {
            p.muted { (c.over_budget) " more texts are left out of this page (it shows at most \
                      768 KiB of text); each event links to its whole text." }
        }
        @if c.pages > 1 { (pager(id, c)) }
    }
}

fn class(said: &Said) -> &'static str {
    match said {
        Said::Prompt => "say user",
        Said::Steering(_) => "say user steering",
        Said::Assistant => "say assistant",
        Said::Reasoning => "say reasoning",
        Said::Tool(_) | Said::Command => "say tool",
        Said::Error => "say error",
    }
}

/// The page of event `offset`'s stored text.
fn event_href(id: &str, offset: u64) -> String {
    format!("{}/events/{offset}", session_href(id))
}

fn said(item: &Item, start_ns: i64, id: &str) -> Markup {
    let href = &event_href(id, item.offset);
    let at = since((item.time_unix_ns - start_ns) / 1_000_000);
    let meta = html! {
        span.meta {
            a href=(href) title="the event's stored text" { "#" (item.offset) } " " (at)
            @if let Some(agent) = &item.agent_id { " · subagent " code { (agent) } }
        }
    };
    match &item.said {
        Said::Prompt | Said::Steering(_) | Said::Assistant | Said::Error => {
            let who = match &item.said {
                Said::Prompt => "prompt".to_string(),
                Said::Steering(from) => format!("steering from {from}"),
                Said::Error => "error".to_string(),
                _ => match &item.model {
                    Some(m) => format!("assistant · {m}"),
                    None => "assistant".to_string(),
                },
            };
            html! {
                div.who { strong { (who) } " " (meta) }
                div.body { (prose(&item.text)) (more(&item.text, href)) }
            }
        }
        Said::Reasoning => html! {
            details {
                summary { strong { "reasoning" } " " span.gist { (gist(&item.text.text)) } " " (meta) }
                div.body { (prose(&item.text)) (more(&item.text, href)) }
            }
        },
        Said::Tool(_) | Said::Command => tool(item, &meta, id),
    }
}

fn tool(item: &Item, meta: &Markup, id: &str) -> Markup {
    let href = &event_href(id, item.offset);
    let name = match &item.said {
        Said::Tool(name) => name.as_str(),
        _ => "command",
    };
    let outcome = item.output.as_ref().map_or("open", |o| o.outcome);
    let out_href = |o: &Output| event_href(id, o.offset);
    html! {
        details open[outcome == "failure"] {
            summary {
                span class={ "badge " (outcome) } { (outcome) }
                " " strong { (name) } " " span.gist { (gist(&item.gist)) } " " (meta)
            }
            @if !item.text.text.is_empty() || item.text.cut > 0 {
                div.io { span.io-label { "input" } pre { code { (item.text.text) } } (more(&item.text, href)) }
            }
            @match &item.output {
                None => p.muted { "no completion recorded yet" },
                Some(o) => div.io {
                    span.io-label { "output"
                        @if let Some(code) = o.exit_code { " · exit " (code) }
                        " · " a href=(out_href(o)) { "#" (o.offset) } }
                    @if o.text.text.is_empty() && o.text.cut == 0 { p.muted { "no output recorded" } }
                    @else { pre { code { (o.text.text) } } (more(&o.text, &out_href(o))) }
                },
            }
        }
    }
}

/// The first line of a text, short enough for a summary line.
fn gist(text: &str) -> String {
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && *l != "{")
        .unwrap_or("");
    match line.char_indices().nth(90) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line.to_string(),
    }
}

/// Text with its fenced blocks (```) as code blocks and the rest as
/// paragraphs whose line breaks stay.
fn prose(clip: &Clip) -> Markup {
    let mut parts: Vec<(bool, String)> = vec![(false, String::new())];
    for line in clip.text.split_inclusive('\n') {
        if line.trim_start().starts_with("```") {
            let code = !parts.last().is_some_and(|p| p.0);
            parts.push((code, String::new()));
            continue;
        }
        parts
            .last_mut()
            .expect("one part at least")
            .1
            .push_str(line);
    }
    html! {
        @for (code, text) in parts.iter().filter(|(_, t)| !t.trim().is_empty()) {
            @if *code { pre { code { (text.trim_end_matches('\n')) } } }
            @else { p.text { (text.trim_matches('\n')) } }
        }
    }
}

fn more(clip: &Clip, href: &str) -> Markup {
    html! {
        @if clip.cut > 0 {
            p.cut { "… " (clip.cut) " more bytes: " a href=(href) { "the whole event" } }
        }
    }
}

/// Links to the conversation's other windows of [`WINDOW`] events.
fn pager(id: &str, c: &Conversation) -> Markup {
    let href = |page: u64| format!("{}?page={page}", session_href(id));
    html! {
        @if c.pages > 1 {
            p.pages {
                "events " (c.page * WINDOW) "–" ((c.page + 1) * WINDOW - 1) " (page " (c.page + 1) " of " (c.pages) ") "
                @if c.page > 0 { a href=(href(c.page - 1)) rel="prev" { "← earlier" } " " }
                @if c.page + 1 < c.pages { a href=(href(c.page + 1)) rel="next" { "later →" } }
            }
        }
    }
}
