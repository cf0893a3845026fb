//! A session's page: the drawing of `harnery view` (same elements and
//! `data-span-*` attributes), its conversation, its class and audit
//! reasons, its turns with tokens, its checkpoints and resumes, and its
//! events, each linking to its stored text; one window of a long
//! session's events at a time. The live script swaps the header, the
//! drawing and every `data-live` region in again as `finalize` lands
//! rows. Also the page of one event's stored text.

use maud::{Markup, html};

use super::{Nav, conversation, count, document, session_href};
use crate::contract::{Observation, SessionRef};
use crate::report::timeline::TimelineEntry;
use crate::serve::data::SessionDetail;
use crate::serve::data::conversation::WINDOW;
use crate::view::html::since;
use crate::view::page::timeline;

/// The page of one session: the drawing, then the conversation beside
/// its evidence, turns and checkpoints, then its events (the same window
/// of offsets as the conversation). The regions marked `data-live` are
/// what the live script swaps in again when the session grows.
pub(crate) fn render(d: &SessionDetail) -> String {
    let id = &d.view.summary.session.session_id;
    let c = &d.conversation;
    let from = c.page * WINDOW;
    let entries = d
        .timeline
        .entries
        .iter()
        .filter(|e| e.offset >= from && e.offset < from + WINDOW);
    let body = html! {
        (timeline(&d.view))
        div.session-grid {
            section.conversation aria-label="conversation" {
                h2 { "Conversation" }
                div #conversation data-live="conversation" {
                    (conversation::render(id, d.view.summary.first_unix_ns, c))
                }
            }
            aside.side {
                section.facts aria-label="evidence" {
                    h2 { "Evidence" }
                    div #evidence data-live="evidence" {
                        p { "class: " strong { (d.class.class.to_string()) } }
                        @if d.class.reasons.is_empty() { p { "no audit reason" } }
                        @else { ul { @for r in &d.class.reasons { li { code { (r) } } } } }
                    }
                }
                (turns(d))
                (log(d))
            }
        }
        section aria-label="events" {
            h2 { "Events" }
            table.events {
                thead { tr { th { "offset" } th { "time" } th { "entry" } th { "agent" } th.n { "turn tokens" } } }
                tbody #events data-live="events" data-session=(id) {
                    @for e in entries { (event_row(id, e)) }
                }
            }
        }
    };
    let title = format!(
        "harnery: {} {}",
        d.view.summary.session.adapter.as_str(),
        id
    );
    document(&title, Nav::Sessions, true, body)
}

fn turns(d: &SessionDetail) -> Markup {
    html! {
        section aria-label="turns" { h2 { "Turns" } div #turns data-live="turns" {
            @if d.view.turns.is_empty() { p { "no turn recorded" } }
            @else {
                table.turns {
                    thead { tr { th.n { "turn" } th { "id" } th { "completed" } th.n { "tokens in + out" } } }
                    tbody { @for t in &d.view.turns { tr {
                        td.n { (t.number) } td { code { (t.turn_id) } }
                        td { (t.completed.as_deref().unwrap_or("not recorded")) }
                        td.n { (count(t.tokens)) }
                    } } }
                }
            }
        } }
    }
}

fn log(d: &SessionDetail) -> Markup {
    let log = &d.log;
    html! {
        section aria-label="checkpoints and resumes" { h2 { "Checkpoints and resumes" } div #log data-live="log" {
            p { "head " (log.head) " · incarnation " (log.incarnation) }
            @if log.checkpoints.is_empty() { p { "no checkpoint" } }
            @else {
                table.checkpoints {
                    thead { tr { th { "checkpoint" } th.n { "offset" } th { "origin" } th { "commit" } th { "valid" } } }
                    tbody { @for c in &log.checkpoints { tr {
                        td { code { (c.checkpoint_id) } } td.n { (c.offset) } td { (c.origin) }
                        td { (observed(&c.commit)) }
                        td { @if c.valid { "yes" } @else { "no: a resume invalidated it" } }
                    } } }
                }
            }
            @for r in &log.resumes {
                p { "resumed at offset " (r.offset) " (" (r.resumed.evidence) "), incarnation "
                    (r.resumed.incarnation) }
            }
        } }
    }
}

fn observed(o: &Observation<String>) -> String {
    match o {
        Observation::Observed(v) => v.clone(),
        Observation::Unknown(why) => format!("unknown ({why})"),
    }
}

/// One event's row (`#e{offset}` is its anchor, `data-span` the span it
/// is a side of); its offset links to the event's stored text.
pub(crate) fn event_row(session_id: &str, e: &TimelineEntry) -> Markup {
    let span = e.span.as_ref().map(|s| s.request_event_id.as_str());
    html! {
        tr id={ "e" (e.offset) } data-offset=(e.offset) data-span=[span]
            data-steering=[e.steering.as_deref()] {
            td { a href={ (session_href(session_id)) "/events/" (e.offset) } { (e.offset) } }
            td { (since(e.at_ms)) }
            td { (e.text) }
            td { (e.agent_id.as_deref().unwrap_or("")) }
            td.n { (count(e.turn_tokens)) }
        }
    }
}

/// The page of one event: its stored JSON, pretty-printed when it parses.
pub(crate) fn event(session: &SessionRef, offset: u64, seq: i64, text: &str) -> String {
    let pretty = serde_json::from_str::<serde_json::Value>(text)
        .ok()
        .and_then(|v| serde_json::to_string_pretty(&v).ok())
        .unwrap_or_else(|| text.to_string());
    let body = html! {
        h1 { "Event " (offset) " of " code { (session.session_id) } }
        p { (session.adapter.as_str()) " · ledger seq " (seq) " · "
            a href=(session_href(&session.session_id)) { "back to the session" } }
        pre.event { code { (pretty) } }
    };
    document(
        &format!("harnery: event {offset}"),
        Nav::Sessions,
        false,
        body,
    )
}
