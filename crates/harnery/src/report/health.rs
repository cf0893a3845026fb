//! Loud conditions: things a user should look at, none of which is a
//! failure of the ledger (ADR 0078 makes the read-side span cap a health
//! condition instead of an error).
//!
//! From the ledger's events: sessions past the read-side cap of 256
//! open spans, explicit ends still pending (and those pending past 24 hours,
//! which the next `finalize` should resolve), ends that expired, and every
//! `health.condition` the finalizer recorded. From the spool, gathered by the
//! caller as [`SpoolFacts`]: damaged byte ranges, dead-letter files, and
//! session spools holding data older than the staleness threshold (a
//! finalizer that is not running).

use std::collections::{BTreeMap, HashSet};
use std::path::Path;

use serde::Serialize;

use super::spans::{Span, SpanKind, SpanState, pair_spans};
use crate::contract::{Event, EventId, Payload, SessionRef};

use crate::session::policy::{
    END_EXPIRED, END_PENDING, END_PENDING_OVERDUE, SPAN_CAP_EXCEEDED, end_has_expired,
    over_span_cap, span_cap_detail,
};

/// One condition, flat so it prints as a line and serializes as an object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Condition {
    /// `span_cap_exceeded`, `end_pending`, `end_pending_overdue`,
    /// `end_expired`, `spool_damage`, `dead_letter`, `stale_spool`,
    /// `unreadable_row` (a ledger row the reads passed over),
    /// `usage_ids_shared` (a note: unrelated sessions reported the same
    /// model call ids, counted in each), or a code
    /// the finalizer recorded (`reported:<code>`).
    pub code: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<SessionRef>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub at_unix_ns: Option<i64>,
    pub detail: String,
}

impl Condition {
    /// A note, not a problem: the agent deleted its record after harnery
    /// read it (`reported:record_removed`), so the session's history now
    /// lives only in harnery; or unrelated sessions share call ids
    /// ([`USAGE_IDS_SHARED`]), each keeping its tokens. `health` lists it
    /// and still exits 0.
    pub(crate) fn is_note(&self) -> bool {
        self.code == "reported:record_removed" || self.code == USAGE_IDS_SHARED
    }
}

/// The code of the note that unrelated sessions reported the same model
/// call ids (counted in each; see `report::usage_calls`).
pub(crate) const USAGE_IDS_SHARED: &str = "usage_ids_shared";

/// An open span as listed under a pending end.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OpenSpan {
    pub request_event_id: EventId,
    /// `tool` or `command`.
    pub kind: &'static str,
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<String>,
    pub requested_unix_ns: i64,
    /// The end request approved this span for salvage.
    pub approved: bool,
}

/// An explicit end request that nothing has resolved yet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PendingEnd {
    pub session: SessionRef,
    pub end_event_id: EventId,
    pub requested_unix_ns: i64,
    pub origin: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub open_spans: Vec<OpenSpan>,
}

/// Pending end requests of one session (offset order in, request order out).
pub fn pending_ends(events: &[&Event]) -> Vec<PendingEnd> {
    let resolved: HashSet<&EventId> = events.iter().filter_map(|e| resolves(e)).collect();
    let spans = pair_spans(events);
    events
        .iter()
        .filter(|e| !resolved.contains(&e.id))
        .filter_map(|e| match &e.payload {
            Payload::EndRequested(p) => Some(PendingEnd {
                session: e.session.clone(),
                end_event_id: e.id.clone(),
                requested_unix_ns: e.time_unix_ns,
                origin: p.origin.clone(),
                reason: p.reason.clone(),
                open_spans: open_spans(&spans, &p.approved_spans),
            }),
            _ => None,
        })
        .collect()
}

/// The end request an event resolves, if it is a salvage, cancel or expiry.
fn resolves(event: &Event) -> Option<&EventId> {
    match &event.payload {
        Payload::EndSalvaged(p) => Some(&p.end_event_id),
        Payload::EndCancelled(p) => Some(&p.end_event_id),
        Payload::EndExpired(p) => Some(&p.end_event_id),
        _ => None,
    }
}

fn open_spans(spans: &[Span], approved: &[EventId]) -> Vec<OpenSpan> {
    spans
        .iter()
        .filter(|s| s.state() == SpanState::Open)
        .filter_map(|s| s.request.map(|r| (s, r)))
        .map(|(s, r)| OpenSpan {
            request_event_id: r.id.clone(),
            kind: match s.kind {
                SpanKind::Tool => "tool",
                SpanKind::Command => "command",
            },
            name: span_name(s, r),
            turn_id: s.turn_id().map(str::to_string),
            requested_unix_ns: r.time_unix_ns,
            approved: approved.contains(&r.id),
        })
        .collect()
}

