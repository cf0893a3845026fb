//! When the agent's own record is gone, `restore` prints a put-back:
//! `harnery restore <id> --checkpoint <cp> [flags] --apply [-- words]`.
//! These tests run what it printed, as printed (through `sh`, from a
//! directory of their own), then the resume that prints in turn, down to
//! a stub agent or the stand-in SDK (a real `node`): the flags that decide
//! the resume are carried, the agent's words arrive unchanged through both
//! commands, and no hostile word is run by the shell.

use std::path::Path;

use serde_json::Value;

use crate::common::{stderr, stdout};
use crate::restore::apply::{
    CLAUDE, CLAUDE_TURN_1, COPILOT, World, checkpoint_of_turn, claude_world,
};
use crate::restore::apply_more::copilot_world_of;
use crate::restore::sdk::{call, calls, fake_sdk, node_installed};

/// A prompt a shell would act on if a word were left unquoted (`$(…)`
/// and backticks touch `canary`).
fn hostile_prompt(canary: &Path) -> String {
    let c = canary.display();
    format!("go on: it's \"quoted\"; $(touch {c}) `touch {c}` ${{HOME}} -- --apply")
}

/// `harnery restore args…` run from `dir`, its output checked.
fn restore_from(w: &World, dir: &Path, args: &[&str]) -> String {
    let out = w
        .command()
        .current_dir(dir)
        .arg("restore")
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    stdout(&out)
}

/// `text` run by `sh` from `dir`: it must succeed; its standard output.
fn run_printed(w: &World, text: &str, dir: &Path, env: &[(&str, &Path)]) -> String {
    let mut cmd = w.shell(text, dir);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let ran = cmd.output().unwrap();
    assert_eq!(ran.status.code(), Some(0), "{text}\n{}", stderr(&ran));
    stdout(&ran)
}

/// The resume a text `restore` printed: under `resume (…):`, up to the
/// note that nothing was recorded (an SDK script spans lines).
fn printed_resume(out: &str) -> String {
    let header = out.find("\n  resume (").expect("a resume is printed");
    let below = &out[header + 1..];
    let below = &below[below.find('\n').unwrap() + 1..];
    let command = below.strip_prefix("    ").unwrap();
    let end = ["\n  interactive resume:", "\n  (not recorded"]
        .iter()
        .filter_map(|mark| command.find(mark))
        .min()
        .expect("not recorded");
    command[..end].to_string()
}

/// The new session a put-back wrote (`… as new session <id> at …`).
fn new_session(out: &str) -> String {
    let after = out.split("as new session ").nth(1).expect("applied");
    after.split(' ').next().unwrap().to_string()
}

