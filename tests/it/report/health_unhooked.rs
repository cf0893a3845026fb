//! `harnery health` names an agent whose sessions reach its own record
//! directory but never the spool: a Claude Code run with
//! `CLAUDE_CONFIG_DIR` whose hooks were installed under `~/.claude`, or a
//! Copilot with `COPILOT_HOME`. Once the hooks are where the agent reads
//! them (and a hook has run), the condition is gone.

use std::path::Path;
use std::time::{Duration, UNIX_EPOCH};

use crate::common::{self, NOW, stdout, without_installed_agents};

/// `NOW` plus `hours`, as a `SystemTime` and as RFC 3339 text.
fn after_now(hours: u64) -> (std::time::SystemTime, String) {
    let now = harnery::now::resolve_now(Some(NOW)).unwrap();
    let t = UNIX_EPOCH + Duration::from_nanos(now as u64) + Duration::from_secs(hours * 3600);
    let ns = t.duration_since(UNIX_EPOCH).unwrap().as_nanos();
    (t, ns.to_string())
}

/// A record file of the agent's, last written at `at`.
fn record(path: &Path, at: std::time::SystemTime) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, b"{\"type\":\"user\"}\n").unwrap();
    let f = std::fs::File::options().write(true).open(path).unwrap();
    f.set_modified(at).unwrap();
}

fn health(home: &Path, user: &Path, vars: &[(&str, &Path)], now: &str) -> std::process::Output {
    let mut cmd = common::harnery(home);
    without_installed_agents(&mut cmd, user);
    cmd.env("HARNERY_RECORDS", "on");
    for (name, value) in vars {
        cmd.env(name, value);
    }
    cmd.args(["health", "--json", "--now", now])
        .output()
        .unwrap()
}

fn unhooked(out: &std::process::Output) -> Vec<serde_json::Value> {
    stdout(out)
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|c| c["code"] == "hooks_not_reaching_spool")
        .collect()
}

#[test]
fn an_agent_whose_sessions_never_reach_the_spool_is_named() {
    let t = tempfile::tempdir().unwrap();
    let (home, user) = (t.path().join("hh"), t.path().join("user"));
    let (config, copilot_home) = (t.path().join("claude-work"), t.path().join("cp"));
    std::fs::create_dir_all(&user).unwrap();
    // The ledger begins (a cron finalize over an empty spool).
    let out = common::harnery(&home).arg("finalize").output().unwrap();
    assert!(out.status.success(), "{}", common::stderr(&out));
    // Then sessions run whose hooks never ran harnery.
    let (_, now) = after_now(2);
    let (written, _) = after_now(1);
    let sid = "5b7c0a4e-0000-4000-8000-00000000c1a0";
    record(&config.join(format!("projects/-w/{sid}.jsonl")), written);
    let cid = "7d1f3b2a-0000-4000-8000-00000000c0b1";
    record(
        &copilot_home.join(format!("session-state/{cid}/events.jsonl")),
        written,
    );
    // A record from before harnery began is not this problem.
    let old = UNIX_EPOCH + Duration::from_secs(1_000_000);
    record(&config.join("projects/-w/0ld-session.jsonl"), old);

    let vars: &[(&str, &Path)] = &[
        ("CLAUDE_CONFIG_DIR", &config),
        ("COPILOT_HOME", &copilot_home),
    ];
    let out = health(&home, &user, vars, &now);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let found = unhooked(&out);
    assert_eq!(found.len(), 2, "{}", stdout(&out));
    assert_eq!(found[0]["session"]["adapter"], "claude-code");
    assert_eq!(found[0]["session"]["session_id"], sid);
    let detail = found[0]["detail"].as_str().unwrap();
    assert!(
        detail.starts_with("1 of 1 Claude Code session(s) written to ")
            && detail.contains(&format!("CLAUDE_CONFIG_DIR={}", config.display()))
            && detail.contains("harnery install claude-code"),
        "{detail}"
    );
    assert_eq!(found[1]["session"]["adapter"], "copilot");
    assert_eq!(found[1]["session"]["session_id"], cid);

    // The hooks run harnery (installed where the agent reads): the
    // sessions are in the spool and nothing is named any more.
    common::deliver(
        &home,
        "claude-code",
        &format!(r#"{{"session_id":"{sid}","hook_event_name":"SessionStart"}}"#),
    );
    common::deliver(
        &home,
        "copilot",
        &format!(r#"{{"event":"sessionStart","stdin_raw":"{{\"sessionId\":\"{cid}\"}}"}}"#),
    );
    let out = health(&home, &user, vars, &now);
    assert!(unhooked(&out).is_empty(), "{}", stdout(&out));
    // And after finalize drained them, the ledger knows them.
    let out = common::harnery(&home).arg("finalize").output().unwrap();
    assert!(out.status.success(), "{}", common::stderr(&out));
    let out = health(&home, &user, vars, &now);
    assert!(unhooked(&out).is_empty(), "{}", stdout(&out));
}

#[test]
fn records_off_or_a_home_that_never_recorded_names_nothing() {
    let t = tempfile::tempdir().unwrap();
    let (home, user, config) = (
        t.path().join("hh"),
        t.path().join("user"),
        t.path().join("cfg"),
    );
    std::fs::create_dir_all(&user).unwrap();
    let (written, now) = after_now(1);
    record(&config.join("projects/-w/s-1.jsonl"), written);
    let vars: &[(&str, &Path)] = &[("CLAUDE_CONFIG_DIR", &config)];
    // No ledger and no spool: harnery has not begun recording here.
    assert!(unhooked(&health(&home, &user, vars, &now)).is_empty());
    let out = common::harnery(&home).arg("finalize").output().unwrap();
    assert!(out.status.success());
    assert_eq!(unhooked(&health(&home, &user, vars, &now)).len(), 1);
    let mut cmd = common::harnery(&home);
    without_installed_agents(&mut cmd, &user);
    cmd.env("CLAUDE_CONFIG_DIR", &config);
    let out = cmd
        .args(["health", "--json", "--now", &now])
        .output()
        .unwrap();
    assert!(
        unhooked(&out).is_empty(),
        "HARNERY_RECORDS=off reads no record"
    );
}
