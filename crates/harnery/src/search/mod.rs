//! Search: find what an agent said or did (prompts, messages, reasoning,
//! tool inputs and outputs, `harnery exec` commands) across every session
//! of every epoch, through a full-text index that is never the truth.
//!
//! The index ([`store`]) is its own SQLite file, built from ledger rows
//! read through [`LedgerReader`] ([`update`]), never part of the hash
//! chain and never read by `verify`. `harnery finalize` brings it up to
//! date after its ledger transactions commit ([`update_live_within`],
//! within [`FINALIZE_BUDGET`] rows a run); a search brings it up to date
//! first only when that costs no wait, and otherwise
//! answers from it as it stands, saying how many ledger rows it is behind
//! ([`reading`]). A missing, damaged or foreign index is made again from
//! the ledger, silently (in memory where the home cannot hold it). Every
//! hit is checked against its ledger row before it is shown ([`check`]).
//! Nothing here writes to a ledger.
//!
//! - [`query`]: the query syntax and its translation into FTS5 (the
//!   user's text is never passed to FTS5 as syntax).
//! - [`extract`]: which text of which event is searchable, as what kind.
//! - [`find`]: the SQL of a search; [`snippet`]: the marked window.

mod check;
pub(crate) mod extract;
mod facts;
mod find;
mod keys;
pub(crate) mod query;
mod rank;
mod reading;
mod said;
pub(crate) mod snippet;
mod store;
mod update;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use extract::Kind;
pub(crate) use query::QueryError;
pub use store::{FORMAT, index_path};
pub use update::{AFTER_BATCH, Sizes};

use crate::clock::format_time;
use crate::contract::{AdapterId, Event, SessionRef};
use crate::epoch::EpochSelector;
use crate::home::Home;
use crate::ledger::{LedgerError, LedgerReader};
use crate::report::epochs::Epochs;
use crate::report::source::SourceError;

/// How hits are ordered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Sort {
    /// BM25 rank of the words, then newest first.
    #[default]
    Relevance,
    /// Newest first.
    Time,
}

impl std::str::FromStr for Sort {
    type Err = String;

    fn from_str(s: &str) -> Result<Sort, String> {
        match s {
            "relevance" => Ok(Sort::Relevance),
            "time" => Ok(Sort::Time),
            _ => Err(format!("{s:?} is not an order; relevance or time")),
        }
    }
}

/// The default number of hits.
pub const DEFAULT_LIMIT: usize = 20;

/// A search: the query text (see [`query`]) and what narrows it.
#[derive(Debug, Clone)]
pub struct Query {
    pub text: String,
    /// A session id, a unique prefix, or `adapter/id`.
    pub session: Option<String>,
    pub adapter: Option<AdapterId>,
    pub since_unix_ns: Option<i64>,
    pub until_unix_ns: Option<i64>,
    /// Only these kinds (all when empty).
    pub kinds: Vec<Kind>,
    /// Only this tool (any case).
    pub tool: Option<String>,
    /// Only text of spans whose outcome was a failure.
    pub failed: bool,
    pub epoch: EpochSelector,
    pub limit: usize,
    pub sort: Sort,
}

impl Query {
    /// `text` over the live epoch, every kind, the default limit and order.
    pub(crate) fn new(text: impl Into<String>) -> Query {
        Query {
            text: text.into(),
            session: None,
            adapter: None,
            since_unix_ns: None,
            until_unix_ns: None,
            kinds: Vec::new(),
            tool: None,
            failed: false,
            epoch: EpochSelector::Live,
            limit: DEFAULT_LIMIT,
            sort: Sort::Relevance,
        }
    }
}

/// One hit: where the event is, what it is, and its text around the match
/// (`harnery search --json` prints these).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hit {
    /// `live`, or the genesis id of an archived epoch.
    pub epoch: String,
    pub session: SessionRef,
    /// The session id's first characters, as the text output shows it.
    pub session_prefix: String,
    /// RFC 3339, UTC, milliseconds.
    pub time: String,
    pub time_unix_ns: i64,
    pub turn: Option<String>,
    pub kind: Kind,
    pub event_type: String,
    pub tool: Option<String>,
    /// `open`, `closed_native` or `recovered`, for a span's text.
    pub span_state: Option<String>,
    pub outcome: Option<String>,
    /// The event's offset in its session (`harnery show S --at OFFSET`).
    pub offset: u64,
    /// The event's row in its epoch's chain.
    pub seq: i64,
    pub event_id: String,
    /// One line of the event's text around the first match.
    pub snippet: String,
    /// Byte ranges `[start, end)` of the matches in `snippet`.
    pub matches: Vec<[usize; 2]>,
    /// BM25 of the query's words (lower is better; 0 for substrings alone).
    pub score: f64,
    /// The session's title and project, as its row keeps them (null when
    /// unknown; see `harnery sessions`).
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default)]
    pub project: Option<String>,
    /// Ledger rows of the epochs searched that the index did not hold yet
    /// when the search ran (0: it was up to date); the same on every hit
    /// of one search.
    #[serde(default)]
    pub index_behind: u64,
}

