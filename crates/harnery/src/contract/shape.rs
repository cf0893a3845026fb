//! The shape of the contract: what a ledger row may hold, member by member
//! and at every level of nesting, with each member's type, whether it may
//! be missing, and the values an enumerated member may take.
//!
//! The shape of this build's contract is read from its types, not written
//! out by hand: `schemars` derives a JSON Schema from the structs and their
//! serde attributes (renames, tags, flattening, defaults, closed structs),
//! and [`Shape::from_schema`] reads that schema into a `Shape`, keeping
//! only what a row's meaning depends on (documentation, titles and
//! defaults are left out) and refusing any schema construct it does not
//! know, so that nothing the types say can be skipped unseen.
//!
//! [`Shape::encode`] is the canonical byte encoding the schema digest
//! hashes: a kind tag, then the kind's parts, every string and every part
//! prefixed with its length as a little-endian u32; the members of an
//! object, the values of an enumeration and the alternatives of a choice
//! are sorted by their encoding, so the order they are declared in (or
//! the order a map keeps them in) never moves the digest.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// What a value may be.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Shape {
    /// Any JSON value (kept as the agent wrote it).
    Any,
    Bool,
    String,
    /// An integer of the named width: `uint64`, `int64`, `uint32`, `int32`.
    Integer(String),
    /// A string, one of these values.
    Enum(Vec<String>),
    /// `null`, or the inner shape.
    Nullable(Box<Shape>),
    List(Box<Shape>),
    Object(ObjectShape),
    /// Exactly one of the alternatives.
    OneOf(Vec<Shape>),
}

/// An object: its members, whether others are refused, and the
/// alternatives a flattened enum adds (each an object of its own members,
/// as the event envelope's `type` and `payload`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObjectShape {
    pub members: Vec<Member>,
    pub closed: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub one_of: Vec<Shape>,
}

/// One member of an object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Member {
    pub name: String,
    /// A reader refuses a row without it.
    pub required: bool,
    pub shape: Shape,
}

/// A schema construct the shape cannot express, with where it is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the contract's schema at {at}: {what}")]
pub(crate) struct ShapeError {
    pub at: String,
    pub what: String,
}

/// Schema keywords that say nothing about what a row may hold.
const IGNORED: &[&str] = &[
    "$schema",
    "title",
    "description",
    "default",
    "examples",
    // Implied by the integer's format.
    "minimum",
    "maximum",
];

impl Shape {
    /// Read a JSON Schema, as `schemars` writes it with every subschema
    /// inlined, into a shape.
    pub(crate) fn from_schema(schema: &Value) -> Result<Shape, ShapeError> {
        read(schema, "$")
    }

    /// The canonical encoding (see the module's doc).
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Shape::Any => tag(out, "any"),
            Shape::Bool => tag(out, "bool"),
            Shape::String => tag(out, "string"),
            Shape::Integer(width) => {
                tag(out, "integer");
                text(out, width);
            }
            Shape::Enum(values) => {
                tag(out, "enum");
                sorted(out, values.iter().map(|v| encoded(|o| text(o, v))));
            }
            Shape::Nullable(inner) => {
                tag(out, "nullable");
                inner.encode(out);
            }
            Shape::List(inner) => {
                tag(out, "list");
                inner.encode(out);
            }
            Shape::Object(o) => o.encode(out),
            Shape::OneOf(alternatives) => {
                tag(out, "one_of");
                sorted(out, alternatives.iter().map(|a| encoded(|o| a.encode(o))));
            }
        }
    }
}

impl ObjectShape {
    fn encode(&self, out: &mut Vec<u8>) {
        tag(out, "object");
        out.push(u8::from(self.closed));
        sorted(
            out,
            self.members.iter().map(|m| {
                encoded(|o| {
                    text(o, &m.name);
                    o.push(u8::from(m.required));
                    m.shape.encode(o);
                })
            }),
        );
        sorted(out, self.one_of.iter().map(|a| encoded(|o| a.encode(o))));
    }

    /// The member named `name`.
    pub(crate) fn member(&self, name: &str) -> Option<&Member> {
        self.members.iter().find(|m| m.name == name)
    }
}

fn tag(out: &mut Vec<u8>, kind: &str) {
    text(out, kind);
}

fn text(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u32).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

fn encoded(f: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
    let mut v = Vec::new();
    f(&mut v);
    v
}

/// A count, then each part length-prefixed, in byte order.
fn sorted(out: &mut Vec<u8>, parts: impl Iterator<Item = Vec<u8>>) {
    let mut parts: Vec<Vec<u8>> = parts.collect();
    parts.sort();
    out.extend_from_slice(&(parts.len() as u32).to_le_bytes());
    for p in parts {
        out.extend_from_slice(&(p.len() as u32).to_le_bytes());
        out.extend_from_slice(&p);
    }
}

