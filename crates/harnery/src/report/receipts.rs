//! Latency receipts (ADR 0078 "Latency receipt bounds", DESIGN §10).
//!
//! Per turn: the wall time; `known_ms`, the union of observed tool intervals;
//! `upper_bound_ms`, the union of recovery bounds, kept apart from the known
//! time because a bound only says when harnery swept a span, never how long
//! the tool ran; the bound's share of the wall; and whether the tool channel
//! may be ranked. Unions, not sums: two tools running side by side for the
//! same 10 ms cost the turn 10 ms.
//!
//! Beside the tool channel, each turn carries what the agent's own record
//! says of the model: `model_ms`, the sum of its usage records'
//! `duration_ms`, and `tokens`, their input plus output (see
//! [`super::usage`]); both absent when nothing was reported.
//!
//! Interval rules, decided once here:
//! - A closed span with the agent's own duration runs from its request for
//!   that long (from the completion back, when the request was minted by
//!   recovery and so carries the post's time).
//! - A closed span without a duration runs from its native request to its
//!   completion; with a minted request its duration is unknown.
//! - A recovered span contributes request → request + `elapsed_upper_bound_ms`
//!   to the bound union when the bound was observed, and nothing otherwise.
//! - Any span whose duration is unknown (open, recovered, or unreported)
//!   makes the turn's tool channel ineligible for ranking.

use std::collections::BTreeMap;

use serde::Serialize;

use super::ns_to_ms;
use super::spans::{Span, SpanKind, SpanSide, SpanState, pair_spans};
use super::usage::{TurnUsage, turn_usage};
use crate::contract::json::turn_source_name;
use crate::contract::{Event, Observation, Payload, TurnSource};

/// Emitted when a recovery bound reaches past the turn's wall interval.
pub const BOUND_EXCEEDS_WALL: &str = "recovery_bound_exceeds_turn_wall";
/// The turn has no `turn.completed`; its wall ends at its last native event.
pub(crate) const COMPLETION_NOT_OBSERVED: &str = "turn_completion_not_observed";
/// The turn has no `turn.started`; its wall starts at its first event.
pub(crate) const START_NOT_OBSERVED: &str = "turn_start_not_observed";

/// A half-open interval in unix nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Interval {
    pub start: i64,
    pub end: i64,
}

impl Interval {
    fn new(start: i64, end: i64) -> Interval {
        Interval {
            start,
            end: end.max(start),
        }
    }

    fn clip(self, to: Interval) -> Option<Interval> {
        let (start, end) = (self.start.max(to.start), self.end.min(to.end));
        (end > start).then_some(Interval { start, end })
    }
}

/// Total length of the union of `intervals`, in nanoseconds.
pub(crate) fn union_ns(intervals: &[Interval]) -> i64 {
    let mut sorted = intervals.to_vec();
    sorted.sort();
    let mut total = 0i64;
    let mut current: Option<Interval> = None;
    for next in sorted {
        current = match current {
            Some(c) if next.start <= c.end => Some(Interval::new(c.start, c.end.max(next.end))),
            Some(c) => {
                total += c.end - c.start;
                Some(next)
            }
            None => Some(next),
        };
    }
    total + current.map_or(0, |c| c.end - c.start)
}

/// The receipt of one turn.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TurnReceipt {
    pub turn_id: String,
    /// `native` or `stamped`.
    pub turn_source: &'static str,
    pub started_unix_ns: i64,
    pub ended_unix_ns: i64,
    pub wall_ms: u64,
    pub tools: ToolChannel,
    /// Model time: the sum of the `duration_ms` the turn's usage records
    /// reported; `None` when none reported one.
    pub model_ms: Option<u64>,
    /// Input plus output tokens the turn's usage records reported;
    /// `None` when none reported either.
    pub tokens: Option<u64>,
    /// Codes such as `recovery_bound_exceeds_turn_wall`, `turn_completion_not_observed`.
    pub notes: Vec<&'static str>,
}

