//! The rollout reader against the captures in `tests/fixtures/codex`.

use super::*;
use crate::agents::codex::fixture;

fn at() -> RecordAt {
    RecordAt {
        path: "rollout.jsonl".into(),
        offset: 0,
    }
}

fn items(scenario: &str) -> Vec<(RecordLine, LineMark)> {
    fixture::rollout(scenario)
        .iter()
        .map(|l| {
            let (line, _, mark) = read_marked(l.as_bytes(), &at());
            (line, mark)
        })
        .collect()
}

fn all(scenario: &str) -> Vec<RecordItem> {
    items(scenario)
        .into_iter()
        .flat_map(|(l, _)| l.items)
        .collect()
}

#[test]
fn every_captured_line_reads() {
    for scenario in fixture::SCENARIOS {
        for (line, _) in items(scenario) {
            for item in &line.items {
                assert!(
                    !matches!(item, RecordItem::Unrecognized { .. }),
                    "{scenario}: {item:?}"
                );
            }
            assert!(
                line.time_unix_ns.is_some(),
                "{scenario}: every line has its timestamp"
            );
        }
    }
}

#[test]
fn the_basic_session_reads_as_codex_wrote_it() {
    let items = all("basic");
    let users: Vec<_> = items
        .iter()
        .filter_map(|i| match i {
            RecordItem::UserMessage(m) => m.text.clone(),
            _ => None,
        })
        .collect();
    assert_eq!(
        users,
        ["Please run a shell command that greets us."],
        "injected context is not the user's"
    );
    let said: Vec<_> = items
        .iter()
        .filter_map(|i| match i {
            RecordItem::AssistantMessage(m) => m.text.clone(),
            _ => None,
        })
        .collect();
    assert_eq!(said, ["Done: the command ran and I read its output."]);
    let started: Vec<_> = items
        .iter()
        .filter_map(|i| match i {
            RecordItem::ToolStarted(c) => Some((c.tool_call_id.clone(), c.tool_name.clone())),
            _ => None,
        })
        .collect();
    let finished: Vec<_> = items
        .iter()
        .filter_map(|i| match i {
            RecordItem::ToolFinished(r) => Some((r.tool_call_id.clone(), r.exit_code, r.success)),
            _ => None,
        })
        .collect();
    assert_eq!(started.len(), 1);
    assert_eq!(started[0].1, "exec_command");
    assert_eq!(finished, [(started[0].0.clone(), Some(0), Some(true))]);
    let hook_ids: Vec<String> = fixture::hooks("basic")
        .iter()
        .filter(|(e, _)| e == "PreToolUse")
        .map(|(_, p)| {
            serde_json::from_str::<serde_json::Value>(p).unwrap()["tool_use_id"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(
        hook_ids,
        [started[0].0.clone()],
        "the hooks' tool_use_id is the rollout's call_id"
    );
    let reasoning = items.iter().find_map(|i| match i {
        RecordItem::Reasoning(r) => Some(r.clone()),
        _ => None,
    });
    let reasoning = reasoning.expect("the reasoning item");
    assert_eq!(
        reasoning.text.as_deref(),
        Some("The command finished; I report it.")
    );
    assert!(reasoning.continuation.is_some());
}

#[test]
fn a_failed_command_finishes_with_its_exit_code() {
    let finished: Vec<_> = all("fail")
        .into_iter()
        .filter_map(|i| match i {
            RecordItem::ToolFinished(r) => Some((r.exit_code, r.success)),
            _ => None,
        })
        .collect();
    assert_eq!(finished, [(Some(2), Some(false))]);
}

/// Token kinds as the ledger counts them (input without the cached
/// part), summed, against the same sums taken straight from the lines.
#[test]
fn usage_equals_the_rollouts_own_numbers() {
    for scenario in fixture::SCENARIOS {
        let mut want = [0u64; 4];
        for l in fixture::rollout(scenario) {
            let v: serde_json::Value = serde_json::from_str(&l).unwrap();
            if v["type"] == "token_usage_record" {
                let u = &v["payload"]["usage"];
                let n = |k: &str| u[k].as_u64().unwrap();
                want[0] += n("input_tokens") - n("cached_input_tokens");
                want[1] += n("cached_input_tokens");
                want[2] += n("output_tokens");
                want[3] += n("reasoning_output_tokens");
            }
        }
        let mut got = [0u64; 4];
        let mut ids = std::collections::BTreeSet::new();
        for item in all(scenario) {
            if let RecordItem::Usage(u) = item {
                assert!(ids.insert(u.message_id.clone().expect("a response id")));
                got[0] += u.input_tokens.unwrap();
                got[1] += u.cache_read_tokens.unwrap();
                got[2] += u.output_tokens.unwrap();
                got[3] += u.reasoning_tokens.unwrap();
            }
        }
        assert_eq!(got, want, "{scenario}");
        assert!(want[0] > 0);
    }
}

#[test]
fn lines_carry_the_hooks_turn_and_the_turn_end_is_marked() {
    let hook_turns: std::collections::BTreeSet<String> = fixture::hooks("two-turns")
        .iter()
        .filter_map(|(_, p)| {
            serde_json::from_str::<serde_json::Value>(p).unwrap()["turn_id"]
                .as_str()
                .map(String::from)
        })
        .collect();
    assert_eq!(hook_turns.len(), 2);
    let lines = items("two-turns");
    let line_turns: std::collections::BTreeSet<String> = lines
        .iter()
        .filter_map(|(l, _)| l.native_turn_id.clone())
        .collect();
    assert_eq!(line_turns, hook_turns);
    let ends: Vec<_> = lines
        .iter()
        .filter(|(_, m)| *m == LineMark::TurnEnd)
        .map(|(l, _)| l.items.clone())
        .collect();
    assert_eq!(ends.len(), 2);
    for end in ends {
        assert!(
            matches!(&end[..], [RecordItem::TurnEnded { turn_id }] if hook_turns.contains(turn_id))
        );
    }
}

#[test]
fn the_model_and_version_come_as_metadata() {
    let meta: Vec<_> = all("basic")
        .into_iter()
        .filter_map(|i| match i {
            RecordItem::Metadata(m) => Some((m.agent_version, m.model)),
            _ => None,
        })
        .collect();
    assert!(meta.contains(&(Some("0.169.0".into()), None)));
    assert!(meta.contains(&(None, Some("gpt-5.1-codex".into()))));
}

#[test]
fn the_killed_call_never_finishes() {
    let items = all("kill-resume");
    let started: Vec<_> = items
        .iter()
        .filter_map(|i| match i {
            RecordItem::ToolStarted(c) => Some(c.tool_call_id.clone()),
            _ => None,
        })
        .collect();
    let finished: Vec<_> = items
        .iter()
        .filter_map(|i| match i {
            RecordItem::ToolFinished(r) => Some(r.tool_call_id.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(started.len(), 2);
    assert_eq!(finished, started[1..]);
}

#[test]
fn exit_codes_are_read_from_the_output_header_only() {
    let text = "Chunk ID: 1\nWall time: 0 seconds\nProcess exited with code 2\nOriginal token count: 3\nOutput:\nx\n";
    assert_eq!(exit_code_in(text), Some(2));
    let running =
        "Chunk ID: 1\nProcess running with session ID 4\nOutput:\nProcess exited with code 9\n";
    assert_eq!(
        exit_code_in(running),
        None,
        "the command's own output proves nothing"
    );
    assert_eq!(exit_code_in("plain text"), None);
}

#[test]
fn unknown_and_broken_lines_are_kept_as_unrecognized() {
    for line in [
        r#"{"timestamp":"2026-12-06T10:00:00Z","type":"brand_new","payload":{}}"#,
        r#"{"timestamp":"2026-12-06T10:00:00Z","type":"event_msg","payload":{"type":"brand_new"}}"#,
        r#"{"timestamp":"2026-12-06T10:00:00Z","type":"response_item","payload":{"type":"brand_new"}}"#,
        r#"{"type":"event_msg"}"#,
        "not json",
    ] {
        let (read, _, _) = read_marked(line.as_bytes(), &at());
        assert!(
            matches!(&read.items[..], [RecordItem::Unrecognized { .. }]),
            "{line}"
        );
    }
}

/// SIGINT during `sleep 30`: Codex ends the call with `aborted by user`
/// and the turn with `turn_aborted`; the context it injects about that is
/// not the user's message.
#[test]
fn an_interrupted_turn_ends_and_its_call_fails() {
    let lines = items("interrupt");
    let finished: Vec<_> = lines
        .iter()
        .flat_map(|(l, _)| &l.items)
        .filter_map(|i| match i {
            RecordItem::ToolFinished(r) => Some((r.exit_code, r.success)),
            _ => None,
        })
        .collect();
    assert_eq!(finished, [(None, Some(false))]);
    let ends: Vec<_> = lines
        .iter()
        .filter(|(_, m)| *m == LineMark::TurnEnd)
        .map(|(l, _)| l.items.clone())
        .collect();
    assert!(matches!(&ends[..], [items] if matches!(&items[..], [RecordItem::TurnEnded { .. }])));
    let users = lines
        .iter()
        .flat_map(|(l, _)| &l.items)
        .filter(|i| matches!(i, RecordItem::UserMessage(_)))
        .count();
    assert_eq!(users, 1);
}

/// A run inside a git repository names the commit it ran at.
#[test]
fn a_run_in_a_repository_names_its_commit() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/codex/git/session-meta.jsonl"
    );
    let line = std::fs::read_to_string(path).unwrap();
    let (read, session, _) = read_marked(line.trim_end().as_bytes(), &at());
    let [RecordItem::Metadata(m)] = &read.items[..] else {
        panic!("{read:?}")
    };
    assert_eq!(
        m.head_commit.as_deref(),
        Some("ea5b39ae68571921649a72c966fb594cff055b1c")
    );
    assert_eq!(m.agent_version.as_deref(), Some("0.169.0"));
    assert!(matches!(session, Some(Some(ref id)) if id.starts_with("01a24b0e")));
}

/// A subagent's rollout: every line reads, its lines name the parent's
/// session (its `session_meta` has the subagent's own `id` beside it), and
/// its shell call finishes.
#[test]
fn a_subagents_rollout_reads_as_the_parent_sessions() {
    let parent = line_session(fixture::rollout("subagent")[0].as_bytes()).unwrap();
    let child = fixture::lines("subagent", "subagent-rollout.jsonl");
    assert_eq!(
        line_session(child[0].as_bytes()).as_deref(),
        Some(parent.as_str())
    );
    let mut finished = 0;
    for line in &child {
        let (read, session, _) = read_marked(line.as_bytes(), &at());
        for item in &read.items {
            assert!(!matches!(item, RecordItem::Unrecognized { .. }), "{item:?}");
            finished +=
                usize::from(matches!(item, RecordItem::ToolFinished(r) if r.exit_code == Some(0)));
        }
        if let Some(Some(named)) = session {
            assert_eq!(named, parent);
        }
    }
    assert_eq!(finished, 1);
}

/// A call's output is the text the model was given, as written: unified
/// exec's header and all, a subagent tool's JSON text, and the content
/// items of an output in that shape (an image item is no text).
#[test]
fn a_calls_output_is_its_text() {
    let outputs = |scenario: &str| -> Vec<Option<String>> {
        all(scenario)
            .into_iter()
            .filter_map(|i| match i {
                RecordItem::ToolFinished(r) => Some(r.output),
                _ => None,
            })
            .collect()
    };
    assert_eq!(
        outputs("fail"),
        [Some(
            "Chunk ID: 5928ca\nWall time: 0.0000 seconds\nProcess exited with code 2\n\
             Original token count: 17\nOutput:\n\
             ls: cannot access '/nonexistent-harnery': No such file or directory\n"
                .to_string()
        )]
    );
    assert_eq!(
        outputs("subagent")[0].as_deref(),
        Some(r#"{"agent_id":"01a24b17-bab1-7010-92ad-dbfb44d81de1","nickname":"Socrates"}"#)
    );
    let line = r#"{"timestamp":"2026-12-06T10:00:00Z","type":"response_item","payload":{"type":"function_call_output","call_id":"c9","output":[{"type":"input_text","text":"Process exited with code 0\nOutput:\nok"},{"type":"input_image","image_url":"data:image/png;base64,AAAA"}]}}"#;
    let (read, _, _) = read_marked(line.as_bytes(), &at());
    let [RecordItem::ToolFinished(done)] = read.items.as_slice() else {
        panic!("{:?}", read.items)
    };
    assert_eq!(
        (done.output.as_deref(), done.exit_code),
        (Some("Process exited with code 0\nOutput:\nok"), Some(0))
    );
}
