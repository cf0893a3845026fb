//! A resume on the agent's own word (contract generation 6), over real
//! homes (the real hook, the real `finalize`, a real `restore --record`):
//! a recorded restore waits for the agent's resume signal while the
//! original process goes on on its own line; signals of the older
//! incarnation after the resume are stale evidence; generation 6 ships by
//! an advance from the home generation 5 wrote.

use serde_json::Value;

use crate::common;
use crate::restore::apply::{CLAUDE, CLAUDE_TURN_1, World, claude_world_with, root};

/// The Claude Code `interactive` session's hook line for `event`, as the
/// original process would send it now: in turn `prompt_id`, its record and
/// directory those of `w`.
fn original(w: &World, event: &str, prompt_id: &str) -> Value {
    let hooks =
        std::fs::read_to_string(root().join("tests/fixtures/claude-code/interactive/hooks.jsonl"))
            .unwrap();
    let line = hooks
        .lines()
        .find(|l| l.contains(CLAUDE) && l.contains(&format!("\"{event}\"")))
        .unwrap();
    let mut v: Value = serde_json::from_str(line).unwrap();
    v["prompt_id"] = prompt_id.into();
    v["transcript_path"] = w.record.display().to_string().into();
    v["cwd"] = w.project.display().to_string().into();
    v
}

fn deliver(w: &World, v: &Value) {
    common::deliver(w.home.path(), "claude-code", &v.to_string());
}

fn everything(w: &World) -> Vec<Value> {
    w.ok(&["replay", CLAUDE, "--json", "--include-superseded"])
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn of<'a>(events: &'a [Value], ty: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == ty).collect()
}

const GOES_ON: &str = "11111111-2222-4333-8444-555555555555";
const LEFT_OPEN: &str = "22222222-3333-4444-8555-666666666666";
const RESUMED: &str = "66666666-7777-4888-8999-aaaaaaaaaaaa";

/// The original process's next turn: a prompt, a tool call, its stop.
fn original_goes_on(w: &World) {
    let mut prompt = original(w, "UserPromptSubmit", GOES_ON);
    prompt["prompt"] = "the original goes on".into();
    deliver(w, &prompt);
    for event in ["PreToolUse", "PostToolUse", "Stop"] {
        let mut v = original(w, event, GOES_ON);
        if v.get("tool_use_id").is_some() {
            v["tool_use_id"] = "toolu_original_goes_on".into();
        }
        deliver(w, &v);
    }
    // Then another prompt, and a call it has not finished.
    deliver(w, &original(w, "UserPromptSubmit", LEFT_OPEN));
    let mut call = original(w, "PreToolUse", LEFT_OPEN);
    call["tool_use_id"] = "toolu_left_open".into();
    deliver(w, &call);
    w.ok(&["finalize"]);
}

/// A restore recorded while the original process keeps going: its own
/// prompt, tool and stop stay on its line, live, nothing resumed, nothing
/// invented, nothing stale; the agent's `SessionStart` with `source:
/// "resume"` then takes the restore up, and the original's later signals
/// of its own turn are stale evidence.
/// An ended session's last turn is placed after its checkpoint (the end of
/// the run that read the record to its end): a restore to that checkpoint
/// keeps the place, and the agent's resume supersedes nothing.
#[test]
fn a_restore_to_an_ended_sessions_placed_last_turn_supersedes_nothing() {
    let w = claude_world_with(true, true);
    let placed = |events: &[Value]| -> usize { of(events, "checkpoint.located").len() };
    assert_eq!(placed(&everything(&w)), 2, "turn 1 and the last turn");
    w.ok(&["restore", CLAUDE, "--record"]);
    let mut start = original(&w, "SessionStart", RESUMED);
    start["source"] = "resume".into();
    start.as_object_mut().unwrap().remove("prompt_id");
    deliver(&w, &start);
    w.ok(&["finalize"]);
    let events = everything(&w);
    let resumed = of(&events, "session.resumed");
    assert_eq!(resumed.len(), 1, "{resumed:#?}");
    let range = &resumed[0]["payload"]["superseded"];
    assert_eq!(range["from"], range["to"], "nothing superseded: {range}");
    assert!(events.iter().all(|e| e["superseded"] != true));
    assert_eq!(placed(&events), 2);
    w.ok(&["verify"]);
}

