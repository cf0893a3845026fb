//! A session's rows as its trace takes them: events, and rows that only
//! mark their turn's wall, built from the ledger's trace entries
//! (`ledger::trace_rows`) or from an event's text.

use std::borrow::Cow;

use super::super::receipts::{TurnBoundary, TurnMark};
use crate::contract::{
    Attestation, Confidence, Event, EventId, Payload, Provenance, SessionRef, TimeSource,
    ToolCompleted, ToolRequested, TurnAttribution,
};
use crate::ledger::trace_rows::{TraceFacts, TracePart};

/// One row of a session as its trace takes it: an event the trace reads
/// (parsed from its text, or built from its trace entry), or only the row's
/// time and turn mark.
pub enum Traced {
    /// Boxed: an event is large beside a mark, and rows are moved from
    /// thread to thread.
    Event(Box<Event>),
    Mark {
        turn_id: Option<String>,
        mark: TurnMark,
    },
}

impl Traced {
    /// A row's trace entry as the trace takes it; `None` for a `whole`
    /// entry, whose text must be read. A tool entry becomes its event with the
    /// fields [`super::otlp::keep_traced_fields`] keeps; the envelope fields no trace
    /// reads (time source, confidence) are fixed, not the stored ones.
    pub fn of_facts(session: &SessionRef, facts: TraceFacts<'_>) -> Option<Traced> {
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
        let turn_id = marks.turn_id.map(Cow::into_owned);
        let Some(tool) = facts.tool else {
            return Some(Traced::Mark { turn_id, mark });
        };
        let tool_call_id = tool.tool_call_id.map(Cow::into_owned);
        let tool_name = tool.tool_name.into_owned();
        let payload = match (tool.outcome, tool.duration_ms) {
            (Some(outcome), Some(duration_ms)) => Payload::ToolCompleted(ToolCompleted {
                tool_call_id,
                tool_name,
                requested_event_id: tool.requested_event_id.map(|i| EventId(i.into_owned())),
                outcome,
                duration_ms,
                exit_code: None,
                error: None,
                content: None,
                recovery: None,
            }),
            _ => Payload::ToolRequested(ToolRequested {
                tool_call_id,
                tool_name,
                input_digest: String::new(),
                input: None,
                recovery: None,
            }),
        };
        Some(Traced::Event(Box::new(Event {
            id: EventId(tool.event_id.into_owned()),
            session: session.clone(),
            offset: facts.offset,
            time_unix_ns: facts.time_unix_ns,
            time_source: TimeSource::Finalizer,
            clock: None,
            agent_id: None,
            turn: TurnAttribution {
                source: marks.turn_source,
                turn_id,
            },
            provenance: Provenance {
                attestation: marks.attestation,
                confidence: Confidence::High,
            },
            raw: Vec::new(),
            payload,
        })))
    }
}
