//! Whether a byte string is one JSON text (RFC 8259), checked without
//! building anything.
//!
//! JSON lines copy each row's stored text as it is, so the only question
//! asked of a row is whether that text is JSON at all; parsing it as an
//! event would cost more than the whole copy. The check is strict on
//! grammar (no trailing commas, no leading zeros, no control characters in
//! strings, valid UTF-8) and lenient only where RFC 8259 is: a `\u` escape
//! of a lone surrogate passes. Nesting past [`MAX_DEPTH`] fails, as it
//! does for serde_json.

/// The deepest nesting accepted (serde_json's own limit).
pub const MAX_DEPTH: usize = 128;

/// Whether `text` is exactly one JSON value, surrounded only by whitespace.
pub fn is_json(text: &[u8]) -> bool {
    std::str::from_utf8(text).is_ok() && check::<false>(text).is_some()
}

/// [`is_json`], and on one line: no line feed anywhere. A string cannot
/// hold a raw one (it is a control character), so this only takes line
/// feeds out of whitespace, in the same pass.
pub fn is_json_line(text: &[u8]) -> bool {
    std::str::from_utf8(text).is_ok() && check::<true>(text).is_some()
}

/// One pass, no recursion: the open containers are bits of one word
/// (set for an object), which is also what bounds the depth. `LINE`: a
/// line feed is not whitespace.
fn check<const LINE: bool>(t: &[u8]) -> Option<()> {
    const _: () = assert!(MAX_DEPTH <= u128::BITS as usize);
    let mut i = skip_ws::<LINE>(t, 0);
    let mut open: u128 = 0;
    let mut depth = 0;
    'value: loop {
        match *t.get(i)? {
            b'{' | b'[' => {
                let object = t[i] == b'{';
                if depth == MAX_DEPTH {
                    return None;
                }
                i = skip_ws::<LINE>(t, i + 1);
                if t.get(i) == Some(if object { &b'}' } else { &b']' }) {
                    i += 1;
                } else {
                    open |= u128::from(object) << depth;
                    depth += 1;
                    if object {
                        i = member_key::<LINE>(t, i)?;
                    }
                    continue 'value;
                }
            }
            b'"' => i = string(t, i)?,
            b't' => i = word(t, i, b"true")?,
            b'f' => i = word(t, i, b"false")?,
            b'n' => i = word(t, i, b"null")?,
            b'-' | b'0'..=b'9' => i = number(t, i)?,
            _ => return None,
        }
        // A value ended: close what it ends, or go on to the next one.
        loop {
            i = skip_ws::<LINE>(t, i);
            if depth == 0 {
                return (i == t.len()).then_some(());
            }
            let object = open >> (depth - 1) & 1 == 1;
            match *t.get(i)? {
                b',' => {
                    i = skip_ws::<LINE>(t, i + 1);
                    if object {
                        i = member_key::<LINE>(t, i)?;
                    }
                    continue 'value;
                }
                b'}' if object => {}
                b']' if !object => {}
                _ => return None,
            }
            i += 1;
            depth -= 1;
            open &= !(1 << depth);
        }
    }
}

fn skip_ws<const LINE: bool>(t: &[u8], mut i: usize) -> usize {
    loop {
        match t.get(i) {
            Some(b' ' | b'\t' | b'\r') => i += 1,
            Some(b'\n') if !LINE => i += 1,
            _ => return i,
        }
    }
}

/// `"key" :` and the whitespace after it; where the member's value starts.
fn member_key<const LINE: bool>(t: &[u8], i: usize) -> Option<usize> {
    let i = skip_ws::<LINE>(t, string(t, i)?);
    (t.get(i) == Some(&b':')).then(|| skip_ws::<LINE>(t, i + 1))
}

/// A string starting at `i`; where it ends. The bytes are already known
/// to be UTF-8. Inlined: most of a row's tokens are strings, and a call
/// per string cost more than the scan of a short one.
#[inline(always)]
fn string(t: &[u8], i: usize) -> Option<usize> {
    if t.get(i) != Some(&b'"') {
        return None;
    }
    let mut i = i + 1;
    loop {
        i += first_stop(t.get(i..)?)?;
        match t[i] {
            b'"' => return Some(i + 1),
            b'\\' => i = escape(t, i + 1)?,
            _ => return None,
        }
    }
}

