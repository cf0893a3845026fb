//! The schema digest: blake3 over a canonical, byte-defined encoding of the
//! contract's shape, derived from the types themselves. `schemars` reads
//! the event envelope and every payload, nested struct and enum with their
//! serde attributes into a JSON Schema; [`Shape::from_schema`] keeps what
//! a row's meaning depends on (every member at every level of nesting,
//! its type and integer width, whether a reader requires it, enum values,
//! closed structs, the tagged payloads) and [`Shape::encode`] writes it in
//! a fixed order with length prefixes. So adding, removing, renaming,
//! retyping or un-requiring a member anywhere moves the digest, and a
//! golden test pins it: a change to the contract ships as an epoch advance.
//! What the types cannot show (what a number means, the validator rules'
//! reach) is covered by the generation number, which is hashed too, and
//! the validator rules, named one by one.
//!
//! Encoding: the ASCII tag `harnery.contract.shape`, the generation as a
//! little-endian u32, the shape's encoding after its length as a u64 LE,
//! then the count of validator rules (u32 LE) and each rule's number (one
//! byte) and name (u32 LE length-prefixed). Generations 1 to 7 hashed a
//! hand-written description instead (`frozen`).

use std::sync::OnceLock;

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;

use super::event::Event;
use super::shape::{Shape, ShapeError};
use super::validate::Rule;

/// Bumped with every contract change that ships as an epoch advance.
pub const CONTRACT_GENERATION: u32 = 12;

/// This build's contract, read from its types (once per process).
pub fn contract_shape() -> &'static Shape {
    static SHAPE: OnceLock<Shape> = OnceLock::new();
    SHAPE.get_or_init(|| {
        shape_of::<Event>().expect(
            "the contract's types use only schema constructs the shape knows (tests read them)",
        )
    })
}

/// The shape of `T` as a reader takes it, every subschema inlined (so no
/// Rust type name reaches it).
pub(crate) fn shape_of<T: JsonSchema>() -> Result<Shape, ShapeError> {
    let schema = SchemaSettings::draft2020_12()
        .for_deserialize()
        .with(|s| s.inline_subschemas = true)
        .into_generator()
        .into_root_schema_for::<T>();
    Shape::from_schema(schema.as_value())
}

/// The digest of `shape` as generation `generation` with these rules.
pub fn shape_digest(generation: u32, shape: &Shape, rules: &[Rule]) -> blake3::Hash {
    let mut bytes = Vec::new();
    shape.encode(&mut bytes);
    let mut w = super::DigestWriter::new();
    w.raw(b"harnery.contract.shape")
        .raw(&generation.to_le_bytes())
        .field_u64(&bytes)
        .count_u32(rules.len());
    for rule in rules {
        w.raw(&[rule.number()]).field_u32(rule.name().as_bytes());
    }
    w.finish()
}

/// The digest this build's types give, derived afresh (the shape read
/// through `schemars`, then hashed). Only tests call it: a process takes
/// the pinned digest of its generation (`schema_digest`), and a test holds
/// the two equal, so no command pays for reading the types at start-up.
pub fn derived_schema_digest() -> blake3::Hash {
    shape_digest(CONTRACT_GENERATION, contract_shape(), &Rule::ALL)
}
