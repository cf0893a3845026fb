//! Contract generation 11's `session.titled` (the title the agent's own
//! record gives a session), shipped in this build's generation by an epoch
//! advance from the home generation 10 wrote (built by main at
//! `71fbe91`): the archive's
//! sessions keep their prompt titles, and a Copilot session recorded after
//! the advance takes the name its `workspace.yaml` gives it, then the new
//! name after a rename (hostile text made one clean line), each once.

use std::path::Path;

use serde_json::Value;

use super::generations::{CLEAN, GEN10, json, ships_from};
use crate::common::ok;
use crate::common::{self, stderr};

/// The Copilot capture recorded after the advance, and its record.
const COPILOT: &str = "bbf92ffe-5f53-473e-a34d-68d043380e76";
const SCENARIO: &str = "hook-exit2-preToolUse";

/// `finalize` with the agents' records followed, Copilot's under `copilot`.
fn finalize(home: &Path, copilot: &Path) {
    let out = common::harnery(home)
        .env("HARNERY_RECORDS", "on")
        .env("COPILOT_HOME", copilot)
        .arg("finalize")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
}

fn listed(home: &Path, id: &str) -> Value {
    let out = ok(home, &["sessions", "--epoch", "all", "--json"]);
    out.lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|s| s["session"]["session_id"] == id)
        .unwrap_or_else(|| panic!("{id} is not listed: {out}"))
}

/// The `session.titled` events of the live epoch, oldest first.
fn titled(home: &Path) -> Vec<Value> {
    ok(home, &["export"])
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["type"] == "session.titled")
        .collect()
}

#[test]
fn generation_twelve_ships_by_an_epoch_advance_from_the_generation_ten_home() {
    let dir = ships_from(10, GEN10);
    let home = dir.path();
    let before = listed(home, CLEAN)["title"].clone();
    assert_eq!(before, "[[scenario:basic]] Run echo hi.");

    let copilot = home.join("copilot");
    let state = copilot.join("session-state").join(COPILOT);
    std::fs::create_dir_all(&state).unwrap();
    let events = state.join("events.jsonl");
    let record = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!(
        "tests/fixtures/records/copilot/{SCENARIO}.events.jsonl"
    ));
    std::fs::copy(record, &events).unwrap();
    // As Copilot writes it: the name it gave the session from the prompt.
    let workspace = state.join("workspace.yaml");
    let yaml = |name: &str, user_named: bool| {
        format!(
            "id: {COPILOT}\ncwd: /tmp/p\nclient_name: github/cli\nname: {name}\n\
             user_named: {user_named}\nsummary_count: 0\n"
        )
    };
    std::fs::write(&workspace, yaml("Deny the risky tool", false)).unwrap();
    common::copilot_hooks(home, SCENARIO, &events);
    finalize(home, &copilot);
    let session = listed(home, COPILOT);
    assert_eq!(session["title"], "Deny the risky tool", "{session}");
    let first = titled(home);
    assert_eq!(first.len(), 1, "{first:?}");
    assert_eq!(first[0]["payload"]["field"], "name");
    assert_eq!(first[0]["payload"]["user_named"], false);
    assert_eq!(first[0]["payload"]["path"], workspace.display().to_string());
    assert_eq!(first[0]["provenance"]["attestation"], "record");

    // Nothing changed: nothing new.
    finalize(home, &copilot);
    assert_eq!(titled(home).len(), 1);

    // `/rename`, with text no title may show as it is.
    let hostile = format!("\"Ship\\tit\\u001b[2J\\r\\nnow {}\"", "long ".repeat(40));
    std::fs::write(&workspace, yaml(&hostile, true)).unwrap();
    finalize(home, &copilot);
    let renamed = titled(home);
    assert_eq!(renamed.len(), 2, "{renamed:?}");
    let title = listed(home, COPILOT)["title"].as_str().unwrap().to_string();
    assert!(title.starts_with("Ship it [2J now long long"), "{title}");
    assert_eq!(title.chars().count(), 100, "{title}");
    assert!(title.ends_with('…') && !title.chars().any(char::is_control));
    assert_eq!(renamed[1]["payload"]["title"], title.as_str());
    assert_eq!(renamed[1]["payload"]["user_named"], true);
    // The archive's sessions keep the titles their prompts gave them.
    assert_eq!(listed(home, CLEAN)["title"], before);
    ok(home, &["verify"]);
    let validated = json(home, &["validate", "--epoch", "all", "--json"]);
    assert_eq!(validated["ok"], true, "{validated}");
}
