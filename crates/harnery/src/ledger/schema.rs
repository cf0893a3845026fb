//! The ledger's SQL schema as append-only, timestamp-named migrations.
//! A shipped migration is never edited; a change is a new entry at the end.

use rusqlite::{Connection, params};

use super::LedgerError;

/// Every migration, in order. Names are UTC timestamps plus a slug.
const MIGRATIONS: &[(&str, &str)] = &[
    ("20261130T0130Z_initial", INITIAL),
    ("20261130T0300Z_local_keys", LOCAL_KEYS),
    ("20261130T0400Z_raw_archive", RAW_ARCHIVE),
    ("20261130T0415Z_span_state_check", SPAN_STATE_CHECK),
    ("20261130T0600Z_event_id_check", EVENT_ID_CHECK),
    ("20261130T0700Z_open_span_index", OPEN_SPAN_INDEX),
    ("20261130T0715Z_session_span_counts", SESSION_SPAN_COUNTS),
    ("20261201T0900Z_session_audit_flags", SESSION_AUDIT_FLAGS),
    ("20261201T1730Z_session_resumes", SESSION_RESUMES),
    ("20261201T1900Z_trace_chunks", TRACE_CHUNKS),
    ("20261202T1600Z_raw_members", RAW_MEMBERS),
    ("20261206T1300Z_session_titles", SESSION_TITLES),
    ("20261206T1600Z_session_usage", SESSION_USAGE),
    ("20261206T1630Z_session_usage_sums", SESSION_USAGE_SUMS),
    ("20261206T2100Z_session_list", SESSION_LIST),
];

/// What the sessions list reads beside a session's row, kept so that it
/// reads no events and no producer state (`ledger::write::session_list`):
/// how many of the session's resumes supersede a range (one after
/// `restore --apply`; while none does, the row's counts and reasons are
/// the list's), and the problem finalize last reported for the session's
/// own record, one row per session that has one. The rows an older build
/// wrote are filled by the first writer to open the epoch, which removes
/// the `session_list` mark from `meta`; until then readers do not trust
/// them.
const SESSION_LIST: &str = r#"
ALTER TABLE sessions ADD COLUMN superseding INTEGER NOT NULL DEFAULT 0;
CREATE TABLE session_records (
    adapter     TEXT NOT NULL,
    session_id  TEXT NOT NULL,
    problem     TEXT NOT NULL,
    PRIMARY KEY (adapter, session_id)
) STRICT, WITHOUT ROWID;
INSERT INTO meta (key, value) VALUES ('session_list', 'pending');
"#;

/// A session's usage summed as `usage --session` counts it
/// (`ledger::write::usage_sums`), so the sessions page prices a session
/// from a few rows instead of its events: token sums and record counts by
/// model, by which token kinds the records reported (bits 0-4: input,
/// output, cache read, cache write, reasoning reported; bits 5-8: the
/// first four not zero) and by whether they were copies (`inherited`);
/// never a price. The session row keeps the sum of the costs the agent
/// reported, in the events' order. The model is `''` with `named` 0 when
/// the records named none. Filled with the usage facts of migration
/// `session_usage`: its mark is set again, so the first writer fills both.
const SESSION_USAGE_SUMS: &str = r#"
CREATE TABLE usage_sums (
    adapter     TEXT NOT NULL,
    session_id  TEXT NOT NULL,
    named       INTEGER NOT NULL CHECK (named IN (0, 1)),
    model       TEXT NOT NULL,
    kinds       INTEGER NOT NULL,
    inherited   INTEGER NOT NULL CHECK (inherited IN (0, 1)),
    records     INTEGER NOT NULL,
    input       INTEGER NOT NULL,
    output      INTEGER NOT NULL,
    cache_read  INTEGER NOT NULL,
    cache_write INTEGER NOT NULL,
    reasoning   INTEGER NOT NULL,
    PRIMARY KEY (adapter, session_id, named, model, kinds, inherited)
) STRICT, WITHOUT ROWID;
ALTER TABLE sessions ADD COLUMN reported_cost REAL;
ALTER TABLE sessions ADD COLUMN cost_records INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN cost_unreadable INTEGER NOT NULL DEFAULT 0;
INSERT OR IGNORE INTO meta (key, value) VALUES ('session_usage', 'pending');
"#;

