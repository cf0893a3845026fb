//! Session-level answers read from session-level rows: the health
//! conditions and pending ends of every session, from the rows finalize
//! keeps current (session rows with their span counts, open span rows, end
//! requests, recorded health conditions) instead of from every event. The
//! answers are those the projections over events in [`super::health`]
//! give (tested on the corpus); the cost grows with the number of sessions
//! and conditions, not of events, and memory holds one session's rows at
//! a time.

use std::collections::BTreeMap;

use super::health::{Condition, OpenSpan, PendingEnd, pending_condition, recorded};
use crate::contract::{EventId, SessionRef};
use crate::ledger::{EndRequestRow, LedgerError, LedgerReader, SpanState};
use crate::session::policy::{END_EXPIRED, SPAN_CAP_EXCEEDED, over_span_cap, span_cap_detail};

/// Every session's conditions, judged at `now_ns`, in session order.
pub fn conditions(ledger: &LedgerReader, now_ns: i64) -> Result<Vec<Condition>, LedgerError> {
    let mut sessions = ledger.sessions().list()?;
    sessions.sort_by(|a, b| a.session.cmp(&b.session));
    let mut pending = by_session(ledger.ends().pending()?);
    let mut expired = by_session(ledger.ends().list(Some("expired"))?);
    let mut reported: BTreeMap<SessionRef, Vec<crate::ledger::HealthRow>> = BTreeMap::new();
    for row in ledger.health().list()? {
        reported.entry(row.session.clone()).or_default().push(row);
    }
    let mut out = Vec::new();
    for s in &sessions {
        let session = &s.session;
        if over_span_cap(s.spans.open as usize) {
            out.push(Condition {
                code: SPAN_CAP_EXCEEDED.into(),
                session: Some(session.clone()),
                at_unix_ns: None,
                detail: span_cap_detail(s.spans.open as usize),
            });
        }
        let ends = pending.remove(session).unwrap_or_default();
        for end in pending_of(ledger, session, ends)? {
            out.push(pending_condition(&end, now_ns));
        }
        let mut later: Vec<(i64, String, Condition)> = Vec::new();
        for end in expired.remove(session).unwrap_or_default() {
            let id = end.resolved_event_id.unwrap_or_default();
            let at = ledger.events().event_time(session, &id)?;
            let c = recorded(END_EXPIRED.into(), session, at, end.end_event_id);
            later.push((at.unwrap_or(i64::MIN), id, c));
        }
        let mut state = None;
        for h in reported.remove(session).unwrap_or_default() {
            if h.code.starts_with("record_")
                && record_problem_cleared(ledger, session, &h, &mut state)?
            {
                continue;
            }
            let c = recorded(
                format!("reported:{}", h.code),
                session,
                Some(h.time_unix_ns),
                h.detail,
            );
            later.push((h.time_unix_ns, h.event_id, c));
        }
        later.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
        out.extend(later.into_iter().map(|(_, _, c)| c));
    }
    Ok(out)
}

/// Whether a recorded problem of the session's own record has cleared:
/// the record was read since (a record `missing` until it was written), or
/// a later problem replaced it. `state` caches the session's record state.
fn record_problem_cleared(
    ledger: &LedgerReader,
    session: &SessionRef,
    row: &crate::ledger::HealthRow,
    state: &mut Option<Option<crate::session::RecordCursor>>,
) -> Result<bool, LedgerError> {
    use crate::session::RecordCursor;
    if state.is_none() {
        let text = ledger.bookkeeping().producer_state(session)?;
        *state = Some(text.as_deref().and_then(RecordCursor::of_state));
    }
    let Some(Some(at)) = state.as_ref() else {
        return Ok(false);
    };
    let kind = &row.code["record_".len()..];
    // Only the session's own record: a subagent's problem names its path.
    let own = at
        .path
        .as_deref()
        .is_some_and(|p| row.detail.starts_with(p));
    Ok(own && at.problem.as_deref() != Some(kind))
}

/// Every pending end request with the open spans of its session, in
/// session order (`harnery end --list`).
pub fn pending_ends(ledger: &LedgerReader) -> Result<Vec<PendingEnd>, LedgerError> {
    let mut out = Vec::new();
    for (session, ends) in by_session(ledger.ends().pending()?) {
        out.extend(pending_of(ledger, &session, ends)?);
    }
    Ok(out)
}

fn by_session(rows: Vec<EndRequestRow>) -> BTreeMap<SessionRef, Vec<EndRequestRow>> {
    let mut map: BTreeMap<SessionRef, Vec<EndRequestRow>> = BTreeMap::new();
    for row in rows {
        map.entry(row.session.clone()).or_default().push(row);
    }
    map
}

fn pending_of(
    ledger: &LedgerReader,
    session: &SessionRef,
    ends: Vec<EndRequestRow>,
) -> Result<Vec<PendingEnd>, LedgerError> {
    if ends.is_empty() {
        return Ok(Vec::new());
    }
    let open = ledger.spans().open_of(session)?;
    Ok(ends
        .into_iter()
        .map(|end| PendingEnd {
            session: session.clone(),
            end_event_id: EventId(end.end_event_id),
            requested_unix_ns: end.requested_unix_ns,
            origin: end.origin,
            reason: end.reason,
            open_spans: open
                .iter()
                .filter(|s| s.state == SpanState::Open)
                .map(|s| OpenSpan {
                    request_event_id: EventId(s.request_event_id.clone()),
                    kind: if s.kind == "command" {
                        "command"
                    } else {
                        "tool"
                    },
                    name: s.name.clone(),
                    turn_id: s.turn_id.clone(),
                    requested_unix_ns: s.requested_unix_ns.unwrap_or(0),
                    approved: end.approved_spans.contains(&s.request_event_id),
                })
                .collect(),
        })
        .collect())
}
