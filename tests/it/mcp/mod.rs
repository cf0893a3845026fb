//! `harnery mcp` driven over stdio as an MCP client drives it: the real
//! binary spawned, JSON-RPC lines written to its stdin, answers read from
//! its stdout, every wait under a generous hang guard. The home is real:
//! corpus sessions through the real hook binary, a checkpoint, `harnery
//! finalize`. Every file of the ledger is hashed before and after.

mod client;

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::common;
use client::Client;

const FILE_TOOLS: &str = "42c6ba0c-46ef-4f35-b6c4-db12bb974bc0";
const TOOL_FAILURE: &str = "9c520b8b-ad43-42aa-8c1d-37ca016522f8";
/// A GitHub token shape the built-in masks know (not a real token).
const SECRET: &str = "ghp_Zq3vR8sLk2Wm9Xt4Yb7Nc1Pd6Fh0Jg5Ke8Aa";

/// A finalized home: the file-tools and tool-failure corpus sessions, a
/// prompt holding a token, a checkpoint of the file-tools session.
fn home() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    common::feed_fixture(&home, "claude-code", "file-tools");
    common::feed_fixture(&home, "claude-code", "tool-failure");
    let prompt = json!({
        "session_id": TOOL_FAILURE,
        "transcript_path": "/nonexistent/t.jsonl",
        "cwd": "/tmp/proj",
        "hook_event_name": "UserPromptSubmit",
        "prompt": format!("deploy with token {SECRET} please"),
    });
    common::deliver(&home, "claude-code", &prompt.to_string());
    let out = common::run(&home, &["checkpoint", FILE_TOOLS, "--id", "cp-one"]);
    assert!(out.status.success(), "{}", common::stderr(&out));
    let out = common::run(&home, &["finalize"]);
    assert!(out.status.success(), "{}", common::stderr(&out));
    (dir, home)
}

/// Every file under the ledgers, by path, with its bytes' hash. SQLite's
/// `-shm` index and `-wal` log are left out: any reader (`harnery
/// sessions` too) leaves them beside the database; the log must be empty
/// (no page was written).
fn ledger_hashes(home: &Path) -> Vec<(PathBuf, String)> {
    fn walk(dir: &Path, out: &mut Vec<(PathBuf, String)>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if name.ends_with("-shm") {
                continue;
            } else if name.ends_with("-wal") {
                let len = std::fs::metadata(&path).unwrap().len();
                assert_eq!(len, 0, "{}: no page was written", path.display());
            } else if path.is_dir() {
                walk(&path, out);
            } else {
                let bytes = std::fs::read(&path).unwrap();
                out.push((path, blake3::hash(&bytes).to_hex().to_string()));
            }
        }
    }
    let mut out = Vec::new();
    walk(&home.join("ledgers"), &mut out);
    out.sort();
    assert!(!out.is_empty(), "the home has a ledger");
    out
}

fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or("")
}

fn is_error(result: &Value) -> bool {
    result["isError"] == json!(true)
}

