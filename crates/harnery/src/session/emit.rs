//! Building events: offsets, deterministic ids, raw pointers and time.
//!
//! An event id is derived from the session, the trigger (the raw record's
//! digest, or the end request a timer evaluated), the event's index within
//! that trigger, a reason tag and the offset. Normalizing the same records
//! in the same order therefore yields the same ids.

use std::borrow::Cow;

use super::record::RecordFollow;
use crate::agents::CapabilityProfile;
use crate::clock::ClockSample;
use crate::contract::{
    Event, EventId, Payload, Provenance, RawRef, SessionRef, TimeSource, TurnAttribution,
};

/// What caused a batch of events: one raw record, or a timer tick. It
/// borrows from the signal it stands for; each event gets its own copies.
#[derive(Debug, Clone)]
pub(super) struct Trigger<'a> {
    /// The record digest, or a synthetic key for a tick.
    pub key: Cow<'a, str>,
    /// The raw record every event of this trigger points at, if any.
    pub raw: Option<RawSource<'a>>,
    pub time_unix_ns: i64,
    pub time_source: TimeSource,
    pub clock: Option<&'a ClockSample>,
    /// Events emitted for this trigger so far.
    pub emitted: u32,
}

/// The raw record behind a trigger: its digest and event name.
#[derive(Debug, Clone, Copy)]
pub(super) struct RawSource<'a> {
    pub record_digest: &'a str,
    pub event_name: Option<&'a str>,
}

impl Trigger<'_> {
    /// The `raw` pointers of an event of this trigger.
    fn raw_refs(&self) -> Vec<RawRef> {
        let Some(source) = self.raw else {
            return Vec::new();
        };
        vec![RawRef {
            record_digest: source.record_digest.to_string(),
            event_name: source.event_name.map(str::to_string),
        }]
    }
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

/// The session's event numbering: who the events belong to, the profile
/// its state was built under, and the offset the next event gets.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Stamp {
    pub session: SessionRef,
    /// The digest of the capability profile this state was built under.
    pub capability_digest: String,
    pub next_offset: u64,
}

impl Stamp {
    pub(super) fn new(session: SessionRef) -> Stamp {
        Stamp {
            capability_digest: CapabilityProfile::of(session.adapter).digest_hex(),
            session,
            next_offset: 0,
        }
    }

    /// A draft with this session's next offset, its deterministic id, the
    /// trigger's time and raw pointer.
    fn stamp(&mut self, trigger: &mut Trigger, draft: Draft) -> Event {
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
        Event {
            id,
            session: self.session.clone(),
            offset,
            time_unix_ns: trigger.time_unix_ns,
            time_source: trigger.time_source,
            clock: trigger.clock.cloned(),
            agent_id: draft.agent_id,
            turn: draft.turn,
            provenance: draft.provenance,
            raw: trigger.raw_refs(),
            payload: draft.payload,
        }
    }
}

/// Where the rules' events go: stamped, shown to the record's locator
/// (which places checkpoints by the events it sees), and queued. Borrows
/// only those two parts of the producer, so a rule that owns another part
/// (the span pairer) can emit while it changes its own.
pub(super) struct Emitter<'a> {
    pub stamp: &'a mut Stamp,
    pub record: &'a mut RecordFollow,
}

impl Emitter<'_> {
    /// Stamp a draft with offset, id, time and raw pointer, and queue it.
    pub(super) fn emit(
        &mut self,
        trigger: &mut Trigger,
        draft: Draft,
        out: &mut Vec<Event>,
    ) -> EventId {
        let event = self.stamp.stamp(trigger, draft);
        let id = event.id.clone();
        let record = &mut *self.record;
        record.locate.observe(&event, record.path.as_deref());
        out.push(event);
        id
    }
}

impl super::SessionProducer {
    /// The emitter over this producer's stamp and record.
    pub(super) fn emitter(&mut self) -> Emitter<'_> {
        Emitter {
            stamp: &mut self.stamp,
            record: &mut self.record,
        }
    }

    /// Stamp a draft with offset, id, time and raw pointer, and queue it.
    pub(super) fn emit(
        &mut self,
        trigger: &mut Trigger,
        draft: Draft,
        out: &mut Vec<Event>,
    ) -> EventId {
        self.emitter().emit(trigger, draft, out)
    }
}
