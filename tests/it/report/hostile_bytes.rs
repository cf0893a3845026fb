//! Hostile bytes through the real binaries: session ids, tool names and
//! prompts carrying NUL, ESC, an OSC clipboard write, a screen clear, a C1
//! control and a bidi override, delivered by `harnery-hook` as Claude Code
//! and Copilot send them, then finalized and read back by every read
//! command. None stops; no raw control character reaches the terminal in
//! human output; `--json` parses and keeps the original text. And a ledger
//! row that cannot be read (text that is not UTF-8) is named and passed
//! over by `health`, `validate`, `export`, `usage`, `sessions` and `show`.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Output;

use common::*;
use serde_json::{Value, json};

/// An OSC 52 clipboard write, a screen clear, NUL.
const CLAUDE_ID: &str = "evil-cc\u{1b}]52;c;ZXZpbA==\u{7}\u{1b}[2J\u{0}tail";
const COPILOT_ID: &str = "evil-co\u{1b}[31m\u{0}\u{9b}2Jtail";
const PROMPT: &str = "hi \u{1b}[31mred\u{1b}[0m \u{0} nul \u{202e}gnp.exe\u{1b}]52;c;cHduZWQ=\u{7}";
const TOOL: &str = "Ba\u{1b}[2Jsh\u{0}";

fn claude_session(home: &Path) {
    let id = CLAUDE_ID;
    for line in [
        json!({"hook_event_name": "SessionStart", "session_id": id, "source": "startup"}),
        json!({"hook_event_name": "UserPromptSubmit", "session_id": id, "prompt": PROMPT}),
        json!({"hook_event_name": "PreToolUse", "session_id": id, "tool_name": TOOL,
               "tool_input": {"command": "ls \u{1b}[2J"}, "tool_use_id": "t\u{1b}1"}),
        json!({"hook_event_name": "PostToolUse", "session_id": id, "tool_name": TOOL,
               "tool_input": {"command": "ls"}, "tool_use_id": "t\u{1b}1", "tool_response": {}}),
        json!({"hook_event_name": "Stop", "session_id": id}),
    ] {
        deliver(home, "claude-code", &line.to_string());
    }
}

fn copilot_session(home: &Path) {
    let id = COPILOT_ID;
    let at = |ms: i64| 1_795_997_711_500_i64 + ms;
    for (event, stdin) in [
        (
            "sessionStart",
            json!({"sessionId": id, "timestamp": at(0), "cwd": "/tmp", "source": "new"}),
        ),
        (
            "userPromptSubmitted",
            json!({"sessionId": id, "timestamp": at(100), "cwd": "/tmp", "prompt": PROMPT}),
        ),
        (
            "preToolUse",
            json!({"sessionId": id, "timestamp": at(200), "cwd": "/tmp", "toolName": TOOL,
            "toolArgs": {"command": "echo \u{1b}[2J"}}),
        ),
        (
            "postToolUse",
            json!({"sessionId": id, "timestamp": at(300), "cwd": "/tmp", "toolName": TOOL,
            "toolArgs": {"command": "echo"}, "toolResult": {"resultType": "success", "textResultForLlm": "\u{1b}[2J"}}),
        ),
        (
            "agentStop",
            json!({"sessionId": id, "timestamp": at(400), "cwd": "/tmp", "stopReason": "end_turn"}),
        ),
        (
            "sessionEnd",
            json!({"sessionId": id, "timestamp": at(500), "cwd": "/tmp", "reason": "complete"}),
        ),
    ] {
        let line = json!({"event": event, "stdin_raw": stdin.to_string()});
        deliver(home, "copilot", &line.to_string());
    }
}

fn hostile_home(dir: &Path) -> PathBuf {
    let home = dir.join("home");
    claude_session(&home);
    copilot_session(&home);
    // The spool reads them before finalize, named by a prefix.
    for args in [
        &["spool", "ls"][..],
        &["spool", "cat", "claude-code", "evil-cc"],
        &["spool", "cat", "copilot", "evil-co"],
    ] {
        let out = run(&home, args);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
        assert_terminal_safe(args, &out);
    }
    let out = run(&home, &["finalize"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_terminal_safe(&["finalize"], &out);
    home
}

/// The first character a terminal would act on or reorder, if any: C0
/// controls but line feed and tab, DEL, C1 controls, bidi and other
/// invisible format characters; or a byte that is not UTF-8.
fn raw_control(bytes: &[u8]) -> Option<String> {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return Some("a byte that is not UTF-8".into());
    };
    text.chars()
        .find(|&c| {
            (c.is_control() && c != '\n' && c != '\t')
                || matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
        })
        .map(|c| format!("{c:?}"))
}

fn assert_terminal_safe(args: &[&str], out: &Output) {
    for (name, bytes) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
        if let Some(c) = raw_control(bytes) {
            panic!(
                "{args:?} wrote {c} raw on {name}: {:?}",
                String::from_utf8_lossy(bytes)
            );
        }
    }
}

