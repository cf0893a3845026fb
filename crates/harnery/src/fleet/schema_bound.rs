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
//! - `usage` marks a call `inherited` only against an earlier call of the
//!   same host: a host whose rows reuse another host's message ids cannot
//!   change that host's figures.
//! - From this version on, ship sends event ids and stamped turn ids keyed
//!   with the host's ship key (`fleet::ids`). The rows shipped before
//!   carry the ids unkeyed, which let anyone holding them test guesses of
//!   masked text; the links cover those ids, so the rows cannot be
//!   rewritten in place. They move to `events_v4` (readable by the
//!   administrator only; drop it once the hosts have shipped again), the
//!   epochs and the rows derived from them are emptied, and every host
//!   ships its epochs again from row 1 on its next run.

/// The migration's SQL.
pub const BOUND: &str = r#"
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
CREATE VIEW harnery.usage AS
SELECT host_id, genesis_id, adapter, session_id, event_id, type, at, model,
       input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost,
       message_id,
       message_id IS NOT NULL AND row_number() OVER (
           PARTITION BY host_id, adapter, coalesce(message_id, genesis_id || '/' || seq)
           ORDER BY time_unix_ns, genesis_id, seq) > 1 AS inherited
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
