//! OTLP's protobuf wire form, written by hand: an
//! `ExportTraceServiceRequest` encoded from the OTLP/JSON document the
//! export writes (read into borrowed types, no tree of values) (the two are the same message; the JSON form spells ids
//! in hex and 64-bit numbers as decimal strings), and the
//! `ExportTraceServiceResponse`'s partial success read back. Field numbers
//! are those of `opentelemetry/proto/{trace,common,resource}/v1` and
//! `collector/trace/v1`.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::Value;

/// Why a document could not be encoded: a field of the wrong shape.
#[derive(Debug, thiserror::Error)]
#[error("OTLP document: {0}")]
pub struct ShapeError(String);

pub(crate) fn shape_error(what: &str) -> ShapeError {
    ShapeError(what.to_string())
}

fn bad(what: &str) -> ShapeError {
    ShapeError(what.to_string())
}

const VARINT: u8 = 0;
const FIXED64: u8 = 1;
const LEN: u8 = 2;

fn key(out: &mut Vec<u8>, field: u32, wire: u8) {
    varint(out, (u64::from(field) << 3) | u64::from(wire));
}

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn bytes_field(out: &mut Vec<u8>, field: u32, bytes: &[u8]) {
    key(out, field, LEN);
    varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// A nested message: `fill` writes its body, then its length goes in
/// front of it.
fn message(
    out: &mut Vec<u8>,
    field: u32,
    fill: impl FnOnce(&mut Vec<u8>) -> Result<(), ShapeError>,
) -> Result<(), ShapeError> {
    let mut body = Vec::new();
    fill(&mut body)?;
    bytes_field(out, field, &body);
    Ok(())
}

fn fixed64(out: &mut Vec<u8>, field: u32, v: u64) {
    key(out, field, FIXED64);
    out.extend_from_slice(&v.to_le_bytes());
}

fn hex(text: &str, len: usize, what: &str) -> Result<Vec<u8>, ShapeError> {
    let bytes = text.as_bytes();
    if bytes.len() != len * 2 {
        return Err(ShapeError(format!(
            "{what} {text:?} is not {len} bytes of hex"
        )));
    }
    (0..len)
        .map(|i| {
            std::str::from_utf8(&bytes[2 * i..2 * i + 2])
                .ok()
                .and_then(|b| u8::from_str_radix(b, 16).ok())
                .ok_or_else(|| ShapeError(format!("{what} {text:?} is not hex")))
        })
        .collect()
}

/// A 64-bit number as OTLP/JSON writes it: a decimal string or a number.
#[derive(Deserialize)]
#[serde(untagged)]
enum Num<'a> {
    Int(i64),
    #[serde(borrow)]
    Text(Cow<'a, str>),
}

impl Num<'_> {
    fn get(&self, what: &str) -> Result<i64, ShapeError> {
        match self {
            Num::Int(n) => Ok(*n),
            Num::Text(s) => s
                .parse()
                .map_err(|_| ShapeError(format!("{what} {s:?} is not a number"))),
        }
    }
}

// The OTLP/JSON document as typed, borrowed where no escape was undone,
// read straight from the text (no tree of values in between).

#[derive(Deserialize)]
struct Request<'a> {
    #[serde(rename = "resourceSpans", borrow, default)]
    resource_spans: Vec<ResourceSpans<'a>>,
}

#[derive(Deserialize)]
struct ResourceSpans<'a> {
    #[serde(borrow)]
    resource: Option<Attributed<'a>>,
    #[serde(rename = "scopeSpans", borrow, default)]
    scope_spans: Vec<ScopeSpans<'a>>,
    #[serde(rename = "schemaUrl", borrow)]
    schema_url: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct Attributed<'a> {
    #[serde(borrow, default)]
    attributes: Vec<KeyValue<'a>>,
}

#[derive(Deserialize)]
struct ScopeSpans<'a> {
    #[serde(borrow)]
    scope: Option<Scope<'a>>,
    #[serde(borrow, default)]
    spans: Vec<Span<'a>>,
    #[serde(rename = "schemaUrl", borrow)]
    schema_url: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct Scope<'a> {
    #[serde(borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow)]
    version: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    attributes: Vec<KeyValue<'a>>,
}

