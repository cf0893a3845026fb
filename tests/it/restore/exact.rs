//! The look-only `restore` resumes exactly at the checkpoint or not at
//! all: Claude Code's own resume at the kept turns' last row (print mode,
//! `--resume-session-at`), Copilot's plain resume only at the session's
//! latest point, `--record` arming only a resume that is in place and
//! exact, and never a command that cannot work. Over real finalized homes
//! (`restore_apply`); expectations about the record are read from the
//! record files here.

use std::path::Path;

use serde_json::{Value, json};

use crate::common::{self, stderr};
use crate::restore::apply::*;
use crate::restore::apply_more::copilot_world_of;

/// The `uuid` of the last `assistant` row among `lines`.
fn last_assistant_row(lines: &[String]) -> String {
    lines
        .iter()
        .rev()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|v| v["type"] == "assistant")
        .unwrap()["uuid"]
        .as_str()
        .unwrap()
        .to_string()
}

fn types(w: &World, session: &str) -> Vec<Value> {
    w.ok(&["replay", session, "--json", "--include-superseded"])
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Copilot's `resume` session, two turns (a first run, then a resumed run
/// with one more prompt).
fn copilot_two_turns() -> World {
    copilot_world_of(
        COPILOT,
        "resume-2-resumed-run",
        &["resume-1-first-run", "resume-2-resumed-run"],
    )
}

#[test]
fn claude_code_resumes_at_the_kept_turns_last_row_in_print_mode() {
    let w = claude_world();
    let turn1 = format!("turn:{CLAUDE_TURN_1}");
    let row = last_assistant_row(&claude_turn_1_lines(&w.record));
    let before = w.snapshot();
    let shown = w.json(&["restore", CLAUDE, "--checkpoint", &turn1, "--json"]);
    let shim = &shown["shim"];
    assert_eq!(shim["program"], "claude");
    assert_eq!(
        shim["arguments"],
        json!([
            "-p",
            "--resume",
            CLAUDE,
            "--resume-session-at",
            row,
            "--fork-session"
        ])
    );
    assert_eq!(shim["runnable"], true);
    assert_eq!(shim["cwd"], w.project.display().to_string());
    let interactive = shim["interactive"].as_str().unwrap();
    assert!(interactive.contains("--apply"), "{interactive}");
    assert!(interactive.contains(&turn1), "{interactive}");
    // Words for the agent keep one `-p`.
    let with_prompt = w.json(&[
        "restore",
        CLAUDE,
        "--checkpoint",
        &turn1,
        "--json",
        "--",
        "-p",
        "go on",
    ]);
    let args = with_prompt["shim"]["arguments"].as_array().unwrap();
    assert_eq!(args.iter().filter(|a| *a == "-p").count(), 1, "{args:?}");
    assert_eq!(args.last().unwrap(), "go on");
    let text = w.ok(&["restore", CLAUDE, "--checkpoint", &turn1]);
    assert!(text.contains("--resume-session-at"), "{text}");
    assert!(
        text.contains("interactive resume: harnery restore"),
        "{text}"
    );
    assert_eq!(before, w.snapshot(), "nothing written");
}

/// `--record` arms an in-place resume: the command it prints resumes the
/// session itself at the row (no fork), so the turn it supersedes is one
/// the model is not given. Recorded from the hooks alone (the agent's
/// record not followed), so nothing of turn 1 lies past its checkpoint.
#[test]
fn record_arms_an_in_place_resume_at_the_row() {
    // With the record followed, turn 1's record lines were read after
    // turn 2's prompt pinned its checkpoint: a recorded restore would
    // mark them superseded though the agent is given them. Not recorded.
    let followed = claude_world();
    let turn1 = format!("turn:{CLAUDE_TURN_1}");
    let text = followed.ok(&["restore", CLAUDE, "--checkpoint", &turn1, "--record"]);
    assert!(text.contains("go on past its offset"), "{text}");
    followed.ok(&["finalize"]);
    let events = types(&followed, CLAUDE);
    assert!(events.iter().all(|e| e["type"] != "restore.recorded"));

    let w = claude_world_following(false);
    let row = last_assistant_row(&claude_turn_1_lines(&w.record));
    let shown = w.json(&[
        "restore",
        CLAUDE,
        "--checkpoint",
        &turn1,
        "--record",
        "--json",
    ]);
    assert_eq!(
        shown["shim"]["arguments"],
        json!(["-p", "--resume", CLAUDE, "--resume-session-at", row])
    );
    // The agent resumes in place, as that command makes it.
    let hooks =
        std::fs::read_to_string(root().join("tests/fixtures/claude-code/interactive/hooks.jsonl"))
            .unwrap();
    for event in ["SessionStart", "UserPromptSubmit", "Stop"] {
        let line = hooks
            .lines()
            .find(|l| l.contains(CLAUDE) && l.contains(&format!("\"{event}\"")))
            .unwrap();
        let mut v: Value = serde_json::from_str(line).unwrap();
        v["source"] = "resume".into();
        v["prompt_id"] = "11111111-2222-4333-8444-555555555555".into();
        v["transcript_path"] = w.record.display().to_string().into();
        common::deliver(w.home.path(), "claude-code", &v.to_string());
    }
    w.ok(&["finalize"]);
    let events = types(&w, CLAUDE);
    let resumed: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "session.resumed")
        .collect();
    assert_eq!(resumed.len(), 1, "{events:#?}");
    assert_eq!(resumed[0]["payload"]["evidence"], "restore");
    let boundary = shown["seed"]["boundary_offset"].as_u64().unwrap();
    assert_eq!(resumed[0]["payload"]["superseded"]["from"], boundary);
}

