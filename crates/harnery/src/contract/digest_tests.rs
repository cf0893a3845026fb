//! The schema digest, pinned, and shown to cover the contract: every
//! shipped generation's frozen description hashes to its pinned digest;
//! the shape read from the types is generation 7's description member for
//! member (one known difference); a change to a nested member or to a
//! member's type moves the digest, through the real derive as well as on
//! the real shape; and what a row's meaning does not depend on
//! (documentation, declaration order, Rust names) does not move it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::digest::shape_of;
use super::shape::{Member, ObjectShape};
use super::*;

const GEN12: &str = "081a2061e45f712d36111cfebe19bf4e19a1c28c81ac75c0abd959721c187c16";

#[test]
fn schema_digest_is_pinned() {
    // Changing this value means the contract changed: ship it as an epoch
    // advance, bump CONTRACT_GENERATION and freeze the new shape.
    // The types themselves, read afresh, and the value every process uses.
    assert_eq!(derived_schema_digest().to_hex().as_str(), GEN12);
    assert_eq!(schema_digest_hex(), GEN12);
    assert_eq!(CONTRACT_GENERATION, 12);
}

#[test]
fn every_shipped_description_hashes_to_its_pinned_digest() {
    for g in &GENERATIONS[..7] {
        let text = frozen::described_text(g.number).expect("generations 1-7 are described");
        let digest = frozen::described_digest(g.number, &frozen::parse(text));
        assert_eq!(
            digest.to_hex().as_str(),
            g.digest,
            "generation {}",
            g.number
        );
    }
    assert!(frozen::described_text(8).is_none());
}

#[test]
fn the_frozen_shape_of_this_generation_is_the_one_read_from_the_types() {
    let current = current_generation();
    let frozen: Shape = serde_json::from_str(
        frozen::frozen_shape_json(current.number).expect("this generation is frozen"),
    )
    .expect("reads back");
    assert_same(&frozen, contract_shape());
    assert_eq!(current.shape(), frozen);
    assert_eq!(
        shape_digest(current.number, &frozen, &Rule::ALL)
            .to_hex()
            .as_str(),
        GEN12
    );
}

/// Two independent sources agree: what generation 7 described by hand is
/// what the types said in generation 8 (frozen as it shipped), member for
/// member, at every level of nesting (types, integer widths, optionality,
/// enum values, closed structs).
#[test]
fn generation_eight_is_what_generation_seven_described_with_one_known_difference() {
    let described = frozen::parse(frozen::described_text(7).expect("described"));
    let mut seven = frozen::described_shape(&described);
    // Known difference, as generation 7's own tests noted it: the
    // description says `prompt.submitted.transformed` is a required bool,
    // the struct reads a missing one as false (`serde(default)`).
    payload_mut(&mut seven, "prompt.submitted")
        .members
        .iter_mut()
        .find(|m| m.name == "transformed")
        .expect("described")
        .required = false;
    assert_same(&seven, &GENERATIONS[7].shape());
}

/// Generation 9 is generation 8 with exactly its three changes: four more
/// adapter ids, `tool.completed.paired_by` (optional, one value), and the
/// event type `hook.observed`.
#[test]
fn generation_nine_is_generation_eight_with_its_three_changes() {
    let mut eight = GENERATIONS[7].shape();
    let session = object_in(&mut member_mut(envelope_mut(&mut eight), "session").shape);
    match &mut member_mut(session, "adapter").shape {
        Shape::Enum(ids) => {
            ids.extend(["codex", "gemini-cli", "qwen-code", "opencode"].map(String::from))
        }
        other => panic!("the adapter is {other:?}"),
    }
    payload_mut(&mut eight, "tool.completed")
        .members
        .push(Member {
            name: "paired_by".into(),
            required: false,
            shape: Shape::Nullable(Box::new(Shape::Enum(vec!["order".into()]))),
        });
    let member = |name: &str, required: bool, shape: Shape| Member {
        name: name.into(),
        required,
        shape,
    };
    let text = || Shape::Nullable(Box::new(Shape::String));
    let payload = ObjectShape {
        members: vec![
            member("event", true, Shape::String),
            member("model", false, text()),
            member("detail", false, text()),
        ],
        closed: true,
        one_of: Vec::new(),
    };
    // Its place among the alternatives is the Payload enum's, after
    // message.displayed.
    let alternatives = &mut envelope_mut(&mut eight).one_of;
    let displayed = alternatives
        .iter()
        .position(|a| format!("{a:?}").contains("\"message.displayed\""))
        .expect("message.displayed is an alternative");
    alternatives.insert(
        displayed + 1,
        Shape::Object(ObjectShape {
            members: vec![
                member("type", true, Shape::Enum(vec!["hook.observed".into()])),
                member("payload", true, Shape::Object(payload)),
            ],
            closed: false,
            one_of: Vec::new(),
        }),
    );
    assert_same(&eight, &GENERATIONS[8].shape());
}

