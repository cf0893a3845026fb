//! `harnery install` / `uninstall` on copies of real settings files: every
//! event configured, foreign hooks preserved, idempotent, reversible, and a
//! malformed file is refused untouched. Copilot gets the exec or the bash
//! form by the version of the (fake, on-disk) Copilot package it finds.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn harnery(home: &Path, cwd: &Path, args: &[&str]) -> std::process::Output {
    harnery_on_path(home, cwd, args, "/usr/bin:/bin")
}

/// Run harnery with `PATH` set; no global npm prefix is searched, so only the
/// Copilot packages a test creates are found.
fn harnery_on_path(home: &Path, cwd: &Path, args: &[&str], path: &str) -> std::process::Output {
    harnery_with(home, cwd, args, &[("PATH", Path::new(path))])
}

/// Run harnery with only `HOME`, `HARNERY_NPM_PREFIXES` and `vars` set.
pub(super) fn harnery_with(
    home: &Path,
    cwd: &Path,
    args: &[&str],
    vars: &[(&str, &Path)],
) -> std::process::Output {
    let hook = assert_cmd::cargo::cargo_bin("harnery-hook");
    let mut full: Vec<&str> = args.to_vec();
    full.extend([
        "--hook-bin",
        hook.to_str().expect("a UTF-8 target path"),
        "--no-schedule",
    ]);
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_harnery"));
    cmd.args(&full)
        .env_clear()
        .env("HOME", home)
        .env("PATH", "/usr/bin:/bin")
        .env("HARNERY_NPM_PREFIXES", "")
        .current_dir(cwd);
    for (name, value) in vars {
        cmd.env(name, value);
    }
    cmd.output().unwrap()
}

