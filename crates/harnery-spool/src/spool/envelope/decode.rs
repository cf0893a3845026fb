//! The envelope's fast path: a direct scan of the compact JSON the hook
//! writes, for the finalizer, which decodes one envelope per record.
//!
//! It never decides that an envelope is bad. It accepts only a plain subset
//! of JSON (an object of the envelope's fields with strings, integers,
//! booleans and nulls; unknown fields holding scalars), and whenever the
//! text leaves that subset, or breaks a rule `serde_json` would enforce, it
//! gives up and [`EnvelopeView::from_json`] asks `serde_json`. So what it
//! accepts, it decodes exactly as `serde_json` and the derived `Deserialize`
//! would; everything else keeps their answer.

use std::borrow::Cow;
use std::collections::BTreeMap;

use super::{EnvelopeView, WritePath};

/// Decode `text` when it stays inside the fast path's subset; `None` means
/// "not decided here", never "bad".
pub(super) fn decode(text: &str) -> Option<EnvelopeView<'_>> {
    let mut scan = Scan { text, at: 0 };
    let mut fields = Fields::default();
    // Where the writer's field order predicts the next key.
    let mut next = 0;
    scan.skip_ws();
    scan.expect(b'{')?;
    scan.skip_ws();
    if scan.peek()? != b'}' {
        loop {
            let field = scan.field(&mut next)?;
            scan.skip_ws();
            fields.set(field, &mut scan)?;
            scan.skip_ws();
            if scan.peek()? == b'}' {
                break;
            }
            scan.expect(b',')?;
            scan.skip_ws();
        }
    }
    scan.at += 1;
    scan.skip_ws();
    (scan.at == text.len()).then_some(())?;
    fields.finish()
}

/// The envelope's fields.
#[derive(Clone, Copy)]
enum Field {
    V,
    RecordId,
    Adapter,
    Event,
    SessionId,
    SessionKey,
    ReceivedNs,
    BootId,
    BoottimeNs,
    Pid,
    Writer,
    PayloadLen,
    PayloadBlake3,
    Truncated,
    Incomplete,
    WritePath,
    FallbackReason,
    Env,
}

/// Each field's key as the writer puts it, quoted and followed by its
/// colon, in the order the writer puts them (the struct's order).
const KEYS: [(&str, Field); 18] = [
    ("\"v\":", Field::V),
    ("\"record_id\":", Field::RecordId),
    ("\"adapter\":", Field::Adapter),
    ("\"event\":", Field::Event),
    ("\"session_id\":", Field::SessionId),
    ("\"session_key\":", Field::SessionKey),
    ("\"received_ns\":", Field::ReceivedNs),
    ("\"boot_id\":", Field::BootId),
    ("\"boottime_ns\":", Field::BoottimeNs),
    ("\"pid\":", Field::Pid),
    ("\"writer\":", Field::Writer),
    ("\"payload_len\":", Field::PayloadLen),
    ("\"payload_blake3\":", Field::PayloadBlake3),
    ("\"truncated\":", Field::Truncated),
    ("\"incomplete\":", Field::Incomplete),
    ("\"write_path\":", Field::WritePath),
    ("\"fallback_reason\":", Field::FallbackReason),
    ("\"env\":", Field::Env),
];

/// The position in [`KEYS`] of the field named `name`.
fn key_index(name: &str) -> Option<usize> {
    KEYS.iter().position(|(quoted, _)| {
        quoted.strip_prefix('"').and_then(|q| q.strip_suffix("\":")) == Some(name)
    })
}

/// The fields seen so far; a field seen twice is left to `serde_json`
/// (the derive rejects duplicates).
#[derive(Default)]
struct Fields<'a> {
    v: Option<u16>,
    record_id: Option<Cow<'a, str>>,
    adapter: Option<Cow<'a, str>>,
    event: Option<Option<Cow<'a, str>>>,
    session_id: Option<Option<Cow<'a, str>>>,
    session_key: Option<Cow<'a, str>>,
    received_ns: Option<i64>,
    boot_id: Option<Option<Cow<'a, str>>>,
    boottime_ns: Option<Option<u64>>,
    pid: Option<u32>,
    writer: Option<Cow<'a, str>>,
    payload_len: Option<u64>,
    payload_blake3: Option<Cow<'a, str>>,
    truncated: Option<bool>,
    incomplete: Option<bool>,
    write_path: Option<WritePath>,
    fallback_reason: Option<Option<Cow<'a, str>>>,
    env: Option<BTreeMap<Cow<'a, str>, Cow<'a, str>>>,
}

/// Store `value` in an empty slot; a filled slot means a duplicate field.
fn put<T>(slot: &mut Option<T>, value: T) -> Option<()> {
    slot.is_none().then(|| *slot = Some(value))
}