fn fault(at: &str, what: impl Into<String>) -> ShapeError {
    ShapeError {
        at: at.to_string(),
        what: what.into(),
    }
}

fn read(schema: &Value, at: &str) -> Result<Shape, ShapeError> {
    let map = match schema {
        Value::Bool(true) => return Ok(Shape::Any),
        Value::Object(map) => map,
        other => return Err(fault(at, format!("not a schema: {other}"))),
    };
    for key in map.keys() {
        let known = [
            "type",
            "format",
            "enum",
            "const",
            "items",
            "properties",
            "required",
            "additionalProperties",
            "unevaluatedProperties",
            "oneOf",
            "anyOf",
        ];
        if !known.contains(&key.as_str()) && !IGNORED.contains(&key.as_str()) {
            return Err(fault(at, format!("keyword `{key}` is not understood")));
        }
    }
    if map.keys().all(|k| IGNORED.contains(&k.as_str())) {
        // Annotations alone (`{"default": null}` on an optional `Json`).
        return Ok(Shape::Any);
    }
    if let Some(any_of) = map.get("anyOf") {
        return read_nullable_any_of(any_of, at);
    }
    if map.contains_key("properties") {
        let object = read_object(map, at)?;
        return nullable_if(map, Shape::Object(object), at);
    }
    if let (Some(alternatives), false) = (map.get("oneOf"), map.contains_key("type")) {
        return read_one_of(alternatives, at);
    }
    let (ty, nullable) = read_type(map, at)?;
    let shape = match ty.as_str() {
        "boolean" => Shape::Bool,
        "integer" => Shape::Integer(
            map.get("format")
                .and_then(Value::as_str)
                .ok_or_else(|| fault(at, "an integer without a format"))?
                .to_string(),
        ),
        "string" => read_string(map, nullable, at)?,
        "array" => Shape::List(Box::new(read(
            map.get("items")
                .ok_or_else(|| fault(at, "an array without items"))?,
            &format!("{at}[]"),
        )?)),
        "object" => Shape::Object(read_object(map, at)?),
        other => return Err(fault(at, format!("type `{other}` is not understood"))),
    };
    Ok(if nullable {
        Shape::Nullable(Box::new(shape))
    } else {
        shape
    })
}

/// The one type a schema names, and whether `null` is allowed beside it.
fn read_type(map: &Map<String, Value>, at: &str) -> Result<(String, bool), ShapeError> {
    match map.get("type") {
        Some(Value::String(t)) => Ok((t.clone(), false)),
        Some(Value::Array(types)) => {
            let names: Vec<&str> = types.iter().filter_map(Value::as_str).collect();
            match names.as_slice() {
                [t, "null"] | ["null", t] => Ok((t.to_string(), true)),
                _ => Err(fault(at, format!("types {types:?} are not understood"))),
            }
        }
        _ => Err(fault(at, "a schema without a type")),
    }
}

fn nullable_if(map: &Map<String, Value>, shape: Shape, at: &str) -> Result<Shape, ShapeError> {
    if map.contains_key("type") && read_type(map, at)?.1 {
        return Ok(Shape::Nullable(Box::new(shape)));
    }
    Ok(shape)
}

/// `anyOf: [T, {type: null}]`, as an option of a non-primitive reads.
fn read_nullable_any_of(any_of: &Value, at: &str) -> Result<Shape, ShapeError> {
    let alternatives = any_of
        .as_array()
        .ok_or_else(|| fault(at, "anyOf is not a list"))?;
    let is_null = |v: &Value| v.get("type") == Some(&Value::String("null".into()));
    match alternatives.as_slice() {
        [t, n] | [n, t] if is_null(n) && !is_null(t) => Ok(Shape::Nullable(Box::new(read(t, at)?))),
        _ => Err(fault(at, "an anyOf other than a nullable type")),
    }
}

/// A string: free text, one constant or a list of values.
/// A nullable enumeration lists `null` among its values too: it is the
/// nullability, already read from the type.
fn read_string(map: &Map<String, Value>, nullable: bool, at: &str) -> Result<Shape, ShapeError> {
    if let Some(c) = map.get("const") {
        let c = c
            .as_str()
            .ok_or_else(|| fault(at, "a non-string constant"))?;
        return Ok(Shape::Enum(vec![c.to_string()]));
    }
    if let Some(Value::Array(values)) = map.get("enum") {
        let values: Vec<Value> = values
            .iter()
            .filter(|v| !(nullable && v.is_null()))
            .cloned()
            .collect();
        return Ok(Shape::Enum(strings(&Value::Array(values), at)?));
    }
    Ok(Shape::String)
}