/// What a search found, and what it could not show.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Answer {
    pub hits: Vec<Hit>,
    /// Ledger rows of the epochs searched that the index did not hold yet.
    pub behind: u64,
    /// Hits left out because their row in the ledger does not hold the
    /// text the index matched (the index was altered or damaged).
    pub dropped: u64,
}

/// Characters of the session id a hit shows.
const PREFIX_CHARS: usize = 12;

#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    #[error("bad query")]
    Query(#[from] QueryError),
    #[error("{path}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("search index")]
    Sqlite(#[from] rusqlite::Error),
    #[error(transparent)]
    Ledger(#[from] LedgerError),
    #[error(transparent)]
    Source(#[from] SourceError),
    #[error("the search index does not match epoch {0}; it is made again")]
    Stale(String),
}

impl SearchError {
    fn io(path: &Path, source: std::io::Error) -> SearchError {
        SearchError::Io {
            path: path.to_path_buf(),
            source,
        }
    }

    /// Whether the index must be made again from the ledger.
    fn needs_rebuild(&self) -> bool {
        match self {
            SearchError::Stale(_) => true,
            SearchError::Sqlite(e) => store::is_damage(e),
            _ => false,
        }
    }
}

/// Search the epochs `q.epoch` selects (see [`search_epochs`]).
pub(crate) fn search(home: &Home, q: &Query) -> Result<Vec<Hit>, SearchError> {
    let epochs = Epochs::open(home, &q.epoch)?;
    search_epochs(home, &epochs, q)
}

/// Search `epochs` (opened by the caller, who reports the unreadable
/// ones): [`answer`]'s hits.
pub fn search_epochs(home: &Home, epochs: &Epochs, q: &Query) -> Result<Vec<Hit>, SearchError> {
    Ok(answer(home, epochs, q)?.hits)
}

/// Search `epochs` from the index as it stands (brought up to date first
/// where that costs no wait), each hit checked against its ledger row.
pub fn answer(home: &Home, epochs: &Epochs, q: &Query) -> Result<Answer, SearchError> {
    let terms = query::parse(&q.text)?;
    let session = match &q.session {
        Some(name) => Some(epochs.session("search", name)?.session),
        None => None,
    };
    let ledgers: Vec<&LedgerReader> = epochs.open.iter().map(|e| &e.ledger).collect();
    let mut conn = reading::ready(home, &ledgers)?;
    let asked = Asked {
        epochs,
        terms: &terms,
        session: session.as_ref(),
        q,
    };
    let (mut hits, dropped) = match asked.run(&conn) {
        Err(SearchError::Sqlite(e)) if store::is_damage(&e) => {
            drop(conn);
            conn = reading::rebuilt(home, &ledgers)?;
            asked.run(&conn)?
        }
        found => found?,
    };
    let behind = reading::behind(&conn, &ledgers)?;
    for hit in &mut hits {
        hit.index_behind = behind;
    }
    Ok(Answer {
        hits,
        behind,
        dropped,
    })
}

/// `e` and its causes, on one line.
pub(crate) fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        text.push_str(&format!(": {c}"));
        cause = c.source();
    }
    text
}

/// A search, parsed, over its epochs.
struct Asked<'a> {
    epochs: &'a Epochs,
    terms: &'a [query::Term],
    session: Option<&'a SessionRef>,
    q: &'a Query,
}

impl Asked<'_> {
    /// The hits, and how many were left out by [`check::confirmed`].
    fn run(&self, conn: &rusqlite::Connection) -> Result<(Vec<Hit>, u64), SearchError> {
        let keys = find::epoch_keys(conn)?;
        // Epoch key to label, for the epochs searched that the index holds.
        let labels: BTreeMap<i64, &str> = self
            .epochs
            .open
            .iter()
            .filter_map(|e| Some((*keys.get(&e.genesis_id)?, e.label.as_str())))
            .collect();
        let selected: Vec<i64> = labels.keys().copied().collect();
        let q = self.q;
        let filters = find::Filters {
            epochs: &selected,
            adapter: q.adapter.map(AdapterId::as_str),
            session: self.session,
            since_unix_ns: q.since_unix_ns,
            until_unix_ns: q.until_unix_ns,
            kinds: &q.kinds,
            tool: q.tool.as_deref(),
            failed: q.failed,
            limit: q.limit,
            sort: q.sort,
        };
        let translated = query::translate(self.terms);
        let substrings = query::substrings(self.terms);
        let found = find::run(conn, &translated, &substrings, &filters)?;
        let needles = query::needles(self.terms);
        let mut out = Vec::with_capacity(found.len());
        let mut dropped = 0;
        for mut f in found {
            let indexed = match f.text.take() {
                Some(text) => text,
                None => find::text_of(conn, f.id)?,
            };
            let epoch = labels.get(&f.epoch()).copied().unwrap_or("");
            let ledger = self.epochs.open.iter().find(|e| e.label == epoch);
            let confirmed = match ledger {
                Some(e) => check::confirmed(&e.ledger, &f, &indexed)?,
                None => None,
            };
            let Some((event, text)) = confirmed else {
                dropped += 1;
                continue;
            };
            let snip = snippet::snippet(&text, &needles);
            out.push(hit(f, &event, epoch, snip));
        }
        self.about(&mut out)?;
        Ok((out, dropped))
    }
}

