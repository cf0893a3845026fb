//! `harnery install codex` and `uninstall codex` in a scratch home: every
//! hook written and trusted as Codex hashes it, idempotent, reversible,
//! `CODEX_HOME` and the project scope honoured, a broken `config.toml`
//! refused.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use crate::common::{stderr, stdout};

/// `harnery install|uninstall codex` in a scratch `HOME`, with `vars`.
fn install(home: &Path, args: &[&str], vars: &[(&str, &Path)]) -> std::process::Output {
    let hook = assert_cmd::cargo::cargo_bin("harnery-hook");
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_harnery"));
    cmd.args(args)
        .args(["--hook-bin", hook.to_str().unwrap(), "--no-schedule"])
        .env_clear()
        .env("HOME", home)
        .env("PATH", "/usr/bin:/bin")
        .current_dir(home);
    for (name, value) in vars {
        cmd.env(name, value);
    }
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    out
}

/// The trust tables of `config.toml` (`[hooks.state."<key>"]` and its
/// `trusted_hash`): key -> hash.
fn trust_of(config: &Path) -> BTreeMap<String, String> {
    let text = std::fs::read_to_string(config).unwrap_or_default();
    let table = regex::Regex::new(r#"(?m)^\[hooks\.state\."([^"]+)"\]\ntrusted_hash = "([^"]+)"$"#)
        .unwrap();
    table
        .captures_iter(&text)
        .map(|c| (c[1].to_string(), c[2].to_string()))
        .collect()
}

/// SHA-256 of the hook's identity as Codex hashes it (independent of
/// harnery's writer: built with serde_json's sorted maps).
fn codex_hash(event_snake: &str, command: &str, timeout: u64) -> String {
    let identity = serde_json::json!({"event_name": event_snake, "hooks": [
        {"async": false, "command": command, "timeout": timeout, "type": "command"}]});
    let text = serde_json::to_string(&identity).unwrap();
    let out = std::process::Command::new("sha256sum")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            child.stdin.take().unwrap().write_all(text.as_bytes())?;
            child.wait_with_output()
        })
        .unwrap();
    let hex = String::from_utf8(out.stdout).unwrap();
    format!("sha256:{}", hex.split_whitespace().next().unwrap())
}

const SNAKE: [(&str, &str); 12] = [
    ("SessionStart", "session_start"),
    ("UserPromptSubmit", "user_prompt_submit"),
    ("PreModelRequest", "pre_model_request"),
    ("PreToolUse", "pre_tool_use"),
    ("PermissionRequest", "permission_request"),
    ("PostToolUse", "post_tool_use"),
    ("PreCompact", "pre_compact"),
    ("PostCompact", "post_compact"),
    ("Stop", "stop"),
    ("SubagentStart", "subagent_start"),
    ("SubagentStop", "subagent_stop"),
    ("SessionEnd", "session_end"),
];

#[test]
fn install_trusts_every_hook_it_writes_and_uninstall_takes_both_away() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    let codex = home.join(".codex");
    std::fs::create_dir_all(&codex).unwrap();
    let mine =
        "# my settings\nmodel = \"gpt-5.1-codex\"\n\n[model_providers.mine]\nname = \"mine\"\n";
    std::fs::write(codex.join("config.toml"), mine).unwrap();
    let dry = install(home, &["install", "codex", "--dry-run"], &[]);
    assert!(stdout(&dry).contains("trusted_hash"));
    assert_eq!(
        std::fs::read_to_string(codex.join("config.toml")).unwrap(),
        mine,
        "dry run"
    );
    assert!(!codex.join("hooks.json").exists());

    install(home, &["install", "codex"], &[]);
    let hooks: Value =
        serde_json::from_str(&std::fs::read_to_string(codex.join("hooks.json")).unwrap()).unwrap();
    let trust = trust_of(&codex.join("config.toml"));
    assert_eq!(trust.len(), 12);
    for (event, snake) in SNAKE {
        let groups = hooks["hooks"][event].as_array().unwrap();
        assert_eq!(groups.len(), 1, "{event}");
        let entry = &groups[0]["hooks"][0];
        let command = entry["command"].as_str().unwrap();
        assert!(command.ends_with(&format!(" codex {event}")), "{command}");
        let timeout = entry["timeout"].as_u64().unwrap();
        assert_eq!(timeout, if event == "SessionEnd" { 3 } else { 10 });
        let key = format!("{}:{snake}:0:0", codex.join("hooks.json").display());
        assert_eq!(trust[&key], codex_hash(snake, command, timeout), "{key}");
    }
    let config = std::fs::read_to_string(codex.join("config.toml")).unwrap();
    assert!(
        config.starts_with(mine),
        "the user's lines stay as they were"
    );

    let again = install(home, &["install", "codex"], &[]);
    assert_eq!(stdout(&again).matches("already up to date").count(), 2);

    install(home, &["uninstall", "codex"], &[]);
    assert_eq!(
        std::fs::read_to_string(codex.join("config.toml")).unwrap(),
        mine
    );
    let hooks: Value =
        serde_json::from_str(&std::fs::read_to_string(codex.join("hooks.json")).unwrap()).unwrap();
    assert_eq!(hooks["hooks"], serde_json::json!({}));
}

#[test]
fn codex_home_moves_both_files_and_the_trust_names_the_resolved_path() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let real = dir.path().join("real-codex");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&real).unwrap();
    let link = dir.path().join("codex-link");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    install(&home, &["install", "codex"], &[("CODEX_HOME", &link)]);
    assert!(real.join("hooks.json").is_file());
    assert!(!home.join(".codex").exists());
    let trust = trust_of(&real.join("config.toml"));
    let named = std::fs::canonicalize(&real).unwrap().join("hooks.json");
    assert!(
        trust
            .keys()
            .all(|k| k.starts_with(&format!("{}:", named.display()))),
        "{trust:?}"
    );
    assert_eq!(trust.len(), 12);
}

#[test]
fn a_project_install_is_trusted_in_the_users_config() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let project = dir.path().join("project");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&project).unwrap();
    let project_dir = project.to_str().unwrap();
    install(
        &home,
        &[
            "install",
            "codex",
            "--scope",
            "project",
            "--project-dir",
            project_dir,
        ],
        &[],
    );
    assert!(project.join(".codex/hooks.json").is_file());
    assert!(
        !project.join(".codex/config.toml").exists(),
        "Codex reads no trust there"
    );
    let trust = trust_of(&home.join(".codex/config.toml"));
    let named = std::fs::canonicalize(project.join(".codex"))
        .unwrap()
        .join("hooks.json");
    assert_eq!(trust.len(), 12);
    assert!(
        trust
            .keys()
            .all(|k| k.starts_with(&format!("{}:", named.display())))
    );
}

#[test]
fn a_config_that_is_not_toml_is_refused_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let codex = dir.path().join(".codex");
    std::fs::create_dir_all(&codex).unwrap();
    std::fs::write(codex.join("config.toml"), "model = \n").unwrap();
    let hook = assert_cmd::cargo::cargo_bin("harnery-hook");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_harnery"))
        .args([
            "install",
            "codex",
            "--hook-bin",
            hook.to_str().unwrap(),
            "--no-schedule",
        ])
        .env_clear()
        .env("HOME", dir.path())
        .env("PATH", "/usr/bin:/bin")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(stderr(&out).contains("config.toml"), "{}", stderr(&out));
    assert!(!codex.join("hooks.json").exists());
    assert_eq!(
        std::fs::read_to_string(codex.join("config.toml")).unwrap(),
        "model = \n"
    );
}
