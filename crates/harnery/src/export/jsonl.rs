//! JSON lines: each event row's stored text is its line.
//!
//! The ledger keeps every event as its canonical serde_json text (append
//! refuses any other), so the stored text *is* the line an export writes;
//! copying it avoids a re-serialisation per row. A row is only checked to
//! be one JSON object on one line (serde_json, building nothing): a row
//! changed behind the ledger's back (the hash chain says so to `verify`,
//! not to an export) is named on stderr and left out, so that every line
//! of an export is JSON. When rows carry their epoch, the tag goes last:
//! `,"epoch":"<label>"` before the closing brace.
//!
//! [`write`](fn@write) runs the whole export: the reading thread batches rows, the
//! workers check them, the writer puts the lines out in chain order.

use std::io::Write;

use serde::de::IgnoredAny;

use super::ExportError;
use super::rows::RowBatch;
use super::source::{Label, Out, Source, damaged, each_source, finish_sink, report};
use crate::ledger::LedgerError;
use crate::ordered::{Feed, run_ordered, workers};
use crate::progress::Progress;
use crate::report::epochs::Epochs;

/// Bytes of stored text per JSON lines job.
const BATCH_BYTES: usize = 256 * 1024;

/// Why a row's text cannot be a line: not JSON, not an object, or not on
/// one line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct NotALine;

/// Whether `json` can be written as a line as it is: one JSON object (in
/// UTF-8, as JSON text is), with no line feed (a string cannot hold a raw
/// one, so only whitespace could).
pub(crate) fn check(json: &[u8]) -> Result<(), NotALine> {
    let framed = json.first() == Some(&b'{') && json.last() == Some(&b'}');
    let one_line = memchr::memchr(b'\n', json).is_none();
    let parses = || {
        std::str::from_utf8(json).is_ok_and(|text| serde_json::from_str::<IgnoredAny>(text).is_ok())
    };
    if framed && one_line && parses() {
        Ok(())
    } else {
        Err(NotALine)
    }
}

/// Writes rows as lines, each tagged with one epoch label or none.
pub(crate) struct JsonLines {
    /// `,"epoch":"<label>"}`, ready to close each line.
    tag_tail: Option<Vec<u8>>,
}

impl JsonLines {
    pub(crate) fn new(epoch: Option<&str>) -> JsonLines {
        let tag_tail = epoch.map(|label| {
            let quoted = serde_json::to_string(label).expect("a string serializes");
            format!(",\"epoch\":{quoted}}}").into_bytes()
        });
        JsonLines { tag_tail }
    }

    /// Whether lines are the stored text unchanged.
    pub(crate) fn untagged(&self) -> bool {
        self.tag_tail.is_none()
    }

    /// Append the line for `json` (with its newline) to `out`, or say why
    /// the row has none; `out` is unchanged then.
    pub(crate) fn push(&self, json: &[u8], out: &mut Vec<u8>) -> Result<(), NotALine> {
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

/// Lines ready to write, and what was left out.
struct Lines {
    bytes: Vec<u8>,
    problems: Vec<String>,
}

type LineSink = (Out, usize);

/// Write every row of `sources` as a line to `out`, in chain order (in
/// offset order for one session). Returns how many rows were left out.
pub fn write(
    epochs: &Epochs,
    sources: &[Source<'_>],
    out: Out,
    progress: &Progress,
) -> Result<usize, ExportError> {
    let labels = Label::all(epochs, sources);
    let writers: Vec<JsonLines> = labels
        .iter()
        .map(|l| JsonLines::new(l.tag.as_deref()))
        .collect();
    let produce = |feed: &mut Feed<RowBatch>| {
        each_source(epochs, sources, |i, source| {
            let mut batch = RowBatch::new(i, BATCH_BYTES);
            let mut open = true;
            source
                .epoch
                .ledger
                .events()
                .for_each_stored_text(&source.filter, |row| {
                    if open {
                        progress.add(1);
                        batch.add(row);
                        if batch.text.len() >= BATCH_BYTES {
                            open = feed
                                .send(std::mem::replace(&mut batch, RowBatch::new(i, BATCH_BYTES)));
                        }
                    }
                    Ok::<_, LedgerError>(())
                })?;
            Ok(open && feed.send(batch))
        })
    };
    let work = |batch: RowBatch| lines_of(&writers[batch.source], &labels[batch.source], batch);
    let (made, written) = run_ordered(workers(), 8, produce, work, (out, 0), write_lines);
    let (mut out, damaged): LineSink = finish_sink(made, written)?;
    out.flush()?;
    Ok(damaged)
}

/// A batch's lines. Untagged and sound, the batch's own text is the
/// output; otherwise lines are built row by row.
fn lines_of(writer: &JsonLines, label: &Label, batch: RowBatch) -> Lines {
    let sound = |text: &[u8]| check(text).is_ok();
    if writer.untagged() && batch.each().all(|(_, _, text)| sound(text)) {
        return Lines {
            bytes: batch.text,
            problems: Vec::new(),
        };
    }
    let mut lines = Lines {
        bytes: Vec::with_capacity(batch.text.len() + batch.len() * 32),
        problems: Vec::new(),
    };
    for (seq, id, text) in batch.each() {
        if writer.push(text, &mut lines.bytes).is_err() {
            let id = String::from_utf8_lossy(id);
            let what = "is not a JSON object on one line; left out";
            lines.problems.push(damaged(label, seq, Some(&id), what));
        }
    }
    lines
}

fn write_lines(sink: &mut LineSink, lines: Lines) -> std::io::Result<()> {
    report(&mut sink.1, &lines.problems);
    sink.0.write_all(&lines.bytes)
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

    #[test]
    fn only_one_json_object_in_utf8_on_one_line_is_a_line() {
        for good in [
            r#"{}"#,
            r#"{"a":[1,-2.5e3,true,null,{"b":"\u00e9\n"}]}"#,
            "{ \"a\" : 1 }",
            "{\"s\":\"\u{e9}\u{2603}\"}",
        ] {
            assert_eq!(check(good.as_bytes()), Ok(()), "{good}");
        }
        for bad in [
            &b"{\"a\":1,}"[..],
            b"{\"a\":01}",
            b"{\"a\":\"\x01\"}",
            b"{\"a\":\"\\q\"}",
            b"{\"a\":1}{}",
            b"{\"a\":\"\xff\"}",
            b"{\"a\":\r\n1}",
            b"{\"a\":1} ",
        ] {
            assert_eq!(
                check(bad),
                Err(NotALine),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
    }
}
