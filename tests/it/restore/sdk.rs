//! `harnery restore --transport sdk`: the Copilot SDK resume run by a real
//! `node` against a stand-in `@github/copilot-sdk` written on disk by the
//! test (a real module that writes down what it was called with and
//! answers one turn), over a real finalized Copilot home. Checks the
//! session id, prompt and model reach the SDK as data, the directory, the
//! provider from Copilot's own variables, the exit status, that the
//! printed command runs as printed, and the refusals (no node, no SDK,
//! words the SDK resume cannot take) before anything is written.
//! Skipped, saying so, where node is not installed.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{stderr, stdout};
use crate::restore::apply::{COPILOT, World, checkpoint_of_turn};
use crate::restore::apply_more::copilot_world_of;

const NEW_ID: &str = "0b5e6c1e-0000-4000-8000-0000000000d5";
const PROMPT: &str = "turn four: it's \"quoted\"; $(touch /tmp/x) `id` ${process.exit(9)}";

/// The stand-in SDK: `CopilotClient` writes each call to `$FAKE_SDK_LOG`;
/// `resumeSession` asks the permission handler once; `send` emits a tool
/// start, a reply and `session.idle` (or, with `FAKE_SDK_MODE=error`, a
/// `session.error` first; with `FAKE_SDK_MODE=hang`, nothing: the turn
/// never ends, until `abort`).
const FAKE_SDK: &str = r#"
const fs = require("node:fs");
const log = (entry) => fs.appendFileSync(process.env.FAKE_SDK_LOG, JSON.stringify(entry) + "\n");
class CopilotClient {
  constructor(options) { log({ call: "new", options, cwd: process.cwd() }); }
  async start() { log({ call: "start" }); }
  async resumeSession(id, config) {
    const permission = await config.onPermissionRequest({ kind: "shell" }, {});
    const { onPermissionRequest, ...rest } = config;
    log({ call: "resumeSession", id, config: rest, permission });
    const handlers = [];
    const emit = (type, data) => handlers.forEach((h) => h({ type, data }));
    return {
      on(h) { handlers.push(h); },
      async send(message) {
        log({ call: "send", message });
        if (process.env.FAKE_SDK_MODE === "hang") return "m1";
        if (process.env.FAKE_SDK_MODE === "error") emit("session.error", { message: "the model said no" });
        else {
          emit("tool.execution_start", { toolCallId: "t1" });
          emit("assistant.message", { content: "reply from the stand-in SDK" });
        }
        emit("session.idle", {});
        return "m1";
      },
      async abort() { log({ call: "abort" }); },
      async disconnect() { log({ call: "disconnect" }); },
    };
  }
  async stop() { log({ call: "stop" }); }
}
module.exports = { CopilotClient, approveAll: () => ({ kind: "approve-once" }) };
"#;

pub(crate) fn node_installed() -> bool {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let found = std::env::split_paths(&path).any(|d| d.join("node").is_file());
    if !found {
        eprintln!("skipped: node is not installed (the Copilot SDK resume runs under node)");
    }
    found
}

/// A directory holding `node_modules/@github/copilot-sdk`, the stand-in.
pub(crate) fn fake_sdk(under: &Path) -> PathBuf {
    let root = under.join("sdk root");
    fake_sdk_in(&root.join("node_modules"));
    root
}

/// The stand-in as `<node_modules>/@github/copilot-sdk`.
fn fake_sdk_in(node_modules: &Path) {
    let pkg = node_modules.join("@github/copilot-sdk");
    std::fs::create_dir_all(&pkg).unwrap();
    let manifest =
        r#"{"name": "@github/copilot-sdk", "version": "0.0.0-stand-in", "main": "index.cjs"}"#;
    std::fs::write(pkg.join("package.json"), manifest).unwrap();
    std::fs::write(pkg.join("index.cjs"), FAKE_SDK).unwrap();
}

fn copilot_world() -> World {
    copilot_world_of(
        COPILOT,
        "resume-2-resumed-run",
        &["resume-1-first-run", "resume-2-resumed-run"],
    )
}

/// The stand-in's calls, in order.
pub(crate) fn calls(log: &Path) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

pub(crate) fn call<'a>(calls: &'a [Value], name: &str) -> &'a Value {
    calls
        .iter()
        .find(|c| c["call"] == name)
        .unwrap_or_else(|| panic!("no {name} in {calls:#?}"))
}

