//! Qwen Code's dialects against what the real client (0.24.4) sent and
//! wrote: `tests/fixtures/qwen-code/<scenario>/` holds each capture's hook
//! payloads (`hooks.jsonl`: the event on argv and the raw stdin) and the
//! session's record (`record.jsonl`).

use super::*;
use crate::agents::record::RecordItem;
use crate::agents::signal::SignalKind;
use crate::contract::{Outcome, Payload, TimeSource};

const SCENARIOS: [&str; 9] = [
    "background-subagent",
    "reasoning",
    "subagent",
    "basic",
    "failing",
    "two-turns",
    "kill",
    "refused-call",
    "interactive",
];

fn fixture(scenario: &str, file: &str) -> String {
    let root = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/qwen-code"
    );
    std::fs::read_to_string(format!("{root}/{scenario}/{file}")).expect("the fixture reads")
}

/// A scenario's hook payloads: (event on argv, payload).
fn payloads(scenario: &str) -> Vec<(String, String)> {
    fixture(scenario, "hooks.jsonl")
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("a capture line");
            let event = v["event"].as_str().expect("an event").to_string();
            (event, v["stdin_raw"].as_str().expect("stdin").to_string())
        })
        .collect()
}

fn hook(payload: &str) -> (Normalized, NamedRecord) {
    QwenCode.normalize(None, payload.as_bytes(), 7, true)
}

fn signals(scenario: &str) -> Vec<(String, Normalized)> {
    let read = |(event, payload): (String, String)| {
        let n = QwenCode
            .normalize(Some(&event), payload.as_bytes(), 7, true)
            .0;
        (event, n)
    };
    payloads(scenario).into_iter().map(read).collect()
}

fn lines(scenario: &str, file: &str) -> Vec<RecordLine> {
    let at = RecordAt {
        path: "/r.jsonl".into(),
        offset: 0,
    };
    let text = fixture(scenario, file);
    text.lines()
        .map(|l| QwenCode.read_marked(l.as_bytes(), &at).0)
        .collect()
}

fn items(scenario: &str) -> Vec<RecordItem> {
    lines(scenario, "record.jsonl")
        .into_iter()
        .flat_map(|l| l.items)
        .collect()
}

#[test]
fn every_captured_payload_is_understood_with_the_clients_time() {
    for scenario in SCENARIOS {
        for (event, n) in signals(scenario) {
            let unrecognized = matches!(n.kind, SignalKind::Unrecognized(_));
            assert!(!unrecognized, "{scenario} {event}: {:?}", n.kind);
            assert_eq!(n.time_source, TimeSource::Agent, "{scenario} {event}");
        }
    }
}

#[test]
fn an_event_without_a_payload_of_its_own_is_a_notice_of_its_kind() {
    let (_, loaded) = signals("basic").remove(0);
    let SignalKind::Lifecycle(Payload::Notification(notice)) = loaded.kind else {
        panic!("not a notice: {:?}", loaded.kind)
    };
    assert_eq!(notice.kind.as_deref(), Some("InstructionsLoaded"));
    assert!(
        notice
            .message
            .is_some_and(|m| m.ends_with("/output-language.md"))
    );
    let denied = r#"{"hook_event_name":"PermissionDenied","tool_name":"run_shell_command",
        "reason":"user said no","session_id":"s"}"#;
    let SignalKind::Lifecycle(Payload::Notification(notice)) = hook(denied).0.kind else {
        panic!("not a notice")
    };
    assert_eq!(
        notice.message.as_deref(),
        Some("run_shell_command: user said no")
    );
    let unknown = hook(r#"{"hook_event_name":"CwdChanged","session_id":"s"}"#).0;
    assert!(matches!(unknown.kind, SignalKind::Unrecognized(_)));
}

