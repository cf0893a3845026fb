//! Gemini CLI's hook dialect: snake_case payloads that name their event in
//! `hook_event_name` and carry `session_id`, `transcript_path`, `cwd` and
//! an ISO `timestamp` on every event (the hook's argv names the event too,
//! as `harnery install` writes it; the payload's name wins).
//!
//! | event | read as |
//! | --- | --- |
//! | `SessionStart` (`source`: startup, resume, clear) | session started |
//! | `SessionEnd` (`reason`) | session ended |
//! | `BeforeAgent` (`prompt`) | prompt: the turn starts |
//! | `AfterAgent` | the turn ends |
//! | `BeforeTool` / `AfterTool` (`tool_name`, `tool_input`, `tool_response`) | tool span |
//! | `Notification` (`notification_type`, `message`) | notification |
//! | `PreCompress` (`trigger`) | compaction started, when `manual` |
//! | `BeforeModel`, `AfterModel`, `BeforeToolSelection` (`llm_request.model`), `PreCompress` `auto` | hook observed |
//!
//! What the client does not send, and what that means here:
//!
//! - No tool-call id: a completion pairs with the oldest open request of
//!   the same tool and input digest in its session (the pairer's rule for
//!   calls without ids; `tool.completed` says `paired_by: order`). The
//!   record's `toolCalls[].id` is joined afterwards the same way.
//! - No turn id: a turn runs from `BeforeAgent` to `AfterAgent`.
//! - No exit code field, and a shell command that fails is a success to
//!   the client: its exit code is only a line `Exit Code: <n>` in the text
//!   given to the model (`tool_response.llmContent`), read here for
//!   `run_shell_command` alone.
//! - A resumed leg's `SessionStart` names a file the client opens before
//!   it takes the resumed record up again: a second file of the session,
//!   with a header and the context alone, when the minute in the name has
//!   changed since the session began. It names no record here; the leg's
//!   next hooks name the one the client goes on writing.
//! - `SessionEnd` arrives up to three times from the interactive UI (its
//!   own exit cleanup and the process's), tens of milliseconds apart, with
//!   the same reason: each is recorded; the producer's end request is the
//!   same one.
//!
//! The per-model-step events say no more than that a step happened:
//! `BeforeModel`, `BeforeToolSelection` and `AfterModel` (once per
//! streamed chunk) carry the whole conversation, which the record holds
//! already, and only their model is read; `PreCompress` fires before every
//! model step, before the client decides whether anything needs
//! compressing (it nearly never does), so with `trigger: auto` it is no
//! evidence of a compaction.

use std::borrow::Cow;

use serde::Deserialize;

use crate::agents::record::NamedRecord;
use crate::agents::signal::{Normalized, SignalKind, ToolCall, ToolResult, TurnEnd};
use crate::agents::wire::{normalize_input, optional_str, owned, parse_payload, raw_json};
use crate::contract::{
    CompactionStarted, HookObserved, Json, Notification, Outcome, Payload, PromptSubmitted,
    SessionEnded, SessionStarted, TimeSource,
};

/// The shell tool, whose output names the command's exit code.
pub(crate) const SHELL_TOOL: &str = "run_shell_command";

/// One Gemini CLI hook payload, as sent. Unknown fields are ignored (the
/// model events' `llm_request` is skipped, not built).
#[derive(Debug, Deserialize)]
struct Wire<'a> {
    #[serde(default, borrow, deserialize_with = "optional_str")]
    hook_event_name: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "optional_str")]
    timestamp: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "optional_str")]
    transcript_path: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "optional_str")]
    cwd: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "optional_str")]
    source: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "optional_str")]
    reason: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "optional_str")]
    prompt: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "optional_str")]
    tool_name: Option<Cow<'a, str>>,
    #[serde(default, deserialize_with = "raw_json")]
    tool_input: Option<Json>,
    tool_response: Option<ToolResponse>,
    #[serde(default, borrow, deserialize_with = "optional_str")]
    trigger: Option<Cow<'a, str>>,
    llm_request: Option<LlmRequest>,
    #[serde(default, borrow, deserialize_with = "optional_str")]
    notification_type: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "optional_str")]
    message: Option<Cow<'a, str>>,
}

/// The model events' `llm_request`: its model alone (the conversation it
/// carries is skipped, not built).
#[derive(Debug, Deserialize)]
struct LlmRequest {
    #[serde(default)]
    model: Option<String>,
}

