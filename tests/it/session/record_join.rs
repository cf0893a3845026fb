//! The join shows: a hook span that the agent's own record joined carries
//! the record's call id, turn id and exit code in `show`, `show --json` and
//! `view`. Expectations come from the record file itself.

use crate::common;

use std::path::Path;

use assert_cmd::Command;
use common::{stderr, stdout};
use serde_json::Value;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn lines_of(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn a_copilot_span_shows_the_records_call_id_turn_and_exit_code() {
    let scenario = "shell-nonzero-exit";
    let home = tempfile::tempdir().unwrap();
    let copilot_home = home.path().join("copilot");
    let record = root().join(format!(
        "tests/fixtures/records/copilot/{scenario}.events.jsonl"
    ));
    let frames = lines_of(&record);
    let session = frames
        .iter()
        .find(|v| v["type"] == "session.start")
        .unwrap()["data"]["sessionId"]
        .as_str()
        .unwrap()
        .to_string();
    let done = frames
        .iter()
        .find(|v| v["type"] == "tool.execution_complete" && v["data"]["shellExecution"].is_object())
        .expect("a shell call's result");
    let call_id = done["data"]["toolCallId"].as_str().unwrap();
    let exit = done["data"]["shellExecution"]["exitCode"].as_i64().unwrap();
    let dir = copilot_home.join("session-state").join(&session);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(&record, dir.join("events.jsonl")).unwrap();
    let events_file = dir.join("events.jsonl");
    for v in lines_of(&root().join(format!(
        "tests/fixtures/copilot/{scenario}/hook-capture.jsonl"
    ))) {
        let raw = v["stdin_raw"].as_str().unwrap_or("").to_string();
        // The record where this test keeps it, not where it was captured.
        let stdin = match serde_json::from_str::<Value>(&raw) {
            Ok(mut p) if p.get("transcriptPath").is_some() => {
                p["transcriptPath"] = Value::String(events_file.display().to_string());
                p.to_string()
            }
            _ => raw,
        };
        Command::cargo_bin("harnery-hook")
            .unwrap()
            .env("HARNERY_HOME", home.path())
            .args(["copilot", v["event"].as_str().unwrap()])
            .write_stdin(stdin)
            .assert()
            .success();
    }
    let run = |args: &[&str]| {
        let out = common::harnery(home.path())
            .env("HARNERY_RECORDS", "on")
            .env("COPILOT_HOME", &copilot_home)
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        stdout(&out)
    };
    run(&["finalize"]);

    let doc: Value = serde_json::from_str(&run(&["show", &session, "--json"])).unwrap();
    let entry = doc["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["record"]["tool_call_id"] == call_id)
        .unwrap_or_else(|| panic!("no span joined to {call_id}: {doc:#}"));
    assert_eq!(entry["span"]["tool_call_id"], call_id);
    assert_eq!(entry["record"]["exit_code"], exit);
    assert!(entry["record"]["turn_id"].is_string(), "{entry}");
    let text = run(&["show", &session]);
    assert!(
        text.contains(&format!("record: call {call_id}")) && text.contains(&format!("exit {exit}")),
        "{text}"
    );
    let page = home.path().join("view.html");
    run(&["view", &session, "--output", page.to_str().unwrap()]);
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains(call_id), "the call id in the view");
    assert!(
        html.contains(&format!("exit code: {exit}")),
        "the exit code in the view"
    );
}
