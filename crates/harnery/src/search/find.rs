//! Running a translated query against the index: the FTS5 tables a
//! query needs, joined to `docs`, the filters as plain column tests, and
//! the order (BM25 of its words, then newest; or newest only: a query of
//! substrings alone has no rank). Only the hits' ids and
//! columns are sorted; each hit's text is read after, one row at a time,
//! so a query that matches much of the index never holds its text.

use rusqlite::{Connection, ToSql};

use super::Sort;
use super::extract::Kind;
use super::query::Translated;
use crate::contract::SessionRef;

/// What a query keeps besides its terms.
pub struct Filters<'a> {
    /// The epochs searched, by genesis id.
    pub genesis_ids: &'a [String],
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

/// One matching doc, without its text.
#[derive(Debug, Clone)]
pub struct Found {
    pub id: i64,
    pub genesis_id: String,
    pub seq: i64,
    pub session: SessionRef,
    pub offset: u64,
    pub event_id: String,
    pub event_type: String,
    pub time_unix_ns: i64,
    pub turn: Option<String>,
    pub kind: String,
    pub tool: Option<String>,
    pub span_state: Option<String>,
    pub outcome: Option<String>,
    /// BM25 of the query's words (lower is better; 0 with none).
    pub score: f64,
}

const FILTERS: &str = "d.genesis_id IN (SELECT value FROM json_each(:epochs)) \
    AND (:adapter IS NULL OR d.adapter = :adapter) \
    AND (:session IS NULL OR d.session_id = :session) \
    AND (:since IS NULL OR d.time_unix_ns >= :since) \
    AND (:until IS NULL OR d.time_unix_ns <= :until) \
    AND (:kinds IS NULL OR d.kind IN (SELECT value FROM json_each(:kinds))) \
    AND (:tool IS NULL OR d.tool = :tool COLLATE NOCASE) \
    AND (:failed = 0 OR d.outcome = 'failure')";

/// The SQL of a query: each FTS5 table it needs matched once, as its
/// own materialized set (never run again per row of the other), joined to
/// `docs`, filtered, ordered.
fn sql(t: &Translated, sort: Sort) -> String {
    let mut with = Vec::new();
    let mut joins = String::new();
    let mut score = Vec::new();
    // Substrings are not ranked: BM25 over trigrams says little and costs
    // most of a query that matches much (it reads each match's sizes).
    let tables = [
        ("words", &t.words, "w", "bm25(words)"),
        ("grams", &t.grams, "g", "0.0"),
    ];
    for (table, expr, alias, rank) in tables {
        if expr.is_some() {
            with.push(format!(
                "{alias} AS MATERIALIZED (SELECT rowid AS id, {rank} AS r FROM {table} WHERE {table} MATCH :{alias})"
            ));
            let on = match score.is_empty() {
                true => format!("{alias} CROSS JOIN docs d ON d.id = {alias}.id"),
                false => format!(" JOIN {alias} ON {alias}.id = d.id"),
            };
            joins.push_str(&on);
            score.push(format!("{alias}.r"));
        }
    }
    let order = match sort {
        Sort::Relevance => "score, d.time_unix_ns DESC, d.seq DESC",
        Sort::Time => "d.time_unix_ns DESC, d.seq DESC",
    };
    format!(
        "WITH {} SELECT d.id, d.genesis_id, d.seq, d.adapter, d.session_id, d.offset, d.event_id, \
         d.event_type, d.time_unix_ns, d.turn, d.kind, d.tool, d.span_state, d.outcome, {} AS score \
         FROM {joins} WHERE {FILTERS} ORDER BY {order} LIMIT :limit",
        with.join(", "),
        score.join(" + ")
    )
}

/// The docs that match, best first.
pub fn run(conn: &Connection, t: &Translated, f: &Filters) -> Result<Vec<Found>, rusqlite::Error> {
    let epochs = serde_json::to_string(f.genesis_ids).expect("ids are JSON");
    let kinds = (!f.kinds.is_empty()).then(|| {
        let names: Vec<&str> = f.kinds.iter().map(|k| k.as_str()).collect();
        serde_json::to_string(&names).expect("names are JSON")
    });
    let session = f.session.map(|s| s.session_id.as_str());
    let adapter = f.adapter.or(f.session.map(|s| s.adapter.as_str()));
    let limit = f.limit.min(i64::MAX as usize) as i64;
    let mut params: Vec<(&str, &dyn ToSql)> = vec![
        (":epochs", &epochs),
        (":adapter", &adapter),
        (":session", &session),
        (":since", &f.since_unix_ns),
        (":until", &f.until_unix_ns),
        (":kinds", &kinds),
        (":tool", &f.tool),
        (":failed", &f.failed),
        (":limit", &limit),
    ];
    if let Some(w) = &t.words {
        params.push((":w", w));
    }
    if let Some(g) = &t.grams {
        params.push((":g", g));
    }
    let mut stmt = conn.prepare(&sql(t, f.sort))?;
    let rows = stmt.query_map(params.as_slice(), found)?;
    rows.collect()
}

fn found(r: &rusqlite::Row) -> Result<Found, rusqlite::Error> {
    let adapter: String = r.get(3)?;
    let adapter = crate::contract::AdapterId::parse(&adapter).ok_or_else(|| {
        rusqlite::Error::FromSqlConversionFailure(
            3,
            rusqlite::types::Type::Text,
            format!("{adapter:?} is not an adapter").into(),
        )
    })?;
    Ok(Found {
        id: r.get(0)?,
        genesis_id: r.get(1)?,
        seq: r.get(2)?,
        session: SessionRef {
            adapter,
            session_id: r.get(4)?,
        },
        offset: r.get::<_, i64>(5)? as u64,
        event_id: r.get(6)?,
        event_type: r.get(7)?,
        time_unix_ns: r.get(8)?,
        turn: r.get(9)?,
        kind: r.get(10)?,
        tool: r.get(11)?,
        span_state: r.get(12)?,
        outcome: r.get(13)?,
        score: r.get(14)?,
    })
}

/// The text of one doc.
pub fn text_of(conn: &Connection, id: i64) -> Result<String, rusqlite::Error> {
    conn.prepare_cached("SELECT text FROM docs WHERE id = ?1")?
        .query_row([id], |r| r.get(0))
}
