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
use super::ids;
use super::key::HostKey;
use super::link::pg_text;
use crate::contract::Event;
use crate::contract::SessionRef;
use crate::ledger::{ClosedSession, LedgerReader, SpanRow};
use crate::report::audit::Classification;
use crate::report::receipts::{TurnFold, TurnReceipt};
use crate::report::spans::SpanStream;
use crate::report::stored_reasons::part_reasons;
use crate::report::usage::{TurnUsage, add_turn_usage};

/// How many derived rows one epoch has.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct DerivedCounts {
    pub sessions: u64,
    pub spans: u64,
    pub receipts: u64,
}

/// The key every derived row starts with.
pub(crate) struct EpochKey<'a> {
    pub host: &'a str,
    pub genesis: &'a str,
}

/// A session's title or project as it leaves the host (`None`: it does
/// not, under `ship --content none`).
pub(crate) type Shown<'a> = &'a dyn Fn(&str) -> Option<String>;

/// Replace the epoch's derived rows on the server with the ledger's; each
/// session's title and project go as `shown` gives them.
pub(crate) fn replace(
    tx: &mut Transaction<'_>,
    key: &EpochKey<'_>,
    host_key: &HostKey,
    ledger: &LedgerReader,
    closed: &[ClosedSession],
    via_role: bool,
    shown: Shown<'_>,
) -> Result<DerivedCounts, CopyError> {
    tx.execute(
        "SELECT harnery.clear_derived($1, $2)",
        &[&key.host, &key.genesis],
    )?;
    let sessions = copy_sessions(tx, key, ledger, closed, via_role, shown)?;
    let spans = copy_spans(tx, key, host_key, ledger, via_role)?;
    let receipts = copy_receipts(tx, key, host_key, ledger, via_role)?;
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

/// An id as it leaves the host ([`super::ids`]), as a text column.
fn id<'s>(host_key: &HostKey, s: &'s str) -> Cow<'s, str> {
    match ids::shipped(host_key, s) {
        Cow::Owned(keyed) => Cow::Owned(keyed),
        Cow::Borrowed(_) => t(s),
    }
}

fn ts(s: &Option<String>) -> Option<Cow<'_, str>> {
    s.as_deref().map(t)
}

fn tv(v: &[String]) -> Vec<Cow<'_, str>> {
    v.iter().map(|s| t(s)).collect()
}

/// A binary COPY into `table` (for a host role, into its temporary twin,
/// inserted from there: PostgreSQL applies no row-level security to COPY).
pub(super) fn writer<'a>(
    tx: &'a mut Transaction<'_>,
    table: &str,
    columns: &str,
    types: &[Type],
    via_role: bool,
) -> Result<BinaryCopyInWriter<'a>, postgres::Error> {
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
    ledger: &LedgerReader,
    closed: &[ClosedSession],
    via_role: bool,
    shown: Shown<'_>,
) -> Result<u64, CopyError> {
    let by_session: BTreeMap<&SessionRef, &ClosedSession> =
        closed.iter().map(|c| (&c.session, c)).collect();
    let summaries = ledger.sessions().list()?;
    // A copy leaves no row out: one that cannot be read stops the ship.
    ledger.refuse_set_aside()?;
    let mut w = writer(
        tx,
        "sessions",
        "host_id, genesis_id, adapter, session_id, first_unix_ns, last_unix_ns, events, turns, \
         spans_open, spans_closed_native, spans_recovered, class, reasons, title, project",
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
            Type::TEXT,
            Type::TEXT,
        ],
        via_role,
    )?;
    for s in &summaries {
        let about = |v: &Option<String>| v.as_deref().and_then(shown).map(|v| t(&v).into_owned());
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
            &about(&s.title),
            &about(&s.project),
        ])?;
    }
    w.finish()?;
    Ok(summaries.len() as u64)
}

