//! `harnery fleet search`: find what agents said or did across every
//! host, in the text hosts shipped (`harnery.search_text`, see
//! [`super::schema_search`]). The query language is local search's
//! ([`crate::search::query`]), parsed here the same way and translated
//! into PostgreSQL: words and prefixes into a `tsquery` built from
//! parameters (never from the user's text as syntax), phrases with
//! `phraseto_tsquery`, substrings into `ILIKE` over the trigram index.
//! A hit has local search's fields plus its host. Read-only.

use postgres::Client;
use postgres::types::ToSql;
use serde::Serialize;

use super::FleetError;
use super::read::{self, ReadFilter};
use crate::clock::format_time;
use crate::contract::{AdapterId, SessionRef};
use crate::search::query::{self, Term};
use crate::search::{Hit, Kind, snippet};

/// A fleet search: the query text and what narrows it.
#[derive(Debug, Clone, Default)]
pub struct FleetQuery {
    pub text: String,
    pub host: Option<String>,
    /// A session id, its first characters, or `adapter/id`.
    pub session: Option<String>,
    pub since_unix_ns: Option<i64>,
    pub until_unix_ns: Option<i64>,
    /// Only these kinds (all when empty).
    pub kinds: Vec<Kind>,
    /// Only this tool (any case).
    pub tool: Option<String>,
    pub failed: bool,
    pub limit: usize,
}

/// One hit: local search's fields, and the host it was shipped from.
#[derive(Debug, Clone, Serialize)]
pub struct FleetHit {
    pub host: String,
    #[serde(flatten)]
    pub hit: Hit,
}

/// The hits, and the hosts that shipped no text to search (every epoch
/// sent with `--content none`).
#[derive(Debug, Clone, Serialize)]
pub struct FleetFound {
    pub hits: Vec<FleetHit>,
    pub not_searchable: Vec<String>,
}

type Params = Vec<Box<dyn ToSql + Sync>>;

/// Run `q` against the server (a reader's connection is enough).
pub fn search(client: &mut Client, q: &FleetQuery) -> Result<FleetFound, FleetError> {
    let terms = query::parse(&q.text)?;
    let filter = ReadFilter {
        host: q.host.clone(),
        since_unix_ns: None,
    };
    read::prepare(client, &filter)?;
    let mut params = fixed_params(q);
    let (matches, score) = term_sql(&terms, &mut params);
    let sql =
        format!("{SELECT} {score}::float8 AS score {FROM} WHERE {matches} AND {FILTERS} {ORDER}");
    let refs: Vec<&(dyn ToSql + Sync)> = params.iter().map(|p| p.as_ref()).collect();
    let needles = query::needles(&terms);
    let mut hits = Vec::new();
    for row in client.query(&sql, &refs)? {
        hits.push(fleet_hit(&row, &needles)?);
    }
    Ok(FleetFound {
        hits,
        not_searchable: not_searchable(client, q.host.as_deref())?,
    })
}

const SELECT: &str = "SELECT s.host_id, e.genesis_id, ep.live, e.seq, e.adapter, e.session_id, \
    e.event_offset, e.event_id, e.type, e.time_unix_ns, s.turn_id, s.kind, s.tool, sp.state, \
    sp.outcome, s.text, ss.title, ss.project,";

const FROM: &str = "FROM harnery.search_text s \
    JOIN harnery.events e ON e.host_id = s.host_id AND e.genesis_id = s.genesis_id AND e.seq = s.seq \
    JOIN harnery.epochs ep ON ep.host_id = s.host_id AND ep.genesis_id = s.genesis_id \
    LEFT JOIN LATERAL (SELECT p.state, p.outcome FROM harnery.spans p \
        WHERE p.host_id = e.host_id AND p.genesis_id = e.genesis_id AND p.adapter = e.adapter \
        AND p.session_id = e.session_id \
        AND (p.request_event_id = e.event_id OR p.completed_event_id = e.event_id) LIMIT 1) sp ON true \
    LEFT JOIN harnery.sessions ss ON ss.host_id = e.host_id AND ss.genesis_id = e.genesis_id \
        AND ss.adapter = e.adapter AND ss.session_id = e.session_id";

const FILTERS: &str = "($1::text IS NULL OR s.host_id = $1) \
    AND ($2::text IS NULL OR e.adapter = $2) \
    AND ($3::text IS NULL OR left(e.session_id, length($3)) = $3) \
    AND ($4::bigint IS NULL OR e.time_unix_ns >= $4) \
    AND ($5::bigint IS NULL OR e.time_unix_ns <= $5) \
    AND ($6::text[] IS NULL OR s.kind = ANY($6)) \
    AND ($7::text IS NULL OR lower(s.tool) = lower($7)) \
    AND (NOT $8::bool OR sp.outcome = 'failure')";

const ORDER: &str = "ORDER BY score, e.time_unix_ns DESC, e.seq DESC, s.host_id LIMIT $9";

