//! The contracts of shipped generations, frozen, so that an archived epoch
//! is judged by the generation that wrote it.
//!
//! Generations 1 to 7 were described by hand, type by type, as
//! `name:type` items (`?` marks a member a reader may miss); their schema
//! digest was blake3 over that description (the tag `harnery.contract`,
//! the generation as a u32 LE, then each type's name, its count of items
//! and each item, length-prefixed with u32 LE). Each description is kept
//! here as it shipped (`frozen/gen<N>.txt`, one type a line: its name,
//! then its items), and a test recomputes every pinned digest from it, so
//! a frozen file cannot drift from what shipped. From generation 8 on, a
//! generation's shape is derived from the types (`digest`) and frozen as
//! JSON (`frozen/gen<N>.json`) once it ships.

use super::shape::{Member, ObjectShape, Shape};

/// Generation `n`'s description as it shipped, `n` from 1 to 7.
pub(crate) fn described_text(n: u32) -> Option<&'static str> {
    Some(match n {
        1 => include_str!("frozen/gen1.txt"),
        2 => include_str!("frozen/gen2.txt"),
        3 => include_str!("frozen/gen3.txt"),
        4 => include_str!("frozen/gen4.txt"),
        5 => include_str!("frozen/gen5.txt"),
        6 => include_str!("frozen/gen6.txt"),
        7 => include_str!("frozen/gen7.txt"),
        _ => return None,
    })
}

/// A shape frozen as JSON once its generation shipped (from 8 on).
pub(crate) fn frozen_shape_json(n: u32) -> Option<&'static str> {
    match n {
        8 => Some(include_str!("frozen/gen8.json")),
        9 => Some(include_str!("frozen/gen9.json")),
        10 => Some(include_str!("frozen/gen10.json")),
        11 => Some(include_str!("frozen/gen11.json")),
        12 => Some(include_str!("frozen/gen12.json")),
        _ => None,
    }
}

/// One described type: its name and its items.
pub(crate) struct Described {
    pub name: &'static str,
    pub items: Vec<&'static str>,
}

/// The described types of a frozen text, in order.
pub(crate) fn parse(text: &'static str) -> Vec<Described> {
    text.lines()
        .filter(|l| !l.is_empty())
        .map(|l| {
            let mut words = l.split(' ');
            Described {
                name: words.next().expect("a line names its type"),
                items: words.collect(),
            }
        })
        .collect()
}

#[cfg(test)]
/// The digest generations 1 to 7 computed over their description.
pub(crate) fn described_digest(generation: u32, types: &[Described]) -> blake3::Hash {
    let mut w = super::digest_writer::DigestWriter::new();
    w.raw(b"harnery.contract").raw(&generation.to_le_bytes());
    for ty in types {
        w.field_u32(ty.name.as_bytes()).count_u32(ty.items.len());
        for item in &ty.items {
            w.field_u32(item.as_bytes());
        }
    }
    w.finish()
}

/// The types every description lists before the payloads.
const SHARED: &[&str] = &[
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

/// The shape a hand-written description describes: the envelope, closed,
/// with one alternative per payload type (its `type` and its `payload`,
/// closed like every described struct but the clock sample, which never
/// refused unknown members).
pub(crate) fn described_shape(types: &[Described]) -> Shape {
    let lookup = |name: &str| types.iter().find(|t| t.name == name);
    let envelope = lookup("envelope").expect("every description has the envelope");
    let one_of = types
        .iter()
        .filter(|t| !SHARED.contains(&t.name))
        .map(|t| {
            Shape::Object(ObjectShape {
                members: vec![
                    member("type", true, Shape::Enum(vec![t.name.to_string()])),
                    member("payload", true, Shape::Object(object(types, t, true))),
                ],
                closed: false,
                one_of: Vec::new(),
            })
        })
        .collect();
    // `type:event_type` and `payload:payload` are the alternatives.
    let members = Described {
        name: envelope.name,
        items: envelope
            .items
            .iter()
            .copied()
            .filter(|i| !i.starts_with("type:") && !i.starts_with("payload:"))
            .collect(),
    };
    let mut shape = object(types, &members, true);
    shape.one_of = one_of;
    Shape::Object(shape)
}

fn member(name: &str, required: bool, shape: Shape) -> Member {
    Member {
        name: name.to_string(),
        required,
        shape,
    }
}

fn object(types: &[Described], ty: &Described, closed: bool) -> ObjectShape {
    let members = ty
        .items
        .iter()
        .map(|item| {
            let (name, t) = item.split_once(':').expect("a member is `name:type`");
            match t.strip_suffix('?') {
                // A list a reader may miss is an empty one, never `null`;
                // any JSON value already takes `null`.
                Some(t) if t.starts_with("list(") || t == "json" => {
                    member(name, false, of(types, t))
                }
                Some(t) => member(name, false, Shape::Nullable(Box::new(of(types, t)))),
                None => member(name, true, of(types, t)),
            }
        })
        .collect();
    ObjectShape {
        members,
        closed,
        one_of: Vec::new(),
    }
}

/// The shape of one described type string.
fn of(types: &[Described], t: &str) -> Shape {
    let inner = |prefix: &str| t.strip_prefix(prefix).and_then(|r| r.strip_suffix(')'));
    if let Some(values) = inner("enum(") {
        return Shape::Enum(values.split(',').map(str::to_string).collect());
    }
    if let Some(item) = inner("list(") {
        return Shape::List(Box::new(of(types, item)));
    }
    if let Some(value) = inner("observation(") {
        let alternative = |name: &str, shape: Shape| {
            Shape::Object(ObjectShape {
                members: vec![member(name, true, shape)],
                closed: true,
                one_of: Vec::new(),
            })
        };
        return Shape::OneOf(vec![
            alternative("observed", of(types, value)),
            alternative("unknown", Shape::String),
        ]);
    }
    match t {
        "string" | "event_id" => Shape::String,
        "bool" => Shape::Bool,
        "json" => Shape::Any,
        "u64" => Shape::Integer("uint64".into()),
        "i64" => Shape::Integer("int64".into()),
        "u32" => Shape::Integer("uint32".into()),
        "i32" => Shape::Integer("int32".into()),
        // Described as its bare value list.
        "outcome" => of(
            types,
            types
                .iter()
                .find(|d| d.name == "outcome")
                .expect("described")
                .items[0],
        ),
        name => {
            let d = types.iter().find(|d| d.name == name).unwrap_or_else(|| {
                panic!("a frozen description names `{name}`, which it does not describe")
            });
            Shape::Object(object(types, d, name != "clock_sample"))
        }
    }
}
