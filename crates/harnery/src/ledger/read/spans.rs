//! Span rows (ADR 0078: open, completed, recovered), end requests and
//! health conditions: the tables finalize derives from the events.

use rusqlite::{Row, params};
use serde::Serialize;

use super::{LedgerReader, session_at};
use crate::contract::SessionRef;
use crate::ledger::LedgerError;

/// The three states a span can be in (ADR 0078).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SpanState {
    Open,
    ClosedNative,
    Recovered,
}

impl SpanState {
    pub(crate) fn as_str(self) -> &'static str {
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

/// Tool and command spans as the ledger pairs them.
pub struct Spans<'r> {
    pub(super) r: &'r LedgerReader,
}

impl Spans<'_> {
    /// Span rows, for one session or all, in request time order.
    pub fn list(&self, session: Option<&SessionRef>) -> Result<Vec<SpanRow>, LedgerError> {
        let base = "SELECT request_event_id, adapter, session_id, kind, name, tool_call_id, agent_id, turn_id, \
                    requested_unix_ns, state, reason, completed_event_id, outcome, duration_ms, completed_unix_ns FROM spans";
        let order = " ORDER BY coalesce(requested_unix_ns, completed_unix_ns), request_event_id";
        let mut out = Vec::new();
        match session {
            Some(s) => {
                let mut stmt = self.r.conn.prepare(&format!(
                    "{base} WHERE adapter = ?1 AND session_id = ?2{order}"
                ))?;
                let rows = stmt.query_map(params![s.adapter.as_str(), s.session_id], span_row)?;
                for r in rows {
                    out.push(r?);
                }
            }
            None => {
                let mut stmt = self.r.conn.prepare(&format!("{base}{order}"))?;
                for r in stmt.query_map([], span_row)? {
                    out.push(r?);
                }
            }
        }
        Ok(out)
    }

    /// How many spans of each session ended in failure (sessions with
    /// none are not listed): one grouped pass over the span rows.
    pub(crate) fn failures_by_session(&self) -> Result<Vec<(SessionRef, u64)>, LedgerError> {
        let mut stmt = self.r.conn.prepare_cached(
            "SELECT adapter, session_id, count(*) FROM spans WHERE outcome = 'failure' \
             GROUP BY adapter, session_id",
        )?;
        let rows = stmt.query([])?;
        self.r.lenient_rows(rows, "spans", &[0, 1], |r| {
            Ok((session_at(r, 0)?, r.get::<_, i64>(2)? as u64))
        })
    }

    /// The open span rows of every session, ordered by session and
    /// request event id (what an epoch advance closes administratively).
    pub fn open(&self) -> Result<Vec<SpanRow>, LedgerError> {
        let mut stmt = self.r.conn.prepare(
            "SELECT request_event_id, adapter, session_id, kind, name, tool_call_id, agent_id, turn_id, \
             requested_unix_ns, state, reason, completed_event_id, outcome, duration_ms, completed_unix_ns \
             FROM spans WHERE state = 'open' ORDER BY adapter, session_id, request_event_id",
        )?;
        let rows = stmt.query_map([], span_row)?;
        rows.collect::<Result<_, _>>().map_err(LedgerError::from)
    }

    /// One session's open span rows, in the order they were written.
    pub fn open_of(&self, session: &SessionRef) -> Result<Vec<SpanRow>, LedgerError> {
        let mut stmt = self.r.conn.prepare_cached(
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
}

/// The explicit-end requests a ledger holds.
pub struct Ends<'r> {
    pub(super) r: &'r LedgerReader,
}

impl Ends<'_> {
    /// End requests that are still pending.
    pub fn pending(&self) -> Result<Vec<EndRequestRow>, LedgerError> {
        self.list(Some("pending"))
    }

    /// End requests, all or in one state.
    pub fn list(&self, state: Option<&str>) -> Result<Vec<EndRequestRow>, LedgerError> {
        let mut stmt = self.r.conn.prepare(
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
}

/// The health conditions a ledger holds.
pub struct Health<'r> {
    pub(super) r: &'r LedgerReader,
}

impl Health<'_> {
    /// Every health condition, oldest first.
    pub fn list(&self) -> Result<Vec<HealthRow>, LedgerError> {
        let mut stmt = self.r.conn.prepare(
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
}

pub(in crate::ledger) fn span_row(r: &Row) -> rusqlite::Result<SpanRow> {
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
