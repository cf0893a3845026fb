//! The OpenCode adapter against what the real client 1.18.33 sent and
//! wrote (`tests/fixtures/opencode/`).

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{hooks, record, store};
use crate::agents::record::RecordItem;
use crate::agents::signal::SignalKind;
use crate::contract::{Outcome, Payload, RecordAt, TimeSource};

fn fixture(scenario: &str, file: &str) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/opencode");
    std::fs::read_to_string(root.join(scenario).join(file)).expect("fixture")
}

/// Each hook hand-over of a scenario, read: (argv event, normalized).
fn hooks_of(scenario: &str) -> Vec<(String, crate::agents::signal::Normalized)> {
    fixture(scenario, "hooks.jsonl")
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).expect("a capture line");
            let event = v["argv"][1].as_str().expect("argv event").to_string();
            let payload = v["stdin_raw"].as_str().expect("stdin_raw");
            let n = hooks::normalize(Some(&event), payload.as_bytes(), 7);
            (event, n)
        })
        .collect()
}

/// `opencode.db` under `dir/opencode/`, holding the scenario's journal and
/// session rows in OpenCode's own tables.
pub(super) fn db_of(dir: &Path, scenario: &str) -> PathBuf {
    let db = dir.join("opencode").join(store::DB_NAME);
    std::fs::create_dir_all(db.parent().expect("parent")).expect("dir");
    let conn = rusqlite::Connection::open(&db).expect("db");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/opencode");
    let schema = std::fs::read_to_string(root.join("schema.sql")).expect("schema");
    conn.execute_batch(&schema).expect("schema applied");
    // The rows the journal's and the session's foreign keys name.
    let session = session_row(scenario);
    let events = fixture(scenario, "event.jsonl");
    conn.execute(
        "INSERT INTO project (id, worktree, time_created, time_updated, sandboxes) \
         VALUES (?1, '/', 0, 0, '[]')",
        [session["project_id"].as_str()],
    )
    .expect("project inserted");
    conn.execute(
        "INSERT INTO event_sequence (aggregate_id, seq) VALUES (?1, ?2)",
        rusqlite::params![session["id"].as_str(), events.lines().count() as i64 - 1],
    )
    .expect("sequence inserted");
    for l in events.lines() {
        let r: Value = serde_json::from_str(l).expect("row");
        conn.execute(
            "INSERT INTO event (id, aggregate_id, seq, type, data) VALUES (?1, ?2, ?3, ?4, ?5)",
            rusqlite::params![
                r["id"].as_str(),
                r["aggregate_id"].as_str(),
                r["seq"].as_i64(),
                r["type"].as_str(),
                r["data"].as_str()
            ],
        )
        .expect("row inserted");
    }
    for l in fixture(scenario, "session.jsonl").lines() {
        let r: Value = serde_json::from_str(l).expect("row");
        conn.execute(
            "INSERT INTO session (id, project_id, slug, directory, title, version, time_created, \
             time_updated) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            rusqlite::params![
                r["id"].as_str(),
                r["project_id"].as_str(),
                r["slug"].as_str(),
                r["directory"].as_str(),
                r["title"].as_str(),
                r["version"].as_str(),
                r["time_created"].as_i64(),
                r["time_updated"].as_i64()
            ],
        )
        .expect("session inserted");
    }
    db
}

/// The whole rendering of a session's journal.
fn render_all(db: &Path, session_id: &str) -> std::io::Result<Vec<u8>> {
    store::render(db, session_id, 0, u64::MAX).map(|r| r.bytes)
}

fn session_row(scenario: &str) -> Value {
    serde_json::from_str(
        fixture(scenario, "session.jsonl")
            .lines()
            .next()
            .expect("a row"),
    )
    .expect("row")
}

