//! Read queries: sessions, a session's events in offset order, all events
//! streamed in chain order (parsed, or as their stored text), spans,
//! pending end requests and health rows.

use rusqlite::{OptionalExtension, Row, params};
use serde::Serialize;

use super::{Ledger, LedgerError};
use crate::contract::eligibility::{
    AuditFlags, COMMAND_PAIRING_INCOMPLETE, TOOL_PAIRING_INCOMPLETE,
};
use crate::contract::{AdapterId, Event, EventType, SessionRef};

/// The three states a span can be in (ADR 0078).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SpanState {
    Open,
    ClosedNative,
    Recovered,
}

impl SpanState {
    pub fn as_str(self) -> &'static str {
        match self {
            SpanState::Open => "open",
            SpanState::ClosedNative => "closed_native",
            SpanState::Recovered => "recovered",
        }
    }

    pub(super) fn parse(s: &str) -> SpanState {
        match s {
            "closed_native" => SpanState::ClosedNative,
            "recovered" => SpanState::Recovered,
            _ => SpanState::Open,
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct SpanCounts {
    pub open: u64,
    pub closed_native: u64,
    pub recovered: u64,
}

impl SpanCounts {
    pub fn add(&mut self, state: SpanState, n: u64) {
        match state {
            SpanState::Open => self.open += n,
            SpanState::ClosedNative => self.closed_native += n,
            SpanState::Recovered => self.recovered += n,
        }
    }

    pub fn total(&self) -> u64 {
        self.open + self.closed_native + self.recovered
    }
}

/// One line of `harnery sessions`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SessionSummary {
    pub session: SessionRef,
    pub first_unix_ns: i64,
    pub last_unix_ns: i64,
    pub events: u64,
    pub turns: u64,
    pub spans: SpanCounts,
}

/// A tool or command span, derived from its request and terminal events.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SpanRow {
    pub request_event_id: String,
    pub session: SessionRef,
    /// `tool` or `command`.
    pub kind: String,
    pub name: String,
    pub tool_call_id: Option<String>,
    pub agent_id: Option<String>,
    pub turn_id: Option<String>,
    pub requested_unix_ns: Option<i64>,
    pub state: SpanState,
    /// The recovery reason of either side of the span, if any.
    pub reason: Option<String>,
    pub completed_event_id: Option<String>,
    pub outcome: Option<String>,
    pub duration_ms: Option<u64>,
    pub completed_unix_ns: Option<i64>,
}

/// An explicit end request and where it stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EndRequestRow {
    pub end_event_id: String,
    pub session: SessionRef,
    pub origin: String,
    pub reason: Option<String>,
    pub approved_spans: Vec<String>,
    pub requested_unix_ns: i64,
    /// pending, salvaged, cancelled or expired.
    pub state: String,
    pub resolved_event_id: Option<String>,
}

/// A `health.condition` recorded in the ledger.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HealthRow {
    pub event_id: String,
    pub session: SessionRef,
    pub code: String,
    pub detail: String,
    pub time_unix_ns: i64,
}

/// An event row a read could not use, named where a user can find it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DamagedRow {
    pub seq: i64,
    pub event_id: String,
    pub detail: String,
}

/// One event row as stored: the chain position, the stored text and hash.
#[derive(Debug, Clone)]
pub struct StoredEvent {
    pub seq: i64,
    pub json: String,
    pub hash: Vec<u8>,
    pub event: Event,
}

/// Which event rows a stream yields: one session's (by its offset
/// index, in offset order) or every session's (in chain order), and only
/// those at or after a time. The filters combine.
#[derive(Debug, Clone, Default)]
pub struct RowFilter {
    pub session: Option<SessionRef>,
    pub since_unix_ns: Option<i64>,
}

/// One event row's stored text, borrowed for the length of a callback:
/// nothing is parsed, so a damaged row still arrives, to be judged by
/// whoever reads it.
#[derive(Debug, Clone, Copy)]
pub struct StoredText<'r> {
    pub seq: i64,
    pub id: &'r str,
    pub json: &'r [u8],
}

