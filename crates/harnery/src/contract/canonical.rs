//! Canonical JSON values: tool inputs and outputs as events store, show
//! and digest them.
//!
//! The canonical text of a JSON value is what serde_json writes for it as a
//! `Value` (with sorted maps): no insignificant whitespace, object members
//! sorted by key (the last of repeated keys wins), strings escaped as
//! serde_json escapes them, numbers as a `Value` holds and prints them.
//! [`Json::parse`] gets there from raw text in one pass for the common
//! shapes (objects, arrays, strings, integers, literals) without building a
//! `Value` tree, which costs an allocation per key, string and map node;
//! whatever it does not handle itself (fractions, exponents, `\u` escapes,
//! integers beyond 64 bits, deep nesting, bad syntax) goes through a
//! `Value`, so the text, and any error, is always serde_json's. A property
//! test holds the two paths to the same bytes.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use super::json_text::{number, plain_len, string};

/// A JSON value in canonical text.
#[derive(Clone, PartialEq, Eq)]
pub struct Json(String);

/// Nesting the one-pass reader takes on; deeper input goes to serde_json,
/// which refuses it past 128.
const MAX_DEPTH: usize = 100;

impl Json {
    /// The canonical form of the JSON text `raw`.
    pub fn parse(raw: &str) -> Result<Json, serde_json::Error> {
        let mut out = String::with_capacity(raw.len());
        let mut scan = Scan {
            src: raw,
            text: raw.as_bytes(),
            at: 0,
            members: Vec::new(),
        };
        if scan.value(&mut out, 0).is_some() && scan.rest_is_blank() {
            return Ok(Json(out));
        }
        let value: Value = serde_json::from_str(raw)?;
        Ok(Json::from_value(&value))
    }

    /// The canonical form of `value`.
    pub(crate) fn from_value(value: &Value) -> Json {
        let mut out = String::new();
        write_value(&mut out, value);
        Json(out)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether the value is a string (and which).
    pub(crate) fn as_string(&self) -> Option<String> {
        self.0
            .starts_with('"')
            .then(|| serde_json::from_str(&self.0).expect("canonical JSON parses"))
    }
}

impl fmt::Debug for Json {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Serialize for Json {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serde_json::value::RawValue::from_string(self.0.clone())
            .map_err(serde::ser::Error::custom)?
            .serialize(serializer)
    }
}

/// Any JSON value at all: the contract keeps it as the agent wrote it.
impl schemars::JsonSchema for Json {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Json".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::Schema::from(true)
    }
}

/// Read as raw text where the deserializer is serde_json's (text, bytes, a
/// reader, or a `Value`, which writes itself out), and canonicalized by
/// [`Json::parse`]; anywhere else (serde's own buffer, as inside a tagged
/// enum whose content comes before its tag) through a `Value`.
///
/// This speaks serde_json's raw-value protocol itself, as
/// `Box<RawValue>` does, because a deserializer that does not know it can
/// only be asked once: it answers with `visit_newtype_struct`, and the
/// value is read from there. Should serde_json ever rename its token,
/// every read takes that road: slower, never wrong.
impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Json, D::Error> {
        deserializer.deserialize_newtype_struct(RAW_VALUE_TOKEN, JsonVisitor)
    }
}

/// The name under which serde_json hands out a value's raw text.
const RAW_VALUE_TOKEN: &str = "$serde_json::private::RawValue";

struct JsonVisitor;

impl<'de> Visitor<'de> for JsonVisitor {
    type Value = Json;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any valid JSON value")
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, deserializer: D) -> Result<Json, D::Error> {
        Value::deserialize(deserializer).map(|v| Json::from_value(&v))
    }

    /// serde_json's answer: one member, the token, whose value is the text.
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
        match map.next_key::<RawToken>()? {
            Some(RawToken) => map.next_value::<RawText>().map(|t| t.0),
            None => Err(de::Error::invalid_length(0, &self)),
        }
    }
}

/// The raw-value token as a map key; any other key is refused.
struct RawToken;

impl<'de> Deserialize<'de> for RawToken {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<RawToken, D::Error> {
        deserializer.deserialize_identifier(RawTokenVisitor)
    }
}

struct RawTokenVisitor;

impl<'de> Visitor<'de> for RawTokenVisitor {
    type Value = RawToken;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("raw value")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<RawToken, E> {
        match key == RAW_VALUE_TOKEN {
            true => Ok(RawToken),
            false => Err(E::custom("unexpected raw value")),
        }
    }
}

/// A value's raw text, canonicalized as it is read.
struct RawText(Json);