#[derive(Deserialize)]
struct Span<'a> {
    #[serde(rename = "traceId", borrow)]
    trace_id: Option<Cow<'a, str>>,
    #[serde(rename = "spanId", borrow)]
    span_id: Option<Cow<'a, str>>,
    #[serde(rename = "traceState", borrow)]
    trace_state: Option<Cow<'a, str>>,
    #[serde(rename = "parentSpanId", borrow)]
    parent_span_id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow)]
    kind: Option<Num<'a>>,
    #[serde(rename = "startTimeUnixNano", borrow)]
    start: Option<Num<'a>>,
    #[serde(rename = "endTimeUnixNano", borrow)]
    end: Option<Num<'a>>,
    #[serde(borrow, default)]
    attributes: Vec<KeyValue<'a>>,
    #[serde(borrow, default)]
    events: Vec<SpanEvent<'a>>,
    #[serde(borrow)]
    status: Option<Status<'a>>,
}

#[derive(Deserialize)]
struct SpanEvent<'a> {
    #[serde(rename = "timeUnixNano", borrow)]
    time: Option<Num<'a>>,
    #[serde(borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    attributes: Vec<KeyValue<'a>>,
}

#[derive(Deserialize)]
struct Status<'a> {
    #[serde(borrow)]
    message: Option<Cow<'a, str>>,
    #[serde(borrow)]
    code: Option<Num<'a>>,
}

#[derive(Deserialize)]
struct KeyValue<'a> {
    #[serde(borrow)]
    key: Option<Cow<'a, str>>,
    #[serde(borrow)]
    value: Option<AnyValue<'a>>,
}

#[derive(Deserialize)]
struct AnyValue<'a> {
    #[serde(rename = "stringValue", borrow)]
    string: Option<Cow<'a, str>>,
    #[serde(rename = "boolValue")]
    boolean: Option<bool>,
    #[serde(rename = "intValue", borrow)]
    int: Option<Num<'a>>,
    #[serde(rename = "doubleValue")]
    double: Option<f64>,
    #[serde(rename = "arrayValue", borrow)]
    array: Option<Values<AnyValue<'a>>>,
    #[serde(rename = "kvlistValue", borrow)]
    kvlist: Option<Values<KeyValue<'a>>>,
}

#[derive(Deserialize)]
struct Values<T> {
    #[serde(default = "Vec::new")]
    values: Vec<T>,
}

fn string_field(out: &mut Vec<u8>, field: u32, s: &Option<Cow<'_, str>>) {
    if let Some(s) = s
        && !s.is_empty()
    {
        bytes_field(out, field, s.as_bytes());
    }
}

/// `ExportTraceServiceRequest` from its OTLP/JSON text.
pub fn encode_request(text: &str) -> Result<Vec<u8>, ShapeError> {
    let doc: Request<'_> = serde_json::from_str(text).map_err(|e| ShapeError(format!("{e}")))?;
    let mut out = Vec::with_capacity(text.len() / 2);
    for rs in &doc.resource_spans {
        message(&mut out, 1, |b| resource_spans(b, rs))?;
    }
    Ok(out)
}

fn resource_spans(out: &mut Vec<u8>, rs: &ResourceSpans<'_>) -> Result<(), ShapeError> {
    if let Some(resource) = &rs.resource {
        message(out, 1, |b| attributes(b, 1, &resource.attributes))?;
    }
    for ss in &rs.scope_spans {
        message(out, 2, |b| scope_spans(b, ss))?;
    }
    string_field(out, 3, &rs.schema_url);
    Ok(())
}

fn scope_spans(out: &mut Vec<u8>, ss: &ScopeSpans<'_>) -> Result<(), ShapeError> {
    if let Some(scope) = &ss.scope {
        message(out, 1, |b| {
            string_field(b, 1, &scope.name);
            string_field(b, 2, &scope.version);
            attributes(b, 3, &scope.attributes)
        })?;
    }
    for span in &ss.spans {
        message(out, 2, |b| encode_span(b, span))?;
    }
    string_field(out, 3, &ss.schema_url);
    Ok(())
}