impl Ledger {
    /// Every session, ordered by first event time then id.
    pub fn sessions(&self) -> Result<Vec<SessionSummary>, LedgerError> {
        // Session rows keep their span counts since migration
        // `session_span_counts`; an archived epoch may predate it, and then
        // each session's spans are counted.
        let kept: bool = self.conn.query_row(
            "SELECT EXISTS (SELECT 1 FROM pragma_table_info('sessions') WHERE name = 'spans_open')",
            [],
            |r| r.get(0),
        )?;
        let counts = if kept {
            "spans_open, spans_closed_native, spans_recovered"
        } else {
            "0, 0, 0"
        };
        let mut stmt = self.conn.prepare(&format!(
            "SELECT adapter, session_id, first_unix_ns, last_unix_ns, events, turns, {counts} \
             FROM sessions ORDER BY first_unix_ns, adapter, session_id"
        ))?;
        let rows = stmt.query([])?;
        let mut out = self.lenient_rows(rows, "sessions", &[0, 1], |r| {
            Ok(SessionSummary {
                session: session_at(r, 0)?,
                first_unix_ns: r.get(2)?,
                last_unix_ns: r.get(3)?,
                events: r.get::<_, i64>(4)? as u64,
                turns: r.get::<_, i64>(5)? as u64,
                spans: SpanCounts {
                    open: r.get::<_, i64>(6)? as u64,
                    closed_native: r.get::<_, i64>(7)? as u64,
                    recovered: r.get::<_, i64>(8)? as u64,
                },
            })
        })?;
        if !kept {
            let mut count = self.conn.prepare(
                "SELECT state, count(*) FROM spans WHERE adapter = ?1 AND session_id = ?2 GROUP BY state",
            )?;
            for s in &mut out {
                let session = params![s.session.adapter.as_str(), s.session.session_id];
                let rows = count.query_map(session, |r| {
                    Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?))
                })?;
                for row in rows {
                    let (state, n) = row?;
                    s.spans.add(SpanState::parse(&state), n as u64);
                }
            }
        }
        Ok(out)
    }

    /// A session's audit reasons as its rows keep them: the reasons its
    /// events carry (kept on its session row as they are appended) and a
    /// pairing gap for each kind of span it has open. `None` when the
    /// epoch's tables predate the kept reasons (an archive an older build
    /// wrote): then only its events can tell.
    pub fn session_audit_reasons(
        &self,
        session: &SessionRef,
    ) -> Result<Option<Vec<String>>, LedgerError> {
        if !self.keeps_audit_flags()? {
            return Ok(None);
        }
        let key = params![session.adapter.as_str(), session.session_id];
        let flags: Option<i64> = self
            .conn
            .prepare_cached(
                "SELECT audit_flags FROM sessions WHERE adapter = ?1 AND session_id = ?2",
            )?
            .query_row(key, |r| r.get(0))
            .optional()?;
        let mut reasons = AuditFlags(flags.unwrap_or(0) as u32).reasons();
        let mut open = self.conn.prepare_cached(
            "SELECT DISTINCT kind FROM spans WHERE adapter = ?1 AND session_id = ?2 AND state = 'open'",
        )?;
        for kind in open.query_map(key, |r| r.get::<_, String>(0))? {
            let reason = match kind?.as_str() {
                "command" => COMMAND_PAIRING_INCOMPLETE,
                _ => TOOL_PAIRING_INCOMPLETE,
            };
            if !reasons.iter().any(|r| r == reason) {
                reasons.push(reason.to_string());
            }
        }
        reasons.sort();
        Ok(Some(reasons))
    }

    /// How many `session.resumed` events a session has, as its row counts
    /// them. `None` when the epoch's tables predate the count (an archive
    /// an older build wrote): then only its events can tell.
    pub fn session_resumes(&self, session: &SessionRef) -> Result<Option<u64>, LedgerError> {
        if !self.keeps_resumes()? {
            return Ok(None);
        }
        let n: Option<i64> = self
            .conn
            .prepare_cached("SELECT resumes FROM sessions WHERE adapter = ?1 AND session_id = ?2")?
            .query_row(params![session.adapter.as_str(), session.session_id], |r| {
                r.get(0)
            })
            .optional()?;
        Ok(Some(n.unwrap_or(0) as u64))
    }

    /// Whether session rows count their resumes (migration
    /// `session_resumes`).
    pub(super) fn keeps_resumes(&self) -> Result<bool, LedgerError> {
        Ok(self.conn.query_row(
            "SELECT EXISTS (SELECT 1 FROM pragma_table_info('sessions') WHERE name = 'resumes')",
            [],
            |r| r.get(0),
        )?)
    }

    /// Whether session rows keep their audit reasons (migration
    /// `session_audit_flags`).
    pub(super) fn keeps_audit_flags(&self) -> Result<bool, LedgerError> {
        Ok(self.conn.query_row(
            "SELECT EXISTS (SELECT 1 FROM pragma_table_info('sessions') WHERE name = 'audit_flags')",
            [],
            |r| r.get(0),
        )?)
    }

    /// Resolve a full session id or a unique prefix of one.
    pub fn resolve_session(&self, wanted: &str) -> Result<SessionRef, LedgerError> {
        use crate::contract::session_name::{id_parts, pick};
        let mut found = Vec::new();
        for id in id_parts(wanted) {
            found.extend(self.sessions_by_prefix(id)?);
        }
        Ok(pick(wanted, None, found, "")?)
    }

    /// The sessions whose id starts with `prefix` (or is it). A row whose
    /// key cannot be read cannot be named: it is set aside.
    pub fn sessions_by_prefix(&self, prefix: &str) -> Result<Vec<SessionRef>, LedgerError> {
        let pattern = format!(
            "{}%",
            prefix
                .replace('\\', "\\\\")
                .replace('%', "\\%")
                .replace('_', "\\_")
        );
        let mut stmt = self.conn.prepare(
            "SELECT adapter, session_id FROM sessions WHERE session_id = ?1 OR session_id LIKE ?2 ESCAPE '\\' \
             ORDER BY adapter, session_id",
        )?;
        let rows = stmt.query(params![prefix, pattern])?;
        self.lenient_rows(rows, "sessions", &[0, 1], |r| session_at(r, 0))
    }

    /// One session's events in offset order.
    pub fn session_events(&self, session: &SessionRef) -> Result<Vec<Event>, LedgerError> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT json FROM events WHERE adapter = ?1 AND session_id = ?2 ORDER BY offset",
        )?;
        let rows = stmt.query_map(params![session.adapter.as_str(), session.session_id], |r| {
            r.get::<_, String>(0)
        })?;
        let mut out = Vec::new();
        for json in rows {
            out.push(self.parse_event(&json?)?);
        }
        Ok(out)
    }

    /// [`Ledger::session_events`], but a row whose text does not parse is
    /// set aside, named by its sequence number, and the rest still read.
    pub fn session_events_lenient(
        &self,
        session: &SessionRef,
    ) -> Result<(Vec<Event>, Vec<DamagedRow>), LedgerError> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT seq, id, CAST(json AS BLOB) FROM events WHERE adapter = ?1 AND session_id = ?2 ORDER BY offset",
        )?;
        let mut rows = stmt.query(params![session.adapter.as_str(), session.session_id])?;
        let (mut events, mut damaged) = (Vec::new(), Vec::new());
        while let Some(r) = rows.next()? {
            let json = r.get_ref(2)?.as_blob().unwrap_or_default();
            match serde_json::from_slice::<Event>(json) {
                Ok(e) => events.push(e),
                Err(e) => damaged.push(DamagedRow {
                    seq: r.get(0)?,
                    event_id: String::from_utf8_lossy(r.get_ref(1)?.as_bytes().unwrap_or_default())
                        .into_owned(),
                    detail: format!("the row's text does not parse as an event: {e}"),
                }),
            }
        }
        Ok((events, damaged))
    }

    /// Every event in chain order, one at a time, without loading them all.
    pub fn for_each_event(
        &self,
        mut f: impl FnMut(StoredEvent) -> Result<(), LedgerError>,
    ) -> Result<(), LedgerError> {
        let mut stmt = self
            .conn
            .prepare("SELECT seq, json, hash FROM events ORDER BY seq")?;
        let mut rows = stmt.query([])?;
        while let Some(r) = rows.next()? {
            let json: String = r.get(1)?;
            let event = self.parse_event(&json)?;
            f(StoredEvent {
                seq: r.get(0)?,
                hash: r.get(2)?,
                json,
                event,
            })?;
        }
        Ok(())
    }

    /// The stored text of every row `filter` keeps, one row at a time:
    /// in offset order for one session, else in chain order. Nothing is
    /// parsed or kept; `f` sees each row once and may stop the stream with
    /// an error of its own.
    pub fn for_each_stored_text<E: From<LedgerError>>(
        &self,
        filter: &RowFilter,
        f: impl FnMut(StoredText<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        let since = filter.since_unix_ns.unwrap_or(i64::MIN);
        let (adapter, session_id) = match &filter.session {
            Some(s) => (Some(s.adapter.as_str()), Some(s.session_id.as_str())),
            None => (None, None),
        };
        // Parameters keep their numbers in every form; a form binds those
        // up to the highest it names. Unfiltered (a whole-ledger export),
        // no row's time is even read.
        let sql = match (&filter.session, filter.since_unix_ns) {
            (Some(_), _) => {
                "SELECT seq, id, CAST(json AS BLOB) FROM events \
                 WHERE adapter = ?1 AND session_id = ?2 AND time_unix_ns >= ?3 ORDER BY offset"
            }
            (None, Some(_)) => {
                "SELECT seq, id, CAST(json AS BLOB) FROM events \
                 WHERE time_unix_ns >= ?3 ORDER BY seq"
            }
            (None, None) => "SELECT seq, id, CAST(json AS BLOB) FROM events ORDER BY seq",
        };
        let read = |e: rusqlite::Error| E::from(LedgerError::from(e));
        let mut stmt = self.conn.prepare_cached(sql).map_err(read)?;
        let bound: [&dyn rusqlite::ToSql; 3] = [&adapter, &session_id, &since];
        let used = &bound[..stmt.parameter_count()];
        let rows = stmt.query(used).map_err(read)?;
        each_stored_text(rows, f)
    }

    /// One session's rows of the given event types, in offset order, as
    /// [`Ledger::for_each_stored_text`] gives them. The types are those of
    /// the `type` column the ledger keeps beside each row's text, so only
    /// the rows asked for are read whole.
    pub fn for_each_stored_text_of_types<E: From<LedgerError>>(
        &self,
        session: &SessionRef,
        types: &[EventType],
        f: impl FnMut(StoredText<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        let names: Vec<&str> = types.iter().map(|t| t.as_str()).collect();
        let names = serde_json::to_string(&names).expect("a list of names is JSON");
        let read = |e: rusqlite::Error| E::from(LedgerError::from(e));
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT seq, id, CAST(json AS BLOB) FROM events \
                 WHERE adapter = ?1 AND session_id = ?2 \
                 AND type IN (SELECT value FROM json_each(?3)) ORDER BY offset",
            )
            .map_err(read)?;
        let key = params![session.adapter.as_str(), session.session_id, names];
        let rows = stmt.query(key).map_err(read)?;
        each_stored_text(rows, f)
    }

    /// The sessions with a row of any of `types`: one pass over the rows'
    /// `type` column, in table order, for callers that would otherwise ask
    /// each session in turn (and read all its rows to answer).
    pub fn sessions_with_types(
        &self,
        types: &[EventType],
    ) -> Result<std::collections::HashSet<SessionRef>, LedgerError> {
        let names: Vec<&str> = types.iter().map(|t| t.as_str()).collect();
        let names = serde_json::to_string(&names).expect("a list of names is JSON");
        let mut stmt = self.conn.prepare(
            "SELECT DISTINCT adapter, session_id FROM events \
             WHERE type IN (SELECT value FROM json_each(?1))",
        )?;
        let rows = stmt.query([names])?;
        let found = self.lenient_rows(rows, "events", &[0, 1], |r| session_at(r, 0))?;
        Ok(found.into_iter().collect())
    }

    /// Every session with an event at or after `since` (all of them
    /// without it), ordered by adapter then id. Only the keys: a caller
    /// reads each session's rows on its own.
    pub fn session_refs(&self, since_unix_ns: Option<i64>) -> Result<Vec<SessionRef>, LedgerError> {
        let mut stmt = self.conn.prepare(
            "SELECT adapter, session_id FROM sessions WHERE last_unix_ns >= ?1 ORDER BY adapter, session_id",
        )?;
        let rows = stmt.query([since_unix_ns.unwrap_or(i64::MIN)])?;
        self.lenient_rows(rows, "sessions", &[0, 1], |r| session_at(r, 0))
    }

    /// Every event in chain order (loads them all; prefer `for_each_event`).
    pub fn events(&self) -> Result<Vec<Event>, LedgerError> {
        let mut out = Vec::new();
        self.for_each_event(|e| {
            out.push(e.event);
            Ok(())
        })?;
        Ok(out)
    }

    /// Span rows, for one session or all, in request time order.
    pub fn spans(&self, session: Option<&SessionRef>) -> Result<Vec<SpanRow>, LedgerError> {
        let base = "SELECT request_event_id, adapter, session_id, kind, name, tool_call_id, agent_id, turn_id, \
                    requested_unix_ns, state, reason, completed_event_id, outcome, duration_ms, completed_unix_ns FROM spans";
        let order = " ORDER BY coalesce(requested_unix_ns, completed_unix_ns), request_event_id";
        let mut out = Vec::new();
        match session {
            Some(s) => {
                let mut stmt = self.conn.prepare(&format!(
                    "{base} WHERE adapter = ?1 AND session_id = ?2{order}"
                ))?;
                let rows = stmt.query_map(params![s.adapter.as_str(), s.session_id], span_row)?;
                for r in rows {
                    out.push(r?);
                }
            }
            None => {
                let mut stmt = self.conn.prepare(&format!("{base}{order}"))?;
                for r in stmt.query_map([], span_row)? {
                    out.push(r?);
                }
            }
        }
        Ok(out)
    }

    /// The open span rows of every session, ordered by session and
    /// request event id (what an epoch advance closes administratively).
    pub fn open_spans(&self) -> Result<Vec<SpanRow>, LedgerError> {
        let mut stmt = self.conn.prepare(
            "SELECT request_event_id, adapter, session_id, kind, name, tool_call_id, agent_id, turn_id, \
             requested_unix_ns, state, reason, completed_event_id, outcome, duration_ms, completed_unix_ns \
             FROM spans WHERE state = 'open' ORDER BY adapter, session_id, request_event_id",
        )?;
        let rows = stmt.query_map([], span_row)?;
        rows.collect::<Result<_, _>>().map_err(LedgerError::from)
    }

    /// One session's open span rows, in the order they were written.
    pub fn open_spans_of(&self, session: &SessionRef) -> Result<Vec<SpanRow>, LedgerError> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT request_event_id, adapter, session_id, kind, name, tool_call_id, agent_id, turn_id, \
             requested_unix_ns, state, reason, completed_event_id, outcome, duration_ms, completed_unix_ns \
             FROM spans WHERE adapter = ?1 AND session_id = ?2 AND state = 'open' ORDER BY seq",
        )?;
        let rows = stmt.query_map(
            params![session.adapter.as_str(), session.session_id],
            span_row,
        )?;
        rows.collect::<Result<_, _>>().map_err(LedgerError::from)
    }

    /// The time of one event of `session`, found by its id (read through
    /// the session's rows: ids have no index of their own).
    pub fn event_time(&self, session: &SessionRef, id: &str) -> Result<Option<i64>, LedgerError> {
        Ok(self
            .conn
            .prepare_cached(
                "SELECT time_unix_ns FROM events WHERE adapter = ?1 AND session_id = ?2 AND id = ?3",
            )?
            .query_row(params![session.adapter.as_str(), session.session_id, id], |r| {
                r.get(0)
            })
            .optional()?)
    }

    /// End requests that are still pending.
    pub fn pending_end_requests(&self) -> Result<Vec<EndRequestRow>, LedgerError> {
        self.end_requests(Some("pending"))
    }

    /// End requests, all or in one state.
    pub fn end_requests(&self, state: Option<&str>) -> Result<Vec<EndRequestRow>, LedgerError> {
        let mut stmt = self.conn.prepare(
            "SELECT end_event_id, adapter, session_id, origin, reason, approved_spans, requested_unix_ns, state, resolved_event_id \
             FROM end_requests WHERE ?1 IS NULL OR state = ?1 ORDER BY requested_unix_ns, end_event_id",
        )?;
        let rows = stmt.query_map([state], |r| {
            let approved: String = r.get(5)?;
            Ok(EndRequestRow {
                end_event_id: r.get(0)?,
                session: session_at(r, 1)?,
                origin: r.get(3)?,
                reason: r.get(4)?,
                approved_spans: serde_json::from_str(&approved).unwrap_or_default(),
                requested_unix_ns: r.get(6)?,
                state: r.get(7)?,
                resolved_event_id: r.get(8)?,
            })
        })?;
        Ok(rows.collect::<Result<Vec<_>, _>>()?)
    }

    /// Every health condition, oldest first.
    pub fn health(&self) -> Result<Vec<HealthRow>, LedgerError> {
        let mut stmt = self.conn.prepare(
            "SELECT event_id, adapter, session_id, code, detail, time_unix_ns FROM health ORDER BY time_unix_ns, event_id",
        )?;
        let rows = stmt.query_map([], |r| {
            Ok(HealthRow {
                event_id: r.get(0)?,
                session: session_at(r, 1)?,
                code: r.get(3)?,
                detail: r.get(4)?,
                time_unix_ns: r.get(5)?,
            })
        })?;
        Ok(rows.collect::<Result<Vec<_>, _>>()?)
    }

    /// The newest raw signal of `adapter` whose captured agent environment
    /// contains `needle`, only of `session_key` when one is given:
    /// (receive time, session key, environment as a JSON object). Walks the
    /// receive-time index newest first and stops at the first match.
    pub fn newest_env_with(
        &self,
        adapter: &str,
        session_key: Option<&str>,
        needle: &str,
    ) -> Result<Option<(i64, String, String)>, LedgerError> {
        let mut stmt = self.conn.prepare(
            "SELECT received_unix_ns, session_key, env FROM raw_signals \
             WHERE adapter = ?1 AND (?2 IS NULL OR session_key = ?2) AND instr(env, ?3) > 0 \
             ORDER BY received_unix_ns DESC LIMIT 1",
        )?;
        let mut rows = stmt.query(params![adapter, session_key, needle])?;
        match rows.next()? {
            Some(r) => Ok(Some((r.get(0)?, r.get(1)?, r.get(2)?))),
            None => Ok(None),
        }
    }

    /// Number of event rows.
    pub fn event_count(&self) -> Result<u64, LedgerError> {
        let n: i64 = self
            .conn
            .query_row("SELECT count(*) FROM events", [], |r| r.get(0))?;
        Ok(n as u64)
    }

    pub(super) fn parse_event(&self, json: &str) -> Result<Event, LedgerError> {
        serde_json::from_str(json).map_err(|e| LedgerError::Corrupt {
            path: self.dir.join(super::DB_FILE),
            detail: format!("an event row does not parse: {e}"),
        })
    }
}

