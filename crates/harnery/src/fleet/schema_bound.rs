//! Migration 5: every row tied to an epoch its host registered, no host's
//! rows in another host's figures, and ids that commit to nothing masked.
//!
//! - A host role talks SQL directly, so the server itself refuses a row it
//!   cannot tie to a registered epoch: foreign keys from `events`,
//!   `sessions`, `spans`, `receipts` and `search_text` to `epochs`.
//!   `fleet verify` reads every registered epoch, so nothing is left that
//!   it never looks at, and it names a search text without its event row.
//!   (A key from `search_text` to the partitioned `events` would cost a
//!   ship four times its key to `epochs`: 3.4 s more per 18,000 search
//!   rows, measured.)
//! - `usage` marks a call `inherited` only where it provably is a copy,
//!   as `harnery usage` does on the host (`report::usage_calls`): its row
//!   names its source session (a fork's copy), or an earlier row of the
//!   same host reported the call first in this session or in one it
//!   descends from (through forks and `restore --apply` links). Unrelated
//!   sessions sharing a message id each keep their tokens, and a host
//!   whose rows reuse another host's ids cannot change that host's
//!   figures. A fork's or restore's first cost report (Claude Code's cost
//!   line is cumulative) is its own part only. `usage_by_session` sums
//!   per session, as `harnery usage` groups by default.
//! - From this version on, ship sends event ids and stamped turn ids keyed
//!   with the host's ship key (`fleet::ids`). The rows shipped before
//!   carry the ids unkeyed, which let anyone holding them test guesses of
//!   masked text; the links cover those ids, so the rows cannot be
//!   rewritten in place. They move to `events_v4` (readable by the
//!   administrator only; drop it once the hosts have shipped again), the
//!   epochs and the rows derived from them are emptied, and every host
//!   ships its epochs again from row 1 on its next run.

/// The migration's SQL.
pub(crate) const BOUND: &str = r#"
CREATE TABLE harnery.events_v4 AS SELECT * FROM harnery.events;
REVOKE ALL ON harnery.events_v4 FROM PUBLIC;
TRUNCATE harnery.search_text, harnery.events, harnery.sessions, harnery.spans, harnery.receipts;
DELETE FROM harnery.epochs;

ALTER TABLE harnery.events ADD CONSTRAINT events_epoch
    FOREIGN KEY (host_id, genesis_id) REFERENCES harnery.epochs (host_id, genesis_id);
ALTER TABLE harnery.sessions ADD CONSTRAINT sessions_epoch
    FOREIGN KEY (host_id, genesis_id) REFERENCES harnery.epochs (host_id, genesis_id);
ALTER TABLE harnery.spans ADD CONSTRAINT spans_epoch
    FOREIGN KEY (host_id, genesis_id) REFERENCES harnery.epochs (host_id, genesis_id);
ALTER TABLE harnery.receipts ADD CONSTRAINT receipts_epoch
    FOREIGN KEY (host_id, genesis_id) REFERENCES harnery.epochs (host_id, genesis_id);
ALTER TABLE harnery.search_text ADD CONSTRAINT search_text_epoch
    FOREIGN KEY (host_id, genesis_id) REFERENCES harnery.epochs (host_id, genesis_id);