#[test]
fn a_recorded_restore_waits_for_the_agents_resume() {
    let w = claude_world_with(true, false);
    let turn1 = format!("turn:{CLAUDE_TURN_1}");
    // Turn 1's record lines were read past its checkpoint, so `restore
    // --record` records nothing here: recorded as it records one.
    crate::restore::session_log_support::record_restore(
        w.home.path(),
        "claude-code",
        CLAUDE,
        &turn1,
    );
    original_goes_on(&w);

    let events = everything(&w);
    assert_eq!(of(&events, "restore.recorded").len(), 1);
    for kind in ["session.resumed", "session.stale_signal"] {
        assert!(of(&events, kind).is_empty(), "no {kind}: {events:#?}");
    }
    assert!(events.iter().all(|e| e["superseded"] != true));
    let prompt = events
        .iter()
        .find(|e| e["payload"]["prompt"] == "the original goes on")
        .expect("the original's prompt is on its line");
    assert_eq!(prompt["type"], "prompt.submitted");
    let calls: Vec<&Value> = events
        .iter()
        .filter(|e| e["payload"]["tool_call_id"] == "toolu_original_goes_on")
        .collect();
    assert_eq!(calls.len(), 2, "its request and completion: {calls:#?}");
    for call in &calls {
        assert!(call["payload"]["recovery"].is_null(), "nothing invented");
        assert_eq!(call["provenance"]["attestation"], "native");
    }
    let stopped = of(&events, "turn.completed");
    assert!(stopped.iter().any(|e| e["turn"]["turn_id"] == GOES_ON));

    // The agent resumes: its own word takes the restore up.
    let mut start = original(&w, "SessionStart", RESUMED);
    start["source"] = "resume".into();
    start.as_object_mut().unwrap().remove("prompt_id");
    deliver(&w, &start);
    let mut prompt = original(&w, "UserPromptSubmit", RESUMED);
    prompt["prompt"] = "the resumed leg".into();
    deliver(&w, &prompt);
    w.ok(&["finalize"]);
    let events = everything(&w);
    let resumed = of(&events, "session.resumed");
    assert_eq!(resumed.len(), 1, "{resumed:#?}");
    let r = &resumed[0]["payload"];
    assert_eq!(r["evidence"], "restore");
    assert_eq!(r["checkpoint_id"], turn1);
    assert_eq!(r["incarnation"], 2);
    let restore_at = of(&events, "restore.recorded")[0]["offset"].clone();
    assert_eq!(r["superseded"]["to"], restore_at);
    let resumed_at = resumed[0]["offset"].as_u64().unwrap();
    let leg = events
        .iter()
        .find(|e| e["payload"]["prompt"] == "the resumed leg")
        .unwrap();
    assert!(leg["offset"].as_u64().unwrap() > resumed_at);
    assert_eq!(leg["incarnation"], 2);

    // The original's unfinished call ends, salvaged by the resume.
    let left: Vec<&Value> = events
        .iter()
        .filter(|e| e["payload"]["tool_call_id"] == "toolu_left_open")
        .collect();
    assert_eq!(left.len(), 2, "its request and one end: {left:#?}");
    let end = left[1];
    assert_eq!(end["type"], "tool.completed");
    assert_eq!(end["payload"]["recovery"]["reason"], "explicit_end_salvage");
    assert!(end["offset"].as_u64().unwrap() < resumed_at);

    // Its late completion, and a call of its own turn: stale, off the line.
    let mut late = original(&w, "PostToolUse", LEFT_OPEN);
    late["tool_use_id"] = "toolu_left_open".into();
    deliver(&w, &late);
    let mut late = original(&w, "PostToolUse", GOES_ON);
    late["tool_use_id"] = "toolu_after_the_resume".into();
    deliver(&w, &late);
    w.ok(&["finalize"]);
    let events = everything(&w);
    let stale = of(&events, "session.stale_signal");
    assert_eq!(stale.len(), 2, "{stale:#?}");
    assert!(
        stale
            .iter()
            .all(|e| e["payload"]["reason"] == "native_turn_of_an_older_incarnation")
    );
    assert!(
        events
            .iter()
            .all(|e| e["payload"]["tool_call_id"] != "toolu_after_the_resume")
    );
    let left = events
        .iter()
        .filter(|e| e["payload"]["tool_call_id"] == "toolu_left_open")
        .count();
    assert_eq!(left, 2, "still one end");
    w.ok(&["validate"]);
}

