//! `harnery restore` over real finalized homes, continued: Copilot's
//! record given back, checkpoints across an epoch advance, the effects a
//! restore names, and spans a resume supersedes (helpers in
//! `restore_apply`).

use serde_json::Value;

use crate::common::{self, stderr, stdout};
use crate::restore::apply::*;

/// Copilot's `resume` session: a first run, then a resumed run with one
/// more prompt.
fn copilot_world() -> World {
    copilot_world_of(
        COPILOT,
        "resume-2-resumed-run",
        &["resume-1-first-run", "resume-2-resumed-run"],
    )
}

/// A finalized home of Copilot session `session`: its record the fixture
/// `record`, its hooks the captures of `scenarios`.
pub(crate) fn copilot_world_of(session: &str, record_fixture: &str, scenarios: &[&str]) -> World {
    let home = tempfile::tempdir().unwrap();
    let user = tempfile::tempdir().unwrap();
    let project = user.path().join("proj");
    std::fs::create_dir_all(&project).unwrap();
    let state = user.path().join("copilot/session-state").join(session);
    std::fs::create_dir_all(&state).unwrap();
    let record = state.join("events.jsonl");
    std::fs::copy(
        root().join(format!(
            "tests/fixtures/records/copilot/{record_fixture}.events.jsonl"
        )),
        &record,
    )
    .unwrap();
    for scenario in scenarios {
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

#[test]
fn apply_puts_copilots_record_back_up_to_the_turns_end() {
    let w = copilot_world();
    let turn1 = checkpoint_of_turn(&w, COPILOT, 0);
    // Everything before the second prompt, up to the last turn end.
    let kept = copilot_turn_1_lines(&w.record);
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
    // The agent's record gone: the put-back names the epoch it read, and
    // runs as printed.
    std::fs::remove_file(&w.record).unwrap();
    let show = ["restore", CLAUDE, "--epoch", "all", "--checkpoint", &turn1];
    let shown: Value = serde_json::from_str(&w.next(&[&show[..], &["--json"]].concat())).unwrap();
    let back = &shown["shim"];
    assert_eq!(
        back["arguments"],
        serde_json::json!([
            "restore",
            CLAUDE,
            "--checkpoint",
            turn1,
            "--epoch",
            "all",
            "--apply"
        ])
    );
    let ran = w
        .shell(back["text"].as_str().unwrap(), w.user.path())
        .env("HARNERY_TEST_SCHEMA_SUFFIX", common::NEXT_CONTRACT)
        .output()
        .unwrap();
    assert_eq!(ran.status.code(), Some(0), "{}", stderr(&ran));
    assert!(stdout(&ran).contains("as new session"), "{}", stdout(&ran));
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
    assert!(std::path::Path::new(out["apply"]["path"].as_str().unwrap()).exists());
}

/// Copilot killed inside a tool call, restored from before the call and
/// resumed: the superseded call still ends, salvaged by the resume.
#[test]
fn a_span_in_a_superseded_range_is_salvaged_by_the_resume() {
    use crate::restore::session_log_support::*;
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
    // Recorded as `restore --record` records an exact resume (a plain
    // `restore --record` records none here: `copilot --resume` would
    // hand the model the turn past the checkpoint).
    let _ = copilot_home;
    record_restore(home.path(), "copilot", COPILOT_KILLED, "before-kill");
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

/// Copilot's `subagent-task` session: the subagent's message to its
/// parent is a `user.message` with a `source`, steering, not the user.
#[test]
fn steering_messages_are_kept_apart_in_the_restore() {
    let session = "3390a855-a71e-4e90-937d-c5e1dcb418a6";
    let w = copilot_world_of(session, "subagent-task", &["subagent-task"]);
    let shown = w.json(&["restore", session, "--json"]);
    let steering = shown["apply"]["steering"].as_array().unwrap();
    assert_eq!(steering.len(), 1, "{steering:#?}");
    assert!(
        steering[0]["source"]
            .as_str()
            .unwrap()
            .starts_with("agent-")
    );
    let id = steering[0]["event_id"].as_str().unwrap();
    let events: Vec<Value> = w
        .ok(&["replay", session, "--json"])
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let users: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "message.user")
        .collect();
    assert!(users.len() > 1, "the user's own message is there too");
    // Generation 6 stores who sent it; the user's own words name no one.
    let (sent, own): (Vec<&&Value>, Vec<&&Value>) = users.iter().partition(|e| e["id"] == id);
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0]["payload"]["source"], steering[0]["source"]);
    assert!(own.iter().all(|e| e["payload"].get("source").is_none()));
    let text = w.ok(&["restore", session]);
    assert!(text.contains("steering, not the user's (1)"), "{text}");
}
