//! The schema description checked against the structs at every level of
//! nesting: the envelope and each struct inside it, the recovery block,
//! observations and every payload. Each instance below is a struct literal
//! without `..`, so a field added to any contract struct stops this file
//! compiling until it is filled in here, and then its serialized key shows
//! up in a comparison with `DESCRIPTION`. `DESCRIPTION` itself (generation 1)
//! is never edited to make this pass: a new field ships as a new
//! generation.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use super::tests::samples;
use super::*;
use crate::clock::ClockSample;

fn described(name: &str) -> &'static [&'static str] {
    DESCRIPTION
        .iter()
        .find(|t| t.name == name)
        .unwrap_or_else(|| panic!("{name} is not described"))
        .fields
}

/// The field names a described struct lists (`name:type` items).
fn described_names(name: &str) -> BTreeSet<String> {
    described(name)
        .iter()
        .map(|f| f.split(':').next().expect("a field has a name").to_string())
        .collect()
}

fn keys(value: &Value) -> BTreeSet<String> {
    value
        .as_object()
        .unwrap_or_else(|| panic!("{value} is not an object"))
        .keys()
        .cloned()
        .collect()
}

fn assert_described(name: &str, value: &Value) {
    assert_eq!(
        keys(value),
        described_names(name),
        "the description of {name} differs from its struct: {value}"
    );
}

fn id() -> EventId {
    EventId("ev_1".into())
}

/// Every envelope member populated.
fn envelope(payload: Payload) -> Event {
    Event {
        id: id(),
        session: SessionRef {
            adapter: AdapterId::Copilot,
            session_id: "s".into(),
        },
        offset: 1,
        time_unix_ns: 2,
        time_source: TimeSource::Agent,
        clock: Some(ClockSample {
            boot_id: Some("boot".into()),
            boottime_ns: Some(3),
        }),
        agent_id: Some("agent".into()),
        turn: TurnAttribution {
            source: TurnSource::Stamped,
            turn_id: Some("t".into()),
        },
        provenance: Provenance {
            attestation: Attestation::Derived,
            confidence: Confidence::Low,
        },
        raw: vec![RawRef {
            record_digest: "d".into(),
            event_name: Some("preToolUse".into()),
        }],
        payload,
    }
}

fn recovery() -> Recovery {
    Recovery {
        reason: RecoveryReason::SpanCapPressure,
        requested_event_id: Some(id()),
        elapsed_upper_bound_ms: Some(Observation::Observed(5)),
    }
}

#[test]
fn the_envelope_and_its_members_are_described() {
    let row = serde_json::to_value(envelope(Payload::EndExpired(EndExpired {
        end_event_id: id(),
    })))
    .expect("serializes");
    assert_described("envelope", &row);
    assert_described("session_ref", &row["session"]);
    assert_described("clock_sample", &row["clock"]);
    assert_described("turn_attribution", &row["turn"]);
    assert_described("provenance", &row["provenance"]);
    assert_described("raw_ref", &row["raw"][0]);
}

#[test]
fn every_payload_and_its_recovery_block_is_described() {
    let samples = samples();
    assert_eq!(samples.len(), EventType::ALL.len(), "one sample per type");
    for payload in samples {
        let ty = payload.event_type();
        let row = serde_json::to_value(envelope(payload)).expect("serializes");
        assert_eq!(row["type"], ty.as_str());
        assert_described(ty.as_str(), &row["payload"]);
        if let Some(block) = row["payload"].get("recovery") {
            assert_described("recovery", block);
        }
    }
    let block = serde_json::to_value(recovery()).expect("serializes");
    assert_described("recovery", &block);
    let effect = serde_json::to_value(super::tests::effect()).expect("serializes");
    assert_described("effect", &effect);
    let range = serde_json::to_value(OffsetRange { from: 1, to: 2 }).expect("serializes");
    assert_described("offset_range", &range);
}