fn copy_spans(
    tx: &mut Transaction<'_>,
    key: &EpochKey<'_>,
    host_key: &HostKey,
    ledger: &LedgerReader,
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
    ledger
        .rows()
        .for_each_span(|s: SpanRow| -> Result<(), CopyError> {
            let duration = s.duration_ms.map(|d| d as i64);
            let row: [&(dyn ToSql + Sync); 17] = [
                &key.host,
                &key.genesis,
                &t(s.session.adapter.as_str()),
                &t(&s.session.session_id),
                &id(host_key, &s.request_event_id),
                &t(&s.kind),
                &t(&s.name),
                &ts(&s.tool_call_id),
                &ts(&s.agent_id),
                &s.turn_id.as_deref().map(|i| id(host_key, i)),
                &s.requested_unix_ns,
                &s.state.as_str(),
                &ts(&s.reason),
                &s.completed_event_id.as_deref().map(|i| id(host_key, i)),
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
    host_key: &HostKey,
    ledger: &LedgerReader,
    via_role: bool,
) -> Result<u64, CopyError> {
    let sessions = ledger.sessions().refs(None)?;
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
                &id(host_key, &turn.turn_id),
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
/// turn fold, the usage sums and the span pairing and is dropped; a span
/// joins its turn's tally as soon as it closes. Memory follows the
/// session's turns and its spans still open, not its events.
fn streamed_receipts(
    ledger: &LedgerReader,
    session: &SessionRef,
) -> Result<Vec<TurnReceipt>, CopyError> {
    let mut fold = ReceiptStream::default();
    ledger
        .rows()
        .for_each_session_event(session, |e: Event| -> Result<(), CopyError> {
            fold.add(&e);
            Ok(())
        })?;
    Ok(fold.receipts())
}

/// The receipts of one session taken an event at a time.
#[derive(Default)]
struct ReceiptStream {
    turns: TurnFold,
    usage: BTreeMap<String, TurnUsage>,
    spans: SpanStream,
}

impl ReceiptStream {
    fn add(&mut self, e: &Event) {
        self.turns.add_event(e);
        add_turn_usage(&mut self.usage, e);
        let turns = &mut self.turns;
        self.spans.feed(e, |span| turns.add_span(span));
    }

    fn receipts(mut self) -> Vec<TurnReceipt> {
        let turns = &mut self.turns;
        self.spans.finish(|span| turns.add_span(span));
        self.turns.receipts(&self.usage)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::{
        EventId, Observation, Outcome, Payload, Provenance, RecoveryReason, ToolCompleted,
    };
    use crate::report::receipts::session_receipts;
    use crate::report::testkit::Script;

    /// A terminal that names no request: by `call` if given, else by name.
    fn unlinked(t: &mut Script, tool: &str, call: Option<&str>, at: i64, ms: u64) -> EventId {
        let p = Payload::ToolCompleted(ToolCompleted {
            tool_call_id: call.map(str::to_string),
            tool_name: tool.into(),
            requested_event_id: None,
            outcome: Outcome::Success,
            duration_ms: Observation::Observed(ms),
            exit_code: None,
            error: None,
            content: None,
            recovery: None,
            paired_by: None,
        });
        t.push(at, p, Provenance::NATIVE)
    }

    fn streamed(events: &[Event]) -> Vec<TurnReceipt> {
        let mut fold = ReceiptStream::default();
        events.iter().for_each(|e| fold.add(e));
        fold.receipts()
    }

    /// Pairing's edge cases, streamed, give the whole-session receipts:
    /// unlinked terminals (by call id, past an older open span, and by
    /// name), a link to a closed span or to a request of another kind,
    /// two requests with one id, recovery and late evidence, a span
    /// across turns, and spans still open at the end.
    #[test]
    fn streamed_receipts_pair_as_the_whole_session_does() {
        let mut t = Script::new("s1");
        t.turn("t1");
        t.start(0);
        let a = t.request("Bash", 1);
        t.request("Bash", 2); // b, call id call_2
        let c = t.request("Read", 3);
        t.request("Bash", 4); // open at the end
        // b's call id, not the oldest open Bash: b closes, a stays open.
        unlinked(&mut t, "Bash", Some("call_2"), 5, 3);
        // No call id: the oldest open Bash, a, not the one at 4.
        unlinked(&mut t, "Bash", None, 6, 4);
        // A call id no open span has: a terminal without a request.
        unlinked(&mut t, "Read", Some("call_none"), 7, 1);
        t.complete(&a, 8, Some(2)); // a is closed: this one is an orphan
        let r = t.recover(
            &c,
            9,
            RecoveryReason::CompletionNotObservedBeforeTurnEnd,
            Some(4),
        );
        t.late(&c, &r, 10);
        t.complete(&c, 11, Some(9)); // c is recovered: no span takes it
        let cmd = t.command(12);
        t.command_done(&cmd, 13, 1);
        let d = t.request("Grep", 14);
        t.command_done(&d, 15, 0); // a command terminal linking a tool request
        t.unmatched_post("Edit", 16, Some(1));
        t.stop(17);
        t.turn("t2");
        t.start(20);
        t.complete(&d, 21, None); // d, requested in t1, ends in t2
        let e = t.request("Write", 22);
        t.request("Write", 23); // open at the end
        t.recover(
            &e,
            24,
            RecoveryReason::CompletionNotObservedBeforeTurnEnd,
            None,
        );
        t.no_turn();
        t.request("Glob", 25);
        unlinked(&mut t, "Glob", None, 26, 1);
        t.turn("t2");
        t.request("Task", 27); // open at the end
        t.stop(30);
        let events = t.events();
        let refs: Vec<&Event> = events.iter().collect();
        let whole = session_receipts(&refs).turns;
        assert_eq!(whole.len(), 2);
        assert_eq!(streamed(&events), whole);

        // Two requests with one id: a link reaches only the later one,
        // and nothing once it has closed.
        let mut t = Script::new("s2");
        t.turn("t1");
        t.start(0);
        let a = t.request("Bash", 1);
        let b = t.request("Bash", 2);
        t.complete(&b, 3, Some(1));
        t.complete(&b, 4, Some(1));
        t.complete(&a, 5, Some(7));
        t.stop(9);
        let mut events = t.events();
        let b_at = events.iter().position(|e| e.id == b).unwrap();
        for e in &mut events[b_at + 1..] {
            if let Payload::ToolCompleted(p) = &mut e.payload {
                p.requested_event_id = Some(a.clone());
            }
        }
        events[b_at].id = a.clone();
        let refs: Vec<&Event> = events.iter().collect();
        let whole = session_receipts(&refs).turns;
        assert_eq!(streamed(&events), whole);
        assert_eq!((whole[0].tools.closed, whole[0].tools.open), (3, 1));
    }

    /// The streamed receipts are the whole-session ones, turn for turn.
    #[test]
    fn streamed_receipts_equal_the_whole_session_fold() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/epoch/gen1/home");
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
            let ledger = crate::report::epochs::open_as_written(&entry).unwrap();
            for session in ledger.sessions().refs(None).unwrap() {
                let (events, _) = ledger.events().session_events_lenient(&session).unwrap();
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
