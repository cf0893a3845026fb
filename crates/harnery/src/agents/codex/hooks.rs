//! Codex's hook dialect, as Codex CLI 0.169.0 sends it: snake_case
//! payloads that name their event in `hook_event_name`, the native turn id
//! `turn_id` on every event of a turn, the call id `tool_use_id` on
//! `PreToolUse` and `PostToolUse` (the same id as the rollout's `call_id`),
//! and no timestamp at all (the hook's receive time stands in).
//!
//! What Codex does not send: an exit code, a duration or a failure flag on
//! `PostToolUse` (a command that fails is a `PostToolUse` whose
//! `tool_response` is its output; the rollout has the exit code, and the
//! span's outcome is judged from it); a `PostToolUseFailure` or
//! `StopFailure` event; anything after a SIGKILL. `PreModelRequest` (one
//! per model request, naming the model) is a `hook.observed`: it fired,
//! and says no more than that.
//!
//! Stateless: one payload in, one [`Normalized`] out. The wire struct
//! mirrors the JSON; [`convert`] is the one place that turns it into
//! harnery's terms.

use std::borrow::Cow;

use serde::Deserialize;

use crate::agents::record::{NamedRecord, names_camel_record};
use crate::agents::signal::{Normalized, SignalKind, ToolCall, ToolResult, TurnEnd};
use crate::agents::wire::{normalize_input, optional_str, owned, parse_payload, raw_json};
use crate::contract::{
    CompactionCompleted, CompactionStarted, HookObserved, Json, Outcome, Payload,
    PermissionRequested, PromptSubmitted, SessionEnded, SessionStarted, TimeSource,
};

/// Codex CLI 0.169.0's hook events (its `hooks/list` names these twelve).
pub(crate) const EVENTS: [&str; 12] = [
    "SessionStart",
    "UserPromptSubmit",
    "PreModelRequest",
    "PreToolUse",
    "PermissionRequest",
    "PostToolUse",
    "PreCompact",
    "PostCompact",
    "Stop",
    "SubagentStart",
    "SubagentStop",
    "SessionEnd",
];

/// One Codex hook payload, as sent. Unknown fields are ignored: the raw
/// bytes are kept in the spool anyway.
#[derive(Debug, Deserialize)]
struct Wire<'a> {
    #[serde(default, borrow, deserialize_with = "optional_str")]
    hook_event_name: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "optional_str")]
    turn_id: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "optional_str")]
    agent_id: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "optional_str")]
    agent_type: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "optional_str")]
    source: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "optional_str")]
    cwd: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "optional_str")]
    model: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "optional_str")]
    transcript_path: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "optional_str")]
    prompt: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "optional_str")]
    tool_name: Option<Cow<'a, str>>,
    #[serde(default, deserialize_with = "raw_json")]
    tool_input: Option<Json>,
    #[serde(default, deserialize_with = "raw_json")]
    tool_response: Option<Json>,
    #[serde(default, borrow, deserialize_with = "optional_str")]
    tool_use_id: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "optional_str")]
    reason: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "optional_str")]
    trigger: Option<Cow<'a, str>>,
}

/// Read one Codex payload received at `received_unix_ns`; with `record`,
/// also the rollout it names (`transcript_path`, on every event).
pub(crate) fn normalize_naming(
    payload: &[u8],
    received_unix_ns: i64,
    record: bool,
) -> (Normalized, NamedRecord) {
    match parse_payload::<Wire>(payload) {
        Ok(wire) => {
            let named = if record && !names_camel_record(payload) {
                let path = wire.transcript_path.as_deref().filter(|p| !p.is_empty());
                NamedRecord::Read(path.map(String::from))
            } else {
                NamedRecord::Unread
            };
            (convert(wire, received_unix_ns), named)
        }
        Err(err) => (
            received(SignalKind::malformed(None, &err), None, received_unix_ns),
            NamedRecord::Unread,
        ),
    }
}

fn received(kind: SignalKind, turn: Option<String>, received_unix_ns: i64) -> Normalized {
    Normalized {
        time_unix_ns: received_unix_ns,
        time_source: TimeSource::Received,
        agent_id: None,
        native_turn_id: turn,
        delivery_key: None,
        kind,
    }
}