impl Asked<'_> {
    /// Each hit's session title and project, from its session's row in
    /// the epoch it was found in, else in the earliest epoch that knows
    /// them (one look-up per session).
    fn about(&self, hits: &mut [Hit]) -> Result<(), SearchError> {
        type About = (Option<String>, Option<String>);
        let mut known: BTreeMap<(String, SessionRef), About> = BTreeMap::new();
        for hit in hits {
            let key = (hit.epoch.clone(), hit.session.clone());
            if !known.contains_key(&key) {
                let own = self.epochs.open.iter().filter(|e| e.label == hit.epoch);
                let rest = self.epochs.open.iter().filter(|e| e.label != hit.epoch);
                let mut found = (None, None);
                for e in own.chain(rest) {
                    let (title, project) = e.ledger.sessions().about(&hit.session)?;
                    found.0 = found.0.or(title);
                    found.1 = found.1.or(project);
                    if found.0.is_some() && found.1.is_some() {
                        break;
                    }
                }
                known.insert(key.clone(), found);
            }
            (hit.title, hit.project) = known[&key].clone();
        }
        Ok(())
    }
}

/// The hit of `f`, whose ledger row holds `event`.
fn hit(f: find::Found, event: &Event, epoch: &str, snip: snippet::Snippet) -> Hit {
    let prefix: String = f.session.session_id.chars().take(PREFIX_CHARS).collect();
    let seq = f.seq();
    Hit {
        epoch: epoch.to_string(),
        session_prefix: prefix,
        time: format_time(f.time_unix_ns),
        time_unix_ns: f.time_unix_ns,
        turn: event.turn.turn_id.clone(),
        kind: f.kind,
        event_type: event.event_type().as_str().to_string(),
        tool: f.tool,
        span_state: f.span_state,
        outcome: f.outcome,
        offset: event.offset,
        seq,
        event_id: event.id.as_str().to_string(),
        snippet: snip.text,
        matches: snip.matches,
        score: f.score,
        session: f.session,
        title: None,
        project: None,
        index_behind: 0,
    }
}

/// Rows `finalize` indexes at most in one run: a cron run's few new rows
/// are indexed at once, while a backlog (a first run over a large ledger,
/// an index made again) costs each run a few seconds at most and is
/// caught up by the runs after it, or by the next search, which reads on
/// to the end.
pub(crate) const FINALIZE_BUDGET: u64 = 20_000;

/// Bring the index up to date with the live epoch, reading `budget` ledger
/// rows at most; how many were read. The rows past the budget are indexed
/// by the next run or search. No live ledger yet is nothing to do.
pub fn update_live_within(home: &Home, budget: u64) -> Result<u64, SearchError> {
    update_live_sized(home, budget, Sizes::DEFAULT)
}

/// [`update_live_within`], grouping the rows as `sizes` says (tests give
/// small sizes to see every boundary).
pub fn update_live_sized(home: &Home, budget: u64, sizes: Sizes) -> Result<u64, SearchError> {
    let budget = Some(budget);
    let Some(live) = crate::report::source::live_or_none(home)? else {
        return Ok(0);
    };
    let mut conn = store::open(home)?;
    let read = match update::catch_up(&mut conn, &live, budget, sizes) {
        Err(e) if e.needs_rebuild() => {
            drop(conn);
            let mut conn = store::recreate(home)?;
            update::catch_up(&mut conn, &live, budget, sizes)
        }
        read => read,
    };
    // A test keeps the ledger open a while (`HARNERY_SEARCH_HOLD_MS`, in
    // failpoint builds), so that this read-only connection closes last.
    if let Some(ms) = crate::failpoint::tuning(crate::failpoint::SEARCH_HOLD_MS_ENV) {
        std::thread::sleep(std::time::Duration::from_millis(ms));
    }
    read
}

/// Make the index again from the epochs `selector` names; how many ledger
/// rows were read. Epochs not selected are indexed again when a search
/// next selects them.
pub fn reindex(home: &Home, epochs: &Epochs) -> Result<u64, SearchError> {
    let ledgers: Vec<&LedgerReader> = epochs.open.iter().map(|e| &e.ledger).collect();
    let mut conn = store::recreate(home)?;
    reading::catch_up_all(&mut conn, &ledgers)
}
