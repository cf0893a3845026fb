//! The sessions page: the filters of `harnery sessions` (time range,
//! agent, class), paged; per row the title (else the id), project, agent,
//! last activity (relative; the instant on hover), turns, tool calls,
//! tokens, cost and class, and a note where the agent's record is gone. Its table body is also served alone, for the live
//! script to swap in and mark what changed.

use maud::{Markup, html};

use super::{
    Nav, agent_select, cost_cell, count, document, option, session_href, short_count, when,
};
use crate::ledger::SessionSummary;
use crate::report::record_state::REMOVED;
use crate::report::session_list::short_project;
use crate::serve::data::SessionRow;
use crate::serve::query::encode;

/// The filters as the page's form and links carry them.
#[derive(Debug, Default, Clone)]
pub(crate) struct Form {
    pub since: String,
    pub until: String,
    pub agent: String,
    pub class: String,
    pub project: String,
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
            ("project", &self.project),
        ] {
            if !v.is_empty() {
                q.push_str(&format!("&{k}={}", encode(v)));
            }
        }
        q
    }
}

/// The whole page: `rows` is one page and, when `more`, another follows;
/// times read relative to `now`.
pub(crate) fn render(form: &Form, rows: &[SessionRow], more: bool, now: i64) -> String {
    let body = html! {
        h1 { "Sessions" }
        (filters(form))
        table.sessions.list #sessions data-fragment={ "/sessions?fragment=rows&" (form.query(form.page)) } {
            colgroup {
                col.c-title; col.c-project; col.c-agent; col.c-when; col.c-n; col.c-n; col.c-n;
                col.c-cost; col.c-class;
            }
            thead { tr {
                th { "session" } th { "project" } th { "agent" } th { "last active" }
                th.n { "turns" } th.n title="tool calls: closed natively + recovered + open" { "tools" }
                th.n { "tokens" } th.n { "cost" } th { "class" }
            } }
            tbody #session-rows { (table_rows(rows, now)) }
        }
        @if rows.is_empty() { p { "No session matches." } }
        p.pages {
            @if form.page > 0 { a href={ "/sessions?" (form.query(form.page - 1)) } rel="prev" { "← newer" } " " }
            "page " (form.page + 1)
            @if more { " " a href={ "/sessions?" (form.query(form.page + 1)) } rel="next" { "older →" } }
        }
    };
    document("harnery: sessions", Nav::Sessions, false, body)
}

fn filters(form: &Form) -> Markup {
    html! {
        form.filters method="get" action="/sessions" {
            label { "since " input type="text" name="since" value=(form.since) placeholder="RFC 3339"; } " "
            label { "until " input type="text" name="until" value=(form.until) placeholder="RFC 3339"; } " "
            (agent_select(&form.agent)) " "
            label { "project " input type="text" name="project" value=(form.project) size="14"
                placeholder="name or path"; } " "
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
pub(crate) fn table_rows(rows: &[SessionRow], now: i64) -> Markup {
    html! { @for r in rows { (row(r, now)) } }
}

/// The words a session is listed by: its title where it has one (the id
/// on hover), else its id.
pub(crate) fn label(s: &SessionSummary) -> Markup {
    match s.title.as_deref().filter(|t| !t.trim().is_empty()) {
        Some(title) => html! { span.name title=(s.session.session_id) { (title) } },
        None => html! { code.name { (s.session.session_id) } },
    }
}

/// Where a session ran, for a narrow cell: the project's last two path
/// parts, the whole path on hover.
pub(crate) fn project_cell(project: Option<&str>) -> Markup {
    match project {
        None => html! { span.muted { "-" } },
        Some(p) => {
            let href = format!("/sessions?project={}", crate::serve::query::encode(p));
            html! { a.project href=(href) title={ (p) ": its sessions" } { (short_project(p)) } }
        }
    }
}

fn row(r: &SessionRow, now: i64) -> Markup {
    let s = &r.listed.summary;
    let u = &r.usage;
    // What changes when finalize lands rows of this session.
    let sig = format!("{}:{}:{}", s.events, s.last_unix_ns, s.spans.open);
    let removed = r.listed.record.as_deref() == Some(REMOVED);
    let tools = s.spans.closed_native + s.spans.recovered + s.spans.open;
    let tokens = u.tokens.in_out();
    html! {
        tr data-session=(s.session.session_id) data-sig=(sig) {
            td.title {
                a href=(session_href(&s.session.session_id)) { (label(s)) }
                @if removed { " " span.note title="the agent deleted its record: history only in harnery" { "record removed" } }
                @else if let Some(problem) = &r.listed.record { " " span.note { (problem) } }
            }
            td.project { (project_cell(s.project.as_deref())) }
            td { (s.session.adapter.as_str()) }
            td { (when(s.last_unix_ns, now)) }
            td.n { (s.turns) }
            td.n title={ (s.spans.closed_native) " closed natively, " (s.spans.recovered) " recovered, " (s.spans.open) " open" } {
                (tools) @if s.spans.open > 0 { " " span.open-count { "(" (s.spans.open) " open)" } }
            }
            td.n title={ (count(u.tokens.input)) " in, " (count(u.tokens.output)) " out" } {
                (tokens.map_or("-".to_string(), short_count))
            }
            td.n { (cost_cell(u.reported_cost, u.priced_cost)) }
            td { (r.listed.class.class.to_string()) }
        }
    }
}