/// A test's Copilot home (where node runs), turn 1's checkpoint, and the
/// stand-in's log; `None` where node is missing (the test is skipped).
struct Case {
    w: World,
    turn1: String,
    log: PathBuf,
}

fn case() -> Option<Case> {
    if !node_installed() {
        return None;
    }
    let w = copilot_world();
    let turn1 = checkpoint_of_turn(&w, COPILOT, 0);
    let log = w.user.path().join("sdk.jsonl");
    Some(Case { w, turn1, log })
}

/// `restore`'s words for an SDK put-back of turn 1 as `new_id` run in
/// `cwd`, then `more`.
fn sdk_args(turn1: &str, new_id: &str, cwd: &str, more: &[&str]) -> Vec<String> {
    let head = [
        COPILOT,
        "--checkpoint",
        turn1,
        "--apply",
        "--new-id",
        new_id,
    ];
    head.iter()
        .chain(&["--cwd", cwd, "--transport", "sdk"])
        .chain(more)
        .map(|s| s.to_string())
        .collect()
}

/// `restore` in `w`, from a directory of its own, the stand-in logging to `log`.
fn restore(
    w: &World,
    log: &Path,
    args: &[impl AsRef<std::ffi::OsStr>],
    env: &[(&str, &str)],
) -> std::process::Output {
    let elsewhere = tempfile::tempdir().unwrap();
    let mut cmd = w.command();
    cmd.current_dir(elsewhere.path())
        .env("FAKE_SDK_LOG", log)
        .env_remove("HARNERY_COPILOT_SDK")
        .env_remove("COPILOT_MODEL");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.arg("restore").args(args).output().unwrap()
}

fn new_session_dir(w: &World) -> PathBuf {
    w.user.path().join("copilot/session-state").join(NEW_ID)
}

#[test]
fn exec_resumes_the_new_session_through_the_sdk() {
    let Some(Case { w, turn1, log }) = case() else {
        return;
    };
    let sdk = fake_sdk(w.user.path());
    let project = w.project.to_str().unwrap();
    let out = restore(
        &w,
        &log,
        &sdk_args(
            &turn1,
            NEW_ID,
            project,
            &[
                "--sdk",
                sdk.to_str().unwrap(),
                "--exec",
                "--",
                "-p",
                PROMPT,
                "--model=m-4",
            ],
        ),
        &[
            ("COPILOT_PROVIDER_BASE_URL", "http://127.0.0.1:9/v1"),
            ("COPILOT_PROVIDER_TYPE", "anthropic"),
            ("COPILOT_PROVIDER_API_KEY", "k-1"),
            ("COPILOT_PROVIDER_HEADERS", "X-One: 1\nX-Two: two"),
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).ends_with("reply from the stand-in SDK\n"),
        "{}",
        stdout(&out)
    );
    assert!(
        stderr(&out).contains(&format!(
            "Copilot session {NEW_ID} resumed through @github/copilot-sdk 0.0.0-stand-in: \
             the turn ended (1 assistant message, 1 tool call)"
        )),
        "{}",
        stderr(&out)
    );
    // Shown before it runs: the script named, not written out.
    assert!(
        stdout(&out).contains("<the SDK resume script"),
        "{}",
        stdout(&out)
    );
    assert!(
        new_session_dir(&w).join("events.jsonl").is_file(),
        "applied"
    );
    let calls = calls(&log);
    let names: Vec<&str> = calls.iter().map(|c| c["call"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "new",
            "start",
            "resumeSession",
            "send",
            "disconnect",
            "stop"
        ]
    );
    let dir = std::fs::canonicalize(&w.project).unwrap();
    let dir = dir.to_str().unwrap();
    assert_eq!(call(&calls, "new")["cwd"], dir);
    assert_eq!(call(&calls, "new")["options"]["workingDirectory"], dir);
    let resumed = call(&calls, "resumeSession");
    assert_eq!(resumed["id"], NEW_ID);
    assert_eq!(resumed["config"]["workingDirectory"], dir);
    assert_eq!(resumed["config"]["model"], "m-4");
    assert_eq!(
        resumed["config"]["provider"],
        serde_json::json!({
            "baseUrl": "http://127.0.0.1:9/v1",
            "type": "anthropic",
            "apiKey": "k-1",
            "headers": {"X-One": "1", "X-Two": "two"}
        })
    );
    // Without --allow-all-tools no permission is granted.
    assert_eq!(resumed["permission"]["kind"], "user-not-available");
    assert_eq!(call(&calls, "send")["message"]["prompt"], PROMPT);
}