#[test]
fn every_payload_names_its_record_and_its_time() {
    let (event, payload) = payloads("basic").remove(0);
    let (n, named) = hook(&payload);
    let NamedRecord::Read(Some(path)) = named else {
        panic!("{event} names no record")
    };
    assert!(path.ends_with("/chats/41cafee8-2965-48c4-8ac0-23ed7812947c.jsonl"));
    // "2026-12-06T10:07:42.772Z"
    assert_eq!(n.time_unix_ns % 1_000_000_000, 772_000_000);
    assert_eq!(
        QwenCode.normalize(None, payload.as_bytes(), 7, false).1,
        NamedRecord::Unread
    );
}

#[test]
fn tool_events_name_the_models_call_id_which_the_batch_and_record_share() {
    let read = signals("basic");
    let id_of = |name: &str| {
        let n = &read.iter().find(|(e, _)| e == name).expect("the event").1;
        match &n.kind {
            SignalKind::ToolRequested(call) => call.call_id.clone(),
            SignalKind::ToolCompleted(result) => result.call.call_id.clone(),
            SignalKind::ToolBatch(calls) => calls[0].call.call_id.clone(),
            other => panic!("{name}: {other:?}"),
        }
    };
    for event in ["PreToolUse", "PostToolUse", "PostToolBatch"] {
        assert_eq!(id_of(event).as_deref(), Some("call_harnery_1"), "{event}");
    }
    let recorded = items("basic").into_iter().find_map(|i| match i {
        RecordItem::ToolStarted(call) => Some(call.tool_call_id),
        _ => None,
    });
    assert_eq!(recorded.as_deref(), Some("call_harnery_1"));
}

#[test]
fn the_record_digests_a_calls_input_as_the_hook_does() {
    let pre = signals("failing")
        .into_iter()
        .find_map(|(_, n)| match n.kind {
            SignalKind::ToolRequested(call) => Some(call.input_digest()),
            _ => None,
        })
        .expect("a pre");
    let recorded = items("failing").into_iter().find_map(|i| match i {
        RecordItem::ToolStarted(call) => Some(call.input_digest),
        _ => None,
    });
    assert_eq!(recorded, Some(pre));
}

#[test]
fn a_failed_shell_call_is_a_failure_with_its_exit_code() {
    let failure = signals("failing")
        .into_iter()
        .find_map(|(_, n)| match n.kind {
            SignalKind::ToolCompleted(result) => Some(result),
            _ => None,
        })
        .expect("a completion");
    assert_eq!(failure.outcome, Outcome::Failure);
    assert_eq!(failure.exit_code, Some(2));
    assert!(
        failure
            .error
            .is_some_and(|e| e.contains("nonexistent-harnery"))
    );
    let finished = items("failing").into_iter().find_map(|i| match i {
        RecordItem::ToolFinished(r) => Some((r.success, r.exit_code)),
        _ => None,
    });
    assert_eq!(finished, Some((Some(false), Some(2))));
}

#[test]
fn the_prompt_is_kept_and_the_continuation_in_its_turn_is_a_notice() {
    let submitted: Vec<(Option<String>, Option<String>)> = signals("two-turns")
        .into_iter()
        .filter(|(event, _)| event == "UserPromptSubmit")
        .map(|(_, n)| match n.kind {
            SignalKind::PromptSubmitted(p) => (p.prompt, n.native_turn_id),
            SignalKind::Lifecycle(Payload::Notification(notice)) => {
                assert_eq!(notice.kind.as_deref(), Some("UserPromptSubmit"));
                (None, n.native_turn_id)
            }
            other => panic!("{other:?}"),
        })
        .collect();
    let turn = |n: u8| Some(format!("42d177f2-9d2d-4ff7-8163-18b1ad95b49b########{n}"));
    assert_eq!(
        submitted,
        vec![
            (Some("please run the greeting".into()), turn(0)),
            (None, turn(0)),
            (Some("FAIL: now the missing dir".into()), turn(2)),
            (None, turn(2)),
        ]
    );
}