/// What a session's row keeps so that the list and `usage --session` read
/// no other rows (`ledger::write::session_usage`): the link its first
/// checkpoint names, whether its usage is tied to another session's (1 by
/// a parent, 2 by a call another session reported first: the index says
/// at once whether any session is), and which session reported each model
/// call first. The rows an older build
/// wrote are filled by the first writer to open the epoch, which removes
/// the `session_usage` mark from `meta`; until then readers do not trust
/// them.
const SESSION_USAGE: &str = r#"
ALTER TABLE sessions ADD COLUMN restored_from TEXT;
ALTER TABLE sessions ADD COLUMN usage_tied INTEGER NOT NULL DEFAULT 0 CHECK (usage_tied IN (0, 1, 2));
CREATE INDEX sessions_tied_by_call ON sessions (usage_tied) WHERE usage_tied = 2;
CREATE TABLE usage_calls (
    call    INTEGER PRIMARY KEY,
    session INTEGER NOT NULL
) STRICT;
INSERT INTO meta (key, value) VALUES ('session_usage', 'pending');
"#;

/// What a session is about and where it ran, kept on its row so that a
/// listing never reads its events: its title (the agent's own title or
/// summary where its record has one, else its first prompt), where that
/// title came from (`record` or `prompt`), its working directory, and its
/// project (the git repository root of that directory, else the
/// directory). Null until finalize learns them; the rows an older build
/// wrote are marked `pending`, and the first writer to open the epoch
/// fills them from their events (`ledger::write::titles`).
const SESSION_TITLES: &str = r#"
ALTER TABLE sessions ADD COLUMN title TEXT;
ALTER TABLE sessions ADD COLUMN title_source TEXT CHECK (title_source IN ('record', 'prompt', 'pending'));
ALTER TABLE sessions ADD COLUMN cwd TEXT;
ALTER TABLE sessions ADD COLUMN project TEXT;
UPDATE sessions SET title_source = 'pending';
"#;

/// Every raw archive file as the batch that archived it left it (its name
/// below `raw/`, length and modification time), so that a file missing or
/// rewritten is found before anything is written (`ledger::integrity`).
const RAW_MEMBERS: &str = r#"
CREATE TABLE raw_members (
    batch    TEXT NOT NULL,
    name     TEXT NOT NULL,
    len      INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    PRIMARY KEY (batch, name)
) STRICT, WITHOUT ROWID;
"#;

const INITIAL: &str = r#"
CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) STRICT;

-- The fencing token: bumped by every finalizer that takes the lease; every
-- write transaction checks that its own token is still the current one.
CREATE TABLE incarnation (
    id    INTEGER PRIMARY KEY CHECK (id = 1),
    value INTEGER NOT NULL
) STRICT;
INSERT INTO incarnation (id, value) VALUES (1, 0);

CREATE TABLE events (
    seq          INTEGER PRIMARY KEY,
    id           TEXT NOT NULL UNIQUE,
    adapter      TEXT NOT NULL,
    session_id   TEXT NOT NULL,
    offset       INTEGER NOT NULL,
    type         TEXT NOT NULL,
    time_unix_ns INTEGER NOT NULL,
    json         TEXT NOT NULL,
    prev_hash    BLOB NOT NULL,
    hash         BLOB NOT NULL,
    batch        TEXT NOT NULL,
    UNIQUE (adapter, session_id, offset)
) STRICT;

CREATE TABLE sessions (
    adapter       TEXT NOT NULL,
    session_id    TEXT NOT NULL,
    first_unix_ns INTEGER NOT NULL,
    last_unix_ns  INTEGER NOT NULL,
    events        INTEGER NOT NULL,
    turns         INTEGER NOT NULL,
    PRIMARY KEY (adapter, session_id)
) STRICT;

CREATE TABLE spans (
    request_event_id   TEXT PRIMARY KEY,
    adapter            TEXT NOT NULL,
    session_id         TEXT NOT NULL,
    kind               TEXT NOT NULL CHECK (kind IN ('tool', 'command')),
    name               TEXT NOT NULL,
    tool_call_id       TEXT,
    agent_id           TEXT,
    turn_id            TEXT,
    requested_unix_ns  INTEGER,
    state              TEXT NOT NULL CHECK (state IN ('open', 'closed_native', 'recovered')),
    reason             TEXT,
    completed_event_id TEXT,
    outcome            TEXT,
    duration_ms        INTEGER,
    completed_unix_ns  INTEGER
) STRICT;
CREATE INDEX spans_session ON spans (adapter, session_id, state);

