//! `harnery restore` shows and `--apply` acts, over real finalized homes:
//! real Claude Code and Copilot sessions (their captured hooks through the
//! real hook, their own records followed by the real `finalize`), then the
//! record put back from the raw archive as a new session under a fake
//! agent home, and `--exec` running a stub agent (a real process) that
//! writes down its arguments and directory.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{self, stderr, stdout, walk};

pub(crate) const CLAUDE: &str = "65f5909b-b66b-419a-a0ed-4fe96f1affac";
pub(crate) const CLAUDE_TURN_1: &str = "484a3d1f-b0f6-464d-9676-016ec962767c";
pub(crate) const CLAUDE_TURN_2: &str = "7cf1d9dd";
pub(crate) const COPILOT: &str = "7271c131-2f28-400e-a537-c4eb30e50959";

pub(crate) fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A finalized home, and the fake user home the agents' files live in.
pub(crate) struct World {
    pub(crate) home: tempfile::TempDir,
    pub(crate) user: tempfile::TempDir,
    /// The session's directory (the hooks' `cwd`).
    pub(crate) project: PathBuf,
    /// The agent's own record of the session.
    pub(crate) record: PathBuf,
}

impl World {
    pub(crate) fn command(&self) -> assert_cmd::Command {
        let mut cmd = common::harnery(self.home.path());
        self.environ(&mut cmd);
        cmd
    }

    /// `sh -c text` in `dir`, as whoever ran `restore` here runs what it
    /// printed: this world's environment, the built `harnery` on `PATH`.
    pub(crate) fn shell(&self, text: &str, dir: &Path) -> std::process::Command {
        let mut cmd = std::process::Command::new("sh");
        cmd.arg("-c").arg(text).current_dir(dir);
        self.environ(&mut cmd);
        let built = Path::new(env!("CARGO_BIN_EXE_harnery")).parent().unwrap();
        let path = format!("{}:{}", built.display(), path_with(&self.bin()));
        cmd.env("PATH", path)
            .env_remove("HARNERY_FAILPOINTS")
            .env_remove("HARNERY_TEST_SCHEMA_SUFFIX");
        cmd
    }

    /// This world's environment on `cmd`: its harnery home and clock, its
    /// agents' homes, and no agent installed but the stubs in its `bin`.
    fn environ<C: common::Environment>(&self, cmd: &mut C) {
        common::without_installed_agents(cmd, self.user.path());
        cmd.set("HARNERY_HOME", self.home.path().as_os_str());
        cmd.set("HARNERY_NOW", common::NOW.as_ref());
        cmd.set("HARNERY_RECORDS", "on".as_ref());
        let user = self.user.path();
        cmd.set("CLAUDE_CONFIG_DIR", user.join("claude").as_os_str());
        cmd.set("COPILOT_HOME", user.join("copilot").as_os_str());
        cmd.set("PATH", path_with(&self.bin()).as_ref());
    }

    /// Where a test puts its stub agents.
    pub(crate) fn bin(&self) -> PathBuf {
        self.user.path().join("bin")
    }

    pub(crate) fn harnery(&self, args: &[&str]) -> std::process::Output {
        self.command().args(args).output().unwrap()
    }

    /// `harnery args…` as the build of the next contract.
    #[cfg(feature = "failpoints")]
    pub(crate) fn next(&self, args: &[&str]) -> String {
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

    pub(crate) fn ok(&self, args: &[&str]) -> String {
        let out = self.harnery(args);
        assert!(
            out.status.success(),
            "{args:?}: {}{}",
            stdout(&out),
            stderr(&out)
        );
        stdout(&out)
    }

    pub(crate) fn json(&self, args: &[&str]) -> Value {
        serde_json::from_str(&self.ok(args)).unwrap()
    }

    /// The bytes of the ledger and of the intake spool, file by file (a
    /// digest of each).
    pub(crate) fn snapshot(&self) -> Vec<(PathBuf, String)> {
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

/// `bin`, then this process's `PATH` without any `copilot` on it.
pub(crate) fn path_with(bin: &Path) -> String {
    format!(
        "{}:{}",
        bin.display(),
        common::path_without_copilot().to_string_lossy()
    )
}

/// Claude Code's `interactive` session: two turns, each ended by `Stop`.
pub(crate) fn claude_world() -> World {
    claude_world_with(true, true)
}

/// [`claude_world`], its record followed by finalize or not.
pub(crate) fn claude_world_following(records: bool) -> World {
    claude_world_with(records, true)
}

/// [`claude_world`], its record followed or not, its `SessionEnd`
/// delivered or not (the process still runs).
pub(crate) fn claude_world_with(records: bool, ended: bool) -> World {
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

/// The record's whole lines before the first line `stop` picks.
pub(crate) fn lines_before(record: &Path, mut stop: impl FnMut(&Value) -> bool) -> Vec<String> {
    let text = std::fs::read_to_string(record).unwrap();
    text.split_inclusive('\n')
        .take_while(|l| !stop(&serde_json::from_str(l).unwrap()))
        .map(str::to_string)
        .collect()
}

/// The Claude Code transcript's lines that turn 1 keeps: all before turn
/// 2's prompt row, less the file-history snapshot written for that prompt.
pub(crate) fn claude_turn_1_lines(record: &Path) -> Vec<String> {
    let mut kept = lines_before(record, |v| {
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
    kept
}

/// The Copilot `events.jsonl` lines that turn 1 keeps: all before the
/// second prompt, up to the last turn end.
pub(crate) fn copilot_turn_1_lines(record: &Path) -> Vec<String> {
    let mut seen = 0;
    let mut kept = lines_before(record, |v| {
        seen += usize::from(v["type"] == "user.message");
        seen == 2
    });
    while kept
        .last()
        .is_some_and(|l| !l.contains("\"assistant.turn_end\""))
    {
        kept.pop();
    }
    kept
}

pub(crate) fn checkpoint_of_turn(w: &World, session: &str, nth: usize) -> String {
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
    let kept = claude_turn_1_lines(&w.record);
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