#[test]
fn every_tool_answers_over_stdio_and_the_ledger_stays_byte_identical() {
    let (_dir, home) = home();
    let before = ledger_hashes(&home);
    let mut c = Client::start(&home);
    let init = c.initialize("2025-06-18");
    assert_eq!(init["protocolVersion"], "2025-06-18", "{init}");
    assert_eq!(init["serverInfo"]["name"], "harnery");
    assert!(init["capabilities"]["tools"].is_object(), "{init}");

    let list = c.request("tools/list", json!({}));
    let names: Vec<&str> = list["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "search",
            "sessions",
            "session",
            "usage",
            "file_history",
            "checkpoints",
            "restore_plan"
        ]
    );
    for tool in list["tools"].as_array().unwrap() {
        let schema = &tool["inputSchema"];
        assert_eq!(schema["type"], "object", "{tool}");
        assert_eq!(tool["annotations"]["readOnlyHint"], true, "{tool}");
    }
    let search = &list["tools"][0]["inputSchema"];
    assert_eq!(search["required"], json!(["query"]), "{search}");
    for field in [
        "kind", "agent", "tool", "failed", "since", "offset", "limit",
    ] {
        assert!(search["properties"][field].is_object(), "{field}: {search}");
    }

    // search: a tool input of the file-tools session, then a failed
    // tool's output only.
    let hits = c.call(
        "search",
        json!({"query": "note.txt", "kind": ["tool-input"]}),
    );
    assert!(!is_error(&hits), "{hits}");
    let found = hits["structuredContent"]["hits"].as_array().unwrap();
    assert!(!found.is_empty(), "{hits}");
    assert!(
        found
            .iter()
            .all(|h| h["session"] == FILE_TOOLS && h["kind"] == "tool-input")
    );
    assert!(text(&hits).contains(FILE_TOOLS) && text(&hits).contains("note.txt"));
    let failed = c.call(
        "search",
        json!({"query": "exit", "failed": true, "limit": 50}),
    );
    assert!(!is_error(&failed), "{failed}");
    let failed = failed["structuredContent"]["hits"]
        .as_array()
        .unwrap()
        .clone();
    assert!(!failed.is_empty());
    assert!(
        failed.iter().all(|h| h["session"] == TOOL_FAILURE),
        "{failed:?}"
    );

    // Paging: one hit at a time, the second call starting where the first said.
    let first = c.call("search", json!({"query": "note.txt", "limit": 1}));
    assert!(!is_error(&first), "{first}");
    let more = first["structuredContent"]["more"].as_str().unwrap();
    assert!(more.contains("offset 1"), "{more}");
    let second = c.call(
        "search",
        json!({"query": "note.txt", "limit": 1, "offset": 1}),
    );
    assert_ne!(
        first["structuredContent"]["hits"][0],
        second["structuredContent"]["hits"][0]
    );

    // A project keeps the hits of its sessions only.
    let all = c.call("search", json!({"query": "note.txt"}));
    let project = all["structuredContent"]["hits"][0]["project"]
        .as_str()
        .expect("a hit names its session's project")
        .to_string();
    let kept = c.call("search", json!({"query": "note.txt", "project": project}));
    let kept_hits = kept["structuredContent"]["hits"].as_array().unwrap();
    assert!(!kept_hits.is_empty(), "{kept}");
    assert!(kept_hits.iter().all(|h| h["project"] == project.as_str()));
    let none = c.call(
        "search",
        json!({"query": "note.txt", "project": "no-such-project"}),
    );
    assert!(text(&none).contains("no hits"), "{none}");

    // The token is masked in every answer that holds the prompt.
    let secret = c.call("search", json!({"query": "deploy token"}));
    assert!(text(&secret).contains("[masked:"), "{secret}");
    let session = c.call("session", json!({"session": TOOL_FAILURE, "limit": 200}));
    for answer in [&secret, &session] {
        assert!(!answer.to_string().contains(SECRET), "{answer}");
    }
    assert!(session.to_string().contains("[masked:"), "{session}");

    // sessions: both, with their counts.
    let sessions = c.call("sessions", json!({}));
    let listed = sessions["structuredContent"]["sessions"]
        .as_array()
        .unwrap();
    let ids: Vec<&str> = listed
        .iter()
        .map(|s| s["session"].as_str().unwrap())
        .collect();
    assert!(
        ids.contains(&FILE_TOOLS) && ids.contains(&TOOL_FAILURE),
        "{ids:?}"
    );
    assert!(
        listed
            .iter()
            .all(|s| s["agent"] == "claude-code" && s["events"].as_u64() > Some(0))
    );
    // Each has its title (its first prompt, masked) and project.
    assert!(listed.iter().all(|s| s["title"].is_string()), "{sessions}");
    assert!(!sessions.to_string().contains(SECRET), "{sessions}");
    let elsewhere = c.call("sessions", json!({"project": "no-such-project"}));
    assert!(text(&elsewhere).contains("no sessions"), "{elsewhere}");
    let one = c.call("sessions", json!({"limit": 1}));
    assert_eq!(
        one["structuredContent"]["sessions"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    assert!(text(&one).contains("offset 1"), "{one}");

    // session: the prompt, the tool calls with their inputs and outcomes,
    // in offset order; then from an offset on.
    let read = c.call("session", json!({"session": &FILE_TOOLS[..8]}));
    assert!(!is_error(&read), "{read}");
    let entries = read["structuredContent"]["entries"].as_array().unwrap();
    let kinds: Vec<&str> = entries
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    assert!(
        kinds.contains(&"prompt") && kinds.contains(&"tool call"),
        "{kinds:?}"
    );
    assert!(
        entries
            .iter()
            .any(|e| e["kind"] == "tool result" && e["outcome"] == "success")
    );
    assert!(
        text(&read).contains("Write, read and edit note.txt"),
        "{read}"
    );
    let offsets: Vec<u64> = entries
        .iter()
        .map(|e| e["offset"].as_u64().unwrap())
        .collect();
    assert!(offsets.windows(2).all(|w| w[0] < w[1]), "{offsets:?}");
    let later = offsets[offsets.len() / 2];
    let tail = c.call(
        "session",
        json!({"session": FILE_TOOLS, "offset": later, "limit": 2}),
    );
    let tail_entries = tail["structuredContent"]["entries"].as_array().unwrap();
    assert_eq!(tail_entries.len(), 2, "{tail}");
    assert!(
        tail_entries
            .iter()
            .all(|e| e["offset"].as_u64() >= Some(later))
    );
    let next = tail["structuredContent"]["next_offset"].as_u64().unwrap();
    assert!(next > later);
    let short = c.call("session", json!({"session": FILE_TOOLS, "max_chars": 40}));
    assert!(text(&short).contains("more characters"), "{short}");

    // usage: a total (the corpus records no usage without its transcript:
    // an empty tally still answers).
    let usage = c.call("usage", json!({"by": "model"}));
    assert!(!is_error(&usage), "{usage}");
    assert!(usage["structuredContent"].is_object(), "{usage}");

    // file_history: the file-tools session wrote, read and edited note.txt.
    let history = c.call("file_history", json!({"path": "proj/note.txt"}));
    assert!(!is_error(&history), "{history}");
    let calls = history["structuredContent"]["calls"].as_array().unwrap();
    let access: Vec<&str> = calls
        .iter()
        .map(|c| c["access"].as_str().unwrap())
        .collect();
    assert!(
        access.contains(&"read") && access.contains(&"changed"),
        "{access:?}"
    );
    assert!(
        calls
            .iter()
            .all(|c| c["session"] == format!("claude-code/{FILE_TOOLS}"))
    );
    assert_eq!(history["structuredContent"]["sessions"], 1);

    // checkpoints and restore_plan: the pinned checkpoint, and what
    // restoring to it would give back, applied never.
    let cps = c.call("checkpoints", json!({"session": FILE_TOOLS}));
    assert!(!is_error(&cps), "{cps}");
    let list = cps["structuredContent"]["checkpoints"].as_array().unwrap();
    assert!(
        list.iter().any(|cp| cp["checkpoint_id"] == "cp-one"),
        "{cps}"
    );
    let plan = c.call(
        "restore_plan",
        json!({"session": FILE_TOOLS, "checkpoint": "cp-one"}),
    );
    assert!(!is_error(&plan), "{plan}");
    assert_eq!(plan["structuredContent"]["applied"], false);
    assert!(
        plan["structuredContent"]["seed_events"].as_u64() > Some(0),
        "{plan}"
    );
    assert!(text(&plan).contains("nothing was restored"), "{plan}");

    c.finish();
    assert_eq!(ledger_hashes(&home), before, "the ledger is byte-identical");
}

#[test]
fn bad_input_gets_a_clear_answer_and_the_server_goes_on() {
    let (_dir, home) = home();
    let before = ledger_hashes(&home);
    let mut c = Client::start(&home);
    c.initialize("2025-06-18");

    // An unknown tool is a JSON-RPC error naming the tools.
    let unknown = c.request_raw("tools/call", json!({"name": "drop_table", "arguments": {}}));
    let message = unknown["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("drop_table") && message.contains("search"),
        "{unknown}"
    );

    // Bad arguments are tool errors the model can read.
    let cases = [
        ("search", json!({}), "query"),
        ("search", json!({"query": "\"open"}), "never closed"),
        ("search", json!({"query": "\"a-\""}), "too short"),
        (
            "search",
            json!({"query": "x", "kind": ["tool"]}),
            "not a kind",
        ),
        (
            "search",
            json!({"query": "x", "agent": "vim"}),
            "not an agent",
        ),
        (
            "search",
            json!({"query": "x", "since": "yesterday"}),
            "RFC 3339",
        ),
        ("search", json!({"query": "x", "limit": -1}), "limit"),
        ("search", json!({"query": "x", "colour": "red"}), "colour"),
        ("sessions", json!({"agent": "emacs"}), "not an agent"),
        (
            "session",
            json!({"session": "no-such-session"}),
            "no-such-session",
        ),
        ("session", json!({"session": 42}), "session"),
        ("usage", json!({"by": "week"}), "grouping"),
        ("file_history", json!({"path": "ab"}), "too short"),
        ("checkpoints", json!({"session": "zzzz"}), "zzzz"),
        (
            "restore_plan",
            json!({"session": FILE_TOOLS, "checkpoint": "nope"}),
            "nope",
        ),
    ];
    for (tool, args, says) in cases {
        let answer = c.call(tool, args.clone());
        assert!(is_error(&answer), "{tool} {args}: {answer}");
        assert!(text(&answer).contains(says), "{tool} {args}: {answer}");
    }
    // A line that is not JSON-RPC does not end the server.
    c.send_line("this is not json");
    let list = c.request("tools/list", json!({}));
    assert_eq!(list["tools"].as_array().unwrap().len(), 7);
    c.finish();
    assert_eq!(ledger_hashes(&home), before);
}

#[test]
fn a_damaged_or_missing_ledger_is_an_error_answer_not_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let mut c = Client::start(&home);
    c.initialize("2025-06-18");
    let answer = c.call("sessions", json!({}));
    assert!(
        is_error(&answer) && text(&answer).contains("finalize"),
        "{answer}"
    );
    c.finish();

    let (_dir, home) = home_with_damage();
    let mut c = Client::start(&home);
    c.initialize("2025-06-18");
    for (tool, args) in [
        ("sessions", json!({})),
        ("search", json!({"query": "note"})),
        ("session", json!({"session": FILE_TOOLS})),
    ] {
        let answer = c.call(tool, args);
        assert!(is_error(&answer), "{tool}: {answer}");
        assert!(text(&answer).contains("ledger"), "{tool}: {answer}");
    }
    let list = c.request("tools/list", json!({}));
    assert_eq!(list["tools"].as_array().unwrap().len(), 7);
    c.finish();
}