DROP VIEW harnery.usage_by_day_model;
DROP VIEW harnery.usage;
-- One host's usage reports and restore links, each row's payload read once.
CREATE VIEW harnery.usage AS
WITH RECURSIVE rows AS (
    SELECT e.host_id, e.genesis_id, e.seq, e.adapter, e.session_id, e.event_id, e.type,
           e.time_unix_ns, p
    FROM harnery.events e
    CROSS JOIN LATERAL (SELECT replace(convert_from(e.json, 'UTF8'), '\u0000', '␀')::jsonb -> 'payload' AS p) j
    WHERE e.type IN ('usage.reported', 'checkpoint.recorded')
),
-- Each session's parent on its host, where it is a copy of one: a fork's
-- copied lines name their source session; a `restore --apply` session's
-- checkpoint links it (`<adapter>/<parent>@<checkpoint>`). The first said wins.
links AS (
    SELECT DISTINCT ON (host_id, adapter, session_id) host_id, adapter, session_id, parent, fork
    FROM (
        SELECT host_id, adapter, session_id, p ->> 'copied_from_session' AS parent, true AS fork,
               time_unix_ns, genesis_id, seq
        FROM rows
        WHERE type = 'usage.reported' AND p ->> 'copied_from_session' IS NOT NULL
        UNION ALL
        SELECT r.host_id, r.adapter, r.session_id,
               substr(split_part(x ->> 'ref', '@', 1), length(r.adapter) + 2), false,
               r.time_unix_ns, r.genesis_id, r.seq
        FROM rows r
        CROSS JOIN LATERAL jsonb_array_elements(CASE jsonb_typeof(r.p -> 'effects')
            WHEN 'array' THEN r.p -> 'effects' ELSE '[]'::jsonb END) x
        WHERE r.type = 'checkpoint.recorded' AND x ->> 'kind' = 'restored_from'
          AND starts_with(x ->> 'ref', r.adapter || '/')
          AND length(split_part(x ->> 'ref', '@', 1)) > length(r.adapter) + 1
    ) l
    ORDER BY host_id, adapter, session_id, time_unix_ns, genesis_id, seq
),
ancestors AS (
    SELECT host_id, adapter, session_id, parent AS ancestor, 1 AS depth FROM links
    UNION
    SELECT a.host_id, a.adapter, a.session_id, l.parent, a.depth + 1
    FROM ancestors a
    JOIN links l ON l.host_id = a.host_id AND l.adapter = a.adapter AND l.session_id = a.ancestor
    WHERE a.depth < 64
),
reports AS (
    SELECT r.host_id, r.genesis_id, r.seq, r.adapter, r.session_id, r.event_id, r.type,
           r.time_unix_ns,
           p ->> 'model' AS model,
           (p ->> 'input_tokens')::bigint AS input_tokens,
           (p ->> 'output_tokens')::bigint AS output_tokens,
           (p ->> 'cache_read_tokens')::bigint AS cache_read_tokens,
           (p ->> 'cache_write_tokens')::bigint AS cache_write_tokens,
           (p ->> 'reasoning_tokens')::bigint AS reasoning_tokens,
           (p ->> 'cost')::numeric AS reported_cost,
           p ->> 'message_id' AS message_id,
           p ->> 'copied_from_session' AS copied_from_session
    FROM rows r
    WHERE r.type = 'usage.reported'
),
judged AS (
    SELECT r.*,
           num_nonnulls(input_tokens, output_tokens, cache_read_tokens, cache_write_tokens,
                        reasoning_tokens) = 0 AND reported_cost IS NOT NULL AS cost_only,
           row_number() OVER call AS nth,
           first_value(coalesce(copied_from_session, session_id)) OVER call AS first_session
    FROM reports r
    WINDOW call AS (PARTITION BY host_id, adapter, coalesce(message_id, genesis_id || '/' || seq)
                    ORDER BY time_unix_ns, genesis_id, seq)
),
kin AS (
    SELECT DISTINCT host_id, adapter, session_id, ancestor FROM ancestors
),
-- Cost-only rows (Claude Code's running cost, what it grew by) with each
-- session's running total per model.
costs AS (
    SELECT j.host_id, j.genesis_id, j.seq, j.adapter, j.session_id, j.model, j.time_unix_ns,
           j.reported_cost,
           sum(reported_cost) OVER own AS running,
           row_number() OVER own AS cost_nth
    FROM judged j
    WHERE cost_only AND model IS NOT NULL
    WINDOW own AS (PARTITION BY host_id, adapter, session_id, model
                   ORDER BY time_unix_ns, genesis_id, seq)
),
-- A copy's first cost report against its parent's running totals then:
-- a fork's is cumulative from the parent's last total; a restored
-- session's may be a copy of one of them.
first_costs AS (
    SELECT c.host_id, c.genesis_id, c.seq, l.fork,
           CASE WHEN l.fork THEN greatest(c.reported_cost - coalesce(
                    (array_agg(pc.running ORDER BY pc.time_unix_ns DESC, pc.genesis_id DESC,
                               pc.seq DESC))[1], 0), 0)
                WHEN bool_or(abs(pc.running - c.reported_cost) < 1e-9) THEN 0
                ELSE c.reported_cost END AS own_cost
    FROM costs c
    JOIN links l ON l.host_id = c.host_id AND l.adapter = c.adapter AND l.session_id = c.session_id
    LEFT JOIN costs pc ON pc.host_id = c.host_id AND pc.adapter = c.adapter
         AND pc.session_id = l.parent AND pc.model = c.model AND pc.time_unix_ns <= c.time_unix_ns
    WHERE c.cost_nth = 1
    GROUP BY c.host_id, c.genesis_id, c.seq, l.fork, c.reported_cost
)
SELECT j.host_id, j.genesis_id, j.adapter, j.session_id, j.event_id, j.type,
       to_timestamp(j.time_unix_ns / 1e9) AS at, j.model,
       j.input_tokens, j.output_tokens, j.cache_read_tokens, j.cache_write_tokens,
       coalesce(f.own_cost, j.reported_cost) AS cost,
       j.message_id,
       j.copied_from_session IS NOT NULL OR (j.message_id IS NOT NULL AND j.nth > 1 AND (
           j.first_session = j.session_id OR k.ancestor IS NOT NULL)) AS inherited,
       j.reasoning_tokens, j.reported_cost, j.copied_from_session, j.cost_only
FROM judged j
LEFT JOIN first_costs f ON f.host_id = j.host_id AND f.genesis_id = j.genesis_id AND f.seq = j.seq
LEFT JOIN kin k ON k.host_id = j.host_id AND k.adapter = j.adapter
     AND k.session_id = j.session_id AND k.ancestor = j.first_session;

-- A token kind counts zero where only inherited rows reported it, and is
-- absent only where no row did; a cost-only row (Claude Code's running
-- cost) adds its cost but is not a call.
CREATE VIEW harnery.usage_by_day_model AS
SELECT date_trunc('day', u.at) AS day, coalesce(u.model, '(unknown)') AS model,
       u.host_id,
       count(*) FILTER (WHERE NOT u.inherited AND NOT u.cost_only) AS records,
       CASE WHEN count(u.input_tokens) > 0
            THEN coalesce(sum(u.input_tokens) FILTER (WHERE NOT u.inherited), 0) END AS input_tokens,
       CASE WHEN count(u.output_tokens) > 0
            THEN coalesce(sum(u.output_tokens) FILTER (WHERE NOT u.inherited), 0) END AS output_tokens,
       CASE WHEN count(u.cache_read_tokens) > 0
            THEN coalesce(sum(u.cache_read_tokens) FILTER (WHERE NOT u.inherited), 0) END AS cache_read_tokens,
       CASE WHEN count(u.cache_write_tokens) > 0
            THEN coalesce(sum(u.cache_write_tokens) FILTER (WHERE NOT u.inherited), 0) END AS cache_write_tokens,
       sum(u.cost) FILTER (WHERE NOT u.inherited) AS cost,
       count(*) FILTER (WHERE u.inherited) AS inherited_records
FROM harnery.usage u
GROUP BY 1, 2, 3;

CREATE VIEW harnery.usage_by_session AS
SELECT u.host_id, u.adapter, u.session_id,
       count(*) FILTER (WHERE NOT u.inherited AND NOT u.cost_only) AS records,
       CASE WHEN count(u.input_tokens) > 0
            THEN coalesce(sum(u.input_tokens) FILTER (WHERE NOT u.inherited), 0) END AS input_tokens,
       CASE WHEN count(u.output_tokens) > 0
            THEN coalesce(sum(u.output_tokens) FILTER (WHERE NOT u.inherited), 0) END AS output_tokens,
       CASE WHEN count(u.cache_read_tokens) > 0
            THEN coalesce(sum(u.cache_read_tokens) FILTER (WHERE NOT u.inherited), 0) END AS cache_read_tokens,
       CASE WHEN count(u.cache_write_tokens) > 0
            THEN coalesce(sum(u.cache_write_tokens) FILTER (WHERE NOT u.inherited), 0) END AS cache_write_tokens,
       sum(u.cost) FILTER (WHERE NOT u.inherited) AS cost,
       count(*) FILTER (WHERE u.inherited) AS inherited_records,
       max(u.at) AS last_at
FROM harnery.usage u
GROUP BY 1, 2, 3;

GRANT SELECT ON harnery.usage, harnery.usage_by_day_model, harnery.usage_by_session TO harnery_reader;
"#;
