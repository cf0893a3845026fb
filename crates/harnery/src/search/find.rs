//! Running a translated query against the index. One FTS5 table drives
//! (the word table when the query has words, else the trigram table), its
//! matches are read in the order the hits are wanted, and each is kept or
//! passed over here (its `docs` row's filters, then its text for a
//! substring), until no match still to come can be among the first
//! `limit`:
//!
//! - by relevance, FTS5 scores every match and SQLite keeps the best few
//!   (the filters tested on each match's `docs` row first, when there are
//!   any), read again with more only when a tie or a missing hit needs it;
//!   ties are then ordered newest first;
//! - newest first (`--sort time`, or a query of substrings alone), each
//!   epoch's matches come in descending chain order (descending rowid),
//!   and reading stops when a doc's `time_bound` (no doc before it in its
//!   epoch is newer) is older than the `limit`th hit so far.
//!
//! So a query that matches much of the index reads only its first hits'
//! rows, never every match's.

use std::collections::HashMap;

use rusqlite::types::Type;
use rusqlite::{Connection, OptionalExtension, ToSql, params};

use super::Sort;
use super::extract::Kind;
use super::facts::{Facts, TagFilter};
use super::keys::{kind_code, kind_of_code};
use super::query::{Needle, Translated};
use super::rank::Ranker;
use super::snippet;
use super::store::{doc_range, epoch_of};
use crate::contract::{AdapterId, SessionRef};

/// What a query keeps besides its terms.
pub(crate) struct Filters<'a> {
    /// The epochs searched, by their key in the index.
    pub epochs: &'a [i64],
    pub adapter: Option<&'a str>,
    pub session: Option<&'a SessionRef>,
    pub since_unix_ns: Option<i64>,
    pub until_unix_ns: Option<i64>,
    pub kinds: &'a [Kind],
    pub tool: Option<&'a str>,
    pub failed: bool,
    pub limit: usize,
    pub sort: Sort,
}

/// One matching doc: what the index keeps of it (what the event itself
/// holds, its id, type, offset and turn, is read from its ledger row
/// when it is shown: see [`super::check`]).
#[derive(Debug, Clone)]
pub(crate) struct Found {
    pub id: i64,
    pub session: SessionRef,
    pub time_unix_ns: i64,
    pub kind: Kind,
    pub tool: Option<String>,
    pub span_state: Option<String>,
    pub outcome: Option<String>,
    /// BM25 of the query's words (lower is better; 0 with none).
    pub score: f64,
    /// The text, when it was read to confirm a substring.
    pub text: Option<String>,
}

impl Found {
    /// The epoch's key in the index.
    pub(crate) fn epoch(&self) -> i64 {
        epoch_of(self.id)
    }

    /// The row's `seq` in its epoch's chain.
    pub(crate) fn seq(&self) -> i64 {
        self.id - doc_range(self.epoch()).0
    }

    /// Newest first: later time, then later row.
    fn newer_key(&self) -> (i64, i64) {
        (self.time_unix_ns, self.seq())
    }
}

/// A doc's row and the bound of its epoch's times before it.
struct Row {
    found: Found,
    time_bound: i64,
}

/// The docs that match, best first.
pub(crate) fn run(
    conn: &Connection,
    t: &Translated,
    substrings: &[Needle],
    f: &Filters,
) -> Result<Vec<Found>, rusqlite::Error> {
    let ranges = ranges(conn, f)?;
    if ranges.is_empty() {
        return Ok(Vec::new());
    }
    let reader = Reader {
        conn,
        substrings,
        f,
        ranges,
    };
    match (&t.words, f.sort) {
        (Some(words), Sort::Relevance) => reader.by_rank(words),
        (Some(words), Sort::Time) => reader.newest("words", words),
        (None, _) => match &t.grams {
            Some(grams) => reader.newest("grams", grams),
            None => Ok(Vec::new()),
        },
    }
}

struct Reader<'a> {
    conn: &'a Connection,
    /// Substrings each hit's text must hold (the trigram table finds the
    /// docs holding all their trigrams, anywhere).
    substrings: &'a [Needle],
    f: &'a Filters<'a>,
    /// The doc ids searched: per epoch, its range, or its session's.
    ranges: Vec<(i64, i64)>,
}

