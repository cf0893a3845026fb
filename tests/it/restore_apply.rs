//! `harnery restore` shows and `--apply` acts, over real finalized homes:
//! real Claude Code and Copilot sessions (their captured hooks through the
//! real hook, their own records followed by the real `finalize`), then the
//! record put back from the raw archive as a new session under a fake
//! agent home, and `--exec` running a stub agent (a real process) that
//! writes down its arguments and directory.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{self, stderr, stdout};

const CLAUDE: &str = "65f5909b-b66b-419a-a0ed-4fe96f1affac";
const CLAUDE_TURN_1: &str = "484a3d1f-b0f6-464d-9676-016ec962767c";
const CLAUDE_TURN_2: &str = "7cf1d9dd";
const COPILOT: &str = "7271c131-2f28-400e-a537-c4eb30e50959";

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A finalized home, and the fake user home the agents' files live in.
struct World {
    home: tempfile::TempDir,
    user: tempfile::TempDir,
    /// The session's directory (the hooks' `cwd`).
    project: PathBuf,
    /// The agent's own record of the session.
    record: PathBuf,
}

impl World {
    fn command(&self) -> assert_cmd::Command {
        let mut cmd = common::harnery(self.home.path());
        cmd.env("HARNERY_RECORDS", "on")
            .env("HOME", self.user.path())
            .env("CLAUDE_CONFIG_DIR", self.user.path().join("claude"))
            .env("COPILOT_HOME", self.user.path().join("copilot"))
            .env("PATH", path_with(&self.user.path().join("bin")));
        cmd
    }

    fn harnery(&self, args: &[&str]) -> std::process::Output {
        self.command().args(args).output().unwrap()
    }

    /// `harnery args…` as the build of the next contract.
    fn next(&self, args: &[&str]) -> String {
        let out = self
            .command()
            .env("HARNERY_TEST_SCHEMA_SUFFIX", common::NEXT_CONTRACT)
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}{}",
            stdout(&out),
            stderr(&out)
        );
        stdout(&out)
    }

    fn ok(&self, args: &[&str]) -> String {
        let out = self.harnery(args);
        assert!(
            out.status.success(),
            "{args:?}: {}{}",
            stdout(&out),
            stderr(&out)
        );
        stdout(&out)
    }

    fn json(&self, args: &[&str]) -> Value {
        serde_json::from_str(&self.ok(args)).unwrap()
    }

    /// The bytes of the ledger and of the intake spool, file by file (a
    /// digest of each).
    fn snapshot(&self) -> Vec<(PathBuf, String)> {
        let mut out = Vec::new();
        // SQLite's shared-memory index and an empty write-ahead log,
        // which any reader may leave, are not the ledger.
        let files = walk(self.home.path());
        for entry in files
            .into_iter()
            .filter(|p| !p.to_string_lossy().ends_with("-shm"))
        {
            let bytes = std::fs::read(&entry).unwrap_or_default();
            if bytes.is_empty() && entry.to_string_lossy().ends_with("-wal") {
                continue;
            }
            out.push((entry, blake3::hash(&bytes).to_hex().to_string()));
        }
        out
    }
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out.sort();
    out
}

