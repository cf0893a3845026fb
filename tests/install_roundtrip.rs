//! `harnery install` / `uninstall` on copies of real settings files: every
//! event configured, foreign hooks preserved, idempotent, reversible, and a
//! malformed file is refused untouched.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn harnery(home: &Path, cwd: &Path, args: &[&str]) -> std::process::Output {
    let hook = env!("CARGO_BIN_EXE_harnery-hook");
    let mut full: Vec<&str> = args.to_vec();
    full.extend(["--hook-bin", hook]);
    Command::new(env!("CARGO_BIN_EXE_harnery"))
        .args(&full)
        .env_clear()
        .env("HOME", home)
        .env("PATH", "/usr/bin:/bin")
        .current_dir(cwd)
        .output()
        .unwrap()
}

fn ok(out: &std::process::Output) {
    assert_eq!(
        out.status.code(),
        Some(0),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn json(p: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap()
}

fn is_ours(entry: &Value) -> bool {
    let cmd = entry
        .get("command")
        .or(entry.get("bash"))
        .and_then(Value::as_str)
        .unwrap_or("");
    cmd.contains("harnery-hook")
}

#[test]
fn claude_code_project_round_trip_on_real_settings() {
    for scenario in ["basic", "hook-failures"] {
        let t = tempfile::tempdir().unwrap();
        let (home, proj) = (t.path().join("home"), t.path().join("proj"));
        std::fs::create_dir_all(proj.join(".claude")).unwrap();
        std::fs::create_dir_all(&home).unwrap();
        let settings = proj.join(".claude/settings.json");
        std::fs::copy(
            fixtures().join(format!("claude-code/{scenario}/settings.json")),
            &settings,
        )
        .unwrap();
        let original = json(&settings);

        ok(&harnery(
            &home,
            &proj,
            &["install", "claude-code", "--scope", "project"],
        ));
        let installed = std::fs::read(&settings).unwrap();
        let doc = json(&settings);
        let hooks = doc["hooks"].as_object().unwrap();
        assert_eq!(hooks.len(), 34);
        for (event, groups) in hooks {
            let groups = groups.as_array().unwrap();
            let ours: Vec<_> = groups
                .iter()
                .flat_map(|g| g["hooks"].as_array().unwrap())
                .filter(|e| is_ours(e))
                .collect();
            assert_eq!(ours.len(), 1, "{event}");
            assert_eq!(ours[0]["args"], serde_json::json!(["claude-code"]));
            assert!(Path::new(ours[0]["command"].as_str().unwrap()).is_absolute());
            // Foreign groups are all still there, in order, unchanged.
            let foreign: Vec<_> = groups
                .iter()
                .filter(|g| !g["hooks"].as_array().unwrap().iter().any(is_ours))
                .collect();
            let before: Vec<_> = original["hooks"][event]
                .as_array()
                .map(|a| a.iter().collect())
                .unwrap_or_default();
            assert_eq!(foreign, before, "{event}");
        }
        assert_eq!(
            hooks["SessionEnd"].as_array().unwrap().last().unwrap()["hooks"][0]["timeout"],
            2
        );
        let backups = std::fs::read_dir(proj.join(".claude"))
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .contains("harnery-backup")
            });
        assert_eq!(backups.count(), 1);

        ok(&harnery(
            &home,
            &proj,
            &["install", "claude-code", "--scope", "project"],
        ));
        assert_eq!(
            std::fs::read(&settings).unwrap(),
            installed,
            "install twice = once"
        );

        ok(&harnery(
            &home,
            &proj,
            &["uninstall", "claude-code", "--scope", "project"],
        ));
        assert_eq!(json(&settings), original);
    }
}

#[test]
fn claude_code_user_scope_creates_the_file() {
    let t = tempfile::tempdir().unwrap();
    ok(&harnery(t.path(), t.path(), &["install", "claude-code"]));
    let doc = json(&t.path().join(".claude/settings.json"));
    assert_eq!(doc["hooks"].as_object().unwrap().len(), 34);
}