/// Every JSON value `out` printed: one document, or one per line.
fn json_values(args: &[&str], out: &Output) -> Vec<Value> {
    let text = stdout(out);
    if let Ok(v) = serde_json::from_str(&text) {
        return vec![v];
    }
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{args:?}: {e}: {l:?}")))
        .collect()
}

/// Whether any string inside `v` contains `wanted`.
fn holds(v: &Value, wanted: &str) -> bool {
    match v {
        Value::String(s) => s.contains(wanted),
        Value::Array(a) => a.iter().any(|x| holds(x, wanted)),
        Value::Object(o) => o
            .iter()
            .any(|(k, x)| k.contains(wanted) || holds(x, wanted)),
        _ => false,
    }
}

/// `export` writes JSON whatever the terminal: its strings stay exactly
/// as stored (a bidi override inside a JSON string is valid JSON), and
/// serde_json escapes every C0 control.
fn assert_machine_safe(args: &[&str], out: &Output) {
    let raw_c0 = out
        .stdout
        .iter()
        .any(|&b| (b < 0x20 && b != b'\n') || b == 0x7f);
    assert!(!raw_c0, "{args:?} wrote a raw C0 control in its JSON");
    if let Some(c) = raw_control(&out.stderr) {
        panic!("{args:?} wrote {c} raw on stderr: {}", stderr(out));
    }
}

/// The read commands, with the session named by a prefix (argv cannot
/// carry a NUL), each with whether it has `--json`.
fn read_commands(session: &'static str) -> Vec<(Vec<&'static str>, bool)> {
    vec![
        (vec!["sessions"], true),
        (vec!["sessions", "--epoch", "all"], true),
        (vec!["show", session], true),
        (vec!["replay", session], true),
        (vec!["receipts", session], true),
        (vec!["audit"], true),
        (vec!["audit", "--session", session], true),
        (vec!["usage"], true),
        (vec!["health"], true),
        (vec!["checkpoints", session], true),
        (vec!["restore", session, "--dry-run"], true),
        (vec!["validate"], true),
        (vec!["verify"], true),
        (vec!["end", "--list"], true),
        (vec!["spool", "ls"], true),
        (vec!["epoch", "status"], true),
    ]
}