fn span_name(span: &Span, request: &Event) -> String {
    match &request.payload {
        Payload::CommandRequested(p) => p.argv.join(" "),
        _ => span.tool_name().unwrap_or("?").to_string(),
    }
}

/// Conditions found in one session's events, judged at `now_ns`.
pub(crate) fn session_conditions(events: &[&Event], now_ns: i64) -> Vec<Condition> {
    let mut out = Vec::new();
    let Some(first) = events.first() else {
        return out;
    };
    let session = &first.session;
    let open = pair_spans(events)
        .iter()
        .filter(|s| s.state() == SpanState::Open)
        .count();
    if over_span_cap(open) {
        out.push(condition(
            SPAN_CAP_EXCEEDED,
            session,
            None,
            span_cap_detail(open),
        ));
    }
    for end in pending_ends(events) {
        out.push(pending_condition(&end, now_ns));
    }
    out.extend(events.iter().filter_map(|e| recorded_condition(e)));
    out
}

fn condition(code: &str, session: &SessionRef, at: Option<i64>, detail: String) -> Condition {
    Condition {
        code: code.into(),
        session: Some(session.clone()),
        at_unix_ns: at,
        detail,
    }
}

pub(super) fn pending_condition(end: &PendingEnd, now_ns: i64) -> Condition {
    let age_ns = now_ns - end.requested_unix_ns;
    let code = if end_has_expired(end.requested_unix_ns, now_ns) {
        END_PENDING_OVERDUE
    } else {
        END_PENDING
    };
    let approved = end.open_spans.iter().filter(|s| s.approved).count();
    let detail = format!(
        "{} ({}), {} open span(s), {approved} approved for salvage, pending {}",
        end.end_event_id,
        end.origin,
        end.open_spans.len(),
        human_age(age_ns)
    );
    condition(code, &end.session, Some(end.requested_unix_ns), detail)
}

fn recorded_condition(event: &Event) -> Option<Condition> {
    let (code, detail) = match &event.payload {
        Payload::EndExpired(p) => (END_EXPIRED.to_string(), p.end_event_id.to_string()),
        Payload::HealthCondition(h) => (format!("reported:{}", h.code), h.detail.clone()),
        Payload::RecordProblem(p) => (format!("reported:record_{}", p.kind), p.detail.clone()),
        _ => return None,
    };
    Some(recorded(
        code,
        &event.session,
        Some(event.time_unix_ns),
        detail,
    ))
}

/// A condition the ledger recorded (an expired end, a finalizer's
/// `health.condition`).
pub(super) fn recorded(
    code: String,
    session: &SessionRef,
    at: Option<i64>,
    detail: String,
) -> Condition {
    Condition {
        code,
        session: Some(session.clone()),
        at_unix_ns: at,
        detail,
    }
}

/// What the caller found in the spool directories.
#[derive(Debug, Clone, Default)]
pub struct SpoolFacts {
    pub damaged: Vec<DamagedRange>,
    pub dead_letters: Vec<DeadLetter>,
    pub sessions: Vec<SpoolSessionAge>,
}

#[derive(Debug, Clone)]
pub struct DamagedRange {
    pub file: String,
    pub start: u64,
    pub end: u64,
    pub kind: String,
}

#[derive(Debug, Clone)]
pub struct DeadLetter {
    pub file: String,
    pub written_unix_ns: i64,
}

/// One session spool directory and the age of its oldest undrained file.
#[derive(Debug, Clone)]
pub struct SpoolSessionAge {
    pub adapter: String,
    pub session_key: String,
    pub oldest_unix_ns: i64,
    pub files: usize,
    /// Records waiting in those files (signals not yet finalized).
    pub records: u64,
}

/// Conditions from the spool, judged at `now_ns`.
pub(crate) fn spool_conditions(
    facts: &SpoolFacts,
    now_ns: i64,
    stale_after_ns: i64,
) -> Vec<Condition> {
    let damaged = facts.damaged.iter().map(|d| Condition {
        code: "spool_damage".into(),
        session: None,
        at_unix_ns: None,
        detail: format!("{} bytes {}..{} ({})", d.file, d.start, d.end, d.kind),
    });
    let dead = facts.dead_letters.iter().map(|d| Condition {
        code: "dead_letter".into(),
        session: None,
        at_unix_ns: Some(d.written_unix_ns),
        detail: d.file.clone(),
    });
    let stale = facts
        .sessions
        .iter()
        .filter(|s| now_ns - s.oldest_unix_ns > stale_after_ns)
        .map(|s| Condition {
            code: "stale_spool".into(),
            session: None,
            at_unix_ns: Some(s.oldest_unix_ns),
            detail: format!(
                "{}/{}: {} file(s) not finalized for {}",
                s.adapter,
                s.session_key,
                s.files,
                human_age(now_ns - s.oldest_unix_ns)
            ),
        });
    damaged.chain(dead).chain(stale).collect()
}

