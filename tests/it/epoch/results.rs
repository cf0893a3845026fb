//! Contract generation 12 (tool results' text from every agent's record,
//! and `tool.batch_result`, a result as Claude Code's `PostToolBatch`
//! lists it) ships by an epoch advance from the home generation 11 wrote
//! (built by main at `b5ea4a2`): the archive's sessions are read and
//! searched as before, and a Claude Code session recorded after the
//! advance has its denied call's result in the ledger, found once, with
//! the records off as with them on.

use std::path::Path;

use serde_json::Value;

use super::generations::{CLEAN, GEN11, ships_from};
use crate::common;
use crate::common::ok;

/// The capture recorded after the advance: a call the user was asked to
/// approve, which never ran.
const SCENARIO: &str = "permission-denied";

fn fixture(path: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(path)).unwrap()
}

/// The hits of `query`, each as (epoch, event type, session id).
fn hits(home: &Path, query: &str) -> Vec<(String, String, String)> {
    ok(home, &["search", "--json", "--epoch", "all", "--", query])
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .map(|h| {
            (
                h["epoch"].as_str().unwrap_or_default().to_string(),
                h["event_type"].as_str().unwrap().to_string(),
                h["session"]["session_id"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn generation_twelve_ships_by_an_epoch_advance_from_the_generation_eleven_home() {
    let dir = ships_from(11, GEN11);
    let home = dir.path();
    // The archive's session is searched as before the advance.
    let archived = hits(home, "\"echo hi\"");
    assert!(archived.iter().any(|(_, _, s)| s == CLEAN), "{archived:?}");
    // The archive holds no `tool.batch_result` (generation 11 wrote
    // none): every one of all the epochs is the live epoch's.
    let batched = |args: &[&str]| -> Vec<String> {
        ok(home, args)
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .filter(|e| e["type"] == "tool.batch_result")
            .map(|e| e["id"].as_str().unwrap().to_string())
            .collect()
    };

    // A session after the advance, its transcript on disk: the denied
    // call's text is in the batch's result and in the record's, one hit.
    let hooks: Vec<Value> = fixture(&format!(
        "tests/fixtures/claude-code/{SCENARIO}/hooks.jsonl"
    ))
    .lines()
    .map(|l| serde_json::from_str(l).unwrap())
    .collect();
    let session = hooks[0]["session_id"].as_str().unwrap().to_string();
    let user = tempfile::tempdir().unwrap();
    let transcript = user
        .path()
        .join(format!("claude/projects/-proj/{session}.jsonl"));
    std::fs::create_dir_all(transcript.parent().unwrap()).unwrap();
    std::fs::write(
        &transcript,
        fixture(&format!(
            "tests/fixtures/records/claude-code/{SCENARIO}.jsonl"
        )),
    )
    .unwrap();
    for mut payload in hooks {
        payload["transcript_path"] = Value::String(transcript.display().to_string());
        common::deliver(home, "claude-code", &payload.to_string());
    }
    let out = common::harnery(home)
        .env("HARNERY_RECORDS", "on")
        .arg("finalize")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", common::stderr(&out));
    let events: Vec<Value> = ok(home, &["export"])
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let of = |ty: &str| -> Vec<&Value> {
        events
            .iter()
            .filter(|e| e["type"] == ty && e["session"]["session_id"] == session)
            .collect()
    };
    let batch = of("tool.batch_result");
    assert_eq!(batch.len(), 1, "{batch:?}");
    assert_eq!(batched(&["export", "--epoch", "all"]), batched(&["export"]));
    let text = batch[0]["payload"]["output"].as_str().unwrap();
    assert!(text.contains("needs approval"), "{text}");
    let recorded: Vec<&str> = of("tool.recorded")
        .iter()
        .filter_map(|e| e["payload"]["output"].as_str())
        .collect();
    assert_eq!(recorded, [text], "the record holds the same text");
    let found = hits(home, "\"needs approval\"");
    assert_eq!(
        found,
        [("live".to_string(), "tool.batch_result".to_string(), session)]
    );
    ok(home, &["verify"]);
    ok(home, &["validate", "--epoch", "all"]);
}