#[test]
fn copilot_user_and_repo_scopes_leave_foreign_files_alone() {
    let t = tempfile::tempdir().unwrap();
    let (home, repo) = (t.path().join("home"), t.path().join("repo"));
    let hooks_dir = home.join(".copilot/hooks");
    std::fs::create_dir_all(&hooks_dir).unwrap();
    std::fs::create_dir_all(&repo).unwrap();
    let capture = hooks_dir.join("capture.json");
    std::fs::copy(
        fixtures().join("copilot/basic-shell-openai/hooks-config-user/capture.json"),
        &capture,
    )
    .unwrap();
    let capture_before = std::fs::read(&capture).unwrap();

    ok(&harnery(&home, &repo, &["install", "copilot"]));
    let ours = hooks_dir.join("harnery.json");
    let doc = json(&ours);
    assert_eq!(doc["version"], 1);
    let hooks = doc["hooks"].as_object().unwrap();
    assert_eq!(hooks.len(), 15);
    for (event, list) in hooks {
        let cmd = list[0]["bash"].as_str().unwrap();
        assert!(cmd.ends_with(&format!(" copilot {event}")), "{cmd}");
        assert_eq!(list[0]["timeoutSec"], 10);
    }
    let first = std::fs::read(&ours).unwrap();
    ok(&harnery(&home, &repo, &["install", "copilot"]));
    assert_eq!(std::fs::read(&ours).unwrap(), first);
    assert_eq!(std::fs::read(&capture).unwrap(), capture_before);

    ok(&harnery(
        &home,
        &repo,
        &["install", "copilot", "--scope", "repo"],
    ));
    assert_eq!(
        json(&repo.join(".github/hooks/harnery.json"))["hooks"]
            .as_object()
            .unwrap()
            .len(),
        15
    );

    ok(&harnery(&home, &repo, &["uninstall", "copilot"]));
    assert!(!ours.exists());
    assert_eq!(std::fs::read(&capture).unwrap(), capture_before);
}

#[test]
fn copilot_file_with_foreign_entries_keeps_them() {
    let t = tempfile::tempdir().unwrap();
    let hooks_dir = t.path().join(".copilot/hooks");
    std::fs::create_dir_all(&hooks_dir).unwrap();
    let ours = hooks_dir.join("harnery.json");
    std::fs::copy(
        fixtures().join("copilot/basic-shell-openai/hooks-config-user/capture.json"),
        &ours,
    )
    .unwrap();
    let original = json(&ours);
    ok(&harnery(t.path(), t.path(), &["install", "copilot"]));
    let doc = json(&ours);
    for (event, list) in doc["hooks"].as_object().unwrap() {
        let list = list.as_array().unwrap();
        assert_eq!(list.iter().filter(|e| is_ours(e)).count(), 1);
        let foreign: Vec<_> = list.iter().filter(|e| !is_ours(e)).collect();
        let before: Vec<_> = original["hooks"][event]
            .as_array()
            .map(|a| a.iter().collect())
            .unwrap_or_default();
        assert_eq!(foreign, before);
    }
    ok(&harnery(t.path(), t.path(), &["uninstall", "copilot"]));
    assert_eq!(json(&ours), original);
}

#[test]
fn malformed_settings_are_refused_and_untouched() {
    let t = tempfile::tempdir().unwrap();
    let settings = t.path().join(".claude/settings.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    let bad = b"{\n  \"hooks\": {\n    \"Stop\": [,]\n  }\n}\n";
    std::fs::write(&settings, bad).unwrap();
    for args in [
        &["install", "claude-code"][..],
        &["uninstall", "claude-code"][..],
    ] {
        let out = harnery(t.path(), t.path(), args);
        assert_eq!(out.status.code(), Some(2));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(&settings.display().to_string()) && err.contains("line 3 column"),
            "{err}"
        );
        assert_eq!(std::fs::read(&settings).unwrap(), bad);
    }
    let files = std::fs::read_dir(settings.parent().unwrap())
        .unwrap()
        .count();
    assert_eq!(files, 1, "no backup or temp file left behind");
}

#[test]
fn dry_run_writes_nothing() {
    let t = tempfile::tempdir().unwrap();
    let out = harnery(t.path(), t.path(), &["install", "claude-code", "--dry-run"]);
    ok(&out);
    assert!(String::from_utf8_lossy(&out.stdout).contains("\"PreToolUse\""));
    assert!(!t.path().join(".claude").exists());
}

#[test]
fn an_event_that_is_not_a_list_is_refused() {
    let t = tempfile::tempdir().unwrap();
    let settings = t.path().join(".claude/settings.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    let odd = b"{\"hooks\": {\"Stop\": \"echo mine\"}}";
    std::fs::write(&settings, odd).unwrap();
    let out = harnery(t.path(), t.path(), &["install", "claude-code"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("hooks.Stop"));
    assert_eq!(std::fs::read(&settings).unwrap(), odd);
}
