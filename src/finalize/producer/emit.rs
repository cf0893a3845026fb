//! Building events: offsets, deterministic ids, raw pointers and time.
//!
//! An event id is derived from the session, the trigger (the raw record's
//! digest, or the end request a timer evaluated), the event's index within
//! that trigger, a reason tag and the offset. Normalizing the same records
//! in the same order therefore yields the same ids.

use crate::clock::ClockSample;
use crate::contract::{Event, EventId, Payload, Provenance, RawRef, TimeSource, TurnAttribution};

/// What caused a batch of events: one raw record, or a timer tick.
#[derive(Debug, Clone)]
pub(super) struct Trigger {
    /// The record digest, or a synthetic key for a tick.
    pub key: String,
    pub raw: Vec<RawRef>,
    pub time_unix_ns: i64,
    pub time_source: TimeSource,
    pub clock: Option<ClockSample>,
    /// Events emitted for this trigger so far.
    pub emitted: u32,
}

/// The parts of an event that vary by rule.
pub(super) struct Draft {
    pub payload: Payload,
    pub provenance: Provenance,
    pub turn: TurnAttribution,
    pub agent_id: Option<String>,
    /// Distinguishes derived events of one trigger (a reason code, a span).
    pub tag: String,
}

impl Draft {
    pub fn native(payload: Payload, turn: TurnAttribution, agent_id: Option<String>) -> Draft {
        Draft {
            payload,
            provenance: Provenance::NATIVE,
            turn,
            agent_id,
            tag: String::new(),
        }
    }
}

impl super::SessionProducer {
    /// Stamp a draft with offset, id, time and raw pointer, and queue it.
    pub(super) fn emit(
        &mut self,
        trigger: &mut Trigger,
        draft: Draft,
        out: &mut Vec<Event>,
    ) -> EventId {
        let offset = self.next_offset;
        let id = EventId::derive(
            "harnery.producer.event",
            &[
                self.session.session_id.as_bytes(),
                trigger.key.as_bytes(),
                &trigger.emitted.to_le_bytes(),
                draft.tag.as_bytes(),
                &offset.to_le_bytes(),
            ],
        );
        self.next_offset += 1;
        trigger.emitted += 1;
        out.push(Event {
            id: id.clone(),
            session: self.session.clone(),
            offset,
            time_unix_ns: trigger.time_unix_ns,
            time_source: trigger.time_source,
            clock: trigger.clock.clone(),
            agent_id: draft.agent_id,
            turn: draft.turn,
            provenance: draft.provenance,
            raw: trigger.raw.clone(),
            payload: draft.payload,
        });
        id
    }
}