/// A choice: string constants (an enum whose values are documented one by
/// one) are one enumeration; anything else stays a choice.
fn read_one_of(alternatives: &Value, at: &str) -> Result<Shape, ShapeError> {
    let alternatives = alternatives
        .as_array()
        .ok_or_else(|| fault(at, "oneOf is not a list"))?;
    let mut read_all = Vec::new();
    for (i, a) in alternatives.iter().enumerate() {
        read_all.push(read(a, &format!("{at}.oneOf[{i}]"))?);
    }
    if read_all.iter().all(|a| matches!(a, Shape::Enum(_))) {
        let values = read_all
            .into_iter()
            .flat_map(|a| match a {
                Shape::Enum(v) => v,
                _ => Vec::new(),
            })
            .collect();
        return Ok(Shape::Enum(values));
    }
    Ok(Shape::OneOf(read_all))
}

fn strings(values: &Value, at: &str) -> Result<Vec<String>, ShapeError> {
    values
        .as_array()
        .ok_or_else(|| fault(at, "enum is not a list"))?
        .iter()
        .map(|v| {
            v.as_str()
                .map(str::to_string)
                .ok_or_else(|| fault(at, format!("enum value {v} is not a string")))
        })
        .collect()
}

fn read_object(map: &Map<String, Value>, at: &str) -> Result<ObjectShape, ShapeError> {
    let required: Vec<String> = match map.get("required") {
        Some(r) => strings(r, at)?,
        None => Vec::new(),
    };
    let mut members = Vec::new();
    if let Some(props) = map.get("properties") {
        let props = props
            .as_object()
            .ok_or_else(|| fault(at, "properties is not a map"))?;
        for (name, schema) in props {
            members.push(Member {
                name: name.clone(),
                required: required.contains(name),
                shape: read(schema, &format!("{at}.{name}"))?,
            });
        }
    }
    if let Some(stray) = required
        .iter()
        .find(|r| !members.iter().any(|m| &m.name == *r))
    {
        return Err(fault(at, format!("`{stray}` is required but not a member")));
    }
    // `unevaluatedProperties` closes an object over its members and those
    // of the alternative it is (a flattened enum); `additionalProperties`
    // over its own members, which are all it has.
    let mut closed = false;
    for key in ["additionalProperties", "unevaluatedProperties"] {
        match map.get(key) {
            None => {}
            Some(Value::Bool(false)) => closed = true,
            Some(other) => return Err(fault(at, format!("{key} {other} is not understood"))),
        }
    }
    let mut one_of = Vec::new();
    if let Some(alternatives) = map.get("oneOf") {
        let alternatives = alternatives
            .as_array()
            .ok_or_else(|| fault(at, "oneOf is not a list"))?;
        for (i, a) in alternatives.iter().enumerate() {
            one_of.push(read(a, &format!("{at}.oneOf[{i}]"))?);
        }
    }
    Ok(ObjectShape {
        members,
        closed,
        one_of,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The byte layout, written out by hand for a small object: a closed
    /// object with a required integer `b` and an optional enum `a`.
    #[test]
    fn the_encoding_is_as_written_by_hand() {
        let shape = Shape::Object(ObjectShape {
            members: vec![
                Member {
                    name: "b".into(),
                    required: true,
                    shape: Shape::Integer("uint64".into()),
                },
                Member {
                    name: "a".into(),
                    required: false,
                    shape: Shape::Enum(vec!["y".into(), "x".into()]),
                },
            ],
            closed: true,
            one_of: Vec::new(),
        });
        let mut got = Vec::new();
        shape.encode(&mut got);
        let s = |t: &str| [&(t.len() as u32).to_le_bytes()[..], t.as_bytes()].concat();
        let part = |p: Vec<u8>| [(p.len() as u32).to_le_bytes().to_vec(), p].concat();
        let count = |n: u32| n.to_le_bytes().to_vec();
        // `a`: its name, not required, `enum` with its values in byte order.
        let a = [
            s("a"),
            vec![0],
            s("enum"),
            count(2),
            part(s("x")),
            part(s("y")),
        ]
        .concat();
        let b = [s("b"), vec![1], s("integer"), s("uint64")].concat();
        let want = [s("object"), vec![1], count(2), part(a), part(b), count(0)].concat();
        assert_eq!(got, want);
    }

    #[test]
    fn an_unknown_schema_keyword_is_refused() {
        let schema = serde_json::json!({"type": "string", "pattern": "^a"});
        let err = Shape::from_schema(&schema).unwrap_err();
        assert_eq!(
            err.to_string(),
            "the contract's schema at $: keyword `pattern` is not understood"
        );
    }
}
