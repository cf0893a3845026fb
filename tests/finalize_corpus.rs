//! Every corpus scenario of both agents, fed through the real hook binary,
//! finalized, then checked: sessions, turns, spans by state, subagent
//! routing, and that `validate` and `verify` pass.

mod common;

use common::*;

/// (scenario, [(turns, open, closed_native, recovered)] per session in
/// `sessions` order).
type Expect = (&'static str, &'static [(u64, u64, u64, u64)]);

const CLAUDE: &[Expect] = &[
    ("async-hooks", &[(1, 0, 1, 0)]),
    ("basic", &[(1, 0, 1, 0)]),
    ("compact", &[(2, 0, 2, 0)]),
    ("file-tools", &[(1, 0, 3, 0)]),
    ("hook-block", &[(1, 0, 0, 1)]),
    ("hook-events", &[(1, 0, 1, 0)]),
    ("hook-failures", &[(1, 0, 1, 0)]),
    ("interactive", &[(2, 0, 2, 0), (1, 0, 1, 0)]),
    ("kill", &[(1, 1, 1, 0)]),
    ("parallel", &[(1, 0, 2, 0)]),
    ("permission-denied", &[(1, 0, 0, 1)]),
    ("resume", &[(2, 0, 2, 0)]),
    ("sigint", &[(1, 0, 1, 1)]),
    ("sigterm", &[(1, 0, 1, 1)]),
    ("slow-hooks", &[(1, 0, 1, 0)]),
    ("slow-sessionend-timeout", &[(1, 0, 1, 0)]),
    ("subagent-sync", &[(1, 0, 2, 0)]),
    ("subagent", &[(2, 0, 2, 0)]),
    ("tool-failure", &[(1, 0, 1, 0)]),
];

const COPILOT: &[Expect] = &[
    ("basic-shell-anthropic", &[(1, 0, 1, 0)]),
    ("basic-shell-openai", &[(1, 0, 1, 0)]),
    ("basic-user-hooks-only", &[(1, 0, 1, 0)]),
    ("compaction-precompact-hook", &[(1, 0, 2, 0)]),
    ("hook-deny-json-preToolUse", &[(1, 0, 0, 1)]),
    ("hook-exit1-nonblocking-events", &[(1, 0, 0, 1)]),
    ("hook-exit1-postToolUse", &[(1, 0, 1, 0)]),
    ("hook-exit1-preToolUse", &[(1, 0, 0, 1)]),
    ("hook-exit2-preToolUse", &[(1, 0, 0, 1)]),
    ("hook-noread-large-output", &[(1, 0, 1, 0)]),
    ("hook-timeout-preToolUse", &[(1, 0, 1, 0)]),
    ("interrupted-sigint", &[(1, 0, 0, 1)]),
    ("interrupted-sigkill-1-killed", &[(1, 1, 0, 0)]),
    ("interrupted-sigkill-2-resumed", &[(1, 0, 1, 0)]),
    ("interrupted-sigterm", &[(1, 0, 0, 1)]),
    ("model-error-400", &[(1, 0, 0, 0)]),
    ("pascalcase-hooks", &[(1, 0, 1, 0)]),
    ("probe-config-no-version", &[(1, 0, 1, 0)]),
    ("probe-config-unknown-event", &[(1, 0, 1, 0)]),
    ("probe-repo-hooks-no-optin", &[(1, 0, 1, 0)]),
    ("probe-repo-hooks-trust-folder", &[(1, 0, 1, 0)]),
    ("probe-settings-json-inline-hooks", &[(0, 0, 1, 0)]),
    ("resume-1-first-run", &[(1, 0, 1, 0)]),
    ("resume-2-resumed-run", &[(1, 0, 1, 0)]),
    ("shell-nonzero-exit", &[(1, 0, 1, 0)]),
    ("subagent-task", &[(2, 0, 2, 0)]),
    ("tool-failure-view", &[(1, 0, 1, 0)]),
    ("turn-row-lost-at-shutdown", &[(1, 0, 1, 0)]),
];