/// Copilot cannot resume at an earlier point: at turn 1 of two, the
/// look-only restore offers `--apply`, and `--record` records nothing (a
/// `copilot --resume` would give the model turn 2, so nothing of it may
/// be marked superseded). At the latest turn its own resume is fine.
#[test]
fn copilot_resumes_natively_only_at_the_sessions_latest_point() {
    let w = copilot_two_turns();
    let turn1 = checkpoint_of_turn(&w, COPILOT, 0);
    let turn2 = checkpoint_of_turn(&w, COPILOT, 1);
    let shown = w.json(&["restore", COPILOT, "--checkpoint", &turn1, "--json"]);
    assert_eq!(shown["shim"]["program"], "harnery");
    assert_eq!(shown["shim"]["native"], false);
    let args = shown["shim"]["arguments"].as_array().unwrap();
    assert_eq!(args[0], "restore");
    assert_eq!(args.last().unwrap(), "--apply");
    let latest = w.json(&["restore", COPILOT, "--checkpoint", &turn2, "--json"]);
    assert_eq!(latest["shim"]["arguments"], json!(["--resume", COPILOT]));

    let out = w.harnery(&["restore", COPILOT, "--checkpoint", &turn1, "--record"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = common::stdout(&out);
    assert!(
        text.contains("none resumes this session exactly at the checkpoint"),
        "{text}"
    );
    w.ok(&["finalize"]);
    let events = types(&w, COPILOT);
    assert!(events.iter().all(|e| e["type"] != "restore.recorded"));
    assert!(events.iter().all(|e| e["superseded"] != true));
}

/// A record made without following the agent's record, the agent's own
/// record then deleted: no command can resume it, and none is offered.
#[test]
fn nothing_is_offered_when_neither_archive_nor_agent_has_the_record() {
    let w = claude_world_following(false);
    std::fs::remove_file(&w.record).unwrap();
    let shown = w.json(&["restore", CLAUDE, "--json"]);
    assert_eq!(shown["shim"]["runnable"], false, "{:#}", shown["shim"]);
    assert!(shown["shim"].get("program").is_none());
    assert_eq!(shown["shim"]["text"], "");
    let text = w.ok(&["restore", CLAUDE]);
    assert!(
        text.contains("resume: none (no command can resume"),
        "{text}"
    );
    // With the transcript there, Claude Code forks it itself.
    let w = claude_world_following(false);
    let row = last_assistant_row(&claude_turn_1_lines(&w.record));
    let turn1 = format!("turn:{CLAUDE_TURN_1}");
    let shown = w.json(&["restore", CLAUDE, "--checkpoint", &turn1, "--json"]);
    assert_eq!(shown["shim"]["arguments"][4], row.as_str());

    // Copilot, its events.jsonl gone and nothing archived.
    let session = COPILOT;
    let w = copilot_world_of(session, "resume-1-first-run", &["resume-1-first-run"]);
    let bare = tempfile::tempdir().unwrap();
    let home = bare.path();
    let fixture = root().join("tests/fixtures/copilot/resume-1-first-run/hook-capture.jsonl");
    for line in std::fs::read_to_string(fixture).unwrap().lines() {
        if !line.trim().is_empty() {
            common::deliver(home, "copilot", line);
        }
    }
    let finalize = w
        .command()
        .env("HARNERY_HOME", home)
        .env("HARNERY_RECORDS", "off")
        .arg("finalize")
        .output()
        .unwrap();
    assert!(finalize.status.success(), "{}", stderr(&finalize));
    std::fs::remove_file(&w.record).unwrap();
    let out = w
        .command()
        .env("HARNERY_HOME", home)
        .args(["restore", session, "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let shown: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(shown["shim"]["runnable"], false, "{:#}", shown["shim"]);
    assert!(
        shown["shim"]["reason"]
            .as_str()
            .unwrap()
            .contains("events.jsonl was not found"),
        "{:#}",
        shown["shim"]
    );
}

/// A print-mode Claude Code session (the `resume` capture): each prompt
/// is queued first (`queue-operation` rows carrying its text). The record
/// put back at turn 1 ends at turn 1's last line, turn 2's queue rows
/// left out.
#[test]
fn the_record_put_back_ends_before_the_next_prompts_queue_rows() {
    let session = "8d31d374-43c7-42c3-aadb-185a6df76fcf";
    let fixture = root().join("tests/fixtures/records/claude-code/resume.jsonl");
    let user = tempfile::tempdir().unwrap();
    let project = user.path().join("proj");
    std::fs::create_dir_all(&project).unwrap();
    let dir = user.path().join("claude/projects/-proj");
    std::fs::create_dir_all(&dir).unwrap();
    let record = dir.join(format!("{session}.jsonl"));
    std::fs::copy(&fixture, &record).unwrap();
    let w = World {
        home: tempfile::tempdir().unwrap(),
        user,
        project,
        record,
    };
    let hooks = root().join("tests/fixtures/claude-code/resume/hooks.jsonl");
    for line in std::fs::read_to_string(hooks).unwrap().lines() {
        let mut v: Value = serde_json::from_str(line).unwrap();
        v["transcript_path"] = w.record.display().to_string().into();
        v["cwd"] = w.project.display().to_string().into();
        common::deliver(w.home.path(), "claude-code", &v.to_string());
    }
    w.ok(&["finalize"]);
    let turn1 = checkpoint_of_turn(&w, session, 0);
    // Every line before turn 2's prompt row but its queue rows.
    let prompts: Vec<String> = std::fs::read_to_string(&w.record)
        .unwrap()
        .lines()
        .filter_map(|l| {
            let v: Value = serde_json::from_str(l).ok()?;
            (v["type"] == "user").then(|| v["promptId"].as_str().map(String::from))?
        })
        .collect();
    let second = prompts.iter().find(|p| **p != prompts[0]).unwrap().clone();
    let mut kept = lines_before(&w.record, |v| v["promptId"] == second.as_str());
    while kept
        .last()
        .is_some_and(|l| l.contains("\"queue-operation\""))
    {
        kept.pop();
    }
    let new_id = "0b5e6c1e-0000-4000-8000-00000000000a";
    let out = w.json(&[
        "restore",
        session,
        "--checkpoint",
        &turn1,
        "--apply",
        "--new-id",
        new_id,
        "--json",
    ]);
    let written = std::fs::read_to_string(out["apply"]["path"].as_str().unwrap()).unwrap();
    assert!(!written.contains("[[scenario:resume2]]"), "turn 2's text");
    assert_eq!(written.replace(new_id, session), kept.concat());
    assert_eq!(
        out["apply"]["record"]["end"],
        kept.concat().len() as u64,
        "{:#}",
        out["apply"]
    );
    // The place finalize wrote says the same.
    let cp = w.json(&["checkpoints", session, "--json", "--id", &turn1]);
    if let Some(end) = cp["located"]["end"].as_u64() {
        assert_eq!(end, kept.concat().len() as u64);
    }
    let _ = Path::new(&w.record);
}

/// A `harnery exec` command is in the effects of the checkpoint that
/// first pins past it (`checkpoints --json`), as `restore` lists it, and
/// only there.
#[test]
fn exec_commands_are_the_next_checkpoints_own_effects() {
    let w = claude_world();
    let out = w.harnery(&["exec", "--session", CLAUDE, "--", "sh", "-c", "exit 3"]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let later = ["--now", "2026-11-30T12:01:00Z"];
    w.ok(&[&["checkpoint", CLAUDE, "--id", "after-exec"][..], &later].concat());
    let last = ["--now", "2026-11-30T12:02:00Z"];
    w.ok(&[&["checkpoint", CLAUDE, "--id", "after-that"][..], &last].concat());
    w.ok(&["finalize"]);
    let own = w.json(&["checkpoints", CLAUDE, "--json", "--id", "after-exec"]);
    let commands: Vec<&Value> = own["effects"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "command")
        .collect();
    assert_eq!(commands.len(), 1, "{own:#}");
    assert_eq!(commands[0]["command"], "sh -c exit 3");
    assert_eq!(commands[0]["exit_code"], 3);
    let next = w.json(&["checkpoints", CLAUDE, "--json", "--id", "after-that"]);
    assert!(
        next["effects"]
            .as_array()
            .unwrap()
            .iter()
            .all(|e| e["kind"] != "command"),
        "{next:#}"
    );
    // The restore lists it once.
    let shown = w.json(&["restore", CLAUDE, "--checkpoint", "after-that", "--json"]);
    let listed = shown["seed"]["effects"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "command")
        .count();
    assert_eq!(listed, 1);
}

/// Claude Code's session recorded up to turn 1, an epoch advance, then
/// turn 2 in the new epoch: turn 2's checkpoint is put back whole, its
/// record's first bytes read from the archived epoch's raw archive, and
/// the resume runs in the session's directory.
#[cfg(feature = "failpoints")]
#[test]
fn a_checkpoint_pinned_after_an_advance_is_put_back_from_both_epochs() {
    let w = claude_world();
    let w = World {
        home: tempfile::tempdir().unwrap(),
        ..w
    };
    let full = std::fs::read(&w.record).unwrap();
    let turn_1 = claude_turn_1_lines(&w.record).concat();
    std::fs::write(&w.record, &turn_1).unwrap();
    let hooks: Vec<Value> =
        std::fs::read_to_string(root().join("tests/fixtures/claude-code/interactive/hooks.jsonl"))
            .unwrap()
            .lines()
            .filter(|l| l.contains(CLAUDE))
            .map(|l| {
                let mut v: Value = serde_json::from_str(l).unwrap();
                v["transcript_path"] = w.record.display().to_string().into();
                v["cwd"] = w.project.display().to_string().into();
                v
            })
            .collect();
    let second = hooks
        .iter()
        .enumerate()
        .filter(|(_, v)| v["hook_event_name"] == "UserPromptSubmit")
        .nth(1)
        .unwrap()
        .0;
    for v in &hooks[..second] {
        common::deliver(w.home.path(), "claude-code", &v.to_string());
    }
    w.ok(&["finalize"]);
    w.next(&["epoch", "advance"]);
    std::fs::write(&w.record, &full).unwrap();
    for v in &hooks[second..] {
        common::deliver(w.home.path(), "claude-code", &v.to_string());
    }
    w.next(&["finalize"]);
    let log: Value = serde_json::from_str(&w.next(&["checkpoints", CLAUDE, "--json"])).unwrap();
    let turn2 = log["checkpoints"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["origin"] == "turn")
        .unwrap_or_else(|| panic!("{log:#}"))["checkpoint_id"]
        .as_str()
        .unwrap()
        .to_string();
    let shown: Value =
        serde_json::from_str(&w.next(&["restore", CLAUDE, "--checkpoint", &turn2, "--json"]))
            .unwrap();
    assert_eq!(shown["shim"]["cwd"], w.project.display().to_string());
    assert_eq!(shown["shim"]["program"], "claude", "{:#}", shown["shim"]);
    let new_id = "0b5e6c1e-0000-4000-8000-00000000000b";
    let out: Value = serde_json::from_str(&w.next(&[
        "restore",
        CLAUDE,
        "--checkpoint",
        &turn2,
        "--apply",
        "--new-id",
        new_id,
        "--json",
    ]))
    .unwrap();
    let end = out["apply"]["record"]["end"].as_u64().unwrap() as usize;
    assert!(end > turn_1.len(), "turn 2 is kept: {:#}", out["apply"]);
    let written = std::fs::read_to_string(out["apply"]["path"].as_str().unwrap()).unwrap();
    assert_eq!(
        written.replace(new_id, CLAUDE).as_bytes(),
        &full[..end],
        "both epochs' bytes, byte for byte"
    );
    assert_eq!(out["shim"]["cwd"], w.project.display().to_string());
    assert_eq!(out["shim"]["arguments"], json!(["--resume", new_id]));
}

/// The home generation 6 wrote (its sessions recorded without their
/// agents' records, which are not on this machine either), advanced by
/// this build: a checkpoint of its clean Claude Code session pinned after
/// the advance has nothing to resume from, and the restore says so rather
/// than print a `claude --resume` that cannot find the session; `--apply`
/// exits 2 naming what is missing.
#[test]
fn a_checkpoint_pinned_after_advancing_the_generation_six_home_offers_nothing_that_fails() {
    let (home, _) = crate::finalize::records::advanced_from("gen6");
    let home = home.path();
    let user = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        let mut cmd = common::harnery(home);
        common::without_installed_agents(&mut cmd, user.path());
        cmd.args(args).output().unwrap()
    };
    let ok = |args: &[&str]| {
        let out = run(args);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        common::stdout(&out)
    };
    let clean = "82655d0f-45cd-404f-9e4e-e90fea255247";
    ok(&["finalize"]);
    ok(&["checkpoint", clean, "--id", "after-advance"]);
    ok(&["finalize"]);
    let restore = ["restore", clean, "--checkpoint", "after-advance"];
    let shown: Value = serde_json::from_str(&ok(&[&restore[..], &["--json"]].concat())).unwrap();
    let shim = &shown["shim"];
    assert_eq!(shim["runnable"], false, "{shim:#}");
    assert!(shim.get("program").is_none());
    let reason = shim["reason"].as_str().unwrap();
    assert!(reason.contains("nothing to put back"), "{reason}");
    let apply = run(&[&restore[..], &["--apply"]].concat());
    assert_eq!(apply.status.code(), Some(2));
    assert!(
        stderr(&apply).contains("nothing to put back"),
        "{}",
        stderr(&apply)
    );
    assert!(
        !user.path().join(".claude/projects").exists(),
        "nothing written"
    );
}

/// Recorded without following the agent's record, then an epoch advance
/// and a checkpoint pinned after it: Claude Code's own transcript is
/// still there, named by the session's start in the archived epoch, so
/// the resume is Claude Code's own at the last row the checkpoint keeps
/// (every turn, all before the advance), in the session's directory.
#[cfg(feature = "failpoints")]
#[test]
fn claude_code_resumes_its_own_transcript_across_an_advance() {
    let w = claude_world_following(false);
    let next = |args: &[&str]| {
        let out = w
            .command()
            .env("HARNERY_TEST_SCHEMA_SUFFIX", common::NEXT_CONTRACT)
            .env("HARNERY_RECORDS", "off")
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        common::stdout(&out)
    };
    next(&["epoch", "advance"]);
    next(&["checkpoint", CLAUDE, "--id", "after-advance"]);
    next(&["finalize"]);
    let all: Vec<String> = std::fs::read_to_string(&w.record)
        .unwrap()
        .split_inclusive('\n')
        .map(String::from)
        .collect();
    let row = last_assistant_row(&all);
    let restore = ["restore", CLAUDE, "--checkpoint", "after-advance", "--json"];
    let shown: Value = serde_json::from_str(&next(&restore)).unwrap();
    assert_eq!(
        shown["shim"]["arguments"],
        json!([
            "-p",
            "--resume",
            CLAUDE,
            "--resume-session-at",
            row,
            "--fork-session"
        ]),
        "{:#}",
        shown["shim"]
    );
    assert_eq!(shown["shim"]["cwd"], w.project.display().to_string());
}