/// `3h12m`, `45s`: an age for a human.
pub fn human_age(ns: i64) -> String {
    let secs = ns.max(0) / 1_000_000_000;
    let (h, m, s) = (secs / 3600, (secs % 3600) / 60, secs % 60);
    match (h, m) {
        (0, 0) => format!("{s}s"),
        (0, _) => format!("{m}m{s:02}s"),
        _ => format!("{h}h{m:02}m"),
    }
}

/// Conditions over every session of `events`.
pub fn ledger_conditions(events: &[Event], now_ns: i64) -> Vec<Condition> {
    let groups: BTreeMap<SessionRef, Vec<&Event>> = super::by_session(events);
    groups
        .values()
        .flat_map(|group| session_conditions(group, now_ns))
        .collect()
}

/// Claude Code deletes a transcript this long after its last change
/// (`cleanupPeriodDays`, 30 by default); Copilot keeps its session state
/// until the user removes it, so the same period is used as a warning.
pub(crate) const RECORD_CLEANUP_NS: i64 = 30 * 24 * 3600 * 1_000_000_000;
/// How long before the cleanup period ends an unread record is reported.
pub(crate) const RECORD_CLEANUP_MARGIN_NS: i64 = 7 * 24 * 3600 * 1_000_000_000;

/// One `unreadable_row` condition for each row the reads of `ledger` so
/// far passed over (see `ledger::UnreadableRow`).
pub(crate) fn set_aside_conditions(ledger: &crate::ledger::LedgerReader) -> Vec<Condition> {
    ledger
        .take_set_aside()
        .into_iter()
        .map(|row| Condition {
            code: crate::finalize::UNREADABLE_ROW.into(),
            session: None,
            at_unix_ns: None,
            detail: row.to_string(),
        })
        .collect()
}

/// Unread bytes of one session's record past which `health` reports it
/// (`record_backlog`): 16 runs of `finalize::record::RUN_LEN`.
pub(crate) const RECORD_BACKLOG_CEILING: u64 = 1 << 30;