/// Generation 10 is generation 9 with exactly its one change: the event
/// type `session.imported`, the last of the alternatives (the Payload
/// enum's order).
#[test]
fn generation_ten_is_generation_nine_with_its_one_change() {
    let mut nine = GENERATIONS[8].shape();
    let member = |name: &str, shape: Shape| Member {
        name: name.into(),
        required: true,
        shape,
    };
    let payload = ObjectShape {
        members: vec![
            member("path", Shape::String),
            member("bytes", Shape::Integer("uint64".into())),
            member("modified_unix_ns", Shape::Integer("int64".into())),
        ],
        closed: true,
        one_of: Vec::new(),
    };
    envelope_mut(&mut nine)
        .one_of
        .push(Shape::Object(ObjectShape {
            members: vec![
                member("type", Shape::Enum(vec!["session.imported".into()])),
                member("payload", Shape::Object(payload)),
            ],
            closed: false,
            one_of: Vec::new(),
        }));
    assert_same(&nine, &GENERATIONS[9].shape());
}

/// Generation 11 is generation 10 with exactly its two changes: the event
/// type `session.titled`, the last of the alternatives, and the result's
/// text on `tool.recorded` (`output`, `output_cut_bytes`: optional, last).
#[test]
fn generation_eleven_is_generation_ten_with_its_two_changes() {
    let mut ten = GENERATIONS[9].shape();
    let member = |name: &str, required: bool, shape: Shape| Member {
        name: name.into(),
        required,
        shape,
    };
    let payload = ObjectShape {
        members: vec![
            member("title", true, Shape::String),
            member("field", true, Shape::String),
            member("user_named", false, Shape::Nullable(Box::new(Shape::Bool))),
            member("path", true, Shape::String),
            member(
                "offset",
                false,
                Shape::Nullable(Box::new(Shape::Integer("uint64".into()))),
            ),
        ],
        closed: true,
        one_of: Vec::new(),
    };
    envelope_mut(&mut ten)
        .one_of
        .push(Shape::Object(ObjectShape {
            members: vec![
                member("type", true, Shape::Enum(vec!["session.titled".into()])),
                member("payload", true, Shape::Object(payload)),
            ],
            closed: false,
            one_of: Vec::new(),
        }));
    let recorded = payload_mut(&mut ten, "tool.recorded");
    recorded.members.push(member(
        "output",
        false,
        Shape::Nullable(Box::new(Shape::String)),
    ));
    recorded.members.push(member(
        "output_cut_bytes",
        false,
        Shape::Nullable(Box::new(Shape::Integer("uint64".into()))),
    ));
    assert_same(&ten, &GENERATIONS[10].shape());
}

/// Generation 12 is generation 11 with exactly its one change to the
/// types: the event type `tool.batch_result`, the last of the
/// alternatives. (Its other change, `tool.recorded`'s `output` from four
/// more agents' records, is a change of meaning the number carries.)
#[test]
fn generation_twelve_is_generation_eleven_with_its_one_change() {
    let mut eleven = GENERATIONS[10].shape();
    let member = |name: &str, required: bool, shape: Shape| Member {
        name: name.into(),
        required,
        shape,
    };
    let text = || Shape::Nullable(Box::new(Shape::String));
    let payload = ObjectShape {
        members: vec![
            member("tool_call_id", false, text()),
            member("tool_name", true, Shape::String),
            member("requested_event_id", false, text()),
            member("output", true, Shape::String),
            member(
                "output_cut_bytes",
                false,
                Shape::Nullable(Box::new(Shape::Integer("uint64".into()))),
            ),
        ],
        closed: true,
        one_of: Vec::new(),
    };
    envelope_mut(&mut eleven)
        .one_of
        .push(Shape::Object(ObjectShape {
            members: vec![
                member("type", true, Shape::Enum(vec!["tool.batch_result".into()])),
                member("payload", true, Shape::Object(payload)),
            ],
            closed: false,
            one_of: Vec::new(),
        }));
    assert_same(&eleven, contract_shape());
}

