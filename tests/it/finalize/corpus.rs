//! Every corpus scenario of both agents, fed through the real hook binary,
//! finalized, then checked: sessions, turns, spans by state, subagent
//! routing, and that `validate` and `verify` pass.

use crate::common;

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
    // `sessions` lists newest first; the expectations are in order of start.
    let got: Vec<(u64, u64, u64, u64)> = sessions_json(home.path())
        .iter()
        .rev()
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
    // Its bytes are in the raw archive, at the offset its row names.
    let db = home.path().join("ledgers/v2/ledger.sqlite");
    let conn = rusqlite::Connection::open(db).unwrap();
    harnery::ledger::eventz::register(&conn).unwrap();
    let (batch, at): (String, i64) = conn
        .query_row(
            "SELECT batch, archive_at FROM raw_signals WHERE adapter = 'gemini'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    let mut archive =
        harnery::ledger::raw::Archive::open(&home.path().join("ledgers/v2"), &batch).unwrap();
    let record = archive.record_at(at as u64).unwrap();
    assert_eq!(record.payload, br#"{"session_id":"g-1"}"#);
    assert_eq!(record.envelope.adapter, "gemini");
    assert!(run(home.path(), &["verify"]).status.success());
}

#[test]
fn the_raw_archive_keeps_every_drained_byte_and_verify_checks_it() {
    let home = tempfile::tempdir().unwrap();
    let fed = feed_fixture(home.path(), "claude-code", "basic");
    let spooled: u64 = spool_bytes(&home.path().join("spool/intake"));
    // The archive as the commit path leaves it (a default run compresses
    // it afterwards: tests/it/ledger/archive_compact_default.rs).
    let out = run(home.path(), &["finalize", "--json", "--no-compact"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let raw = home.path().join("ledgers/v2/raw");
    let archives: Vec<_> = std::fs::read_dir(&raw)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(archives.len(), 1, "{archives:?}");
    // One directory per batch, its spool files linked in, every byte kept.
    assert_eq!(spool_bytes(&archives[0]), spooled);
    let first = archives[0].join("00000000.seg");
    let verify = run(home.path(), &["verify", "--json"]);
    assert!(verify.status.success(), "{}", stdout(&verify));
    let report: serde_json::Value = serde_json::from_slice(&verify.stdout).unwrap();
    assert_eq!(report["raw_signals"], fed as u64, "{report}");

    // One flipped byte inside a record's payload: verify names that signal.
    let mut bytes = std::fs::read(&first).unwrap();
    let payloads: Vec<usize> = bytes
        .windows(15)
        .enumerate()
        .filter(|(_, w)| w == b"hook_event_name")
        .map(|(i, _)| i)
        .collect();
    let at = payloads[payloads.len() / 2];
    bytes[at] ^= 0x01;
    std::fs::write(&first, &bytes).unwrap();
    let verify = run(home.path(), &["verify"]);
    assert_eq!(verify.status.code(), Some(1));
    let text = stdout(&verify);
    assert_eq!(text.lines().count(), 1, "{text}");
    assert!(text.starts_with("raw signal "), "{text}");
    assert!(text.contains("checksum_mismatch"), "{text}");
}

/// Bytes of every file below `dir` except leases.
fn spool_bytes(dir: &std::path::Path) -> u64 {
    let mut total = 0;
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            total += spool_bytes(&p);
        } else if !p.ends_with("lease") {
            total += std::fs::metadata(&p).unwrap().len();
        }
    }
    total
}
