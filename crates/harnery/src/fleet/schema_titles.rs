//! Migration 6: each shipped session's title and project (see `harnery
//! sessions`), as `ship --content` lets them leave the host: as recorded
//! (`full`), with their secrets masked (`masked`, the default), or not at
//! all (`none`: a title is the user's prompt, a project a path). Sessions
//! shipped before it have neither until their epoch's derived rows are
//! sent again (the next ship after the epoch gains a row). The views
//! gain both columns at their end.

/// The migration's SQL.
pub(crate) const TITLES: &str = r#"
ALTER TABLE harnery.sessions ADD COLUMN title text, ADD COLUMN project text;

CREATE OR REPLACE VIEW harnery.fleet_sessions AS
SELECT s.host_id, h.hostname, s.genesis_id, e.live, s.adapter, s.session_id,
       to_timestamp(s.first_unix_ns / 1e9) AS first_at,
       to_timestamp(s.last_unix_ns / 1e9) AS last_at,
       s.events, s.turns, s.spans_open, s.spans_closed_native, s.spans_recovered,
       s.class, s.reasons, e.content, s.last_unix_ns, s.title, s.project
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
"#;
