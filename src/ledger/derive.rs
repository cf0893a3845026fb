//! Tables derived from event rows at append time, in the same transaction:
//! a session's summary row, tool and command spans (open, closed natively
//! or recovered), and explicit end requests and health conditions. Nothing
//! here decides what an event means; it only files what the event says.

use rusqlite::{OptionalExtension, Transaction, params};

use super::LedgerError;
use crate::contract::{Event, Outcome, Payload, SessionRef};

/// A session's row in the `sessions` table, kept in memory for one batch.
pub(super) struct SessionAgg {
    next: u64,
    first: i64,
    last: i64,
    turns: u64,
    existed: bool,
}

impl SessionAgg {
    pub(super) fn load(tx: &Transaction, s: &SessionRef) -> Result<SessionAgg, LedgerError> {
        let row: Option<(i64, i64, i64, i64)> = tx
            .prepare_cached(
                "SELECT events, first_unix_ns, last_unix_ns, turns FROM sessions WHERE adapter = ?1 AND session_id = ?2",
            )?
            .query_row(params![s.adapter.as_str(), s.session_id], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
            })
            .optional()?;
        Ok(match row {
            Some((n, first, last, turns)) => SessionAgg {
                next: n as u64,
                first,
                last,
                turns: turns as u64,
                existed: true,
            },
            None => SessionAgg {
                next: 0,
                first: i64::MAX,
                last: i64::MIN,
                turns: 0,
                existed: false,
            },
        })
    }

    /// Offsets run from 0 without gaps within a session.
    pub(super) fn admit(&mut self, e: &Event) -> Result<(), LedgerError> {
        if e.offset != self.next {
            return Err(LedgerError::Refused {
                event_id: e.id.to_string(),
                reason: format!(
                    "offset {} breaks the session sequence (next is {})",
                    e.offset, self.next
                ),
            });
        }
        self.next += 1;
        self.first = self.first.min(e.time_unix_ns);
        self.last = self.last.max(e.time_unix_ns);
        self.turns += u64::from(matches!(e.payload, Payload::TurnStarted(_)));
        Ok(())
    }

    pub(super) fn store(&self, tx: &Transaction, s: &SessionRef) -> Result<(), LedgerError> {
        let sql = if self.existed {
            "UPDATE sessions SET events = ?3, first_unix_ns = ?4, last_unix_ns = ?5, turns = ?6 WHERE adapter = ?1 AND session_id = ?2"
        } else {
            "INSERT INTO sessions (adapter, session_id, events, first_unix_ns, last_unix_ns, turns) VALUES (?1, ?2, ?3, ?4, ?5, ?6)"
        };
        tx.prepare_cached(sql)?.execute(params![
            s.adapter.as_str(),
            s.session_id,
            self.next as i64,
            self.first,
            self.last,
            self.turns as i64
        ])?;
        Ok(())
    }
}

/// Keep the tables derived from events in step with the event rows.
pub(super) fn derive(tx: &Transaction, e: &Event) -> Result<(), LedgerError> {
    match &e.payload {
        Payload::ToolRequested(p) => open_span(
            tx,
            e,
            "tool",
            &p.tool_name,
            p.tool_call_id.as_deref(),
            p.recovery.as_ref().map(|r| r.reason.as_str()),
        ),
        Payload::CommandRequested(p) => open_span(tx, e, "command", &p.argv.join(" "), None, None),
        Payload::ToolCompleted(p) => close_span(
            tx,
            e,
            Terminal {
                kind: "tool",
                name: &p.tool_name,
                requested: p.requested_event_id.as_ref().map(|i| i.as_str()),
                tool_call_id: p.tool_call_id.as_deref(),
                outcome: p.outcome,
                duration: p.duration_ms.observed().copied(),
                reason: p.recovery.as_ref().map(|r| r.reason.as_str()),
            },
        ),
        Payload::CommandCompleted(p) => close_span(
            tx,
            e,
            Terminal {
                kind: "command",
                name: "",
                requested: p.requested_event_id.as_ref().map(|i| i.as_str()),
                tool_call_id: None,
                outcome: p.outcome,
                duration: p.duration_ms.observed().copied(),
                reason: p.recovery.as_ref().map(|r| r.reason.as_str()),
            },
        ),
        Payload::EndRequested(p) => {
            let approved = serde_json::to_string(&p.approved_spans).expect("ids serialize");
            tx.prepare_cached("INSERT INTO end_requests (end_event_id, adapter, session_id, origin, reason, approved_spans, requested_unix_ns, state) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 'pending')")?.execute(
                params![e.id.as_str(), e.session.adapter.as_str(), e.session.session_id, p.origin, p.reason, approved, e.time_unix_ns],
            )?;
            Ok(())
        }
        Payload::EndSalvaged(p) => resolve_end(tx, p.end_event_id.as_str(), "salvaged", e),
        Payload::EndCancelled(p) => resolve_end(tx, p.end_event_id.as_str(), "cancelled", e),
        Payload::EndExpired(p) => resolve_end(tx, p.end_event_id.as_str(), "expired", e),
        Payload::HealthCondition(p) => {
            tx.prepare_cached("INSERT INTO health (event_id, adapter, session_id, code, detail, time_unix_ns) VALUES (?1, ?2, ?3, ?4, ?5, ?6)")?.execute(
                params![e.id.as_str(), e.session.adapter.as_str(), e.session.session_id, p.code, p.detail, e.time_unix_ns],
            )?;
            Ok(())
        }
        _ => Ok(()),
    }
}

