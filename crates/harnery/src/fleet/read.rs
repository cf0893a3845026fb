//! The fleet questions, read from the central views: sessions across
//! hosts, the audit (audit-only sessions, interrupted ones, every reason
//! per host), and usage by day and model. Read-only; a host filter that
//! names no host the server knows is an error listing the ones it does.

use postgres::Client;
use serde::Serialize;

use super::FleetError;
use super::schema;

/// What every read narrows by.
#[derive(Debug, Clone, Default)]
pub struct ReadFilter {
    pub host: Option<String>,
    pub since_unix_ns: Option<i64>,
}

/// A timestamp column as RFC 3339 UTC with milliseconds.
fn utc(column: &str) -> String {
    format!("to_char({column} AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')")
}

/// Check the schema and the host filter.
pub fn prepare(client: &mut Client, filter: &ReadFilter) -> Result<(), FleetError> {
    schema::check(client)?;
    let Some(host) = &filter.host else {
        return Ok(());
    };
    let known: Vec<String> = client
        .query("SELECT host_id FROM harnery.hosts ORDER BY host_id", &[])?
        .iter()
        .map(|r| r.get(0))
        .collect();
    if known.iter().any(|k| k == host) {
        return Ok(());
    }
    Err(FleetError::UnknownHost {
        wanted: host.clone(),
        known,
    })
}

/// One part of a session on one host.
#[derive(Debug, Clone, Serialize)]
pub struct FleetSession {
    pub host_id: String,
    pub hostname: String,
    pub genesis_id: String,
    pub live: bool,
    pub adapter: String,
    pub session_id: String,
    pub first_at: String,
    pub last_at: String,
    pub events: i64,
    pub turns: i64,
    pub spans_open: i64,
    pub spans_closed_native: i64,
    pub spans_recovered: i64,
    pub class: String,
    pub reasons: Vec<String>,
    /// What the host shipped of this epoch's rows (`ship --content`).
    pub content: Vec<String>,
    /// The session's title and project as the host shipped them (masked
    /// under `--content masked`; null under `none`, or when unknown).
    pub title: Option<String>,
    pub project: Option<String>,
}

const SESSION_FILTER: &str = "($1::text IS NULL OR host_id = $1) AND ($2::bigint IS NULL OR last_at >= to_timestamp($2 / 1e9))";

/// The same on a sessions view, answered from the `last_unix_ns` index.
const SESSION_VIEW_FILTER: &str =
    "($1::text IS NULL OR host_id = $1) AND ($2::bigint IS NULL OR last_unix_ns >= $2)";

/// Sessions across hosts, newest first (`view` is `fleet_sessions` or
/// `interrupted_sessions`).
fn sessions_from(
    client: &mut Client,
    view: &str,
    filter: &ReadFilter,
) -> Result<Vec<FleetSession>, FleetError> {
    let sql = format!(
        "SELECT host_id, hostname, genesis_id, live, adapter, session_id, {}, {}, events, turns, \
         spans_open, spans_closed_native, spans_recovered, class, reasons, content, title, project \
         FROM harnery.{view} WHERE {SESSION_VIEW_FILTER} ORDER BY last_at DESC, host_id, session_id",
        utc("first_at"),
        utc("last_at")
    );
    let rows = client.query(&sql, &[&filter.host, &filter.since_unix_ns])?;
    Ok(rows
        .iter()
        .map(|r| FleetSession {
            host_id: r.get(0),
            hostname: r.get(1),
            genesis_id: r.get(2),
            live: r.get(3),
            adapter: r.get(4),
            session_id: r.get(5),
            first_at: r.get(6),
            last_at: r.get(7),
            events: r.get(8),
            turns: r.get(9),
            spans_open: r.get(10),
            spans_closed_native: r.get(11),
            spans_recovered: r.get(12),
            class: r.get(13),
            reasons: r.get(14),
            content: r.get(15),
            title: r.get(16),
            project: r.get(17),
        })
        .collect())
}

pub fn sessions(client: &mut Client, filter: &ReadFilter) -> Result<Vec<FleetSession>, FleetError> {
    sessions_from(client, "fleet_sessions", filter)
}

/// One audit reason on one host.
#[derive(Debug, Clone, Serialize)]
pub struct ReasonCount {
    pub host_id: String,
    pub hostname: String,
    pub reason: String,
    pub sessions: i64,
}

/// The audit: audit-only sessions, the interrupted ones among all, and
/// every reason per host.
#[derive(Debug, Clone, Serialize)]
pub struct FleetAudit {
    pub audit_only: Vec<FleetSession>,
    pub interrupted: Vec<FleetSession>,
    pub reasons: Vec<ReasonCount>,
}

