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

use super::schema_bound::BOUND;
use super::schema_search::{SEARCH_TEXT, after_migration};
use super::schema_titles::TITLES;

/// Key of the advisory lock that migrations run under (with key 0).
pub(crate) const LOCK_SPACE: i32 = 0x6861_726e; // "harn"

/// Every migration, in order: (version, name, SQL).
const MIGRATIONS: &[(i32, &str, &str)] = &[
    (1, "20261201T1200Z_initial", INITIAL),
    (2, "20261202T1500Z_linked_rows", LINKED),
    (3, "20261202T1720Z_usage_once_per_call", USAGE_ONCE),
    (4, "20261203T1000Z_search_text", SEARCH_TEXT),
    (5, "20261206T0500Z_bound_rows_keyed_ids", BOUND),
    (6, "20261206T1400Z_session_titles", TITLES),
];

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

/// Version 2: rows bound by a chain anyone can recompute (`link`), a
/// commitment only the host can check (`commit`), a signed head per
/// epoch, and no unkeyed hash of anything masked. The events table is
/// partitioned by host (hash, 16 ways) and indexed for the reads.
///
/// The rows version 1 shipped carried the host's own chain hashes, which
/// let anyone holding the database test guesses of masked text; they move
/// to `events_v1` without those columns (drop it once the hosts have
/// shipped again), the derived rows are emptied, and every host ships its
/// epochs again from row 1 on its next run.
const LINKED: &str = r#"
ALTER TABLE harnery.events RENAME TO events_v1;
ALTER TABLE harnery.events_v1 RENAME CONSTRAINT events_pkey TO events_v1_pkey;
ALTER INDEX harnery.events_usage RENAME TO events_v1_usage;
ALTER TABLE harnery.events_v1 DROP COLUMN prev_hash, DROP COLUMN hash;
DELETE FROM harnery.sessions;
DELETE FROM harnery.spans;
DELETE FROM harnery.receipts;
DELETE FROM harnery.epochs;

ALTER TABLE harnery.hosts ADD COLUMN sign_key bytea;
ALTER TABLE harnery.epochs
    ADD COLUMN genesis_commit bytea NOT NULL,
    ADD COLUMN content text[] NOT NULL DEFAULT '{}',
    ADD COLUMN head_link bytea,
    ADD COLUMN head_sig bytea;

-- The group roles: hosts (one login role each, `fleet add-host`) and
-- readers. Roles belong to the whole server, so they may exist already.
DO $$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'harnery_host') THEN
        CREATE ROLE harnery_host NOLOGIN;
    END IF;
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'harnery_reader') THEN
        CREATE ROLE harnery_reader NOLOGIN;
    END IF;
EXCEPTION WHEN duplicate_object OR unique_violation THEN
    -- Another database of the same server made them at the same moment.
    NULL;
END $$;

-- Whoever owns the schema (or a superuser): the administrator.
CREATE FUNCTION harnery.is_admin() RETURNS boolean LANGUAGE sql STABLE
    SECURITY DEFINER SET search_path = pg_catalog AS $$
    SELECT r.rolsuper OR pg_has_role(session_user, n.nspowner, 'MEMBER')
    FROM pg_roles r, pg_namespace n
    WHERE r.rolname = session_user AND n.nspname = 'harnery'
$$;

-- A host may register its signing key once; only an administrator
-- changes it.
CREATE FUNCTION harnery.sign_key_is_kept() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.sign_key IS NOT NULL AND NEW.sign_key IS DISTINCT FROM OLD.sign_key
       AND NOT harnery.is_admin() THEN
        RAISE EXCEPTION 'host %: its signing key is already registered', OLD.host_id
            USING ERRCODE = '42501';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER hosts_sign_key_kept BEFORE UPDATE ON harnery.hosts
    FOR EACH ROW EXECUTE FUNCTION harnery.sign_key_is_kept();

