//! The search page: the filters of `harnery search` as a plain GET form,
//! and the hits, each with where it is (session, time, turn, kind, tool
//! and span) and its snippet with the matches in `<mark>`, linking to the
//! event's row on its session page (`/sessions/{id}#e{offset}`).

use maud::{Markup, html};

use super::{Nav, agent_select, document_with, option, session_href};
use crate::search::{Hit, Kind};
use crate::serve::data::conversation::WINDOW;
use crate::serve::search::Form;

/// The page: the form, then `hits` when a search ran, or `problem` when
/// it could not.
pub(crate) fn render(form: &Form, hits: Option<&[Hit]>, problem: Option<&str>) -> String {
    let body = html! {
        h1 { "Search" }
        (filters(form))
        @if let Some(why) = problem { p.problem role="alert" { (why) } }
        @if let Some(hits) = hits {
            @if hits.is_empty() { p { "No hits." } }
            @else { (table(hits)) }
            p { a href={ "/api/search?" (form.query()) } { "These hits as JSON" } }
        }
    };
    document_with("harnery: search", Nav::Search, false, &form.q, body)
}

fn filters(form: &Form) -> Markup {
    html! {
        form.filters.search method="get" action="/search" role="search" {
            label { "query " input type="search" name="q" value=(form.q) size="40"
                placeholder="words, \"phrases\", pre*, src/paths"; } " "
            label { "kind " select name="kind" {
                (option("", "any", &form.kind))
                @for k in Kind::ALL { (option(k.as_str(), k.as_str(), &form.kind)) }
                @if !form.kind.is_empty() && form.kind.parse::<Kind>().is_err() {
                    (option(&form.kind, &form.kind, &form.kind))
                }
            } } " "
            (agent_select(&form.agent)) " "
            label { "tool " input type="text" name="tool" value=(form.tool) size="10"; } " "
            label { input type="checkbox" name="failed" value="1" checked[form.failed]; " failed only" } " "
            label { "since " input type="text" name="since" value=(form.since) placeholder="RFC 3339"; } " "
            label { "until " input type="text" name="until" value=(form.until) placeholder="RFC 3339"; } " "
            label { "order " select name="sort" {
                (option("", "relevance", &form.sort))
                (option("time", "newest first", &form.sort))
            } } " "
            button type="submit" { "Search" }
        }
    }
}

fn table(hits: &[Hit]) -> Markup {
    html! {
        table.hits {
            thead { tr {
                th { "session" } th { "time" } th { "turn" } th { "kind" } th { "tool" }
                th { "span" } th { "text" }
            } }
            tbody { @for h in hits { (row(h)) } }
        }
    }
}

fn row(h: &Hit) -> Markup {
    // A hit past a session's first window of events links to its window.
    let page = match h.offset / WINDOW {
        0 => String::new(),
        n => format!("?page={n}"),
    };
    let href = format!(
        "{}{page}#e{}",
        session_href(&h.session.session_id),
        h.offset
    );
    html! {
        tr {
            td {
                a.hit href=(href) { code { (h.session_prefix) } " @" (h.offset) }
                @if let Some(title) = &h.title {
                    br; span.title title=(title) { (cut_title(title)) }
                }
            }
            td { (h.time) }
            td { @if let Some(t) = &h.turn { code { (short(t)) } } }
            td { (h.kind.as_str()) }
            td { (h.tool.as_deref().unwrap_or("")) }
            td { @if let Some(state) = &h.span_state {
                (state) " · " (h.outcome.as_deref().unwrap_or("-"))
            } }
            td.snippet { (marked(h)) }
        }
    }
}

/// The characters of a session's title a hit shows (the whole on hover).
const TITLE_CHARS: usize = 60;

fn cut_title(title: &str) -> String {
    match title.char_indices().nth(TITLE_CHARS) {
        Some((at, _)) => format!("{}…", &title[..at]),
        None => title.to_string(),
    }
}

fn short(id: &str) -> &str {
    id.get(..12).unwrap_or(id)
}

/// The snippet with each match in `<mark>`; a range that does not fall
/// on the text's characters is left unmarked.
fn marked(h: &Hit) -> Markup {
    let text = &h.snippet;
    let mut pieces: Vec<(bool, &str)> = Vec::new();
    let mut at = 0;
    for &[start, end] in &h.matches {
        let (Some(before), Some(inside)) = (text.get(at..start), text.get(start..end)) else {
            continue;
        };
        pieces.push((false, before));
        pieces.push((true, inside));
        at = end;
    }
    pieces.push((false, text.get(at..).unwrap_or("")));
    html! { @for (hit, piece) in pieces { @if hit { mark { (piece) } } @else { (piece) } } }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hit(snippet: &str, matches: Vec<[usize; 2]>) -> Hit {
        serde_json::from_value(serde_json::json!({
            "epoch": "live",
            "session": { "adapter": "claude-code", "session_id": "s/<1>" },
            "session_prefix": "s/<1>", "time": "2026-01-01T00:00:00.000Z",
            "time_unix_ns": 0, "turn": null, "kind": "tool-input",
            "event_type": "tool.requested", "tool": "<Bash>", "span_state": "closed_native",
            "outcome": "failure", "offset": 7, "seq": 9, "event_id": "e",
            "snippet": snippet, "matches": matches, "score": 0.0,
        }))
        .unwrap()
    }

    #[test]
    fn hits_are_escaped_and_their_matches_marked() {
        let h = hit("run <b>exit 3</b> now", vec![[7, 13], [2, 99]]);
        let html = render(&Form::default(), Some(&[h]), None);
        assert!(
            html.contains("run &lt;b&gt;<mark>exit 3</mark>&lt;/b&gt; now"),
            "{html}"
        );
        assert!(html.contains("href=\"/sessions/s%2F%3C1%3E#e7\""), "{html}");
        assert!(html.contains("&lt;Bash&gt;") && !html.contains("<Bash>"));
        assert!(html.contains("closed_native · failure"));
        // The session's title shows under it, escaped, cut, whole on hover.
        let mut titled = hit("x", vec![]);
        titled.title = Some(format!("<i>fix</i> {}", "y".repeat(80)));
        let html = render(&Form::default(), Some(&[titled]), None);
        assert!(html.contains("&lt;i&gt;fix&lt;/i&gt; yyy"), "{html}");
        assert!(
            html.contains(&format!("{}…</span>", "y".repeat(49))),
            "{html}"
        );
        let bad = render(&Form::default(), None, Some("bad query: <x>"));
        assert!(bad.contains("bad query: &lt;x&gt;"), "{bad}");
    }
}
