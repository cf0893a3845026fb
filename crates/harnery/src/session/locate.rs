//! Where each checkpoint stands in the agent's own record (contract
//! generation 7): `checkpoint.located`, written once per checkpoint when
//! the record was read past the checkpoint's turn.
//!
//! A checkpoint is pinned when the next turn's work arrives, usually before
//! the finalizer has read the turn's record lines, so its place cannot be
//! taken when it is pinned. It waits here, in the record's producer state,
//! and is placed by the same rule `restore::record_cut` applies at read
//! time, fed the events in the same order:
//!
//! - the turns a checkpoint keeps are those of the events below it; the
//!   record is cut at the first line of the session's own record whose
//!   events name another turn (or, naming none, are a user message after
//!   the kept lines);
//! - then the next turn's preamble is left out: the run of Claude Code
//!   `file-history-snapshot` lines just before the cut; for Copilot
//!   everything after the last `assistant.turn_end`;
//! - a Copilot record that closes the session (`session.shutdown`) places
//!   its waiting checkpoints at its last turn end: no later turn follows;
//! - so does a record read to its end after the agent said the session
//!   ended (Claude Code's `SessionEnd`, Copilot's `sessionEnd`): a
//!   waiting checkpoint keeps the whole record, less the preamble at its
//!   end, as a restore derives it when no later turn follows.
//!
//! The place names the last line kept by the agent's own id (Claude Code
//! `uuid`, Copilot event `id`). The state is bounded: turns are remembered
//! by the order they first appeared in ([`PLACE_TURNS`]), and a
//! checkpoint that a forgotten turn could misplace is given up, as is the
//! oldest of more than [`WAITING`] (a restore then derives its place).
//! Producer state is saved with the events of the batch, so a place is
//! written once across runs and crashes, and an epoch advance carries the
//! waiting checkpoints with the record's cursor.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use super::SessionProducer;
use super::emit::{Draft, Trigger};
use crate::agents::harnery::LineAt;
use crate::agents::record::LineMark;
use crate::contract::{CheckpointLocated, Event, EventId, Payload, TurnAttribution};

/// Turns remembered in the order they appeared.
pub(crate) const PLACE_TURNS: usize = 64;
/// Checkpoints waiting for their place at once.
pub(crate) const WAITING: usize = 32;

/// A line of the record: where it starts, and the agent's id for it.
type LineId = (u64, String);

/// The checkpoints waiting for their place, and what the record read so
/// far says of where a cut would fall.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Locator {
    #[serde(default, skip_serializing_if = "VecDeque::is_empty")]
    waiting: VecDeque<Unplaced>,
    /// Turns of the session's events and the order each first appeared
    /// in, newest last.
    #[serde(default, skip_serializing_if = "VecDeque::is_empty")]
    turns: VecDeque<(String, u64)>,
    /// Turns seen so far: the next one's order.
    #[serde(default, skip_serializing_if = "is_zero")]
    seen: u64,
    /// Where the last line read from the record with a turn starts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    turned_end: Option<u64>,
    /// Where the record's last line read ends.
    #[serde(default, skip_serializing_if = "is_zero")]
    read_to: u64,
    /// The last line read with an id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    last_id: Option<LineId>,
    /// The run of next-prompt lines just read: where it starts, and the
    /// last line with an id before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    preamble: Option<(u64, Option<LineId>)>,
    /// The last turn-end line read: where it ends, and its id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    turn_end: Option<(u64, Option<LineId>)>,
    /// The record's last line read closed the session.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    closed: bool,
    /// The agent said the session ended (and has not resumed it since).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    ended: bool,
    /// Where the record ended the last time it was read to the end it
    /// had: while nothing more is read, the whole record once the session
    /// ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    at_end: Option<u64>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// A checkpoint not placed yet.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Unplaced {
    checkpoint_id: String,
    event_id: EventId,
    /// The turns it keeps: those first seen before it (a lower order).
    turns_before: u64,
    /// Where the last line of a turn it keeps starts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    kept_end: Option<u64>,
    /// Its place, once found: the end of what is kept, and the last line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    place: Option<(u64, Option<LineId>)>,
}

