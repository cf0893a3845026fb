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
//! - `harnery.import`: `{"path": "/abs/file", "bytes": 1234,
//!   "modified_unix_ns": 1, "subagents": [{"agent_id": "a", "path":
//!   "/abs/agent-a.jsonl"}]?}`. Written by `harnery import` for a session
//!   no hook showed harnery: the session is read from the agent's record
//!   at `path` (generation 10: `session.imported`, evidence class
//!   `imported`).
//!
//! - `harnery.title`: a `session.titled` payload (`{"title": …, "field":
//!   "name", "user_named": false, "path": "/…/workspace.yaml"}`). Written
//!   by the finalizer when the title the agent keeps beside its record
//!   (Copilot's `workspace.yaml`) is not the one the session last took
//!   (generation 11).
//!
//! Times are the envelope's receive time; harnery's own signals carry none
//! (record lines carry the agent's own timestamps where it wrote them).

pub mod chunk;
pub(crate) mod payload;

pub use payload::*;

use self::chunk::record_chunk;
use super::signal::{CommandResult, Imported, Normalized, SignalKind};
use crate::contract::{AdapterId, CommandRequested, RecordProblem, SignalUnrecognized, TimeSource};

#[cfg(test)]
/// Read one of harnery's own signals (`adapter`'s dialect for the lines of
/// a record).
pub(crate) fn normalize(
    adapter: AdapterId,
    event_name: &str,
    payload: &[u8],
    received_unix_ns: i64,
) -> Normalized {
    normalize_in(adapter, None, event_name, payload, received_unix_ns)
}

/// `normalize` for a signal spooled for `session`: the lines of a
/// record that name another session are refused (`RecordChunk::foreign`).
pub(crate) fn normalize_in(
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
        IMPORT => {
            let import: ImportPayload = serde_json::from_slice(payload).map_err(malformed)?;
            let subagents = import.subagents.into_iter();
            Ok(SignalKind::Imported(Box::new(Imported {
                session: crate::contract::SessionImported {
                    path: import.path,
                    bytes: import.bytes,
                    modified_unix_ns: import.modified_unix_ns,
                },
                subagents: subagents.map(|s| (s.agent_id, s.path)).collect(),
            })))
        }
        TITLE => {
            let titled = serde_json::from_slice(payload).map_err(malformed)?;
            Ok(SignalKind::Titled(titled))
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
            seen: None,
        };
        let payload = record_payload(&header, b"not json\n\n{\n");
        let SignalKind::RecordChunk(chunk) =
            normalize(AdapterId::Copilot, RECORD, &payload, 5).kind
        else {
            panic!("a record chunk");
        };
        let offsets: Vec<u64> = chunk.lines.iter().map(|(at, _)| at.offset).collect();
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