fn encode_span(out: &mut Vec<u8>, s: &Span<'_>) -> Result<(), ShapeError> {
    let id = |text: &Option<Cow<'_, str>>, name: &str, len: usize| match text {
        Some(t) if !t.is_empty() => hex(t, len, name).map(Some),
        _ => Ok(None),
    };
    let trace = id(&s.trace_id, "traceId", 16)?.ok_or_else(|| bad("a span without traceId"))?;
    let span = id(&s.span_id, "spanId", 8)?.ok_or_else(|| bad("a span without spanId"))?;
    bytes_field(out, 1, &trace);
    bytes_field(out, 2, &span);
    string_field(out, 3, &s.trace_state);
    if let Some(parent) = id(&s.parent_span_id, "parentSpanId", 8)? {
        bytes_field(out, 4, &parent);
    }
    string_field(out, 5, &s.name);
    if let Some(kind) = &s.kind {
        key(out, 6, VARINT);
        varint(out, kind.get("kind")? as u64);
    }
    for (field, name, t) in [
        (7, "startTimeUnixNano", &s.start),
        (8, "endTimeUnixNano", &s.end),
    ] {
        if let Some(t) = t {
            fixed64(out, field, t.get(name)? as u64);
        }
    }
    attributes(out, 9, &s.attributes)?;
    for event in &s.events {
        message(out, 11, |b| {
            if let Some(t) = &event.time {
                fixed64(b, 1, t.get("timeUnixNano")? as u64);
            }
            string_field(b, 2, &event.name);
            attributes(b, 3, &event.attributes)
        })?;
    }
    if let Some(status) = &s.status {
        message(out, 15, |b| {
            string_field(b, 2, &status.message);
            if let Some(code) = &status.code {
                key(b, 3, VARINT);
                varint(b, code.get("status code")? as u64);
            }
            Ok(())
        })?;
    }
    Ok(())
}

/// `attributes`, each a `KeyValue` in `field`.
fn attributes(out: &mut Vec<u8>, field: u32, kvs: &[KeyValue<'_>]) -> Result<(), ShapeError> {
    for kv in kvs {
        message(out, field, |b| key_value(b, kv))?;
    }
    Ok(())
}

fn key_value(out: &mut Vec<u8>, kv: &KeyValue<'_>) -> Result<(), ShapeError> {
    string_field(out, 1, &kv.key);
    if let Some(v) = &kv.value {
        message(out, 2, |b| any_value(b, v))?;
    }
    Ok(())
}

fn any_value(out: &mut Vec<u8>, v: &AnyValue<'_>) -> Result<(), ShapeError> {
    if let Some(s) = &v.string {
        bytes_field(out, 1, s.as_bytes());
    } else if let Some(b) = v.boolean {
        key(out, 2, VARINT);
        varint(out, u64::from(b));
    } else if let Some(i) = &v.int {
        key(out, 3, VARINT);
        varint(out, i.get("intValue")? as u64);
    } else if let Some(d) = v.double {
        key(out, 4, FIXED64);
        out.extend_from_slice(&d.to_le_bytes());
    } else if let Some(a) = &v.array {
        message(out, 5, |b| {
            for item in &a.values {
                message(b, 1, |c| any_value(c, item))?;
            }
            Ok(())
        })?;
    } else if let Some(kvs) = &v.kvlist {
        message(out, 6, |b| {
            for kv in &kvs.values {
                message(b, 1, |c| key_value(c, kv))?;
            }
            Ok(())
        })?;
    }
    Ok(())
}

/// One field of a protobuf message as read: its number and value.
#[derive(Debug)]
pub enum Field<'a> {
    Varint(u32, u64),
    Fixed64(u32, u64),
    Bytes(u32, &'a [u8]),
    Fixed32(u32, u32),
}

/// The fields of one message, in order; `None` where the bytes are not
/// protobuf.
pub fn fields(mut buf: &[u8]) -> Option<Vec<Field<'_>>> {
    fn read_varint(buf: &mut &[u8]) -> Option<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let (&b, rest) = buf.split_first()?;
            *buf = rest;
            v |= u64::from(b & 0x7f) << shift;
            if b < 0x80 {
                return Some(v);
            }
        }
        None
    }
    let mut out = Vec::new();
    while !buf.is_empty() {
        let k = read_varint(&mut buf)?;
        let field = u32::try_from(k >> 3).ok()?;
        out.push(match k & 7 {
            0 => Field::Varint(field, read_varint(&mut buf)?),
            1 => {
                let (b, rest) = buf.split_first_chunk::<8>()?;
                buf = rest;
                Field::Fixed64(field, u64::from_le_bytes(*b))
            }
            2 => {
                let len = usize::try_from(read_varint(&mut buf)?).ok()?;
                let (b, rest) = (buf.get(..len)?, buf.get(len..)?);
                buf = rest;
                Field::Bytes(field, b)
            }
            5 => {
                let (b, rest) = buf.split_first_chunk::<4>()?;
                buf = rest;
                Field::Fixed32(field, u32::from_le_bytes(*b))
            }
            _ => return None,
        });
    }
    Some(out)
}