#[test]
fn lifecycle_events_keep_their_words() {
    let read = signals("interactive");
    let payload = |name: &str| match &read.iter().find(|(e, _)| e == name).expect(name).1.kind {
        SignalKind::Lifecycle(p) => p.clone(),
        SignalKind::SessionEnded(p) => Payload::SessionEnded(p.clone()),
        SignalKind::TurnEnded(end) => Payload::Notification(crate::contract::Notification {
            kind: end.stop_reason.clone(),
            message: None,
        }),
        other => panic!("{name}: {other:?}"),
    };
    let Payload::MessageDisplayed(shown) = payload("MessageDisplay") else {
        panic!("not a message")
    };
    assert!(
        shown
            .text
            .is_some_and(|t| t.starts_with("The command finished"))
    );
    assert_eq!(shown.is_final, Some(true));
    let Payload::Notification(idle) = payload("Notification") else {
        panic!("not a notification")
    };
    assert_eq!(idle.kind.as_deref(), Some("idle_prompt"));
    let Payload::SessionEnded(end) = payload("SessionEnd") else {
        panic!("not an end")
    };
    assert_eq!(end.reason.as_deref(), Some("prompt_input_exit"));
}

#[test]
fn every_captured_record_line_reads_and_names_its_session() {
    let files = SCENARIOS.iter().map(|s| (*s, "record.jsonl")).chain([
        ("kill", "record-after-resume.jsonl"),
        ("subagent", "subagent-record.jsonl"),
        ("background-subagent", "subagent-record.jsonl"),
    ]);
    for (scenario, file) in files {
        for (n, line) in lines(scenario, file).iter().enumerate() {
            let bad = line
                .items
                .iter()
                .find(|i| matches!(i, RecordItem::Unrecognized { .. }));
            assert!(bad.is_none(), "{scenario}/{file}:{n}: {bad:?}");
            assert!(
                line.uuid.is_some() && line.time_unix_ns.is_some(),
                "{scenario}:{n}"
            );
        }
        let text = fixture(scenario, file);
        let first = text.lines().next().expect("a line").as_bytes();
        let at = RecordAt {
            path: String::new(),
            offset: 0,
        };
        assert_eq!(
            QwenCode.read_marked(first, &at).1,
            Some(QwenCode.line_session(first))
        );
    }
}

/// The record's usage as the finalizer keeps it: the first per message id.
fn calls(scenario: &str) -> Vec<crate::contract::UsageReported> {
    let mut seen = std::collections::BTreeSet::new();
    items(scenario)
        .into_iter()
        .filter_map(|i| match i {
            RecordItem::Usage(u) => Some(u),
            _ => None,
        })
        .filter(|u| seen.insert(u.message_id.clone().expect("every usage has an id")))
        .collect()
}

#[test]
fn usage_is_each_calls_once_with_the_cached_part_out_of_the_input() {
    // The scripted model sent call n: prompt 1000+17n (cached 100+5n
    // included), completion 20+3n (reasoning n included).
    let usage = calls("two-turns");
    assert_eq!(usage.len(), 4);
    for (u, n) in usage.iter().zip(1u64..) {
        assert_eq!(u.input_tokens, Some(1000 + 17 * n - (100 + 5 * n)));
        assert_eq!(u.cache_read_tokens, Some(100 + 5 * n));
        assert_eq!(u.output_tokens, Some(20 + 3 * n));
        assert_eq!(u.reasoning_tokens, Some(n));
        assert_eq!(u.model.as_deref(), Some("harnery-e2e-model"));
        assert!(u.duration_ms.is_some(), "the telemetry line's, read first");
    }
}

#[test]
fn a_subagents_calls_count_as_the_clients_own_usage_ledger_counts_them() {
    // Qwen's own per-call ledger (`usage/token-usage-<month>.jsonl`): the
    // main agent's two calls and the subagent's two.
    let ledger: Vec<[u64; 4]> = fixture("subagent", "token-usage.jsonl")
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("a ledger line");
            let n = |k: &str| v[k].as_u64().expect(k);
            let cached = n("cachedTokens");
            [
                n("inputTokens") - cached,
                n("outputTokens"),
                cached,
                n("thoughtsTokens"),
            ]
        })
        .collect();
    assert_eq!(ledger.len(), 4);
    let read: Vec<[u64; 4]> = calls("subagent")
        .iter()
        .map(|u| {
            let n = |t: Option<u64>| t.expect("a figure");
            [
                n(u.input_tokens),
                n(u.output_tokens),
                n(u.cache_read_tokens),
                n(u.reasoning_tokens),
            ]
        })
        .collect();
    assert_eq!(read, ledger);
}

