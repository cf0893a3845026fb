//! A `harnery.record` chunk, read: its header, then each line in the
//! dialect of the agent whose record it is. Also the one place that picks
//! an agent's record reader by adapter.

use super::payload::{LineAt, RecordChunk, RecordChunkHeader};
use crate::agents;
use crate::agents::record::place::LINE_CEILING;
use crate::agents::record::{LineMark, RecordLine};
use crate::contract::{AdapterId, RecordAt};

/// Read one line of `adapter`'s record (without its newline); `at` is
/// where it starts.
pub fn read_line(adapter: AdapterId, line: &[u8], at: &RecordAt) -> RecordLine {
    agents::agent(adapter).read_marked(line, at).0
}

/// The session a line of `adapter`'s record says it belongs to, when it
/// says one (see each agent's `record::line_session`).
pub(crate) fn line_session(adapter: AdapterId, line: &[u8]) -> Option<String> {
    agents::agent(adapter).line_session(line)
}

/// What a line of `adapter`'s record with type `kind` is to a turn's end
/// (see each agent's `record::line_mark`).
pub(crate) fn line_mark(adapter: AdapterId, kind: &str) -> LineMark {
    agents::agent(adapter).line_mark(kind)
}

/// Read one line as [`read_line`] does, with the session it names (see
/// each agent's `record::line_session`; Claude Code's is found by the same
/// parse) and what it is to a turn's end.
fn read_named(
    adapter: AdapterId,
    line: &[u8],
    at: &RecordAt,
) -> (RecordLine, Option<String>, LineMark) {
    match agents::agent(adapter).read_marked(line, at) {
        (read, Some(named), mark) => (read, named, mark),
        (read, None, mark) => (read, line_session(adapter, line), mark),
    }
}

/// Split a `harnery.record` payload into its header and lines, each read
/// in `adapter`'s dialect. A last line without its newline is read too
/// (the finalizer only sends whole lines, so it is whole). A line naming
/// another session than `session` is refused, not read.
pub(crate) fn record_chunk(
    adapter: AdapterId,
    session: Option<&str>,
    payload: &[u8],
) -> Result<RecordChunk, String> {
    let cut = memchr::memchr(b'\n', payload).ok_or("record_without_header")?;
    let header: RecordChunkHeader = serde_json::from_slice(&payload[..cut])
        .map_err(|e| format!("malformed_record_header: {e}"))?;
    let bytes = &payload[cut + 1..];
    let mut chunk = RecordChunk {
        lines: Vec::new(),
        foreign: Vec::new(),
        header,
    };
    let header = &chunk.header;
    if header.oversized_line {
        let len = header.end.checked_sub(header.start);
        if len.is_none_or(|len| len < bytes.len() as u64) {
            return Err("record_length_mismatch".into());
        }
        let reason = format!(
            "a line of {} bytes, longer than the {} byte line ceiling: not read (its first {} \
             bytes are kept)",
            len.unwrap_or_default(),
            LINE_CEILING,
            bytes.len()
        );
        let at = LineAt {
            offset: header.start,
            bytes: u32::try_from(len.unwrap_or_default()).unwrap_or(u32::MAX),
            mark: LineMark::None,
        };
        chunk.lines.push((at, RecordLine::unrecognized(reason)));
        return Ok(chunk);
    }
    if header.end.checked_sub(header.start) != Some(bytes.len() as u64) {
        return Err("record_length_mismatch".into());
    }
    let mut at = 0usize;
    while at < bytes.len() {
        let end = memchr::memchr(b'\n', &bytes[at..]).map_or(bytes.len(), |n| at + n);
        let offset = header.start + at as u64;
        let line = &bytes[at..end];
        // Its length, its newline included.
        let len = end.min(bytes.len() - 1) + 1 - at;
        at = end + 1;
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let place = RecordAt {
            path: header.path.clone(),
            offset,
        };
        let (read, named, mark) = read_named(adapter, line, &place);
        let named = named.filter(|_| session.is_some());
        if let Some(other) = named.filter(|named| Some(named.as_str()) != session) {
            chunk.foreign.push((offset, other));
        } else {
            let line_at = LineAt {
                offset,
                // A line is far below 4 GiB (the line ceiling).
                bytes: u32::try_from(len).unwrap_or(u32::MAX),
                mark,
            };
            chunk.lines.push((line_at, read));
        }
    }
    Ok(chunk)
}
