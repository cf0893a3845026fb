//! The sessions page: newest first, the filters of `harnery sessions`
//! (time range, agent, class), paged; per row the agent, times, turns,
//! spans by state, tokens and cost, class, and a note where the agent's
//! record is gone. Its table body is also served alone, for the live
//! script to swap in and mark what changed.

use maud::{Markup, html};

use super::{Nav, agent_select, count, document, money, option, session_href};
use crate::clock::format_time;
use crate::report::record_state::REMOVED;
use crate::serve::data::SessionRow;
use crate::serve::query::encode;

/// The filters as the page's form and links carry them.
#[derive(Debug, Default, Clone)]
pub(crate) struct Form {
    pub since: String,
    pub until: String,
    pub agent: String,
    pub class: String,
    pub page: usize,
}

impl Form {
    /// The query string of these filters on page `page`.
    pub(crate) fn query(&self, page: usize) -> String {
        let mut q = format!("page={page}");
        for (k, v) in [
            ("since", &self.since),
            ("until", &self.until),
            ("agent", &self.agent),
            ("class", &self.class),
        ] {
            if !v.is_empty() {
                q.push_str(&format!("&{k}={}", encode(v)));
            }
        }
        q
    }
}

/// The whole page: `rows` is one page and, when `more`, another follows.
pub(crate) fn render(form: &Form, rows: &[SessionRow], more: bool) -> String {
    let body = html! {
        h1 { "Sessions" }
        (filters(form))
        table.sessions #sessions data-fragment={ "/?fragment=rows&" (form.query(form.page)) } {
            thead { tr {
                th { "session" } th { "agent" } th { "first" } th { "last" } th.n { "turns" }
                th.n { "native" } th.n { "recovered" } th.n { "open" }
                th.n { "tokens in" } th.n { "tokens out" } th.n { "reported cost" }
                th.n { "priced cost" } th { "class" } th { "record" }
            } }
            tbody #session-rows { (table_rows(rows)) }
        }
        @if rows.is_empty() { p { "No session matches." } }
        p.pages {
            @if form.page > 0 { a href={ "/?" (form.query(form.page - 1)) } rel="prev" { "← newer" } " " }
            "page " (form.page + 1)
            @if more { " " a href={ "/?" (form.query(form.page + 1)) } rel="next" { "older →" } }
        }
    };
    document("harnery: sessions", Nav::Sessions, false, body)
}

fn filters(form: &Form) -> Markup {
    html! {
        form.filters method="get" action="/" {
            label { "since " input type="text" name="since" value=(form.since) placeholder="RFC 3339"; } " "
            label { "until " input type="text" name="until" value=(form.until) placeholder="RFC 3339"; } " "
            (agent_select(&form.agent)) " "
            label { "class " select name="class" {
                (option("", "any", &form.class))
                (option("eligible", "eligible", &form.class))
                (option("audit_only", "audit_only", &form.class))
                (option("imported", "imported", &form.class))
            } } " "
            button type="submit" { "Filter" }
        }
    }
}

/// The table's rows alone (the live script swaps them in).
pub(crate) fn table_rows(rows: &[SessionRow]) -> Markup {
    html! { @for r in rows { (row(r)) } }
}

fn row(r: &SessionRow) -> Markup {
    let s = &r.listed.summary;
    let u = &r.usage;
    // What changes when finalize lands rows of this session.
    let sig = format!("{}:{}:{}", s.events, s.last_unix_ns, s.spans.open);
    let removed = r.listed.record.as_deref() == Some(REMOVED);
    html! {
        tr data-session=(s.session.session_id) data-sig=(sig) {
            td { a href=(session_href(&s.session.session_id)) { code { (s.session.session_id) } } }
            td { (s.session.adapter.as_str()) }
            td { (format_time(s.first_unix_ns)) }
            td { (format_time(s.last_unix_ns)) }
            td.n { (s.turns) }
            td.n { (s.spans.closed_native) }
            td.n { (s.spans.recovered) }
            td.n { (s.spans.open) }
            td.n { (count(u.tokens.input)) }
            td.n { (count(u.tokens.output)) }
            td.n { (money(u.reported_cost)) }
            td.n { (money(u.priced_cost)) }
            td { (r.listed.class.class.to_string()) }
            td {
                @if removed { "removed by the agent: history only in harnery" }
                @else if let Some(problem) = &r.listed.record { (problem) }
            }
        }
    }
}
