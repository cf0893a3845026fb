//! Reading events back: every payload type from text, bytes and a `Value`,
//! members in any order, and the faults the reader must refuse, named as
//! serde names them.

use serde_json::{Value, json};

use super::tests::{envelopes, event, samples};
use super::*;

/// `event` as JSON text with its members in the order `keys` gives (any
/// member not named follows in serde's order).
fn text_in_order(e: &Event, keys: &[&str]) -> String {
    let Value::Object(map) = serde_json::to_value(e).expect("serializes") else {
        panic!("an event is an object");
    };
    let mut members: Vec<(String, Value)> = Vec::new();
    for key in keys {
        if let Some(v) = map.get(*key) {
            members.push((key.to_string(), v.clone()));
        }
    }
    for (k, v) in &map {
        if !keys.contains(&k.as_str()) {
            members.push((k.clone(), v.clone()));
        }
    }
    object_text(&members)
}

fn object_text(members: &[(String, Value)]) -> String {
    let parts: Vec<String> = members
        .iter()
        .map(|(k, v)| format!("{}:{}", Value::String(k.clone()), v))
        .collect();
    format!("{{{}}}", parts.join(","))
}

fn every_event() -> Vec<Event> {
    samples().iter().flat_map(envelopes).collect()
}

#[test]
fn every_payload_type_reads_back_from_text_bytes_and_value() {
    for e in every_event() {
        let text = serde_json::to_string(&e).expect("serializes");
        let from_text: Event = serde_json::from_str(&text).expect("text parses");
        assert_eq!(from_text, e, "{text}");
        let from_bytes: Event = serde_json::from_slice(text.as_bytes()).expect("bytes parse");
        assert_eq!(from_bytes, e, "{text}");
        let from_reader: Event = serde_json::from_reader(text.as_bytes()).expect("reader parses");
        assert_eq!(from_reader, e, "{text}");
        let value: Value = serde_json::from_str(&text).expect("json");
        let from_value: Event = serde_json::from_value(value).expect("value parses");
        assert_eq!(from_value, e, "{text}");
    }
}

#[test]
fn members_read_back_in_any_order() {
    for e in every_event() {
        for keys in [
            &["payload", "type"][..],
            &["payload", "id", "type"],
            &["type", "raw", "payload", "id"],
            &["raw", "turn", "payload", "session", "type"],
        ] {
            let text = text_in_order(&e, keys);
            let back: Event = serde_json::from_str(&text).expect("parses");
            assert_eq!(back, e, "{text}");
        }
    }
}

