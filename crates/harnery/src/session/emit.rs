//! Building events: offsets, deterministic ids, raw pointers and time.
//!
//! An event id is derived from the session, the trigger (the raw record's
//! digest, or the end request a timer evaluated), the event's index within
//! that trigger, a reason tag and the offset. Normalizing the same records
//! in the same order therefore yields the same ids.

use std::borrow::Cow;

use crate::agents::CapabilityProfile;
use crate::clock::ClockSample;
use crate::contract::{
    Attestation, Confidence, Event, EventId, Payload, Provenance, RawRef, SessionRef, TimeSource,
    TurnAttribution,
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
    pub(crate) fn native(
        payload: Payload,
        turn: TurnAttribution,
        agent_id: Option<String>,
    ) -> Draft {
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
    pub(super) fn stamp(&mut self, trigger: &mut Trigger, draft: Draft) -> Event {
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

/// Provenance of the producer's own decisions (end outcomes, health).
pub(super) fn derived_high() -> Provenance {
    Provenance {
        attestation: Attestation::Derived,
        confidence: Confidence::High,
    }
}