/// Known difference: `observation` is an enum, not a struct. Its one
/// description item lists the variants as alternatives
/// (`observed:T|unknown:string`), and each serialized value has exactly
/// one of those keys.
#[test]
fn observations_are_described_as_their_two_alternatives() {
    let [item] = described("observation") else {
        panic!("observation is one item")
    };
    let alternatives: BTreeSet<String> = item
        .split('|')
        .map(|a| a.split(':').next().expect("named").to_string())
        .collect();
    let variants = [Observation::Observed(1u64), Observation::unknown("why")];
    let mut seen = BTreeSet::new();
    for v in &variants {
        // A new variant stops this match compiling.
        match v {
            Observation::Observed(_) | Observation::Unknown(_) => {}
        }
        let k = keys(&serde_json::to_value(v).expect("serializes"));
        assert_eq!(k.len(), 1, "{k:?}");
        seen.extend(k);
    }
    assert_eq!(seen, alternatives);
}

/// The value list of an `enum(a,b,…)` type string.
fn enum_values(ty: &str) -> BTreeSet<String> {
    let inner = ty
        .strip_prefix("enum(")
        .and_then(|t| t.strip_suffix(')').or_else(|| t.strip_suffix(")?")))
        .unwrap_or_else(|| panic!("{ty} is not an enum"));
    inner.split(',').map(str::to_string).collect()
}

/// The type string of `field` in the described struct `name`.
fn field_type(name: &str, field: &str) -> &'static str {
    described(name)
        .iter()
        .find_map(|f| f.strip_prefix(field)?.strip_prefix(':'))
        .unwrap_or_else(|| panic!("{name}.{field} is not described"))
}

fn serialized<T: serde::Serialize>(values: &[T]) -> BTreeSet<String> {
    values
        .iter()
        .map(|v| match serde_json::to_value(v).expect("serializes") {
            Value::String(s) => s,
            other => panic!("{other} is not a unit variant"),
        })
        .collect()
}

/// Enum values are part of the contract too: each enum's variants, as
/// serialized, are the values its description lists. Each list below is
/// checked by an exhaustive match, so a new variant stops this compiling.
#[test]
fn every_enum_lists_its_variants() {
    for a in AdapterId::ALL {
        match a {
            AdapterId::ClaudeCode | AdapterId::Copilot => {}
        }
    }
    let sources = [
        TimeSource::Agent,
        TimeSource::Received,
        TimeSource::Finalizer,
    ];
    for s in sources {
        match s {
            TimeSource::Agent | TimeSource::Received | TimeSource::Finalizer => {}
        }
    }
    let turns = [TurnSource::Native, TurnSource::Stamped, TurnSource::None];
    for t in turns {
        match t {
            TurnSource::Native | TurnSource::Stamped | TurnSource::None => {}
        }
    }
    let attestations = [
        Attestation::Native,
        Attestation::Derived,
        Attestation::Record,
    ];
    for a in attestations {
        match a {
            Attestation::Native | Attestation::Derived | Attestation::Record => {}
        }
    }
    let confidences = [Confidence::Low, Confidence::Medium, Confidence::High];
    for c in confidences {
        match c {
            Confidence::Low | Confidence::Medium | Confidence::High => {}
        }
    }
    let outcomes = [
        Outcome::Success,
        Outcome::Failure,
        Outcome::Interrupted,
        Outcome::Unknown,
    ];
    for o in outcomes {
        match o {
            Outcome::Success | Outcome::Failure | Outcome::Interrupted | Outcome::Unknown => {}
        }
    }
    for r in RecoveryReason::ALL {
        match r {
            RecoveryReason::RequestNotObserved
            | RecoveryReason::CompletionNotObservedBeforeTurnEnd
            | RecoveryReason::CompletionNotObservedBeforeNextTurn
            | RecoveryReason::SpanCapPressure
            | RecoveryReason::ExplicitEndSalvage
            | RecoveryReason::CommandCompletionNotObserved => {}
        }
    }
    let cases = [
        (
            field_type("session_ref", "adapter"),
            serialized(&AdapterId::ALL),
        ),
        (field_type("envelope", "time_source"), serialized(&sources)),
        (field_type("turn_attribution", "source"), serialized(&turns)),
        (
            field_type("provenance", "attestation"),
            serialized(&attestations),
        ),
        (
            field_type("provenance", "confidence"),
            serialized(&confidences),
        ),
        (
            field_type("recovery", "reason"),
            serialized(&RecoveryReason::ALL),
        ),
        // Known difference: `outcome` is described as a bare value list,
        // one item with no field name.
        (described("outcome")[0], serialized(&outcomes)),
    ];
    for (ty, variants) in cases {
        assert_eq!(enum_values(ty), variants, "{ty}");
    }
}