#[test]
fn a_subagents_tool_call_is_recorded_with_the_id_its_hooks_name() {
    let hooked: Vec<(Option<String>, Option<String>)> = signals("subagent")
        .into_iter()
        .filter_map(|(_, n)| match n.kind {
            SignalKind::ToolRequested(call) => Some((call.call_id, n.agent_id)),
            _ => None,
        })
        .collect();
    let agent = Some("general-purpose-call_harnery_1".to_string());
    assert_eq!(
        hooked,
        vec![
            (Some("call_harnery_1".into()), None),
            (Some("call_harnery_2".into()), agent)
        ]
    );
    let recorded: Vec<(String, bool)> = items("subagent")
        .into_iter()
        .filter_map(|i| match i {
            RecordItem::ToolStarted(c) => Some((c.tool_call_id, false)),
            RecordItem::ToolFinished(r) => Some((r.tool_call_id, true)),
            _ => None,
        })
        .collect();
    let want = |id: &str, done| (id.to_string(), done);
    assert_eq!(
        recorded,
        vec![
            want("call_harnery_1", false),
            want("call_harnery_2", false),
            want("call_harnery_2", true),
            want("call_harnery_1", true),
        ]
    );
}

#[test]
fn the_record_says_the_prompt_the_hook_said() {
    let said: Vec<String> = items("two-turns")
        .into_iter()
        .filter_map(|i| match i {
            RecordItem::UserMessage(m) => m.text,
            _ => None,
        })
        .collect();
    assert_eq!(
        said,
        ["please run the greeting", "FAIL: now the missing dir"]
    );
}

#[test]
fn a_killed_call_is_started_and_never_finished_in_the_record() {
    let all = items("kill");
    assert!(all.iter().any(|i| matches!(i, RecordItem::ToolStarted(_))));
    assert!(!all.iter().any(|i| matches!(i, RecordItem::ToolFinished(_))));
}

#[test]
fn a_refused_call_finishes_unsuccessfully_without_an_exit_code() {
    let finished = items("refused-call").into_iter().find_map(|i| match i {
        RecordItem::ToolFinished(r) => Some((r.success, r.exit_code)),
        _ => None,
    });
    assert_eq!(finished, Some((Some(false), None)));
}

#[test]
fn the_record_is_trusted_only_in_its_own_place() {
    use crate::agents::record::place::check_shape;
    let id = "41cafee8-2965-48c4-8ac0-23ed7812947c";
    let ok = format!("/home/u/.qwen/projects/-work-p/chats/{id}.jsonl");
    let check = |p: &str| check_shape(AdapterId::QwenCode, id, RecordRole::Session, Path::new(p));
    assert!(check(&ok).is_ok());
    for bad in [
        format!("/home/u/.qwen/projects/-work-p/{id}.jsonl"),
        "/home/u/.qwen/projects/-work-p/chats/other.jsonl".to_string(),
        format!("/home/u/.qwen/projects/.hidden/chats/{id}.jsonl"),
        format!("/home/u/.qwen/projects/-work-p/chats/../chats/{id}.jsonl"),
        "/etc/passwd".to_string(),
    ] {
        assert!(check(&bad).is_err(), "{bad}");
    }
    let agent = |p: &str| {
        check_shape(
            AdapterId::QwenCode,
            id,
            RecordRole::Subagent("a1"),
            Path::new(p),
        )
    };
    assert!(
        agent(&format!(
            "/home/u/.qwen/projects/-work-p/subagents/{id}/agent-a1.jsonl"
        ))
        .is_ok()
    );
    assert!(
        agent(&ok).is_err(),
        "the session's own record is no subagent's"
    );
    assert!(
        agent(&format!(
            "/home/u/.qwen/projects/-work-p/subagents/{id}/agent-a2.jsonl"
        ))
        .is_err()
    );
    assert!(agent("/home/u/.qwen/projects/-work-p/subagents/other/agent-a1.jsonl").is_err());
}