/// Two shapes are the same contract when their canonical encodings are
/// (member order is not part of it).
fn assert_same(a: &Shape, b: &Shape) {
    let bytes = |s: &Shape| {
        let mut out = Vec::new();
        s.encode(&mut out);
        out
    };
    assert!(bytes(a) == bytes(b), "the shapes differ:\n{a:?}\n{b:?}");
}

fn envelope_mut(shape: &mut Shape) -> &mut ObjectShape {
    match shape {
        Shape::Object(o) => o,
        other => panic!("the envelope is {other:?}"),
    }
}

/// The payload object of event type `ty` inside an envelope shape.
fn payload_mut<'a>(shape: &'a mut Shape, ty: &str) -> &'a mut ObjectShape {
    let tag = Shape::Enum(vec![ty.to_string()]);
    for alternative in &mut envelope_mut(shape).one_of {
        let Shape::Object(a) = alternative else {
            continue;
        };
        if a.member("type").map(|m| &m.shape) != Some(&tag) {
            continue;
        }
        let payload = a.members.iter_mut().find(|m| m.name == "payload");
        match payload.map(|m| &mut m.shape) {
            Some(Shape::Object(p)) => return p,
            other => panic!("the payload of {ty} is {other:?}"),
        }
    }
    panic!("{ty} is not in the shape")
}

fn member_mut<'a>(o: &'a mut ObjectShape, name: &str) -> &'a mut Member {
    o.members
        .iter_mut()
        .find(|m| m.name == name)
        .unwrap_or_else(|| panic!("no member {name}"))
}

/// The object inside a member's shape (through `nullable` and `list`).
fn object_in(shape: &mut Shape) -> &mut ObjectShape {
    match shape {
        Shape::Object(o) => o,
        Shape::Nullable(inner) | Shape::List(inner) => object_in(inner),
        other => panic!("{other:?} holds no object"),
    }
}

fn digest_of(shape: &Shape) -> String {
    shape_digest(CONTRACT_GENERATION, shape, &Rule::ALL)
        .to_hex()
        .to_string()
}

/// One edit of a shape.
type Change = dyn Fn(&mut Shape);

/// The nested members the old digest never covered are in the shape, with
/// their types, and changing any of them moves the digest.
#[test]
fn a_change_to_a_nested_member_moves_the_digest() {
    let real = contract_shape().clone();
    assert_eq!(digest_of(&real), GEN12);
    let changes: Vec<(&str, Box<Change>)> = vec![
        (
            "record_at.offset retyped to int64",
            Box::new(|s| {
                let record =
                    object_in(&mut member_mut(payload_mut(s, "message.user"), "record").shape);
                let offset = member_mut(record, "offset");
                assert_eq!(offset.shape, Shape::Integer("uint64".into()));
                offset.shape = Shape::Integer("int64".into());
            }),
        ),
        (
            "record_at.path removed",
            Box::new(|s| {
                let record =
                    object_in(&mut member_mut(payload_mut(s, "usage.reported"), "record").shape);
                record.members.retain(|m| m.name != "path");
            }),
        ),
        (
            "effect.ref renamed",
            Box::new(|s| {
                let effect = object_in(
                    &mut member_mut(payload_mut(s, "checkpoint.recorded"), "effects").shape,
                );
                member_mut(effect, "ref").name = "reference".into();
            }),
        ),
        (
            "effect.exit_code no longer nullable",
            Box::new(|s| {
                let effect = object_in(
                    &mut member_mut(payload_mut(s, "checkpoint.recorded"), "effects").shape,
                );
                let exit = member_mut(effect, "exit_code");
                assert_eq!(
                    exit.shape,
                    Shape::Nullable(Box::new(Shape::Integer("int64".into())))
                );
                exit.shape = Shape::Integer("int64".into());
            }),
        ),
        (
            "offset_range.to made optional",
            Box::new(|s| {
                let range = object_in(
                    &mut member_mut(payload_mut(s, "session.resumed"), "superseded").shape,
                );
                member_mut(range, "to").required = false;
            }),
        ),
        (
            "effect gained a member",
            Box::new(|s| {
                let effect = object_in(
                    &mut member_mut(payload_mut(s, "checkpoint.recorded"), "effects").shape,
                );
                effect.members.push(Member {
                    name: "note".into(),
                    required: false,
                    shape: Shape::String,
                });
            }),
        ),
        (
            "a recovery reason added",
            Box::new(|s| {
                let recovery =
                    object_in(&mut member_mut(payload_mut(s, "tool.completed"), "recovery").shape);
                match &mut member_mut(recovery, "reason").shape {
                    Shape::Enum(values) => values.push("another".into()),
                    other => panic!("reason is {other:?}"),
                }
            }),
        ),
        (
            "the envelope opened",
            Box::new(|s| envelope_mut(s).closed = false),
        ),
    ];
    let mut seen = vec![GEN12.to_string()];
    for (what, change) in changes {
        let mut changed = real.clone();
        change(&mut changed);
        let d = digest_of(&changed);
        assert!(!seen.contains(&d), "{what} did not move the digest");
        seen.push(d);
    }
    // The generation and the rules are covered too.
    assert_ne!(shape_digest(13, &real, &Rule::ALL).to_hex().as_str(), GEN12);
    assert_ne!(
        shape_digest(12, &real, &Rule::ALL[..5]).to_hex().as_str(),
        GEN12
    );
}