/// A finalized home whose live ledger file is overwritten with junk.
fn home_with_damage() -> (tempfile::TempDir, PathBuf) {
    let (dir, home) = home();
    let mut damaged = 0;
    for (path, _) in ledger_hashes(&home) {
        if path.extension().is_some_and(|e| e == "sqlite" || e == "db") {
            std::fs::write(&path, b"not a database, not at all").unwrap();
            damaged += 1;
        }
    }
    assert!(damaged > 0, "the ledger has a database file");
    (dir, home)
}

#[test]
fn the_protocol_versions_the_clients_speak_are_negotiated() {
    let dir = tempfile::tempdir().unwrap();
    for version in ["2025-06-18", "2025-03-26", "2024-11-05", "2025-11-25"] {
        let mut c = Client::start(dir.path());
        let init = c.initialize(version);
        assert_eq!(init["protocolVersion"], version, "{init}");
        c.finish();
    }
}

#[test]
fn a_ledger_held_by_a_writer_mid_transaction_is_still_read() {
    let (_dir, home) = home();
    let before = ledger_hashes(&home);
    // As finalize holds it: a write transaction open, nothing committed.
    let db = home.join("ledgers/v2/ledger.sqlite");
    let writer = rusqlite::Connection::open(&db).unwrap();
    harnery::ledger::eventz::register(&writer).unwrap();
    writer.execute_batch("BEGIN IMMEDIATE").unwrap();
    let mut c = Client::start(&home);
    c.initialize("2025-06-18");
    for (tool, args) in [
        ("sessions", json!({})),
        ("search", json!({"query": "note.txt"})),
        ("session", json!({"session": FILE_TOOLS, "limit": 3})),
        ("usage", json!({})),
    ] {
        let answer = c.call(tool, args);
        assert!(!is_error(&answer), "{tool}: {answer}");
    }
    c.finish();
    writer.execute_batch("ROLLBACK").unwrap();
    drop(writer);
    assert_eq!(ledger_hashes(&home), before);
}
