//! The server's HTML pages, written with `maud` templates (every value is
//! escaped as it is written): the frame every page shares, and one module
//! per page.
//!
//! A page fetches only from its own server: the style sheets and scripts
//! under `/static/`, and the JSON the live script polls.

pub(crate) mod conversation;
pub(crate) mod health;
pub(crate) mod home;
pub(crate) mod search;
pub(crate) mod session;
pub(crate) mod sessions;
pub(crate) mod usage;

use maud::{DOCTYPE, Markup, html};

use crate::clock::format_time;

/// Which page a frame is around (its link in the navigation is marked).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Nav {
    Home,
    Sessions,
    Usage,
    Health,
    Search,
}

/// A whole document: the header (navigation, the search box every page
/// has, the theme switch), `body`, the shared script; with `timeline`,
/// the view's style sheet and script too.
pub(crate) fn document(title: &str, nav: Nav, timeline: bool, body: Markup) -> String {
    document_with(title, nav, timeline, "", body)
}

/// [`document`] with the search box holding `query`.
pub(crate) fn document_with(
    title: &str,
    nav: Nav,
    timeline: bool,
    query: &str,
    body: Markup,
) -> String {
    let link = |to: Nav, href: &str, label: &str| {
        html! { a href=(href) aria-current=[(nav == to).then_some("page")] { (label) } }
    };
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) }
                // No icon to fetch: the browser would ask for /favicon.ico.
                link rel="icon" href="data:,";
                link rel="stylesheet" href="/static/page.css";
                link rel="stylesheet" href="/static/serve.css";
                // Before the first paint: the theme the reader chose.
                script src="/static/theme.js" {}
            }
            body {
                header.top {
                    nav aria-label="pages" {
                        a.brand href="/" { "harnery" }
                        (link(Nav::Home, "/", "Home"))
                        (link(Nav::Sessions, "/sessions", "Sessions"))
                        (link(Nav::Usage, "/usage", "Usage"))
                        (link(Nav::Health, "/health", "Health"))
                        (link(Nav::Search, "/search", "Search"))
                    }
                    form.find method="get" action="/search" role="search" {
                        input #find type="search" name="q" value=(query)
                            placeholder="Search prompts, messages, tools  ( / )"
                            aria-label="search the ledger" aria-keyshortcuts="/";
                    }
                    span #live role="status" aria-live="polite" {}
                    button #theme type="button" title="switch between light, dark and the system's theme" { "theme" }
                }
                main { (body) }
                @if timeline { script src="/static/view.js" {} }
                script src="/static/app.js" {}
            }
        }
    }
    .into_string()
}

/// A page saying what went wrong (the status is the caller's).
pub(crate) fn problem(title: &str, detail: &str) -> String {
    let body = html! { h1 { (title) } p { (detail) } p { a href="/sessions" { "All sessions" } } };
    document(title, Nav::Home, false, body)
}

/// The tables' figures are worded as the command line words them.
pub(crate) use crate::report::{timeline::count, usage_text::money};

/// One `<option>` of a filter, selected when it is the `chosen` value.
fn option(value: &str, label: &str, chosen: &str) -> Markup {
    html! { option value=(value) selected[value == chosen] { (label) } }
}

/// The agent filter every filter form has.
fn agent_select(chosen: &str) -> Markup {
    html! {
        label { "agent " select name="agent" {
            (option("", "any", chosen))
            @for id in crate::contract::AdapterId::ALL {
                (option(id.as_str(), id.as_str(), chosen))
            }
        } }
    }
}

/// The link to a session's page.
pub(crate) fn session_href(id: &str) -> String {
    format!("/sessions/{}", super::query::encode(id))
}

/// A time for people: how long ago, relative to `now_ns`, in a `<time>`
/// whose `datetime` and hover text are the exact instant.
pub(crate) fn when(unix_ns: i64, now_ns: i64) -> Markup {
    let exact = format_time(unix_ns);
    html! { time datetime=(exact) title=(exact) { (ago(unix_ns, now_ns)) } }
}

/// How long ago, as the command line says it (`3 min ago`, `yesterday`).
pub(crate) use crate::report::ago::ago;

/// A count for a stat card: `987`, `12.3k`, `4.56M`, `7.8G`.
pub(crate) fn short_count(n: u64) -> String {
    match n {
        n if n < 1_000 => n.to_string(),
        n if n < 1_000_000 => format!("{:.1}k", n as f64 / 1e3),
        n if n < 1_000_000_000 => format!("{:.2}M", n as f64 / 1e6),
        n => format!("{:.2}G", n as f64 / 1e9),
    }
}

/// A cost for people: `$0.42`, `$12.30`; `-` when none.
pub(crate) fn dollars(cost: Option<f64>) -> String {
    match cost {
        None => "-".into(),
        Some(c) if c > 0.0 && c < 0.01 => "<$0.01".into(),
        Some(c) => format!("${c:.2}"),
    }
}

/// The cost a row shows: the agent's own where it reported one, else the
/// bundled price table's (marked `≈`); the two are never added.
pub(crate) fn cost_cell(reported: Option<f64>, priced: Option<f64>) -> Markup {
    match (reported, priced) {
        (Some(r), _) => html! { span title="the agent's own figure" { (dollars(Some(r))) } },
        (None, Some(p)) => html! {
            span.priced title="priced with the bundled price table (the agent reported none)" {
                "≈" (dollars(Some(p)))
            }
        },
        (None, None) => html! { "-" },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_read_as_how_long_ago_with_the_instant_on_hover() {
        let s = 1_000_000_000;
        let now = 100 * 86_400 * s;
        let html = when(now - 60 * s, now).into_string();
        let exact = "1970-04-10T23:59:00.000Z";
        assert_eq!(
            html,
            format!("<time datetime=\"{exact}\" title=\"{exact}\">1 min ago</time>")
        );
        assert_eq!(short_count(12_345), "12.3k");
        assert_eq!(dollars(Some(0.004)), "<$0.01");
        assert_eq!(dollars(Some(1.5)), "$1.50");
    }
}