/// The one conversion from the wire into harnery's terms. A subagent's
/// own hooks come in its parent's session with its `agent_id` (its thread
/// id); its start and stop are spoken by the parent about it.
fn convert(mut wire: Wire, received_unix_ns: i64) -> Normalized {
    let name = wire.hook_event_name.take();
    let event = name.as_deref().unwrap_or("");
    let about_agent = matches!(event, "SubagentStart" | "SubagentStop");
    let kind = kind_of(event, &mut wire);
    let mut normalized = received(kind, owned(&wire.turn_id), received_unix_ns);
    if !about_agent {
        normalized.agent_id = owned(&wire.agent_id);
    }
    normalized
}

fn kind_of(event: &str, wire: &mut Wire) -> SignalKind {
    match event {
        "SessionStart" => SignalKind::SessionStarted(SessionStarted {
            source: owned(&wire.source),
            cwd: owned(&wire.cwd),
            model: owned(&wire.model),
            transcript_path: owned(&wire.transcript_path),
        }),
        "SessionEnd" => SignalKind::SessionEnded(SessionEnded {
            reason: owned(&wire.reason),
        }),
        "UserPromptSubmit" => SignalKind::PromptSubmitted(PromptSubmitted {
            prompt: owned(&wire.prompt),
            transformed: false,
        }),
        "Stop" => SignalKind::TurnEnded(TurnEnd {
            stop_reason: Some("stop".to_string()),
            running_agents: Vec::new(),
        }),
        "PreToolUse" => tool_call(wire).map_or_else(
            || SignalKind::unrecognized(event, "tool event without tool_name"),
            SignalKind::ToolRequested,
        ),
        "PostToolUse" => tool_result(wire).map_or_else(
            || SignalKind::unrecognized(event, "tool event without tool_name"),
            SignalKind::ToolCompleted,
        ),
        "SubagentStart" | "SubagentStop" => subagent(event, wire),
        _ => lifecycle(event, wire),
    }
}

fn lifecycle(event: &str, wire: &mut Wire) -> SignalKind {
    let payload = match event {
        "PermissionRequest" => match &wire.tool_name {
            Some(tool) => Payload::PermissionRequested(PermissionRequested {
                tool_name: tool.to_string(),
                input: wire.tool_input.take().map(normalize_input),
            }),
            None => return SignalKind::unrecognized(event, "permission request without tool_name"),
        },
        "PreCompact" => Payload::CompactionStarted(CompactionStarted {
            trigger: owned(&wire.trigger),
        }),
        "PostCompact" => Payload::CompactionCompleted(CompactionCompleted {
            trigger: owned(&wire.trigger),
            summary: None,
        }),
        "PreModelRequest" => Payload::HookObserved(HookObserved {
            event: event.to_string(),
            model: owned(&wire.model),
            detail: None,
        }),
        "" => return SignalKind::unrecognized(event, "no hook_event_name"),
        _ => return SignalKind::unrecognized(event, "unknown_event"),
    };
    SignalKind::Lifecycle(payload)
}

fn tool_call(wire: &mut Wire) -> Option<ToolCall> {
    Some(ToolCall {
        call_id: owned(&wire.tool_use_id),
        tool_name: wire.tool_name.as_ref()?.to_string(),
        input: wire.tool_input.take().map(normalize_input),
    })
}

/// A `PostToolUse`: the tool ran and answered. Codex says nothing of how
/// it went, so the outcome is `success` until the rollout's exit code
/// judges it (see `Outcome::judged`), as for Copilot's shell results.
fn tool_result(wire: &mut Wire) -> Option<ToolResult> {
    Some(ToolResult {
        call: tool_call(wire)?,
        outcome: Outcome::Success,
        duration_ms: None,
        exit_code: None,
        error: None,
        content: wire.tool_response.take(),
    })
}