-- Event rows keyed by (host, genesis, seq). `content` is what the host
-- chose to send (full, masked, none); `masked` the categories masked in
-- `json`; `link` the chain over every column; `commit` the host's keyed
-- commitment to its ledger row.
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
    content        text NOT NULL CHECK (content IN ('full', 'masked', 'none')),
    masked         text[] NOT NULL,
    json           bytea NOT NULL,
    link           bytea NOT NULL,
    commit         bytea NOT NULL,
    PRIMARY KEY (host_id, genesis_id, seq)
) PARTITION BY HASH (host_id);
DO $$
BEGIN
    FOR i IN 0..15 LOOP
        EXECUTE format('CREATE TABLE harnery.events_p%s PARTITION OF harnery.events FOR VALUES WITH (MODULUS 16, REMAINDER %s)', i, i);
    END LOOP;
END $$;
CREATE INDEX events_time ON harnery.events (time_unix_ns);
CREATE INDEX events_session ON harnery.events (session_id, host_id);
CREATE INDEX events_usage ON harnery.events (time_unix_ns) WHERE type = 'usage.reported';
CREATE INDEX sessions_last ON harnery.sessions (last_unix_ns);
CREATE INDEX sessions_session ON harnery.sessions (session_id);

-- Which host role ships which host id: bound by the role's first ship.
CREATE TABLE harnery.host_roles (
    role_name  text PRIMARY KEY,
    host_id    text UNIQUE,
    created_at timestamptz NOT NULL DEFAULT now()
);

-- A role's host id, once bound, is changed only by an administrator.
CREATE FUNCTION harnery.host_binding_is_kept() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.host_id IS NOT NULL AND NEW.host_id IS DISTINCT FROM OLD.host_id
       AND NOT harnery.is_admin() THEN
        RAISE EXCEPTION 'role %: it already ships host %', OLD.role_name, OLD.host_id
            USING ERRCODE = '42501';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER host_roles_binding_kept BEFORE UPDATE ON harnery.host_roles
    FOR EACH ROW EXECUTE FUNCTION harnery.host_binding_is_kept();

-- The host id the connected role ships (NULL for anyone else).
CREATE FUNCTION harnery.my_host_id() RETURNS text LANGUAGE sql STABLE
    SECURITY DEFINER SET search_path = pg_catalog, harnery AS $$
    SELECT host_id FROM harnery.host_roles WHERE role_name = session_user
$$;

-- A host role sees and writes only its own host's rows; the owner (the
-- administrator) is not subject to these.
ALTER TABLE harnery.hosts ENABLE ROW LEVEL SECURITY;
ALTER TABLE harnery.epochs ENABLE ROW LEVEL SECURITY;
ALTER TABLE harnery.events ENABLE ROW LEVEL SECURITY;
ALTER TABLE harnery.sessions ENABLE ROW LEVEL SECURITY;
ALTER TABLE harnery.spans ENABLE ROW LEVEL SECURITY;
ALTER TABLE harnery.receipts ENABLE ROW LEVEL SECURITY;
ALTER TABLE harnery.host_roles ENABLE ROW LEVEL SECURITY;
CREATE POLICY own_rows ON harnery.hosts
    USING (host_id = (SELECT harnery.my_host_id()) OR pg_has_role(current_user, 'harnery_reader', 'MEMBER'))
    WITH CHECK (host_id = (SELECT harnery.my_host_id()));
CREATE POLICY own_rows ON harnery.epochs
    USING (host_id = (SELECT harnery.my_host_id()) OR pg_has_role(current_user, 'harnery_reader', 'MEMBER'))
    WITH CHECK (host_id = (SELECT harnery.my_host_id()));
CREATE POLICY own_rows ON harnery.events
    USING (host_id = (SELECT harnery.my_host_id()) OR pg_has_role(current_user, 'harnery_reader', 'MEMBER'))
    WITH CHECK (host_id = (SELECT harnery.my_host_id()));
CREATE POLICY own_rows ON harnery.sessions
    USING (host_id = (SELECT harnery.my_host_id()) OR pg_has_role(current_user, 'harnery_reader', 'MEMBER'))
    WITH CHECK (host_id = (SELECT harnery.my_host_id()));
