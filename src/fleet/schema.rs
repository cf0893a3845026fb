//! The central schema in PostgreSQL (schema `harnery`): versioned,
//! append-only migrations that `harnery ship` applies under an advisory
//! lock, so twenty hosts shipping at once migrate the server once. A
//! shipped migration is never edited; a change is a new entry at the end.
//!
//! Tables hold what hosts send (hosts, epochs, events with their chain
//! columns and stored bytes, and the derived sessions, spans and
//! receipts); a view answers each question people ask of the fleet. A
//! server whose schema is newer than this build's is refused, by ship and
//! by the reads alike: this build cannot know what the newer one means.

use postgres::Client;

/// Key of the advisory lock that migrations run under (with key 0).
pub const LOCK_SPACE: i32 = 0x6861_726e; // "harn"

/// Every migration, in order: (version, name, SQL).
const MIGRATIONS: &[(i32, &str, &str)] = &[(1, "20261201T1200Z_initial", INITIAL)];

const INITIAL: &str = r#"
CREATE TABLE harnery.hosts (
    host_id      text PRIMARY KEY,
    hostname     text NOT NULL,
    first_ship   timestamptz NOT NULL DEFAULT now(),
    last_ship    timestamptz NOT NULL DEFAULT now()
);

-- One row per epoch of a host: its genesis manifest exactly as the host
-- stores it (the chain seed and the anchor are read from it), how many
-- event rows have arrived, and up to which row the derived rows are.
CREATE TABLE harnery.epochs (
    host_id            text NOT NULL REFERENCES harnery.hosts,
    genesis_id         text NOT NULL,
    contract_generation integer NOT NULL,
    schema_digest      text NOT NULL,
    anchor_genesis_id  text,
    genesis            bytea NOT NULL,
    live               boolean NOT NULL,
    events             bigint NOT NULL DEFAULT 0,
    derived_events     bigint NOT NULL DEFAULT -1,
    PRIMARY KEY (host_id, genesis_id)
);

-- Event rows keyed by (host, genesis, seq). `hash` and `prev_hash` are the
-- host's chain link over the original bytes. A row whose bytes were masked
-- before shipping lists the patterns in `masked` and keeps the blake3 of
-- the bytes it carries in `shipped_digest`; an unmasked row's `json` is
-- the original, so its link is recomputed from it.
CREATE TABLE harnery.events (
    host_id        text NOT NULL,
    genesis_id     text NOT NULL,
    seq            bigint NOT NULL,
    event_id       text NOT NULL,
    adapter        text NOT NULL,
    session_id     text NOT NULL,
    event_offset   bigint NOT NULL,
    type           text NOT NULL,
    time_unix_ns   bigint NOT NULL,
    json           bytea NOT NULL,
    prev_hash      bytea NOT NULL,
    hash           bytea NOT NULL,
    masked         text[],
    shipped_digest bytea,
    PRIMARY KEY (host_id, genesis_id, seq),
    CHECK ((masked IS NULL) = (shipped_digest IS NULL))
);
CREATE INDEX events_usage ON harnery.events (host_id, time_unix_ns) WHERE type = 'usage.reported';

CREATE TABLE harnery.sessions (
    host_id             text NOT NULL,
    genesis_id          text NOT NULL,
    adapter             text NOT NULL,
    session_id          text NOT NULL,
    first_unix_ns       bigint NOT NULL,
    last_unix_ns        bigint NOT NULL,
    events              bigint NOT NULL,
    turns               bigint NOT NULL,
    spans_open          bigint NOT NULL,
    spans_closed_native bigint NOT NULL,
    spans_recovered     bigint NOT NULL,
    class               text NOT NULL CHECK (class IN ('eligible', 'audit_only')),
    reasons             text[] NOT NULL,
    PRIMARY KEY (host_id, genesis_id, adapter, session_id)
);

CREATE TABLE harnery.spans (
    host_id            text NOT NULL,
    genesis_id         text NOT NULL,
    adapter            text NOT NULL,
    session_id         text NOT NULL,
    request_event_id   text NOT NULL,
    kind               text NOT NULL,
    name               text NOT NULL,
    tool_call_id       text,
    agent_id           text,
    turn_id            text,
    requested_unix_ns  bigint,
    state              text NOT NULL,
    reason             text,
    completed_event_id text,
    outcome            text,
    duration_ms        bigint,
    completed_unix_ns  bigint,
    PRIMARY KEY (host_id, genesis_id, adapter, session_id, request_event_id)
);