fn path_with(bin: &Path) -> String {
    format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// Claude Code's `interactive` session: two turns, each ended by `Stop`.
fn claude_world() -> World {
    claude_world_with(true, true)
}

/// [`claude_world`], its record followed by finalize or not.
fn claude_world_following(records: bool) -> World {
    claude_world_with(records, true)
}

/// [`claude_world`], its record followed or not, its `SessionEnd`
/// delivered or not (the process still runs).
fn claude_world_with(records: bool, ended: bool) -> World {
    let home = tempfile::tempdir().unwrap();
    let user = tempfile::tempdir().unwrap();
    let project = user.path().join("work dir");
    std::fs::create_dir_all(&project).unwrap();
    let slug: String = project
        .display()
        .to_string()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let dir = user.path().join("claude/projects").join(slug);
    std::fs::create_dir_all(&dir).unwrap();
    let record = dir.join(format!("{CLAUDE}.jsonl"));
    std::fs::copy(
        root().join(format!(
            "tests/fixtures/records/claude-code/interactive/{CLAUDE}.jsonl"
        )),
        &record,
    )
    .unwrap();
    let hooks =
        std::fs::read_to_string(root().join("tests/fixtures/claude-code/interactive/hooks.jsonl"))
            .unwrap();
    for line in hooks.lines().filter(|l| l.contains(CLAUDE)) {
        let mut v: Value = serde_json::from_str(line).unwrap();
        if !ended && v["hook_event_name"] == "SessionEnd" {
            continue;
        }
        v["transcript_path"] = record.display().to_string().into();
        v["cwd"] = project.display().to_string().into();
        common::deliver(home.path(), "claude-code", &v.to_string());
    }
    let world = World {
        home,
        user,
        project,
        record,
    };
    let on = if records { "on" } else { "off" };
    let out = world
        .command()
        .env("HARNERY_RECORDS", on)
        .arg("finalize")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    world
}

/// Copilot's `resume` session: a first run, then a resumed run with one
/// more prompt.
fn copilot_world() -> World {
    let home = tempfile::tempdir().unwrap();
    let user = tempfile::tempdir().unwrap();
    let project = user.path().join("proj");
    std::fs::create_dir_all(&project).unwrap();
    let state = user.path().join("copilot/session-state").join(COPILOT);
    std::fs::create_dir_all(&state).unwrap();
    let record = state.join("events.jsonl");
    std::fs::copy(
        root().join("tests/fixtures/records/copilot/resume-2-resumed-run.events.jsonl"),
        &record,
    )
    .unwrap();
    for scenario in ["resume-1-first-run", "resume-2-resumed-run"] {
        let capture = root().join(format!(
            "tests/fixtures/copilot/{scenario}/hook-capture.jsonl"
        ));
        for line in std::fs::read_to_string(capture).unwrap().lines() {
            if line.trim().is_empty() {
                continue;
            }
            // The capture names the record where it was made.
            let mut v: Value = serde_json::from_str(line).unwrap();
            let mut raw: Value = serde_json::from_str(v["stdin_raw"].as_str().unwrap()).unwrap();
            if raw.get("transcriptPath").is_some() {
                raw["transcriptPath"] = record.display().to_string().into();
            }
            v["stdin_raw"] = raw.to_string().into();
            common::deliver(home.path(), "copilot", &v.to_string());
        }
    }
    let world = World {
        home,
        user,
        project,
        record,
    };
    world.ok(&["finalize"]);
    world
}

/// The record's whole lines before the first line `stop` picks.
fn lines_before(record: &Path, mut stop: impl FnMut(&Value) -> bool) -> Vec<String> {
    let text = std::fs::read_to_string(record).unwrap();
    text.split_inclusive('\n')
        .take_while(|l| !stop(&serde_json::from_str(l).unwrap()))
        .map(str::to_string)
        .collect()
}

fn checkpoint_of_turn(w: &World, session: &str, nth: usize) -> String {
    let log = w.json(&["checkpoints", session, "--json"]);
    let turns: Vec<String> = log["checkpoints"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["origin"] == "turn")
        .map(|c| c["checkpoint_id"].as_str().unwrap().to_string())
        .collect();
    turns[nth].clone()
}

#[test]
fn a_plain_restore_writes_and_records_nothing() {
    let w = claude_world();
    let before = w.snapshot();
    let text = w.ok(&["restore", CLAUDE]);
    assert!(text.contains("--apply would write"), "{text}");
    let shown = w.json(&[
        "restore",
        CLAUDE,
        "--json",
        "--checkpoint",
        &format!("turn:{CLAUDE_TURN_1}"),
    ]);
    assert_eq!(shown["apply"]["applied"], false);
    assert_eq!(before, w.snapshot(), "ledger and spool bytes unchanged");
    let projects = w.user.path().join("claude/projects");
    assert_eq!(walk(&projects).len(), 1, "no file written for the agent");
}

#[test]
fn apply_puts_claude_codes_record_back_at_the_checkpoint_as_a_new_session() {
    let w = claude_world();
    let turn1 = format!("turn:{CLAUDE_TURN_1}");
    assert_eq!(checkpoint_of_turn(&w, CLAUDE, 0), turn1);
    // What the transcript holds before turn 2 (its prompt row, and the
    // file-history snapshot written for that prompt).
    let mut kept = lines_before(&w.record, |v| {
        v["promptId"]
            .as_str()
            .is_some_and(|p| p.starts_with(CLAUDE_TURN_2))
    });
    while kept
        .last()
        .is_some_and(|l| l.contains("\"file-history-snapshot\""))
    {
        kept.pop();
    }
    let kept = kept.concat();
    // The agent deleted its own record: harnery's archive still has it.
    std::fs::remove_file(&w.record).unwrap();
    let new_id = "0b5e6c1e-0000-4000-8000-000000000001";
    let out = w.json(&[
        "restore",
        CLAUDE,
        "--checkpoint",
        &turn1,
        "--apply",
        "--new-id",
        new_id,
        "--json",
    ]);
    let written = PathBuf::from(out["apply"]["path"].as_str().unwrap());
    assert_eq!(written, w.record.with_file_name(format!("{new_id}.jsonl")));
    let bytes = std::fs::read_to_string(&written).unwrap();
    assert_eq!(
        bytes.replace(new_id, CLAUDE),
        kept,
        "a byte-exact prefix but for the session id"
    );
    assert!(!bytes.contains(CLAUDE), "the id is the new one throughout");
    assert_eq!(
        out["shim"]["arguments"],
        serde_json::json!(["--resume", new_id])
    );
    assert_eq!(out["shim"]["cwd"], w.project.display().to_string());
    // The new session is linked to its parent once finalized.
    w.ok(&["finalize"]);
    let child = w.json(&["checkpoints", new_id, "--json"]);
    let cp = &child["checkpoints"][0];
    assert_eq!(cp["checkpoint_id"], format!("restored-from:{turn1}"));
    assert_eq!(cp["effects"][0]["kind"], "restored_from");
    assert_eq!(
        cp["effects"][0]["ref"],
        format!("claude-code/{CLAUDE}@{turn1}")
    );
    w.ok(&["verify"]);
}

#[test]
fn apply_never_overwrites_and_refuses_hostile_ids() {
    let w = claude_world();
    let taken = w.record.with_file_name("taken.jsonl");
    std::fs::write(&taken, b"the agent's own\n").unwrap();
    let out = w.harnery(&["restore", CLAUDE, "--apply", "--new-id", "taken"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("already exists"), "{}", stderr(&out));
    assert_eq!(std::fs::read(&taken).unwrap(), b"the agent's own\n");
    for hostile in ["../../escape", "a/b", ".hidden"] {
        let out = w.harnery(&["restore", CLAUDE, "--apply", "--new-id", hostile]);
        assert_eq!(out.status.code(), Some(2), "{hostile}");
        assert!(
            stderr(&out).contains("is not a session id"),
            "{}",
            stderr(&out)
        );
    }
    assert!(!w.user.path().join("escape").exists());
}

#[test]
fn exec_runs_the_agents_resume_in_the_sessions_directory() {
    let w = claude_world();
    let bin = w.user.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let said = w.user.path().join("said.txt");
    let stub = format!(
        "#!/bin/sh\n{{ pwd; for a in \"$@\"; do echo \"$a\"; done; }} > '{}'\nexit 7\n",
        said.display()
    );
    let claude = bin.join("claude");
    std::fs::write(&claude, stub).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&claude, std::fs::Permissions::from_mode(0o755)).unwrap();
    let new_id = "0b5e6c1e-0000-4000-8000-000000000002";
    let out = w.harnery(&[
        "restore",
        CLAUDE,
        "--apply",
        "--exec",
        "--new-id",
        new_id,
        "--",
        "-p",
        "turn four",
    ]);
    assert_eq!(
        out.status.code(),
        Some(7),
        "the agent's status: {}",
        stderr(&out)
    );
    let said = std::fs::read_to_string(said).unwrap();
    let said: Vec<&str> = said.lines().collect();
    let project = std::fs::canonicalize(&w.project).unwrap();
    assert_eq!(
        said,
        [
            project.to_str().unwrap(),
            "--resume",
            new_id,
            "-p",
            "turn four"
        ]
    );
}

#[test]
fn apply_puts_copilots_record_back_up_to_the_turns_end() {
    let w = copilot_world();
    let turn1 = checkpoint_of_turn(&w, COPILOT, 0);
    // Everything before the second prompt, up to the last turn end.
    let mut seen = 0;
    let mut kept = lines_before(&w.record, |v| {
        seen += usize::from(v["type"] == "user.message");
        seen == 2
    });
    while kept
        .last()
        .is_some_and(|l| !l.contains("\"assistant.turn_end\""))
    {
        kept.pop();
    }
    let kept = kept.concat();
    std::fs::remove_file(&w.record).unwrap();
    let before = w.snapshot();
    let out = w.json(&["restore", COPILOT, "--checkpoint", &turn1, "--json"]);
    assert_eq!(before, w.snapshot());
    assert_eq!(
        out["shim"]["arguments"][0], "restore",
        "the record is gone: put it back first"
    );
    assert_eq!(
        out["shim"]["arguments"].as_array().unwrap().last().unwrap(),
        "--apply"
    );
    let new_id = "0b5e6c1e-0000-4000-8000-000000000003";
    let out = w.json(&[
        "restore",
        COPILOT,
        "--checkpoint",
        &turn1,
        "--apply",
        "--new-id",
        new_id,
        "--json",
    ]);
    let written = w
        .user
        .path()
        .join("copilot/session-state")
        .join(new_id)
        .join("events.jsonl");
    assert_eq!(out["apply"]["path"], written.display().to_string());
    let bytes = std::fs::read_to_string(&written).unwrap();
    assert_eq!(bytes.replace(new_id, COPILOT), kept);
    assert!(bytes.starts_with(&format!(
        "{{\"type\":\"session.start\",\"data\":{{\"sessionId\":\"{new_id}\""
    )));
    assert_eq!(out["shim"]["program"], "copilot");
    assert_eq!(
        out["shim"]["arguments"],
        serde_json::json!(["--resume", new_id])
    );
}

#[test]
fn exec_commands_are_effects_and_lost_spans_may_have_run() {
    let w = claude_world();
    let out = w.harnery(&["exec", "--session", CLAUDE, "--", "sh", "-c", "exit 3"]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    // After the command's completion (its request time is pinned).
    let later = ["--now", "2026-11-30T12:01:00Z"];
    w.ok(&[&["checkpoint", CLAUDE, "--id", "after-exec"][..], &later].concat());
    w.ok(&["finalize"]);
    let shown = w.json(&["restore", CLAUDE, "--checkpoint", "after-exec", "--json"]);
    let effects = shown["seed"]["effects"].as_array().unwrap();
    let command = effects
        .iter()
        .find(|e| e["kind"] == "command")
        .unwrap_or_else(|| panic!("{effects:#?}"));
    assert_eq!(command["command"], "sh -c exit 3");
    assert_eq!(command["exit_code"], 3);
    let text = w.ok(&["restore", CLAUDE, "--checkpoint", "after-exec"]);
    assert!(text.contains("command sh -c exit 3"), "{text}");

    // Claude Code killed inside a tool call: the call never completed.
    let home = tempfile::tempdir().unwrap();
    let hooks = std::fs::read_to_string(root().join("tests/fixtures/claude-code/kill/hooks.jsonl"))
        .unwrap();
    let mut session = String::new();
    for line in hooks.lines().filter(|l| !l.trim().is_empty()) {
        let v: Value = serde_json::from_str(line).unwrap();
        session = v["session_id"].as_str().unwrap().to_string();
        common::deliver(home.path(), "claude-code", line);
    }
    let run = |args: &[&str]| {
        let out = common::run(home.path(), args);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        stdout(&out)
    };
    run(&["end", &session]);
    run(&["finalize"]);
    run(&[
        "checkpoint",
        &session,
        "--id",
        "after-kill",
        "--now",
        "2026-11-30T12:01:00Z",
    ]);
    run(&["finalize"]);
    let shown: Value = serde_json::from_str(&run(&[
        "restore",
        &session,
        "--checkpoint",
        "after-kill",
        "--json",
    ]))
    .unwrap();
    let lost = shown["seed"]["may_have_run"].as_array().unwrap();
    assert!(!lost.is_empty());
    assert!(
        lost.iter()
            .all(|e| e["kind"] == "tool" && e["tool_name"] == "Bash"),
        "{lost:#?}"
    );
    let effects = shown["seed"]["effects"].as_array().unwrap();
    assert!(
        effects
            .iter()
            .all(|e| lost.iter().all(|l| l["ref"] != e["ref"]))
    );
    let text = run(&["restore", &session, "--checkpoint", "after-kill"]);
    assert!(
        text.contains(&format!("may have run ({})", lost.len())),
        "{text}"
    );
}

#[cfg(feature = "failpoints")]
#[test]
fn checkpoints_and_restore_read_an_archived_epoch() {
    let w = claude_world();
    let turn1 = format!("turn:{CLAUDE_TURN_1}");
    w.next(&["epoch", "advance"]);
    // The live epoch knows none of the session.
    let live = w
        .command()
        .env("HARNERY_TEST_SCHEMA_SUFFIX", common::NEXT_CONTRACT)
        .args(["checkpoints", CLAUDE])
        .output()
        .unwrap();
    assert_eq!(live.status.code(), Some(2), "{}", stdout(&live));
    let all: Value =
        serde_json::from_str(&w.next(&["checkpoints", CLAUDE, "--epoch", "all", "--json"]))
            .unwrap();
    let parts = all.as_array().unwrap();
    assert_eq!(parts.len(), 1);
    assert_ne!(parts[0]["epoch"], "live");
    let ids: Vec<&str> = parts[0]["checkpoints"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["checkpoint_id"].as_str().unwrap())
        .collect();
    assert!(ids.contains(&turn1.as_str()), "{ids:?}");
    let text = w.next(&["checkpoints", CLAUDE, "--epoch", "all"]);
    assert!(text.contains(&turn1), "{text}");
    let new_id = "0b5e6c1e-0000-4000-8000-000000000004";
    let out: Value = serde_json::from_str(&w.next(&[
        "restore",
        CLAUDE,
        "--epoch",
        "all",
        "--checkpoint",
        &turn1,
        "--apply",
        "--new-id",
        new_id,
        "--json",
    ]))
    .unwrap();
    assert_eq!(out["epoch"], parts[0]["epoch"]);
    assert_eq!(out["seed"]["checkpoint"]["checkpoint_id"], turn1.as_str());
    assert!(PathBuf::from(out["apply"]["path"].as_str().unwrap()).exists());
}

/// Copilot killed inside a tool call, restored from before the call and
/// resumed: the superseded call still ends, salvaged by the resume.
#[test]
fn a_span_in_a_superseded_range_is_salvaged_by_the_resume() {
    use crate::session_log_support::*;
    let home = tempfile::tempdir().unwrap();
    let killed = lines("copilot", "interrupted-sigkill-1-killed");
    feed(home.path(), "copilot", &killed[..6]);
    ok(
        home.path(),
        &["checkpoint", COPILOT_KILLED, "--id", "before-kill"],
    );
    feed(home.path(), "copilot", &killed[6..]);
    ok(home.path(), &["finalize"]);
    let (copilot_home, _) =
        copilot_home_with_record(COPILOT_KILLED, "interrupted-sigkill-1-killed");
    restore_json(
        home.path(),
        COPILOT_KILLED,
        copilot_home.path(),
        &["--record"],
    );
    let resumed = lines("copilot", "interrupted-sigkill-2-resumed");
    feed(home.path(), "copilot", &resumed);
    ok(home.path(), &["finalize"]);
    let all = replay(home.path(), COPILOT_KILLED, &["--include-superseded"]);
    let superseded: Vec<&Value> = all
        .iter()
        .filter(|e| e["superseded"] == true && e["type"] == "tool.requested")
        .collect();
    assert!(!superseded.is_empty());
    let resume_at = of_type(&all, "session.resumed")[0]["offset"]
        .as_u64()
        .unwrap();
    for request in superseded {
        let ends: Vec<&Value> = all
            .iter()
            .filter(|e| e["type"] == "tool.completed")
            .filter(|e| e["payload"]["requested_event_id"] == request["id"])
            .collect();
        assert_eq!(ends.len(), 1, "exactly one end for {}", request["id"]);
        let end = ends[0];
        assert_eq!(end["payload"]["recovery"]["reason"], "explicit_end_salvage");
        assert_ne!(end["superseded"], true, "the end is live");
        assert!(
            end["offset"].as_u64().unwrap() < resume_at,
            "before the resume"
        );
    }
    ok(home.path(), &["validate"]);
}

/// Recorded without following the record, so the archive cannot give it
/// back: Claude Code forks its own transcript at turn 1's last row.
#[test]
fn without_the_record_claude_code_forks_its_own_transcript() {
    let w = claude_world_following(false);
    let turn1 = format!("turn:{CLAUDE_TURN_1}");
    let text = std::fs::read_to_string(&w.record).unwrap();
    let rows: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let next = rows
        .iter()
        .position(|r| {
            r["promptId"]
                .as_str()
                .is_some_and(|p| p.starts_with(CLAUDE_TURN_2))
        })
        .unwrap();
    let row = rows[..next]
        .iter()
        .rev()
        .find(|r| r["type"] == "assistant")
        .unwrap()["uuid"]
        .as_str()
        .unwrap()
        .to_string();
    let bin = w.user.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let said = w.user.path().join("said.txt");
    let stub = format!(
        "#!/bin/sh\n{{ pwd; for a in \"$@\"; do echo \"$a\"; done; }} > '{}'\n",
        said.display()
    );
    std::fs::write(bin.join("claude"), stub).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(bin.join("claude"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let interactive = w.harnery(&[
        "restore",
        CLAUDE,
        "--checkpoint",
        &turn1,
        "--apply",
        "--exec",
    ]);
    assert_eq!(interactive.status.code(), Some(2));
    assert!(
        stderr(&interactive).contains("print mode"),
        "{}",
        stderr(&interactive)
    );
    assert!(!said.exists(), "nothing ran");
    let out = w.harnery(&[
        "restore",
        CLAUDE,
        "--checkpoint",
        &turn1,
        "--apply",
        "--exec",
        "--",
        "-p",
        "go on",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let said = std::fs::read_to_string(said).unwrap();
    let project = std::fs::canonicalize(&w.project).unwrap();
    assert_eq!(
        said.lines().collect::<Vec<_>>(),
        [
            project.to_str().unwrap(),
            "--resume",
            CLAUDE,
            "--resume-session-at",
            &row,
            "--fork-session",
            "-p",
            "go on"
        ]
    );
    let projects = w.user.path().join("claude/projects");
    assert_eq!(
        walk(&projects).len(),
        1,
        "harnery wrote no file: the agent forks"
    );
}

/// The original process keeps going after the session was given back:
/// both lines are recorded, neither resumes or supersedes the other.
#[test]
fn the_original_keeps_its_own_line_after_apply() {
    let w = claude_world_with(true, false);
    let turn1 = format!("turn:{CLAUDE_TURN_1}");
    let new_id = "0b5e6c1e-0000-4000-8000-000000000005";
    w.ok(&[
        "restore",
        CLAUDE,
        "--checkpoint",
        &turn1,
        "--apply",
        "--new-id",
        new_id,
    ]);
    // The original's next prompt and stop, as its hooks deliver them.
    let hooks =
        std::fs::read_to_string(root().join("tests/fixtures/claude-code/interactive/hooks.jsonl"))
            .unwrap();
    for event in ["UserPromptSubmit", "Stop"] {
        let line = hooks
            .lines()
            .find(|l| l.contains(CLAUDE) && l.contains(&format!("\"{event}\"")))
            .unwrap();
        let mut v: Value = serde_json::from_str(line).unwrap();
        v["prompt_id"] = "11111111-2222-4333-8444-555555555555".into();
        if event == "UserPromptSubmit" {
            v["prompt"] = "the original goes on".into();
        }
        v["transcript_path"] = w.record.display().to_string().into();
        common::deliver(w.home.path(), "claude-code", &v.to_string());
    }
    w.ok(&["finalize"]);
    let events: Vec<Value> = w
        .ok(&["replay", CLAUDE, "--json", "--include-superseded"])
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    for kind in [
        "session.resumed",
        "session.stale_signal",
        "restore.recorded",
    ] {
        assert!(events.iter().all(|e| e["type"] != kind), "no {kind}");
    }
    assert!(events.iter().all(|e| e["superseded"] != true));
    let prompt = events
        .iter()
        .find(|e| e["payload"]["prompt"] == "the original goes on")
        .expect("the original's prompt is on its own line");
    assert_eq!(prompt["type"], "prompt.submitted");
    let child: Vec<Value> = w
        .ok(&["replay", new_id, "--json"])
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(
        child.iter().all(|e| e["type"] == "checkpoint.recorded"),
        "{child:#?}"
    );
}