/// Sessions whose own record still has bytes `finalize` has not read and
/// was last changed so long ago that the agent may soon delete it
/// (`record_unread_near_cleanup`).
pub(crate) fn record_conditions(
    ledger: &crate::ledger::LedgerReader,
    now_ns: i64,
) -> Result<Vec<Condition>, crate::ledger::LedgerError> {
    let mut out = Vec::new();
    use crate::session::RecordCursor;
    for session in ledger.bookkeeping().producer_sessions()? {
        let Some(text) = ledger.producer_state_or_set_aside(&session)? else {
            continue;
        };
        let Some(RecordCursor {
            path: Some(path),
            cursor,
            ..
        }) = RecordCursor::of_state(&text)
        else {
            continue;
        };
        let path = path.as_str();
        // A path that is not the agent's record for this session was
        // refused (a `record_refused` condition already says so): never
        // looked at.
        let role = crate::agents::record::place::RecordRole::Session;
        let shape = crate::agents::record::place::check_shape(
            session.adapter,
            &session.session_id,
            role,
            Path::new(path),
        );
        if shape.is_err() {
            continue;
        }
        let Ok(meta) = std::fs::symlink_metadata(path) else {
            continue;
        };
        if !meta.is_file() {
            continue;
        }
        let unread = meta.len().saturating_sub(cursor);
        if unread > RECORD_BACKLOG_CEILING {
            let run = crate::finalize::record::RUN_LEN;
            let detail = format!(
                "{path}: {unread} bytes not yet read, past the ceiling of \
                 {RECORD_BACKLOG_CEILING}; finalize reads {run} bytes of a session's record a \
                 run, so it needs {} more runs (the record grows faster than it is read, or \
                 is not a real record)",
                unread.div_ceil(run)
            );
            out.push(condition("record_backlog", &session, None, detail));
        }
        let changed_ns = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(now_ns, |d| d.as_nanos() as i64);
        let age = now_ns - changed_ns;
        if meta.len() > cursor && age >= RECORD_CLEANUP_NS - RECORD_CLEANUP_MARGIN_NS {
            let detail = format!(
                "{path}: {} bytes not yet read, last changed {} ago; the agent may delete it \
                 after {}: run `harnery finalize`",
                meta.len() - cursor,
                human_age(age),
                human_age(RECORD_CLEANUP_NS)
            );
            out.push(condition(
                "record_unread_near_cleanup",
                &session,
                Some(changed_ns),
                detail,
            ));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::testkit::{Script, ms};
    use crate::session::policy::{END_EXPIRY_NS, READ_SIDE_SPAN_CAP};

    fn conditions(s: &Script, now: i64) -> Vec<Condition> {
        ledger_conditions(&s.events(), ms(now))
    }

    #[test]
    fn the_span_cap_is_a_condition_not_an_error() {
        let mut s = Script::new("s");
        for i in 0..=READ_SIDE_SPAN_CAP {
            s.request("Bash", i as i64);
        }
        let found = conditions(&s, 1000);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].code, "span_cap_exceeded");
        let mut s = Script::new("s");
        for i in 0..READ_SIDE_SPAN_CAP {
            s.request("Bash", i as i64);
        }
        assert!(conditions(&s, 1000).is_empty());
    }

    #[test]
    fn pending_ends_list_their_open_spans_and_age() {
        let mut s = Script::new("s");
        s.turn("t1");
        let a = s.request("Bash", 0);
        let b = s.request("Read", 0);
        s.complete(&b, 5, None);
        s.no_turn();
        s.request("Edit", 6);
        s.end_requested(10, vec![a.clone()]);
        let events = s.events();
        let refs: Vec<&Event> = events.iter().collect();
        let ends = pending_ends(&refs);
        assert_eq!(ends.len(), 1);
        let spans = &ends[0].open_spans;
        assert_eq!(spans.len(), 2);
        assert!(spans[0].approved && spans[0].request_event_id == a);
        assert!(!spans[1].approved && spans[1].turn_id.is_none());
        assert_eq!(conditions(&s, 20)[0].code, "end_pending");
        let day_ms = END_EXPIRY_NS / 1_000_000;
        assert_eq!(conditions(&s, 11 + day_ms)[0].code, "end_pending_overdue");
    }

    /// The report judges with the rules engine's predicate: an end pending
    /// for exactly 24 hours is one finalize expires, so it is overdue.
    #[test]
    fn an_end_pending_exactly_24_hours_is_overdue() {
        let mut s = Script::new("s");
        s.end_requested(10, vec![]);
        let day_ms = END_EXPIRY_NS / 1_000_000;
        assert_eq!(conditions(&s, 9 + day_ms)[0].code, "end_pending");
        assert_eq!(conditions(&s, 10 + day_ms)[0].code, "end_pending_overdue");
    }

    #[test]
    fn the_span_cap_is_exceeded_only_above_it() {
        let mut s = Script::new("s");
        for i in 0..READ_SIDE_SPAN_CAP {
            s.request("Bash", i as i64);
        }
        assert!(conditions(&s, 1000).is_empty());
        s.request("Bash", 999);
        let found = conditions(&s, 1000);
        assert_eq!(found[0].code, "span_cap_exceeded");
        assert_eq!(
            found[0].detail,
            "257 open spans exceed the read-side cap of 256"
        );
    }

    #[test]
    fn resolved_ends_are_not_pending_and_expiry_is_reported() {
        let mut s = Script::new("s");
        let end = s.end_requested(0, vec![]);
        s.push(
            1,
            Payload::EndExpired(crate::contract::EndExpired { end_event_id: end }),
            crate::report::testkit::derived(crate::contract::Confidence::High),
        );
        s.health(2, "span_watermark");
        let found = conditions(&s, 3);
        let codes: Vec<&str> = found.iter().map(|c| c.code.as_str()).collect();
        assert_eq!(codes, vec!["end_expired", "reported:span_watermark"]);
    }

    #[test]
    fn stale_spools_dead_letters_and_damage() {
        let facts = SpoolFacts {
            damaged: vec![DamagedRange {
                file: "a.seg".into(),
                start: 10,
                end: 20,
                kind: "checksum".into(),
            }],
            dead_letters: vec![DeadLetter {
                file: "dl-1.rec".into(),
                written_unix_ns: 0,
            }],
            sessions: vec![
                SpoolSessionAge {
                    adapter: "copilot".into(),
                    session_key: "old".into(),
                    oldest_unix_ns: 0,
                    files: 2,
                    records: 3,
                },
                SpoolSessionAge {
                    adapter: "copilot".into(),
                    session_key: "fresh".into(),
                    oldest_unix_ns: 9_000,
                    files: 1,
                    records: 1,
                },
            ],
        };
        let found = spool_conditions(&facts, 10_000, 5_000);
        let codes: Vec<&str> = found.iter().map(|c| c.code.as_str()).collect();
        assert_eq!(codes, vec!["spool_damage", "dead_letter", "stale_spool"]);
        assert!(found[2].detail.starts_with("copilot/old"));
    }

    #[test]
    fn ages_read_plainly() {
        assert_eq!(human_age(45_000_000_000), "45s");
        assert_eq!(human_age(125_000_000_000), "2m05s");
        assert_eq!(
            human_age(3 * 3600 * 1_000_000_000 + 60_000_000_000),
            "3h01m"
        );
    }
}
