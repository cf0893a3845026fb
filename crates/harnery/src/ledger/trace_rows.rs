//! Trace rows: what a session's trace reads of each event, kept beside it.
//!
//! An OTLP trace reads little of an event: its time and its part in its
//! turn's wall, and of a tool event what pairs it and what its span shows.
//! Parsing every row's text for those few fields was most of an export's
//! work, so finalize keeps them, written with the events (the migration
//! `trace_chunks` fills them for an older ledger), and `validate` checks
//! each against its event.
//!
//! They are kept in chunks, `trace_chunks`: one row per run of one
//! session's events in one append (at most [`CHUNK_EVENTS`]), whose
//! `entries` are a JSON array with an entry per event, in offset order:
//! `[offset, seq, time_unix_ns, part, facts…]`, the facts being the first
//! [`TracePart::facts`] of [`FACTS`]. A row per event cost finalize
//! 20–40% more time and an export more SQLite work than all the rest of
//! its reading; a chunk is one insert and one read for hundreds of events.
//!
//! An entry whose trace needs more than that (commands, usage, recovered
//! or failed tool events, and a text that is not an event) is `whole`,
//! without facts: its stored text is read and parsed as before. A chunk
//! lists the seqs of its whole entries (`wholes`), so the reader fetches
//! their text without decoding the chunk, and counts its `note` entries
//! (`notes`, indexed where not zero), so the sessions whose spans have
//! notes are found without reading the rest.

use std::borrow::Cow;

use rusqlite::{CachedStatement, Connection, params};

use crate::contract::json::{attestation_name, number, outcome_name, string, turn_source_name};
use crate::contract::{Attestation, Event, Observation, Outcome, Payload, SessionRef, TurnSource};

mod decode;

pub(crate) use decode::Entry;
use decode::each_entry;
pub(in crate::ledger) use decode::entries;

/// The most entries a chunk holds.
pub(crate) const CHUNK_EVENTS: usize = 256;

/// An entry's members before its facts: offset, seq, time, part.
const HEAD: usize = 4;

/// What a trace row stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TracePart {
    /// Only the event's time and turn marks matter to the trace.
    Mark,
    TurnStarted,
    TurnCompleted,
    ToolRequested,
    ToolCompleted,
    /// An event a span's notes come from (`tool.recorded`,
    /// `tool.late_evidence`): a mark in its session's rows, and read whole,
    /// ahead of them, for the notes.
    Note,
    /// The trace reads the event's stored text.
    Whole,
}

impl TracePart {
    const ALL: [TracePart; 7] = [
        TracePart::Mark,
        TracePart::TurnStarted,
        TracePart::TurnCompleted,
        TracePart::ToolRequested,
        TracePart::ToolCompleted,
        TracePart::Note,
        TracePart::Whole,
    ];

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            TracePart::Mark => "mark",
            TracePart::TurnStarted => "turn_started",
            TracePart::TurnCompleted => "turn_completed",
            TracePart::ToolRequested => "tool_requested",
            TracePart::ToolCompleted => "tool_completed",
            TracePart::Note => "note",
            TracePart::Whole => "whole",
        }
    }

    fn parse(text: &str) -> Option<TracePart> {
        TracePart::ALL.into_iter().find(|p| p.as_str() == text)
    }

    /// How many of [`FACTS`] an entry of this part holds.
    pub(crate) fn facts(self) -> usize {
        match self {
            TracePart::Whole => 0,
            TracePart::ToolRequested => 6,
            TracePart::ToolCompleted => FACTS.len(),
            _ => 3,
        }
    }
}

/// The facts an entry may hold after its head, in order; a part holds the
/// first [`TracePart::facts`] of them.
pub(crate) const FACTS: [&str; 10] = [
    "turn_source",
    "turn_id",
    "attestation",
    "event_id",
    "tool_call_id",
    "tool_name",
    "requested_event_id",
    "outcome",
    "duration_ms",
    "duration_unknown",
];

/// The envelope fields a turn's wall reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TurnMarkFacts<'a> {
    pub turn_source: TurnSource,
    pub turn_id: Option<Cow<'a, str>>,
    pub attestation: Attestation,
}

/// What a tool span reads of its request or native terminal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ToolFacts<'a> {
    pub event_id: Cow<'a, str>,
    pub tool_call_id: Option<Cow<'a, str>>,
    pub tool_name: Cow<'a, str>,
    /// Terminals only: the request they name, how they ended and what
    /// they reported of their duration.
    pub requested_event_id: Option<Cow<'a, str>>,
    pub outcome: Option<Outcome>,
    pub duration_ms: Option<Observation<u64>>,
}

