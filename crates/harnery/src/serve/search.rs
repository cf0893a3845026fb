//! `/search` and `/api/search`: the filters of `harnery search` read from
//! the request's query (the page's form and the API take the same names),
//! and the search over the live epoch. A query or filter that cannot run
//! is the request's fault (400, with the reason); a search that fails to
//! read is the server's (500). Like `harnery search`, a search answers
//! from the index beside the ledger as it stands (brought up to date first
//! when that costs no wait, each hit saying how far behind it was), never
//! failing because a `finalize` is writing; the ledger is only read.

use crate::contract::AdapterId;
use crate::search::{DEFAULT_LIMIT, Hit, Kind, Query, SearchError, Sort, chain};

use super::data::Source;
use super::query::{Target, encode};

/// The filters as the page's form shows them again.
#[derive(Debug, Default, Clone)]
pub(crate) struct Form {
    pub q: String,
    pub kind: String,
    pub agent: String,
    pub tool: String,
    pub failed: bool,
    pub since: String,
    pub until: String,
    pub sort: String,
}

impl Form {
    fn of(t: &Target) -> Form {
        let text = |name: &str| t.param(name).unwrap_or("").to_string();
        Form {
            q: text("q"),
            kind: all(t, "kind").join(","),
            agent: t
                .param("agent")
                .or(t.param("adapter"))
                .unwrap_or("")
                .to_string(),
            tool: text("tool"),
            failed: flag(t.param("failed")),
            since: text("since"),
            until: text("until"),
            sort: text("sort"),
        }
    }

    /// The query string of these filters (the page's link to its JSON).
    pub(crate) fn query(&self) -> String {
        let mut q = format!("q={}", encode(&self.q));
        for (k, v) in [
            ("kind", &self.kind),
            ("agent", &self.agent),
            ("tool", &self.tool),
            ("since", &self.since),
            ("until", &self.until),
            ("sort", &self.sort),
        ] {
            if !v.is_empty() {
                q.push_str(&format!("&{k}={}", encode(v)));
            }
        }
        if self.failed {
            q.push_str("&failed=1");
        }
        q
    }
}

/// What a search request came to.
pub(crate) enum Outcome {
    /// No query text yet: the page shows the empty form.
    Blank(Form),
    Hits(Form, Vec<Hit>),
    /// The request cannot run as asked (400): why.
    Bad(Form, String),
    /// The read failed (500): why.
    Failed(Form, String),
}

/// Run the search `t` asks for over `source`'s live epoch.
pub(crate) fn run(source: &Source, t: &Target) -> Outcome {
    let form = Form::of(t);
    if form.q.trim().is_empty() {
        return Outcome::Blank(form);
    }
    let q = match query(t, &form) {
        Ok(q) => q,
        Err(why) => return Outcome::Bad(form, why),
    };
    match crate::search::search(&source.home, &q) {
        Ok(hits) => Outcome::Hits(form, hits),
        Err(e) if fault_of_request(&e) => Outcome::Bad(form, chain(&e)),
        Err(e) => Outcome::Failed(form, chain(&e)),
    }
}

/// The [`Query`] of the request's parameters: `q`, `session`, `agent`
/// (or `adapter`), `since`, `until`, `kind` (repeated or a comma list),
/// `tool`, `failed`, `limit`, `sort`. The live epoch only.
fn query(t: &Target, form: &Form) -> Result<Query, String> {
    let time = |name: &str| match t.param(name) {
        None => Ok(None),
        Some(v) => crate::clock::parse_instant(v)
            .map(Some)
            .ok_or_else(|| format!("{name}={v:?} is not an RFC 3339 time")),
    };
    let adapter = match form.agent.as_str() {
        "" => None,
        a => Some(
            AdapterId::parse(a)
                .ok_or_else(|| format!("agent={a:?} is not {}", AdapterId::choices()))?,
        ),
    };
    let kinds = all(t, "kind")
        .iter()
        .map(|k| k.parse::<Kind>().map_err(|e| format!("kind: {e}")))
        .collect::<Result<Vec<_>, _>>()?;
    let limit = match t.param("limit") {
        None => DEFAULT_LIMIT,
        Some(v) => v
            .parse()
            .map_err(|_| format!("limit={v:?} is not a number"))?,
    };
    let sort = match t.param("sort") {
        None => Sort::Relevance,
        Some(s) => s.parse::<Sort>().map_err(|e| format!("sort: {e}"))?,
    };
    Ok(Query {
        session: t.param("session").map(str::to_string),
        adapter,
        since_unix_ns: time("since")?,
        until_unix_ns: time("until")?,
        kinds,
        tool: t.param("tool").map(str::to_string),
        failed: form.failed,
        limit,
        sort,
        ..Query::new(form.q.clone())
    })
}

/// Every non-empty value of `name`, comma lists split.
fn all(t: &Target, name: &str) -> Vec<String> {
    t.params
        .iter()
        .filter(|(k, _)| k == name)
        .flat_map(|(_, v)| v.split(','))
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(str::to_string)
        .collect()
}

/// A check box's value: present and not `0`/`false`/`off`.
fn flag(v: Option<&str>) -> bool {
    v.is_some_and(|v| !matches!(v, "0" | "false" | "off"))
}

/// Whether the search failed for what the request asked: its query text,
/// or a session it names that is not there or not one.
fn fault_of_request(e: &SearchError) -> bool {
    use crate::report::source::SourceError;
    matches!(
        e,
        SearchError::Query(_)
            | SearchError::Source(SourceError::NoSuchSession(_) | SourceError::AcrossEpochs { .. })
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query_of(url: &str) -> Result<Query, String> {
        let t = Target::parse(url);
        query(&t, &Form::of(&t))
    }

    #[test]
    fn parameters_become_the_query_of_the_command() {
        let q = query_of(
            "/search?q=exit+3&kind=tool-input,command&kind=prompt&agent=copilot\
             &tool=Bash&failed=on&since=2026-01-01T00:00:00Z&limit=5&sort=time",
        )
        .unwrap();
        assert_eq!(q.text, "exit 3");
        assert_eq!(q.kinds, [Kind::ToolInput, Kind::Command, Kind::Prompt]);
        assert_eq!(q.adapter, Some(AdapterId::Copilot));
        assert_eq!(q.tool.as_deref(), Some("Bash"));
        assert!(q.failed && q.since_unix_ns.is_some() && q.until_unix_ns.is_none());
        assert_eq!((q.limit, q.sort), (5, Sort::Time));
        let q = query_of("/search?q=x&failed=0").unwrap();
        assert!(!q.failed && q.kinds.is_empty() && q.limit == DEFAULT_LIMIT);
        for (bad, says) in [
            ("/search?q=x&kind=poem", "\"poem\" is not a kind"),
            ("/search?q=x&since=yesterday", "since=\"yesterday\""),
            ("/search?q=x&agent=vim", "agent=\"vim\""),
            ("/search?q=x&limit=many", "limit=\"many\""),
            ("/search?q=x&sort=loud", "\"loud\" is not an order"),
        ] {
            let why = query_of(bad).unwrap_err();
            assert!(why.contains(says), "{bad}: {why}");
        }
    }

    #[test]
    fn the_form_links_back_to_itself() {
        let t = Target::parse("/search?q=a%26b&kind=prompt&failed=1&tool=");
        let form = Form::of(&t);
        assert_eq!(form.query(), "q=a%26b&kind=prompt&failed=1");
        let again = Form::of(&Target::parse(&format!("/search?{}", form.query())));
        assert_eq!((again.q, again.failed), ("a&b".to_string(), true));
    }
}