/// `AfterTool`'s `tool_response`: what the model is given, what the user
/// is shown, and an error where the tool failed.
#[derive(Debug, Deserialize)]
struct ToolResponse {
    #[serde(default, rename = "llmContent", deserialize_with = "raw_json")]
    llm_content: Option<Json>,
    #[serde(default, rename = "returnDisplay", deserialize_with = "raw_json")]
    return_display: Option<Json>,
    #[serde(default, deserialize_with = "raw_json")]
    error: Option<Json>,
}

/// Read one payload received at `received_unix_ns`; with `record`, also the
/// record file it names (`transcript_path`).
pub(crate) fn normalize_naming(
    argv_event: Option<&str>,
    payload: &[u8],
    received_unix_ns: i64,
    record: bool,
) -> (Normalized, NamedRecord) {
    match parse_payload::<Wire>(payload) {
        Ok(wire) => {
            let named = match record {
                true if starts_a_resume(&wire) => NamedRecord::Read(None),
                true => NamedRecord::Read(owned(&wire.transcript_path).filter(|p| !p.is_empty())),
                false => NamedRecord::Unread,
            };
            (convert(argv_event, wire, received_unix_ns), named)
        }
        Err(err) => (
            Normalized::received(SignalKind::malformed(argv_event, &err), received_unix_ns),
            NamedRecord::Unread,
        ),
    }
}

/// The subagent tool's name.
pub(crate) const AGENT_TOOL: &str = "invoke_agent";

/// A subagent's own record, named by the `AfterTool` of the call that ran
/// it, with the subagent's id: the client writes it as
/// `chats/<session id>/<subagent id>.jsonl` beside the session's record,
/// and names the subagent only in the ids of the calls it made
/// (`<subagent id>#<step>-<index>`, in `returnDisplay.recentActivity`). A
/// subagent that made no call names nothing. Cheap for every other
/// payload: the key is searched for before anything is parsed.
pub(crate) fn subagent_record(payload: &[u8]) -> Option<(String, String)> {
    #[derive(Deserialize)]
    struct Named {
        hook_event_name: Option<String>,
        tool_name: Option<String>,
        session_id: Option<String>,
        transcript_path: Option<String>,
        tool_response: Option<Response>,
    }
    #[derive(Deserialize)]
    struct Response {
        #[serde(rename = "returnDisplay")]
        return_display: Option<Progress>,
    }
    #[derive(Deserialize)]
    struct Progress {
        #[serde(rename = "recentActivity", default)]
        recent_activity: Vec<Activity>,
    }
    #[derive(Deserialize)]
    struct Activity {
        id: Option<String>,
        #[serde(rename = "type")]
        kind: Option<String>,
    }
    memchr::memmem::find(payload, b"\"isSubagentProgress\"")?;
    let named: Named = parse_payload(payload).ok()?;
    let is_agent_call = named.hook_event_name.as_deref() == Some("AfterTool")
        && named.tool_name.as_deref() == Some(AGENT_TOOL);
    if !is_agent_call {
        return None;
    }
    let activity = named.tool_response?.return_display?.recent_activity;
    let agent = activity
        .iter()
        .filter(|a| a.kind.as_deref() == Some("tool_call"))
        .find_map(|a| {
            a.id.as_deref()?
                .split_once('#')
                .map(|(agent, _)| agent.to_string())
        })
        .filter(|agent| crate::agents::record::place::is_plain_id(agent))?;
    let session = named
        .session_id
        .filter(|s| crate::agents::record::place::is_plain_id(s))?;
    let chats = std::path::Path::new(named.transcript_path.as_deref()?).parent()?;
    let path = chats.join(&session).join(format!("{agent}.jsonl"));
    Some((agent, path.to_str()?.to_string()))
}

/// A resumed leg's `SessionStart` (see the module doc).
fn starts_a_resume(wire: &Wire) -> bool {
    wire.hook_event_name.as_deref() == Some("SessionStart")
        && wire.source.as_deref() == Some("resume")
}

#[cfg(test)]
pub(crate) fn normalize(event: Option<&str>, payload: &[u8], received_unix_ns: i64) -> Normalized {
    normalize_naming(event, payload, received_unix_ns, false).0
}

/// The one conversion from the wire into harnery's terms.
fn convert(argv_event: Option<&str>, wire: Wire, received_unix_ns: i64) -> Normalized {
    let event = wire
        .hook_event_name
        .as_deref()
        .or(argv_event)
        .unwrap_or("")
        .to_string();
    let agent_time = wire
        .timestamp
        .as_deref()
        .and_then(crate::clock::parse_rfc3339_ns);
    let kind = kind_of(&event, wire);
    match agent_time {
        Some(t) => Normalized {
            time_unix_ns: t,
            time_source: TimeSource::Agent,
            ..Normalized::received(kind, received_unix_ns)
        },
        None => Normalized::received(kind, received_unix_ns),
    }
}