/// One event's trace entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TraceFacts<'a> {
    pub offset: u64,
    pub time_unix_ns: i64,
    pub part: TracePart,
    /// Every part but `whole`.
    pub marks: Option<TurnMarkFacts<'a>>,
    /// The two tool parts.
    pub tool: Option<ToolFacts<'a>>,
}

fn borrowed(s: &str) -> Cow<'_, str> {
    Cow::Borrowed(s)
}

impl<'a> TraceFacts<'a> {
    /// The entry finalize writes for `e`.
    pub(crate) fn of(e: &'a Event) -> TraceFacts<'a> {
        let part = match &e.payload {
            Payload::ToolRequested(p) if p.recovery.is_none() => TracePart::ToolRequested,
            Payload::ToolCompleted(p) if p.recovery.is_none() && p.error.is_none() => {
                TracePart::ToolCompleted
            }
            Payload::ToolRequested(_)
            | Payload::ToolCompleted(_)
            | Payload::CommandRequested(_)
            | Payload::CommandCompleted(_)
            | Payload::UsageReported(_) => TracePart::Whole,
            Payload::TurnStarted(_) => TracePart::TurnStarted,
            Payload::TurnCompleted(_) => TracePart::TurnCompleted,
            Payload::ToolRecorded(_) | Payload::LateEvidence(_) => TracePart::Note,
            _ => TracePart::Mark,
        };
        let tool = match (&e.payload, part) {
            (Payload::ToolRequested(p), TracePart::ToolRequested) => Some(ToolFacts {
                event_id: borrowed(e.id.as_str()),
                tool_call_id: p.tool_call_id.as_deref().map(borrowed),
                tool_name: borrowed(&p.tool_name),
                requested_event_id: None,
                outcome: None,
                duration_ms: None,
            }),
            (Payload::ToolCompleted(p), TracePart::ToolCompleted) => Some(ToolFacts {
                event_id: borrowed(e.id.as_str()),
                tool_call_id: p.tool_call_id.as_deref().map(borrowed),
                tool_name: borrowed(&p.tool_name),
                requested_event_id: p.requested_event_id.as_ref().map(|i| borrowed(i.as_str())),
                outcome: Some(p.outcome),
                duration_ms: Some(p.duration_ms.clone()),
            }),
            _ => None,
        };
        let marks = (part != TracePart::Whole).then(|| TurnMarkFacts {
            turn_source: e.turn.source,
            turn_id: e.turn.turn_id.as_deref().map(borrowed),
            attestation: e.provenance.attestation,
        });
        TraceFacts {
            offset: e.offset,
            time_unix_ns: e.time_unix_ns,
            part,
            marks,
            tool,
        }
    }

    /// The same facts, owning their text.
    pub(super) fn into_owned(self) -> TraceFacts<'static> {
        let own = |c: Cow<'_, str>| Cow::Owned(c.into_owned());
        TraceFacts {
            offset: self.offset,
            time_unix_ns: self.time_unix_ns,
            part: self.part,
            marks: self.marks.map(|m| TurnMarkFacts {
                turn_source: m.turn_source,
                turn_id: m.turn_id.map(own),
                attestation: m.attestation,
            }),
            tool: self.tool.map(|t| ToolFacts {
                event_id: own(t.event_id),
                tool_call_id: t.tool_call_id.map(own),
                tool_name: own(t.tool_name),
                requested_event_id: t.requested_event_id.map(own),
                outcome: t.outcome,
                duration_ms: t.duration_ms,
            }),
        }
    }

    /// Append this event's entry (its seq is `seq`) to `out`.
    fn write_entry(&self, out: &mut String, seq: i64) {
        let text = |out: &mut String, t: Option<&str>| match t {
            Some(t) => string(out, t),
            None => out.push_str("null"),
        };
        out.push('[');
        number(out, self.offset);
        out.push(',');
        number(out, seq);
        out.push(',');
        number(out, self.time_unix_ns);
        out.push(',');
        string(out, self.part.as_str());
        if let Some(m) = &self.marks {
            out.push(',');
            string(out, turn_source_name(m.turn_source));
            out.push(',');
            text(out, m.turn_id.as_deref());
            out.push(',');
            string(out, attestation_name(m.attestation));
        }
        if let Some(t) = &self.tool {
            out.push(',');
            string(out, &t.event_id);
            out.push(',');
            text(out, t.tool_call_id.as_deref());
            out.push(',');
            string(out, &t.tool_name);
            if let (Some(outcome), Some(duration)) = (t.outcome, &t.duration_ms) {
                out.push(',');
                text(out, t.requested_event_id.as_deref());
                out.push(',');
                string(out, outcome_name(outcome));
                match duration {
                    Observation::Observed(ms) => {
                        out.push(',');
                        number(out, *ms);
                        out.push_str(",null");
                    }
                    Observation::Unknown(why) => {
                        out.push_str(",null,");
                        string(out, why);
                    }
                }
            }
        }
        out.push(']');
    }
}