/// Every item the scenario's rendered journal yields, with the session
/// each line names.
fn items_of(scenario: &str) -> (Vec<RecordItem>, Vec<Option<String>>) {
    let dir = tempfile::tempdir().expect("tmp");
    let db = db_of(dir.path(), scenario);
    let id = session_row(scenario)["id"]
        .as_str()
        .expect("id")
        .to_string();
    let lines = render_all(&db, &id).expect("rendered");
    let (mut items, mut sessions) = (Vec::new(), Vec::new());
    let mut offset = 0u64;
    for line in lines.split_inclusive(|b| *b == b'\n') {
        let at = RecordAt {
            path: db.display().to_string(),
            offset,
        };
        offset += line.len() as u64;
        let (read, session, _) = record::read_marked(&line[..line.len() - 1], &at);
        items.extend(read.items);
        sessions.push(session.flatten());
    }
    (items, sessions)
}

#[test]
fn every_hook_of_a_plain_turn_is_read_with_its_call_id_and_time() {
    let read = hooks_of("basic");
    let kinds: Vec<&str> = read.iter().map(|(e, _)| e.as_str()).collect();
    assert_eq!(
        kinds,
        [
            "session.created",
            "chat.message",
            "tool.execute.before",
            "tool.execute.after",
            "session.idle"
        ]
    );
    for (event, n) in &read {
        assert_eq!(
            n.time_source,
            TimeSource::Agent,
            "{event} carries the plugin's time"
        );
        assert!(n.delivery_key.is_some(), "{event} names its delivery");
    }
    let SignalKind::SessionStarted(start) = &read[0].1.kind else {
        panic!("session.created starts the session: {:?}", read[0].1.kind)
    };
    assert!(
        start
            .cwd
            .as_deref()
            .is_some_and(|c| c.ends_with("/basic/proj"))
    );
    let SignalKind::PromptSubmitted(prompt) = &read[1].1.kind else {
        panic!("chat.message is the prompt")
    };
    assert_eq!(
        prompt.prompt.as_deref(),
        Some("\"Run the shell command that prints the marker, then tell me what it printed.\"")
    );
    let SignalKind::ToolRequested(call) = &read[2].1.kind else {
        panic!("tool.execute.before requests the call")
    };
    assert_eq!(call.call_id.as_deref(), Some("call_e2e_0002"));
    assert_eq!(call.tool_name, "bash");
    let SignalKind::ToolCompleted(done) = &read[3].1.kind else {
        panic!("tool.execute.after completes it")
    };
    assert_eq!(done.call.call_id.as_deref(), Some("call_e2e_0002"));
    assert_eq!(
        done.call.input_digest(),
        call.input_digest(),
        "the same input both sides"
    );
    assert_eq!((done.outcome, done.exit_code), (Outcome::Success, Some(0)));
    let content = done.content.as_ref().expect("the tool's output kept");
    assert!(content.as_str().contains("hello-from-harnery-e2e"));
    assert!(matches!(read[4].1.kind, SignalKind::TurnEnded(_)));
}

#[test]
fn a_failing_command_is_a_failure_with_its_exit_code() {
    let read = hooks_of("failing");
    let SignalKind::ToolCompleted(done) = &read[3].1.kind else {
        panic!("tool.execute.after: {:?}", read[3].1.kind)
    };
    assert_eq!((done.outcome, done.exit_code), (Outcome::Failure, Some(2)));
}

#[test]
fn a_model_error_is_reported_and_the_second_idle_kept() {
    let read = hooks_of("model-error");
    let kinds: Vec<&str> = read.iter().map(|(e, _)| e.as_str()).collect();
    assert_eq!(
        kinds,
        [
            "session.created",
            "chat.message",
            "session.error",
            "session.idle",
            "session.idle"
        ]
    );
    let SignalKind::Lifecycle(Payload::ErrorReported(error)) = &read[2].1.kind else {
        panic!("session.error: {:?}", read[2].1.kind)
    };
    assert_eq!(error.message, "scripted failure");
    assert_eq!(error.context.as_deref(), Some("APIError"));
    assert_eq!(error.recoverable, Some(false));
    assert_ne!(
        read[3].1.delivery_key, read[4].1.delivery_key,
        "two idles, two deliveries"
    );
}

