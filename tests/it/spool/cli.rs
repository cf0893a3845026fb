//! `harnery spool ls` and `harnery spool cat` over a spool written by the real hook.

use crate::hook::support as hook_support;

use base64::Engine;
use hook_support::*;

fn harnery(home: &std::path::Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_harnery"))
        .args(args)
        .env("HARNERY_HOME", home)
        .output()
        .unwrap()
}

#[test]
#[cfg_attr(not(feature = "failpoints"), ignore = "needs --features failpoints")]
fn ls_and_cat_show_every_record_exactly() {
    let home = tempfile::tempdir().unwrap();
    let a = br#"{"session_id":"s-1","hook_event_name":"SessionStart"}"#;
    let b = b"{\"session_id\":\"s-1\",\"hook_event_name\":\"Stop\",\"x\":\"\xff\"}";
    run_hook(home.path(), &["claude-code"], a);
    run_hook(home.path(), &["claude-code"], b);
    let mut c = hook_cmd(home.path(), &["claude-code"]);
    c.env("HARNERY_FAILPOINTS", "segment_append,fallback-");
    run_cmd(c, a);

    let ls = harnery(home.path(), &["spool", "ls", "--json"]);
    let text = String::from_utf8(ls.stdout).unwrap();
    let first: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(first["session_id"], "s-1");
    assert_eq!(first["records"], 2);
    assert!(text.contains("dead_letter"));
    assert_eq!(
        ls.status.code(),
        Some(1),
        "dead letters are reported as a problem"
    );

    let cat = harnery(
        home.path(),
        &["spool", "cat", "claude-code", "s-1", "--json"],
    );
    assert_eq!(cat.status.code(), Some(0));
    let payloads: Vec<Vec<u8>> = String::from_utf8(cat.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .map(|v| {
            base64::engine::general_purpose::STANDARD
                .decode(v["payload_base64"].as_str().unwrap())
                .unwrap()
        })
        .collect();
    assert_eq!(payloads, vec![a.to_vec(), b.to_vec(), a.to_vec()]);

    let human = harnery(home.path(), &["spool", "cat", "claude-code", "s-1"]);
    assert!(String::from_utf8_lossy(&human.stdout).contains("SessionStart"));
    let missing = harnery(home.path(), &["spool", "cat", "copilot", "nope"]);
    assert_eq!(missing.status.code(), Some(2));
}
