//! The OTLP/JSON text of a span and of a resource, written by hand.
//!
//! An export writes hundreds of thousands of spans; through serde each
//! one cost more than reading its rows. The writer here puts out exactly
//! what serde_json printed for these structs (members in sorted order,
//! 64-bit integers as decimal strings, strings escaped as serde_json
//! escapes them, by the canonical event writer's own string and number
//! writers), with the member names as literals; tests hold it to serde's
//! text.

use std::borrow::Cow;

use crate::contract::json::{number, string};

#[cfg(test)]
use serde::{Serialize, Serializer};

/// A resource's attributes.
#[cfg_attr(test, derive(Serialize))]
pub(super) struct ResourceOut<'a> {
    pub attributes: Vec<Attr<'a>>,
}

/// A span, its fields in sorted order.
#[cfg_attr(test, derive(Serialize), serde(rename_all = "camelCase"))]
pub(super) struct SpanOut<'a> {
    pub attributes: Vec<Attr<'a>>,
    pub end_time_unix_nano: DecimalI64,
    #[cfg_attr(test, serde(skip_serializing_if = "Vec::is_empty"))]
    pub events: Vec<SpanEventOut<'a>>,
    pub kind: u8,
    pub name: String,
    #[cfg_attr(test, serde(skip_serializing_if = "Option::is_none"))]
    pub parent_span_id: Option<SpanId>,
    pub span_id: SpanId,
    pub start_time_unix_nano: DecimalI64,
    #[cfg_attr(test, serde(skip_serializing_if = "Option::is_none"))]
    pub status: Option<StatusOut>,
    pub trace_id: &'a str,
}

#[cfg_attr(test, derive(Serialize), serde(rename_all = "camelCase"))]
pub(super) struct SpanEventOut<'a> {
    pub attributes: Vec<Attr<'a>>,
    pub name: &'static str,
    pub time_unix_nano: DecimalI64,
}

#[cfg_attr(test, derive(Serialize))]
pub(super) struct StatusOut {
    pub code: u8,
    #[cfg_attr(test, serde(skip_serializing_if = "String::is_empty"))]
    pub message: String,
}

#[cfg_attr(test, derive(Serialize))]
pub(super) struct Attr<'a> {
    pub key: &'static str,
    pub value: AnyValue<'a>,
}

#[cfg_attr(test, derive(Serialize))]
pub(super) enum AnyValue<'a> {
    #[cfg_attr(test, serde(rename = "stringValue"))]
    String(Cow<'a, str>),
    #[cfg_attr(test, serde(rename = "intValue"))]
    Int(DecimalI64),
    #[cfg_attr(test, serde(rename = "boolValue"))]
    Bool(bool),
    #[cfg_attr(test, serde(rename = "arrayValue"))]
    Array { values: Vec<AnyValue<'a>> },
}

/// A span id: 16 lowercase hex digits, held in place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct SpanId(pub [u8; 16]);

impl SpanId {
    pub(crate) fn as_str(&self) -> &str {
        std::str::from_utf8(&self.0).expect("hex digits")
    }
}

#[cfg(test)]
impl Serialize for SpanId {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// OTLP/JSON carries 64-bit integers as decimal strings.
#[derive(Clone, Copy)]
pub(super) struct DecimalI64(pub i64);

#[cfg(test)]
impl Serialize for DecimalI64 {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&self.0)
    }
}

pub(super) fn attr_str<'a>(key: &'static str, value: &'a str) -> Attr<'a> {
    Attr {
        key,
        value: AnyValue::String(Cow::Borrowed(value)),
    }
}

pub(super) fn attr_int<'a>(key: &'static str, value: i64) -> Attr<'a> {
    Attr {
        key,
        value: AnyValue::Int(DecimalI64(value)),
    }
}

pub(super) fn attr_bool<'a>(key: &'static str, value: bool) -> Attr<'a> {
    Attr {
        key,
        value: AnyValue::Bool(value),
    }
}

impl ResourceOut<'_> {
    pub(crate) fn write(&self, out: &mut String) {
        out.push_str("{\"attributes\":");
        attributes(out, &self.attributes);
        out.push('}');
    }
}

