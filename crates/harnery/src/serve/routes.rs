//! Which reply a (guarded) request target gets: the pages, the JSON API
//! and the static files. Every reply is built whole before it is sent.

use super::data::dashboard::Range;
use super::data::{ReadError, Source};
use super::pages::{self, health::LedgerFacts, sessions::Form};
use super::query::Target;
use super::search::{self, Outcome};
use super::{api, assets};
use crate::report::audit::AuditClass;
use crate::report::session_list::SessionFilter;
use crate::report::usage::GroupBy;

/// Sessions on one page of the list.
pub(crate) const PAGE_ROWS: usize = 50;

/// The parameters of the sessions list.
const LIST_PARAMS: [&str; 7] = [
    "since", "until", "agent", "class", "project", "page", "fragment",
];

/// A reply: status, media type, body.
pub(crate) struct Reply {
    pub status: u16,
    pub content_type: &'static str,
    pub body: Vec<u8>,
}

const HTML: &str = "text/html; charset=utf-8";
const JSON: &str = "application/json";

impl Reply {
    pub(crate) fn html(body: String) -> Reply {
        Reply {
            status: 200,
            content_type: HTML,
            body: body.into_bytes(),
        }
    }

    pub(crate) fn json(v: serde_json::Value) -> Reply {
        Reply {
            status: 200,
            content_type: JSON,
            body: v.to_string().into_bytes(),
        }
    }

    /// A status with a short page (or JSON under `/api/`) saying why.
    pub(crate) fn problem(status: u16, api: bool, detail: &str) -> Reply {
        let title = match status {
            400 => "Bad request",
            403 => "Forbidden",
            404 => "Not found",
            405 => "Method not allowed",
            413 => "Payload too large",
            _ => "Could not read the ledger",
        };
        let body = match api {
            true => serde_json::json!({ "error": title, "detail": detail }).to_string(),
            false => pages::problem(title, detail),
        };
        Reply {
            status,
            content_type: if api { JSON } else { HTML },
            body: body.into_bytes(),
        }
    }
}

/// The reply to a read of `target`.
pub(crate) fn route(source: &Source, target: &Target) -> Reply {
    let path = target.path();
    let api = path.first() == Some(&"api");
    match reply(source, target, &path) {
        Ok(Some(r)) => r,
        Ok(None) => Reply::problem(404, api, "no such page"),
        Err(Bad(detail)) => Reply::problem(400, api, &detail),
    }
}

/// A request the server cannot answer as asked.
struct Bad(String);

fn reply(source: &Source, t: &Target, path: &[&str]) -> Result<Option<Reply>, Bad> {
    let read = |r: Result<Reply, ReadError>, api: bool| match r {
        Ok(reply) => reply,
        Err(e) if e.not_found() => Reply::problem(404, api, &e.to_string()),
        Err(e) => Reply::problem(500, api, &e.to_string()),
    };
    Ok(Some(match path {
        // The list's filters on `/` (an address from before the
        // dashboard) still answer with the list.
        [] if LIST_PARAMS.iter().any(|p| t.param(p).is_some()) => {
            read(sessions_page(source, t)?, false)
        }
        [] => read(home_page(source, t)?, false),
        ["sessions"] => read(sessions_page(source, t)?, false),
        ["sessions", id] => read(session_page(source, t, id)?, false),
        ["sessions", id, "events", offset] => read(event_page(source, id, offset)?, false),
        ["usage"] => read(
            source
                .usage()
                .map(|u| Reply::html(pages::usage::render(&u))),
            false,
        ),
        ["health"] => read(health_page(source), false),
        ["search"] => search_page(source, t),
        ["api", "sessions"] => read(api::sessions(source, &filter(t)?.1).map(Reply::json), true),
        ["api", "sessions", id] => read(api::session(source, id).map(Reply::json), true),
        ["api", "usage"] => read(api::usage(source, group_by(t)?).map(Reply::json), true),
        ["api", "health"] => read(api::health(source).map(Reply::json), true),
        ["api", "search"] => search_api(source, t),
        ["api", "last-seq"] => read(
            api::last_seq(source, t.param("session")).map(Reply::json),
            true,
        ),
        ["static", name] => match assets::get(name) {
            Some((content_type, bytes)) => Reply {
                status: 200,
                content_type,
                body: bytes.to_vec(),
            },
            None => return Ok(None),
        },
        _ => return Ok(None),
    }))
}

/// A static file's reply, if there is one by that name.
pub(crate) fn asset(name: &str) -> Option<Reply> {
    assets::get(name).map(|(content_type, bytes)| Reply {
        status: 200,
        content_type,
        body: bytes.to_vec(),
    })
}

fn home_page(source: &Source, t: &Target) -> Result<Result<Reply, ReadError>, Bad> {
    let range = match t.param("range") {
        None => Range::Week,
        Some(r) => Range::parse(r).map_err(Bad)?,
    };
    Ok(source
        .dashboard(range)
        .map(|d| Reply::html(pages::home::render(d.as_ref(), range))))
}