fn kind_of(event: &str, wire: Wire) -> SignalKind {
    match event {
        "SessionStart" => SignalKind::SessionStarted(SessionStarted {
            source: owned(&wire.source),
            cwd: owned(&wire.cwd),
            model: None,
            transcript_path: owned(&wire.transcript_path),
        }),
        "SessionEnd" => SignalKind::SessionEnded(SessionEnded {
            reason: owned(&wire.reason),
        }),
        "BeforeAgent" => SignalKind::PromptSubmitted(PromptSubmitted {
            prompt: owned(&wire.prompt),
            transformed: false,
        }),
        "AfterAgent" => SignalKind::TurnEnded(TurnEnd::default()),
        "BeforeTool" => match tool_call(&wire) {
            Some(call) => SignalKind::ToolRequested(call),
            None => SignalKind::unrecognized(event, "tool event without tool_name"),
        },
        "AfterTool" => tool_result(event, wire),
        "Notification" => SignalKind::Lifecycle(Payload::Notification(Notification {
            kind: owned(&wire.notification_type),
            message: owned(&wire.message),
        })),
        "PreCompress" if wire.trigger.as_deref() == Some("manual") => {
            SignalKind::Lifecycle(Payload::CompactionStarted(CompactionStarted {
                trigger: owned(&wire.trigger),
            }))
        }
        "PreCompress" | "BeforeModel" | "AfterModel" | "BeforeToolSelection" => {
            SignalKind::Lifecycle(Payload::HookObserved(HookObserved {
                event: event.to_string(),
                model: wire.llm_request.and_then(|r| r.model),
                detail: owned(&wire.trigger),
            }))
        }
        "" => SignalKind::unrecognized(event, "no hook_event_name"),
        _ => SignalKind::unrecognized(event, "unknown_event"),
    }
}

fn tool_call(wire: &Wire) -> Option<ToolCall> {
    Some(ToolCall {
        call_id: None,
        tool_name: wire.tool_name.as_ref()?.to_string(),
        input: wire.tool_input.clone().map(normalize_input),
    })
}

fn tool_result(event: &str, wire: Wire) -> SignalKind {
    let Some(call) = tool_call(&wire) else {
        return SignalKind::unrecognized(event, "tool event without tool_name");
    };
    let response = wire.tool_response;
    let error = response
        .as_ref()
        .and_then(|r| r.error.clone())
        .filter(|e| e.as_str() != "null");
    let exit_code = match call.tool_name == SHELL_TOOL {
        true => response
            .as_ref()
            .and_then(|r| r.llm_content.as_ref())
            .and_then(|c| c.as_string())
            .and_then(|text| shell_exit_code(&text)),
        false => None,
    };
    SignalKind::ToolCompleted(ToolResult {
        call,
        outcome: match error {
            Some(_) => Outcome::Failure,
            None => Outcome::Success,
        },
        duration_ms: None,
        exit_code,
        error: error.as_ref().map(error_text),
        content: response.and_then(shown_and_given),
    })
}

/// A tool's content: what the user was shown and what the model was given
/// (generation 12: the model's text too, so that the record's text of the
/// same result is one of the hook's strings), the one where the other is
/// missing or the same.
fn shown_and_given(response: ToolResponse) -> Option<Json> {
    match (response.return_display, response.llm_content) {
        (Some(shown), Some(given)) if shown != given => Json::parse(&format!(
            r#"{{"llmContent":{},"returnDisplay":{}}}"#,
            given.as_str(),
            shown.as_str()
        ))
        .ok(),
        (shown, given) => shown.or(given),
    }
}

/// A tool's error as text: its `message` (the client sends `{message,
/// type}`), a plain string as it is, anything else as its JSON.
fn error_text(error: &Json) -> String {
    #[derive(Deserialize)]
    struct Message {
        message: String,
    }
    if let Some(text) = error.as_string() {
        return text;
    }
    match serde_json::from_str::<Message>(error.as_str()) {
        Ok(m) => m.message,
        Err(_) => error.as_str().to_string(),
    }
}