impl Reader<'_> {
    /// Best BM25 first, ties newest first: the best `k` matches by BM25
    /// (SQLite keeps only those while `harnery_rank` scores every match
    /// from the facts in memory, NULL for a match its tag rules out), the
    /// filters the tags cannot test tested in SQL on each match's `docs`
    /// row when there are any; read again with a larger `k` while too few
    /// were kept. A tie at the last hit is settled by reading the matches
    /// of that score newest first (see [`Self::newest_of_score`]).
    fn by_rank(&self, words: &str) -> Result<Vec<Found>, rusqlite::Error> {
        let f = self.f;
        let binds = Binds::new(f, words, self.rowid_span());
        let ranker = Ranker::register(self.conn)?;
        ranker.use_facts(Facts::load(
            self.conn,
            &self.ranges,
            !binds.tags.is_empty(),
        )?);
        let mut stmt = self
            .conn
            .prepare(&binds.sql("ORDER BY s NULLS LAST, w.rowid DESC LIMIT :k", ""))?;
        let mut k = f.limit.saturating_add(1).max(2);
        loop {
            let mut kept: Vec<Found> = Vec::new();
            let mut read = 0;
            let mut last = f64::NEG_INFINITY;
            let limit = k.min(i64::MAX as usize) as i64;
            let mut rows = stmt.query(binds.params(&[(":k", &limit)]).as_slice())?;
            let mut ruled_out = false;
            while let Some(r) = rows.next()? {
                let (id, score): (i64, Option<f64>) = (r.get(0)?, r.get(1)?);
                // NULLs come last: every match its tag admits was read.
                let Some(score) = score else {
                    ruled_out = true;
                    break;
                };
                read += 1;
                last = score;
                if let Some(found) = self.keep(id, score)? {
                    kept.push(found);
                }
            }
            let exhausted = ruled_out || read < k;
            let settled = f.limit == 0 || (kept.len() >= f.limit && kept[f.limit - 1].score < last);
            if exhausted || settled {
                return Ok(ranked(kept, f.limit));
            }
            if kept.len() >= f.limit {
                // The last hit ties with the last match read: every better
                // match was read, and the tie's newest fill the rest.
                let mut better: Vec<Found> = kept.into_iter().filter(|h| h.score < last).collect();
                let need = f.limit - better.len();
                better.extend(self.newest_of_score(&binds, last, need)?);
                return Ok(ranked(better, f.limit));
            }
            k = k.saturating_mul(8);
        }
    }

    /// The newest `need` matches kept whose score is `score`, each epoch
    /// read from its last doc back until no older one can be among them.
    fn newest_of_score(
        &self,
        binds: &Binds,
        score: f64,
        need: usize,
    ) -> Result<Vec<Found>, rusqlite::Error> {
        let mut stmt = self
            .conn
            .prepare(&binds.sql("ORDER BY w.rowid DESC", "AND s = :score"))?;
        let mut kept: Vec<Found> = Vec::new();
        for &(lo, hi) in &self.ranges {
            let extra: [(&str, &dyn ToSql); 3] = [(":score", &score), (":lo", &lo), (":hi", &hi)];
            let mut rows = stmt.query(binds.params(&extra).as_slice())?;
            while let Some(r) = rows.next()? {
                let id: i64 = r.get(0)?;
                if !self.f.epochs.contains(&epoch_of(id)) {
                    continue;
                }
                let Some(mut row) = doc(self.conn, id, score)? else {
                    continue;
                };
                if kept.len() >= need
                    && kept.last().is_some_and(|k| row.time_bound < k.time_unix_ns)
                {
                    break;
                }
                if self.accept(&mut row.found)? {
                    insert_newest(&mut kept, row.found, need);
                }
            }
        }
        Ok(kept)
    }

    /// Newest first, each epoch read from its last doc back.
    fn newest(&self, table: &str, expr: &str) -> Result<Vec<Found>, rusqlite::Error> {
        let score = match table {
            "words" => "bm25(words)",
            _ => "0.0",
        };
        let mut stmt = self.conn.prepare(&format!(
            "SELECT rowid, {score} FROM {table} WHERE {table} MATCH ?1 \
             AND rowid BETWEEN ?2 AND ?3 ORDER BY rowid DESC"
        ))?;
        let mut kept: Vec<Found> = Vec::new();
        for &(lo, hi) in &self.ranges {
            let mut rows = stmt.query(params![expr, lo, hi])?;
            while let Some(r) = rows.next()? {
                let Some(mut row) = doc(self.conn, r.get(0)?, r.get(1)?)? else {
                    continue;
                };
                if kept.len() >= self.f.limit
                    && kept.last().is_some_and(|k| row.time_bound < k.time_unix_ns)
                {
                    break;
                }
                if self.accept(&mut row.found)? {
                    insert_newest(&mut kept, row.found, self.f.limit);
                }
            }
        }
        Ok(kept)
    }

    /// The rowids the selected epochs can hold.
    fn rowid_span(&self) -> (i64, i64) {
        let lo = self.ranges.iter().map(|r| r.0).min();
        let hi = self.ranges.iter().map(|r| r.1).max();
        (lo.unwrap_or(0), hi.unwrap_or(-1))
    }

    /// The doc `id` if it is in a selected epoch and [`Self::accept`]
    /// keeps it.
    fn keep(&self, id: i64, score: f64) -> Result<Option<Found>, rusqlite::Error> {
        if !self.f.epochs.contains(&epoch_of(id)) {
            return Ok(None);
        }
        let Some(mut row) = doc(self.conn, id, score)? else {
            return Ok(None);
        };
        Ok(self.accept(&mut row.found)?.then_some(row.found))
    }

    /// Whether the filters keep a doc and its text holds every substring
    /// (the text, once read, stays with it).
    fn accept(&self, found: &mut Found) -> Result<bool, rusqlite::Error> {
        if !passes(found, self.f) {
            return Ok(false);
        }
        if self.substrings.is_empty() {
            return Ok(true);
        }
        let text = text_of(self.conn, found.id)?;
        let holds = self.substrings.iter().all(|n| snippet::occurs(&text, n));
        found.text = Some(text);
        Ok(holds)
    }
}