/// The rest of an escape, after its backslash; where it ends.
fn escape(t: &[u8], i: usize) -> Option<usize> {
    match *t.get(i)? {
        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => Some(i + 1),
        b'u' => {
            let hex = t.get(i + 1..i + 5)?;
            hex.iter().all(u8::is_ascii_hexdigit).then_some(i + 5)
        }
        _ => None,
    }
}

fn word(t: &[u8], i: usize, word: &[u8]) -> Option<usize> {
    t[i..].starts_with(word).then_some(i + word.len())
}

fn number(t: &[u8], mut i: usize) -> Option<usize> {
    if t[i] == b'-' {
        i += 1;
    }
    match t.get(i) {
        Some(b'0') => i += 1,
        Some(b'1'..=b'9') => i = digits(t, i)?,
        _ => return None,
    }
    if t.get(i) == Some(&b'.') {
        i = digits(t, i + 1)?;
    }
    if let Some(b'e' | b'E') = t.get(i) {
        i += 1;
        if let Some(b'+' | b'-') = t.get(i) {
            i += 1;
        }
        i = digits(t, i)?;
    }
    Some(i)
}

/// One or more digits from `i`; where they end.
fn digits(t: &[u8], start: usize) -> Option<usize> {
    let mut i = start;
    while let Some(b'0'..=b'9') = t.get(i) {
        i += 1;
    }
    (i > start).then_some(i)
}

/// The first byte that ends a string's plain run: a quote, a backslash
/// or a control character. Strings are most of an event's text, and this
/// is most of the check's time: sixteen bytes at a time where the target
/// has SSE2, then eight at a time.
#[inline(always)]
fn first_stop(bytes: &[u8]) -> Option<usize> {
    let (at, found) = first_stop_wide(bytes);
    if found.is_some() {
        return found;
    }
    first_stop_words(&bytes[at..]).map(|i| at + i)
}

/// The blocks of sixteen bytes from the start: the first stop in them, or
/// where the blocks ended without one.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn first_stop_wide(bytes: &[u8]) -> (usize, Option<usize>) {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_min_epu8, _mm_movemask_epi8, _mm_or_si128,
        _mm_set1_epi8,
    };
    let mut at = 0;
    // SAFETY: SSE2 is part of every x86_64 target, and each unaligned
    // load reads sixteen bytes inside `bytes` (`at + 16 <= len`).
    unsafe {
        let quote = _mm_set1_epi8(b'"' as i8);
        let backslash = _mm_set1_epi8(b'\\' as i8);
        let last_control = _mm_set1_epi8(0x1f);
        while at + 16 <= bytes.len() {
            let v = _mm_loadu_si128(bytes.as_ptr().add(at).cast::<__m128i>());
            // A byte at most 0x1f is its own minimum with 0x1f.
            let control = _mm_cmpeq_epi8(_mm_min_epu8(v, last_control), v);
            let quote_or_backslash =
                _mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash));
            let marks = _mm_movemask_epi8(_mm_or_si128(quote_or_backslash, control)) as u32;
            if marks != 0 {
                return (at, Some(at + marks.trailing_zeros() as usize));
            }
            at += 16;
        }
    }
    (at, None)
}

#[cfg(not(target_arch = "x86_64"))]
fn first_stop_wide(_: &[u8]) -> (usize, Option<usize>) {
    (0, None)
}