CREATE TABLE raw_signals (
    record_digest    TEXT PRIMARY KEY,
    adapter          TEXT NOT NULL,
    session_key      TEXT NOT NULL,
    event_name       TEXT,
    received_unix_ns INTEGER NOT NULL,
    envelope         TEXT NOT NULL,
    payload          BLOB NOT NULL,
    event_ids        TEXT NOT NULL,
    duplicate_of     TEXT,
    batch            TEXT NOT NULL
) STRICT;

CREATE TABLE producer_state (
    adapter    TEXT NOT NULL,
    session_id TEXT NOT NULL,
    state      TEXT NOT NULL,
    batch      TEXT NOT NULL,
    PRIMARY KEY (adapter, session_id)
) STRICT;

CREATE TABLE end_requests (
    end_event_id      TEXT PRIMARY KEY,
    adapter           TEXT NOT NULL,
    session_id        TEXT NOT NULL,
    origin            TEXT NOT NULL,
    reason            TEXT,
    approved_spans    TEXT NOT NULL,
    requested_unix_ns INTEGER NOT NULL,
    state             TEXT NOT NULL CHECK (state IN ('pending', 'salvaged', 'cancelled', 'expired')),
    resolved_event_id TEXT
) STRICT;
CREATE INDEX end_requests_state ON end_requests (state);

CREATE TABLE health (
    event_id     TEXT PRIMARY KEY,
    adapter      TEXT NOT NULL,
    session_id   TEXT NOT NULL,
    code         TEXT NOT NULL,
    detail       TEXT NOT NULL,
    time_unix_ns INTEGER NOT NULL
) STRICT;

-- Exactly-once bookkeeping: a ready batch is applied once; the intake
-- segments it drained are remembered so a rerun never normalizes them twice.
CREATE TABLE applied_batches (
    batch           TEXT PRIMARY KEY,
    incarnation     INTEGER NOT NULL,
    events          INTEGER NOT NULL,
    signals         INTEGER NOT NULL,
    applied_unix_ns INTEGER NOT NULL
) STRICT;

CREATE TABLE drained_segments (
    segment TEXT PRIMARY KEY,
    batch   TEXT NOT NULL
) STRICT;
"#;

/// Hashed keys (event ids, span request ids, record digests) no longer lead
/// a b-tree of their own. A b-tree keyed by a hash takes each insert on a
/// random page, so a batch dirtied (and the WAL rewrote) a page per row once
/// the ledger outgrew the page cache, and appends slowed down as the ledger
/// grew. Event ids and span request ids are now unique within their session
/// (an event id is derived from its session, so a ledger-wide duplicate is
/// a 128-bit hash collision), and record digests within their receive time
/// (a digest covers the receive time): inserts land where the session or
/// the clock already is. Rows keep their order; `spans` gains a rowid.
const LOCAL_KEYS: &str = r#"
CREATE TABLE events_v2 (
    seq          INTEGER PRIMARY KEY,
    id           TEXT NOT NULL,
    adapter      TEXT NOT NULL,
    session_id   TEXT NOT NULL,
    offset       INTEGER NOT NULL,
    type         TEXT NOT NULL,
    time_unix_ns INTEGER NOT NULL,
    json         TEXT NOT NULL,
    prev_hash    BLOB NOT NULL,
    hash         BLOB NOT NULL,
    batch        TEXT NOT NULL,
    UNIQUE (adapter, session_id, offset),
    UNIQUE (adapter, session_id, id)
) STRICT;
INSERT INTO events_v2 SELECT seq, id, adapter, session_id, offset, type, time_unix_ns, json, prev_hash, hash, batch
    FROM events ORDER BY seq;
DROP TABLE events;
ALTER TABLE events_v2 RENAME TO events;

CREATE TABLE spans_v2 (
    seq                INTEGER PRIMARY KEY,
    request_event_id   TEXT NOT NULL,
    adapter            TEXT NOT NULL,
    session_id         TEXT NOT NULL,
    kind               TEXT NOT NULL CHECK (kind IN ('tool', 'command')),
    name               TEXT NOT NULL,
    tool_call_id       TEXT,
    agent_id           TEXT,
    turn_id            TEXT,
    requested_unix_ns  INTEGER,
    state              TEXT NOT NULL CHECK (state IN ('open', 'closed_native', 'recovered')),
    reason             TEXT,
    completed_event_id TEXT,
    outcome            TEXT,
    duration_ms        INTEGER,
    completed_unix_ns  INTEGER,
    UNIQUE (adapter, session_id, request_event_id)
) STRICT;
INSERT INTO spans_v2 (request_event_id, adapter, session_id, kind, name, tool_call_id, agent_id, turn_id,
        requested_unix_ns, state, reason, completed_event_id, outcome, duration_ms, completed_unix_ns)
    SELECT request_event_id, adapter, session_id, kind, name, tool_call_id, agent_id, turn_id,
        requested_unix_ns, state, reason, completed_event_id, outcome, duration_ms, completed_unix_ns
    FROM spans ORDER BY rowid;