fn fixed_params(q: &FleetQuery) -> Params {
    let (adapter, session) = match q.session.as_deref().and_then(|s| s.split_once('/')) {
        Some((a, id)) => (Some(a.to_string()), Some(id.to_string())),
        None => (None, q.session.clone()),
    };
    let kinds = (!q.kinds.is_empty()).then(|| {
        q.kinds
            .iter()
            .map(|k| k.as_str().to_string())
            .collect::<Vec<_>>()
    });
    let limit = q.limit.min(i64::MAX as usize) as i64;
    vec![
        Box::new(q.host.clone()),
        Box::new(adapter),
        Box::new(session),
        Box::new(q.since_unix_ns),
        Box::new(q.until_unix_ns),
        Box::new(kinds),
        Box::new(q.tool.clone()),
        Box::new(q.failed),
        Box::new(limit),
    ]
}

/// The terms as SQL conditions (all must hold) and the score (the
/// negated `ts_rank` of the words, so lower is better as in local
/// search; 0 for substrings alone). Each term is a parameter.
fn term_sql(terms: &[Term], params: &mut Params) -> (String, String) {
    let mut words = Vec::new();
    let mut conds = Vec::new();
    for term in terms {
        let n = params.len() + 1;
        match term {
            Term::Word(w) => {
                words.push(format!("plainto_tsquery('simple', ${n})"));
                params.push(Box::new(w.clone()));
            }
            Term::Prefix(p) => {
                words.push(format!("to_tsquery('simple', ${n} || ':*')"));
                params.push(Box::new(p.clone()));
            }
            Term::Phrase(ws) => {
                words.push(format!("phraseto_tsquery('simple', ${n})"));
                params.push(Box::new(ws.join(" ")));
            }
            Term::Substring(s) => {
                conds.push(format!("s.text ILIKE ${n}"));
                params.push(Box::new(format!("%{}%", like_escaped(s))));
            }
        }
    }
    let mut score = "0.0".to_string();
    if !words.is_empty() {
        let q = format!("({})", words.join(" && "));
        conds.push(format!("s.words @@ {q}"));
        score = format!("-ts_rank(s.words, {q})");
    }
    (conds.join(" AND "), score)
}

/// `text` matched literally by `LIKE` (backslash is its escape).
fn like_escaped(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '\\' | '%' | '_') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

fn fleet_hit(r: &postgres::Row, needles: &[query::Needle]) -> Result<FleetHit, FleetError> {
    let name: String = r.get(4);
    let adapter = AdapterId::parse(&name).ok_or_else(|| FleetError::Adapter {
        host: r.get(0),
        adapter: name.clone(),
    })?;
    let session_id: String = r.get(5);
    let text: String = r.get(15);
    let snip = snippet::snippet(&text, needles);
    let time_unix_ns: i64 = r.get(9);
    let kind: String = r.get(11);
    let epoch = match r.get::<_, bool>(2) {
        true => "live".to_string(),
        false => r.get(1),
    };
    let hit = Hit {
        epoch,
        session_prefix: session_id.chars().take(12).collect(),
        session: SessionRef {
            adapter,
            session_id,
        },
        time: format_time(time_unix_ns),
        time_unix_ns,
        turn: r.get(10),
        kind: kind.parse().unwrap_or(Kind::Message),
        event_type: r.get(8),
        tool: r.get(12),
        span_state: r.get(13),
        outcome: r.get(14),
        offset: r.get::<_, i64>(6) as u64,
        seq: r.get(3),
        event_id: r.get(7),
        snippet: snip.text,
        matches: snip.matches,
        score: r.get(18),
        title: r.get(16),
        project: r.get(17),
        // The fleet's rows are copied by `ship`, not indexed behind it.
        index_behind: 0,
    };
    Ok(FleetHit {
        host: r.get(0),
        hit,
    })
}

/// Hosts none of whose epochs were shipped with text.
fn not_searchable(client: &mut Client, host: Option<&str>) -> Result<Vec<String>, FleetError> {
    let rows = client.query(
        "SELECT host_id FROM harnery.epochs WHERE ($1::text IS NULL OR host_id = $1) \
         GROUP BY host_id HAVING NOT bool_or(content && ARRAY['full', 'masked']::text[]) \
         ORDER BY host_id",
        &[&host],
    )?;
    Ok(rows.iter().map(|r| r.get(0)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn like_wildcards_are_literal() {
        assert_eq!(like_escaped(r"50%_a\b"), r"50\%\_a\\b");
    }

    #[test]
    fn every_term_is_a_parameter() {
        let terms = query::parse(r#"ledger "two words" src/main.rs pre*"#).unwrap();
        let mut params: Params = Vec::new();
        let (conds, score) = term_sql(&terms, &mut params);
        assert_eq!(params.len(), 4);
        assert!(!conds.contains("ledger") && !conds.contains("main"));
        assert!(conds.contains("ILIKE $3") && score.starts_with("-ts_rank"));
    }
}