impl<'a> Fields<'a> {
    /// Read the value of `field` (`None`: a field the envelope does not
    /// have, whose value is skipped).
    fn set(&mut self, field: Option<Field>, s: &mut Scan<'a>) -> Option<()> {
        let Some(field) = field else {
            return s.skip_scalar();
        };
        match field {
            Field::V => put(&mut self.v, u16::try_from(s.unsigned()?).ok()?),
            Field::RecordId => put(&mut self.record_id, s.string()?),
            Field::Adapter => put(&mut self.adapter, s.string()?),
            Field::Event => put(&mut self.event, s.optional_string()?),
            Field::SessionId => put(&mut self.session_id, s.optional_string()?),
            Field::SessionKey => put(&mut self.session_key, s.string()?),
            Field::ReceivedNs => put(&mut self.received_ns, s.signed()?),
            Field::BootId => put(&mut self.boot_id, s.optional_string()?),
            Field::BoottimeNs => put(&mut self.boottime_ns, s.optional_unsigned()?),
            Field::Pid => put(&mut self.pid, u32::try_from(s.unsigned()?).ok()?),
            Field::Writer => put(&mut self.writer, s.string()?),
            Field::PayloadLen => put(&mut self.payload_len, s.unsigned()?),
            Field::PayloadBlake3 => put(&mut self.payload_blake3, s.string()?),
            Field::Truncated => put(&mut self.truncated, s.boolean()?),
            Field::Incomplete => put(&mut self.incomplete, s.boolean()?),
            Field::WritePath => put(&mut self.write_path, write_path(&s.string()?)?),
            Field::FallbackReason => put(&mut self.fallback_reason, s.optional_string()?),
            Field::Env => put(&mut self.env, s.string_map()?),
        }
    }

    /// The envelope, when every required field was present. Optional
    /// fields default as the derive defaults them.
    fn finish(self) -> Option<EnvelopeView<'a>> {
        Some(EnvelopeView {
            v: self.v?,
            record_id: self.record_id?,
            adapter: self.adapter?,
            event: self.event.flatten(),
            session_id: self.session_id.flatten(),
            session_key: self.session_key?,
            received_ns: self.received_ns?,
            boot_id: self.boot_id.flatten(),
            boottime_ns: self.boottime_ns.flatten(),
            pid: self.pid?,
            writer: self.writer?,
            payload_len: self.payload_len?,
            payload_blake3: self.payload_blake3?,
            truncated: self.truncated.unwrap_or(false),
            incomplete: self.incomplete.unwrap_or(false),
            write_path: self.write_path?,
            fallback_reason: self.fallback_reason.flatten(),
            env: self.env.unwrap_or_default(),
        })
    }
}

fn write_path(name: &str) -> Option<WritePath> {
    match name {
        "segment" => Some(WritePath::Segment),
        "fallback" => Some(WritePath::Fallback),
        "dead_letter" => Some(WritePath::DeadLetter),
        _ => None,
    }
}

/// Where the string that `bytes` continues stops: the index of its first
/// quote, backslash or control byte.
fn string_stop(bytes: &[u8]) -> Option<usize> {
    let plain = crate::json_text::plain_len(bytes);
    (plain < bytes.len()).then_some(plain)
}