DROP TABLE spans;
ALTER TABLE spans_v2 RENAME TO spans;
CREATE INDEX spans_session ON spans (adapter, session_id, state);

CREATE TABLE raw_signals_v2 (
    seq              INTEGER PRIMARY KEY,
    record_digest    TEXT NOT NULL,
    adapter          TEXT NOT NULL,
    session_key      TEXT NOT NULL,
    event_name       TEXT,
    received_unix_ns INTEGER NOT NULL,
    envelope         TEXT NOT NULL,
    payload          BLOB NOT NULL,
    event_ids        TEXT NOT NULL,
    duplicate_of     TEXT,
    batch            TEXT NOT NULL,
    UNIQUE (received_unix_ns, record_digest)
) STRICT;
INSERT INTO raw_signals_v2 (record_digest, adapter, session_key, event_name, received_unix_ns, envelope,
        payload, event_ids, duplicate_of, batch)
    SELECT record_digest, adapter, session_key, event_name, received_unix_ns, envelope,
        payload, event_ids, duplicate_of, batch
    FROM raw_signals ORDER BY rowid;
DROP TABLE raw_signals;
ALTER TABLE raw_signals_v2 RENAME TO raw_signals;
"#;

/// Raw signal bytes move out of SQLite into the raw archive (`raw/`
/// beside the database, see `ledger::raw`): a new row names its record by
/// byte offset (`archive_at`) in its batch's archive file, and keeps only
/// the envelope's captured agent environment (`env`), which the read side
/// searches. Rows written before keep their envelope and payload inline;
/// exactly one of the two forms is set. The table is keyed by its one
/// unique key, receive time and record digest, with no rowid: one b-tree
/// per row inserted instead of a table and an index.
const RAW_ARCHIVE: &str = r#"
CREATE TABLE raw_signals_v3 (
    record_digest    TEXT NOT NULL,
    adapter          TEXT NOT NULL,
    session_key      TEXT NOT NULL,
    event_name       TEXT,
    received_unix_ns INTEGER NOT NULL,
    env              TEXT,
    archive_at       INTEGER,
    envelope         TEXT,
    payload          BLOB,
    event_ids        TEXT NOT NULL,
    duplicate_of     TEXT,
    batch            TEXT NOT NULL,
    PRIMARY KEY (received_unix_ns, record_digest),
    CHECK ((archive_at IS NULL) = (payload IS NOT NULL) AND (envelope IS NULL) = (payload IS NULL))
) STRICT, WITHOUT ROWID;
INSERT INTO raw_signals_v3 (record_digest, adapter, session_key, event_name, received_unix_ns, env,
        archive_at, envelope, payload, event_ids, duplicate_of, batch)
    SELECT record_digest, adapter, session_key, event_name, received_unix_ns,
        CASE WHEN json_valid(envelope) AND json_type(envelope, '$.env') = 'object'
                  AND json_extract(envelope, '$.env') != '{}'
             THEN json_extract(envelope, '$.env') END,
        NULL, envelope, payload, event_ids, duplicate_of, batch
    FROM raw_signals ORDER BY seq;
DROP TABLE raw_signals;
ALTER TABLE raw_signals_v3 RENAME TO raw_signals;
"#;