impl SpanOut<'_> {
    pub(crate) fn write(&self, out: &mut String) {
        out.push_str("{\"attributes\":");
        attributes(out, &self.attributes);
        out.push_str(",\"endTimeUnixNano\":");
        decimal(out, self.end_time_unix_nano.0);
        if !self.events.is_empty() {
            out.push_str(",\"events\":[");
            for (i, e) in self.events.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str("{\"attributes\":");
                attributes(out, &e.attributes);
                out.push_str(",\"name\":");
                string(out, e.name);
                out.push_str(",\"timeUnixNano\":");
                decimal(out, e.time_unix_nano.0);
                out.push('}');
            }
            out.push(']');
        }
        out.push_str(",\"kind\":");
        number(out, u64::from(self.kind));
        out.push_str(",\"name\":");
        string(out, &self.name);
        if let Some(parent) = &self.parent_span_id {
            out.push_str(",\"parentSpanId\":");
            string(out, parent.as_str());
        }
        out.push_str(",\"spanId\":");
        string(out, self.span_id.as_str());
        out.push_str(",\"startTimeUnixNano\":");
        decimal(out, self.start_time_unix_nano.0);
        if let Some(status) = &self.status {
            out.push_str(",\"status\":{\"code\":");
            number(out, u64::from(status.code));
            if !status.message.is_empty() {
                out.push_str(",\"message\":");
                string(out, &status.message);
            }
            out.push('}');
        }
        out.push_str(",\"traceId\":");
        string(out, self.trace_id);
        out.push('}');
    }
}

fn attributes(out: &mut String, attrs: &[Attr<'_>]) {
    out.push('[');
    for (i, a) in attrs.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        // Keys are this module's own names: nothing in them to escape.
        debug_assert!(plain(a.key), "{}", a.key);
        out.push_str("{\"key\":\"");
        out.push_str(a.key);
        out.push_str("\",\"value\":");
        value(out, &a.value);
        out.push('}');
    }
    out.push(']');
}

fn value(out: &mut String, v: &AnyValue<'_>) {
    match v {
        AnyValue::String(s) => {
            out.push_str("{\"stringValue\":");
            string(out, s);
        }
        AnyValue::Int(n) => {
            out.push_str("{\"intValue\":");
            decimal(out, n.0);
        }
        AnyValue::Bool(b) => {
            out.push_str("{\"boolValue\":");
            out.push_str(if *b { "true" } else { "false" });
        }
        AnyValue::Array { values } => {
            out.push_str("{\"arrayValue\":{\"values\":[");
            for (i, v) in values.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                value(out, v);
            }
            out.push_str("]}");
        }
    }
    out.push('}');
}

/// `n` as a JSON string of its decimal digits.
fn decimal(out: &mut String, n: i64) {
    out.push('"');
    number(out, n);
    out.push('"');
}

/// Whether `text` holds nothing serde_json escapes (no `"`, `\`, or
/// byte below 0x20): the canonical event writer's check.
fn plain(text: &str) -> bool {
    !crate::contract::json::needs_escape(text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn by_serde<T: Serialize>(v: &T) -> String {
        serde_json::to_string(v).unwrap()
    }

    fn by_hand(span: &SpanOut<'_>) -> String {
        let mut out = String::new();
        span.write(&mut out);
        out
    }

    fn span<'a>(text: &'a str, n: i64, with_all: bool) -> SpanOut<'a> {
        let attributes = vec![
            attr_str("k.str", text),
            attr_int("k.int", n),
            attr_bool("k.bool", n % 2 == 0),
            Attr {
                key: "k.array",
                value: AnyValue::Array {
                    values: vec![
                        AnyValue::String(Cow::Borrowed(text)),
                        AnyValue::String(Cow::Owned(format!("{text}!"))),
                    ],
                },
            },
        ];
        SpanOut {
            attributes,
            end_time_unix_nano: DecimalI64(n),
            events: if with_all {
                vec![SpanEventOut {
                    attributes: vec![attr_str("harnery.outcome", text)],
                    name: "harnery.late_evidence",
                    time_unix_nano: DecimalI64(n.wrapping_add(1)),
                }]
            } else {
                Vec::new()
            },
            kind: 1,
            name: format!("execute_tool {text}"),
            parent_span_id: with_all.then_some(SpanId(*b"0011223344556677")),
            span_id: SpanId(*b"8899aabbccddeeff"),
            start_time_unix_nano: DecimalI64(n / 2),
            status: with_all.then(|| StatusOut {
                code: 2,
                message: if n % 3 == 0 {
                    String::new()
                } else {
                    text.into()
                },
            }),
            trace_id: text,
        }
    }

    #[test]
    fn every_control_character_is_escaped_as_serde_does() {
        let all: String = (0u8..0x80).map(char::from).collect();
        for s in [all.as_str(), "", "plain", "é ☃ 𝄞", "a\"b\\c\u{7f}"] {
            let span = span(s, -42, true);
            assert_eq!(by_hand(&span), by_serde(&span));
        }
    }

    #[test]
    fn a_resource_is_written_as_serde_writes_it() {
        let r = ResourceOut {
            attributes: vec![attr_str("service.name", "harnery"), attr_int("n", i64::MIN)],
        };
        let mut out = String::new();
        r.write(&mut out);
        assert_eq!(out, by_serde(&r));
    }

    proptest! {
        #[test]
        fn any_span_is_written_as_serde_writes_it(text in any::<String>(), n in any::<i64>(), with_all in any::<bool>()) {
            let span = span(&text, n, with_all);
            prop_assert_eq!(by_hand(&span), by_serde(&span));
        }
    }
}
