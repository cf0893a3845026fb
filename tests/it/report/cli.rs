//! The read commands through the real binaries: corpus sessions fed to
//! `harnery-hook`, drained by `harnery finalize`, then read back with
//! `audit`, `receipts`, `health`, `export` and `end`.

use crate::common;

use std::time::{Duration, Instant};

use assert_cmd::cargo::CommandCargoExt;
use common::*;
use serde_json::Value;

fn json_lines(out: &std::process::Output) -> Vec<Value> {
    stdout(out)
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

fn finalize(home: &std::path::Path) {
    let out = run(home, &["finalize"]);
    assert!(out.status.success(), "{}", stderr(&out));
}

fn audit(home: &std::path::Path) -> Vec<Value> {
    let out = run(home, &["audit", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    json_lines(&out)
}

fn reasons(row: &Value) -> Vec<&str> {
    row["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap())
        .collect()
}

#[test]
fn a_killed_agent_is_audit_only_until_an_end_salvages_it() {
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    feed_fixture(home, "claude-code", "kill");
    finalize(home);
    let rows = audit(home);
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["class"], "audit_only");
    assert_eq!(
        reasons(&rows[0]),
        ["recovery:request_not_observed", "tool_pairing_incomplete"]
    );
    let id = rows[0]["session"]["session_id"]
        .as_str()
        .unwrap()
        .to_string();

    let out = run(home, &["receipts", &id, "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let receipts: Value = serde_json::from_slice(&out.stdout).unwrap();
    let tools = &receipts["turns"][0]["tools"];
    assert_eq!(tools["open"], 1);
    assert_eq!(tools["eligible_for_ranking"], false);
    assert!(run(home, &["receipts", &id]).status.success());

    let out = run(home, &["end", &id, "--reason", "agent was killed"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let listed = stdout(&run(home, &["end", "--list"]));
    assert!(listed.contains("awaiting finalize"), "{listed}");
    assert!(listed.contains("agent was killed"), "{listed}");
    finalize(home);
    let rows = audit(home);
    assert_eq!(
        reasons(&rows[0]),
        [
            "recovery:explicit_end_salvage",
            "recovery:request_not_observed"
        ]
    );
    let out = run(home, &["end", "--list"]);
    assert!(stdout(&out).contains("no pending end requests"));
}

#[test]
fn clean_sessions_are_eligible_and_export_as_genai_tool_spans() {
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    feed_fixture(home, "claude-code", "basic");
    finalize(home);
    let rows = audit(home);
    assert_eq!(rows[0]["class"], "eligible");
    let id = rows[0]["session"]["session_id"]
        .as_str()
        .unwrap()
        .to_string();

    let out = run(home, &["export", "--session", &id]);
    assert!(out.status.success(), "{}", stderr(&out));
    let events = json_lines(&out);
    assert!(events.iter().any(|e| e["type"] == "tool.completed"));

    let out = run(home, &["export", "--format", "otlp"]);
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let spans = doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
        .as_array()
        .unwrap();
    let tool = spans
        .iter()
        .find(|s| s["name"].as_str().unwrap().starts_with("execute_tool"))
        .expect("a tool span");
    let attrs = tool["attributes"].as_array().unwrap();
    assert!(attrs.iter().any(
        |a| a["key"] == "gen_ai.operation.name" && a["value"]["stringValue"] == "execute_tool"
    ));

    let out = run(home, &["health"]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
}

#[test]
fn a_killed_exec_is_recovered_with_command_completion_not_observed() {
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    let marker = home.join("started");
    let script = format!("touch {}; sleep 5", marker.display());
    start_session(home, "copilot", "s-x");
    let mut child = std::process::Command::cargo_bin("harnery")
        .unwrap()
        .env("HARNERY_HOME", home)
        .env("HARNERY_NOW", NOW)
        .args(["exec", "--session", "s-x", "--adapter", "copilot", "--"])
        .args(["sh", "-c", &script])
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !marker.exists() {
        assert!(Instant::now() < deadline, "the child never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    finalize(home);
    assert_eq!(reasons(&audit(home)[0]), ["command_pairing_incomplete"]);

    assert!(run(home, &["end", "s-x"]).status.success());
    finalize(home);
    assert_eq!(
        reasons(&audit(home)[0]),
        ["recovery:command_completion_not_observed"]
    );
    let out = run(home, &["export", "--format", "otlp", "--session", "s-x"]);
    let text = stdout(&out);
    assert!(text.contains("\"exec sh\""), "{text}");
    assert!(text.contains("command_completion_not_observed"));
}

#[test]
fn exec_records_a_completed_command_span() {
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    start_session(home, "claude-code", "s-y");
    let out = harnery(home)
        .args(["exec", "--session", "s-y", "--adapter", "claude-code", "--"])
        .args(["sh", "-c", "echo hi; exit 3"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(stdout(&out), "hi\n");
    finalize(home);
    let rows = audit(home);
    assert_eq!(rows[0]["class"], "eligible", "{rows:?}");
}

#[test]
fn undrained_old_spool_data_is_a_stale_condition() {
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    start_session(home, "claude-code", "s-z");
    let out = harnery(home)
        .env("HARNERY_NOW", "2026-11-28T00:00:00Z")
        .args(["end", "s-z", "--adapter", "claude-code"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let out = run(home, &["health", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let found = json_lines(&out);
    assert_eq!(found[0]["code"], "stale_spool");
}

/// The test-only digest change is honoured only in failpoint builds.
#[cfg(feature = "failpoints")]
#[test]
fn sessions_left_open_in_an_archived_epoch_are_audit_only() {
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    feed_fixture(home, "claude-code", "kill");
    feed_fixture(home, "claude-code", "basic");
    finalize(home);
    let next = |args: &[&str]| {
        harnery(home)
            .env("HARNERY_TEST_SCHEMA_SUFFIX", "next-contract")
            .args(args)
            .output()
            .unwrap()
    };
    let out = next(&["epoch", "advance"]);
    assert!(out.status.success(), "{}", stderr(&out));
    // The default reads the live epoch only; `--epoch all` reads archives.
    let out = next(&["audit", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(json_lines(&out).is_empty(), "{}", stdout(&out));
    let out = next(&["audit", "--json", "--epoch", "all"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let rows = json_lines(&out);
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert!(
        rows.iter().all(|r| r["epoch"] != "live"),
        "{rows:?} {}",
        stderr(&out)
    );
    let classes: Vec<(&str, Vec<&str>)> = rows
        .iter()
        .map(|r| (r["class"].as_str().unwrap(), reasons(r)))
        .collect();
    assert!(classes.contains(&("eligible", vec![])), "{classes:?}");
    assert!(
        classes
            .iter()
            .any(|(c, r)| *c == "audit_only" && r.contains(&"tool_pairing_incomplete")),
        "{classes:?}"
    );
}

#[test]
fn a_dead_letter_is_a_condition_naming_its_session() {
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    std::fs::create_dir_all(home.join("spool/intake")).unwrap();
    // A file where the adapter directory belongs: no session directory can
    // be made, so the writer falls back to a dead letter.
    std::fs::write(home.join("spool/intake/claude-code"), b"").unwrap();
    // The agent's own signal goes to a dead letter too, and names the session.
    start_session(home, "claude-code", "s-dl");
    let out = run(home, &["end", "s-dl", "--adapter", "claude-code"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("dead letter"), "{}", stderr(&out));
    let out = run(home, &["health", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let found = json_lines(&out);
    let dead = found
        .iter()
        .find(|c| c["code"] == "dead_letter")
        .expect("a dead-letter condition");
    assert!(
        dead["detail"]
            .as_str()
            .unwrap()
            .contains("claude-code/s-dl"),
        "{dead}"
    );
}