/// The exit code the shell tool writes into its output for the model
/// (`Exit Code: 2`; absent when the command exited 0): the first such
/// line.
pub(crate) fn shell_exit_code(text: &str) -> Option<i64> {
    text.lines()
        .find_map(|line| line.trim().strip_prefix("Exit Code: "))
        .and_then(|code| code.trim().parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    const BEFORE: &str = r#"{"session_id":"s","transcript_path":"/h/.gemini/tmp/p/chats/session-x-s.jsonl","cwd":"/p","hook_event_name":"BeforeTool","timestamp":"2026-12-06T10:08:31.697Z","tool_name":"run_shell_command","tool_input":{"command":"ls /nonexistent-harnery","description":"scripted step"}}"#;
    const AFTER: &str = r#"{"session_id":"s","transcript_path":"/h/.gemini/tmp/p/chats/session-x-s.jsonl","cwd":"/p","hook_event_name":"AfterTool","timestamp":"2026-12-06T10:08:31.697Z","tool_name":"run_shell_command","tool_input":{"description":"scripted step","command":"ls /nonexistent-harnery"},"tool_response":{"llmContent":"<untrusted_context>\nOutput: ls: cannot access '/nonexistent-harnery': No such file or directory\nExit Code: 2\nProcess Group PGID: 16286\n</untrusted_context>","returnDisplay":"ls: cannot access '/nonexistent-harnery': No such file or directory"}}"#;

    #[test]
    fn a_failing_command_pairs_by_input_and_keeps_its_exit_code() {
        let pre = normalize(None, BEFORE.as_bytes(), 1);
        let post = normalize(None, AFTER.as_bytes(), 1);
        assert_eq!(pre.time_source, TimeSource::Agent);
        assert_eq!(pre.time_unix_ns, 1_796_551_711_697_000_000);
        let (SignalKind::ToolRequested(call), SignalKind::ToolCompleted(done)) =
            (pre.kind, post.kind)
        else {
            panic!("not a tool span")
        };
        assert_eq!(call.call_id, None);
        assert_eq!(call.input_digest(), done.call.input_digest());
        assert_eq!((done.outcome, done.exit_code), (Outcome::Success, Some(2)));
        // What the user was shown and what the model was given (the text
        // the record keeps too).
        let content: serde_json::Value =
            serde_json::from_str(done.content.expect("content").as_str()).unwrap();
        assert_eq!(
            content["returnDisplay"],
            "ls: cannot access '/nonexistent-harnery': No such file or directory"
        );
        assert!(
            content["llmContent"]
                .as_str()
                .is_some_and(|t| t.starts_with("<untrusted_context>\nOutput: ls:"))
        );
    }

    #[test]
    fn a_tool_error_object_is_its_message() {
        let n = normalize(
            None,
            br#"{"hook_event_name":"AfterTool","tool_name":"read_file","tool_input":{"file_path":"/p/missing-harnery.txt"},"tool_response":{"llmContent":"Could not read file because no file was found at the specified path.","returnDisplay":"File not found.","error":{"message":"File not found: /p/missing-harnery.txt","type":"file_not_found"}}}"#,
            0,
        );
        let SignalKind::ToolCompleted(done) = n.kind else {
            panic!("not a completion")
        };
        assert_eq!(
            (done.outcome, done.error.as_deref()),
            (
                Outcome::Failure,
                Some("File not found: /p/missing-harnery.txt")
            )
        );
    }

    #[test]
    fn a_tool_error_is_a_failure() {
        let n = normalize(
            None,
            br#"{"hook_event_name":"AfterTool","tool_name":"read_file","tool_input":{},
                "tool_response":{"llmContent":"x","returnDisplay":"x","error":"no such file"}}"#,
            5,
        );
        let SignalKind::ToolCompleted(done) = n.kind else {
            panic!("not a completion")
        };
        assert_eq!(
            (done.outcome, done.error.as_deref(), done.exit_code),
            (Outcome::Failure, Some("no such file"), None)
        );
        assert_eq!((n.time_unix_ns, n.time_source), (5, TimeSource::Received));
    }

    #[test]
    fn session_turn_and_prompt_events() {
        let start = normalize_naming(
            Some("SessionStart"),
            br#"{"session_id":"s","transcript_path":"/t.jsonl","cwd":"/p","hook_event_name":"SessionStart","timestamp":"2026-12-06T10:08:31Z","source":"resume"}"#,
            0,
            true,
        );
        assert_eq!(start.1, NamedRecord::Read(None), "a resume names no record");
        let SignalKind::SessionStarted(s) = start.0.kind else {
            panic!("not a start")
        };
        assert_eq!(
            (s.source.as_deref(), s.cwd.as_deref()),
            (Some("resume"), Some("/p"))
        );
        let fresh = normalize_naming(
            None,
            br#"{"hook_event_name":"SessionStart","source":"startup","transcript_path":"/t.jsonl"}"#,
            0,
            true,
        );
        assert_eq!(fresh.1, NamedRecord::Read(Some("/t.jsonl".into())));
        let prompt = normalize(
            None,
            br#"{"hook_event_name":"BeforeAgent","prompt":"hi"}"#,
            0,
        );
        assert!(
            matches!(prompt.kind, SignalKind::PromptSubmitted(p) if p.prompt.as_deref() == Some("hi"))
        );
        let after = normalize(
            None,
            br#"{"hook_event_name":"AfterAgent","prompt":"hi"}"#,
            0,
        );
        assert!(matches!(after.kind, SignalKind::TurnEnded(_)));
        let end = normalize(
            None,
            br#"{"hook_event_name":"SessionEnd","reason":"exit"}"#,
            0,
        );
        assert!(
            matches!(end.kind, SignalKind::SessionEnded(e) if e.reason.as_deref() == Some("exit"))
        );
    }

    #[test]
    fn model_steps_and_compression_checks_are_observed_hooks() {
        for (payload, model, detail) in [
            (
                r#"{"hook_event_name":"BeforeModel","llm_request":{"model":"gemini-3.8-flash","messages":[{"role":"user","content":"x"}]}}"#,
                Some("gemini-3.8-flash"),
                None,
            ),
            (
                r#"{"hook_event_name":"AfterModel","llm_request":{"model":"m"},"llm_response":{"text":"t"}}"#,
                Some("m"),
                None,
            ),
            (
                r#"{"hook_event_name":"PreCompress","trigger":"auto"}"#,
                None,
                Some("auto"),
            ),
        ] {
            let n = normalize(None, payload.as_bytes(), 0);
            let SignalKind::Lifecycle(Payload::HookObserved(h)) = n.kind else {
                panic!("{payload}: {:?}", n.kind)
            };
            assert_eq!((h.model.as_deref(), h.detail.as_deref()), (model, detail));
        }
        let manual = normalize(
            None,
            br#"{"hook_event_name":"PreCompress","trigger":"manual"}"#,
            0,
        );
        assert!(matches!(
            manual.kind,
            SignalKind::Lifecycle(Payload::CompactionStarted(_))
        ));
        for (event, payload) in [
            ("Mystery", r#"{"hook_event_name":"Mystery"}"#),
            ("BeforeTool", "["),
        ] {
            let n = normalize(Some(event), payload.as_bytes(), 0);
            let SignalKind::Unrecognized(u) = n.kind else {
                panic!("{event} was read")
            };
            assert_eq!(u.adapter_event.as_deref(), Some(event));
        }
    }

    #[test]
    fn the_subagent_calls_after_tool_names_its_record() {
        let after = br#"{"session_id":"82a4d0ff-41c4-45e5-995c-4cb99366ca7a","transcript_path":"/h/.gemini/tmp/proj/chats/session-2026-12-06T11-08-82a4d0ff.jsonl","hook_event_name":"AfterTool","tool_name":"invoke_agent","tool_input":{"agent_name":"generalist","prompt":"p"},"tool_response":{"llmContent":[{"text":"done"}],"returnDisplay":{"isSubagentProgress":true,"agentName":"generalist","recentActivity":[{"id":"795e988c-ef58-4e3a-b250-4bce2c2e38dd","type":"thought","content":"x"},{"id":"9e08eaef-3c5f-452c-85dd-32e5230698c5#0-0","type":"tool_call","content":"run_shell_command"}],"state":"completed"}}}"#;
        assert_eq!(
            subagent_record(after),
            Some((
                "9e08eaef-3c5f-452c-85dd-32e5230698c5".into(),
                "/h/.gemini/tmp/proj/chats/82a4d0ff-41c4-45e5-995c-4cb99366ca7a/9e08eaef-3c5f-452c-85dd-32e5230698c5.jsonl".into()
            ))
        );
        let text = String::from_utf8(after.to_vec()).unwrap();
        for other in [
            text.replace("\"AfterTool\"", "\"BeforeTool\""),
            text.replace("9e08eaef-3c5f-452c-85dd-32e5230698c5#0-0", "../x#0-0"),
            text.replace("\"tool_call\"", "\"thought\""),
            AFTER.to_string(),
        ] {
            assert_eq!(subagent_record(other.as_bytes()), None, "{other}");
        }
    }

    #[test]
    fn exit_codes_are_read_from_the_shell_tools_text_only() {
        assert_eq!(shell_exit_code("Output: x\nExit Code: 127\n"), Some(127));
        assert_eq!(
            shell_exit_code("Output: hello\nProcess Group PGID: 1"),
            None
        );
        assert_eq!(shell_exit_code("Exit Code: many"), None);
    }
}
