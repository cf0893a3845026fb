//! JSON lines: each event row's stored text is its line.
//!
//! The ledger keeps every event as its canonical serde_json text (append
//! refuses any other), so the stored text *is* the line an export writes;
//! copying it avoids a parse and a re-serialisation per row. A row is only
//! checked to be a JSON object on one line. When rows carry their epoch,
//! the tag goes last: `,"epoch":"<label>"` before the closing brace.

use super::json_syntax::is_json_line;

/// Why a row's text cannot be a line: not JSON, not an object, or not on
/// one line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NotALine;

/// Whether `json` can be written as a line as it is.
pub fn check(json: &[u8]) -> Result<(), NotALine> {
    let framed = json.first() == Some(&b'{') && json.last() == Some(&b'}');
    if framed && is_json_line(json) {
        Ok(())
    } else {
        Err(NotALine)
    }
}

/// Writes rows as lines, each tagged with one epoch label or none.
pub struct JsonLines {
    /// `,"epoch":"<label>"}`, ready to close each line.
    tag_tail: Option<Vec<u8>>,
}

impl JsonLines {
    pub fn new(epoch: Option<&str>) -> JsonLines {
        let tag_tail = epoch.map(|label| {
            let quoted = serde_json::to_string(label).expect("a string serializes");
            format!(",\"epoch\":{quoted}}}").into_bytes()
        });
        JsonLines { tag_tail }
    }

    /// Whether lines are the stored text unchanged.
    pub fn untagged(&self) -> bool {
        self.tag_tail.is_none()
    }

    /// Append the line for `json` (with its newline) to `out`, or say why
    /// the row has none; `out` is unchanged then.
    pub fn push(&self, json: &[u8], out: &mut Vec<u8>) -> Result<(), NotALine> {
        check(json)?;
        match &self.tag_tail {
            None => out.extend_from_slice(json),
            Some(tail) => {
                let body = &json[..json.len() - 1];
                out.extend_from_slice(body);
                // `{}` has no member for the tag to follow.
                let tail = if body.trim_ascii() == b"{" {
                    &tail[1..]
                } else {
                    tail
                };
                out.extend_from_slice(tail);
            }
        }
        out.push(b'\n');
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(epoch: Option<&str>, json: &str) -> Result<String, NotALine> {
        let mut out = Vec::new();
        JsonLines::new(epoch).push(json.as_bytes(), &mut out)?;
        Ok(String::from_utf8(out).unwrap())
    }

    #[test]
    fn rows_are_copied_and_tagged_last() {
        assert_eq!(line(None, r#"{"a":1}"#).unwrap(), "{\"a\":1}\n");
        assert_eq!(
            line(Some("gen_1"), r#"{"a":1}"#).unwrap(),
            "{\"a\":1,\"epoch\":\"gen_1\"}\n"
        );
        assert_eq!(line(Some("live"), "{}").unwrap(), "{\"epoch\":\"live\"}\n");
        assert_eq!(line(None, r#"{"a":1"#), Err(NotALine));
        assert_eq!(line(None, "[1]"), Err(NotALine));
        assert_eq!(line(None, "{\"a\":\n1}"), Err(NotALine), "two lines");
        assert_eq!(line(None, " {}"), Err(NotALine));
    }
}