fn open_span(
    tx: &Transaction,
    e: &Event,
    kind: &str,
    name: &str,
    tool_call_id: Option<&str>,
    reason: Option<&str>,
) -> Result<(), LedgerError> {
    tx.prepare_cached("INSERT INTO spans (request_event_id, adapter, session_id, kind, name, tool_call_id, agent_id, turn_id, requested_unix_ns, state, reason) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, 'open', ?10)")?.execute(
        params![
            e.id.as_str(),
            e.session.adapter.as_str(),
            e.session.session_id,
            kind,
            name,
            tool_call_id,
            e.agent_id,
            e.turn.turn_id,
            e.time_unix_ns,
            reason
        ],
    )?;
    Ok(())
}

struct Terminal<'a> {
    kind: &'a str,
    name: &'a str,
    requested: Option<&'a str>,
    tool_call_id: Option<&'a str>,
    outcome: Outcome,
    duration: Option<u64>,
    reason: Option<&'a str>,
}

fn close_span(tx: &Transaction, e: &Event, t: Terminal) -> Result<(), LedgerError> {
    let state = if t.reason.is_some() {
        "recovered"
    } else {
        "closed_native"
    };
    let outcome = outcome_name(t.outcome);
    let duration = t.duration.map(|d| d as i64);
    let close = |request: &str| -> Result<usize, LedgerError> {
        Ok(tx.prepare_cached("UPDATE spans SET state = ?2, reason = coalesce(?3, reason), completed_event_id = ?4, outcome = ?5, duration_ms = ?6, completed_unix_ns = ?7 \
             WHERE adapter = ?8 AND session_id = ?9 AND request_event_id = ?1")?.execute(
            params![request, state, t.reason, e.id.as_str(), outcome, duration, e.time_unix_ns, e.session.adapter.as_str(), e.session.session_id],
        )?)
    };
    // The span its request names (in any state), else the open span of its call.
    if let Some(id) = t.requested
        && close(id)? > 0
    {
        return Ok(());
    }
    if let Some(span) = open_span_of_call(tx, e, t.tool_call_id)? {
        close(&span)?;
        return Ok(());
    }
    // A terminal whose request is not in this epoch: keep it as its own
    // span row so counts still add up.
    tx.prepare_cached("INSERT OR IGNORE INTO spans (request_event_id, adapter, session_id, kind, name, tool_call_id, agent_id, turn_id, state, reason, completed_event_id, outcome, duration_ms, completed_unix_ns) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?1, ?11, ?12, ?13)")?.execute(
        params![e.id.as_str(), e.session.adapter.as_str(), e.session.session_id, t.kind, t.name, t.tool_call_id, e.agent_id, e.turn.turn_id, state, t.reason, outcome, duration, e.time_unix_ns],
    )?;
    Ok(())
}

/// The stored name of an outcome (its serde name).
fn outcome_name(o: Outcome) -> &'static str {
    match o {
        Outcome::Success => "success",
        Outcome::Failure => "failure",
        Outcome::Interrupted => "interrupted",
        Outcome::Unknown => "unknown",
    }
}

fn open_span_of_call(
    tx: &Transaction,
    e: &Event,
    call: Option<&str>,
) -> Result<Option<String>, LedgerError> {
    let Some(call) = call else {
        return Ok(None);
    };
    Ok(tx.prepare_cached("SELECT request_event_id FROM spans WHERE adapter = ?1 AND session_id = ?2 AND tool_call_id = ?3 AND state = 'open' LIMIT 1")?.query_row(
            params![e.session.adapter.as_str(), e.session.session_id, call],
            |r| r.get(0),
        )
        .optional()?)
}

fn resolve_end(tx: &Transaction, end_id: &str, state: &str, e: &Event) -> Result<(), LedgerError> {
    tx.prepare_cached(
        "UPDATE end_requests SET state = ?2, resolved_event_id = ?3 WHERE end_event_id = ?1",
    )?
    .execute(params![end_id, state, e.id.as_str()])?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcome_names_are_the_serde_names() {
        for o in [
            Outcome::Success,
            Outcome::Failure,
            Outcome::Interrupted,
            Outcome::Unknown,
        ] {
            assert_eq!(serde_json::to_value(o).unwrap(), outcome_name(o));
        }
    }
}