fn subagent(event: &str, wire: &Wire) -> SignalKind {
    SignalKind::subagent(event, owned(&wire.agent_id), owned(&wire.agent_type))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agents::codex::fixture;

    fn read(payload: &str) -> Normalized {
        normalize_naming(payload.as_bytes(), 7, false).0
    }

    #[test]
    fn every_captured_payload_reads_as_what_it_is() {
        for scenario in fixture::SCENARIOS {
            for (event, payload) in fixture::hooks(scenario) {
                let n = read(&payload);
                match (&n.kind, event.as_str()) {
                    (SignalKind::Lifecycle(Payload::HookObserved(h)), "PreModelRequest") => {
                        assert_eq!(h.event, "PreModelRequest");
                        assert_eq!(h.model.as_deref(), Some("gpt-5.1-codex"));
                    }
                    (SignalKind::Unrecognized(u), _) => panic!("{scenario} {event}: {u:?}"),
                    (_, "PreModelRequest") => panic!("{scenario}: {:?}", n.kind),
                    _ => {}
                }
                assert_eq!(n.time_source, TimeSource::Received);
                let named = normalize_naming(payload.as_bytes(), 7, true).1;
                assert!(matches!(named, NamedRecord::Read(Some(ref p)) if p.ends_with(".jsonl")));
            }
        }
    }

    #[test]
    fn a_shell_call_carries_its_call_id_and_turn_from_pre_to_post() {
        let hooks = fixture::hooks("fail");
        let by = |name: &str| read(&hooks.iter().find(|(e, _)| e == name).unwrap().1);
        let prompt = by("UserPromptSubmit");
        let (pre, post) = (by("PreToolUse"), by("PostToolUse"));
        let SignalKind::ToolRequested(call) = &pre.kind else {
            panic!("{pre:?}")
        };
        let SignalKind::ToolCompleted(done) = &post.kind else {
            panic!("{post:?}")
        };
        assert_eq!(call.tool_name, "Bash");
        assert!(
            call.call_id
                .as_deref()
                .is_some_and(|id| id.starts_with("call_"))
        );
        assert_eq!(done.call.call_id, call.call_id);
        assert_eq!(done.call.input_digest(), call.input_digest());
        assert_eq!(
            done.outcome,
            Outcome::Success,
            "Codex does not say; the rollout's exit code judges"
        );
        assert_eq!(done.exit_code, None);
        let output = done.content.as_ref().unwrap().as_str().to_string();
        assert!(output.contains("nonexistent-harnery"), "{output}");
        assert!(prompt.native_turn_id.is_some());
        assert_eq!(pre.native_turn_id, prompt.native_turn_id);
        assert_eq!(post.native_turn_id, prompt.native_turn_id);
    }

    #[test]
    fn a_resume_keeps_the_session_and_says_so() {
        let hooks = fixture::hooks("two-turns");
        let starts: Vec<Normalized> = hooks
            .iter()
            .filter(|(e, _)| e == "SessionStart")
            .map(|(_, p)| read(p))
            .collect();
        let sources: Vec<_> = starts
            .iter()
            .map(|n| match &n.kind {
                SignalKind::SessionStarted(s) => s.source.clone(),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(
            sources,
            [Some("startup".to_string()), Some("resume".to_string())]
        );
        let sessions: std::collections::BTreeSet<String> = hooks
            .iter()
            .map(|(_, p)| {
                serde_json::from_str::<serde_json::Value>(p).unwrap()["session_id"].to_string()
            })
            .collect();
        assert_eq!(sessions.len(), 1);
        let ends = hooks
            .iter()
            .filter(|(e, _)| e == "SessionEnd")
            .map(|(_, p)| read(p));
        for end in ends {
            assert_eq!(
                end.kind,
                SignalKind::SessionEnded(SessionEnded {
                    reason: Some("other".into())
                })
            );
        }
    }

    #[test]
    fn the_turn_ends_at_stop_and_a_killed_turn_has_none() {
        let kinds = |s: &str| -> Vec<bool> {
            fixture::hooks(s)
                .iter()
                .map(|(_, p)| matches!(read(p).kind, SignalKind::TurnEnded(_)))
                .collect()
        };
        assert_eq!(kinds("basic").iter().filter(|b| **b).count(), 1);
        assert_eq!(kinds("kill").iter().filter(|b| **b).count(), 0);
    }

    #[test]
    fn events_codex_documents_but_did_not_send_here_read_as_theirs() {
        let compact = read(
            r#"{"hook_event_name":"PreCompact","session_id":"s","turn_id":"t","trigger":"auto"}"#,
        );
        assert!(matches!(
            compact.kind,
            SignalKind::Lifecycle(Payload::CompactionStarted(_))
        ));
        let sub = read(
            r#"{"hook_event_name":"SubagentStart","session_id":"s","agent_id":"a","agent_type":"worker"}"#,
        );
        assert!(matches!(sub.kind, SignalKind::SubagentStarted(ref s) if s.agent_id == "a"));
        let ask = read(
            r#"{"hook_event_name":"PermissionRequest","session_id":"s","tool_name":"Bash","tool_input":{"command":"ls"}}"#,
        );
        assert!(matches!(
            ask.kind,
            SignalKind::Lifecycle(Payload::PermissionRequested(_))
        ));
        let bad = read("{not json");
        assert!(
            matches!(bad.kind, SignalKind::Unrecognized(ref u) if u.reason.starts_with("malformed_json"))
        );
    }
}