#[test]
fn a_refused_permission_is_asked_and_replied() {
    let read = hooks_of("permission");
    let asked = read
        .iter()
        .find_map(|(_, n)| match &n.kind {
            SignalKind::Lifecycle(Payload::PermissionRequested(p)) => Some(p),
            _ => None,
        })
        .expect("permission.asked");
    assert_eq!(asked.tool_name, "bash");
    let replied = read.iter().any(|(_, n)| {
        matches!(&n.kind, SignalKind::Lifecycle(Payload::Notification(note))
            if note.message.as_deref() == Some("reject"))
    });
    assert!(replied, "permission.replied says reject");
    assert!(
        !read
            .iter()
            .any(|(_, n)| matches!(n.kind, SignalKind::ToolCompleted(_))),
        "OpenCode calls no hook after a refused call"
    );
}

#[test]
fn no_captured_hook_is_unrecognized() {
    for scenario in [
        "basic",
        "failing",
        "two-turns",
        "kill",
        "model-error",
        "permission",
        "todo",
    ] {
        for (event, n) in hooks_of(scenario) {
            assert!(
                !matches!(n.kind, SignalKind::Unrecognized(_)),
                "{scenario}: {event} unrecognized: {:?}",
                n.kind
            );
        }
    }
}

#[test]
fn a_payload_that_is_not_json_is_kept_unrecognized() {
    let n = hooks::normalize(Some("session.idle"), b"{not json", 5);
    assert_eq!((n.time_unix_ns, n.time_source), (5, TimeSource::Received));
    assert!(matches!(n.kind, SignalKind::Unrecognized(_)));
    let n = hooks::normalize(Some(""), br#"{"session_id":"s","event":{}}"#, 5);
    assert!(matches!(n.kind, SignalKind::Unrecognized(ref u) if u.reason == "no hook_event_name"));
    // An event of the session the dialect does not model fired all the same.
    let todo = br#"{"session_id":"s","hook_event_name":"todo.updated","event":{"id":"evt_1","type":"todo.updated","properties":{"sessionID":"s","todos":[]}}}"#;
    let n = hooks::normalize(Some("todo.updated"), todo, 5);
    let SignalKind::Lifecycle(Payload::HookObserved(seen)) = n.kind else {
        panic!("todo.updated: {:?}", n.kind)
    };
    assert_eq!(seen.event, "todo.updated");
    assert_eq!(
        n.delivery_key.as_deref(),
        Some("opencode:todo.updated:evt_1")
    );
}

#[test]
fn the_record_says_each_message_call_and_usage_once() {
    let (items, sessions) = items_of("basic");
    let row = session_row("basic");
    let id = row["id"].as_str().expect("id");
    assert!(
        sessions.iter().all(|s| s.as_deref() == Some(id)),
        "every line names the session"
    );
    let users: Vec<_> = items
        .iter()
        .filter_map(|i| match i {
            RecordItem::UserMessage(m) => m.text.as_deref(),
            _ => None,
        })
        .collect();
    assert_eq!(
        users,
        ["\"Run the shell command that prints the marker, then tell me what it printed.\""],
        "the user message repeats the hook's prompt"
    );
    let said: Vec<_> = items
        .iter()
        .filter_map(|i| match i {
            RecordItem::AssistantMessage(m) => m.text.as_deref(),
            _ => None,
        })
        .collect();
    assert_eq!(said, ["Done: the command ran and I read its output."]);
    let models: Vec<_> = items
        .iter()
        .filter_map(|i| match i {
            RecordItem::AssistantMessage(m) => m.model.as_deref(),
            _ => None,
        })
        .collect();
    assert_eq!(models, ["fake-model"], "the model that wrote the text");
    let started: Vec<_> = items
        .iter()
        .filter_map(|i| match i {
            RecordItem::ToolStarted(c) => Some((c.tool_call_id.as_str(), c.tool_name.as_str())),
            _ => None,
        })
        .collect();
    assert_eq!(started, [("call_e2e_0002", "bash")]);
    let finished: Vec<_> = items
        .iter()
        .filter_map(|i| match i {
            RecordItem::ToolFinished(r) => Some((r.tool_call_id.as_str(), r.success, r.exit_code)),
            _ => None,
        })
        .collect();
    assert_eq!(finished, [("call_e2e_0002", Some(true), Some(0))]);
    assert_tokens_equal_the_session_row("basic", &items);
}

/// The record's usage, summed, equals OpenCode's own session totals, kind
/// by kind, with one usage per assistant message.
fn assert_tokens_equal_the_session_row(scenario: &str, items: &[RecordItem]) {
    let row = session_row(scenario);
    let usage: Vec<_> = items
        .iter()
        .filter_map(|i| match i {
            RecordItem::Usage(u) => Some(u),
            _ => None,
        })
        .collect();
    let mut ids: Vec<_> = usage.iter().map(|u| u.message_id.clone()).collect();
    ids.dedup();
    assert_eq!(ids.len(), usage.len(), "{scenario}: one usage per message");
    let sum = |f: fn(&crate::contract::UsageReported) -> Option<u64>| {
        usage.iter().map(|u| f(u).unwrap_or(0)).sum::<u64>()
    };
    let kinds = [
        (sum(|u| u.input_tokens), "tokens_input"),
        (sum(|u| u.output_tokens), "tokens_output"),
        (sum(|u| u.reasoning_tokens), "tokens_reasoning"),
        (sum(|u| u.cache_read_tokens), "tokens_cache_read"),
        (sum(|u| u.cache_write_tokens), "tokens_cache_write"),
    ];
    for (ours, column) in kinds {
        assert_eq!(Some(ours), row[column].as_u64(), "{scenario}: {column}");
    }
    assert!(
        usage
            .iter()
            .all(|u| u.model.as_deref() == Some("fake-model"))
    );
}

#[test]
fn two_runs_of_one_session_are_one_record() {
    let (items, _) = items_of("two-turns");
    let prompts = items
        .iter()
        .filter(|i| matches!(i, RecordItem::UserMessage(_)))
        .count();
    assert_eq!(prompts, 2);
    let calls = items
        .iter()
        .filter(|i| matches!(i, RecordItem::ToolFinished(_)))
        .count();
    assert_eq!(calls, 2);
    assert_tokens_equal_the_session_row("two-turns", &items);
}

#[test]
fn failed_refused_and_killed_calls_read_as_they_ended() {
    let finished = |scenario: &str| -> Vec<(Option<bool>, Option<i64>)> {
        items_of(scenario)
            .0
            .iter()
            .filter_map(|i| match i {
                RecordItem::ToolFinished(r) => Some((r.success, r.exit_code)),
                _ => None,
            })
            .collect()
    };
    assert_eq!(finished("failing"), [(Some(false), Some(2))]);
    assert_eq!(
        finished("permission"),
        [(Some(false), None)],
        "the call ended in error"
    );
    assert_eq!(finished("kill"), [], "the killed call never finished");
    let (killed, _) = items_of("kill");
    assert!(
        killed
            .iter()
            .any(|i| matches!(i, RecordItem::ToolStarted(_)))
    );
    assert_tokens_equal_the_session_row("model-error", &items_of("model-error").0);
}

#[test]
fn the_rendering_only_grows_as_the_journal_does() {
    let dir = tempfile::tempdir().expect("tmp");
    let db = db_of(dir.path(), "two-turns");
    let id = session_row("two-turns")["id"]
        .as_str()
        .expect("id")
        .to_string();
    let whole = render_all(&db, &id).expect("rendered");
    let conn = rusqlite::Connection::open(&db).expect("db");
    conn.execute("DELETE FROM event WHERE seq >= 30", [])
        .expect("cut");
    let part = render_all(&db, &id).expect("rendered");
    assert!(part.len() < whole.len() && whole.starts_with(&part));
    conn.execute("DELETE FROM event WHERE seq = 3", [])
        .expect("a gap");
    let gap = render_all(&db, &id).expect_err("a journal with a gap");
    assert!(gap.to_string().contains("seq"), "{gap}");
    assert_eq!(render_all(&db, "ses_other").expect("none").len(), 0);
}

#[test]
fn the_database_lists_its_sessions() {
    let dir = tempfile::tempdir().expect("tmp");
    let db = db_of(dir.path(), "basic");
    let row = session_row("basic");
    let listed = store::sessions(&db);
    assert_eq!(
        listed,
        [(
            row["id"].as_str().expect("id").to_string(),
            row["time_updated"].as_i64().expect("time") * 1_000_000
        )]
    );
    assert!(store::sessions(&dir.path().join("none.db")).is_empty());
}

/// The plugin leaves out exactly the bus events that restate the record,
/// and hands over the three hooks the dialect reads, waiting for each.
#[test]
fn the_plugin_leaves_out_only_what_the_record_restates() {
    let plugin = super::PLUGIN;
    let list = plugin
        .split("const RESTATED = new Set([")
        .nth(1)
        .and_then(|rest| rest.split("])").next())
        .expect("the plugin's list of restated events");
    let left_out: Vec<&str> = list.split('"').skip(1).step_by(2).collect();
    assert_eq!(
        left_out,
        [
            "message.updated",
            "message.part.updated",
            "message.part.delta",
            "session.updated",
            "session.status",
            "session.diff"
        ]
    );
    for hook in ["chat.message", "tool.execute.before", "tool.execute.after"] {
        let line = format!("\"{hook}\": (input, output) => handAndWait(\"{hook}\"");
        assert!(plugin.contains(&line), "{hook}");
    }
    assert!(
        plugin.contains("const HOOK = {hook_bin}"),
        "install names the hook binary"
    );
}

/// What OpenCode's hooks deliver is digested into every genesis: a change
/// to the profile must be seen here first.
#[test]
fn the_capability_profile_is_pinned() {
    use crate::agents::adapter::Adapter;
    let profile = super::Opencode.capability();
    assert_eq!(
        profile.items(),
        [
            "adapter=opencode",
            "tool_call_ids=true",
            "native_turn_ids=false",
            "turn_end_signal=true",
            "session_end_signal=true",
            "subagent_routing=false",
            "duplicate_delivery=true",
            "timestamps=agent_millis_or_iso",
        ]
    );
    assert_eq!(
        profile.digest_hex(),
        "e1e184c319dae2919cff3e369dc9c28f6b9ade2049b00ba2f502cf0952f92beb",
        "OpenCode profile changed"
    );
}

/// A row whose data is not JSON is kept, as text, and read as a line the
/// dialect does not know; the rows after it read as before.
#[test]
fn a_row_that_is_not_json_is_kept_and_reported() {
    let dir = tempfile::tempdir().expect("tmp");
    let db = db_of(dir.path(), "basic");
    let id = session_row("basic")["id"].as_str().expect("id").to_string();
    let before = render_all(&db, &id).expect("rendered");
    let conn = rusqlite::Connection::open(&db).expect("db");
    conn.execute("UPDATE event SET data = '{not json' WHERE seq = 1", [])
        .expect("spoiled");
    let after = render_all(&db, &id).expect("rendered");
    let lines: Vec<&[u8]> = after.split(|b| *b == b'\n').collect();
    let at = RecordAt {
        path: String::new(),
        offset: 0,
    };
    let (read, _, _) = record::read_marked(lines[1], &at);
    assert!(
        matches!(read.items.as_slice(), [RecordItem::Unrecognized { .. }]),
        "{read:?}"
    );
    let tail = |b: &[u8]| {
        b.split(|c| *c == b'\n')
            .skip(2)
            .map(<[u8]>::to_vec)
            .collect::<Vec<_>>()
    };
    assert_eq!(tail(&before), tail(&after));
    // The data is OpenCode's, byte for byte.
    let row: Value =
        serde_json::from_str(fixture("basic", "event.jsonl").lines().next().expect("row"))
            .expect("row");
    let data = row["data"].as_str().expect("data");
    assert!(String::from_utf8_lossy(lines[0]).contains(&format!(",\"data\":{data}}}")));
}

/// An event the dialect does not model, as OpenCode sent it: observed.
#[test]
fn a_todo_list_update_is_observed() {
    let read = hooks_of("todo");
    let kinds: Vec<&str> = read.iter().map(|(e, _)| e.as_str()).collect();
    assert_eq!(
        kinds,
        [
            "session.created",
            "chat.message",
            "tool.execute.before",
            "todo.updated",
            "tool.execute.after",
            "session.idle"
        ]
    );
    let SignalKind::Lifecycle(Payload::HookObserved(seen)) = &read[3].1.kind else {
        panic!("todo.updated: {:?}", read[3].1.kind)
    };
    assert_eq!(seen.event, "todo.updated");
    let SignalKind::ToolRequested(call) = &read[2].1.kind else {
        panic!("the todowrite call")
    };
    assert_eq!(call.tool_name, "todowrite");
}

/// A stretch of the rendering is the same bytes at the same offsets as the
/// whole, ends at a line end, and reads no further than it must.
#[test]
fn a_stretch_of_the_rendering_is_the_whole_one_cut() {
    let dir = tempfile::tempdir().expect("tmp");
    let db = db_of(dir.path(), "two-turns");
    let id = session_row("two-turns")["id"]
        .as_str()
        .expect("id")
        .to_string();
    let whole = render_all(&db, &id).expect("rendered");
    let total = whole.len() as u64;
    for (keep_from, upto) in [
        (0, 1),
        (100, 5000),
        (4000, 4001),
        (total - 10, total),
        (total + 5, u64::MAX),
    ] {
        let part = store::render(&db, &id, keep_from, upto).expect("rendered");
        let end = part.base + part.bytes.len() as u64;
        assert_eq!(part.base, keep_from.min(total), "{keep_from}..{upto}");
        assert_eq!(
            &whole[part.base as usize..end as usize],
            part.bytes.as_slice()
        );
        assert!(
            end == total || whole[end as usize - 1] == b'\n',
            "a line end"
        );
        assert!(end >= upto.min(total), "{keep_from}..{upto}: to {end}");
        let next_line = whole[upto.min(total) as usize..]
            .iter()
            .position(|b| *b == b'\n');
        if let Some(nl) = next_line.filter(|_| upto < total) {
            assert!(
                end <= upto + nl as u64 + 1,
                "no further than the line that reaches upto"
            );
        }
    }
}

/// The session's title is read from its `session.*` rows once it is not
/// OpenCode's placeholder: the capture's session starts as `New session -
/// <time>` and is then titled by the title request's answer (every later
/// row repeats it; the session takes it once).
#[test]
fn the_title_is_taken_once_it_is_not_the_placeholder() {
    let (items, _) = items_of("basic");
    let titles: Vec<&str> = items
        .iter()
        .filter_map(|i| match i {
            RecordItem::Title(t) => Some(t.title.as_str()),
            _ => None,
        })
        .collect();
    assert!(!titles.is_empty());
    assert!(
        titles.iter().all(|t| *t == "Harnery e2e session"),
        "{titles:?}"
    );
    let at = RecordAt {
        path: "/d/opencode.db".into(),
        offset: 0,
    };
    let row = |title: &str| {
        let data =
            serde_json::json!({"sessionID": "ses_1", "info": {"id": "ses_1", "title": title}});
        let line =
            serde_json::json!({"seq": 4, "id": "evt_1", "type": "session.updated.1", "data": data});
        record::read_marked(line.to_string().as_bytes(), &at)
            .0
            .items
    };
    assert!(row("New session - 2026-12-06T10:14:21.076Z").is_empty());
    assert!(row("Child session - 2026-12-06T10:14:21.076Z").is_empty());
    assert!(matches!(
        &row("Fix the failing test")[..],
        [RecordItem::Title(t)] if t.title == "Fix the failing test" && t.field == "title"
    ));
    // Only the placeholder's exact shape is one.
    assert_eq!(row("New session - notes").len(), 1);
}

/// A finished call's text is its state's `output`; a failed or rejected
/// one's is its `error`.
#[test]
fn a_calls_output_is_its_state_output_or_error() {
    let outputs = |scenario: &str| -> Vec<Option<String>> {
        items_of(scenario)
            .0
            .into_iter()
            .filter_map(|i| match i {
                RecordItem::ToolFinished(r) => Some(r.output),
                _ => None,
            })
            .collect()
    };
    assert_eq!(
        outputs("failing"),
        [Some(
            "ls: cannot access '/nonexistent-harnery': No such file or directory\n".into()
        )]
    );
    assert_eq!(
        outputs("permission"),
        [Some(
            "The user rejected permission to use this specific tool call.".into()
        )]
    );
}