/// The tool channel of one turn.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolChannel {
    pub spans: usize,
    pub closed: usize,
    pub recovered: usize,
    pub open: usize,
    /// Union of observed tool intervals.
    pub known_ms: u64,
    /// Union of observed recovery bounds, unclipped.
    pub upper_bound_ms: u64,
    /// Recovered spans whose bound is unknown (cross boot, missing, ...).
    pub bounds_unknown: usize,
    /// Share of the turn wall covered by the bound union clipped to the
    /// wall, in percent; `None` for a zero-length wall.
    pub upper_bound_share_pct: Option<f64>,
    pub eligible_for_ranking: bool,
    /// Why not, when not: `open_span`, `recovered_span`, `duration_not_reported`.
    pub ineligible_because: Vec<&'static str>,
}

/// The receipts of one session: its turns in start order, and the tool
/// spans no trustworthy turn owns.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SessionReceipts {
    pub turns: Vec<TurnReceipt>,
    pub unattributed_spans: usize,
}

/// Receipts for one session's events (offset order).
pub fn session_receipts(events: &[&Event]) -> SessionReceipts {
    let mut turns = TurnFold::default();
    for event in events {
        turns.add_event(event);
    }
    let mut unattributed_spans = 0;
    for span in pair_spans(events) {
        if span.kind == SpanKind::Tool && span.turn_id().is_none() {
            unattributed_spans += 1;
        }
        turns.add_span(&span);
    }
    let usage = turn_usage(events.iter().copied());
    SessionReceipts {
        turns: turns.receipts(&usage),
        unattributed_spans,
    }
}

/// A session's turns taken as its events come, one at a time: the marks
/// that bound each turn's wall and each turn's tally of tool spans. What
/// it holds follows the number of turns and of spans, never the events,
/// so a caller that streams a session (the OTLP export) need not keep
/// them; [`session_receipts`] is the same fold over a whole session.
#[derive(Default)]
pub(crate) struct TurnFold {
    /// Each turn's marks and tally, in the order first seen.
    turns: Vec<FoldedTurn>,
    by_id: BTreeMap<String, usize>,
    /// The turn last added to: consecutive rows mostly share one, and
    /// find it without a lookup.
    last: Option<usize>,
}

struct FoldedTurn {
    turn_id: String,
    marks: Option<TurnMarks>,
    tools: Option<ToolTally>,
}

impl TurnFold {
    /// Take one event's part in its turn's wall.
    pub(crate) fn add_event(&mut self, event: &Event) {
        if let Some(turn_id) = event.turn.turn_id.as_deref() {
            self.add_mark(turn_id, TurnMark::of(event));
        }
    }

    /// Take one event's part in the wall of its turn, `turn_id`.
    pub(crate) fn add_mark(&mut self, turn_id: &str, mark: TurnMark) {
        let turn = self.turn(turn_id);
        turn.marks.get_or_insert_with(TurnMarks::default).add(mark);
    }

    /// Take one span, as it will stay (closed or recovered, or open at the
    /// session's end); only tool spans of a turn count.
    pub(crate) fn add_span<'a, R: SpanSide<'a>>(&mut self, span: &Span<'a, R>) {
        let (SpanKind::Tool, Some(turn_id)) = (span.kind, span.turn_id()) else {
            return;
        };
        let turn = self.turn(turn_id);
        turn.tools.get_or_insert_with(ToolTally::default).add(span);
    }

    fn turn(&mut self, turn_id: &str) -> &mut FoldedTurn {
        let at = match self.last {
            Some(i) if self.turns[i].turn_id == turn_id => i,
            _ => match self.by_id.get(turn_id) {
                Some(&i) => i,
                None => {
                    self.by_id.insert(turn_id.to_string(), self.turns.len());
                    self.turns.push(FoldedTurn {
                        turn_id: turn_id.to_string(),
                        marks: None,
                        tools: None,
                    });
                    self.turns.len() - 1
                }
            },
        };
        self.last = Some(at);
        &mut self.turns[at]
    }