/// A span's state is checked with comparisons instead of an IN list. SQLite
/// compiles an IN list of three or more values into a throwaway b-tree that
/// every INSERT and UPDATE of a span row builds anew, about a third of the
/// cost of writing the row; the comparisons allow exactly the same states.
/// Rows keep their `seq`.
const SPAN_STATE_CHECK: &str = r#"
CREATE TABLE spans_v3 (
    seq                INTEGER PRIMARY KEY,
    request_event_id   TEXT NOT NULL,
    adapter            TEXT NOT NULL,
    session_id         TEXT NOT NULL,
    kind               TEXT NOT NULL CHECK (kind IN ('tool', 'command')),
    name               TEXT NOT NULL,
    tool_call_id       TEXT,
    agent_id           TEXT,
    turn_id            TEXT,
    requested_unix_ns  INTEGER,
    state              TEXT NOT NULL
        CHECK (state = 'open' OR state = 'closed_native' OR state = 'recovered'),
    reason             TEXT,
    completed_event_id TEXT,
    outcome            TEXT,
    duration_ms        INTEGER,
    completed_unix_ns  INTEGER,
    UNIQUE (adapter, session_id, request_event_id)
) STRICT;
INSERT INTO spans_v3 (seq, request_event_id, adapter, session_id, kind, name, tool_call_id, agent_id, turn_id,
        requested_unix_ns, state, reason, completed_event_id, outcome, duration_ms, completed_unix_ns)
    SELECT seq, request_event_id, adapter, session_id, kind, name, tool_call_id, agent_id, turn_id,
        requested_unix_ns, state, reason, completed_event_id, outcome, duration_ms, completed_unix_ns
    FROM spans ORDER BY seq;
DROP TABLE spans;
ALTER TABLE spans_v3 RENAME TO spans;
CREATE INDEX spans_session ON spans (adapter, session_id, state);
"#;

/// Event ids are no longer kept unique by an index of their own. An id is
/// derived from its session and offset (see `session::emit`),
/// and (session, offset) stays unique, so the index only restated that
/// rule, at the price of a third b-tree insert, keyed by long strings, for
/// every event. `harnery validate` checks that ids are unique instead.
/// Rows keep their `seq`.
const EVENT_ID_CHECK: &str = r#"
CREATE TABLE events_v3 (
    seq          INTEGER PRIMARY KEY,
    id           TEXT NOT NULL,
    adapter      TEXT NOT NULL,
    session_id   TEXT NOT NULL,
    offset       INTEGER NOT NULL,
    type         TEXT NOT NULL,
    time_unix_ns INTEGER NOT NULL,
    json         TEXT NOT NULL,
    prev_hash    BLOB NOT NULL,
    hash         BLOB NOT NULL,
    batch        TEXT NOT NULL,
    UNIQUE (adapter, session_id, offset)
) STRICT;
INSERT INTO events_v3 SELECT seq, id, adapter, session_id, offset, type, time_unix_ns, json, prev_hash, hash, batch
    FROM events ORDER BY seq;
DROP TABLE events;
ALTER TABLE events_v3 RENAME TO events;
"#;

/// Only open spans are indexed by their session and tool call. The one
/// lookup that needs more than the `UNIQUE (adapter, session_id,
/// request_event_id)` key finds the oldest open span of a call; the index by
/// (session, state) that served it held every span, and almost every span
/// is written closed, so each span insert paid a third b-tree for nothing.
/// Per-session span counts use the unique key's session prefix instead.
const OPEN_SPAN_INDEX: &str = r#"
DROP INDEX spans_session;
CREATE INDEX spans_open_calls ON spans (adapter, session_id, tool_call_id) WHERE state = 'open';
"#;

/// Each session row keeps its span counts by state, maintained as spans
/// are written and closed, so listing sessions, and every finalize run's
/// summary, read one row per session instead of every span. Existing rows
/// are counted once here.
const SESSION_SPAN_COUNTS: &str = r#"
ALTER TABLE sessions ADD COLUMN spans_open INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN spans_closed_native INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN spans_recovered INTEGER NOT NULL DEFAULT 0;
UPDATE sessions SET
    spans_open = (SELECT count(*) FROM spans s
        WHERE s.adapter = sessions.adapter AND s.session_id = sessions.session_id AND s.state = 'open'),
    spans_closed_native = (SELECT count(*) FROM spans s
        WHERE s.adapter = sessions.adapter AND s.session_id = sessions.session_id AND s.state = 'closed_native'),
    spans_recovered = (SELECT count(*) FROM spans s
        WHERE s.adapter = sessions.adapter AND s.session_id = sessions.session_id AND s.state = 'recovered');
"#;