fn sessions_page(source: &Source, t: &Target) -> Result<Result<Reply, ReadError>, Bad> {
    let (form, mut filter) = filter(t)?;
    filter.skip = form
        .page
        .checked_mul(PAGE_ROWS)
        .ok_or_else(|| Bad(format!("page={} is past the last page", form.page)))?;
    // One more than a page says whether another page follows.
    filter.limit = Some(PAGE_ROWS + 1);
    let now = source.now();
    Ok(source.session_rows(&filter).map(|mut rows| {
        let more = rows.len() > PAGE_ROWS;
        rows.truncate(PAGE_ROWS);
        match t.param("fragment") {
            Some("rows") => Reply::html(pages::sessions::table_rows(&rows, now).into_string()),
            _ => Reply::html(pages::sessions::render(&form, &rows, more, now)),
        }
    }))
}

fn session_page(source: &Source, t: &Target, id: &str) -> Result<Result<Reply, ReadError>, Bad> {
    let page = match t.param("page") {
        None => 0,
        Some(p) => p
            .parse::<u64>()
            .map_err(|_| Bad(format!("page={p:?} is not a number")))?,
    };
    let detail = match source.session(id, page) {
        Ok(d) => d,
        Err(e) => return Ok(Err(e)),
    };
    if page >= detail.conversation.pages {
        return Err(Bad(format!(
            "page={page} is past the session's last page ({})",
            detail.conversation.pages
        )));
    }
    Ok(Ok(Reply::html(pages::session::render(&detail))))
}

fn event_page(source: &Source, id: &str, offset: &str) -> Result<Result<Reply, ReadError>, Bad> {
    let offset: u64 = offset
        .parse()
        .map_err(|_| Bad(format!("{offset:?} is not an event offset")))?;
    Ok(source.event(id, offset).map(|found| match found {
        Some((session, seq, text)) => {
            Reply::html(pages::session::event(&session, offset, seq, &text))
        }
        None => Reply::problem(
            404,
            false,
            &format!("session {id:?} has no event at offset {offset}"),
        ),
    }))
}

fn search_page(source: &Source, t: &Target) -> Reply {
    use pages::search::render;
    let (status, body) = match search::run(source, t) {
        Outcome::Blank(form) => (200, render(&form, None, None)),
        Outcome::Hits(form, hits) => (200, render(&form, Some(&hits), None)),
        Outcome::Bad(form, why) => (400, render(&form, None, Some(&why))),
        Outcome::Failed(form, why) => (500, render(&form, None, Some(&why))),
    };
    Reply {
        status,
        ..Reply::html(body)
    }
}

/// The hits as `harnery search --json` prints them, in one array.
fn search_api(source: &Source, t: &Target) -> Reply {
    match search::run(source, t) {
        Outcome::Blank(_) => Reply::problem(400, true, "give the query text as q=…"),
        Outcome::Hits(_, hits) => Reply::json(api::hits(&hits)),
        Outcome::Bad(_, why) => Reply::problem(400, true, &why),
        Outcome::Failed(_, why) => Reply::problem(500, true, &why),
    }
}

fn health_page(source: &Source) -> Result<Reply, ReadError> {
    let report = source.health()?;
    let facts = match source.ledger()? {
        Some(l) => Some(LedgerFacts::of(&l)?),
        None => None,
    };
    Ok(Reply::html(pages::health::render(&report, facts.as_ref())))
}

/// The filters of `harnery sessions` from the query: `since`, `until`
/// (RFC 3339), `agent`, `class`, `page`; `limit` and `page` for the API.
fn filter(t: &Target) -> Result<(Form, SessionFilter), Bad> {
    let time = |name: &str| match t.param(name) {
        None => Ok(None),
        Some(v) => crate::clock::parse_instant(v)
            .map(Some)
            .ok_or_else(|| Bad(format!("{name}={v:?} is not an RFC 3339 time"))),
    };
    let number = |name: &str| match t.param(name) {
        None => Ok(None),
        Some(v) => v
            .parse::<usize>()
            .map(Some)
            .map_err(|_| Bad(format!("{name}={v:?} is not a number"))),
    };
    let adapter = match t.param("agent") {
        None => None,
        Some(a) => Some(crate::contract::AdapterId::parse(a).ok_or_else(|| {
            Bad(format!(
                "agent={a:?} is not {}",
                crate::contract::AdapterId::choices()
            ))
        })?),
    };
    let class = match t.param("class") {
        None => None,
        Some("eligible") => Some(AuditClass::Eligible),
        Some("audit_only") => Some(AuditClass::AuditOnly),
        Some("imported") => Some(AuditClass::Imported),
        Some(c) => {
            return Err(Bad(format!(
                "class={c:?} is not eligible, audit_only or imported"
            )));
        }
    };
    let page = number("page")?.unwrap_or(0);
    let limit = number("limit")?;
    let form = Form {
        since: t.param("since").unwrap_or("").to_string(),
        until: t.param("until").unwrap_or("").to_string(),
        agent: t.param("agent").unwrap_or("").to_string(),
        class: t.param("class").unwrap_or("").to_string(),
        project: t.param("project").unwrap_or("").to_string(),
        page,
    };
    let filter = SessionFilter {
        since: time("since")?,
        until: time("until")?,
        adapter,
        class,
        skip: match limit {
            None => 0,
            Some(n) => n
                .checked_mul(page)
                .ok_or_else(|| Bad(format!("page={page} is past the last page")))?,
        },
        limit,
        project: t
            .param("project")
            .filter(|p| !p.is_empty())
            .map(str::to_string),
    };
    Ok((form, filter))
}

fn group_by(t: &Target) -> Result<GroupBy, Bad> {
    t.param("by").unwrap_or("session").parse().map_err(Bad)
}