CREATE POLICY own_rows ON harnery.spans
    USING (host_id = (SELECT harnery.my_host_id()) OR pg_has_role(current_user, 'harnery_reader', 'MEMBER'))
    WITH CHECK (host_id = (SELECT harnery.my_host_id()));
CREATE POLICY own_rows ON harnery.receipts
    USING (host_id = (SELECT harnery.my_host_id()) OR pg_has_role(current_user, 'harnery_reader', 'MEMBER'))
    WITH CHECK (host_id = (SELECT harnery.my_host_id()));
CREATE POLICY own_role ON harnery.host_roles
    USING (role_name = session_user OR pg_has_role(current_user, 'harnery_reader', 'MEMBER'))
    WITH CHECK (role_name = session_user);

-- What `ship` needs to resume an epoch: its last row's seq, link and
-- commitment, for the caller's own host only (a host role cannot read
-- event rows).
CREATE FUNCTION harnery.ship_head(p_host text, p_genesis text)
    RETURNS TABLE (seq bigint, link bytea, commit bytea) LANGUAGE sql STABLE
    SECURITY DEFINER SET search_path = pg_catalog, harnery AS $$
    SELECT e.seq, e.link, e.commit FROM harnery.events e
    WHERE e.host_id = p_host AND e.genesis_id = p_genesis
      AND (p_host = harnery.my_host_id() OR harnery.is_admin())
    ORDER BY e.seq DESC LIMIT 1
$$;

-- A host replaces its own epoch's derived rows.
CREATE FUNCTION harnery.clear_derived(p_host text, p_genesis text) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, harnery AS $$
BEGIN
    IF p_host IS DISTINCT FROM harnery.my_host_id() AND NOT harnery.is_admin() THEN
        RAISE EXCEPTION 'host %: not this role''s host', p_host USING ERRCODE = '42501';
    END IF;
    DELETE FROM harnery.sessions WHERE host_id = p_host AND genesis_id = p_genesis;
    DELETE FROM harnery.spans WHERE host_id = p_host AND genesis_id = p_genesis;
    DELETE FROM harnery.receipts WHERE host_id = p_host AND genesis_id = p_genesis;
END $$;

CREATE OR REPLACE VIEW harnery.fleet_sessions AS
SELECT s.host_id, h.hostname, s.genesis_id, e.live, s.adapter, s.session_id,
       to_timestamp(s.first_unix_ns / 1e9) AS first_at,
       to_timestamp(s.last_unix_ns / 1e9) AS last_at,
       s.events, s.turns, s.spans_open, s.spans_closed_native, s.spans_recovered,
       s.class, s.reasons, e.content, s.last_unix_ns
FROM harnery.sessions s
JOIN harnery.hosts h USING (host_id)
JOIN harnery.epochs e USING (host_id, genesis_id);

CREATE OR REPLACE VIEW harnery.interrupted_sessions AS
SELECT * FROM harnery.fleet_sessions
WHERE spans_open > 0 OR spans_recovered > 0
   OR reasons && ARRAY['request_not_observed', 'completion_not_observed_before_turn_end',
                       'completion_not_observed_before_next_turn', 'span_cap_pressure',
                       'explicit_end_salvage', 'command_completion_not_observed',
                       'tool_pairing_incomplete', 'command_pairing_incomplete',
                       'end_request_superseded']::text[];

-- A NUL escaped in a stored row (`\u0000`) is not jsonb; it reads as U+2400.
CREATE OR REPLACE VIEW harnery.usage AS
SELECT e.host_id, e.genesis_id, e.adapter, e.session_id, e.event_id, e.type,
       to_timestamp(e.time_unix_ns / 1e9) AS at,
       p ->> 'model' AS model,
       (p ->> 'input_tokens')::bigint AS input_tokens,
       (p ->> 'output_tokens')::bigint AS output_tokens,
       (p ->> 'cache_read_tokens')::bigint AS cache_read_tokens,
       (p ->> 'cache_write_tokens')::bigint AS cache_write_tokens,
       (p ->> 'cost')::numeric AS cost
