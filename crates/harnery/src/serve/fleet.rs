//! `harnery serve --from postgresql://…`: the fleet, read from the central
//! PostgreSQL with the reader role. The sessions of every host, newest
//! first, with a host column (filters `host` and `since`, paged), and
//! `/api/sessions` as the array of the lines `harnery fleet sessions
//! --json` prints. The other pages need a host's own ledger and are not
//! served in this mode. One connection per request, read-only queries.

use maud::{Markup, html};

use super::pages::{Nav, document};
use super::query::{Target, encode};
use super::routes::{PAGE_ROWS, Reply, asset};
use crate::fleet::read::{self, FleetSession, ReadFilter};
use crate::fleet::{FleetError, Target as PgTarget};

/// The fleet a server reads.
pub struct Fleet {
    pub target: PgTarget,
}

/// The reply to a read of `t` in fleet mode (`None`: no such page here).
pub(crate) fn route(fleet: &Fleet, t: &Target) -> Option<Reply> {
    let path = t.path();
    let api = path.first() == Some(&"api");
    let filter = match filter(t) {
        Ok(f) => f,
        Err(detail) => return Some(Reply::problem(400, api, &detail)),
    };
    let answer = match path.as_slice() {
        [] => sessions(fleet, &filter).map(|rows| Reply::html(page(t, &rows))),
        ["api", "sessions"] => sessions(fleet, &filter)
            .map(|rows| Reply::json(serde_json::to_value(rows).expect("fleet sessions serialize"))),
        ["static", name] => return asset(name),
        _ => return None,
    };
    Some(answer.unwrap_or_else(|e| Reply::problem(500, api, &e.to_string())))
}

fn sessions(fleet: &Fleet, filter: &ReadFilter) -> Result<Vec<FleetSession>, FleetError> {
    let mut client = fleet.target.connect()?;
    read::prepare(&mut client, filter)?;
    read::sessions(&mut client, filter)
}

fn filter(t: &Target) -> Result<ReadFilter, String> {
    let since = match t.param("since") {
        None => None,
        Some(v) => Some(
            crate::clock::parse_instant(v)
                .ok_or_else(|| format!("since={v:?} is not an RFC 3339 time"))?,
        ),
    };
    Ok(ReadFilter {
        host: t.param("host").map(String::from),
        since_unix_ns: since,
    })
}

fn page(t: &Target, all: &[FleetSession]) -> String {
    let page: usize = t.param("page").and_then(|p| p.parse().ok()).unwrap_or(0);
    let rows = all
        .iter()
        .skip(page.saturating_mul(PAGE_ROWS))
        .take(PAGE_ROWS);
    let more = all.len() > page.saturating_add(1).saturating_mul(PAGE_ROWS);
    let host = t.param("host").unwrap_or("");
    let since = t.param("since").unwrap_or("");
    let query = |p: usize| format!("page={p}&host={}&since={}", encode(host), encode(since));
    let body = html! {
        h1 { "Fleet sessions" }
        form.filters method="get" action="/" {
            label { "host " input type="text" name="host" value=(host); } " "
            label { "since " input type="text" name="since" value=(since) placeholder="RFC 3339"; } " "
            button type="submit" { "Filter" }
        }
        table.sessions {
            thead { tr {
                th { "host" } th { "session" } th { "title" } th { "project" } th { "agent" }
                th { "first" } th { "last" }
                th.n { "events" } th.n { "turns" } th.n { "native" } th.n { "recovered" }
                th.n { "open" } th { "class" } th { "reasons" }
            } }
            tbody { @for s in rows { (row(s)) } }
        }
        @if all.is_empty() { p { "No session matches." } }
        p.pages {
            @if page > 0 { a href={ "/?" (query(page - 1)) } rel="prev" { "← newer" } " " }
            "page " (page + 1)
            @if more { " " a href={ "/?" (query(page + 1)) } rel="next" { "older →" } }
        }
    };
    document("harnery: fleet sessions", Nav::Sessions, false, body)
}

fn row(s: &FleetSession) -> Markup {
    html! {
        tr {
            td { (s.hostname) " " small { code { (s.host_id) } } }
            td { code { (s.session_id) } @if !s.live { " " small { "(archived epoch)" } } }
            td.title { (s.title.as_deref().unwrap_or("")) }
            td.project { (s.project.as_deref().unwrap_or("")) }
            td { (s.adapter) } td { (s.first_at) } td { (s.last_at) }
            td.n { (s.events) } td.n { (s.turns) } td.n { (s.spans_closed_native) }
            td.n { (s.spans_recovered) } td.n { (s.spans_open) }
            td { (s.class) } td { (s.reasons.join(", ")) }
        }
    }
}
