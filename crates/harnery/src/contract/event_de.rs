//! Reading an event row: the envelope's members by name, and the payload
//! straight into the struct its `type` names.
//!
//! The derive this replaces flattened an adjacently tagged enum, for which
//! serde first buffers the whole row into a tree of its own and then reads
//! the fields out of that; every read of the ledger paid for it. This reader
//! takes what the derive took and refuses what it refused, with serde's
//! messages: unknown members (`unknown field`, named after every other
//! check, as the derive named it), `missing field`, `duplicate field`, and
//! an unknown type (`unknown variant`, listing the types in order). Where a
//! row has several faults, the one named may differ from the derive's, and
//! so may the position serde_json adds.
//!
//! A `payload` that precedes its `type` (rows never store one so) is kept
//! as raw JSON text and read once the type is known; that needs a
//! serde_json deserializer (text, bytes, a reader or a `Value`).

use std::fmt;

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;

use super::event::{Event, Provenance, RawRef, SessionRef, TimeSource, TurnAttribution};
use super::event_id::EventId;
use super::payload::{EventType, Payload, TYPE_NAMES};
use crate::clock::ClockSample;

/// Every member an event row may have, for deserializers that ask.
const FIELDS: &[&str] = &[
    "id",
    "session",
    "offset",
    "time_unix_ns",
    "time_source",
    "clock",
    "agent_id",
    "turn",
    "provenance",
    "raw",
    "type",
    "payload",
];

impl<'de> Deserialize<'de> for Event {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Event, D::Error> {
        deserializer.deserialize_struct("Event", FIELDS, EventVisitor)
    }
}

/// A member's name, known or not.
enum Key {
    Id,
    Session,
    Offset,
    TimeUnixNs,
    TimeSource,
    Clock,
    AgentId,
    Turn,
    Provenance,
    Raw,
    Type,
    Payload,
    Unknown(String),
}

impl Key {
    fn from_name(name: &str) -> Key {
        match name {
            "id" => Key::Id,
            "session" => Key::Session,
            "offset" => Key::Offset,
            "time_unix_ns" => Key::TimeUnixNs,
            "time_source" => Key::TimeSource,
            "clock" => Key::Clock,
            "agent_id" => Key::AgentId,
            "turn" => Key::Turn,
            "provenance" => Key::Provenance,
            "raw" => Key::Raw,
            "type" => Key::Type,
            "payload" => Key::Payload,
            other => Key::Unknown(other.to_string()),
        }
    }
}

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Key, D::Error> {
        deserializer.deserialize_identifier(KeyVisitor)
    }
}

struct KeyVisitor;

impl<'de> Visitor<'de> for KeyVisitor {
    type Value = Key;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("field identifier")
    }

    fn visit_str<E: de::Error>(self, name: &str) -> Result<Key, E> {
        Ok(Key::from_name(name))
    }

    fn visit_bytes<E: de::Error>(self, name: &[u8]) -> Result<Key, E> {
        Ok(Key::from_name(&String::from_utf8_lossy(name)))
    }
}

/// The event type named by `type`. serde reads a tag as an enum, which
/// JSON may also spell as a one-member map of the name to null; both are
/// taken, as they were.
struct Tag(EventType);

impl<'de> Deserialize<'de> for Tag {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Tag, D::Error> {
        deserializer.deserialize_any(TagVisitor)
    }
}

struct TagVisitor;

impl TagVisitor {
    fn named<E: de::Error>(name: &str) -> Result<Tag, E> {
        EventType::parse(name)
            .map(Tag)
            .ok_or_else(|| E::unknown_variant(name, TYPE_NAMES))
    }
}

impl<'de> Visitor<'de> for TagVisitor {
    type Value = Tag;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("string or map")
    }

    fn visit_str<E: de::Error>(self, name: &str) -> Result<Tag, E> {
        TagVisitor::named(name)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Tag, A::Error> {
        let single = || de::Error::invalid_value(de::Unexpected::Map, &"map with a single key");
        let Some(name) = map.next_key::<String>()? else {
            return Err(single());
        };
        let tag = TagVisitor::named(&name)?;
        map.next_value::<()>()?;
        match map.next_key::<IgnoredAny>()? {
            Some(_) => Err(single()),
            None => Ok(tag),
        }
    }
}

/// The payload of an event of the given type.
struct PayloadSeed(EventType);

impl<'de> DeserializeSeed<'de> for PayloadSeed {
    type Value = Payload;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Payload, D::Error> {
        Payload::deserialize_typed(self.0, deserializer)
    }
}

