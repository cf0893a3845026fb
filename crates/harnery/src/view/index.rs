//! The index page: every session, newest first, with the columns of
//! `harnery sessions`, each linking to its own page.

use std::fmt::Write;

use super::html::{attr, document, text};
use crate::ledger::{SessionSummary, format_time};

/// One listed session and the file its page was written to.
pub struct IndexRow {
    pub summary: SessionSummary,
    /// `eligible` or `audit_only`.
    pub eligibility: String,
    /// The epochs the session spans, when more than the live one was read.
    pub epochs: Vec<String>,
    /// The page's file name, relative to the index.
    pub file: String,
}

/// The index of `rows` (already newest first).
pub fn render(rows: &[IndexRow], tagged: bool) -> String {
    let mut body = String::new();
    let _ = writeln!(
        body,
        "<header><h1>harnery sessions</h1><p>{} sessions, newest first</p></header>",
        rows.len()
    );
    body.push_str("<table class=\"sessions\"><thead><tr>");
    for h in [
        "adapter",
        "session",
        "first",
        "last",
        "turns",
        "open",
        "native",
        "recovered",
        "eligibility",
    ] {
        let _ = write!(body, "<th>{h}</th>");
    }
    if tagged {
        body.push_str("<th>epochs</th>");
    }
    body.push_str("</tr></thead><tbody>\n");
    for r in rows {
        row(&mut body, r, tagged);
    }
    body.push_str("</tbody></table>\n");
    document("harnery view: sessions", &body, None)
}

fn row(out: &mut String, r: &IndexRow, tagged: bool) {
    let s = &r.summary;
    let _ = write!(
        out,
        "<tr><td>{}</td><td><a href=\"{}\"><code>{}</code></a></td><td>{}</td><td>{}</td>\
         <td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td>{}</td>",
        text(s.session.adapter.as_str()),
        attr(&r.file),
        text(&s.session.session_id),
        format_time(s.first_unix_ns),
        format_time(s.last_unix_ns),
        s.turns,
        s.spans.open,
        s.spans.closed_native,
        s.spans.recovered,
        text(&r.eligibility)
    );
    if tagged {
        let _ = write!(out, "<td>{}</td>", text(&r.epochs.join(",")));
    }
    out.push_str("</tr>\n");
}
