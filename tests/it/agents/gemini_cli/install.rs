//! `harnery install gemini-cli` where the client reads its settings.

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::Value;

use super::INSTALLED;
use crate::common::{stderr, stdout};

/// `harnery <args>` with only `HOME` (and `vars`) set, as a user runs it.
fn install_cmd(home: &Path, args: &[&str], vars: &[(&str, &Path)]) -> std::process::Output {
    let hook = assert_cmd::cargo::cargo_bin("harnery-hook");
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_harnery"));
    cmd.args(args)
        .args(["--hook-bin", hook.to_str().unwrap(), "--no-schedule"])
        .env_clear()
        .env("HOME", home)
        .env("PATH", "/usr/bin:/bin")
        .env("HARNERY_NPM_PREFIXES", "")
        .current_dir(home);
    for (name, value) in vars {
        cmd.env(name, value);
    }
    cmd.output().unwrap()
}

/// `GEMINI_CLI_HOME` moves the client's idea of the user's home, so its
/// settings are `$GEMINI_CLI_HOME/.gemini/settings.json` (probed with the
/// real client: `docs/agents/gemini-cli.md`). Install writes a command
/// line per event there, keeps what else the file holds, does nothing the
/// second time, and uninstall takes exactly its own entries away.
#[test]
fn install_writes_one_command_per_event_where_the_client_reads_it() {
    let t = tempfile::tempdir().unwrap();
    let (home, moved) = (t.path().join("home"), t.path().join("cli-home"));
    let settings = moved.join(".gemini/settings.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    let theirs = serde_json::json!({
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "hooks": {"BeforeTool": [{"matcher": "write_file", "hooks": [{"type": "command", "command": "lint"}]}]}
    });
    std::fs::write(&settings, serde_json::to_vec_pretty(&theirs).unwrap()).unwrap();
    let vars: &[(&str, &Path)] = &[("GEMINI_CLI_HOME", &moved)];

    let out = install_cmd(&home, &["install", "gemini-cli"], vars);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("$GEMINI_CLI_HOME is set"),
        "{}",
        stdout(&out)
    );
    assert!(
        !home.join(".gemini").exists(),
        "wrote where the client never reads"
    );
    let doc: Value = serde_json::from_slice(&std::fs::read(&settings).unwrap()).unwrap();
    assert_eq!(doc["security"], theirs["security"]);
    let hooks = doc["hooks"].as_object().unwrap();
    assert_eq!(
        hooks.keys().map(String::as_str).collect::<BTreeSet<_>>(),
        INSTALLED.into_iter().collect::<BTreeSet<_>>()
    );
    let hook = assert_cmd::cargo::cargo_bin("harnery-hook");
    for event in INSTALLED {
        let ours: Vec<&Value> = hooks[event]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|g| g["hooks"].as_array().unwrap())
            .filter(|h| h["command"].as_str().unwrap().contains("harnery-hook"))
            .collect();
        assert_eq!(ours.len(), 1, "{event}");
        assert_eq!(
            ours[0]["command"],
            format!("'{}' gemini-cli {event}", hook.display())
        );
        assert_eq!(ours[0]["timeout"], 10_000, "milliseconds");
    }
    assert_eq!(hooks["BeforeTool"][0], theirs["hooks"]["BeforeTool"][0]);

    let before = std::fs::read(&settings).unwrap();
    let again = install_cmd(&home, &["install", "gemini-cli"], vars);
    assert!(again.status.success(), "{}", stderr(&again));
    assert_eq!(
        std::fs::read(&settings).unwrap(),
        before,
        "a second install changes nothing"
    );

    let out = install_cmd(&home, &["uninstall", "gemini-cli"], vars);
    assert!(out.status.success(), "{}", stderr(&out));
    let doc: Value = serde_json::from_slice(&std::fs::read(&settings).unwrap()).unwrap();
    assert_eq!(doc, theirs, "only harnery's entries were taken away");
}
