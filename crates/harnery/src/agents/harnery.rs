//! harnery's own signals. `harnery end` and `harnery exec` write them into
//! a session's intake spool like any hook would, under either adapter, so
//! they travel the same road (spool → seal → producer) and are ordered with
//! the agent's signals.
//!
//! Event names and payloads (JSON objects; unknown fields are ignored so
//! that a newer writer does not break an older finalizer):
//!
//! - `harnery.end_requested`: `{"reason": "text"?}`. An operator's explicit
//!   end request for the session.
//! - `harnery.command_requested`: `{"command_id": "id", "argv": ["cmd",
//!   "arg"], "cwd": "/path"?, "pid": 123?}`. Written by `harnery exec`
//!   *before* it spawns the command, so a killed exec never loses the
//!   request. `command_id` is unique per exec run (a UUID).
//! - `harnery.command_completed`: `{"command_id": "id", "exit_code": 0?,
//!   "signal": 9?, "duration_ms": 12?}`. Written after the command exits;
//!   `exit_code` when it exited, `signal` when a signal ended it.
//!
//! - `harnery.record`: a run of whole lines of the agent's own record of
//!   the session, as the finalizer read them. The payload is one JSON
//!   header line, `{"path": "/abs/file", "start": 0, "end": 1234,
//!   "fingerprint": "hex"}`, a newline, then the record's bytes
//!   `start..end` exactly as the file held them (so the raw archive keeps
//!   them). `fingerprint` is the blake3 of the last (at most
//!   [`FINGERPRINT_LEN`]) bytes before `end`: the next read checks it to
//!   notice a record rewritten under its cursor.
//! - `harnery.record_problem`: `{"path": "/abs/file", "kind": "missing",
//!   "detail": "text"}`. The record could not be followed (`missing`,
//!   `unreadable`, `rewritten`, `truncated`).
//!
//! - `harnery.checkpoint`: `{"checkpoint_id": "id", "commit": "sha"?,
//!   "effects": [{"kind": "k", "ref": "r"}]?}`. Written by `harnery
//!   checkpoint`: pin a checkpoint at the session's offset when it is
//!   applied (contract generation 3).
//! - `harnery.restore`: `{"checkpoint_id": "id", "boundary_offset": 12}`.
//!   Written by `harnery restore`: the events below `boundary_offset` were
//!   handed to a fresh incarnation; the session's next native activity
//!   resumes it from there.
//!
//! Times are the envelope's receive time; harnery's own signals carry none
//! (record lines carry the agent's own timestamps where it wrote them).

use serde::Deserialize;

use super::record::place::LINE_CEILING;
use super::record::{self, RecordLine};
use super::signal::{CommandResult, Normalized, SignalKind};
use crate::contract::{
    AdapterId, CommandRequested, RecordAt, RecordProblem, SignalUnrecognized, TimeSource,
};

pub const END_REQUESTED: &str = "harnery.end_requested";
pub const COMMAND_REQUESTED: &str = "harnery.command_requested";
pub const COMMAND_COMPLETED: &str = "harnery.command_completed";
pub const RECORD: &str = "harnery.record";
pub const RECORD_PROBLEM: &str = "harnery.record_problem";
pub const CHECKPOINT: &str = "harnery.checkpoint";
pub const RESTORE: &str = "harnery.restore";

/// How many bytes before a record cursor its fingerprint covers.
pub const FINGERPRINT_LEN: u64 = 4096;

/// The header line of a `harnery.record` payload.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, Deserialize)]
pub struct RecordChunkHeader {
    pub path: String,
    pub start: u64,
    pub end: u64,
    pub fingerprint: String,
    /// The chunk reaches the end the file had when it was read (a
    /// subagent's record, read after the subagent stopped, is then done).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub at_end: bool,
    /// The chunk is one line longer than the line ceiling, `end - start`
    /// bytes: only its first bytes are carried (as evidence), and it reads
    /// as one unrecognized line.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub oversized_line: bool,
}