#[test]
fn recorded_sessions_are_the_chats_under_projects() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let chats = dir.path().join("projects/-work-p/chats");
    std::fs::create_dir_all(&chats).expect("mkdir");
    std::fs::write(chats.join("s-1.jsonl"), "{}\n").expect("write");
    std::fs::write(chats.join("s-1.runtime.json"), "{}").expect("write");
    std::fs::write(chats.join("../not-a-chat.jsonl"), "{}").expect("write");
    let found = sessions_in(&dir.path().join("projects"));
    let ids: Vec<&str> = found.iter().map(|f| f.session_id.as_str()).collect();
    assert_eq!(ids, ["s-1"]);
    assert_eq!(
        found[0].path,
        chats.join("s-1.jsonl"),
        "import reads it there"
    );
}

#[test]
fn a_payload_without_its_time_takes_the_receive_time_and_a_broken_one_is_kept() {
    let untimed = hook(r#"{"hook_event_name":"Stop","session_id":"s","prompt_id":"p"}"#).0;
    assert_eq!(
        (untimed.time_unix_ns, untimed.time_source),
        (7, TimeSource::Received)
    );
    assert!(matches!(untimed.kind, SignalKind::TurnEnded(_)));
    let named_on_argv = QwenCode
        .normalize(Some("Stop"), br#"{"session_id":"s"}"#, 7, false)
        .0;
    assert!(matches!(named_on_argv.kind, SignalKind::TurnEnded(_)));
    let (broken, named) = hook(r#"{"hook_event_name":"Stop","#);
    assert!(matches!(broken.kind, SignalKind::Unrecognized(_)));
    assert_eq!(named, NamedRecord::Unread);
}

#[test]
fn the_runtime_dir_moves_the_records_when_it_is_absolute() {
    let home = Path::new("/u/.qwen");
    let moved = |v: &str| runtime_dir(home, Some(v.into()));
    assert_eq!(moved("/var/qwen"), Path::new("/var/qwen"));
    assert_eq!(moved("relative"), home);
    assert_eq!(moved(""), home);
    assert_eq!(runtime_dir(home, None), home);
}

#[test]
fn telemetry_this_reader_does_not_use_is_nothing_and_a_used_one_out_of_shape_is_said() {
    let at = RecordAt {
        path: String::new(),
        offset: 0,
    };
    let line = |payload: &str| {
        let text = format!(
            r#"{{"uuid":"u","sessionId":"s","type":"system","subtype":"ui_telemetry","systemPayload":{payload}}}"#
        );
        QwenCode.read_marked(text.as_bytes(), &at).0.items
    };
    assert!(
        line(r#"{"uiEvent":{"event.name":"qwen-code.api_error","duration_ms":"x"}}"#).is_empty()
    );
    assert!(line(r#"{"snapshot":{"type":"attribution-snapshot"}}"#).is_empty());
    let bad =
        line(r#"{"uiEvent":{"event.name":"qwen-code.api_response","input_token_count":"many"}}"#);
    assert!(
        matches!(&bad[..], [RecordItem::Unrecognized { .. }]),
        "{bad:?}"
    );
}

#[test]
fn a_thought_part_is_reasoning_and_not_the_message() {
    let mut said = Vec::new();
    let mut thought = Vec::new();
    for item in items("reasoning") {
        match item {
            RecordItem::Reasoning(r) => thought.push(r.text.expect("its text")),
            RecordItem::AssistantMessage(m) => said.push(m.text),
            _ => {}
        }
    }
    assert_eq!(
        thought,
        [
            "harnery thinks about step chatcmpl-harnery-1",
            "harnery thinks about step chatcmpl-harnery-2"
        ]
    );
    assert_eq!(said[0], None, "the first answer is a tool call alone");
    assert!(
        said[1]
            .as_deref()
            .is_some_and(|t| t.starts_with("The command finished"))
    );
}

#[test]
fn a_subagents_own_record_gives_its_words_under_its_id_and_nothing_counted_twice() {
    for scenario in ["subagent", "background-subagent"] {
        for line in lines(scenario, "subagent-record.jsonl") {
            assert_eq!(
                line.agent_id.as_deref(),
                Some("general-purpose-call_harnery_1")
            );
            for item in line.items {
                assert!(
                    matches!(
                        item,
                        RecordItem::UserMessage(_)
                            | RecordItem::AssistantMessage(_)
                            | RecordItem::Metadata(_)
                    ),
                    "{scenario}: {item:?}"
                );
            }
        }
    }
}

#[test]
fn a_notice_qwen_writes_as_the_user_is_no_prompt() {
    let notices: Vec<RecordLine> = lines("background-subagent", "record.jsonl")
        .into_iter()
        .filter(|l| l.items.is_empty() && l.time_unix_ns.is_some())
        .collect();
    assert!(!notices.is_empty());
    let said: Vec<String> = items("background-subagent")
        .into_iter()
        .filter_map(|i| match i {
            RecordItem::UserMessage(m) => m.text,
            _ => None,
        })
        .collect();
    assert_eq!(said, ["BGAGENT: delegate the greeting"]);
}

#[test]
fn a_stop_names_the_background_subagents_still_running() {
    let running: Vec<Vec<String>> = signals("background-subagent")
        .into_iter()
        .filter_map(|(_, n)| match n.kind {
            SignalKind::TurnEnded(end) => Some(end.running_agents),
            _ => None,
        })
        .collect();
    let agent = "general-purpose-call_harnery_1".to_string();
    assert_eq!(running, vec![vec![agent], vec![]]);
}

/// A `custom_title` line (the shape Qwen Code's `recordCustomTitle` and
/// its every-32-KB re-anchor write; no capture renamed a session) is the
/// session's title, said by the user when its source is `manual`.
#[test]
fn a_custom_title_line_is_the_sessions_title() {
    let at = RecordAt {
        path: "/q/s.jsonl".into(),
        offset: 0,
    };
    let line = |payload: &str| {
        let text = format!(
            r#"{{"uuid":"t1","parentUuid":"a1","sessionId":"s","timestamp":"2026-12-06T10:00:00.000Z","type":"system","subtype":"custom_title","cwd":"/w","version":"0.24.4","systemPayload":{payload}}}"#
        );
        QwenCode.read_marked(text.as_bytes(), &at).0.items
    };
    assert_eq!(
        line(r#"{"customTitle":"Fix the parser","titleSource":"manual"}"#),
        vec![RecordItem::Title(crate::agents::record::RecordTitle {
            title: "Fix the parser".into(),
            field: "custom_title".into(),
            user_named: Some(true),
        })]
    );
    let auto = line(r#"{"customTitle":"Parser work"}"#);
    assert!(matches!(&auto[..], [RecordItem::Title(t)] if t.user_named.is_none()));
    assert!(matches!(
        &line(r#"{"title":3}"#)[..],
        [RecordItem::Unrecognized { reason }] if reason.starts_with("custom_title in no known shape")
    ));
}

/// A result's text is its function response's `output`, or the `error` of
/// a call that failed or was refused, as written.
#[test]
fn a_results_output_is_its_function_response() {
    let output = |scenario: &str| -> Option<String> {
        items(scenario).into_iter().find_map(|i| match i {
            RecordItem::ToolFinished(r) => r.output,
            _ => None,
        })
    };
    let ran = output("basic").expect("the shell call's output");
    assert!(
        ran.starts_with("Command: echo hello-from-harnery-e2e\n"),
        "{ran}"
    );
    assert!(ran.contains("\nExit Code: 0\n"), "{ran}");
    let failed = output("failing").expect("the failed call's error");
    assert!(failed.contains("No such file or directory\nError: (none)\nExit Code: 2"));
    let refused = output("refused-call").expect("the refusal");
    assert!(
        refused.starts_with("Blocked: standalone sleep 30."),
        "{refused}"
    );
}
