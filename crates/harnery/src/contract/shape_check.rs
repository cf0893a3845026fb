//! A stored row checked against a [`Shape`]: every member's type, the
//! members a reader requires, the values an enumeration allows and the
//! members a closed object refuses. This is how a row of an archived epoch
//! is judged by the contract generation that wrote it, whatever this
//! build's own types now accept.

use serde_json::{Map, Value};

use super::shape::{ObjectShape, Shape};

/// Where a value breaks its shape (`at` is a path: `$.payload.record.offset`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ShapeProblem {
    pub at: String,
    pub what: String,
}

impl std::fmt::Display for ShapeProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.at, self.what)
    }
}

impl Shape {
    /// Every way `value` breaks this shape; empty when it fits.
    pub(crate) fn check(&self, value: &Value) -> Vec<ShapeProblem> {
        let mut out = Vec::new();
        check(self, value, "$", &mut out);
        out
    }
}

fn problem(out: &mut Vec<ShapeProblem>, at: &str, what: String) {
    out.push(ShapeProblem {
        at: at.to_string(),
        what,
    });
}

fn check(shape: &Shape, value: &Value, at: &str, out: &mut Vec<ShapeProblem>) {
    let fits = match shape {
        Shape::Any => true,
        Shape::Bool => value.is_boolean(),
        Shape::String => value.is_string(),
        Shape::Integer(width) => integer_fits(width, value),
        Shape::Enum(values) => return check_enum(values, value, at, out),
        Shape::Nullable(inner) => {
            if !value.is_null() {
                check(inner, value, at, out);
            }
            return;
        }
        Shape::List(inner) => {
            let Some(items) = value.as_array() else {
                return problem(out, at, format!("{} where a list belongs", kind(value)));
            };
            for (i, item) in items.iter().enumerate() {
                check(inner, item, &format!("{at}[{i}]"), out);
            }
            return;
        }
        Shape::Object(o) => return check_object(o, value, at, out),
        Shape::OneOf(alternatives) => return check_one_of(alternatives, value, at, out),
    };
    if !fits {
        problem(
            out,
            at,
            format!("{} where {} belongs", kind(value), name(shape)),
        );
    }
}

fn integer_fits(width: &str, value: &Value) -> bool {
    match width {
        "uint64" => value.is_u64(),
        "int64" => value.is_i64(),
        "uint32" => value.as_u64().is_some_and(|n| n <= u64::from(u32::MAX)),
        "int32" => value.as_i64().is_some_and(|n| i32::try_from(n).is_ok()),
        _ => value.is_u64() || value.is_i64(),
    }
}

fn check_enum(values: &[String], value: &Value, at: &str, out: &mut Vec<ShapeProblem>) {
    match value.as_str() {
        Some(s) if values.iter().any(|v| v == s) => {}
        Some(s) => problem(
            out,
            at,
            format!("{s:?} is not one of {}", values.join(", ")),
        ),
        None => problem(out, at, format!("{} where a string belongs", kind(value))),
    }
}

fn check_object(o: &ObjectShape, value: &Value, at: &str, out: &mut Vec<ShapeProblem>) {
    let Some(map) = value.as_object() else {
        return problem(out, at, format!("{} where an object belongs", kind(value)));
    };
    check_members(o, map, at, out);
    let mut known: Vec<&str> = o.members.iter().map(|m| m.name.as_str()).collect();
    if !o.one_of.is_empty() {
        if let Some(Shape::Object(chosen)) = choose(&o.one_of, value, at, out) {
            known.extend(chosen.members.iter().map(|m| m.name.as_str()));
        } else {
            // Nothing chosen: the members of every alternative are known,
            // so only the failed choice is reported.
            for a in &o.one_of {
                if let Shape::Object(a) = a {
                    known.extend(a.members.iter().map(|m| m.name.as_str()));
                }
            }
        }
    }
    if o.closed {
        for key in map.keys().filter(|k| !known.contains(&k.as_str())) {
            problem(out, at, format!("unknown member `{key}`"));
        }
    }
}

fn check_members(o: &ObjectShape, map: &Map<String, Value>, at: &str, out: &mut Vec<ShapeProblem>) {
    for m in &o.members {
        match map.get(&m.name) {
            Some(v) => check(&m.shape, v, &format!("{at}.{}", m.name), out),
            None if m.required => problem(out, at, format!("missing member `{}`", m.name)),
            None => {}
        }
    }
}

/// The alternative of a flattened enum that `value` is, by the members
/// every alternative fixes to one value (the envelope's `type`); its
/// problems are reported. None when no alternative is named.
fn choose<'a>(
    alternatives: &'a [Shape],
    value: &Value,
    at: &str,
    out: &mut Vec<ShapeProblem>,
) -> Option<&'a Shape> {
    let tags = tag_members(alternatives);
    let named = alternatives.iter().find(|a| {
        let Shape::Object(a) = a else { return false };
        !tags.is_empty()
            && tags
                .iter()
                .all(|t| match (a.member(t), value.get(t.as_str())) {
                    (Some(m), Some(v)) => {
                        m.shape == Shape::Enum(vec![v.as_str().unwrap_or("").into()])
                    }
                    _ => false,
                })
    });
    match named {
        Some(a) => {
            check(a, value, at, out);
            Some(a)
        }
        None => {
            for t in &tags {
                let had = value
                    .get(t.as_str())
                    .map_or("nothing".into(), |v| v.to_string());
                problem(
                    out,
                    &format!("{at}.{t}"),
                    format!(
                        "{had} is none of the {} this contract knows",
                        alternatives.len()
                    ),
                );
            }
            if tags.is_empty() {
                check_one_of(alternatives, value, at, out);
            }
            None
        }
    }
}

/// The members that every alternative has, each fixed to one value.
fn tag_members(alternatives: &[Shape]) -> Vec<String> {
    let single = |s: &Shape| matches!(s, Shape::Enum(v) if v.len() == 1);
    let Some(Shape::Object(first)) = alternatives.first() else {
        return Vec::new();
    };
    first
        .members
        .iter()
        .filter(|m| m.required && single(&m.shape))
        .filter(|m| {
            alternatives.iter().all(|a| match a {
                Shape::Object(a) => a.member(&m.name).is_some_and(|n| single(&n.shape)),
                _ => false,
            })
        })
        .map(|m| m.name.clone())
        .collect()
}

fn check_one_of(alternatives: &[Shape], value: &Value, at: &str, out: &mut Vec<ShapeProblem>) {
    let mut tried: Vec<Vec<ShapeProblem>> = alternatives.iter().map(|a| a.check(value)).collect();
    if tried.iter().any(Vec::is_empty) {
        return;
    }
    tried.sort_by_key(Vec::len);
    problem(
        out,
        at,
        format!(
            "fits none of its {} forms; the nearest: {}",
            alternatives.len(),
            tried[0]
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; ")
        ),
    );
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

fn name(shape: &Shape) -> String {
    match shape {
        Shape::Bool => "a boolean".into(),
        Shape::String => "a string".into(),
        Shape::Integer(w) => format!("an integer ({w})"),
        _ => "another value".into(),
    }
}
