//! Imported sessions are listed as imported, with the tokens their records
//! say; a dry run changes nothing; a rerun adds nothing.

use std::collections::HashSet;

use serde_json::Value;

use super::{AgentDirs, events_of, sessions_by_id, verified};
use crate::common::{self, stdout};

const CLAUDE: [&str; 3] = ["basic", "tool-failure", "parallel"];
const COPILOT: [&str; 2] = ["basic-shell-openai", "hook-exit1-postToolUse"];

fn with_records() -> (AgentDirs, Vec<String>) {
    let agents = AgentDirs::new();
    let mut ids: Vec<String> = CLAUDE.iter().map(|n| agents.claude_record(n)).collect();
    ids.extend(COPILOT.iter().map(|n| agents.copilot_record(n)));
    (agents, ids)
}

#[test]
fn a_dry_run_counts_and_changes_nothing() {
    let (agents, _) = with_records();
    let home = tempfile::tempdir().unwrap();
    let dry = agents.import_json(home.path(), &["--dry-run"]);
    assert_eq!(dry["dry_run"], true);
    assert_eq!(dry["sessions"], 5, "{dry}");
    let per: Vec<(&str, u64)> = dry["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["agent"].as_str().unwrap(),
                a["imported"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(per, [("claude-code", 3), ("copilot", 2)], "{dry}");
    assert!(dry["agents"][0]["bytes"].as_u64().unwrap() > 0);
    assert!(dry.get("finalize").is_none());
    assert!(
        !home.path().join("ledgers").exists() && !home.path().join("spool").exists(),
        "a dry run writes nothing"
    );
    let text = stdout(&agents.import(home.path(), &["--dry-run"]));
    assert!(text.contains("would import 3 session(s)"), "{text}");
    assert!(text.contains("dry run: nothing was changed"), "{text}");
}

#[test]
fn imported_sessions_are_listed_as_imported_and_a_rerun_adds_nothing() {
    let (agents, ids) = with_records();
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let done = agents.import_json(h, &[]);
    assert_eq!(done["sessions"], 5, "{done}");
    assert!(done["finalize"]["events_appended"].as_u64().unwrap() > 5);
    let listed = sessions_by_id(h);
    assert_eq!(listed.len(), 5, "{listed:?}");
    for id in &ids {
        let class = &listed[id]["eligibility"];
        assert_eq!(class["class"], "imported", "{id}: {class}");
        assert!(
            class["reasons"]
                .as_array()
                .unwrap()
                .contains(&"imported".into())
        );
        assert!(listed[id]["events"].as_u64().unwrap() > 3, "{id}: read");
    }
    // Every byte of each record is in the raw archive, and the chain holds.
    verified(h);
    let imported = events_of(h, "session.imported");
    assert_eq!(imported.len(), 5);
    assert!(imported.iter().all(|e| e["offset"] == 0));
    let audit = common::run(h, &["audit", "--json"]);
    let audit = stdout(&audit);
    assert!(!audit.contains("\"eligible\""), "never eligible: {audit}");
    assert!(audit.contains("\"imported\""), "{audit}");

    let rows = common::ledger_rows(h).len();
    let again = agents.import_json(h, &[]);
    assert_eq!(again["sessions"], 0, "{again}");
    assert_eq!(again["agents"][0]["known"], 3, "{again}");
    assert_eq!(common::ledger_rows(h).len(), rows, "a rerun adds nothing");
    assert!(stdout(&agents.import(h, &[])).contains("nothing new to import"));
    assert_eq!(sessions_by_id(h).len(), 5);
}

/// Claude Code repeats a message's usage on each of its content blocks:
/// each message (id and request id) counts once, as ccusage counts it.
fn claude_record_tokens(bytes: &[u8]) -> [u64; 4] {
    let mut seen = HashSet::new();
    let mut sum = [0u64; 4];
    for line in bytes.split(|b| *b == b'\n') {
        let Ok(v) = serde_json::from_slice::<Value>(line) else {
            continue;
        };
        let usage = &v["message"]["usage"];
        if v["type"] != "assistant" || usage.is_null() {
            continue;
        }
        let key = format!("{}:{}", v["message"]["id"], v["requestId"]);
        if !seen.insert(key) {
            continue;
        }
        let n = |k: &str| usage[k].as_u64().unwrap_or(0);
        let kinds = [
            "input_tokens",
            "output_tokens",
            "cache_read_input_tokens",
            "cache_creation_input_tokens",
        ];
        for (s, k) in sum.iter_mut().zip(kinds) {
            *s += n(k);
        }
    }
    sum
}

#[test]
fn tokens_are_what_the_records_say() {
    let agents = AgentDirs::new();
    let mut want = [0u64; 4];
    for name in CLAUDE {
        agents.claude_record(name);
        let bytes = std::fs::read(super::fixture(&format!("claude-code/{name}.jsonl"))).unwrap();
        for (w, n) in want.iter_mut().zip(claude_record_tokens(&bytes)) {
            *w += n;
        }
    }
    assert!(want[0] + want[1] > 0, "the records report usage");
    let home = tempfile::tempdir().unwrap();
    agents.import_json(home.path(), &["claude-code"]);
    let usage: Value =
        serde_json::from_str(&stdout(&common::run(home.path(), &["usage", "--json"]))).unwrap();
    let t = &usage["total"]["tokens"];
    let got = ["input", "output", "cache_read", "cache_write"].map(|k| t[k].as_u64().unwrap_or(0));
    assert_eq!(got, want, "{usage}");
    assert_eq!(
        usage["total"]["imported_records"], usage["total"]["records"],
        "every record is marked imported: {usage}"
    );
    let hooked: Value = serde_json::from_str(&stdout(&common::run(
        home.path(),
        &["usage", "--json", "--imported", "exclude"],
    )))
    .unwrap();
    assert_eq!(hooked["total"]["records"], 0, "{hooked}");
}

#[test]
fn only_the_agents_named_and_the_records_since_a_time_are_imported() {
    let (agents, _) = with_records();
    let home = tempfile::tempdir().unwrap();
    let copilot = agents.import_json(home.path(), &["copilot", "--dry-run"]);
    assert_eq!(copilot["sessions"], 2, "{copilot}");
    assert_eq!(copilot["agents"].as_array().unwrap().len(), 1);
    let future = agents.import_json(home.path(), &["--since", "2200-01-01T00:00:00Z"]);
    assert_eq!(future["sessions"], 0, "{future}");
    assert_eq!(future["agents"][0]["older"], 3, "{future}");
    let bad = agents.import(home.path(), &["nobody"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(common::stderr(&bad).contains("not an agent harnery knows"));
}

/// A Claude Code subagent writes a record of its own beside the session's
/// (`<id>/subagents/agent-<agent id>.jsonl`): the import follows it too,
/// so its messages and usage are the session's, as ccusage counts them.
#[test]
fn a_claude_code_subagents_own_record_is_imported_with_its_session() {
    let agents = AgentDirs::new();
    let main = std::fs::read(super::fixture(
        "claude-code/subagent/2668abe1-379d-47fc-a818-0f8a3d39c1bf.jsonl",
    ))
    .unwrap();
    let side = std::fs::read(super::fixture(
        "claude-code/subagent/agent-a6ade36a38f2eaf92.jsonl",
    ))
    .unwrap();
    let id = "2668abe1-379d-47fc-a818-0f8a3d39c1bf";
    let path = agents.write_claude(id, &main);
    let dir = path.with_extension("").join("subagents");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("agent-a6ade36a38f2eaf92.jsonl"), &side).unwrap();
    let mut both = main.clone();
    both.extend_from_slice(&side);
    let want = claude_record_tokens(&both);

    let home = tempfile::tempdir().unwrap();
    agents.import_json(home.path(), &[]);
    let usage: Value =
        serde_json::from_str(&stdout(&common::run(home.path(), &["usage", "--json"]))).unwrap();
    let t = &usage["total"]["tokens"];
    let got = ["input", "output", "cache_read", "cache_write"].map(|k| t[k].as_u64().unwrap_or(0));
    assert_eq!(got, want, "{usage}");
    let subagent_lines = events_of(home.path(), "message.assistant")
        .into_iter()
        .filter(|e| e["agent_id"] == "a6ade36a38f2eaf92")
        .count();
    assert!(
        subagent_lines > 0,
        "the subagent's messages are the session's"
    );
    verified(home.path());
}
