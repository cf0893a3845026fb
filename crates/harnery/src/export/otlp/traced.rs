//! A session's rows as its trace takes them: events, tool rows and rows
//! that only mark their turn's wall, built from the ledger's trace entries
//! (`ledger::trace_rows`) or from an event's text.
//!
//! A run of rows keeps the strings its tool rows and marks name in one
//! [`RunText`], and the rows hold ranges of it: a row read from its trace
//! entry costs no allocation of its own, however many a session has.

use crate::contract::{Attestation, Event, Observation, Outcome, Recovery};
use crate::ledger::trace_rows::{TraceFacts, TracePart};
use crate::report::receipts::{TurnBoundary, TurnMark};
use crate::report::spans::SpanSide;

/// One row of a session as its trace takes it.
pub(crate) enum Traced {
    /// An event read whole (parsed from its text), with its words where
    /// spans carry them. Boxed: an event is large beside the other rows,
    /// and rows are moved from thread to thread.
    Event(Box<Event>, Words),
    /// A tool request or native tool terminal, from its trace entry.
    Tool(ToolRow),
    /// Only the row's time and its turn's mark.
    Mark {
        turn_id: Option<Text>,
        mark: TurnMark,
    },
}

/// The words an event carries into its trace (masked and cut), where
/// spans carry words ([`super::content::SpanContent`]).
pub(crate) type Words = Option<Box<str>>;

/// A range of a [`RunText`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Text {
    start: u32,
    end: u32,
}

impl Text {
    fn len(self) -> usize {
        (self.end - self.start) as usize
    }
}

/// The strings a run's rows name, side by side.
#[derive(Debug, Default)]
pub(crate) struct RunText {
    text: String,
    /// The last turn id kept: a run's rows name few turns, each many
    /// times, and keep one copy of each in a row.
    last_turn: Option<Text>,
}

impl RunText {
    pub(crate) fn get(&self, t: Text) -> &str {
        &self.text[t.start as usize..t.end as usize]
    }

    pub(crate) fn push(&mut self, s: &str) -> Text {
        let at = |n: usize| u32::try_from(n).expect("a run's text stays far below 4 GiB");
        let start = at(self.text.len());
        self.text.push_str(s);
        Text {
            start,
            end: at(self.text.len()),
        }
    }

    fn push_turn(&mut self, s: &str) -> Text {
        if let Some(last) = self.last_turn
            && self.get(last) == s
        {
            return last;
        }
        let t = self.push(s);
        self.last_turn = Some(t);
        t
    }
}

/// A tool request, or a native tool terminal, as its trace entry gives it;
/// its strings are ranges of its run's [`RunText`].
#[derive(Debug, Clone)]
pub(crate) struct ToolRow {
    pub offset: u64,
    /// The row's part in its turn's wall (and its time).
    pub mark: TurnMark,
    pub turn_id: Option<Text>,
    pub event_id: Text,
    pub tool_call_id: Option<Text>,
    pub tool_name: Text,
    /// A terminal's own facts; `None` for a request.
    pub end: Option<ToolEnd>,
}

#[derive(Debug, Clone)]
pub(crate) struct ToolEnd {
    pub requested_event_id: Option<Text>,
    pub outcome: Outcome,
    pub duration_ms: Observation<u64>,
}

impl ToolRow {
    /// This row with its own copy of its strings, out of its run's `text`.
    pub(crate) fn owned(&self, text: &RunText) -> (ToolRow, RunText) {
        let strings = [
            self.turn_id,
            Some(self.event_id),
            self.tool_call_id,
            Some(self.tool_name),
            self.end.as_ref().and_then(|e| e.requested_event_id),
        ];
        let len = strings.iter().flatten().map(|t| t.len()).sum();
        let mut own = RunText {
            text: String::with_capacity(len),
            last_turn: None,
        };
        let mut copy = |t: Text| own.push(text.get(t));
        let row = ToolRow {
            offset: self.offset,
            mark: self.mark,
            turn_id: self.turn_id.map(&mut copy),
            event_id: copy(self.event_id),
            tool_call_id: self.tool_call_id.map(&mut copy),
            tool_name: copy(self.tool_name),
            end: self.end.as_ref().map(|end| ToolEnd {
                requested_event_id: end.requested_event_id.map(&mut copy),
                outcome: end.outcome,
                duration_ms: end.duration_ms.clone(),
            }),
        };
        (row, own)
    }
}

impl Traced {
    /// A row's trace entry as the trace takes it, its strings kept in
    /// `text`; `None` for a `whole` entry, whose event's text must be read.
    pub(crate) fn of_facts(facts: TraceFacts<'_>, text: &mut RunText) -> Option<Traced> {
        let marks = facts.marks?;
        let boundary = match facts.part {
            TracePart::TurnStarted => Some(TurnBoundary::Started),
            TracePart::TurnCompleted => Some(TurnBoundary::Completed),
            _ => None,
        };
        let mark = TurnMark {
            time_unix_ns: facts.time_unix_ns,
            source: marks.turn_source,
            native: marks.attestation == Attestation::Native,
            boundary,
        };
        let turn_id = marks.turn_id.as_deref().map(|t| text.push_turn(t));
        let Some(tool) = facts.tool else {
            return Some(Traced::Mark { turn_id, mark });
        };
        let end = match (tool.outcome, tool.duration_ms) {
            (Some(outcome), Some(duration_ms)) => Some(ToolEnd {
                requested_event_id: tool.requested_event_id.as_deref().map(|i| text.push(i)),
                outcome,
                duration_ms,
            }),
            _ => None,
        };
        Some(Traced::Tool(ToolRow {
            offset: facts.offset,
            mark,
            turn_id,
            event_id: text.push(&tool.event_id),
            tool_call_id: tool.tool_call_id.as_deref().map(|c| text.push(c)),
            tool_name: text.push(&tool.tool_name),
            end,
        }))
    }
}

/// A tool row read with its run's text: a span's request or terminal.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ToolView<'a> {
    pub row: &'a ToolRow,
    pub text: &'a RunText,
}

impl<'a> SpanSide<'a> for ToolView<'a> {
    fn event_id(self) -> &'a str {
        self.text.get(self.row.event_id)
    }

    fn time_unix_ns(self) -> i64 {
        self.row.mark.time_unix_ns
    }

    fn turn_id(self) -> Option<&'a str> {
        self.row.turn_id.map(|t| self.text.get(t))
    }

    fn tool_name(self) -> Option<&'a str> {
        Some(self.text.get(self.row.tool_name))
    }

    fn tool_call_id(self) -> Option<&'a str> {
        self.row.tool_call_id.map(|t| self.text.get(t))
    }

    fn outcome(self) -> Option<Outcome> {
        self.row.end.as_ref().map(|e| e.outcome)
    }

    fn reported_duration(self) -> Option<&'a Observation<u64>> {
        self.row.end.as_ref().map(|e| &e.duration_ms)
    }

    /// Only a tool row without a recovery block has a tool entry.
    fn recovery(self) -> Option<&'a Recovery> {
        None
    }

    fn link(self) -> Option<&'a str> {
        let end = self.row.end.as_ref()?;
        end.requested_event_id.map(|t| self.text.get(t))
    }
}
