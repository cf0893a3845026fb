//! What reaches a terminal: ids, prompts and tool names come from agents,
//! and an agent can put any bytes in them (ESC and OSC sequences that
//! clear the screen or write the clipboard, NUL, bidi overrides that
//! reorder what is shown). Every human printer writes through here, so no
//! such character is ever sent to a terminal raw: each is shown as a
//! visible escape (`\x1b`, `\u{202e}`), and a byte that is not UTF-8 as
//! `\xNN`. JSON output never goes through here: serde_json already escapes
//! control characters, and JSON must stay byte-for-byte what it was.
//!
//! [`escape`] is the one rule;
//! [`TerminalWriter`] applies it to a whole stream of text, keeping only
//! line feeds and tabs (the printers' own layout) as they are.

use std::borrow::Cow;
use std::io::{self, Write};

/// Whether a character is shown as an escape rather than sent raw: C0
/// controls, DEL, C1 controls, and the Unicode format characters that
/// reorder or hide text (bidi embeddings, overrides and isolates, the
/// directional marks, zero-width joiners and the byte order mark).
pub(crate) fn is_hostile(c: char) -> bool {
    matches!(c,
        '\u{0}'..='\u{1f}'
        | '\u{7f}'..='\u{9f}'
        | '\u{200b}'..='\u{200f}'
        | '\u{2028}'..='\u{202e}'
        | '\u{2060}'..='\u{2069}'
        | '\u{061c}'
        | '\u{feff}')
}

/// `text` with every hostile character (see [`is_hostile`]) replaced by a
/// visible escape: `\x1b` below U+0100, `\u{202e}` above. Borrowed when
/// there is nothing to escape.
pub fn escape(text: &str) -> Cow<'_, str> {
    escape_keeping(text, |_| false)
}

fn escape_keeping(text: &str, keep: impl Fn(char) -> bool) -> Cow<'_, str> {
    if !text.chars().any(|c| is_hostile(c) && !keep(c)) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if is_hostile(c) && !keep(c) {
            push_escape(&mut out, c);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

fn push_escape(out: &mut String, c: char) {
    use std::fmt::Write as _;
    let n = c as u32;
    if n < 0x100 {
        let _ = write!(out, "\\x{n:02x}");
    } else {
        let _ = write!(out, "\\u{{{n:04x}}}");
    }
}

/// A line of text for a terminal: hostile characters escaped, line feeds
/// and tabs kept (for a message that spans lines).
pub(crate) fn escape_text(text: &str) -> Cow<'_, str> {
    escape_keeping(text, |c| c == '\n' || c == '\t')
}

/// Print one line on stderr, escaped.
pub fn warn(line: &str) {
    let _ = writeln!(io::stderr().lock(), "{}", escape_text(line));
}

/// A writer that escapes the text written through it (see the module
/// doc), keeping line feeds and tabs. A UTF-8 sequence split between two
/// writes is held until its end arrives; bytes that are not UTF-8 are
/// written as `\xNN`.
pub(crate) struct TerminalWriter<W: Write> {
    inner: W,
    /// The start of a UTF-8 sequence whose end has not been written yet.
    held: Vec<u8>,
}

impl<W: Write> TerminalWriter<W> {
    pub(crate) fn new(inner: W) -> TerminalWriter<W> {
        TerminalWriter {
            inner,
            held: Vec::new(),
        }
    }

    fn emit(&mut self, mut bytes: &[u8]) -> io::Result<()> {
        loop {
            match std::str::from_utf8(bytes) {
                Ok(text) => return self.inner.write_all(escape_text(text).as_bytes()),
                Err(e) => {
                    let (good, rest) = bytes.split_at(e.valid_up_to());
                    let good = std::str::from_utf8(good).expect("checked up to here");
                    self.inner.write_all(escape_text(good).as_bytes())?;
                    let Some(bad) = e.error_len() else {
                        self.held = rest.to_vec();
                        return Ok(());
                    };
                    for b in &rest[..bad] {
                        write!(self.inner, "\\x{b:02x}")?;
                    }
                    bytes = &rest[bad..];
                }
            }
        }
    }
}

impl<W: Write> Write for TerminalWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.held.is_empty() {
            self.emit(buf)?;
        } else {
            let mut joined = std::mem::take(&mut self.held);
            joined.extend_from_slice(buf);
            self.emit(&joined)?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        if !self.held.is_empty() {
            // A sequence that never completed is shown byte by byte.
            for b in std::mem::take(&mut self.held) {
                write!(self.inner, "\\x{b:02x}")?;
            }
        }
        self.inner.flush()
    }
}

impl<W: Write> Drop for TerminalWriter<W> {
    fn drop(&mut self) {
        let _ = self.flush();
    }
}

/// Where a command prints: stdout as it is for JSON (or any other
/// machine format), else through a [`TerminalWriter`].
pub fn stdout(machine: bool) -> Box<dyn Write> {
    let out = io::BufWriter::with_capacity(1 << 16, io::stdout());
    if machine {
        Box::new(out)
    } else {
        Box::new(TerminalWriter::new(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn through_writer(chunks: &[&[u8]]) -> String {
        let mut out = Vec::new();
        {
            let mut w = TerminalWriter::new(&mut out);
            for c in chunks {
                w.write_all(c).unwrap();
            }
        }
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn controls_become_visible_escapes() {
        assert_eq!(escape("plain-id"), Cow::Borrowed("plain-id"));
        assert_eq!(
            escape("a\u{1b}]52;c;eA==\u{7}b\0c\r\n\t"),
            "a\\x1b]52;c;eA==\\x07b\\x00c\\x0d\\x0a\\x09"
        );
        assert_eq!(
            escape("x\u{9b}y\u{202e}z\u{2066}"),
            "x\\x9by\\u{202e}z\\u{2066}"
        );
        assert_eq!(escape("héllo ✓"), "héllo ✓");
        assert_eq!(escape_text("one\ttwo\nthree\u{1b}"), "one\ttwo\nthree\\x1b");
    }

    #[test]
    fn the_writer_escapes_across_split_sequences_and_bad_bytes() {
        let rtl = "\u{202e}".as_bytes();
        assert_eq!(
            through_writer(&[b"a\x1b[2J", &rtl[..1], &rtl[1..], b"\n"]),
            "a\\x1b[2J\\u{202e}\n"
        );
        assert_eq!(through_writer(&[b"x\xffy\xe2\x80"]), "x\\xffy\\xe2\\x80");
        assert_eq!(through_writer(&["é✓".as_bytes()]), "é✓");
    }
}