/// A cursor over the envelope text. Every method returns `None` when the
/// text leaves the fast path's subset at the cursor.
struct Scan<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Scan<'a> {
    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.at).copied()
    }

    /// JSON whitespace, exactly the four bytes `serde_json` skips.
    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\n' | b'\t' | b'\r')) {
            self.at += 1;
        }
    }

    fn expect(&mut self, byte: u8) -> Option<()> {
        (self.peek()? == byte).then(|| self.at += 1)
    }

    /// Consume `word` when the text continues with it.
    fn literal(&mut self, word: &str) -> bool {
        let rest = self.text.as_bytes().get(self.at..).unwrap_or_default();
        let found = rest.starts_with(word.as_bytes());
        if found {
            self.at += word.len();
        }
        found
    }

    /// An object key and its colon: the field it names, `Some(None)` for a
    /// name the envelope does not have. The key `next` predicts is
    /// recognised by comparing bytes; any other is scanned and looked up.
    fn field(&mut self, next: &mut usize) -> Option<Option<Field>> {
        if let Some((quoted, field)) = KEYS.get(*next) {
            let rest = self.text.as_bytes().get(self.at..)?;
            if rest.starts_with(quoted.as_bytes()) {
                self.at += quoted.len();
                *next += 1;
                return Some(Some(*field));
            }
        }
        let name = self.key()?;
        self.skip_ws();
        self.expect(b':')?;
        let Some(index) = key_index(name) else {
            return Some(None);
        };
        *next = index + 1;
        Some(Some(KEYS[index].1))
    }

    /// An object key. Keys with escapes are left to `serde_json`, which
    /// would match the unescaped name against the fields.
    fn key(&mut self) -> Option<&'a str> {
        match self.string()? {
            Cow::Borrowed(key) => Some(key),
            Cow::Owned(_) => None,
        }
    }

    /// A string, borrowed unless it holds escapes. Control bytes are left to
    /// `serde_json` (which rejects them), and so is `\u` (surrogate rules).
    fn string(&mut self) -> Option<Cow<'a, str>> {
        self.expect(b'"')?;
        let start = self.at;
        self.at += string_stop(self.text.as_bytes().get(start..)?)?;
        match self.peek()? {
            b'"' => {
                let plain = self.text.get(start..self.at)?;
                self.at += 1;
                Some(Cow::Borrowed(plain))
            }
            b'\\' => self.escaped(start),
            _ => None,
        }
    }

    /// The rest of a string whose first escape is at the cursor.
    fn escaped(&mut self, start: usize) -> Option<Cow<'a, str>> {
        let mut out = String::from(self.text.get(start..self.at)?);
        loop {
            let run = self.at;
            self.at += string_stop(self.text.as_bytes().get(run..)?)?;
            out.push_str(self.text.get(run..self.at)?);
            match self.peek()? {
                b'"' => break,
                b'\\' => out.push(self.escape()?),
                _ => return None,
            }
        }
        self.at += 1;
        Some(Cow::Owned(out))
    }

    /// One escape after its backslash: the short forms only.
    fn escape(&mut self) -> Option<char> {
        let c = match *self.text.as_bytes().get(self.at + 1)? {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            _ => return None,
        };
        self.at += 2;
        Some(c)
    }

    /// `null` or a string, as an `Option<String>` field decodes.
    fn optional_string(&mut self) -> Option<Option<Cow<'a, str>>> {
        if self.literal("null") {
            return Some(None);
        }
        Some(Some(self.string()?))
    }

    fn optional_unsigned(&mut self) -> Option<Option<u64>> {
        if self.literal("null") {
            return Some(None);
        }
        Some(Some(self.unsigned()?))
    }

    fn boolean(&mut self) -> Option<bool> {
        if self.literal("true") {
            Some(true)
        } else if self.literal("false") {
            Some(false)
        } else {
            None
        }
    }

    /// A JSON integer without sign that fits a `u64`: `0`, or digits not
    /// starting with `0`. A fraction, an exponent or an overflow would make
    /// `serde_json` read a float, which an integer field rejects.
    fn unsigned(&mut self) -> Option<u64> {
        let bytes = self.text.as_bytes();
        let first = self.peek()?;
        if !first.is_ascii_digit() {
            return None;
        }
        let mut value = u64::from(first - b'0');
        self.at += 1;
        if value != 0 {
            while let Some(d @ b'0'..=b'9') = bytes.get(self.at).copied() {
                value = value.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
                self.at += 1;
            }
        }
        match self.peek() {
            Some(b'0'..=b'9' | b'.' | b'e' | b'E') => None,
            _ => Some(value),
        }
    }

    /// An `i64`: a negative one must not be `-0` (`serde_json` reads that
    /// as a float).
    fn signed(&mut self) -> Option<i64> {
        if self.peek()? != b'-' {
            return i64::try_from(self.unsigned()?).ok();
        }
        self.at += 1;
        let magnitude = self.unsigned()?;
        (magnitude != 0).then_some(())?;
        i64::try_from(-i128::from(magnitude)).ok()
    }

    /// An object of strings, later keys replacing earlier ones as a map
    /// does when it is deserialized.
    fn string_map(&mut self) -> Option<BTreeMap<Cow<'a, str>, Cow<'a, str>>> {
        let mut map = BTreeMap::new();
        self.expect(b'{')?;
        self.skip_ws();
        if self.peek()? == b'}' {
            self.at += 1;
            return Some(map);
        }
        loop {
            let key = self.string()?;
            self.skip_ws();
            self.expect(b':')?;
            self.skip_ws();
            map.insert(key, self.string()?);
            self.skip_ws();
            if self.peek()? == b'}' {
                self.at += 1;
                return Some(map);
            }
            self.expect(b',')?;
            self.skip_ws();
        }
    }

    /// The value of a field the envelope does not have: ignored, but it
    /// must still be valid JSON. Objects and arrays are left to `serde_json`.
    fn skip_scalar(&mut self) -> Option<()> {
        match self.peek()? {
            b'"' => self.string().map(drop),
            b'-' | b'0'..=b'9' => self.skip_number(),
            _ => (self.literal("null") || self.literal("true") || self.literal("false"))
                .then_some(()),
        }
    }

    /// JSON's number grammar: `` -? int (. digits)? ([eE] [+-]? digits)? ``.
    fn skip_number(&mut self) -> Option<()> {
        if self.peek()? == b'-' {
            self.at += 1;
        }
        match self.peek()? {
            b'0' => self.at += 1,
            b'1'..=b'9' => self.skip_digits(),
            _ => return None,
        }
        if self.peek() == Some(b'.') {
            self.at += 1;
            self.digits_required()?;
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.at += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.at += 1;
            }
            self.digits_required()?;
        }
        // A digit right after a leading `0` is an invalid number.
        (!matches!(self.peek(), Some(b'0'..=b'9'))).then_some(())
    }

    fn skip_digits(&mut self) {
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.at += 1;
        }
    }

    fn digits_required(&mut self) -> Option<()> {
        let start = self.at;
        self.skip_digits();
        (self.at > start).then_some(())
    }
}

#[cfg(test)]
#[path = "decode_tests.rs"]
mod tests;