/// The members read so far.
#[derive(Default)]
struct Members {
    id: Option<EventId>,
    session: Option<SessionRef>,
    offset: Option<u64>,
    time_unix_ns: Option<i64>,
    time_source: Option<TimeSource>,
    clock: Option<Option<ClockSample>>,
    agent_id: Option<Option<String>>,
    turn: Option<TurnAttribution>,
    provenance: Option<Provenance>,
    raw: Option<Vec<RawRef>>,
    tag: Option<EventType>,
    payload: Option<Payload>,
    /// A payload that came before its type, as its JSON text.
    early_payload: Option<Box<RawValue>>,
    /// The first member no event has.
    unknown: Option<String>,
}

/// Read the value of member `name` into `slot`, which must still be empty.
fn once<'de, A: MapAccess<'de>, T: Deserialize<'de>>(
    map: &mut A,
    slot: &mut Option<T>,
    name: &'static str,
) -> Result<(), A::Error> {
    if slot.is_some() {
        return Err(de::Error::duplicate_field(name));
    }
    *slot = Some(map.next_value()?);
    Ok(())
}

fn required<T, E: de::Error>(slot: Option<T>, name: &'static str) -> Result<T, E> {
    slot.ok_or_else(|| E::missing_field(name))
}

impl Members {
    fn read<'de, A: MapAccess<'de>>(&mut self, key: Key, map: &mut A) -> Result<(), A::Error> {
        match key {
            Key::Id => once(map, &mut self.id, "id"),
            Key::Session => once(map, &mut self.session, "session"),
            Key::Offset => once(map, &mut self.offset, "offset"),
            Key::TimeUnixNs => once(map, &mut self.time_unix_ns, "time_unix_ns"),
            Key::TimeSource => once(map, &mut self.time_source, "time_source"),
            Key::Clock => once(map, &mut self.clock, "clock"),
            Key::AgentId => once(map, &mut self.agent_id, "agent_id"),
            Key::Turn => once(map, &mut self.turn, "turn"),
            Key::Provenance => once(map, &mut self.provenance, "provenance"),
            Key::Raw => once(map, &mut self.raw, "raw"),
            Key::Type => {
                let mut tag = self.tag.map(Tag);
                once(map, &mut tag, "type")?;
                self.tag = tag.map(|t| t.0);
                Ok(())
            }
            Key::Payload => self.read_payload(map),
            Key::Unknown(name) => {
                self.unknown.get_or_insert(name);
                map.next_value::<IgnoredAny>().map(drop)
            }
        }
    }

    fn read_payload<'de, A: MapAccess<'de>>(&mut self, map: &mut A) -> Result<(), A::Error> {
        if self.payload.is_some() || self.early_payload.is_some() {
            return Err(de::Error::duplicate_field("payload"));
        }
        match self.tag {
            Some(ty) => self.payload = Some(map.next_value_seed(PayloadSeed(ty))?),
            None => self.early_payload = Some(map.next_value()?),
        }
        Ok(())
    }

    fn finish<E: de::Error>(self) -> Result<Event, E> {
        let id = required(self.id, "id")?;
        let session = required(self.session, "session")?;
        let offset = required(self.offset, "offset")?;
        let time_unix_ns = required(self.time_unix_ns, "time_unix_ns")?;
        let time_source = required(self.time_source, "time_source")?;
        let turn = required(self.turn, "turn")?;
        let provenance = required(self.provenance, "provenance")?;
        let raw = required(self.raw, "raw")?;
        let ty = required(self.tag, "type")?;
        let payload = match (self.payload, self.early_payload) {
            (Some(payload), _) => payload,
            (None, Some(text)) => {
                let mut de = serde_json::Deserializer::from_str(text.get());
                PayloadSeed(ty).deserialize(&mut de).map_err(E::custom)?
            }
            (None, None) => return Err(E::missing_field("payload")),
        };
        if let Some(name) = self.unknown {
            return Err(E::custom(format_args!("unknown field `{name}`")));
        }
        Ok(Event {
            id,
            session,
            offset,
            time_unix_ns,
            time_source,
            clock: self.clock.flatten(),
            agent_id: self.agent_id.flatten(),
            turn,
            provenance,
            raw,
            payload,
        })
    }
}

struct EventVisitor;

impl<'de> Visitor<'de> for EventVisitor {
    type Value = Event;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("struct Event")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Event, A::Error> {
        let mut members = Members::default();
        while let Some(key) = map.next_key::<Key>()? {
            members.read(key, &mut map)?;
        }
        members.finish()
    }
}
