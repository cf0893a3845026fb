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
//! Times are the envelope's receive time; harnery's own signals carry none.

use serde::Deserialize;

use super::signal::{CommandResult, Normalized, SignalKind};
use crate::contract::{CommandRequested, SignalUnrecognized, TimeSource};

pub const END_REQUESTED: &str = "harnery.end_requested";
pub const COMMAND_REQUESTED: &str = "harnery.command_requested";
pub const COMMAND_COMPLETED: &str = "harnery.command_completed";

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

/// Read one of harnery's own signals.
pub fn normalize(event_name: &str, payload: &[u8], received_unix_ns: i64) -> Normalized {
    let kind = match kind_of(event_name, payload) {
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

fn kind_of(event_name: &str, payload: &[u8]) -> Result<SignalKind, String> {
    let malformed = |err: serde_json::Error| format!("malformed_json: {err}");
    match event_name {
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
        let n = normalize(COMMAND_REQUESTED, &bytes, 5);
        assert!(
            matches!(n.kind, SignalKind::CommandRequested { ref command_id, .. } if command_id == "c1")
        );
        let end = normalize(END_REQUESTED, br#"{"reason":"done"}"#, 5);
        assert_eq!(
            end.kind,
            SignalKind::EndRequested {
                reason: Some("done".into())
            }
        );
    }

    #[test]
    fn a_bad_own_payload_is_unrecognized_not_dropped() {
        let n = normalize(COMMAND_COMPLETED, br#"{"exit_code":0}"#, 5);
        assert!(matches!(n.kind, SignalKind::Unrecognized(_)));
        assert!(matches!(
            normalize("harnery.other", b"{}", 5).kind,
            SignalKind::Unrecognized(_)
        ));
    }
}
