//! The derived rows of one epoch as the server keeps them: sessions with
//! their class and every audit reason (an advance's closure included),
//! span rows, and per-turn receipts. They are computed here exactly as the
//! local read side computes them (`read::audit`, `read::receipts`) and
//! copied in with binary `COPY`; the shipper replaces an epoch's derived
//! rows whole, in one transaction, whenever its events grew.

use std::collections::BTreeMap;

use postgres::Transaction;
use postgres::binary_copy::BinaryCopyInWriter;
use postgres::types::{ToSql, Type};

use std::borrow::Cow;

use super::CopyError;
use super::link::pg_text;
use crate::contract::SessionRef;
use crate::contract::{Event, Payload};
use crate::ledger::{ClosedSession, Ledger, SpanRow};
use crate::read::audit::Classification;
use crate::read::epochs::part_reasons;
use crate::read::receipts::{TurnFold, TurnReceipt};
use crate::read::spans::pair_spans;
use crate::read::usage::add_turn_usage;

/// How many derived rows one epoch has.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct DerivedCounts {
    pub sessions: u64,
    pub spans: u64,
    pub receipts: u64,
}

/// The key every derived row starts with.
pub struct EpochKey<'a> {
    pub host: &'a str,
    pub genesis: &'a str,
}

/// Replace the epoch's derived rows on the server with the ledger's.
pub fn replace(
    tx: &mut Transaction<'_>,
    key: &EpochKey<'_>,
    ledger: &Ledger,
    closed: &[ClosedSession],
    via_role: bool,
) -> Result<DerivedCounts, CopyError> {
    tx.execute(
        "SELECT harnery.clear_derived($1, $2)",
        &[&key.host, &key.genesis],
    )?;
    let sessions = copy_sessions(tx, key, ledger, closed, via_role)?;
    let spans = copy_spans(tx, key, ledger, via_role)?;
    let receipts = copy_receipts(tx, key, ledger, via_role)?;
    if via_role {
        for table in ["sessions", "spans", "receipts"] {
            tx.batch_execute(&format!(
                "INSERT INTO harnery.{table} SELECT * FROM pg_temp.ship_{table}; TRUNCATE pg_temp.ship_{table}"
            ))?;
        }
    }
    Ok(DerivedCounts {
        sessions,
        spans,
        receipts,
    })
}

/// A text column as PostgreSQL holds it (see [`pg_text`]).
fn t(s: &str) -> Cow<'_, str> {
    pg_text(s.as_bytes())
}

fn ts(s: &Option<String>) -> Option<Cow<'_, str>> {
    s.as_deref().map(t)
}

fn tv(v: &[String]) -> Vec<Cow<'_, str>> {
    v.iter().map(|s| t(s)).collect()
}

/// A binary COPY into `table` (for a host role, into its temporary twin,
/// inserted from there: PostgreSQL applies no row-level security to COPY).
fn writer<'a>(
    tx: &'a mut Transaction<'_>,
    table: &str,
    columns: &str,
    types: &[Type],
    via_role: bool,
) -> Result<BinaryCopyInWriter<'a>, CopyError> {
    let target = match via_role {
        true => format!("pg_temp.ship_{table}"),
        false => format!("harnery.{table}"),
    };
    let sink = tx.copy_in(&format!(
        "COPY {target} ({columns}) FROM STDIN (FORMAT binary)"
    ))?;
    Ok(BinaryCopyInWriter::new(sink, types))
}