// The same, through the derive: small stand-ins of a payload with a nested
// record, changed one way each. `shape_of` is what `contract_shape` runs.

#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct At {
    path: String,
    offset: u64,
}

#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Line {
    record: At,
    #[serde(default)]
    text: Option<String>,
}

/// `At` with `offset` retyped.
#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct AtSigned {
    path: String,
    offset: i64,
}

#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct LineSigned {
    record: AtSigned,
    #[serde(default)]
    text: Option<String>,
}

/// `At` with `path` renamed on the wire.
#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct AtRenamed {
    #[serde(rename = "file")]
    path: String,
    offset: u64,
}

#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct LineRenamed {
    record: AtRenamed,
    #[serde(default)]
    text: Option<String>,
}

/// `At` with `offset` optional.
#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct AtOptional {
    path: String,
    #[serde(default)]
    offset: Option<u64>,
}

#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct LineOptional {
    record: AtOptional,
    #[serde(default)]
    text: Option<String>,
}

/// `Line` as it is, but declared in another order, documented and named
/// otherwise: nothing a row's meaning depends on.
#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Place {
    /// Where the line starts.
    offset: u64,
    /// The record's file.
    path: String,
}

/// A line of the record.
#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct RecordedLine {
    /// Its text.
    #[serde(default)]
    text: Option<String>,
    record: Place,
}

fn derived<T: JsonSchema>() -> String {
    digest_of(&shape_of::<T>().expect("the stand-ins have a shape"))
}

#[test]
fn a_nested_change_through_the_derive_moves_the_digest() {
    let base = derived::<Line>();
    let changed = [
        ("offset retyped", derived::<LineSigned>()),
        ("path renamed", derived::<LineRenamed>()),
        ("offset optional", derived::<LineOptional>()),
    ];
    let mut seen = vec![base.clone()];
    for (what, d) in changed {
        assert!(!seen.contains(&d), "{what} did not move the digest");
        seen.push(d);
    }
}

#[test]
fn documentation_order_and_rust_names_are_outside_the_digest() {
    // The stand-ins differ in all three, and are the same contract.
    assert_ne!(
        serde_json::to_string(&schemars::schema_for!(Line)).unwrap(),
        serde_json::to_string(&schemars::schema_for!(RecordedLine)).unwrap(),
        "the schemas themselves differ"
    );
    assert_eq!(derived::<Line>(), derived::<RecordedLine>());
}

#[test]
fn every_event_type_is_an_alternative_of_the_envelope() {
    let mut shape = contract_shape().clone();
    assert_eq!(envelope_mut(&mut shape).one_of.len(), EventType::ALL.len());
    for ty in EventType::ALL {
        payload_mut(&mut shape, ty.as_str());
    }
}
