//! The server's HTML pages, written with `maud` templates (every value is
//! escaped as it is written): the frame every page shares, and one module
//! per page.
//!
//! A page fetches only from its own server: the style sheets and scripts
//! under `/static/`, and the JSON the live script polls.

pub(crate) mod health;
pub(crate) mod search;
pub(crate) mod session;
pub(crate) mod sessions;
pub(crate) mod usage;

use maud::{DOCTYPE, Markup, html};

/// Which page a frame is around (its link in the navigation is marked).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Nav {
    Sessions,
    Usage,
    Health,
    Search,
}

/// A whole document: navigation, `body`, the shared script; with
/// `timeline`, the view's style sheet and script too.
pub(crate) fn document(title: &str, nav: Nav, timeline: bool, body: Markup) -> String {
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
            }
            body {
                nav.top aria-label="pages" {
                    strong { "harnery" } " "
                    (link(Nav::Sessions, "/", "Sessions")) " "
                    (link(Nav::Usage, "/usage", "Usage")) " "
                    (link(Nav::Health, "/health", "Health")) " "
                    (link(Nav::Search, "/search", "Search"))
                    span #live role="status" aria-live="polite" {}
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
    let body = html! { h1 { (title) } p { (detail) } p { a href="/" { "All sessions" } } };
    document(title, Nav::Sessions, false, body)
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