/// The words a put-back shim ends with: restore's own, then `--` and the
/// agent's.
fn put_back_words(shim: &Value) -> Vec<String> {
    assert_eq!(shim["program"], "harnery");
    assert_eq!(shim["native"], false, "{shim}");
    assert!(shim.get("cwd").is_none(), "it runs where it was printed");
    shim["arguments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_string())
        .collect()
}

/// A stub `claude` in the world's `bin` that writes its directory and
/// arguments, one a line, to `said`.
fn stub_claude(w: &World, said: &Path) {
    let bin = w.bin();
    std::fs::create_dir_all(&bin).unwrap();
    let stub = format!(
        "#!/bin/sh\n{{ pwd; for a in \"$@\"; do echo \"$a\"; done; }} > '{}'\n",
        said.display()
    );
    std::fs::write(bin.join("claude"), stub).unwrap();
    use std::os::unix::fs::PermissionsExt;
    let exec = std::fs::Permissions::from_mode(0o755);
    std::fs::set_permissions(bin.join("claude"), exec).unwrap();
}

#[test]
fn claude_codes_put_back_runs_as_printed_down_to_the_agent() {
    let w = claude_world();
    std::fs::remove_file(&w.record).unwrap();
    let turn1 = format!("turn:{CLAUDE_TURN_1}");
    let canary = w.user.path().join("canary");
    let prompt = hostile_prompt(&canary);
    let dir = w.user.path().join("it's $(a) dir");
    std::fs::create_dir_all(&dir).unwrap();
    let dir = dir.to_str().unwrap();
    let said = w.user.path().join("said.txt");
    stub_claude(&w, &said);
    let elsewhere = tempfile::tempdir().unwrap();
    let args = [
        CLAUDE,
        "--checkpoint",
        &turn1,
        "--cwd",
        dir,
        "--json",
        "--",
        "-p",
        &prompt,
    ];
    let shown: Value = serde_json::from_str(&restore_from(&w, elsewhere.path(), &args)).unwrap();
    let shim = &shown["shim"];
    assert_eq!(
        put_back_words(shim),
        [
            "restore",
            CLAUDE,
            "--checkpoint",
            &turn1,
            "--cwd",
            dir,
            "--apply",
            "--",
            "-p",
            &prompt
        ]
    );
    // As printed: the record put back, the agent's resume printed…
    let out = run_printed(&w, shim["text"].as_str().unwrap(), elsewhere.path(), &[]);
    let new_id = new_session(&out);
    assert_ne!(new_id, CLAUDE);
    // …and that, as printed, resumes the new session with the words.
    run_printed(&w, &printed_resume(&out), elsewhere.path(), &[]);
    let said = std::fs::read_to_string(&said).unwrap();
    let said: Vec<&str> = said.lines().collect();
    let dir = std::fs::canonicalize(dir).unwrap();
    assert_eq!(
        said,
        [dir.to_str().unwrap(), "--resume", &new_id, "-p", &prompt]
    );
    assert!(!canary.exists(), "no word was run by the shell");
}

#[test]
fn copilots_put_back_carries_the_sdk_transport_and_runs_as_printed() {
    if !node_installed() {
        return;
    }
    let w = copilot_world_of(
        COPILOT,
        "resume-2-resumed-run",
        &["resume-1-first-run", "resume-2-resumed-run"],
    );
    let turn1 = checkpoint_of_turn(&w, COPILOT, 0);
    std::fs::remove_file(&w.record).unwrap();
    let sdk = fake_sdk(w.user.path());
    let sdk = sdk.to_str().unwrap();
    let log = w.user.path().join("sdk.jsonl");
    let canary = w.user.path().join("canary");
    let prompt = hostile_prompt(&canary);
    let elsewhere = tempfile::tempdir().unwrap();
    // The hooks' directory was on the machine that captured them.
    let project = w.project.to_str().unwrap();
    let args = [
        COPILOT,
        "--checkpoint",
        &turn1,
        "--cwd",
        project,
        "--transport",
        "sdk",
        "--sdk",
        sdk,
        "--json",
        "--",
        "-p",
        &prompt,
        "--model=m-4",
    ];
    let shown: Value = serde_json::from_str(&restore_from(&w, elsewhere.path(), &args)).unwrap();
    let shim = &shown["shim"];
    assert_eq!(
        put_back_words(shim),
        [
            "restore",
            COPILOT,
            "--checkpoint",
            &turn1,
            "--transport",
            "sdk",
            "--sdk",
            sdk,
            "--cwd",
            project,
            "--apply",
            "--",
            "-p",
            &prompt,
            "--model=m-4"
        ]
    );
    let env = [("FAKE_SDK_LOG", log.as_path())];
    let out = run_printed(&w, shim["text"].as_str().unwrap(), elsewhere.path(), &env);
    assert!(!log.exists(), "the put-back only prints the resume");
    let new_id = new_session(&out);
    let events = w.user.path().join("copilot/session-state").join(&new_id);
    assert!(events.join("events.jsonl").is_file(), "{out}");
    let resumed = run_printed(&w, &printed_resume(&out), elsewhere.path(), &env);
    assert_eq!(resumed, "reply from the stand-in SDK\n");
    let calls = calls(&log);
    let resumed = call(&calls, "resumeSession");
    assert_eq!(resumed["id"], new_id.as_str());
    assert_eq!(resumed["config"]["model"], "m-4");
    assert_eq!(call(&calls, "send")["message"]["prompt"], prompt.as_str());
    assert!(!canary.exists(), "no word was run by the shell");
}