#[test]
fn the_printed_command_runs_as_printed() {
    let Some(Case { w, turn1, log }) = case() else {
        return;
    };
    let sdk = fake_sdk(w.user.path());
    let project = w.project.to_str().unwrap();
    // No prompt after `--`: the command reads it from standard input.
    let args = sdk_args(
        &turn1,
        NEW_ID,
        project,
        &["--json", "--", "--allow-all-tools"],
    );
    let sdk_env = [("HARNERY_COPILOT_SDK", sdk.to_str().unwrap())];
    let out = restore(&w, &log, &args, &sdk_env);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!log.exists(), "nothing ran");
    let shown: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let shim = &shown["shim"];
    assert_eq!(shim["transport"], "sdk");
    assert_eq!(shim["call"], "resumeSession");
    assert_eq!(shim["arguments"], serde_json::json!([NEW_ID]));
    assert_eq!(shim["runner"]["program"], "node");
    assert_eq!(
        shim["runner"]["request"],
        serde_json::json!({
            "session_id": NEW_ID,
            "allow_all_tools": true,
            "sdk_dir": sdk.to_str().unwrap()
        })
    );
    let text = shim["text"].as_str().unwrap();
    let mut sh = std::process::Command::new("sh")
        .args(["-c", text])
        .env("FAKE_SDK_LOG", &log)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    sh.stdin
        .take()
        .unwrap()
        .write_all(PROMPT.as_bytes())
        .unwrap();
    let ran = sh.wait_with_output().unwrap();
    assert_eq!(ran.status.code(), Some(0), "{}", stderr(&ran));
    assert_eq!(stdout(&ran), "reply from the stand-in SDK\n");
    let calls = calls(&log);
    assert_eq!(call(&calls, "resumeSession")["id"], NEW_ID);
    assert_eq!(
        call(&calls, "resumeSession")["permission"]["kind"],
        "approve-once"
    );
    assert_eq!(call(&calls, "send")["message"]["prompt"], PROMPT);
}