/// [`first_stop`] eight bytes at a time, in one word.
fn first_stop_words(bytes: &[u8]) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    // A byte of `v` is zero: its high bit in the result. Borrows can mark
    // bytes above a true match, never below, so the lowest mark is exact.
    let zero = |v: u64| v.wrapping_sub(ONES) & !v & HIGH;
    let mut chunks = bytes.chunks_exact(8);
    let mut at = 0;
    for chunk in &mut chunks {
        let w = u64::from_le_bytes(chunk.try_into().expect("eight bytes"));
        let control = w.wrapping_sub(ONES * 0x20) & !w & HIGH;
        let quote = zero(w ^ (ONES * u64::from(b'"')));
        let backslash = zero(w ^ (ONES * u64::from(b'\\')));
        let marks = quote | backslash | control;
        if marks != 0 {
            return Some(at + (marks.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    let tail = chunks.remainder();
    let stop = tail
        .iter()
        .position(|&b| b == b'"' || b == b'\\' || b < 0x20)?;
    Some(at + stop)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn accepts_json_and_refuses_what_is_not() {
        let good = [
            r#"{}"#,
            r#"{"a":[1,-2.5e+3,0,true,false,null],"b":{"c":"\u00e9\n\"x\""}}"#,
            " [ ] ",
            r#""\ud800""#,
            "-0.0E-0",
            "\"é 😀\"",
        ];
        for text in good {
            assert!(is_json(text.as_bytes()), "{text}");
        }
        let bad = [
            "",
            "{",
            r#"{"a":1,}"#,
            r#"{"a" 1}"#,
            "[1,]",
            "01",
            "1.",
            "-",
            "1e",
            "tru",
            r#""\x""#,
            r#""\u12g4""#,
            "\"tab\there\"",
            "{} {}",
            r#"{"a":1"#,
            "nul",
        ];
        for text in bad {
            assert!(!is_json(text.as_bytes()), "{text:?}");
        }
        assert!(!is_json(b"\"\xff\""), "not UTF-8");
        assert!(is_json(b"{\"a\":\n1}\n"));
        assert!(!is_json_line(b"{\"a\":\n1}"), "two lines");
        assert!(!is_json_line(b"{\"a\":1}\n"), "a line and its end");
        assert!(
            is_json_line(b"{\"a\": [1, \"\\n\"]}"),
            "an escaped line feed"
        );
        let deep = "[".repeat(MAX_DEPTH + 1) + &"]".repeat(MAX_DEPTH + 1);
        assert!(!is_json(deep.as_bytes()));
        let fine = "[".repeat(MAX_DEPTH) + &"]".repeat(MAX_DEPTH);
        assert!(is_json(fine.as_bytes()));
    }

    /// serde_json does not look at the bytes of a string it skips, so
    /// text that is not UTF-8 is judged here alone.
    #[test]
    fn the_word_scan_finds_the_first_stop_wherever_it_is() {
        for len in 0..72 {
            for at in 0..len {
                for stop in [b'"', b'\\', 0x00, 0x1f] {
                    let mut text = vec![b'a'; len];
                    text[at] = stop;
                    // Bytes that must not stop it, after the stop too.
                    if at + 1 < len {
                        text[at + 1] = 0xe9;
                    }
                    assert_eq!(first_stop(&text), Some(at), "{text:?}");
                    assert_eq!(first_stop_words(&text), Some(at), "{text:?}");
                }
            }
            let plain: Vec<u8> = (0..len)
                .map(|i| [b'a', 0x20, 0x7f, 0xff, 0x80, 0x9f][i % 6])
                .collect();
            assert_eq!(first_stop(&plain), None, "{plain:?}");
        }
    }

    fn serde_agrees(text: &[u8]) -> bool {
        if std::str::from_utf8(text).is_err() {
            return !is_json(text);
        }
        let theirs = serde_json::from_slice::<serde::de::IgnoredAny>(text).is_ok();
        is_json(text) == theirs
    }

    proptest! {
        /// Any text serde_json writes passes, and any cut of it or any
        /// one-byte change is judged as serde_json judges it.
        #[test]
        fn agrees_with_serde_json(
            value in any::<(String, Vec<(String, i64, bool)>, Option<f64>)>(),
            cut in any::<prop::sample::Index>(),
            flip in any::<(prop::sample::Index, u8)>(),
        ) {
            let text = serde_json::to_vec(&value).unwrap();
            prop_assert!(is_json(&text));
            prop_assert!(is_json_line(&text));
            let at = cut.index(text.len());
            prop_assert!(serde_agrees(&text[..at]));
            let mut changed = text.clone();
            let i = flip.0.index(changed.len());
            changed[i] = flip.1;
            prop_assert!(serde_agrees(&changed));
        }
    }
}