/// A `harnery.record` signal, read: its header and each whole line with
/// the byte offset it starts at.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordChunk {
    pub header: RecordChunkHeader,
    pub lines: Vec<(u64, RecordLine)>,
    /// Lines that name another session than the one the chunk was spooled
    /// for (offset, the session named): refused, not read.
    pub foreign: Vec<(u64, String)>,
}

/// A `harnery.record` payload: the header line, then the bytes.
pub fn record_payload(header: &RecordChunkHeader, bytes: &[u8]) -> Vec<u8> {
    let mut out = serde_json::to_vec(header).expect("the header is plain JSON");
    out.push(b'\n');
    out.extend_from_slice(bytes);
    out
}

/// Whether an event name belongs to harnery rather than an agent.
pub fn is_harnery_event(event_name: &str) -> bool {
    event_name.starts_with("harnery.")
}

/// `harnery.end_requested`.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, Deserialize)]
pub struct EndRequestPayload {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// One operator effect of a `harnery.checkpoint` (`--effect KIND:REF`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, Deserialize)]
pub struct OperatorEffect {
    pub kind: String,
    #[serde(rename = "ref")]
    pub reference: String,
}

/// `harnery.checkpoint`.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, Deserialize)]
pub struct CheckpointPayload {
    pub checkpoint_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub effects: Vec<OperatorEffect>,
}

/// `harnery.restore`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, Deserialize)]
pub struct RestorePayload {
    pub checkpoint_id: String,
    pub boundary_offset: u64,
}

/// `harnery.command_requested`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, Deserialize)]
pub struct CommandRequestPayload {
    pub command_id: String,
    pub argv: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
}

/// `harnery.command_completed`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, Deserialize)]
pub struct CommandCompletionPayload {
    pub command_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
}

/// Read one of harnery's own signals (`adapter`'s dialect for the lines of
/// a record).
pub fn normalize(
    adapter: AdapterId,
    event_name: &str,
    payload: &[u8],
    received_unix_ns: i64,
) -> Normalized {
    normalize_in(adapter, None, event_name, payload, received_unix_ns)
}

/// [`normalize`] for a signal spooled for `session`: the lines of a
/// record that name another session are refused (`RecordChunk::foreign`).
pub fn normalize_in(
    adapter: AdapterId,
    session: Option<&str>,
    event_name: &str,
    payload: &[u8],
    received_unix_ns: i64,
) -> Normalized {
    let kind = match kind_of(adapter, session, event_name, payload) {
        Ok(kind) => kind,
        Err(reason) => SignalKind::Unrecognized(SignalUnrecognized {
            adapter_event: Some(event_name.to_string()),
            reason,
            record: None,
        }),
    };
    Normalized {
        time_unix_ns: received_unix_ns,
        time_source: TimeSource::Received,
        agent_id: None,
        native_turn_id: None,
        delivery_key: None,
        kind,
    }
}

fn kind_of(
    adapter: AdapterId,
    session: Option<&str>,
    event_name: &str,
    payload: &[u8],
) -> Result<SignalKind, String> {
    let malformed = |err: serde_json::Error| format!("malformed_json: {err}");
    match event_name {
        RECORD => {
            record_chunk(adapter, session, payload).map(|c| SignalKind::RecordChunk(Box::new(c)))
        }
        RECORD_PROBLEM => {
            let problem: RecordProblem = serde_json::from_slice(payload).map_err(malformed)?;
            Ok(SignalKind::RecordProblem(problem))
        }
        CHECKPOINT => {
            let cp: CheckpointPayload = serde_json::from_slice(payload).map_err(malformed)?;
            Ok(SignalKind::CheckpointRequested(cp))
        }
        RESTORE => {
            let restore: RestorePayload = serde_json::from_slice(payload).map_err(malformed)?;
            Ok(SignalKind::RestoreRequested(restore))
        }
        END_REQUESTED => {
            let end: EndRequestPayload = serde_json::from_slice(payload).map_err(malformed)?;
            Ok(SignalKind::EndRequested { reason: end.reason })
        }
        COMMAND_REQUESTED => {
            let cmd: CommandRequestPayload = serde_json::from_slice(payload).map_err(malformed)?;
            Ok(SignalKind::CommandRequested {
                command_id: cmd.command_id,
                request: CommandRequested {
                    argv: cmd.argv,
                    cwd: cmd.cwd,
                    pid: cmd.pid,
                },
            })
        }
        COMMAND_COMPLETED => {
            let done: CommandCompletionPayload =
                serde_json::from_slice(payload).map_err(malformed)?;
            Ok(SignalKind::CommandCompleted(CommandResult {
                command_id: done.command_id,
                exit_code: done.exit_code,
                signal: done.signal,
                duration_ms: done.duration_ms,
            }))
        }
        _ => Err("unknown_event".to_string()),
    }
}

/// Split a `harnery.record` payload into its header and lines, each read
/// in `adapter`'s dialect. A last line without its newline is read too
/// (the finalizer only sends whole lines, so it is whole). A line naming
/// another session than `session` is refused, not read.
fn record_chunk(
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
        chunk
            .lines
            .push((header.start, RecordLine::unrecognized(reason)));
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
        let named = session.and_then(|_| record::place::line_session(adapter, line));
        if let Some(other) = named.filter(|named| Some(named.as_str()) != session) {
            chunk.foreign.push((offset, other));
        } else if !line.iter().all(u8::is_ascii_whitespace) {
            let place = RecordAt {
                path: header.path.clone(),
                offset,
            };
            chunk
                .lines
                .push((offset, record::read_line(adapter, line, &place)));
        }
        at = end + 1;
    }
    Ok(chunk)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_payloads_round_trip() {
        let req = CommandRequestPayload {
            command_id: "c1".into(),
            argv: vec!["true".into()],
            cwd: None,
            pid: Some(4),
        };
        let bytes = serde_json::to_vec(&req).expect("serializable");
        let n = normalize(AdapterId::ClaudeCode, COMMAND_REQUESTED, &bytes, 5);
        assert!(
            matches!(n.kind, SignalKind::CommandRequested { ref command_id, .. } if command_id == "c1")
        );
        let end = normalize(
            AdapterId::ClaudeCode,
            END_REQUESTED,
            br#"{"reason":"done"}"#,
            5,
        );
        assert_eq!(
            end.kind,
            SignalKind::EndRequested {
                reason: Some("done".into())
            }
        );
    }