/// Every payload type is described, in the order of `EventType::ALL`,
/// after the shared types; nothing is described that no struct has.
#[test]
fn the_description_has_one_entry_per_type_and_no_strays() {
    let shared = [
        "envelope",
        "session_ref",
        "clock_sample",
        "turn_attribution",
        "provenance",
        "raw_ref",
        "observation",
        "outcome",
        "recovery",
        "record_at",
        "effect",
        "offset_range",
    ];
    let names: Vec<&str> = DESCRIPTION.iter().map(|t| t.name).collect();
    let want: Vec<&str> = shared
        .into_iter()
        .chain(EventType::ALL.iter().map(|t| t.as_str()))
        .collect();
    assert_eq!(names, want);
    // The event type is the envelope's tag; the payload its content.
    let row = serde_json::to_value(envelope(Payload::EndExpired(EndExpired {
        end_event_id: id(),
    })))
    .expect("serializes");
    assert_eq!(row["type"], json!("end.expired"));
}

// Optionality is part of the description too (`?`): a reader accepts a
// member missing exactly when the description marks it optional.

/// Whether `value` still parses as `T` with `key` removed.
fn parses_without<T: serde::de::DeserializeOwned>(value: &Value, key: &str) -> bool {
    let mut v = value.clone();
    v.as_object_mut().expect("object").remove(key);
    serde_json::from_value::<T>(v).is_ok()
}

/// The fields a described struct marks optional (`?`).
fn described_optional(name: &str) -> BTreeSet<String> {
    described(name)
        .iter()
        .filter(|f| f.ends_with('?'))
        .map(|f| f.split(':').next().expect("named").to_string())
        .collect()
}

/// The members a reader accepts missing.
fn omittable<T: serde::de::DeserializeOwned>(value: &Value) -> BTreeSet<String> {
    keys(value)
        .into_iter()
        .filter(|k| parses_without::<T>(value, k))
        .collect()
}

#[test]
fn optional_marks_match_what_a_reader_accepts_missing() {
    let row = serde_json::to_value(envelope(Payload::EndExpired(EndExpired {
        end_event_id: id(),
    })))
    .expect("serializes");
    let mut found = Vec::new();
    let mut check = |name: &str, got: BTreeSet<String>| {
        let want = described_optional(name);
        if got != want {
            found.push(format!(
                "{name}: accepts missing {got:?}, described optional {want:?}"
            ));
        }
    };
    check("envelope", omittable::<Event>(&row));
    check("session_ref", omittable::<SessionRef>(&row["session"]));
    check("clock_sample", omittable::<ClockSample>(&row["clock"]));
    check(
        "turn_attribution",
        omittable::<TurnAttribution>(&row["turn"]),
    );
    check("provenance", omittable::<Provenance>(&row["provenance"]));
    check("raw_ref", omittable::<RawRef>(&row["raw"][0]));
    check(
        "recovery",
        omittable::<Recovery>(&serde_json::to_value(recovery()).unwrap()),
    );
    for payload in samples() {
        let ty = payload.event_type().as_str();
        let whole = serde_json::to_value(&payload).expect("serializes");
        let got = keys(&whole["payload"])
            .into_iter()
            .filter(|k| {
                let mut v = whole.clone();
                v["payload"].as_object_mut().unwrap().remove(k);
                serde_json::from_value::<Payload>(v).is_ok()
            })
            .collect();
        check(ty, got);
    }
    // Known difference, kept because generation 1 has shipped: the
    // description says `prompt.submitted.transformed` is a plain `bool`, but
    // the struct reads a missing `transformed` as false (`serde(default)`).
    // Every writer writes the key, so no stored row differs; a reader is
    // merely more lenient than the description says.
    let known = [
        "prompt.submitted: accepts missing {\"prompt\", \"transformed\"}, \
         described optional {\"prompt\"}",
    ];
    assert_eq!(found, known, "{found:#?}");
}