    /// Each turn's receipt, in start order (turns that start together, in
    /// turn id order). A turn is one where an event marked it.
    pub(crate) fn receipts(self, usage: &BTreeMap<String, TurnUsage>) -> Vec<TurnReceipt> {
        let mut turns: Vec<TurnReceipt> = self
            .turns
            .into_iter()
            .filter_map(|t| {
                let marks = t.marks?;
                let used = usage.get(&t.turn_id);
                let tally = t.tools.unwrap_or_default();
                Some(receipt(wall_of(t.turn_id, marks), tally, used))
            })
            .collect();
        turns.sort_by(|a, b| {
            let by_start = a.started_unix_ns.cmp(&b.started_unix_ns);
            by_start.then_with(|| a.turn_id.cmp(&b.turn_id))
        });
        turns
    }
}

/// Where a turn's wall starts and ends, and what was not seen.
struct TurnWall {
    turn_id: String,
    source: TurnSource,
    wall: Interval,
    notes: Vec<&'static str>,
}

#[derive(Default)]
struct TurnMarks {
    source: Option<TurnSource>,
    started: Option<i64>,
    completed: Option<i64>,
    first: Option<i64>,
    last_native: Option<i64>,
    last_any: Option<i64>,
}

/// What one event of a turn tells of its wall.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TurnMark {
    pub time_unix_ns: i64,
    pub source: TurnSource,
    /// The agent itself reported the event.
    pub native: bool,
    /// The event opens (`turn.started`) or closes (`turn.completed`) it.
    pub boundary: Option<TurnBoundary>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TurnBoundary {
    Started,
    Completed,
}

impl TurnMark {
    pub(crate) fn of(event: &Event) -> TurnMark {
        TurnMark {
            time_unix_ns: event.time_unix_ns,
            source: event.turn.source,
            native: event.provenance.attestation == crate::contract::Attestation::Native,
            boundary: match event.payload {
                Payload::TurnStarted(_) => Some(TurnBoundary::Started),
                Payload::TurnCompleted(_) => Some(TurnBoundary::Completed),
                _ => None,
            },
        }
    }
}

impl TurnMarks {
    fn add(&mut self, mark: TurnMark) {
        let t = mark.time_unix_ns;
        self.source.get_or_insert(mark.source);
        self.first = Some(self.first.map_or(t, |f| f.min(t)));
        self.last_any = Some(self.last_any.map_or(t, |l| l.max(t)));
        if mark.native {
            self.last_native = Some(self.last_native.map_or(t, |l| l.max(t)));
        }
        match mark.boundary {
            Some(TurnBoundary::Started) => self.started = self.started.or(Some(t)),
            Some(TurnBoundary::Completed) => self.completed = Some(t),
            None => {}
        }
    }
}

fn wall_of(turn_id: String, m: TurnMarks) -> TurnWall {
    let mut notes = Vec::new();
    let first = m.first.expect("a turn is only recorded with an event");
    let start = m.started.unwrap_or_else(|| {
        notes.push(START_NOT_OBSERVED);
        first
    });
    let end = m.completed.unwrap_or_else(|| {
        notes.push(COMPLETION_NOT_OBSERVED);
        m.last_native.or(m.last_any).unwrap_or(first)
    });
    TurnWall {
        turn_id,
        source: m.source.unwrap_or(TurnSource::None),
        wall: Interval::new(start, end),
        notes,
    }
}

fn receipt(wall: TurnWall, tally: ToolTally, usage: Option<&TurnUsage>) -> TurnReceipt {
    let mut notes = wall.notes;
    let tools = tally.channel(wall.wall, &mut notes);
    TurnReceipt {
        turn_id: wall.turn_id,
        turn_source: turn_source_name(wall.source),
        started_unix_ns: wall.wall.start,
        ended_unix_ns: wall.wall.end,
        wall_ms: ns_to_ms(wall.wall.end - wall.wall.start),
        tools,
        model_ms: usage.and_then(|u| u.model_ms),
        tokens: usage.and_then(|u| u.tokens.in_out()),
        notes,
    }
}