FROM harnery.events e
CROSS JOIN LATERAL (SELECT replace(convert_from(e.json, 'UTF8'), '\u0000', '␀')::jsonb -> 'payload' AS p) j
WHERE e.type = 'usage.reported';

-- Least privilege: a host inserts its own rows and reads only its own
-- hosts/epochs rows (the resume point comes from `ship_head`); a reader
-- reads everything and writes nothing.
REVOKE ALL ON ALL TABLES IN SCHEMA harnery FROM PUBLIC;
GRANT USAGE ON SCHEMA harnery TO harnery_host, harnery_reader;
GRANT SELECT ON ALL TABLES IN SCHEMA harnery TO harnery_reader;
GRANT SELECT ON harnery.schema_migrations TO harnery_host;
GRANT SELECT, INSERT ON harnery.hosts TO harnery_host;
GRANT UPDATE (hostname, last_ship, sign_key) ON harnery.hosts TO harnery_host;
GRANT SELECT, INSERT ON harnery.epochs TO harnery_host;
GRANT UPDATE (live, events, derived_events, content, head_link, head_sig) ON harnery.epochs TO harnery_host;
GRANT INSERT ON harnery.events, harnery.sessions, harnery.spans, harnery.receipts TO harnery_host;
GRANT SELECT ON harnery.host_roles TO harnery_host;
GRANT UPDATE (host_id) ON harnery.host_roles TO harnery_host;
"#;

/// Version 3: one count per model call. A call the agent reported more
/// than once (a `--fork-session` copies its parent's messages, ids and
/// all; hosts may ship the same session twice after a restore) is counted
/// at its first appearance by time, across hosts and epochs, and its
/// copies are marked `inherited`. A `usage.reported` row without tokens
/// (Claude Code's running cost) adds its cost but is not a call.
const USAGE_ONCE: &str = r#"
DROP VIEW harnery.usage_by_day_model;
DROP VIEW harnery.usage;
CREATE VIEW harnery.usage AS
SELECT host_id, genesis_id, adapter, session_id, event_id, type, at, model,
       input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost,
       message_id,
       message_id IS NOT NULL AND row_number() OVER (
           PARTITION BY adapter, coalesce(message_id, host_id || '/' || genesis_id || '/' || seq)
           ORDER BY time_unix_ns, host_id, genesis_id, seq) > 1 AS inherited
FROM (
    SELECT e.host_id, e.genesis_id, e.seq, e.adapter, e.session_id, e.event_id, e.type,
           e.time_unix_ns, to_timestamp(e.time_unix_ns / 1e9) AS at,
           p ->> 'model' AS model,
           (p ->> 'input_tokens')::bigint AS input_tokens,
           (p ->> 'output_tokens')::bigint AS output_tokens,
           (p ->> 'cache_read_tokens')::bigint AS cache_read_tokens,
           (p ->> 'cache_write_tokens')::bigint AS cache_write_tokens,
           (p ->> 'cost')::numeric AS cost,
           p ->> 'message_id' AS message_id
    FROM harnery.events e
    CROSS JOIN LATERAL (SELECT replace(convert_from(e.json, 'UTF8'), '\u0000', '␀')::jsonb -> 'payload' AS p) j
    WHERE e.type = 'usage.reported'
) r;

CREATE VIEW harnery.usage_by_day_model AS
SELECT date_trunc('day', u.at) AS day, coalesce(u.model, '(unknown)') AS model,
       u.host_id,
       count(*) FILTER (WHERE NOT u.inherited AND num_nonnulls(u.input_tokens, u.output_tokens,
           u.cache_read_tokens, u.cache_write_tokens) > 0) AS records,
       sum(u.input_tokens) FILTER (WHERE NOT u.inherited) AS input_tokens,
       sum(u.output_tokens) FILTER (WHERE NOT u.inherited) AS output_tokens,
       sum(u.cache_read_tokens) FILTER (WHERE NOT u.inherited) AS cache_read_tokens,
       sum(u.cache_write_tokens) FILTER (WHERE NOT u.inherited) AS cache_write_tokens,
       sum(u.cost) FILTER (WHERE NOT u.inherited) AS cost