/// Writes a batch's trace chunks as its events are appended (a batch's
/// events come session by session).
pub(super) struct ChunkWriter<'c, 'b> {
    insert: CachedStatement<'c>,
    session: Option<&'b SessionRef>,
    first_offset: u64,
    events: usize,
    notes: usize,
    /// The open chunk's entries and whole seqs, comma-separated.
    entries: String,
    wholes: String,
}

impl<'c, 'b> ChunkWriter<'c, 'b> {
    /// A writer into the ledger on `conn`; `compact` when it keeps its
    /// chunks in `trace_chunk_store` (`ledger::eventz`). Those are written
    /// there directly, compressed by the same `event_body` the view's
    /// trigger calls: an insert through a trigger runs under a statement
    /// journal, which a chunk's pages outgrow, so SQLite would create,
    /// write and delete a temporary file for every batch.
    pub(super) fn new(
        conn: &'c Connection,
        compact: bool,
    ) -> rusqlite::Result<ChunkWriter<'c, 'b>> {
        Ok(ChunkWriter {
            insert: conn.prepare_cached(if compact {
                "INSERT INTO trace_chunk_store (adapter, session_id, first_offset, events, notes, wholes, entries) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, event_body(?7))"
            } else {
                "INSERT INTO trace_chunks (adapter, session_id, first_offset, events, notes, wholes, entries) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"
            })?,
            session: None,
            first_offset: 0,
            events: 0,
            notes: 0,
            entries: String::with_capacity(CHUNK_EVENTS * 128),
            wholes: String::new(),
        })
    }

    /// Add `e`'s entry (its row is `seq`).
    pub(super) fn add(&mut self, seq: i64, e: &'b Event) -> rusqlite::Result<()> {
        if self.session != Some(&e.session) || self.events == CHUNK_EVENTS {
            self.flush()?;
            self.session = Some(&e.session);
            self.first_offset = e.offset;
        }
        let facts = TraceFacts::of(e);
        if self.events > 0 {
            self.entries.push(',');
        }
        facts.write_entry(&mut self.entries, seq);
        self.events += 1;
        match facts.part {
            TracePart::Note => self.notes += 1,
            TracePart::Whole => {
                if !self.wholes.is_empty() {
                    self.wholes.push(',');
                }
                number(&mut self.wholes, seq);
            }
            _ => {}
        }
        Ok(())
    }

    /// Write the open chunk, if it holds an entry.
    pub(super) fn flush(&mut self) -> rusqlite::Result<()> {
        let Some(session) = self.session.take() else {
            return Ok(());
        };
        let wholes = (!self.wholes.is_empty()).then(|| format!("[{}]", self.wholes));
        self.insert.execute(params![
            session.adapter.as_str(),
            session.session_id,
            self.first_offset as i64,
            self.events as i64,
            self.notes as i64,
            wholes,
            format!("[{}]", self.entries),
        ])?;
        self.events = 0;
        self.notes = 0;
        self.entries.clear();
        self.wholes.clear();
        Ok(())
    }
}

/// Trace chunks as read and not yet decoded: their entries' text side by
/// side. The thread that reads the ledger only copies bytes into one, and
/// another decodes them ([`TraceBatch::each_entry`]).
#[derive(Debug, Default)]
pub(crate) struct TraceBatch {
    bytes: Vec<u8>,
    ends: Vec<usize>,
}

impl TraceBatch {
    pub(crate) fn len(&self) -> usize {
        self.ends.len()
    }

    /// Bytes of text held.
    pub(crate) fn text_len(&self) -> usize {
        self.bytes.len()
    }

    pub(crate) fn push(&mut self, entries: &[u8]) {
        self.bytes.extend_from_slice(entries);
        self.ends.push(self.bytes.len());
    }

    /// Each of chunk `i`'s entries in order, its seq and its facts or
    /// what is wrong with them, handed to `take`; what is wrong with the
    /// chunk, if it is not an array of entries with a seq each (`take` may
    /// have had some of its entries by then).
    pub(crate) fn each_entry<'a>(
        &'a self,
        i: usize,
        take: impl FnMut(Entry<'a>),
    ) -> Result<(), String> {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        let text = std::str::from_utf8(&self.bytes[start..self.ends[i]])
            .map_err(|_| "its entries are not UTF-8".to_string())?;
        each_entry(text, take)
    }
}