/// An npm install of `@github/copilot` at `version` under `root`, laid out as
/// npm does it (`.bin/copilot` links to the package's `npm-loader.js`).
/// Returns the `.bin` folder to put on `PATH`.
fn fake_copilot(root: &Path, version: &str) -> PathBuf {
    let pkg = root.join("node_modules/@github/copilot");
    let bin = root.join("node_modules/.bin");
    std::fs::create_dir_all(&pkg).unwrap();
    std::fs::create_dir_all(&bin).unwrap();
    let manifest = format!(r#"{{"name": "@github/copilot", "version": "{version}"}}"#);
    std::fs::write(pkg.join("package.json"), manifest).unwrap();
    let loader = pkg.join("npm-loader.js");
    std::fs::write(&loader, "#!/usr/bin/env node\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&loader, std::fs::Permissions::from_mode(0o755)).unwrap();
    let link = bin.join("copilot");
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink("../@github/copilot/npm-loader.js", &link).unwrap();
    bin
}

fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Every event has exactly one harnery entry, in `form`, and nothing of the
/// other form.
fn assert_copilot_form(doc: &Value, form: &str) {
    let hooks = doc["hooks"].as_object().unwrap();
    assert_eq!(hooks.len(), 15);
    for (event, list) in hooks {
        let ours: Vec<_> = list
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| is_ours(e))
            .collect();
        assert_eq!(ours.len(), 1, "{event}");
        let e = ours[0];
        assert_eq!(e["type"], "command");
        assert_eq!(e["timeoutSec"], 10);
        match form {
            "exec" => {
                assert!(e.get("bash").is_none(), "{event}: {e}");
                assert!(Path::new(e["exec"].as_str().unwrap()).is_absolute());
                assert!(e["exec"].as_str().unwrap().ends_with("/harnery-hook"));
                assert_eq!(e["args"], serde_json::json!(["copilot", event]));
            }
            _ => {
                assert!(
                    e.get("exec").is_none() && e.get("args").is_none(),
                    "{event}: {e}"
                );
                let cmd = e["bash"].as_str().unwrap();
                assert!(
                    cmd.starts_with('\'')
                        && cmd.ends_with(&format!("/harnery-hook' copilot {event}")),
                    "{cmd}"
                );
            }
        }
    }
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
        .or(entry.get("exec"))
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

/// With `CLAUDE_CONFIG_DIR` set, Claude Code reads its user settings
/// there and never looks at `~/.claude/settings.json`: install and
/// uninstall work on the file it reads, and say where and why.
#[test]
fn claude_code_user_scope_follows_claude_config_dir() {
    let t = tempfile::tempdir().unwrap();
    let (home, config) = (t.path().join("home"), t.path().join("claude-work"));
    std::fs::create_dir_all(&home).unwrap();
    let moved: &[(&str, &Path)] = &[("CLAUDE_CONFIG_DIR", &config)];
    let out = harnery_with(&home, t.path(), &["install", "claude-code"], moved);
    ok(&out);
    let settings = config.join("settings.json");
    assert_eq!(json(&settings)["hooks"].as_object().unwrap().len(), 34);
    assert!(
        !home.join(".claude").exists(),
        "wrote where the agent never reads"
    );
    let said = stdout(&out);
    assert!(
        said.contains(&format!(
            "reads its user settings from {}",
            config.display()
        )) && said.contains("$CLAUDE_CONFIG_DIR is set"),
        "{said}"
    );
    assert!(said.contains(&format!("{}: hooks installed", settings.display())));

    let out = harnery_with(&home, t.path(), &["uninstall", "claude-code"], moved);
    ok(&out);
    assert!(
        json(&settings)
            .get("hooks")
            .is_none_or(|h| h == &serde_json::json!({}))
    );
    assert!(stdout(&out).contains(&format!("{}: hooks removed", settings.display())));

    // Unset, the default place, said as the default.
    let out = harnery(&home, t.path(), &["install", "claude-code"]);
    let default = home.join(".claude");
    assert!(stdout(&out).contains(&format!(
        "reads its user settings from {} (the default: $CLAUDE_CONFIG_DIR is not set)",
        default.display()
    )));
    assert!(default.join("settings.json").is_file());
}

/// With `COPILOT_HOME` set, Copilot loads user hooks from
/// `$COPILOT_HOME/hooks/` (its `userHooksDir`): install writes there.
#[test]
fn copilot_user_scope_follows_copilot_home() {
    let t = tempfile::tempdir().unwrap();
    let (home, copilot_home) = (t.path().join("home"), t.path().join("cp"));
    std::fs::create_dir_all(&home).unwrap();
    let moved: &[(&str, &Path)] = &[("COPILOT_HOME", &copilot_home)];
    let out = harnery_with(&home, t.path(), &["install", "copilot"], moved);
    ok(&out);
    let ours = copilot_home.join("hooks/harnery.json");
    assert_eq!(json(&ours)["hooks"].as_object().unwrap().len(), 15);
    assert!(!home.join(".copilot").exists());
    let hooks_dir = copilot_home.join("hooks");
    assert!(
        stdout(&out).contains(&format!(
            "copilot reads its user hooks from {} ($COPILOT_HOME is set)",
            hooks_dir.display()
        )),
        "{}",
        stdout(&out)
    );
    ok(&harnery_with(
        &home,
        t.path(),
        &["uninstall", "copilot"],
        moved,
    ));
    assert!(!ours.exists());
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
    for form in ["bash", "exec"] {
        foreign_entries_survive(form);
    }
}

fn foreign_entries_survive(form: &str) {
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
    ok(&harnery(
        t.path(),
        t.path(),
        &["install", "copilot", "--form", form],
    ));
    let doc = json(&ours);
    assert_copilot_form(&doc, form);
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

#[test]
fn copilot_form_follows_the_client_on_path() {
    let t = tempfile::tempdir().unwrap();
    let (home, npm) = (t.path().join("home"), t.path().join("npm"));
    let hooks_dir = home.join(".copilot/hooks");
    std::fs::create_dir_all(&hooks_dir).unwrap();
    let capture = hooks_dir.join("capture.json");
    std::fs::copy(
        fixtures().join("copilot/basic-shell-openai/hooks-config-user/capture.json"),
        &capture,
    )
    .unwrap();
    let capture_before = std::fs::read(&capture).unwrap();
    let ours = hooks_dir.join("harnery.json");
    let path = format!("{}:/usr/bin:/bin", fake_copilot(&npm, "1.0.60").display());
    let install = |args: &[&str]| harnery_on_path(&home, &home, args, &path);

    let out = install(&["install", "copilot"]);
    ok(&out);
    assert!(
        stdout(&out).contains("copilot hook form: bash, because the copilot on PATH")
            && stdout(&out).contains("is 1.0.60, older than 1.0.63"),
        "{}",
        stdout(&out)
    );
    assert_copilot_form(&json(&ours), "bash");

    // The client is upgraded in place: the next install switches the form.
    fake_copilot(&npm, "1.0.102");
    let out = install(&["install", "copilot"]);
    ok(&out);
    assert!(
        stdout(&out).contains("copilot hook form: exec, because the copilot on PATH")
            && stdout(&out).contains("is 1.0.102, at or above 1.0.63"),
        "{}",
        stdout(&out)
    );
    assert_copilot_form(&json(&ours), "exec");
    let exec_bytes = std::fs::read(&ours).unwrap();
    let out = install(&["install", "copilot"]);
    ok(&out);
    assert!(
        stdout(&out).contains("already up to date"),
        "{}",
        stdout(&out)
    );
    assert_eq!(
        std::fs::read(&ours).unwrap(),
        exec_bytes,
        "install twice = once"
    );

    // --form overrides the evidence, both ways.
    let out = install(&["install", "copilot", "--form", "bash"]);
    ok(&out);
    assert!(stdout(&out).contains("copilot hook form: bash, because --form bash was given"));
    assert_copilot_form(&json(&ours), "bash");
    ok(&install(&["install", "copilot"]));
    assert_eq!(std::fs::read(&ours).unwrap(), exec_bytes);

    assert_eq!(std::fs::read(&capture).unwrap(), capture_before);
    ok(&install(&["uninstall", "copilot"]));
    assert!(!ours.exists());
    assert_eq!(std::fs::read(&capture).unwrap(), capture_before);
}

#[test]
fn copilot_package_cache_decides_when_nothing_is_on_path() {
    let t = tempfile::tempdir().unwrap();
    let cached = t.path().join(".cache/copilot/pkg/linux-x64/1.0.102");
    std::fs::create_dir_all(&cached).unwrap();
    std::fs::copy(
        fixtures().join("recover/packages/1.0.102/package.json"),
        cached.join("package.json"),
    )
    .unwrap();
    let out = harnery(t.path(), t.path(), &["install", "copilot", "--dry-run"]);
    ok(&out);
    let text = stdout(&out);
    assert!(
        text.starts_with("# copilot hook form: exec, because no copilot on PATH has a readable version; the newest installed Copilot")
            && text.contains(&format!("({}) is 1.0.102", cached.display())),
        "{text}"
    );
    assert!(
        text.contains("\"exec\": ") && !text.contains("\"bash\": "),
        "{text}"
    );
    assert!(
        !t.path().join(".copilot").exists(),
        "dry run writes nothing"
    );
}

#[test]
fn copilot_unknown_client_gets_bash_and_says_so() {
    let t = tempfile::tempdir().unwrap();
    let out = harnery(t.path(), t.path(), &["install", "copilot", "--dry-run"]);
    ok(&out);
    let text = stdout(&out);
    assert!(
        text.starts_with(
            "# copilot hook form: bash, because no Copilot CLI with a readable version was found"
        ) && text.contains("unknown"),
        "{text}"
    );
    assert!(
        text.contains("\"bash\": ") && !text.contains("\"exec\": "),
        "{text}"
    );
}

#[test]
fn uninstall_refuses_form_and_install_refuses_an_unknown_form() {
    let t = tempfile::tempdir().unwrap();
    let out = harnery(
        t.path(),
        t.path(),
        &["uninstall", "copilot", "--form", "exec"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--form applies to install only"));
    let out = harnery(
        t.path(),
        t.path(),
        &["install", "copilot", "--form", "powershell"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("powershell"));
    assert!(!t.path().join(".copilot").exists());
}