CREATE TABLE harnery.receipts (
    host_id               text NOT NULL,
    genesis_id            text NOT NULL,
    adapter               text NOT NULL,
    session_id            text NOT NULL,
    turn_index            integer NOT NULL,
    turn_id               text NOT NULL,
    turn_source           text NOT NULL,
    started_unix_ns       bigint NOT NULL,
    ended_unix_ns         bigint NOT NULL,
    wall_ms               bigint NOT NULL,
    spans                 bigint NOT NULL,
    closed                bigint NOT NULL,
    recovered             bigint NOT NULL,
    open                  bigint NOT NULL,
    known_ms              bigint NOT NULL,
    upper_bound_ms        bigint NOT NULL,
    bounds_unknown        bigint NOT NULL,
    upper_bound_share_pct double precision,
    eligible_for_ranking  boolean NOT NULL,
    ineligible_because    text[] NOT NULL,
    notes                 text[] NOT NULL,
    PRIMARY KEY (host_id, genesis_id, adapter, session_id, turn_index)
);

-- Sessions across hosts, one row per part (a session an epoch advance cut
-- has a part in each epoch).
CREATE VIEW harnery.fleet_sessions AS
SELECT s.host_id, h.hostname, s.genesis_id, e.live, s.adapter, s.session_id,
       to_timestamp(s.first_unix_ns / 1e9) AS first_at,
       to_timestamp(s.last_unix_ns / 1e9) AS last_at,
       s.events, s.turns, s.spans_open, s.spans_closed_native, s.spans_recovered,
       s.class, s.reasons
FROM harnery.sessions s
JOIN harnery.hosts h USING (host_id)
JOIN harnery.epochs e USING (host_id, genesis_id);

-- Sessions that did not end cleanly: a span left open or closed by
-- recovery, or a recovery reason against them.
CREATE VIEW harnery.interrupted_sessions AS
SELECT * FROM harnery.fleet_sessions
WHERE spans_open > 0 OR spans_recovered > 0
   OR reasons && ARRAY['request_not_observed', 'completion_not_observed_before_turn_end',
                       'completion_not_observed_before_next_turn', 'span_cap_pressure',
                       'explicit_end_salvage', 'command_completion_not_observed',
                       'tool_pairing_incomplete', 'command_pairing_incomplete',
                       'end_request_superseded']::text[];

-- Every audit reason, per host: how many sessions carry it, and when.
CREATE VIEW harnery.recovery_reasons AS
SELECT s.host_id, h.hostname, r.reason, count(*) AS sessions,
       to_timestamp(min(s.first_unix_ns) / 1e9) AS first_at,
       to_timestamp(max(s.last_unix_ns) / 1e9) AS last_at
FROM harnery.sessions s
JOIN harnery.hosts h USING (host_id)
CROSS JOIN LATERAL unnest(s.reasons) AS r(reason)
GROUP BY s.host_id, h.hostname, r.reason;

-- Model usage as the agents reported it (`usage.reported`, contract
-- generation 2): nothing here is estimated, and a cost is the agent's own
-- figure in the agent's own unit, absent where it reported none.
CREATE VIEW harnery.usage AS
SELECT e.host_id, e.genesis_id, e.adapter, e.session_id, e.event_id, e.type,
       to_timestamp(e.time_unix_ns / 1e9) AS at,
       p ->> 'model' AS model,
       (p ->> 'input_tokens')::bigint AS input_tokens,
       (p ->> 'output_tokens')::bigint AS output_tokens,
       (p ->> 'cache_read_tokens')::bigint AS cache_read_tokens,
       (p ->> 'cache_write_tokens')::bigint AS cache_write_tokens,
       (p ->> 'cost')::numeric AS cost
FROM harnery.events e
CROSS JOIN LATERAL (SELECT convert_from(e.json, 'UTF8')::jsonb -> 'payload' AS p) j
WHERE e.type = 'usage.reported';