fn copy_sessions(
    tx: &mut Transaction<'_>,
    key: &EpochKey<'_>,
    ledger: &Ledger,
    closed: &[ClosedSession],
    via_role: bool,
) -> Result<u64, CopyError> {
    let by_session: BTreeMap<&SessionRef, &ClosedSession> =
        closed.iter().map(|c| (&c.session, c)).collect();
    let summaries = ledger.sessions()?;
    // A copy leaves no row out: one that cannot be read stops the ship.
    ledger.refuse_set_aside()?;
    let mut w = writer(
        tx,
        "sessions",
        "host_id, genesis_id, adapter, session_id, first_unix_ns, last_unix_ns, events, turns, \
         spans_open, spans_closed_native, spans_recovered, class, reasons",
        &[
            Type::TEXT,
            Type::TEXT,
            Type::TEXT,
            Type::TEXT,
            Type::INT8,
            Type::INT8,
            Type::INT8,
            Type::INT8,
            Type::INT8,
            Type::INT8,
            Type::INT8,
            Type::TEXT,
            Type::TEXT_ARRAY,
        ],
        via_role,
    )?;
    for s in &summaries {
        let mut class = Classification::eligible();
        class.add_reasons(part_reasons(ledger, &s.session)?);
        if let Some(c) = by_session.get(&s.session) {
            class.add_reasons(c.reasons.clone());
        }
        let n = |v: u64| v as i64;
        w.write(&[
            &key.host,
            &key.genesis,
            &t(s.session.adapter.as_str()),
            &t(&s.session.session_id),
            &s.first_unix_ns,
            &s.last_unix_ns,
            &n(s.events),
            &n(s.turns),
            &n(s.spans.open),
            &n(s.spans.closed_native),
            &n(s.spans.recovered),
            &class.class.as_str(),
            &tv(&class.reasons),
        ])?;
    }
    w.finish()?;
    Ok(summaries.len() as u64)
}

fn copy_spans(
    tx: &mut Transaction<'_>,
    key: &EpochKey<'_>,
    ledger: &Ledger,
    via_role: bool,
) -> Result<u64, CopyError> {
    let mut w = writer(
        tx,
        "spans",
        "host_id, genesis_id, adapter, session_id, request_event_id, kind, name, tool_call_id, agent_id, \
         turn_id, requested_unix_ns, state, reason, completed_event_id, outcome, duration_ms, completed_unix_ns",
        &[
            Type::TEXT,
            Type::TEXT,
            Type::TEXT,
            Type::TEXT,
            Type::TEXT,
            Type::TEXT,
            Type::TEXT,
            Type::TEXT,
            Type::TEXT,
            Type::TEXT,
            Type::INT8,
            Type::TEXT,
            Type::TEXT,
            Type::TEXT,
            Type::TEXT,
            Type::INT8,
            Type::INT8,
        ],
        via_role,
    )?;
    let mut n = 0;
    ledger.for_each_span(|s: SpanRow| -> Result<(), CopyError> {
        let duration = s.duration_ms.map(|d| d as i64);
        let row: [&(dyn ToSql + Sync); 17] = [
            &key.host,
            &key.genesis,
            &t(s.session.adapter.as_str()),
            &t(&s.session.session_id),
            &t(&s.request_event_id),
            &t(&s.kind),
            &t(&s.name),
            &ts(&s.tool_call_id),
            &ts(&s.agent_id),
            &ts(&s.turn_id),
            &s.requested_unix_ns,
            &s.state.as_str(),
            &ts(&s.reason),
            &ts(&s.completed_event_id),
            &ts(&s.outcome),
            &duration,
            &s.completed_unix_ns,
        ];
        w.write(&row)?;
        n += 1;
        Ok(())
    })?;
    w.finish()?;
    Ok(n)
}