pub(super) fn session_at(r: &Row, at: usize) -> rusqlite::Result<SessionRef> {
    let adapter: String = r.get(at)?;
    let adapter = AdapterId::parse(&adapter).ok_or_else(|| {
        rusqlite::Error::FromSqlConversionFailure(
            at,
            rusqlite::types::Type::Text,
            format!("unknown adapter {adapter}").into(),
        )
    })?;
    Ok(SessionRef {
        adapter,
        session_id: r.get(at + 1)?,
    })
}

pub(super) fn span_row(r: &Row) -> rusqlite::Result<SpanRow> {
    let state: String = r.get(9)?;
    Ok(SpanRow {
        request_event_id: r.get(0)?,
        session: session_at(r, 1)?,
        kind: r.get(3)?,
        name: r.get(4)?,
        tool_call_id: r.get(5)?,
        agent_id: r.get(6)?,
        turn_id: r.get(7)?,
        requested_unix_ns: r.get(8)?,
        state: SpanState::parse(&state),
        reason: r.get(10)?,
        completed_event_id: r.get(11)?,
        outcome: r.get(12)?,
        duration_ms: r.get::<_, Option<i64>>(13)?.map(|d| d as u64),
        completed_unix_ns: r.get(14)?,
    })
}

/// Hand each row of a `seq, id, json` query to `f` as [`StoredText`],
/// borrowed from the row.
pub(super) fn each_stored_text<E: From<LedgerError>>(
    mut rows: rusqlite::Rows<'_>,
    mut f: impl FnMut(StoredText<'_>) -> Result<(), E>,
) -> Result<(), E> {
    let read = |e: rusqlite::Error| E::from(LedgerError::from(e));
    while let Some(r) = rows.next().map_err(read)? {
        let text = |i| r.get_ref(i).map_err(read);
        // The id column only names the row (its text holds the id too): a
        // damaged one is shown as it can be and the row still arrives.
        let id = String::from_utf8_lossy(text(1)?.as_bytes().map_err(|e| read(e.into()))?);
        f(StoredText {
            seq: r.get(0).map_err(read)?,
            id: &id,
            json: text(2)?.as_blob().map_err(|e| read(e.into()))?,
        })?;
    }
    Ok(())
}