/// Each session row keeps the audit reasons its events carry, as the bits
/// of `contract::eligibility` (recovery reasons 1–32 in `RecoveryReason::ALL`
/// order, late evidence 64, unrecognized signals 128, spool damage 256, a
/// tool terminal without its request 512, a command one 1024), kept as
/// events are appended, so `sessions`, `audit` and `health` classify a
/// session from its row. Existing sessions are filled once here, from their
/// events and span rows (the sum of distinct bits is their union).
const SESSION_AUDIT_FLAGS: &str = r#"
ALTER TABLE sessions ADD COLUMN audit_flags INTEGER NOT NULL DEFAULT 0;
CREATE TEMP TABLE session_bits AS
    SELECT adapter, session_id, CASE
        WHEN type IN ('tool.requested', 'tool.completed', 'command.completed') THEN
            CASE json_extract(json, '$.payload.recovery.reason')
                WHEN 'request_not_observed' THEN 1
                WHEN 'completion_not_observed_before_turn_end' THEN 2
                WHEN 'completion_not_observed_before_next_turn' THEN 4
                WHEN 'span_cap_pressure' THEN 8
                WHEN 'explicit_end_salvage' THEN 16
                WHEN 'command_completion_not_observed' THEN 32
                ELSE 0 END
        WHEN type = 'tool.late_evidence' THEN 64
        WHEN type = 'signal.unrecognized' THEN 128
        WHEN type = 'health.condition'
            AND instr(json_extract(json, '$.payload.code'), 'damage') > 0 THEN 256
        ELSE 0 END AS bit
    FROM events
    WHERE type IN ('tool.requested', 'tool.completed', 'command.completed',
                   'tool.late_evidence', 'signal.unrecognized', 'health.condition')
    UNION
    SELECT adapter, session_id, CASE kind WHEN 'command' THEN 1024 ELSE 512 END
    FROM spans WHERE requested_unix_ns IS NULL;
UPDATE sessions SET audit_flags = (SELECT CAST(total(DISTINCT b.bit) AS INTEGER) FROM session_bits b
    WHERE b.adapter = sessions.adapter AND b.session_id = sessions.session_id);
DROP TABLE session_bits;
"#;

/// Each session row counts the `session.resumed` events it has, kept as
/// events are appended, so a read that leaves superseded ranges out (the
/// audit class of every listed session) asks for a session's resumes only
/// where there are some, instead of reading through all its rows to find
/// none. Existing sessions are counted once here, in one pass over the
/// events.
const SESSION_RESUMES: &str = r#"
ALTER TABLE sessions ADD COLUMN resumes INTEGER NOT NULL DEFAULT 0;
CREATE TEMP TABLE session_resumes AS
    SELECT adapter, session_id, count(*) AS n FROM events
    WHERE type = 'session.resumed' GROUP BY adapter, session_id;
UPDATE sessions SET resumes = (SELECT r.n FROM session_resumes r
    WHERE r.adapter = sessions.adapter AND r.session_id = sessions.session_id)
    WHERE EXISTS (SELECT 1 FROM session_resumes r
        WHERE r.adapter = sessions.adapter AND r.session_id = sessions.session_id);
DROP TABLE session_resumes;
"#;