impl Locator {
    pub(crate) fn is_unused(&self) -> bool {
        *self == Locator::default()
    }

    /// Learn from an event just stamped: its turn, and, for a line of the
    /// session's own record (`own` is its path), whether a waiting
    /// checkpoint's kept record ends before it.
    pub(crate) fn observe(&mut self, e: &Event, own: Option<&str>) {
        let order = e.turn.turn_id.as_deref().map(|t| self.order_of(t));
        let Some(at) = e.payload.record_line() else {
            return;
        };
        if own != Some(at.path.as_str()) {
            return;
        }
        let user = matches!(e.payload, Payload::MessageUser(_));
        let mut cut_here = None;
        for i in 0..self.waiting.len() {
            let w = &self.waiting[i];
            if w.place.is_some() {
                continue;
            }
            let kept = order.is_some_and(|o| o < w.turns_before);
            let later = match order {
                Some(_) => !kept,
                None => user && w.kept_end.is_some_and(|k| at.offset > k),
            };
            if later {
                let place = cut_here.get_or_insert_with(|| self.cut_before(at.offset));
                self.waiting[i].place = Some(place.clone());
            } else if kept {
                let w = &mut self.waiting[i];
                w.kept_end = w.kept_end.max(Some(at.offset));
            }
        }
        if order.is_some() {
            self.turned_end = self.turned_end.max(Some(at.offset));
        }
    }

    /// Where a cut at the line starting at `at` (the next turn's first)
    /// falls once the preamble is left out, and the last line kept.
    fn cut_before(&self, at: u64) -> (u64, Option<LineId>) {
        if let Some((end, id)) = &self.turn_end {
            return (*end, id.clone());
        }
        match &self.preamble {
            // The run reaches the cut, with no line passed over between.
            Some((start, id)) if self.read_to == at => (*start, id.clone()),
            _ => (at, self.last_id.clone()),
        }
    }

    /// The order `turn` first appeared in; a turn new here is the next.
    fn order_of(&mut self, turn: &str) -> u64 {
        if let Some((_, order)) = self.turns.iter().rev().find(|(t, _)| t == turn) {
            return *order;
        }
        if self.turns.len() == PLACE_TURNS
            && let Some((_, forgotten)) = self.turns.pop_front()
        {
            // A checkpoint that kept the forgotten turn could take a late
            // line of it for the next turn's: it is given up.
            self.waiting
                .retain(|w| w.place.is_some() || w.turns_before <= forgotten);
        }
        let order = self.seen;
        self.seen += 1;
        self.turns.push_back((turn.to_string(), order));
        order
    }

    /// A line of the session's own record was read (after its events):
    /// what it says of where a later cut falls. `closes` is a main-agent
    /// line that closes the session.
    pub(crate) fn line(&mut self, at: LineAt, id: Option<&str>, closes: bool) {
        let (offset, bytes) = (at.offset, u64::from(at.bytes));
        // Lines the finalizer passed over (blank, or naming another
        // session) break a run of preamble lines, as their bytes do.
        if offset > self.read_to {
            self.preamble = None;
        }
        let id = id.map(|id| (offset, id.to_string()));
        match at.mark {
            LineMark::NextPrompt => {
                if self.preamble.is_none() {
                    self.preamble = Some((offset, self.last_id.clone()));
                }
            }
            LineMark::TurnEnd => {
                self.turn_end = Some((offset + bytes, id.clone().or(self.last_id.clone())));
                self.preamble = None;
            }
            LineMark::None => self.preamble = None,
        }
        if id.is_some() {
            self.last_id = id;
        }
        self.read_to = offset + bytes;
        self.closed = closes;
        if closes {
            self.place_at_close();
        }
    }

    /// The record closed the session: a waiting checkpoint keeps it up to
    /// its last turn end (none yet: it waits on).
    fn place_at_close(&mut self) {
        if let Some(end) = self.turn_end.clone() {
            self.place_waiting(end);
        }
    }