pub fn audit(client: &mut Client, filter: &ReadFilter) -> Result<FleetAudit, FleetError> {
    let audit_only = sessions_from(client, "fleet_sessions", filter)?
        .into_iter()
        .filter(|s| s.class == "audit_only")
        .collect();
    let interrupted = sessions_from(client, "interrupted_sessions", filter)?;
    let rows = client.query(
        &format!(
            "SELECT host_id, hostname, reason, sessions FROM harnery.recovery_reasons WHERE {SESSION_FILTER} \
             ORDER BY host_id, sessions DESC, reason"
        ),
        &[&filter.host, &filter.since_unix_ns],
    )?;
    let reasons = rows
        .iter()
        .map(|r| ReasonCount {
            host_id: r.get(0),
            hostname: r.get(1),
            reason: r.get(2),
            sessions: r.get(3),
        })
        .collect();
    Ok(FleetAudit {
        audit_only,
        interrupted,
        reasons,
    })
}

/// Usage of one model on one host on one day (UTC). Token counts and cost
/// are sums of what the agents reported; `None` where none reported it.
#[derive(Debug, Clone, Serialize)]
pub struct UsageRow {
    pub day: String,
    pub model: String,
    pub host_id: String,
    pub records: i64,
    #[serde(flatten)]
    pub tokens: FleetTokens,
}

/// A usage row's token sums and cost, as the server's usage views give
/// them: a kind absent where no record reported it.
#[derive(Debug, Clone, Serialize)]
pub struct FleetTokens {
    pub input_tokens: Option<i64>,
    pub output_tokens: Option<i64>,
    pub cache_read_tokens: Option<i64>,
    pub cache_write_tokens: Option<i64>,
    pub cost: Option<String>,
}

impl FleetTokens {
    /// The five columns starting at `first` of a usage view's row.
    fn read(r: &postgres::Row, first: usize) -> FleetTokens {
        FleetTokens {
            input_tokens: r.get(first),
            output_tokens: r.get(first + 1),
            cache_read_tokens: r.get(first + 2),
            cache_write_tokens: r.get(first + 3),
            cost: r.get(first + 4),
        }
    }
}

impl std::fmt::Display for FleetTokens {
    /// `in N out N cache-read N cache-write N  cost C`, `-` where absent.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = |v: Option<i64>| v.map_or("-".to_string(), |v| v.to_string());
        write!(
            f,
            "in {} out {} cache-read {} cache-write {}  cost {}",
            n(self.input_tokens),
            n(self.output_tokens),
            n(self.cache_read_tokens),
            n(self.cache_write_tokens),
            self.cost.as_deref().unwrap_or("-")
        )
    }
}

pub fn usage(client: &mut Client, filter: &ReadFilter) -> Result<Vec<UsageRow>, FleetError> {
    let rows = client.query(
        "SELECT to_char(day AT TIME ZONE 'UTC', 'YYYY-MM-DD'), model, host_id, records, \
         input_tokens::bigint, output_tokens::bigint, cache_read_tokens::bigint, cache_write_tokens::bigint, \
         cost::text FROM harnery.usage_by_day_model \
         WHERE ($1::text IS NULL OR host_id = $1) AND ($2::bigint IS NULL OR day >= date_trunc('day', to_timestamp($2 / 1e9))) \
         ORDER BY day DESC, model, host_id",
        &[&filter.host, &filter.since_unix_ns],
    )?;
    Ok(rows
        .iter()
        .map(|r| UsageRow {
            day: r.get(0),
            model: r.get(1),
            host_id: r.get(2),
            records: r.get(3),
            tokens: FleetTokens::read(r, 4),
        })
        .collect())
}

/// Usage of one session on one host (`fleet usage --by session`), counted
/// as `harnery usage` counts it on the host: copies inherited, a fork's or
/// restore's cost its own. A token kind is absent only where no record of
/// the session reported it.
#[derive(Debug, Clone, Serialize)]
pub struct SessionUsageRow {
    pub host_id: String,
    pub adapter: String,
    pub session_id: String,
    pub records: i64,
    #[serde(flatten)]
    pub tokens: FleetTokens,
    /// Records of calls counted elsewhere (a fork's or restore's copies).
    pub inherited_records: i64,
}

pub fn usage_by_session(
    client: &mut Client,
    filter: &ReadFilter,
) -> Result<Vec<SessionUsageRow>, FleetError> {
    let rows = client.query(
        "SELECT host_id, adapter, session_id, records, input_tokens::bigint, output_tokens::bigint, \
         cache_read_tokens::bigint, cache_write_tokens::bigint, cost::text, inherited_records \
         FROM harnery.usage_by_session \
         WHERE ($1::text IS NULL OR host_id = $1) AND ($2::bigint IS NULL OR last_at >= to_timestamp($2 / 1e9)) \
         ORDER BY host_id, adapter, session_id",
        &[&filter.host, &filter.since_unix_ns],
    )?;
    Ok(rows
        .iter()
        .map(|r| SessionUsageRow {
            host_id: r.get(0),
            adapter: r.get(1),
            session_id: r.get(2),
            records: r.get(3),
            tokens: FleetTokens::read(r, 4),
            inherited_records: r.get(9),
        })
        .collect())
}