/// Generation 6 ships by an epoch advance from the home generation 5
/// wrote (built by main before generation 6): there, the killed Claude
/// Code session goes on (its process never ended); a restore recorded
/// after the advance waits for the agent's resume while that process's
/// next prompt stays on its line, and every epoch still validates.
#[test]
fn generation_six_ships_by_an_epoch_advance_from_the_generation_five_home() {
    let (home, live) = crate::finalize::records::advanced_from("gen5");
    // Advanced to this build's generation (6, or a later one since).
    assert!(
        live.to_string()
            .contains(&harnery::contract::schema_digest_hex()),
        "{live}"
    );
    let home = home.path();
    let killed = "5c0c90c9-7ca4-40b0-bbc8-834cd151f0ac";
    common::run(home, &["finalize"]);
    let ok = |args: &[&str]| {
        let out = common::run(home, args);
        assert!(out.status.success(), "{args:?}: {}", common::stderr(&out));
        common::stdout(&out)
    };
    ok(&["checkpoint", killed, "--id", "after-advance"]);
    ok(&["finalize"]);
    ok(&[
        "restore",
        killed,
        "--checkpoint",
        "after-advance",
        "--record",
    ]);
    let hooks = std::fs::read_to_string(root().join("tests/fixtures/claude-code/kill/hooks.jsonl"))
        .unwrap();
    let line = |event: &str| -> Value {
        let line = hooks.lines().find(|l| l.contains(event)).unwrap();
        serde_json::from_str(line).unwrap()
    };
    let mut prompt = line("UserPromptSubmit");
    prompt["prompt_id"] = GOES_ON.into();
    prompt["prompt"] = "after the advance".into();
    common::deliver(home, "claude-code", &prompt.to_string());
    ok(&["finalize"]);
    let resumes = || {
        let log: Value = serde_json::from_str(&ok(&["checkpoints", killed, "--json"])).unwrap();
        log["resumes"].as_array().map_or(0, Vec::len)
    };
    assert_eq!(resumes(), 0, "the process going on is no resume");
    let mut start = line("SessionStart");
    start["source"] = "resume".into();
    common::deliver(home, "claude-code", &start.to_string());
    ok(&["finalize"]);
    assert_eq!(resumes(), 1, "the agent's own word is");
    for cmd in ["validate", "verify"] {
        ok(&[cmd, "--epoch", "all"]);
    }
}