/// What one span contributes to its turn's tool channel.
enum Contribution {
    Known(Interval),
    Bound(Interval),
    /// Duration unknown, for this reason; no interval at all.
    Unknown(&'static str),
}

fn contribution<'a, R: SpanSide<'a>>(span: &Span<'a, R>) -> Contribution {
    match span.state() {
        SpanState::Open => Contribution::Unknown("open_span"),
        SpanState::Recovered => match (span.request, span.upper_bound_ms()) {
            (Some(req), Some(Observation::Observed(ms))) => {
                let start = req.time_unix_ns();
                Contribution::Bound(Interval::new(start, start + ms_to_ns(*ms)))
            }
            _ => Contribution::Unknown("recovered_span"),
        },
        SpanState::ClosedNative => closed_interval(span)
            .map(Contribution::Known)
            .unwrap_or(Contribution::Unknown("duration_not_reported")),
    }
}

fn closed_interval<'a, R: SpanSide<'a>>(span: &Span<'a, R>) -> Option<Interval> {
    let end = span.terminal?.time_unix_ns();
    let native_request = span.request.filter(|_| !span.request_recovered());
    match (span.reported_duration(), native_request) {
        (Some(Observation::Observed(ms)), Some(req)) => {
            let start = req.time_unix_ns();
            Some(Interval::new(start, start + ms_to_ns(*ms)))
        }
        (Some(Observation::Observed(ms)), None) => Some(Interval::new(end - ms_to_ns(*ms), end)),
        (_, Some(req)) => Some(Interval::new(req.time_unix_ns(), end)),
        (_, None) => None,
    }
}

fn ms_to_ns(ms: u64) -> i64 {
    i64::try_from(ms).unwrap_or(i64::MAX / 1_000_000) * 1_000_000
}

/// One turn's tool spans as they come: what each contributes, and how
/// many are in each state.
#[derive(Default)]
struct ToolTally {
    known: Vec<Interval>,
    bounds: Vec<Interval>,
    unknown: Vec<&'static str>,
    spans: usize,
    closed: usize,
    recovered: usize,
    open: usize,
}

impl ToolTally {
    fn add<'a, R: SpanSide<'a>>(&mut self, span: &Span<'a, R>) {
        match contribution(span) {
            Contribution::Known(i) => self.known.push(i),
            Contribution::Bound(i) => self.bounds.push(i),
            Contribution::Unknown(why) => self.unknown.push(why),
        }
        self.spans += 1;
        match span.state() {
            SpanState::Open => self.open += 1,
            SpanState::ClosedNative => self.closed += 1,
            SpanState::Recovered => self.recovered += 1,
        }
    }

