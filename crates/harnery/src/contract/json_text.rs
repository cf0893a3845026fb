//! JSON text, byte for byte as serde_json writes it: integers in decimal
//! and strings with serde_json's escapes, plus the eight-bytes-at-a-time
//! scan for characters that need escaping. The event writer (`json.rs`),
//! canonical JSON values (`canonical.rs`), the ledger's trace rows and the
//! OTLP writer all write their numbers and strings through here. It knows
//! nothing of events.

use std::fmt::Write as _;

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

/// Whether any byte is a control character, `"` or `\`.
pub(crate) fn needs_escape(bytes: &[u8]) -> bool {
    plain_len(bytes) < bytes.len()
}

/// How many bytes lead `bytes` before the first that needs escaping (a
/// control character, `"` or `\`); all of them, if none does. Eight bytes
/// at a time: a word has a byte below `n` (for `n` up to 128) exactly when
/// `(w - n·0x01…) & !w & 0x80…` is not zero, and a byte equal to `b` when
/// `w ^ b·0x01…` has a zero byte. A borrow can flag a byte only above one
/// that is flagged rightly, so the lowest flag is always the first such
/// byte.
pub(crate) fn plain_len(bytes: &[u8]) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let below = |w: u64, n: u8| w.wrapping_sub(ONES * n as u64) & !w & HIGH;
    let mut words = bytes.chunks_exact(8);
    for (i, word) in (&mut words).enumerate() {
        let w = u64::from_le_bytes(word.try_into().expect("chunks of eight bytes"));
        let flags = below(w, 0x20)
            | below(w ^ (ONES * b'"' as u64), 1)
            | below(w ^ (ONES * b'\\' as u64), 1);
        if flags != 0 {
            return i * 8 + flags.trailing_zeros() as usize / 8;
        }
    }
    let done = bytes.len() - words.remainder().len();
    let rest = words.remainder().iter();
    done + rest
        .take_while(|&&b| b >= 0x20 && b != b'"' && b != b'\\')
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn plain_len_byte_by_byte(bytes: &[u8]) -> usize {
        let escaped = |b: &u8| *b < 0x20 || *b == b'"' || *b == b'\\';
        bytes.iter().position(escaped).unwrap_or(bytes.len())
    }

    proptest! {
        #[test]
        fn plain_len_finds_the_first_byte_to_escape(
            bytes in proptest::collection::vec(
                prop_oneof![Just(b'"'), Just(b'\\'), 0u8..0x21, 0x5au8..0x60, any::<u8>()],
                0..40,
            )
        ) {
            prop_assert_eq!(plain_len(&bytes), plain_len_byte_by_byte(&bytes));
            prop_assert_eq!(needs_escape(&bytes), plain_len_byte_by_byte(&bytes) < bytes.len());
        }
    }
}