    /// The agent said the session ended.
    pub(crate) fn session_ended(&mut self) {
        self.ended = true;
    }

    /// The agent resumed the session: its record may go on.
    pub(crate) fn resumed(&mut self) {
        self.ended = false;
    }

    /// The session's own record was read to the end it had.
    pub(crate) fn read_to_end(&mut self) {
        self.at_end = Some(self.read_to);
    }

    /// Whether [`settle_at_end`](Self::settle_at_end) would place a
    /// checkpoint now (it changes nothing).
    pub(crate) fn may_settle(&self) -> bool {
        self.ended
            && self.at_end == Some(self.read_to)
            && self.waiting.iter().any(|w| w.place.is_none())
    }

    /// At the end of a finalize run (its records followed): once the
    /// session ended and its record was read to its end, with nothing
    /// read since, a waiting checkpoint keeps all of it but the preamble
    /// at its end. Whether one was placed.
    pub(crate) fn settle_at_end(&mut self) -> bool {
        if !self.ended || self.at_end != Some(self.read_to) {
            return false;
        }
        self.place_waiting(self.cut_before(self.read_to))
    }

    /// Place every waiting checkpoint at `place`: whether there was one.
    fn place_waiting(&mut self, place: (u64, Option<LineId>)) -> bool {
        let mut placed = false;
        for w in self.waiting.iter_mut().filter(|w| w.place.is_none()) {
            w.place = Some(place.clone());
            placed = true;
        }
        placed
    }

    /// A checkpoint was pinned: it keeps the turns seen so far.
    pub(crate) fn pin(&mut self, checkpoint_id: String, event_id: EventId) {
        if self.waiting.len() == WAITING {
            self.waiting.pop_front();
        }
        self.waiting.push_back(Unplaced {
            checkpoint_id,
            event_id,
            turns_before: self.seen,
            kept_end: self.turned_end,
            place: None,
        });
        if self.closed {
            self.place_at_close();
        } else {
            self.settle_at_end();
        }
    }

    /// Checkpoints a resume invalidated are placed no more.
    pub(crate) fn forget(&mut self, invalidated: &[String]) {
        self.waiting
            .retain(|w| !invalidated.contains(&w.checkpoint_id));
    }

    /// The places found, in the order the checkpoints were pinned.
    fn take_placed(&mut self, path: &str) -> Vec<CheckpointLocated> {
        let (placed, waiting) = std::mem::take(&mut self.waiting)
            .into_iter()
            .partition::<VecDeque<_>, _>(|w| w.place.is_some());
        self.waiting = waiting;
        placed
            .into_iter()
            .map(|w| {
                let (end, line) = w.place.expect("partitioned on a place");
                CheckpointLocated {
                    checkpoint_id: w.checkpoint_id,
                    checkpoint_event_id: w.event_id,
                    path: path.to_string(),
                    end,
                    line_offset: line.as_ref().map(|(at, _)| *at),
                    line_id: line.map(|(_, id)| id),
                }
            })
            .collect()
    }
}

impl SessionProducer {
    /// At the end of a finalize run: the checkpoints an ended session's
    /// whole record places (see [`Locator::settle_at_end`]).
    pub(super) fn locate_tick(
        &mut self,
        now_unix_ns: i64,
        clock: &crate::clock::ClockSample,
    ) -> Vec<Event> {
        let mut out = Vec::new();
        if !self.record.locate.settle_at_end() {
            return out;
        }
        let mut trigger = Trigger {
            key: std::borrow::Cow::Owned(format!("located-at-end:{}", self.record.locate.read_to)),
            raw: None,
            time_unix_ns: now_unix_ns,
            time_source: crate::contract::TimeSource::Finalizer,
            clock: Some(clock),
            emitted: 0,
        };
        self.emit_places(&mut trigger, &mut out);
        out
    }