impl<'de> Deserialize<'de> for RawText {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<RawText, D::Error> {
        deserializer.deserialize_str(RawTextVisitor)
    }
}

struct RawTextVisitor;

impl<'de> Visitor<'de> for RawTextVisitor {
    type Value = RawText;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("raw JSON text")
    }

    fn visit_str<E: de::Error>(self, raw: &str) -> Result<RawText, E> {
        Json::parse(raw).map(RawText).map_err(E::custom)
    }
}

fn write_value(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => match (n.as_u64(), n.as_i64()) {
            (Some(u), _) => number(out, u),
            (None, Some(i)) => number(out, i),
            // A float: Number's Display is serde_json's compact writer.
            (None, None) => out.push_str(&n.to_string()),
        },
        Value::String(text) => string(out, text),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => {
            // Sorted here, whatever order the map keeps (serde_json's
            // `preserve_order` feature would keep the input's).
            let mut members: Vec<(&String, &Value)> = map.iter().collect();
            members.sort_unstable_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (i, (key, item)) in members.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                string(out, key);
                out.push(':');
                write_value(out, item);
            }
            out.push('}');
        }
    }
}

/// The one-pass reader. Every method returns `None` where it gives up,
/// and [`Json::parse`] then starts over through a `Value`.
struct Scan<'a> {
    src: &'a str,
    /// `src` as bytes.
    text: &'a [u8],
    at: usize,
    /// The members of the objects being read, innermost last: each
    /// object's key and where its `"key":value` text lies in the output.
    /// One stack for the whole text, so that reading an object allocates
    /// nothing once the stack has grown (a hook payload holds several).
    members: Vec<(Cow<'a, str>, std::ops::Range<usize>)>,
}

impl<'a> Scan<'a> {
    fn skip_blank(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.text.get(self.at) {
            self.at += 1;
        }
    }

    fn rest_is_blank(&mut self) -> bool {
        self.skip_blank();
        self.at == self.text.len()
    }

    fn eat(&mut self, byte: u8) -> bool {
        self.skip_blank();
        let hit = self.text.get(self.at) == Some(&byte);
        if hit {
            self.at += 1;
        }
        hit
    }

    fn value(&mut self, out: &mut String, depth: usize) -> Option<()> {
        self.skip_blank();
        match *self.text.get(self.at)? {
            b'{' if depth < MAX_DEPTH => self.object(out, depth + 1),
            b'[' if depth < MAX_DEPTH => self.array(out, depth + 1),
            b'"' => {
                string(out, &self.string()?);
                Some(())
            }
            b't' => self.literal("true", out),
            b'f' => self.literal("false", out),
            b'n' => self.literal("null", out),
            b'-' | b'0'..=b'9' => self.integer(out),
            _ => None,
        }
    }

    fn literal(&mut self, word: &str, out: &mut String) -> Option<()> {
        let end = self.at + word.len();
        (self.text.get(self.at..end)? == word.as_bytes()).then(|| {
            self.at = end;
            out.push_str(word);
        })
    }

    /// An integer that fits 64 bits is written as its digits, which is how
    /// a `Value` prints it; anything else is left to serde_json.
    fn integer(&mut self, out: &mut String) -> Option<()> {
        let start = self.at;
        let negative = self.text[self.at] == b'-';
        if negative {
            self.at += 1;
        }
        let digits = self.at;
        while let Some(b'0'..=b'9') = self.text.get(self.at) {
            self.at += 1;
        }
        let text = &self.text[digits..self.at];
        let plain = !text.is_empty() && (text[0] != b'0' || text.len() == 1);
        if !plain || matches!(self.text.get(self.at), Some(b'.' | b'e' | b'E')) {
            return None;
        }
        // The largest magnitude each sign holds in 64 bits; "-0" is a
        // float to serde_json.
        let limit: &[u8] = if negative {
            b"9223372036854775808"
        } else {
            b"18446744073709551615"
        };
        let fits = text.len() < limit.len() || (text.len() == limit.len() && text <= limit);
        if !fits || (negative && text == b"0") {
            return None;
        }
        out.push_str(&self.src[start..self.at]);
        Some(())
    }