    fn channel(self, wall: Interval, notes: &mut Vec<&'static str>) -> ToolChannel {
        let bounds = &self.bounds;
        if bounds
            .iter()
            .any(|b| b.start < wall.start || b.end > wall.end)
        {
            notes.push(BOUND_EXCEEDS_WALL);
        }
        let clipped: Vec<Interval> = bounds.iter().filter_map(|b| b.clip(wall)).collect();
        let wall_ns = wall.end - wall.start;
        let share = (wall_ns > 0).then(|| union_ns(&clipped) as f64 * 100.0 / wall_ns as f64);
        let mut ineligible_because: Vec<&'static str> = self.unknown.clone();
        if !bounds.is_empty() {
            ineligible_because.push("recovered_span");
        }
        ineligible_because.sort_unstable();
        ineligible_because.dedup();
        ToolChannel {
            spans: self.spans,
            closed: self.closed,
            recovered: self.recovered,
            open: self.open,
            known_ms: ns_to_ms(union_ns(&self.known)),
            upper_bound_ms: ns_to_ms(union_ns(bounds)),
            bounds_unknown: self
                .unknown
                .iter()
                .filter(|w| **w == "recovered_span")
                .count(),
            upper_bound_share_pct: share.map(|s| (s * 10.0).round() / 10.0),
            eligible_for_ranking: ineligible_because.is_empty(),
            ineligible_because,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::RecoveryReason::*;
    use crate::report::testkit::Script;

    fn receipts(s: &Script) -> SessionReceipts {
        let events = s.events();
        let refs: Vec<&Event> = events.iter().collect();
        session_receipts(&refs)
    }

    proptest::proptest! {
        /// The union never exceeds the sum nor falls below the longest
        /// interval, ignores order, and equals a unit-by-unit count.
        #[test]
        fn union_is_bounded_and_order_free(raw in proptest::collection::vec((0i64..200, 0i64..50), 0..12)) {
            let ivs: Vec<Interval> = raw.iter().map(|&(a, len)| Interval::new(a, a + len)).collect();
            let total = union_ns(&ivs);
            let sum: i64 = ivs.iter().map(|i| i.end - i.start).sum();
            let longest = ivs.iter().map(|i| i.end - i.start).max().unwrap_or(0);
            proptest::prop_assert!(total <= sum && total >= longest);
            let mut reversed = ivs.clone();
            reversed.reverse();
            proptest::prop_assert_eq!(union_ns(&reversed), total);
            let covered = (0..250).filter(|&t| ivs.iter().any(|i| i.start <= t && t < i.end)).count();
            proptest::prop_assert_eq!(total, covered as i64);
        }
    }

    proptest::proptest! {
        /// Whatever the bounds, the share stays within 0..=100 and the
        /// clipping note appears exactly when a bound leaves the wall.
        #[test]
        fn shares_are_clipped_to_the_wall(spans in proptest::collection::vec((0i64..100, 0u64..300), 1..6)) {
            let mut s = Script::new("s");
            s.turn("t1");
            s.start(0);
            let reqs: Vec<_> = spans.iter().map(|&(at, _)| s.request("Bash", at)).collect();
            s.stop(100);
            for (req, &(_, bound)) in reqs.iter().zip(&spans) {
                s.recover(req, 100, CompletionNotObservedBeforeTurnEnd, Some(bound));
            }
            let turn = &receipts(&s).turns[0];
            let share = turn.tools.upper_bound_share_pct.unwrap();
            proptest::prop_assert!((0.0..=100.0).contains(&share));
            let exceeds = spans.iter().any(|&(at, b)| at + b as i64 > 100);
            proptest::prop_assert_eq!(turn.notes.contains(&BOUND_EXCEEDS_WALL), exceeds);
            proptest::prop_assert!(!turn.tools.eligible_for_ranking);
        }
    }

    #[test]
    fn union_merges_overlaps_and_keeps_gaps() {
        let iv = |a, b| Interval::new(a, b);
        assert_eq!(union_ns(&[]), 0);
        assert_eq!(union_ns(&[iv(0, 10), iv(5, 15), iv(20, 30)]), 25);
        assert_eq!(union_ns(&[iv(20, 30), iv(0, 40)]), 40);
        assert_eq!(union_ns(&[iv(0, 10), iv(10, 20)]), 20);
    }

    #[test]
    fn overlapping_native_spans_are_unioned_not_summed() {
        let mut s = Script::new("s");
        s.turn("t1");
        s.start(0);
        let a = s.request("Bash", 10);
        let b = s.request("Read", 20);
        s.complete(&b, 40, None);
        s.complete(&a, 60, None);
        let c = s.request("Grep", 80);
        s.complete(&c, 90, Some(5));
        s.stop(100);
        let r = receipts(&s);
        let turn = &r.turns[0];
        assert_eq!(turn.wall_ms, 100);
        // [10,60) ∪ [20,40) ∪ [80,85) = 50 + 5
        assert_eq!(turn.tools.known_ms, 55);
        assert_eq!(turn.tools.upper_bound_ms, 0);
        assert!(turn.tools.eligible_for_ranking);
        assert!(turn.notes.is_empty());
    }

    #[test]
    fn bounds_stay_apart_from_known_time_and_make_the_turn_ineligible() {
        let mut s = Script::new("s");
        s.turn("t1");
        s.start(0);
        let a = s.request("Bash", 0);
        s.complete(&a, 30, None);
        let b = s.request("Read", 20);
        let c = s.request("Edit", 25);
        s.stop(200);
        s.recover(&b, 200, CompletionNotObservedBeforeTurnEnd, Some(60));
        s.recover(&c, 200, CompletionNotObservedBeforeTurnEnd, Some(20));
        let turn = &receipts(&s).turns[0];
        assert_eq!(turn.tools.known_ms, 30);
        // [20,80) ∪ [25,45) = 60; overlap with known time is not subtracted.
        assert_eq!(turn.tools.upper_bound_ms, 60);
        assert_eq!(turn.tools.upper_bound_share_pct, Some(30.0));
        assert_eq!(turn.tools.recovered, 2);
        assert!(!turn.tools.eligible_for_ranking);
        assert_eq!(turn.tools.ineligible_because, vec!["recovered_span"]);
        assert!(!turn.notes.contains(&BOUND_EXCEEDS_WALL));
    }

    #[test]
    fn a_bound_past_the_wall_is_clipped_for_the_share_and_flagged() {
        let mut s = Script::new("s");
        s.turn("t1");
        s.start(0);
        let a = s.request("Bash", 50);
        s.stop(100);
        s.recover(&a, 100, CompletionNotObservedBeforeTurnEnd, Some(500));
        let turn = &receipts(&s).turns[0];
        assert_eq!(turn.tools.upper_bound_ms, 500);
        assert_eq!(turn.tools.upper_bound_share_pct, Some(50.0));
        assert!(turn.notes.contains(&BOUND_EXCEEDS_WALL));
    }

    #[test]
    fn unknown_bounds_open_spans_and_unreported_durations_are_ineligible() {
        let mut s = Script::new("s");
        s.turn("t1");
        s.start(0);
        let a = s.request("Bash", 10);
        s.request("Read", 20);
        s.unmatched_post("Edit", 30, None);
        s.stop(100);
        s.recover(&a, 100, CompletionNotObservedBeforeTurnEnd, None);
        let turn = &receipts(&s).turns[0];
        assert_eq!(turn.tools.known_ms, 0);
        assert_eq!(turn.tools.upper_bound_ms, 0);
        assert_eq!(turn.tools.bounds_unknown, 1);
        assert_eq!(turn.tools.upper_bound_share_pct, Some(0.0));
        assert_eq!(
            turn.tools.ineligible_because,
            vec!["duration_not_reported", "open_span", "recovered_span"]
        );
    }

    #[test]
    fn a_minted_request_with_a_native_duration_counts_as_known() {
        let mut s = Script::new("s");
        s.turn("t1");
        s.start(0);
        s.unmatched_post("Edit", 50, Some(20));
        s.stop(100);
        let turn = &receipts(&s).turns[0];
        assert_eq!(turn.tools.known_ms, 20);
        assert!(turn.tools.eligible_for_ranking);
    }

    #[test]
    fn a_turn_without_stop_ends_at_its_last_native_event_and_says_so() {
        let mut s = Script::new("s");
        s.turn("t1");
        s.start(0);
        let a = s.request("Bash", 40);
        s.turn("t2");
        s.start(300);
        s.stop(400);
        s.turn("t1");
        s.recover(&a, 300, CompletionNotObservedBeforeNextTurn, Some(260));
        let r = receipts(&s);
        assert_eq!(r.turns.len(), 2);
        let t1 = &r.turns[0];
        assert_eq!(t1.turn_id, "t1");
        assert_eq!(t1.wall_ms, 40);
        assert!(t1.notes.contains(&COMPLETION_NOT_OBSERVED));
        assert!(t1.notes.contains(&BOUND_EXCEEDS_WALL));
        assert_eq!(t1.tools.upper_bound_share_pct, Some(0.0));
        assert!(r.turns[1].notes.is_empty());
    }

    #[test]
    fn spans_without_a_turn_are_counted_apart() {
        let mut s = Script::new("s");
        s.request("Bash", 0);
        let r = receipts(&s);
        assert!(r.turns.is_empty());
        assert_eq!(r.unattributed_spans, 1);
    }
}