    /// Write `checkpoint.located` for each checkpoint placed so far.
    pub(super) fn emit_places(&mut self, trigger: &mut Trigger, out: &mut Vec<Event>) {
        let Some(path) = self.record.path.clone() else {
            return;
        };
        for place in self.record.locate.take_placed(&path) {
            self.log
                .note_located(&place.checkpoint_id, self.stamp.next_offset);
            let draft = Draft {
                tag: format!("located:{}", place.checkpoint_id),
                provenance: super::emit::derived_high(),
                ..Draft::native(
                    Payload::CheckpointLocated(place),
                    TurnAttribution::none(),
                    None,
                )
            };
            self.emit(trigger, draft, out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(offset: u64, mark: LineMark, bytes: u32) -> LineAt {
        LineAt {
            offset,
            bytes,
            mark,
        }
    }

    #[test]
    fn a_preamble_run_is_left_out_and_a_turn_end_kept() {
        let mut l = Locator::default();
        l.line(at(0, LineMark::None, 10), Some("u1"), false);
        l.line(at(10, LineMark::NextPrompt, 5), None, false);
        l.line(at(15, LineMark::NextPrompt, 5), None, false);
        assert_eq!(l.cut_before(20), (10, Some((0, "u1".into()))));
        assert_eq!(
            l.cut_before(21),
            (21, Some((0, "u1".into()))),
            "a line passed over"
        );
        l.line(at(20, LineMark::None, 5), Some("u2"), false);
        assert_eq!(l.cut_before(25), (25, Some((20, "u2".into()))));
        // A gap (a blank line passed over) breaks the run.
        l.line(at(30, LineMark::NextPrompt, 5), None, false);
        l.line(at(40, LineMark::NextPrompt, 5), None, false);
        assert_eq!(l.cut_before(45), (40, Some((20, "u2".into()))));
        l.line(at(45, LineMark::TurnEnd, 7), Some("e9"), false);
        l.line(at(52, LineMark::None, 3), Some("e10"), false);
        assert_eq!(l.cut_before(55), (52, Some((45, "e9".into()))));
    }

    #[test]
    fn a_record_read_to_its_end_after_the_session_ended_places_all_of_it() {
        let mut l = Locator::default();
        l.pin("a".into(), EventId("ev_a".into()));
        l.line(at(0, LineMark::None, 10), Some("u1"), false);
        l.read_to_end();
        assert!(!l.settle_at_end(), "not ended: it waits");
        l.line(at(10, LineMark::None, 10), Some("u2"), false);
        l.line(at(20, LineMark::NextPrompt, 5), None, false);
        l.session_ended();
        assert!(!l.settle_at_end(), "not read to its end since");
        l.read_to_end();
        assert!(l.settle_at_end());
        let placed = l.take_placed("p");
        assert_eq!(
            (placed[0].end, placed[0].line_id.as_deref()),
            (20, Some("u2")),
            "the preamble at the end left out"
        );
        l.pin("b".into(), EventId("ev_b".into()));
        assert_eq!(l.take_placed("p")[0].end, 20, "pinned after it: the same");
        l.line(at(25, LineMark::None, 5), Some("u3"), false);
        l.pin("c".into(), EventId("ev_c".into()));
        assert!(l.take_placed("p").is_empty(), "more was read: it waits");
        l.resumed();
        l.read_to_end();
        assert!(!l.settle_at_end(), "resumed: it waits");
    }

    #[test]
    fn a_closed_record_places_at_its_last_turn_end_and_only_then() {
        let mut l = Locator::default();
        l.pin("a".into(), EventId("ev_a".into()));
        l.line(at(0, LineMark::None, 10), Some("e1"), true);
        assert!(l.take_placed("p").is_empty(), "no turn end: it waits");
        l.line(at(10, LineMark::TurnEnd, 10), Some("e2"), false);
        l.line(at(20, LineMark::None, 10), Some("e3"), true);
        let placed = l.take_placed("p");
        assert_eq!(placed.len(), 1);
        assert_eq!(
            (placed[0].end, placed[0].line_id.as_deref()),
            (20, Some("e2"))
        );
        l.pin("b".into(), EventId("ev_b".into()));
        assert_eq!(
            l.take_placed("p")[0].checkpoint_id,
            "b",
            "pinned after the close"
        );
    }
}