/// The doc ids to read, per epoch searched: all of its range, or with a
/// session filter the span from that session's first doc to its last
/// (an epoch without it is left out).
fn ranges(conn: &Connection, f: &Filters) -> Result<Vec<(i64, i64)>, rusqlite::Error> {
    let mut out = Vec::new();
    for &epoch in f.epochs {
        let Some(session) = f.session else {
            out.push(doc_range(epoch));
            continue;
        };
        let span = conn
            .prepare_cached(
                "SELECT first_id, last_id FROM ranges JOIN sessions s ON s.id = ranges.session \
                 WHERE epoch = ?1 AND s.adapter = ?2 AND s.session_id = ?3",
            )?
            .query_row(
                params![epoch, session.adapter.as_str(), session.session_id],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?;
        out.extend(span);
    }
    Ok(out)
}

/// A ranked query's SQL and its bound values.
struct Binds<'a> {
    words: &'a str,
    lo: i64,
    hi: i64,
    tags: TagFilter,
    kinds_tag: i64,
    tool_tag: i64,
    failed: bool,
    /// Whether a filter the tags cannot test is set: the `docs` row of
    /// each match is joined and tested in SQL.
    rows: bool,
    adapter: Option<&'a str>,
    session: Option<&'a str>,
    since: Option<i64>,
    until: Option<i64>,
    kinds: Option<String>,
    tool: Option<&'a str>,
}

impl<'a> Binds<'a> {
    fn new(f: &'a Filters, words: &'a str, (lo, hi): (i64, i64)) -> Binds<'a> {
        let tags = TagFilter::new(f.kinds, f.tool, f.failed);
        Binds {
            words,
            lo,
            hi,
            tags,
            kinds_tag: i64::from(tags.kinds),
            tool_tag: i64::from(tags.tool),
            failed: f.failed,
            rows: f.adapter.is_some()
                || f.session.is_some()
                || f.since_unix_ns.is_some()
                || f.until_unix_ns.is_some(),
            adapter: f.adapter.or(f.session.map(|s| s.adapter.as_str())),
            session: f.session.map(|s| s.session_id.as_str()),
            since: f.since_unix_ns,
            until: f.until_unix_ns,
            kinds: (!f.kinds.is_empty()).then(|| {
                let codes: Vec<i64> = f.kinds.iter().map(|k| kind_code(*k)).collect();
                serde_json::to_string(&codes).expect("numbers are JSON")
            }),
            tool: f.tool,
        }
    }

    /// `SELECT rowid, score` of the matches in `[:lo, :hi]`, with `and`
    /// added to the conditions and `tail` after them.
    fn sql(&self, tail: &str, and: &str) -> String {
        let rank = "harnery_rank(words, :kinds_tag, :tool_tag, :failed)";
        let (join, filters) = match self.rows {
            true => (
                "CROSS JOIN docs d ON d.id = w.rowid",
                format!("AND {FILTERS}"),
            ),
            false => ("", String::new()),
        };
        format!(
            "SELECT w.rowid, {rank} AS s FROM words w {join} WHERE words MATCH :words \
             AND w.rowid BETWEEN :lo AND :hi {filters} {and} {tail}"
        )
    }

    /// The values [`Self::sql`] names, and `extra` (which wins).
    fn params<'b>(&'b self, extra: &[(&'b str, &'b dyn ToSql)]) -> Vec<(&'b str, &'b dyn ToSql)> {
        let mut out: Vec<(&str, &dyn ToSql)> = vec![
            (":words", &self.words),
            (":kinds_tag", &self.kinds_tag),
            (":tool_tag", &self.tool_tag),
            (":failed", &self.failed),
        ];
        for name in [":lo", ":hi"] {
            if !extra.iter().any(|(n, _)| *n == name) {
                out.push((name, if name == ":lo" { &self.lo } else { &self.hi }));
            }
        }
        if self.rows {
            out.extend_from_slice(&[
                (":adapter", &self.adapter as &dyn ToSql),
                (":session", &self.session),
                (":since", &self.since),
                (":until", &self.until),
                (":kinds", &self.kinds),
                (":tool", &self.tool),
            ]);
        }
        out.extend_from_slice(extra);
        out
    }
}