FROM harnery.usage u
GROUP BY 1, 2, 3;

GRANT SELECT ON harnery.usage, harnery.usage_by_day_model TO harnery_reader;
"#;

/// The temporary tables a host role copies into (a host role may not
/// read the tables, so `LIKE` is not open to it).
pub(crate) const SHIP_TEMP_TABLES: &str = r#"
CREATE TEMP TABLE IF NOT EXISTS ship_events (
    host_id text, genesis_id text, seq bigint, event_id text, adapter text, session_id text,
    event_offset bigint, type text, time_unix_ns bigint, content text, masked text[], json bytea,
    link bytea, commit bytea
) ON COMMIT DELETE ROWS;
CREATE TEMP TABLE IF NOT EXISTS ship_sessions (
    host_id text, genesis_id text, adapter text, session_id text, first_unix_ns bigint,
    last_unix_ns bigint, events bigint, turns bigint, spans_open bigint, spans_closed_native bigint,
    spans_recovered bigint, class text, reasons text[], title text, project text
) ON COMMIT DELETE ROWS;
CREATE TEMP TABLE IF NOT EXISTS ship_spans (
    host_id text, genesis_id text, adapter text, session_id text, request_event_id text, kind text,
    name text, tool_call_id text, agent_id text, turn_id text, requested_unix_ns bigint, state text,
    reason text, completed_event_id text, outcome text, duration_ms bigint, completed_unix_ns bigint
) ON COMMIT DELETE ROWS;
CREATE TEMP TABLE IF NOT EXISTS ship_receipts (
    host_id text, genesis_id text, adapter text, session_id text, turn_index integer, turn_id text,
    turn_source text, started_unix_ns bigint, ended_unix_ns bigint, wall_ms bigint, spans bigint,
    closed bigint, recovered bigint, open bigint, known_ms bigint, upper_bound_ms bigint,
    bounds_unknown bigint, upper_bound_share_pct double precision, eligible_for_ranking boolean,
    ineligible_because text[], notes text[]
) ON COMMIT DELETE ROWS;
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
        "the server's harnery schema is at version {server}, older than this build's ({known}); an administrator upgrades it with `harnery fleet init --url URL` (or a `harnery ship` as the administrator)"
    )]
    Behind { server: i32, known: i32 },
    #[error("migrating the central schema: {source}{}", hint(.source))]
    Db {
        #[from]
        source: postgres::Error,
    },
}

fn hint(e: &postgres::Error) -> &'static str {
    match e.code() == Some(&postgres::error::SqlState::INSUFFICIENT_PRIVILEGE) {
        true => {
            "; an administrator runs `harnery fleet init --url URL` to create or upgrade the schema"
        }
        false => "",
    }
}

/// This build's newest schema version.
pub fn known_version() -> i32 {
    MIGRATIONS.last().map_or(0, |m| m.0)
}

/// Apply every migration the server lacks, in one transaction under the
/// migration lock; refuse a server that is ahead of this build.
pub(crate) fn migrate(client: &mut Client) -> Result<i32, SchemaError> {
    // Up to date: nothing to do, and nothing a host role may not do.
    if check(client).is_ok() {
        return Ok(known_version());
    }
    migrate_to(client, known_version())
}

/// Apply the migrations up to `upto` (tests make an earlier build's
/// schema with it).
pub fn migrate_to(client: &mut Client, upto: i32) -> Result<i32, SchemaError> {
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
    for (version, name, sql) in MIGRATIONS[applied.len()..].iter().filter(|m| m.0 <= upto) {
        tx.batch_execute(sql)?;
        after_migration(&mut tx, *version)?;
        tx.execute(
            "INSERT INTO harnery.schema_migrations (version, name) VALUES ($1, $2)",
            &[version, name],
        )?;
    }
    tx.commit()?;
    Ok(upto.max(applied.last().map_or(0, |a| a.0)))
}

/// For the reads: the server's schema must be exactly this build's.
pub(crate) fn check(client: &mut Client) -> Result<(), SchemaError> {
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
