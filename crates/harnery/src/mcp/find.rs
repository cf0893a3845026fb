//! `search`: `harnery search` for an agent, its hits as short lines.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::budget::{Budget, Page, text_chars};
use super::{Answer, CallError, chain, epoch, instant, open};
use crate::contract::AdapterId;
use crate::home::Home;
use crate::report::session_list::project_matches;
use crate::search::{Hit, Kind, Query, SearchError, Sort};

/// The most hits one call may ask for (after `offset`).
pub const MAX_HITS: usize = 100;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchArgs {
    /// What to find: words (all must match), pre*, "a phrase", text with
    /// punctuation found anywhere (src/ledger), *inside.
    pub query: String,
    /// Only these kinds of text: prompt, message, reasoning, tool-input,
    /// tool-output, command.
    #[serde(default)]
    pub kind: Vec<String>,
    /// Only sessions of this agent: claude-code, copilot, codex,
    /// gemini-cli, qwen-code, opencode.
    pub agent: Option<String>,
    /// Only this tool's inputs and outputs (any case), e.g. Bash.
    pub tool: Option<String>,
    /// Only text of tool calls and commands that failed.
    #[serde(default)]
    pub failed: bool,
    /// Only events at or after this time (RFC 3339).
    pub since: Option<String>,
    /// Only events at or before this time (RFC 3339).
    pub until: Option<String>,
    /// Only this session (its id, a unique prefix, or agent/id).
    pub session: Option<String>,
    /// Only sessions of this project: its root path, or a trailing part
    /// of it such as the repository's name (as `sessions` takes it).
    pub project: Option<String>,
    /// relevance (the default) or time (newest first).
    pub sort: Option<String>,
    /// Skip this many hits first (to page on).
    #[serde(default)]
    pub offset: usize,
    /// At most this many hits (default 10, at most 100).
    pub limit: Option<usize>,
    /// Characters of each snippet (default 600, at most 4000).
    pub max_chars: Option<usize>,
    /// Which ledger epoch: live (the default), all, or a genesis id.
    pub epoch: Option<String>,
}

pub(super) fn search(home: &Home, b: &Budget, a: &SearchArgs) -> Result<Answer, CallError> {
    let limit = a.limit.unwrap_or(10).clamp(1, MAX_HITS);
    let mut q = query(a, a.offset + limit)?;
    let epochs = open(home, &q.epoch)?;
    let (hits, capped) = match &a.project {
        None => {
            let hits = crate::search::search_epochs(home, &epochs, &q).map_err(search_error)?;
            (hits, false)
        }
        Some(project) => of_project(home, &epochs, &mut q, project)?,
    };
    let chars = text_chars(a.max_chars);
    let asked = hits.len();
    let mut page = Page::new(format!("search {:?}:", b.clip(&a.query, 200)));
    for hit in hits.iter().skip(a.offset) {
        if !page.push(line(b, hit, chars), item(b, hit, chars)) {
            break;
        }
    }
    let shown = page.len();
    let next = a.offset + shown;
    let more = if page.full || asked == a.offset + limit {
        Some(format!(
            "More hits may follow: call search again with offset {next}."
        ))
    } else {
        None
    };
    let more = match capped {
        true => Some(format!(
            "The project filter looked at the best {PROJECT_SCAN} hits only: narrow the query, \
             or name a session of the project."
        )),
        false => more,
    };
    let mut answer = page.finish("hits", more, json!({"offset": a.offset}));
    if shown == 0 {
        answer.text = format!("search {:?}: no hits", b.clip(&a.query, 200));
        if a.offset > 0 {
            answer.text.push_str(&format!(" at offset {}", a.offset));
        }
    }
    Ok(answer)
}

/// The most hits a project's search looks through before it keeps only
/// the project's.
const PROJECT_SCAN: usize = 20_000;

