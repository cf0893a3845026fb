//! JSON text, byte for byte as serde_json writes it: integers in decimal
//! and strings with serde_json's escapes (found by the scan in
//! `harnery_spool::json_text`, which the envelope reader shares). The event
//! writer (`json.rs`), canonical JSON values (`canonical.rs`), the ledger's trace rows and the
//! OTLP writer all write their numbers and strings through here. It knows
//! nothing of events.

use std::fmt::Write as _;

pub(crate) use harnery_spool::json_text::{needs_escape, plain_len};

/// The integers an event holds.
pub(crate) trait Integer: Copy {
    fn negative(self) -> bool;
    fn magnitude(self) -> u64;
}

impl Integer for u64 {
    fn negative(self) -> bool {
        false
    }
    fn magnitude(self) -> u64 {
        self
    }
}

impl Integer for i64 {
    fn negative(self) -> bool {
        self < 0
    }
    fn magnitude(self) -> u64 {
        self.unsigned_abs()
    }
}

/// An integer in decimal, as serde_json writes it.
pub(crate) fn number(out: &mut String, n: impl Integer) {
    let mut text = [0u8; 21];
    let mut at = text.len();
    let mut rest = n.magnitude();
    loop {
        at -= 1;
        text[at] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    if n.negative() {
        at -= 1;
        text[at] = b'-';
    }
    out.push_str(std::str::from_utf8(&text[at..]).expect("digits are ASCII"));
}

/// A JSON string as serde_json writes it: `"` and `\` escaped with a
/// backslash, the control characters with their short escape where JSON
/// has one and as `\u00xx` otherwise, everything else as it is.
pub(crate) fn string(out: &mut String, text: &str) {
    out.push('"');
    if needs_escape(text.as_bytes()) {
        escape_into(out, text);
    } else {
        out.push_str(text);
    }
    out.push('"');
}

fn escape_into(out: &mut String, text: &str) {
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                write!(out, "\\u{:04x}", c as u32).expect("writing to a String does not fail")
            }
            c => out.push(c),
        }
    }
}