/// What a receiver said it did not take: `rejected_spans` and its
/// message, from an `ExportTraceServiceResponse` in either form.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct PartialSuccess {
    pub rejected_spans: i64,
    pub error_message: String,
}

impl PartialSuccess {
    pub fn from_protobuf(body: &[u8]) -> PartialSuccess {
        let mut out = PartialSuccess::default();
        for f in fields(body).unwrap_or_default() {
            let Field::Bytes(1, inner) = f else { continue };
            for g in fields(inner).unwrap_or_default() {
                match g {
                    Field::Varint(1, n) => out.rejected_spans = n as i64,
                    Field::Bytes(2, m) => {
                        out.error_message = String::from_utf8_lossy(m).into_owned()
                    }
                    _ => {}
                }
            }
        }
        out
    }

    pub fn from_json(body: &[u8]) -> PartialSuccess {
        let mut out = PartialSuccess::default();
        let Ok(v) = serde_json::from_slice::<Value>(body) else {
            return out;
        };
        let Some(p) = v.get("partialSuccess").or_else(|| v.get("partial_success")) else {
            return out;
        };
        let rejected = p.get("rejectedSpans").or_else(|| p.get("rejected_spans"));
        out.rejected_spans = rejected
            .and_then(|r| match r {
                Value::String(s) => s.parse().ok(),
                other => other.as_i64(),
            })
            .unwrap_or(0);
        let message = p.get("errorMessage").or_else(|| p.get("error_message"));
        out.error_message = message
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_span_encodes_with_its_ids_times_and_attributes() {
        let doc = serde_json::json!({"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"harnery"}}]},
            "scopeSpans":[{"scope":{"name":"harnery"},"spans":[{"traceId":"000102030405060708090a0b0c0d0e0f","spanId":"1011121314151617",
            "name":"turn","kind":1,"startTimeUnixNano":"5","endTimeUnixNano":"7","attributes":[{"key":"n","value":{"intValue":"-3"}}]}]}]}]});
        let bytes = encode_request(&doc.to_string()).unwrap();
        let top = fields(&bytes).unwrap();
        let [Field::Bytes(1, rs)] = top.as_slice() else {
            panic!("one resourceSpans")
        };
        let rs = fields(rs).unwrap();
        let Field::Bytes(2, ss) = rs[1] else {
            panic!("scopeSpans")
        };
        let ss = fields(ss).unwrap();
        let Field::Bytes(2, span) = ss[1] else {
            panic!("a span")
        };
        let span = fields(span).unwrap();
        assert!(matches!(span[0], Field::Bytes(1, t) if t == (0u8..16).collect::<Vec<_>>()));
        assert!(matches!(span[1], Field::Bytes(2, s) if s == (16u8..24).collect::<Vec<_>>()));
        assert!(matches!(span[2], Field::Bytes(5, b"turn")));
        assert!(matches!(span[3], Field::Varint(6, 1)));
        assert!(matches!(span[4], Field::Fixed64(7, 5)));
        assert!(matches!(span[5], Field::Fixed64(8, 7)));
        let Field::Bytes(9, kv) = span[6] else {
            panic!("an attribute")
        };
        let kv = fields(kv).unwrap();
        let Field::Bytes(2, any) = kv[1] else {
            panic!("a value")
        };
        assert!(matches!(fields(any).unwrap()[0], Field::Varint(3, n) if n as i64 == -3));
    }

    #[test]
    fn a_bad_id_is_named() {
        let doc = serde_json::json!({"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"zz","spanId":"00"}]}]}]});
        let e = encode_request(&doc.to_string()).unwrap_err().to_string();
        assert!(e.contains("traceId"), "{e}");
    }

    #[test]
    fn partial_success_reads_from_either_form() {
        let json = br#"{"partialSuccess":{"rejectedSpans":"2","errorMessage":"too old"}}"#;
        let p = PartialSuccess::from_json(json);
        assert_eq!((p.rejected_spans, p.error_message.as_str()), (2, "too old"));
        let mut inner = Vec::new();
        key(&mut inner, 1, VARINT);
        varint(&mut inner, 4);
        bytes_field(&mut inner, 2, b"no");
        let mut body = Vec::new();
        bytes_field(&mut body, 1, &inner);
        let p = PartialSuccess::from_protobuf(&body);
        assert_eq!((p.rejected_spans, p.error_message.as_str()), (4, "no"));
        assert_eq!(
            PartialSuccess::from_protobuf(b""),
            PartialSuccess::default()
        );
    }
}
