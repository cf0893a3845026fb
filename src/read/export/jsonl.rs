//! JSON lines: each event row's stored text is its line.
//!
//! The ledger keeps every event as its canonical serde_json text (append
//! refuses any other), so the stored text *is* the line an export writes;
//! copying it avoids a parse and a re-serialisation per row. A row is only
//! checked to be a JSON object. When rows carry their epoch, the tag goes
//! last: `,"epoch":"<label>"` before the closing brace.

use super::json_syntax::is_json;

/// Why a row's text cannot be a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NotAnObject;

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

    /// Append the line for `json` (with its newline) to `out`, or say why
    /// the row has none; `out` is unchanged then.
    pub fn push(&self, json: &[u8], out: &mut Vec<u8>) -> Result<(), NotAnObject> {
        let text = json.trim_ascii();
        if text.first() != Some(&b'{') || !is_json(text) {
            return Err(NotAnObject);
        }
        match &self.tag_tail {
            None => out.extend_from_slice(text),
            Some(tail) => {
                let body = &text[..text.len() - 1];
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

    fn line(epoch: Option<&str>, json: &str) -> Result<String, NotAnObject> {
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
        assert_eq!(line(None, r#"{"a":1"#), Err(NotAnObject));
        assert_eq!(line(None, "[1]"), Err(NotAnObject));
    }
}