/// `restore --exec` through the stand-in in `mode`, with `flags` before
/// `--exec`: it must exit 1 saying `the turn failed: {why}`; the calls the
/// stand-in saw, by name. `None` where node is missing.
fn failed_turn(mode: &str, flags: &[&str], why: &str) -> Option<(Case, Vec<Value>)> {
    let case = case()?;
    let sdk = fake_sdk(case.w.user.path());
    let mut more = vec!["--sdk", sdk.to_str().unwrap()];
    more.extend_from_slice(flags);
    more.extend_from_slice(&["--exec", "--", "-p", "go on"]);
    let args = sdk_args(&case.turn1, NEW_ID, case.w.project.to_str().unwrap(), &more);
    let out = restore(&case.w, &case.log, &args, &[("FAKE_SDK_MODE", mode)]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let said = format!("the turn failed: {why}");
    assert!(stderr(&out).contains(&said), "{}", stderr(&out));
    let names = calls(&case.log).iter().map(|c| c["call"].clone()).collect();
    Some((case, names))
}

#[test]
fn a_failed_turn_is_exit_1() {
    let Some((_, names)) = failed_turn("error", &[], "the model said no") else {
        return;
    };
    assert_eq!(names.last().unwrap(), "stop", "disconnected all the same");
}

#[test]
fn a_turn_past_its_sdk_timeout_is_aborted_and_exit_1() {
    let why = "the turn did not end within 1 s; it was aborted";
    let Some((Case { w, .. }, names)) = failed_turn("hang", &["--sdk-timeout", "1"], why) else {
        return;
    };
    let at = |name: &str| names.iter().position(|n| n == name).unwrap();
    assert!(
        at("send") < at("abort") && at("abort") < at("stop"),
        "{names:?}"
    );
    // Without --transport sdk there is no SDK turn to limit.
    let out = w.harnery(&["restore", COPILOT, "--sdk-timeout", "5"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--sdk-timeout"), "{}", stderr(&out));
}

/// What stops the SDK resume stops it before `--apply` writes anything.
#[test]
fn no_node_no_sdk_or_a_foreign_word_refuse_before_anything_is_written() {
    let Some(Case { w, turn1, log }) = case() else {
        return;
    };
    let sdk = fake_sdk(w.user.path());
    let empty = tempfile::tempdir().unwrap();
    let project = w.project.to_str().unwrap();
    let with = |sdk_dir: &Path, words: &[&str]| -> Vec<String> {
        let more = ["--exec", "--sdk", sdk_dir.to_str().unwrap(), "--"];
        let more: Vec<&str> = more.iter().chain(words).copied().collect();
        sdk_args(&turn1, NEW_ID, project, &more)
    };
    let before = w.snapshot();
    let refused = |args: Vec<String>, env: &[(&str, &str)], says: &[&str]| {
        let out = restore(&w, &log, &args, env);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        for s in says {
            assert!(stderr(&out).contains(s), "{s:?} in {}", stderr(&out));
        }
        assert_eq!(before, w.snapshot(), "the ledger and spool unchanged");
        assert!(!new_session_dir(&w).exists(), "nothing applied");
        assert!(!log.exists(), "nothing ran");
    };
    let no_sdk = empty.path().to_str().unwrap().to_string();
    refused(
        with(empty.path(), &["-p", "go on"]),
        &[],
        &["@github/copilot-sdk not found", &no_sdk, "--sdk DIR"],
    );
    // A PATH without node (the test's own bin dir only).
    let bin = w.user.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    refused(
        with(&sdk, &["-p", "go on"]),
        &[("PATH", bin.to_str().unwrap())],
        &["node not found on PATH", "Node.js"],
    );
    refused(
        with(&sdk, &["-p", "go on", "--no-auto-update"]),
        &[],
        &["--transport sdk takes -p/--prompt", "--no-auto-update"],
    );
}

/// Without `--sdk` or `HARNERY_COPILOT_SDK`: node's resolution from the
/// session's directory (a `node_modules` above it), then `npm root -g`.
#[test]
fn the_sdk_is_found_from_the_sessions_directory_then_the_global_root() {
    let Some(Case { w, turn1, log }) = case() else {
        return;
    };
    let project = w.user.path().join("repo/sub dir");
    std::fs::create_dir_all(&project).unwrap();
    let run = |new_id: &str, env: &[(&str, &str)]| {
        let more = ["--exec", "--", "-p", "go on"];
        let args = sdk_args(&turn1, new_id, project.to_str().unwrap(), &more);
        restore(&w, &log, &args, env)
    };
    let prefix = w.user.path().join("npm prefix");
    let global = [("NPM_CONFIG_PREFIX", prefix.to_str().unwrap())];
    let nowhere = run("0b5e6c1e-0000-4000-8000-0000000000e1", &global);
    assert_eq!(nowhere.status.code(), Some(2), "{}", stderr(&nowhere));
    let said = stderr(&nowhere);
    let above = w.user.path().join("repo/node_modules");
    assert!(said.contains(above.to_str().unwrap()), "{said}");
    let has_npm = std::process::Command::new("npm")
        .arg("--version")
        .output()
        .is_ok();
    let global_root = prefix.join("lib/node_modules");
    assert_eq!(
        said.contains(global_root.to_str().unwrap()),
        has_npm,
        "{said}"
    );
    fake_sdk_in(&above);
    let out = run("0b5e6c1e-0000-4000-8000-0000000000e2", &global);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        call(&calls(&log), "resumeSession")["id"],
        "0b5e6c1e-0000-4000-8000-0000000000e2"
    );
    std::fs::remove_dir_all(&above).unwrap();
    // npm's global root, where npm is installed to say where that is.
    if !has_npm {
        eprintln!("skipped the global root: npm is not installed");
        return;
    }
    fake_sdk_in(&global_root);
    let out = run("0b5e6c1e-0000-4000-8000-0000000000e3", &global);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        calls(&log)
            .iter()
            .rfind(|c| c["call"] == "resumeSession")
            .unwrap()["id"],
        "0b5e6c1e-0000-4000-8000-0000000000e3"
    );
}