/// The filters as SQL on `docs d` (what [`passes`] tests in Rust).
const FILTERS: &str = "(:adapter IS NULL OR d.session IN \
        (SELECT id FROM sessions WHERE adapter = :adapter \
         AND (:session IS NULL OR session_id = :session))) \
    AND (:since IS NULL OR d.time_unix_ns >= :since) \
    AND (:until IS NULL OR d.time_unix_ns <= :until) \
    AND (:kinds IS NULL OR d.kind IN (SELECT value FROM json_each(:kinds))) \
    AND (:tool IS NULL OR d.tool = :tool COLLATE NOCASE) \
    AND (:failed = 0 OR d.outcome = 'failure')";

/// The first `limit` of `kept` (best BM25 first), ties newest first.
fn ranked(mut kept: Vec<Found>, limit: usize) -> Vec<Found> {
    kept.sort_by(|a, b| {
        a.score
            .total_cmp(&b.score)
            .then_with(|| b.newer_key().cmp(&a.newer_key()))
    });
    kept.truncate(limit);
    kept
}

/// Put `found` into `kept` (newest first), keeping at most `limit`.
fn insert_newest(kept: &mut Vec<Found>, found: Found, limit: usize) {
    let key = found.newer_key();
    let at = kept.partition_point(|k| k.newer_key() > key);
    if at < limit {
        kept.insert(at, found);
        kept.truncate(limit);
    }
}

fn passes(d: &Found, f: &Filters) -> bool {
    let adapter = f.adapter.or(f.session.map(|s| s.adapter.as_str()));
    adapter.is_none_or(|a| d.session.adapter.as_str() == a)
        && f.session
            .is_none_or(|s| d.session.session_id == s.session_id)
        && f.since_unix_ns.is_none_or(|t| d.time_unix_ns >= t)
        && f.until_unix_ns.is_none_or(|t| d.time_unix_ns <= t)
        && (f.kinds.is_empty() || f.kinds.contains(&d.kind))
        && f.tool.is_none_or(|t| {
            d.tool
                .as_deref()
                .is_some_and(|have| have.eq_ignore_ascii_case(t))
        })
        && (!f.failed || d.outcome.as_deref() == Some("failure"))
}

fn doc(conn: &Connection, id: i64, score: f64) -> Result<Option<Row>, rusqlite::Error> {
    conn.prepare_cached(
        "SELECT s.adapter, s.session_id, d.time_unix_ns, coalesce(d.time_bound, d.time_unix_ns), \
         d.kind, d.tool, d.span_state, d.outcome \
         FROM docs d JOIN sessions s ON s.id = d.session WHERE d.id = ?1",
    )?
    .query_row([id], |r| {
        let adapter: String = r.get(0)?;
        let adapter = AdapterId::parse(&adapter)
            .ok_or_else(|| not_ours(0, Type::Text, format!("{adapter:?} is not an adapter")))?;
        let kind: i64 = r.get(4)?;
        let kind = kind_of_code(kind)
            .ok_or_else(|| not_ours(4, Type::Integer, format!("{kind} is not a kind of text")))?;
        Ok(Row {
            found: Found {
                id,
                session: SessionRef {
                    adapter,
                    session_id: r.get(1)?,
                },
                time_unix_ns: r.get(2)?,
                kind,
                tool: r.get(5)?,
                span_state: r.get(6)?,
                outcome: r.get(7)?,
                score,
                text: None,
            },
            time_bound: r.get(3)?,
        })
    })
    .optional()
}

/// A value in column `column` that this build does not write.
fn not_ours(column: usize, ty: Type, why: String) -> rusqlite::Error {
    rusqlite::Error::FromSqlConversionFailure(column, ty, why.into())
}

/// The text of one doc.
pub(crate) fn text_of(conn: &Connection, id: i64) -> Result<String, rusqlite::Error> {
    conn.prepare_cached("SELECT text FROM texts WHERE id = ?1")?
        .query_row([id], |r| r.get(0))
}

/// The keys of the epochs the index holds, by genesis id.
pub(crate) fn epoch_keys(conn: &Connection) -> Result<HashMap<String, i64>, rusqlite::Error> {
    let mut stmt = conn.prepare("SELECT genesis_id, id FROM epochs")?;
    let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
    rows.collect()
}