fn check(agent: &str, (scenario, want): &Expect) {
    let home = tempfile::tempdir().unwrap();
    let fed = feed_fixture(home.path(), agent, scenario);
    let out = run(home.path(), &["finalize", "--json"]);
    assert!(out.status.success(), "{agent}/{scenario}: {}", stderr(&out));
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        summary["signals_drained"], fed as u64,
        "{agent}/{scenario}: every raw signal is kept"
    );
    let got: Vec<(u64, u64, u64, u64)> = sessions_json(home.path())
        .iter()
        .map(|s| {
            let n = |k: &str| s["spans"][k].as_u64().unwrap();
            (
                s["turns"].as_u64().unwrap(),
                n("open"),
                n("closed_native"),
                n("recovered"),
            )
        })
        .collect();
    assert_eq!(
        got,
        want.to_vec(),
        "{agent}/{scenario}: (turns, open, native, recovered)"
    );
    let validate = run(home.path(), &["validate"]);
    assert!(
        validate.status.success(),
        "{agent}/{scenario}: {}",
        stdout(&validate)
    );
    let verify = run(home.path(), &["verify"]);
    assert!(
        verify.status.success(),
        "{agent}/{scenario}: {}",
        stdout(&verify)
    );
    let again = run(home.path(), &["finalize", "--json"]);
    let again: serde_json::Value = serde_json::from_slice(&again.stdout).unwrap();
    assert_eq!(
        again["events_appended"], 0,
        "{agent}/{scenario}: a second run appends nothing"
    );
}

#[test]
fn claude_code_scenarios() {
    for e in CLAUDE {
        check("claude-code", e);
    }
}

#[test]
fn copilot_scenarios() {
    for e in COPILOT {
        check("copilot", e);
    }
}

#[test]
fn copilot_subagent_hooks_land_in_the_parent_session() {
    let home = tempfile::tempdir().unwrap();
    feed_fixture(home.path(), "copilot", "subagent-task");
    run(home.path(), &["finalize"]);
    let sessions = sessions_json(home.path());
    assert_eq!(
        sessions.len(),
        1,
        "the subagent is not a session of its own"
    );
    let show = run(home.path(), &["show", "3390a855", "--json"]);
    let t: serde_json::Value = serde_json::from_slice(&show.stdout).unwrap();
    let entries = t["entries"].as_array().unwrap();
    let kinds: Vec<&str> = entries
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    assert!(
        kinds.contains(&"subagent.started") && kinds.contains(&"subagent.stopped"),
        "{kinds:?}"
    );
    let sub_tool = entries
        .iter()
        .find(|e| e["kind"] == "tool.requested" && e["agent_id"].is_string())
        .expect("the subagent's own tool call is in the parent timeline");
    assert_eq!(sub_tool["span"]["state"], "closed_native");
}

#[test]
fn claude_code_pairs_by_tool_use_id_and_keeps_failures() {
    let home = tempfile::tempdir().unwrap();
    feed_fixture(home.path(), "claude-code", "tool-failure");
    run(home.path(), &["finalize"]);
    let show = run(home.path(), &["show", "9c520b8b", "--json"]);
    let t: serde_json::Value = serde_json::from_slice(&show.stdout).unwrap();
    let span = t["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find_map(|e| e.get("span"))
        .expect("one tool span");
    assert!(
        span["tool_call_id"].as_str().unwrap().starts_with("toolu_"),
        "{span}"
    );
    assert_eq!(span["outcome"], "failure");
}

#[test]
fn a_record_of_an_unknown_adapter_is_kept_and_reported_not_wedged() {
    let home = tempfile::tempdir().unwrap();
    assert_cmd::Command::cargo_bin("harnery-hook")
        .unwrap()
        .env("HARNERY_HOME", home.path())
        .arg("gemini")
        .write_stdin(r#"{"session_id":"g-1"}"#)
        .assert()
        .success();
    let out = run(home.path(), &["finalize", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["signals_drained"], 1);
    assert_eq!(summary["health"][0]["code"], "unknown_adapter");
    let db = home.path().join("ledgers/v2/ledger.sqlite");
    let conn = rusqlite::Connection::open(db).unwrap();
    let payload: Vec<u8> = conn
        .query_row(
            "SELECT payload FROM raw_signals WHERE adapter = 'gemini'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(payload, br#"{"session_id":"g-1"}"#);
}