    /// A string's text, unescaped; `\u` escapes and raw control
    /// characters give up.
    fn string(&mut self) -> Option<Cow<'a, str>> {
        self.at += 1;
        let start = self.at;
        let rest = &self.text[start..];
        let len = plain_len(rest);
        if len == rest.len() {
            return None;
        }
        self.at = start + len;
        match self.text[self.at] {
            b'"' => {
                self.at += 1;
                // Both ends are ASCII quotes: char boundaries of `src`.
                Some(Cow::Borrowed(&self.src[start..start + len]))
            }
            b'\\' => self.escaped_string(start),
            _ => None,
        }
    }

    fn escaped_string(&mut self, start: usize) -> Option<Cow<'a, str>> {
        let mut text = self.text[start..self.at].to_vec();
        loop {
            let b = *self.text.get(self.at)?;
            self.at += 1;
            match b {
                b'"' => break,
                b'\\' => {
                    let unescaped = match *self.text.get(self.at)? {
                        b'"' => b'"',
                        b'\\' => b'\\',
                        b'/' => b'/',
                        b'b' => 0x08,
                        b'f' => 0x0c,
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        _ => return None,
                    };
                    self.at += 1;
                    text.push(unescaped);
                }
                0x00..=0x1f => return None,
                _ => text.push(b),
            }
        }
        String::from_utf8(text).ok().map(Cow::Owned)
    }

    fn array(&mut self, out: &mut String, depth: usize) -> Option<()> {
        self.at += 1;
        out.push('[');
        if !self.eat(b']') {
            loop {
                self.value(out, depth)?;
                if self.eat(b']') {
                    break;
                }
                if !self.eat(b',') {
                    return None;
                }
                out.push(',');
            }
        }
        out.push(']');
        Some(())
    }

    /// Members are written out as they come; only if their keys are out
    /// of order (or repeat) are they copied out again, sorted. They go on
    /// the scan's stack above those of the objects around this one, and
    /// come off when it is read (a text that fails is read again by
    /// serde_json, so what a failure leaves there is never looked at).
    fn object(&mut self, out: &mut String, depth: usize) -> Option<()> {
        if self.members.capacity() == 0 {
            // Room for a tool input's or output's members, nested ones
            // included, in one allocation.
            self.members.reserve(16);
        }
        let base = self.members.len();
        self.at += 1;
        out.push('{');
        let body = out.len();
        let mut in_order = true;
        if !self.eat(b'}') {
            loop {
                self.skip_blank();
                if self.text.get(self.at) != Some(&b'"') {
                    return None;
                }
                let key = self.string()?;
                if !self.eat(b':') {
                    return None;
                }
                if self.members.len() > base {
                    in_order &= self.members.last().is_some_and(|(last, _)| *last < key);
                    out.push(',');
                }
                let start = out.len();
                string(out, &key);
                out.push(':');
                self.value(out, depth)?;
                self.members.push((key, start..out.len()));
                if self.eat(b'}') {
                    break;
                }
                if !self.eat(b',') {
                    return None;
                }
            }
        }
        if !in_order {
            let written = out[body..].to_string();
            out.truncate(body);
            let members = &mut self.members[base..];
            // Stable, so of repeated keys the last stays last: it wins.
            members.sort_by(|a, b| a.0.cmp(&b.0));
            for (i, (key, range)) in members.iter().enumerate() {
                if members.get(i + 1).is_some_and(|next| next.0 == *key) {
                    continue;
                }
                if out.len() > body {
                    out.push(',');
                }
                out.push_str(&written[range.start - body..range.end - body]);
            }
        }
        self.members.truncate(base);
        out.push('}');
        Some(())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use proptest::prelude::*;

    /// serde_json's own answer: the text through a `Value`.
    fn slow(raw: &str) -> Result<String, String> {
        serde_json::from_str::<Value>(raw)
            .map(|v| Json::from_value(&v).0)
            .map_err(|e| e.to_string())
    }

    fn fast(raw: &str) -> Result<String, String> {
        Json::parse(raw).map(|j| j.0).map_err(|e| e.to_string())
    }

    /// Every road a `Json` is deserialized by: raw text from a str, bytes
    /// and a reader; a `Value` writing itself out; serde's own buffer
    /// (inside an untagged enum, where the raw protocol is unavailable).
    fn every_road(raw: &str) -> Vec<String> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Buffered {
            One(Json),
        }
        let Buffered::One(buffered) = serde_json::from_str(raw).expect("buffered");
        let value: Value = serde_json::from_str(raw).expect("value");
        [
            serde_json::from_str::<Json>(raw).expect("str"),
            serde_json::from_slice::<Json>(raw.as_bytes()).expect("slice"),
            serde_json::from_reader::<_, Json>(raw.as_bytes()).expect("reader"),
            serde_json::from_value::<Json>(value).expect("from value"),
            buffered,
        ]
        .into_iter()
        .map(|j| j.0)
        .collect()
    }

    #[test]
    fn every_road_reads_the_canonical_text() {
        for raw in [
            r#" {"b": 1, "a": {"d": [1, {"z": 0, "y": "é"}], "c": null}} "#,
            r#"{"a":1,"a":2}"#,
            r#""\u00e9\ud83d\ude00 \n""#,
            "[1.5e3, -0, 18446744073709551616, true]",
            "null",
        ] {
            let want = slow(raw).expect("json");
            for (road, got) in every_road(raw).into_iter().enumerate() {
                assert_eq!(got, want, "road {road} of {raw}");
            }
        }
    }

    #[test]
    fn every_road_refuses_what_is_not_json() {
        for raw in [r#"{"a":}"#, "[1,", "nul"] {
            assert!(serde_json::from_str::<Json>(raw).is_err(), "{raw}");
            assert!(
                serde_json::from_slice::<Json>(raw.as_bytes()).is_err(),
                "{raw}"
            );
        }
    }

    #[test]
    fn keys_are_sorted_at_every_depth() {
        let raw = r#" {"b": 1, "a": {"d": [1, {"z": 0, "y": "é"}], "c": null}} "#;
        let want = r#"{"a":{"c":null,"d":[1,{"y":"é","z":0}]},"b":1}"#;
        assert_eq!(fast(raw).unwrap(), want);
        assert_eq!(slow(raw).unwrap(), want);
    }

    #[test]
    fn awkward_input_reads_as_serde_json_reads_it() {
        for raw in [
            r#"{"a":1,"a":2}"#,
            r#"{"b":1,"a":2,"b":3}"#,
            r#""tab\tquote\"slash\/nl\n""#,
            r#""\u00e9\ud83d\ude00""#,
            r#""ctl\u0001""#,
            "-0",
            "0",
            "-1",
            "18446744073709551615",
            "18446744073709551616",
            "-9223372036854775808",
            "-9223372036854775809",
            "1.5",
            "1e3",
            "-5.0272911935077044e+123",
            "[1,2,]",
            "{\"a\":1,}",
            "{\"a\" 1}",
            "01",
            "tru",
            "[] x",
            "\"raw\u{1}control\"",
            "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]",
        ] {
            assert_eq!(fast(raw), slow(raw), "{raw}");
        }
    }

    /// A float that serde_json reads back exactly only with its
    /// `float_roundtrip` feature: without it, this value's canonical text
    /// read back printed differently, and an event holding it would have
    /// been refused as not canonical when read back (from a ready file).
    #[test]
    fn a_float_reads_back_as_the_same_canonical_text() {
        let once = fast("[-5.0272911935077044e+123]").unwrap();
        assert_eq!(fast(&once).unwrap(), once);
    }

    /// Any JSON text: literals, numbers, strings with escapes, arrays and
    /// objects with repeated keys, nested, with blanks between tokens.
    pub(crate) fn any_json_text() -> impl Strategy<Value = String> {
        let leaf = prop_oneof![
            Just("null".to_string()),
            Just("true".to_string()),
            Just("false".to_string()),
            any::<i64>().prop_map(|n| n.to_string()),
            any::<u64>().prop_map(|n| n.to_string()),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(|f| format!("{f:e}")),
            "[a-z\"\\\\/\t\n\u{1}é😀]{0,8}".prop_map(|s| serde_json::to_string(&s).unwrap()),
            "[a-z]{0,4}".prop_map(|s| format!("\"\\u00e9{s}\\/\"")),
        ];
        leaf.prop_recursive(4, 48, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6)
                    .prop_map(|items| format!("[ {} ]", items.join(" ,"))),
                prop::collection::vec(("[a-d]{0,2}", inner), 0..6).prop_map(|members| {
                    let body: Vec<String> = members
                        .into_iter()
                        .map(|(k, v)| format!("\"{k}\" : {v}"))
                        .collect();
                    format!("{{ {} }}", body.join(",\n"))
                }),
            ]
        })
    }

    proptest! {
        #[test]
        fn the_one_pass_reader_writes_what_serde_json_writes(raw in any_json_text()) {
            prop_assert_eq!(fast(&raw), slow(&raw));
        }

        #[test]
        fn canonical_text_is_its_own_canonical_text(raw in any_json_text()) {
            let once = fast(&raw).unwrap();
            prop_assert_eq!(fast(&once).unwrap(), once.clone());
            let through_serde = serde_json::to_string(&Json::parse(&raw).unwrap()).unwrap();
            prop_assert_eq!(through_serde, once);
        }
    }
}
