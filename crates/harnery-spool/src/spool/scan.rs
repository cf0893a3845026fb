//! A borrowed, partial look at a hook payload: the few top-level string
//! fields needed to route it, nothing else.
//!
//! It walks the top-level JSON object and stops as soon as it has what it was
//! asked for, so a multi-MiB `tool_response` after `session_id` is never
//! scanned. Malformed input simply yields fewer fields; the payload bytes are
//! kept as received either way.

use std::borrow::Cow;

/// Routing fields found in a payload.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Routing<'a> {
    /// `session_id` (Claude Code, Copilot snake_case) or `sessionId` (Copilot camelCase).
    pub session_id: Option<Cow<'a, str>>,
    /// `hook_event_name` (Claude Code, Copilot snake_case) or `hookName` (Copilot, some events).
    pub event: Option<Cow<'a, str>>,
}

/// Scan `bytes` for routing fields; stop early once the session id and (when
/// `want_event`) the event name are known.
pub fn routing(bytes: &[u8], want_event: bool) -> Routing<'_> {
    let mut out = Routing::default();
    let mut s = Scanner { b: bytes, i: 0 };
    let _ = s.object(&mut out, want_event);
    out
}

struct Scanner<'a> {
    b: &'a [u8],
    i: usize,
}

type Step = Result<(), ()>;

impl<'a> Scanner<'a> {
    fn object(&mut self, out: &mut Routing<'a>, want_event: bool) -> Step {
        self.ws();
        self.eat(b'{')?;
        loop {
            self.ws();
            if self.peek()? == b'}' {
                return Ok(());
            }
            let (kstart, kend, kesc) = self.string_span()?;
            self.ws();
            self.eat(b':')?;
            self.ws();
            let key = &self.b[kstart..kend];
            let slot = match (kesc, key) {
                (false, b"session_id" | b"sessionId") => Some(&mut out.session_id),
                (false, b"hook_event_name") => Some(&mut out.event),
                (false, b"hookName") if out.event.is_none() => Some(&mut out.event),
                _ => None,
            };
            match slot {
                Some(slot) if self.peek()? == b'"' => {
                    let (vs, ve, vesc) = self.string_span()?;
                    *slot = Some(decode(&self.b[vs - 1..ve + 1], &self.b[vs..ve], vesc)?);
                }
                _ => self.value()?,
            }
            if out.session_id.is_some() && (!want_event || out.event.is_some()) {
                return Ok(());
            }
            self.ws();
            match self.next()? {
                b',' => continue,
                b'}' => return Ok(()),
                _ => return Err(()),
            }
        }
    }

    /// Skip one JSON value of any kind.
    fn value(&mut self) -> Step {
        let mut depth = 0usize;
        loop {
            self.ws();
            match self.peek()? {
                b'"' => {
                    self.string_span()?;
                }
                b'{' | b'[' => {
                    depth += 1;
                    self.i += 1;
                }
                b'}' | b']' if depth > 0 => {
                    depth -= 1;
                    self.i += 1;
                }
                b',' | b':' if depth > 0 => self.i += 1,
                b'}' | b']' | b',' => return Err(()),
                _ => self.scalar()?,
            }
            if depth == 0 {
                return Ok(());
            }
        }
    }

    fn scalar(&mut self) -> Step {
        let start = self.i;
        while let Some(&c) = self.b.get(self.i) {
            if matches!(c, b',' | b'}' | b']' | b':' | b' ' | b'\t' | b'\n' | b'\r') {
                break;
            }
            self.i += 1;
        }
        if self.i == start { Err(()) } else { Ok(()) }
    }

    /// The span of a string's contents (without quotes) and whether it has escapes.
    fn string_span(&mut self) -> Result<(usize, usize, bool), ()> {
        self.eat(b'"')?;
        let start = self.i;
        let mut escaped = false;
        loop {
            match self.next()? {
                b'"' => return Ok((start, self.i - 1, escaped)),
                b'\\' => {
                    escaped = true;
                    self.next()?;
                }
                _ => {}
            }
        }
    }

    fn ws(&mut self) {
        while matches!(self.b.get(self.i), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.i += 1;
        }
    }

    fn eat(&mut self, c: u8) -> Step {
        if self.next()? == c { Ok(()) } else { Err(()) }
    }

    fn peek(&self) -> Result<u8, ()> {
        self.b.get(self.i).copied().ok_or(())
    }

    fn next(&mut self) -> Result<u8, ()> {
        let c = self.peek()?;
        self.i += 1;
        Ok(c)
    }
}

fn decode<'a>(quoted: &'a [u8], inner: &'a [u8], escaped: bool) -> Result<Cow<'a, str>, ()> {
    if !escaped {
        return std::str::from_utf8(inner)
            .map(Cow::Borrowed)
            .map_err(|_| ());
    }
    serde_json::from_slice::<String>(quoted)
        .map(Cow::Owned)
        .map_err(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_fields_in_each_dialect() {
        let r = routing(
            br#"{"session_id":"a b","transcript_path":"/x","hook_event_name":"Stop"}"#,
            true,
        );
        assert_eq!(r.session_id.as_deref(), Some("a b"));
        assert_eq!(r.event.as_deref(), Some("Stop"));
        let r = routing(
            br#"{"hookName":"permissionRequest","sessionId":"s1","x":[1,{"a":"}"}]}"#,
            true,
        );
        assert_eq!(r.session_id.as_deref(), Some("s1"));
        assert_eq!(r.event.as_deref(), Some("permissionRequest"));
        let r = routing(
            br#" { "a" : [1, 2, {"b": null}], "n": -1.5e3, "sessionId" : "..\/x\u0001" } "#,
            false,
        );
        assert_eq!(r.session_id.as_deref(), Some("../x\u{1}"));
    }

    #[test]
    fn malformed_input_yields_nothing_and_never_panics() {
        for input in [
            &b""[..],
            b"not json",
            b"{",
            b"{\"session_id\":",
            b"\xff\xfe",
            b"[1,2]",
            b"{\"a\":}",
        ] {
            let r = routing(input, true);
            assert_eq!(r.session_id, None);
        }
    }
}