CREATE VIEW harnery.usage_by_day_model AS
SELECT date_trunc('day', u.at) AS day, coalesce(u.model, '(unknown)') AS model,
       u.host_id, count(*) AS records,
       sum(u.input_tokens) AS input_tokens, sum(u.output_tokens) AS output_tokens,
       sum(u.cache_read_tokens) AS cache_read_tokens,
       sum(u.cache_write_tokens) AS cache_write_tokens,
       sum(u.cost) AS cost
FROM harnery.usage u
GROUP BY 1, 2, 3;
"#;

/// Why the central schema cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum SchemaError {
    #[error(
        "the server's harnery schema is at version {server}, newer than this build knows ({known}); upgrade harnery on this host"
    )]
    Newer { server: i32, known: i32 },
    #[error(
        "the server's migration {version} is {server:?}, but this build's is {known:?}: the server was set up by a different harnery"
    )]
    Foreign {
        version: i32,
        server: String,
        known: String,
    },
    #[error("the server has no harnery schema yet; `harnery ship` creates it")]
    Missing,
    #[error(
        "the server's harnery schema is at version {server}, older than this build's ({known}); a `harnery ship` from this build migrates it"
    )]
    Behind { server: i32, known: i32 },
    #[error("migrating the central schema: {0}")]
    Db(#[from] postgres::Error),
}

/// This build's newest schema version.
pub fn known_version() -> i32 {
    MIGRATIONS.last().map_or(0, |m| m.0)
}

/// Apply every migration the server lacks, in one transaction under the
/// migration lock; refuse a server that is ahead of this build.
pub fn migrate(client: &mut Client) -> Result<i32, SchemaError> {
    let mut tx = client.transaction()?;
    tx.execute("SELECT pg_advisory_xact_lock($1, 0)", &[&LOCK_SPACE])?;
    tx.batch_execute(
        "CREATE SCHEMA IF NOT EXISTS harnery;
         CREATE TABLE IF NOT EXISTS harnery.schema_migrations (
             version    integer PRIMARY KEY,
             name       text NOT NULL,
             applied_at timestamptz NOT NULL DEFAULT now()
         );",
    )?;
    let applied = applied(&mut tx)?;
    check_applied(&applied)?;
    for (version, name, sql) in &MIGRATIONS[applied.len()..] {
        tx.batch_execute(sql)?;
        tx.execute(
            "INSERT INTO harnery.schema_migrations (version, name) VALUES ($1, $2)",
            &[version, name],
        )?;
    }
    tx.commit()?;
    Ok(known_version())
}

/// For the reads: the server's schema must be exactly this build's.
pub fn check(client: &mut Client) -> Result<(), SchemaError> {
    let exists: bool = client
        .query_one(
            "SELECT to_regclass('harnery.schema_migrations') IS NOT NULL",
            &[],
        )?
        .get(0);
    if !exists {
        return Err(SchemaError::Missing);
    }
    let applied = applied(client)?;
    check_applied(&applied)?;
    let server = applied.last().map_or(0, |a| a.0);
    if server < known_version() {
        return Err(SchemaError::Behind {
            server,
            known: known_version(),
        });
    }
    Ok(())
}

fn applied(client: &mut impl postgres::GenericClient) -> Result<Vec<(i32, String)>, SchemaError> {
    let rows = client.query(
        "SELECT version, name FROM harnery.schema_migrations ORDER BY version",
        &[],
    )?;
    Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
}

fn check_applied(applied: &[(i32, String)]) -> Result<(), SchemaError> {
    let server = applied.last().map_or(0, |a| a.0);
    if server > known_version() {
        return Err(SchemaError::Newer {
            server,
            known: known_version(),
        });
    }
    for ((version, name), (_, known, _)) in applied.iter().zip(MIGRATIONS) {
        if name != known {
            return Err(SchemaError::Foreign {
                version: *version,
                server: name.clone(),
                known: known.to_string(),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::RecoveryReason;

    #[test]
    fn versions_count_up_from_one() {
        for (i, (version, _, _)) in MIGRATIONS.iter().enumerate() {
            assert_eq!(*version, i as i32 + 1);
        }
    }

    #[test]
    fn the_interrupted_view_names_every_recovery_reason() {
        for r in RecoveryReason::ALL {
            let name = format!("'{}'", r.as_str());
            assert!(INITIAL.contains(&name), "{name} is missing from the view");
        }
    }
}