/// The first `q.limit` hits of `project`'s sessions, in the query's order:
/// the search asks for more hits each round (the index knows sessions,
/// not projects) and keeps those whose session is of the project, until
/// it has enough, the hits end, or [`PROJECT_SCAN`] were looked at
/// (then `true`).
fn of_project(
    home: &Home,
    epochs: &crate::report::epochs::Epochs,
    q: &mut Query,
    project: &str,
) -> Result<(Vec<Hit>, bool), CallError> {
    let want = q.limit;
    let mut ask = (want * 4).max(64);
    loop {
        q.limit = ask;
        let hits = crate::search::search_epochs(home, epochs, q).map_err(search_error)?;
        let ended = hits.len() < ask;
        let kept: Vec<Hit> = hits
            .into_iter()
            .filter(|h| {
                h.project
                    .as_deref()
                    .is_some_and(|p| project_matches(p, project))
            })
            .take(want)
            .collect();
        if kept.len() >= want || ended {
            return Ok((kept, false));
        }
        if ask >= PROJECT_SCAN {
            return Ok((kept, true));
        }
        ask = (ask * 4).min(PROJECT_SCAN);
    }
}

fn query(a: &SearchArgs, limit: usize) -> Result<Query, CallError> {
    let bad = CallError::BadArguments;
    let mut kinds = Vec::new();
    for k in &a.kind {
        kinds.push(k.parse::<Kind>().map_err(|e| bad(format!("kind: {e}")))?);
    }
    let adapter = match &a.agent {
        Some(name) => Some(AdapterId::parse(name).ok_or_else(|| {
            bad(format!(
                "agent: {name:?} is not an agent ({})",
                AdapterId::choices()
            ))
        })?),
        None => None,
    };
    let sort = match &a.sort {
        Some(s) => s.parse::<Sort>().map_err(|e| bad(format!("sort: {e}")))?,
        None => Sort::Relevance,
    };
    Ok(Query {
        text: a.query.clone(),
        session: a.session.clone(),
        adapter,
        since_unix_ns: instant("since", a.since.as_deref())?,
        until_unix_ns: instant("until", a.until.as_deref())?,
        kinds,
        tool: a.tool.clone(),
        failed: a.failed,
        epoch: epoch(a.epoch.as_deref())?,
        limit,
        sort,
    })
}

/// A bad query or an unknown session is the caller's to correct; the
/// rest is a failure to read.
pub(super) fn search_error(e: SearchError) -> CallError {
    match &e {
        SearchError::Query(q) => CallError::BadArguments(format!("query: {q}")),
        SearchError::Source(_) => CallError::BadArguments(chain(&e)),
        _ => CallError::Failed(format!("search failed: {}", chain(&e))),
    }
}

/// Where a hit is, then its text: two lines.
fn line(b: &Budget, hit: &Hit, chars: usize) -> String {
    let mut head = format!(
        "- {}/{} @{} {} {}",
        hit.session.adapter, hit.session.session_id, hit.offset, hit.time, hit.kind
    );
    if let Some(tool) = &hit.tool {
        head.push_str(&format!(" {}", b.clip(tool, 80)));
    }
    if let Some(outcome) = &hit.outcome {
        head.push_str(&format!(" [{outcome}]"));
    }
    if hit.epoch != "live" && !hit.epoch.is_empty() {
        head.push_str(&format!(" (epoch {})", hit.epoch));
    }
    format!(
        "{head}\n  {}",
        b.clip(&hit.snippet, chars).replace('\n', " ")
    )
}

fn item(b: &Budget, hit: &Hit, chars: usize) -> serde_json::Value {
    json!({
        "agent": hit.session.adapter.as_str(),
        "session": hit.session.session_id,
        "offset": hit.offset,
        "time": hit.time,
        "kind": hit.kind,
        "event_type": hit.event_type,
        "tool": hit.tool.as_deref().map(|t| b.clip(t, 80)),
        "outcome": hit.outcome,
        "turn": hit.turn,
        "epoch": hit.epoch,
        "title": hit.title.as_deref().map(|t| b.clip(t, 120)),
        "project": hit.project.as_deref().map(|p| b.mask(p)),
        "snippet": b.clip(&hit.snippet, chars),
    })
}