#[test]
fn tool_json_reads_back_canonical_whatever_its_spacing() {
    let mut e = event(samples()[5].clone(), Attestation::Native);
    let text = text_in_order(&e, &["type"]).replace(
        r#""input":{}"#,
        r#""input": { "z" : [1, 2.5, "\u0041"], "a" : {"y":null,"b":true}, "a": 7 }"#,
    );
    assert!(text.contains(r#""z" : [1"#), "{text}");
    let Payload::ToolRequested(p) = &mut e.payload else {
        panic!("sample 5 is tool.requested");
    };
    p.input = Some(Json::parse(r#"{"a":7,"z":[1,2.5,"A"]}"#).expect("json"));
    for keys in [&["type", "payload"][..], &["payload", "type"]] {
        let reordered = {
            let back: Value = serde_json::from_str(&text).expect("json");
            let Value::Object(map) = back else { panic!() };
            let mut members: Vec<(String, Value)> = Vec::new();
            for key in keys {
                members.push((key.to_string(), map[*key].clone()));
            }
            let rest: Vec<(String, Value)> = map
                .into_iter()
                .filter(|(k, _)| !keys.contains(&k.as_str()))
                .collect();
            members.extend(rest);
            members
        };
        // The spaced text itself, and the same members as a `Value`.
        let from_text: Event = serde_json::from_str(&text).expect("parses");
        assert_eq!(from_text, e);
        assert_eq!(
            serde_json::to_string(&from_text).expect("serializes"),
            serde_json::to_string(&e).expect("serializes")
        );
        let from_reordered: Event = serde_json::from_str(&object_text(&reordered)).expect("parses");
        assert_eq!(from_reordered, e);
        let from_value: Event =
            serde_json::from_value(serde_json::from_str(&text).expect("json")).expect("parses");
        assert_eq!(from_value, e);
    }
}

/// A well-formed row to break, as an ordered member list.
fn good_members() -> Vec<(String, Value)> {
    let e = event(samples()[1].clone(), Attestation::Native);
    let Value::Object(map) = serde_json::to_value(&e).expect("serializes") else {
        panic!("an event is an object");
    };
    let mut members: Vec<(String, Value)> = map.into_iter().collect();
    // type before payload, as stored rows have them
    members.sort_by_key(|(k, _)| match k.as_str() {
        "type" => 1,
        "payload" => 2,
        _ => 0,
    });
    members
}

fn without(key: &str) -> Vec<(String, Value)> {
    good_members()
        .into_iter()
        .filter(|(k, _)| k != key)
        .collect()
}

fn with(extra: &[(&str, Value)]) -> Vec<(String, Value)> {
    let mut m = good_members();
    m.extend(extra.iter().map(|(k, v)| (k.to_string(), v.clone())));
    m
}

fn replaced(key: &str, value: Value) -> Vec<(String, Value)> {
    good_members()
        .into_iter()
        .map(|(k, v)| if k == key { (k, value.clone()) } else { (k, v) })
        .collect()
}

/// The error reading `members` as text, and (where a `Value` can hold
/// them: no repeated keys) as a `Value`.
fn refusal(members: &[(String, Value)]) -> (String, Option<String>) {
    let text = object_text(members);
    let err = serde_json::from_str::<Event>(&text)
        .expect_err(&text)
        .to_string();
    let mut keys: Vec<&String> = members.iter().map(|(k, _)| k).collect();
    keys.sort();
    keys.dedup();
    let from_value = (keys.len() == members.len()).then(|| {
        let value: Value = serde_json::from_str(&text).expect("json");
        serde_json::from_value::<Event>(value)
            .expect_err(&text)
            .to_string()
    });
    (err, from_value)
}

fn assert_refused(members: Vec<(String, Value)>, message: &str) {
    let (text_err, value_err) = refusal(&members);
    assert!(
        text_err.starts_with(message),
        "{text_err:?} is not {message:?}"
    );
    if let Some(value_err) = value_err {
        assert!(
            value_err.starts_with(message),
            "{value_err:?} is not {message:?}"
        );
    }
}

#[test]
fn the_reader_accepts_the_well_formed_row() {
    let text = object_text(&good_members());
    serde_json::from_str::<Event>(&text).expect("the row to break is well formed");
}

#[test]
fn unknown_members_are_refused() {
    assert_refused(with(&[("surprise", json!(1))]), "unknown field `surprise`");
    assert_refused(
        replaced("payload", json!({"reason": "x", "surprise": 1})),
        "unknown field `surprise`, expected `reason`",
    );
    assert_refused(
        replaced(
            "session",
            json!({"adapter": "copilot", "session_id": "s", "x": 1}),
        ),
        "unknown field `x`, expected `adapter` or `session_id`",
    );
}

#[test]
fn missing_members_are_refused() {
    for key in [
        "id",
        "session",
        "offset",
        "time_unix_ns",
        "time_source",
        "turn",
        "provenance",
        "raw",
        "type",
    ] {
        assert_refused(without(key), &format!("missing field `{key}`"));
    }
    // a payload struct with required fields, its payload absent
    let mut m = replaced("type", json!("health.condition"));
    m.retain(|(k, _)| k != "payload");
    assert_refused(m, "missing field `payload`");
}

#[test]
fn optional_members_may_be_absent_or_null() {
    for key in ["clock", "agent_id"] {
        let text = object_text(&with(&[(key, Value::Null)]));
        serde_json::from_str::<Event>(&text).expect("null option");
    }
    // every payload field of session.ended is optional: an empty payload reads
    let text = object_text(&replaced("payload", json!({})));
    serde_json::from_str::<Event>(&text).expect("empty payload");
}

#[test]
fn repeated_members_are_refused() {
    for (key, value) in [
        ("id", json!("ev_y")),
        ("raw", json!([])),
        ("type", json!("session.ended")),
        ("payload", json!({})),
    ] {
        let (err, _) = refusal(&with(&[(key, value)]));
        assert!(
            err.starts_with(&format!("duplicate field `{key}`")),
            "{key}: {err}"
        );
    }
}

#[test]
fn unknown_and_malformed_types_are_refused() {
    assert_refused(
        replaced("type", json!("no.such.type")),
        "unknown variant `no.such.type`, expected one of `session.started`",
    );
    assert_refused(
        replaced("type", json!(true)),
        "invalid type: boolean `true`",
    );
    assert_refused(
        replaced("type", json!(1)),
        "invalid type: integer `1`, expected string or map",
    );
    assert_refused(
        replaced("type", json!({"session.ended": 1})),
        "invalid type: integer `1`, expected unit",
    );
    assert_refused(
        replaced("type", json!({"session.ended": null, "notification": null})),
        "invalid value: map, expected map with a single key",
    );
    assert_refused(replaced("payload", Value::Null), "invalid type: null");
    assert_refused(
        replaced("payload", json!("x")),
        "invalid type: string \"x\"",
    );
    assert_refused(replaced("offset", json!(-1)), "invalid value: integer `-1`");
    assert_refused(replaced("raw", json!({})), "invalid type: map");
}

#[test]
fn the_type_may_be_a_unit_variant_map() {
    // serde reads a tag as an enum, which JSON may also spell as a map of
    // the variant to null; rows never hold one, but the reader takes what
    // serde took.
    let text = object_text(&replaced("type", json!({"session.ended": null})));
    let e: Event = serde_json::from_str(&text).expect("a unit variant map");
    assert_eq!(e.event_type(), EventType::SessionEnded);
}

#[test]
fn a_non_object_is_refused() {
    for text in ["[]", "1", "\"x\"", "null"] {
        assert!(serde_json::from_str::<Event>(text).is_err(), "{text}");
    }
}