fn copy_receipts(
    tx: &mut Transaction<'_>,
    key: &EpochKey<'_>,
    ledger: &Ledger,
    via_role: bool,
) -> Result<u64, CopyError> {
    let sessions = ledger.session_refs(None)?;
    ledger.refuse_set_aside()?;
    let mut w = writer(
        tx,
        "receipts",
        "host_id, genesis_id, adapter, session_id, turn_index, turn_id, turn_source, started_unix_ns, \
         ended_unix_ns, wall_ms, spans, closed, recovered, open, known_ms, upper_bound_ms, bounds_unknown, \
         upper_bound_share_pct, eligible_for_ranking, ineligible_because, notes",
        &[
            Type::TEXT,
            Type::TEXT,
            Type::TEXT,
            Type::TEXT,
            Type::INT4,
            Type::TEXT,
            Type::TEXT,
            Type::INT8,
            Type::INT8,
            Type::INT8,
            Type::INT8,
            Type::INT8,
            Type::INT8,
            Type::INT8,
            Type::INT8,
            Type::INT8,
            Type::INT8,
            Type::FLOAT8,
            Type::BOOL,
            Type::TEXT_ARRAY,
            Type::TEXT_ARRAY,
        ],
        via_role,
    )?;
    let mut n = 0;
    for session in &sessions {
        // A row that does not parse is left out here as in `harnery
        // receipts`; `fleet verify` and the host's own `validate` see it.
        for (i, turn) in streamed_receipts(ledger, session)?.iter().enumerate() {
            let c = &turn.tools;
            let int = |v: u64| v as i64;
            let count = |v: usize| v as i64;
            let row: [&(dyn ToSql + Sync); 21] = [
                &key.host,
                &key.genesis,
                &t(session.adapter.as_str()),
                &t(&session.session_id),
                &(i as i32),
                &t(&turn.turn_id),
                &turn.turn_source,
                &turn.started_unix_ns,
                &turn.ended_unix_ns,
                &int(turn.wall_ms),
                &count(c.spans),
                &count(c.closed),
                &count(c.recovered),
                &count(c.open),
                &int(c.known_ms),
                &int(c.upper_bound_ms),
                &count(c.bounds_unknown),
                &c.upper_bound_share_pct,
                &c.eligible_for_ranking,
                &c.ineligible_because,
                &turn.notes,
            ];
            w.write(&row)?;
            n += 1;
        }
    }
    w.finish()?;
    Ok(n)
}

/// A session's per-turn receipts as `read::receipts::session_receipts`
/// computes them, with the session streamed: every event goes through the
/// turn fold and the usage sums and is dropped, except the span events
/// pairing needs, which are kept without their inputs and outputs. Memory
/// follows the session's spans, not its bytes.
fn streamed_receipts(ledger: &Ledger, session: &SessionRef) -> Result<Vec<TurnReceipt>, CopyError> {
    let mut turns = TurnFold::default();
    let mut usage = BTreeMap::new();
    let mut spans: Vec<Event> = Vec::new();
    ledger.for_each_session_event(session, |mut e: Event| -> Result<(), CopyError> {
        turns.add_event(&e);
        add_turn_usage(&mut usage, &e);
        match &mut e.payload {
            Payload::ToolRequested(p) => p.input = None,
            Payload::ToolCompleted(p) => p.content = None,
            Payload::CommandRequested(_)
            | Payload::CommandCompleted(_)
            | Payload::LateEvidence(_) => {}
            _ => return Ok(()),
        }
        spans.push(e);
        Ok(())
    })?;
    let refs: Vec<&Event> = spans.iter().collect();
    for span in pair_spans(&refs) {
        turns.add_span(&span);
    }
    Ok(turns.receipts(&usage))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::read::receipts::session_receipts;

    /// The streamed receipts are the whole-session ones, turn for turn.
    #[test]
    fn streamed_receipts_equal_the_whole_session_fold() {
        let root =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/epoch/gen1/home");
        let copy = tempfile::tempdir().unwrap();
        let status = std::process::Command::new("cp")
            .arg("-a")
            .arg(format!("{}/.", root.display()))
            .arg(copy.path())
            .status()
            .unwrap();
        assert!(status.success());
        let home = crate::home::Home::at(copy.path());
        let mut compared = 0;
        for entry in crate::epoch::epochs(&home).unwrap() {
            let ledger = crate::read::epochs::open_as_written(&entry).unwrap();
            for session in ledger.session_refs(None).unwrap() {
                let (events, _) = ledger.session_events_lenient(&session).unwrap();
                let refs: Vec<_> = events.iter().collect();
                let whole = session_receipts(&refs).turns;
                let streamed = streamed_receipts(&ledger, &session).unwrap();
                assert_eq!(streamed, whole, "{session:?}");
                compared += whole.len();
            }
        }
        assert!(compared > 0);
    }
}