    #[test]
    fn a_bad_own_payload_is_unrecognized_not_dropped() {
        let n = normalize(
            AdapterId::ClaudeCode,
            COMMAND_COMPLETED,
            br#"{"exit_code":0}"#,
            5,
        );
        assert!(matches!(n.kind, SignalKind::Unrecognized(_)));
        assert!(matches!(
            normalize(AdapterId::ClaudeCode, "harnery.other", b"{}", 5).kind,
            SignalKind::Unrecognized(_)
        ));
    }

    #[test]
    fn a_record_chunk_splits_into_lines_at_their_offsets() {
        let header = RecordChunkHeader {
            path: "/r.jsonl".into(),
            start: 100,
            end: 100 + 12,
            fingerprint: "f".into(),
            at_end: false,
            oversized_line: false,
        };
        let payload = record_payload(&header, b"not json\n\n{\n");
        let SignalKind::RecordChunk(chunk) =
            normalize(AdapterId::Copilot, RECORD, &payload, 5).kind
        else {
            panic!("a record chunk");
        };
        let offsets: Vec<u64> = chunk.lines.iter().map(|(at, _)| *at).collect();
        assert_eq!(offsets, [100, 110], "blank lines are skipped");
        let short = record_payload(&header, b"abc\n");
        let kind = normalize(AdapterId::Copilot, RECORD, &short, 5).kind;
        assert!(
            matches!(&kind, SignalKind::Unrecognized(u) if u.reason == "record_length_mismatch"),
            "{kind:?}"
        );
        let problem = br#"{"path":"/r","kind":"missing","detail":"gone"}"#;
        let kind = normalize(AdapterId::Copilot, RECORD_PROBLEM, problem, 5).kind;
        assert!(matches!(kind, SignalKind::RecordProblem(p) if p.kind == "missing"));
    }
}
