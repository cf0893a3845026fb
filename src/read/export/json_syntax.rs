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
    if std::str::from_utf8(text).is_err() {
        return false;
    }
    let mut at = Cursor { text, pos: 0 };
    at.skip_ws();
    at.value(0) && {
        at.skip_ws();
        at.pos == text.len()
    }
}

struct Cursor<'t> {
    text: &'t [u8],
    pos: usize,
}

impl Cursor<'_> {
    fn peek(&self) -> Option<u8> {
        self.text.get(self.pos).copied()
    }

    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.pos += 1;
        }
    }

    fn eat(&mut self, byte: u8) -> bool {
        let found = self.peek() == Some(byte);
        self.pos += usize::from(found);
        found
    }

    fn value(&mut self, depth: usize) -> bool {
        match self.peek() {
            Some(b'{') if depth < MAX_DEPTH => self.object(depth + 1),
            Some(b'[') if depth < MAX_DEPTH => self.array(depth + 1),
            Some(b'"') => self.string(),
            Some(b't') => self.word(b"true"),
            Some(b'f') => self.word(b"false"),
            Some(b'n') => self.word(b"null"),
            Some(b'-' | b'0'..=b'9') => self.number(),
            _ => false,
        }
    }

    fn object(&mut self, depth: usize) -> bool {
        self.pos += 1;
        self.skip_ws();
        if self.eat(b'}') {
            return true;
        }
        loop {
            self.skip_ws();
            if !self.string() {
                return false;
            }
            self.skip_ws();
            if !self.eat(b':') {
                return false;
            }
            self.skip_ws();
            if !self.value(depth) {
                return false;
            }
            self.skip_ws();
            if self.eat(b'}') {
                return true;
            }
            if !self.eat(b',') {
                return false;
            }
        }
    }

    fn array(&mut self, depth: usize) -> bool {
        self.pos += 1;
        self.skip_ws();
        if self.eat(b']') {
            return true;
        }
        loop {
            self.skip_ws();
            if !self.value(depth) {
                return false;
            }
            self.skip_ws();
            if self.eat(b']') {
                return true;
            }
            if !self.eat(b',') {
                return false;
            }
        }
    }

    /// A string; the bytes are already known to be UTF-8.
    fn string(&mut self) -> bool {
        if !self.eat(b'"') {
            return false;
        }
        loop {
            let rest = &self.text[self.pos..];
            let Some(stop) = rest
                .iter()
                .position(|&b| b == b'"' || b == b'\\' || b < 0x20)
            else {
                return false;
            };
            self.pos += stop + 1;
            match rest[stop] {
                b'"' => return true,
                b'\\' if self.escape() => {}
                _ => return false,
            }
        }
    }

    /// The rest of an escape, after its backslash.
    fn escape(&mut self) -> bool {
        match self.peek() {
            Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => {
                self.pos += 1;
                true
            }
            Some(b'u') => {
                let hex = self.text.get(self.pos + 1..self.pos + 5);
                self.pos += 5;
                hex.is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit))
            }
            _ => false,
        }
    }

    fn word(&mut self, word: &[u8]) -> bool {
        let found = self.text[self.pos..].starts_with(word);
        self.pos += word.len();
        found
    }

    fn number(&mut self) -> bool {
        self.eat(b'-');
        if !self.eat(b'0') && !self.digits() {
            return false;
        }
        if self.eat(b'.') && !self.digits() {
            return false;
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.pos += 1;
            if !self.eat(b'+') {
                self.eat(b'-');
            }
            return self.digits();
        }
        true
    }

    /// One or more digits.
    fn digits(&mut self) -> bool {
        let start = self.pos;
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.pos += 1;
        }
        self.pos > start
    }
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
        let deep = "[".repeat(MAX_DEPTH + 1) + &"]".repeat(MAX_DEPTH + 1);
        assert!(!is_json(deep.as_bytes()));
        let fine = "[".repeat(MAX_DEPTH) + &"]".repeat(MAX_DEPTH);
        assert!(is_json(fine.as_bytes()));
    }

    /// serde_json does not look at the bytes of a string it skips, so
    /// text that is not UTF-8 is judged here alone.
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
            let at = cut.index(text.len());
            prop_assert!(serde_agrees(&text[..at]));
            let mut changed = text.clone();
            let i = flip.0.index(changed.len());
            changed[i] = flip.1;
            prop_assert!(serde_agrees(&changed));
        }
    }
}
