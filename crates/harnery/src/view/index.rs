//! The index page: every session, newest activity first, with the columns
//! of `harnery sessions` (its title and project among them), each linking
//! to its own page.

use maud::{Markup, html};

use super::html::document;
use crate::clock::format_time;
use crate::ledger::SessionSummary;

/// One listed session and the file its page was written to.
pub(crate) struct IndexRow {
    pub summary: SessionSummary,
    /// `eligible` or `audit_only`.
    pub eligibility: String,
    /// The epochs the session spans, when more than the live one was read.
    pub epochs: Vec<String>,
    /// The page's file name, relative to the index.
    pub file: String,
}

/// The index of `rows` (already newest first).
pub(crate) fn render(rows: &[IndexRow], tagged: bool) -> String {
    let headings = [
        "adapter",
        "session",
        "title",
        "project",
        "first",
        "last",
        "turns",
        "open",
        "native",
        "recovered",
        "eligibility",
    ];
    let body = html! {
        header { h1 { "harnery sessions" } p { (rows.len()) " sessions, newest activity first" } } "\n"
        table.sessions {
            thead { tr {
                @for h in headings { th { (h) } }
                @if tagged { th { "epochs" } }
            } }
            tbody { "\n" @for r in rows { (row(r, tagged)) "\n" } }
        } "\n"
    };
    document("harnery view: sessions", body, None)
}

fn row(r: &IndexRow, tagged: bool) -> Markup {
    let s = &r.summary;
    html! {
        tr {
            td { (s.session.adapter.as_str()) }
            td { a href=(r.file) { code { (s.session.session_id) } } }
            td.title { (s.title.as_deref().unwrap_or("")) }
            td.project { (s.project.as_deref().unwrap_or("")) }
            td { (format_time(s.first_unix_ns)) }
            td { (format_time(s.last_unix_ns)) }
            td.n { (s.turns) }
            td.n { (s.spans.open) }
            td.n { (s.spans.closed_native) }
            td.n { (s.spans.recovered) }
            td { (r.eligibility) }
            @if tagged { td { (r.epochs.join(",")) } }
        }
    }
}