#[test]
fn hostile_ids_tool_names_and_prompts_stop_nothing_and_never_reach_the_terminal_raw() {
    let tmp = tempfile::tempdir().unwrap();
    let home = hostile_home(tmp.path());
    for session in ["evil-cc", "evil-co"] {
        for (args, has_json) in read_commands(session) {
            let out = run(&home, &args);
            assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
            assert_terminal_safe(&args, &out);
            if has_json {
                let mut with = args.clone();
                with.push("--json");
                let out = run(&home, &with);
                assert_eq!(out.status.code(), Some(0), "{with:?}: {}", stderr(&out));
                json_values(&with, &out);
            }
        }
    }
    for args in [&["export"][..], &["export", "--format", "otlp"]] {
        let out = run(&home, args);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
        assert_machine_safe(args, &out);
        json_values(args, &out);
    }
    // The escapes are visible: the id is there, shown, not dropped.
    let shown = stdout(&run(&home, &["sessions"]));
    assert!(
        shown.contains("evil-cc\\x1b]52;c;ZXZpbA==\\x07\\x1b[2J\\x00tail"),
        "{shown}"
    );
    let shown = stdout(&run(&home, &["show", "evil-cc"]));
    assert!(shown.contains("\\u{202e}gnp.exe"), "{shown}");
    // An error that quotes an id escapes it too.
    let out = run(&home, &["show", "evil"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("matches 2 sessions"),
        "{}",
        stderr(&out)
    );
    assert_terminal_safe(&["show", "evil"], &out);
    let out = run(&home, &["end", "evil-\u{1b}[2J"]);
    assert_eq!(out.status.code(), Some(2));
    assert_terminal_safe(&["end", "evil-\\x1b[2J"], &out);
}

#[test]
fn json_keeps_every_hostile_string_exactly() {
    let tmp = tempfile::tempdir().unwrap();
    let home = hostile_home(tmp.path());
    let ids: Vec<String> = sessions_json(&home)
        .iter()
        .map(|s| s["session"]["session_id"].as_str().unwrap().to_string())
        .collect();
    for id in [CLAUDE_ID, COPILOT_ID] {
        assert!(ids.iter().any(|s| s == id), "{id:?} not in {ids:?}");
    }
    for session in ["evil-cc", "evil-co"] {
        let args = ["replay", session, "--json"];
        let events = json_values(&args, &run(&home, &args));
        for wanted in [PROMPT, TOOL] {
            assert!(
                events.iter().any(|e| holds(e, wanted)),
                "{wanted:?} not kept by {args:?}"
            );
        }
    }
    let args = ["export"];
    let out = run(&home, &args);
    let rows = json_values(&args, &out);
    for wanted in [CLAUDE_ID, COPILOT_ID, PROMPT, TOOL] {
        assert!(
            rows.iter().any(|r| holds(r, wanted)),
            "{wanted:?} not exported"
        );
    }
}

/// A home with one finalized session whose ledger row is then damaged by
/// `damage` (SQL run with the sqlite3 library, as a bad disk or an edit
/// would leave it).
fn damaged_home(dir: &Path, damage: &str) -> PathBuf {
    let home = dir.join("home");
    feed_fixture(&home, "claude-code", "basic");
    let out = run(&home, &["finalize"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let db = home.join("ledgers/v2/ledger.sqlite");
    let conn = rusqlite::Connection::open(&db).unwrap();
    harnery::ledger::eventz::register(&conn).unwrap();
    conn.execute_batch(damage).unwrap();
    drop(conn);
    home
}

const BAD_SESSION_ROW: &str = "UPDATE sessions SET session_id = CAST(session_id || X'FF' AS TEXT);";
const BAD_EVENT_TEXT: &str =
    "UPDATE events SET json = CAST(CAST(json AS BLOB) || X'FF' AS TEXT) WHERE seq = 2;";
const BAD_EVENT_ID: &str = "UPDATE events SET id = CAST(id || X'FF' AS TEXT) WHERE seq = 3;";
const BAD_PRODUCER_STATE: &str = "UPDATE producer_state SET state = CAST(state || X'FF' AS TEXT);";

/// `args` exits `code` and names the damaged row on stderr.
fn names_the_row(home: &Path, args: &[&str], code: i32, row: &[&str]) -> Output {
    let out = run(home, args);
    assert_eq!(out.status.code(), Some(code), "{args:?}: {}", stderr(&out));
    for part in row {
        assert!(
            stderr(&out).contains(part),
            "{args:?} does not name {part:?}: {}",
            stderr(&out)
        );
    }
    out
}

#[test]
fn health_names_a_damaged_row_as_a_condition_and_goes_on() {
    let tmp = tempfile::tempdir().unwrap();
    let home = damaged_home(tmp.path(), BAD_SESSION_ROW);
    let out = run(&home, &["health", "--json"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let found = json_values(&["health"], &out);
    let row = found
        .iter()
        .find(|c| c["code"] == "unreadable_row")
        .expect("an unreadable_row condition");
    let detail = row["detail"].as_str().unwrap();
    assert!(
        detail.contains("table sessions row claude-code/"),
        "{detail}"
    );
    assert!(detail.contains("column session_id"), "{detail}");

    let tmp = tempfile::tempdir().unwrap();
    let home = damaged_home(tmp.path(), BAD_PRODUCER_STATE);
    let out = run(&home, &["health"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stdout(&out).contains("table producer_state row claude-code/"));
}

#[test]
fn validate_reports_a_damaged_row_as_a_finding() {
    for (damage, says) in [
        (BAD_SESSION_ROW, "table sessions row claude-code/"),
        (BAD_EVENT_TEXT, "row seq 2 does not parse"),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let home = damaged_home(tmp.path(), damage);
        let out = run(&home, &["validate"]);
        assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
        assert!(stdout(&out).contains(says), "{}", stdout(&out));
    }
}

#[test]
fn export_names_a_damaged_row_and_exports_the_rest() {
    let tmp = tempfile::tempdir().unwrap();
    let home = damaged_home(tmp.path(), BAD_EVENT_TEXT);
    let clean = tempfile::tempdir().unwrap();
    let whole = damaged_home(clean.path(), "");
    let all = json_values(&["export"], &run(&whole, &["export"])).len();
    let out = names_the_row(&home, &["export"], 1, &["row seq 2"]);
    assert_eq!(json_values(&["export"], &out).len(), all - 1);
    // A damaged id column still exports its row: its text is whole.
    let tmp = tempfile::tempdir().unwrap();
    let home = damaged_home(tmp.path(), BAD_EVENT_ID);
    let out = run(&home, &["export"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(json_values(&["export"], &out).len(), all);
    // OTLP reads the sessions table: the damaged session is left out, named.
    let tmp = tempfile::tempdir().unwrap();
    let home = damaged_home(tmp.path(), BAD_SESSION_ROW);
    names_the_row(
        &home,
        &["export", "--format", "otlp"],
        1,
        &["table sessions row claude-code/"],
    );
}

#[test]
fn usage_goes_on_past_a_damaged_id_and_sessions_name_a_damaged_row() {
    let tmp = tempfile::tempdir().unwrap();
    let home = damaged_home(tmp.path(), BAD_EVENT_ID);
    let out = run(&home, &["usage", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let tmp = tempfile::tempdir().unwrap();
    let home = damaged_home(tmp.path(), BAD_SESSION_ROW);
    for args in [&["sessions"][..], &["audit"]] {
        let out = names_the_row(&home, args, 1, &["table sessions row claude-code/"]);
        assert_terminal_safe(args, &out);
    }
}

#[test]
fn show_names_a_damaged_row_and_shows_the_rest() {
    let tmp = tempfile::tempdir().unwrap();
    let home = damaged_home(tmp.path(), BAD_EVENT_TEXT);
    let id = "82655d0f";
    let out = names_the_row(&home, &["show", id], 1, &["row seq 2"]);
    assert!(stdout(&out).contains("session claude-code 82655d0f"));
    // A session row that cannot be read: the session cannot be named, and
    // the refusal says which row was passed over.
    let tmp = tempfile::tempdir().unwrap();
    let home = damaged_home(tmp.path(), BAD_SESSION_ROW);
    names_the_row(
        &home,
        &["show", id],
        2,
        &["table sessions row claude-code/"],
    );
}

#[test]
fn finalize_goes_on_past_a_damaged_old_row_and_names_one_it_needs() {
    let tmp = tempfile::tempdir().unwrap();
    let home = damaged_home(tmp.path(), BAD_PRODUCER_STATE);
    let before = ledger_rows(&home);
    // No signal for the damaged session: it is set aside, the run goes on.
    start_session(&home, "copilot", "another-session");
    let out = run(&home, &["finalize", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let summary: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        holds(&summary["health"], "table producer_state row"),
        "{summary}"
    );
    let after = ledger_rows(&home);
    assert_eq!(after[..before.len()], before[..], "earlier rows changed");
    assert!(
        after.len() > before.len(),
        "the new session was not drained"
    );
    // A signal for the damaged session needs its state: exit 2, named.
    let line = json!({"hook_event_name": "UserPromptSubmit",
        "session_id": "82655d0f-45cd-404f-9e4e-e90fea255247", "prompt": "more"});
    deliver(&home, "claude-code", &line.to_string());
    names_the_row(
        &home,
        &["finalize"],
        2,
        &[
            "table producer_state row claude-code/82655d0f",
            "column state",
        ],
    );
    assert_eq!(ledger_rows(&home), after, "a refused run wrote rows");
}

#[test]
fn a_payload_that_is_not_utf8_is_kept_and_stops_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let bytes: &[u8] =
        b"{\"hook_event_name\":\"UserPromptSubmit\",\"session_id\":\"bad\xff\xfeid\",\"prompt\":\"x\xffy\x1b[2J\"}";
    crate::common::hook(&home, &["claude-code"], bytes);
    claude_session(&home);
    for args in [
        &["finalize"][..],
        &["verify"],
        &["validate"],
        &["sessions"],
        &["health"],
    ] {
        let out = run(&home, args);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
        assert_terminal_safe(args, &out);
    }
    // Kept as an unrecognized signal, its bytes in the raw archive (which
    // `verify` just checked).
    let args = ["export"];
    let rows = json_values(&args, &run(&home, &args));
    let kept = rows
        .iter()
        .find(|r| r["type"] == "signal.unrecognized")
        .expect("the payload is kept as a signal.unrecognized event");
    assert!(
        holds(&kept["payload"]["reason"], "malformed_json"),
        "{kept}"
    );
}