/// Every event's trace entry (`ledger::trace_rows`), in chunks of at most
/// 256 of a session's events: what an OTLP trace reads of each, so that an
/// export need not parse the event's text. The fill reads an older
/// ledger's rows once (finalize cuts its chunks where its batches cut a
/// session; the fill every 256 offsets). A text that is not JSON, or lacks
/// what an entry holds, gets a `whole` entry (the export then reads the
/// text, and names the row if it is not an event), so no stored row can
/// stop the migration.
const TRACE_CHUNKS: &str = r#"
CREATE TABLE trace_chunks (
    adapter      TEXT NOT NULL,
    session_id   TEXT NOT NULL,
    first_offset INTEGER NOT NULL,
    events       INTEGER NOT NULL,
    notes        INTEGER NOT NULL,
    wholes       TEXT,
    entries      TEXT NOT NULL,
    PRIMARY KEY (adapter, session_id, first_offset)
) STRICT, WITHOUT ROWID;
CREATE INDEX trace_chunk_notes ON trace_chunks (adapter, session_id) WHERE notes > 0;
INSERT INTO trace_chunks (adapter, session_id, first_offset, events, notes, wholes, entries)
    SELECT adapter, session_id, min(offset), count(*), sum(part = 'note'),
        CASE WHEN sum(part = 'whole') > 0
             THEN json_group_array(seq ORDER BY offset) FILTER (WHERE part = 'whole') END,
        json_group_array(json(entry) ORDER BY offset)
    FROM (SELECT adapter, session_id, offset, seq, part,
        (row_number() OVER (PARTITION BY adapter, session_id ORDER BY offset) - 1) / 256 AS chunk,
        CASE part
        WHEN 'whole' THEN json_array(offset, seq, time_unix_ns, part)
        WHEN 'tool_requested' THEN json_array(offset, seq, time_unix_ns, part,
            json_extract(json, '$.turn.source'), json_extract(json, '$.turn.turn_id'),
            json_extract(json, '$.provenance.attestation'), id,
            json_extract(json, '$.payload.tool_call_id'), json_extract(json, '$.payload.tool_name'))
        WHEN 'tool_completed' THEN json_array(offset, seq, time_unix_ns, part,
            json_extract(json, '$.turn.source'), json_extract(json, '$.turn.turn_id'),
            json_extract(json, '$.provenance.attestation'), id,
            json_extract(json, '$.payload.tool_call_id'), json_extract(json, '$.payload.tool_name'),
            json_extract(json, '$.payload.requested_event_id'), json_extract(json, '$.payload.outcome'),
            json_extract(json, '$.payload.duration_ms.observed'),
            json_extract(json, '$.payload.duration_ms.unknown'))
        ELSE json_array(offset, seq, time_unix_ns, part,
            json_extract(json, '$.turn.source'), json_extract(json, '$.turn.turn_id'),
            json_extract(json, '$.provenance.attestation'))
        END AS entry
        FROM (SELECT adapter, session_id, offset, seq, time_unix_ns, id, json, CASE
            WHEN NOT json_valid(json) THEN 'whole'
            WHEN json_type(json, '$.turn.source') IS NOT 'text'
                OR json_type(json, '$.provenance.attestation') IS NOT 'text' THEN 'whole'
            WHEN type IN ('command.requested', 'command.completed', 'usage.reported') THEN 'whole'
            WHEN type = 'tool.requested' THEN
                CASE WHEN coalesce(json_type(json, '$.payload.recovery'), 'null') = 'null'
                     THEN 'tool_requested' ELSE 'whole' END
            WHEN type = 'tool.completed' THEN
                CASE WHEN coalesce(json_type(json, '$.payload.recovery'), 'null') = 'null'
                      AND coalesce(json_type(json, '$.payload.error'), 'null') = 'null'
                     THEN 'tool_completed' ELSE 'whole' END
            WHEN type = 'turn.started' THEN 'turn_started'
            WHEN type = 'turn.completed' THEN 'turn_completed'
            WHEN type IN ('tool.recorded', 'tool.late_evidence') THEN 'note'
            ELSE 'mark' END AS part
            FROM events))
    GROUP BY adapter, session_id, chunk;
"#;

/// Whether some migration of this build is not yet recorded in `conn`'s
/// database (a ledger written by an older build).
pub(crate) fn behind(conn: &Connection) -> Result<bool, LedgerError> {
    let has_table: bool = conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'migrations')",
        [],
        |r| r.get(0),
    )?;
    if !has_table {
        return Ok(true);
    }
    let applied: i64 = conn.query_row("SELECT count(*) FROM migrations", [], |r| r.get(0))?;
    Ok(applied < MIGRATIONS.len() as i64)
}

/// Apply every migration not yet recorded, each in its own transaction.
pub(crate) fn migrate(conn: &mut Connection, now_unix_ns: i64) -> Result<(), LedgerError> {
    apply(conn, MIGRATIONS, now_unix_ns)
}

fn apply(
    conn: &mut Connection,
    migrations: &[(&str, &str)],
    now_unix_ns: i64,
) -> Result<(), LedgerError> {
    conn.execute_batch(
        "CREATE TABLE IF NOT EXISTS migrations (name TEXT PRIMARY KEY, applied_unix_ns INTEGER NOT NULL) STRICT;",
    )?;
    for (name, sql) in migrations {
        // Checked under the write lock: two processes opening an old ledger
        // at once (a finalizer and a reader) apply each migration once.
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        let done: bool = tx.query_row(
            "SELECT EXISTS (SELECT 1 FROM migrations WHERE name = ?1)",
            [name],
            |r| r.get(0),
        )?;
        if done {
            continue;
        }
        tx.execute_batch(sql)?;
        tx.execute(
            "INSERT INTO migrations (name, applied_unix_ns) VALUES (?1, ?2)",
            params![name, now_unix_ns],
        )?;
        tx.commit()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