/// Copilot, its first run still going (no `sessionEnd`): after a restore
/// is recorded, the process's next prompt, tool call and stop (those of
/// the captured second run, less its `sessionStart`) stay on its line; a
/// prompt is taken for a resume only after the session's native end, so
/// none is here. The `sessionStart` with `source: "resume"` then is.
#[test]
fn a_copilot_process_that_still_runs_is_not_resumed_by_its_prompt() {
    use crate::restore::session_log_support::*;
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    let first = lines("copilot", "resume-1-first-run");
    let running: Vec<String> = first
        .into_iter()
        .filter(|l| !l.contains("\"sessionEnd\""))
        .collect();
    feed(home, "copilot", &running);
    ok(home, &["finalize"]);
    let (copilot_home, _) = copilot_home_with_record(COPILOT_RESUME, "resume-1-first-run");
    restore_json(home, COPILOT_RESUME, copilot_home.path(), &["--record"]);
    ok(home, &["finalize"]);
    let events = replay(home, COPILOT_RESUME, &[]);
    assert_eq!(of_type(&events, "restore.recorded").len(), 1);
    let second = lines("copilot", "resume-2-resumed-run");
    let (start, goes_on): (Vec<String>, Vec<String>) = second
        .into_iter()
        .filter(|l| !l.contains("\"sessionEnd\""))
        .partition(|l| l.contains("\"sessionStart\""));
    feed(home, "copilot", &goes_on);
    ok(home, &["finalize"]);
    let events = replay(home, COPILOT_RESUME, &["--include-superseded"]);
    for kind in ["session.resumed", "session.stale_signal"] {
        assert!(of_type(&events, kind).is_empty(), "no {kind}");
    }
    assert!(events.iter().all(|e| e["superseded"] != true));
    let prompts = of_type(&events, "prompt.submitted");
    assert!(
        prompts
            .iter()
            .any(|e| e["payload"]["prompt"] == "Run the probe command again please.")
    );
    let requests = of_type(&events, "tool.requested");
    assert_eq!(requests.len(), 2, "one call per run, none invented");
    assert!(requests.iter().all(|e| e["payload"]["recovery"].is_null()));

    feed(home, "copilot", &start);
    ok(home, &["finalize"]);
    let events = replay(home, COPILOT_RESUME, &["--include-superseded"]);
    let resumed = of_type(&events, "session.resumed");
    assert_eq!(resumed.len(), 1, "{resumed:#?}");
    assert_eq!(resumed[0]["payload"]["evidence"], "restore");
    ok(home, &["validate"]);
}

/// A checkpoint names the session's working directory (generation 6), and
/// `restore` runs its shim there.
#[test]
fn a_checkpoint_names_the_sessions_directory() {
    let w = crate::restore::apply::claude_world();
    let project = w.project.display().to_string();
    let log = w.json(&["checkpoints", CLAUDE, "--json"]);
    let cps = log["checkpoints"].as_array().unwrap();
    assert!(!cps.is_empty());
    for cp in cps {
        assert_eq!(cp["cwd"], project.as_str(), "{cp:#}");
    }
    let replayed = w.ok(&["replay", CLAUDE, "--json"]);
    let pinned: Vec<Value> = replayed
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["type"] == "checkpoint.recorded")
        .collect();
    assert!(
        pinned
            .iter()
            .all(|e| e["payload"]["cwd"] == project.as_str())
    );
    let shown = w.json(&["restore", CLAUDE, "--json"]);
    assert_eq!(shown["shim"]["cwd"], project.as_str());
}

/// The directory a checkpoint names outlives the finalize run that saw the
/// session start: Copilot's first run finalized after its first prompt and
/// again after its turn, its record not followed.
#[test]
fn a_checkpoint_pinned_in_a_later_run_names_the_directory_too() {
    use crate::restore::session_log_support::*;
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    let run = lines("copilot", "resume-1-first-run");
    feed(home, "copilot", &run[..2]);
    ok(home, &["finalize"]);
    feed(home, "copilot", &run[2..]);
    ok(home, &["finalize"]);
    let events = replay(home, COPILOT_RESUME, &[]);
    let cwd = of_type(&events, "session.started")[0]["payload"]["cwd"].clone();
    assert!(cwd.is_string());
    let pinned = of_type(&events, "checkpoint.recorded");
    assert_eq!(pinned.len(), 1);
    assert_eq!(pinned[0]["payload"]["cwd"], cwd);
}
