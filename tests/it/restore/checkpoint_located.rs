//! A checkpoint's place in the agent's own record (`checkpoint.located`,
//! generation 7), over real captures: the place finalize writes is the cut
//! `restore` derives, it names the last line kept by the agent's own id,
//! it is written once however the finalize runs fall, and it survives an
//! epoch advance. Expectations about the record are computed from the
//! record files here with serde_json.

use std::path::Path;

use serde_json::Value;

use harnery::home::Home;
use harnery::ledger::LedgerReader;
use harnery::resume::log::SessionLog;
use harnery::resume::record_cut::cut_at;

use crate::common::{self, stderr};
use crate::restore::apply::*;
use crate::restore::apply_more::copilot_world_of;

/// The record's whole lines, each with where it starts.
fn record_lines(record: &Path) -> Vec<(u64, String)> {
    let text = std::fs::read_to_string(record).unwrap();
    let mut at = 0;
    text.split_inclusive('\n')
        .map(|l| {
            let start = at;
            at += l.len() as u64;
            (start, l.to_string())
        })
        .collect()
}

/// The agent's own id of the last line of `record` that ends by `end`
/// and has one (Claude Code `uuid`, Copilot `id`), and where it starts.
fn last_line_id(record: &Path, end: u64, key: &str) -> (u64, String) {
    record_lines(record)
        .into_iter()
        .filter(|(at, l)| at + l.len() as u64 <= end)
        .rev()
        .find_map(|(at, l)| {
            let v: Value = serde_json::from_str(&l).ok()?;
            Some((at, v[key].as_str()?.to_string()))
        })
        .unwrap()
}

/// Every placed checkpoint of `session` in the live epoch: its place
/// equals the cut derived from the ledger's record events. Returns the
/// checkpoints, placed or not.
fn placed_as_derived(home: &Path, session: &str) -> Vec<harnery::resume::log::Checkpoint> {
    let ledger = LedgerReader::open_dir(&LedgerReader::live_dir(&Home::at(home)), None).unwrap();
    let s = ledger.sessions().resolve(session).unwrap();
    let log = SessionLog::read(&ledger, &s).unwrap();
    for cp in log.checkpoints.iter().filter(|c| c.valid) {
        let Some(at) = &cp.located else {
            continue;
        };
        let (cut, _) = cut_at(&ledger, &log, cp.offset).unwrap();
        assert_eq!(
            (&cut.path, cut.end),
            (&at.path, at.end),
            "{session} {}",
            cp.checkpoint_id
        );
    }
    log.checkpoints
}

/// A place without its path (each test home has its own).
fn without_path(located: &Value) -> Value {
    let mut v = located.clone();
    if let Some(o) = v.as_object_mut() {
        o.remove("path");
    }
    v
}

/// The `checkpoint.located` events of a session.
fn located_events(w: &World, session: &str) -> Vec<Value> {
    w.ok(&["replay", session, "--json"])
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["type"] == "checkpoint.located")
        .collect()
}

#[test]
fn claude_codes_turn_is_placed_where_restore_cuts_it() {
    let w = claude_world();
    let checkpoints = placed_as_derived(w.home.path(), CLAUDE);
    let turn1 = format!("turn:{CLAUDE_TURN_1}");
    let cp = checkpoints
        .iter()
        .find(|c| c.checkpoint_id == turn1)
        .unwrap();
    let at = cp.located.as_ref().expect("turn 1 is placed");
    // Up to turn 2's first row, its file-history snapshot left out.
    let kept = claude_turn_1_lines(&w.record);
    assert_eq!(at.end, kept.concat().len() as u64);
    assert_eq!(at.path, w.record.display().to_string());
    let (line_at, uuid) = last_line_id(&w.record, at.end, "uuid");
    assert_eq!(at.line_id.as_deref(), Some(uuid.as_str()));
    assert_eq!(at.line_offset, Some(line_at));
    // The last turn: no later turn follows, but the session ended and its
    // record was read to the end, so it keeps the whole record (less a
    // snapshot row at its end), as restore derives it.
    let last = checkpoints.iter().rfind(|c| c.origin == "turn").unwrap();
    assert_ne!(last.checkpoint_id, turn1);
    let whole = std::fs::read_to_string(&w.record).unwrap();
    let mut rows: Vec<&str> = whole.split_inclusive('\n').collect();
    while rows
        .last()
        .is_some_and(|l| l.contains("\"file-history-snapshot\""))
    {
        rows.pop();
    }
    let last_at = last
        .located
        .as_ref()
        .expect("the ended session's last turn");
    assert_eq!(last_at.end, rows.concat().len() as u64);
    assert_eq!(located_events(&w, CLAUDE).len(), 2);
    // Shown by checkpoints, and taken by restore.
    let text = w.ok(&["checkpoints", CLAUDE]);
    assert!(
        text.contains(&format!("up to byte {}, last line {uuid}", at.end)),
        "{text}"
    );
    let json = w.json(&["checkpoints", CLAUDE, "--json", "--id", &turn1]);
    assert_eq!(json["located"]["end"], at.end);
    assert_eq!(json["located"]["line_id"], uuid.as_str());
    let shown = w.json(&["restore", CLAUDE, "--checkpoint", &turn1, "--json"]);
    assert_eq!(shown["apply"]["record"]["located"], true);
    assert_eq!(shown["apply"]["record"]["end"], at.end);
    assert_eq!(shown["apply"]["record"]["line_id"], uuid.as_str());
    let shown_last = w.json(&[
        "restore",
        CLAUDE,
        "--checkpoint",
        &last.checkpoint_id,
        "--json",
    ]);
    assert_eq!(shown_last["apply"]["record"]["located"], true);
    assert_eq!(shown_last["apply"]["record"]["end"], last_at.end);
    w.ok(&["validate"]);
    w.ok(&["verify"]);
}

#[test]
fn copilots_turn_is_placed_at_its_turn_end() {
    let w = copilot_world_of(
        COPILOT,
        "resume-2-resumed-run",
        &["resume-1-first-run", "resume-2-resumed-run"],
    );
    let checkpoints = placed_as_derived(w.home.path(), COPILOT);
    let turn1 = checkpoint_of_turn(&w, COPILOT, 0);
    let at = checkpoints
        .iter()
        .find(|c| c.checkpoint_id == turn1)
        .and_then(|c| c.located.clone())
        .expect("turn 1 is placed");
    // Everything before the second prompt, up to the last turn end.
    let kept = copilot_turn_1_lines(&w.record);
    let last: Value = serde_json::from_str(kept.last().unwrap()).unwrap();
    assert_eq!(at.end, kept.concat().len() as u64);
    assert_eq!(at.line_id.as_deref(), last["id"].as_str());
    assert_eq!(last_line_id(&w.record, at.end, "id").1, last["id"]);
    let placed: Vec<String> = located_events(&w, COPILOT)
        .iter()
        .map(|e| e["payload"]["checkpoint_id"].as_str().unwrap().to_string())
        .collect();
    let unique: std::collections::BTreeSet<&String> = placed.iter().collect();
    assert_eq!(unique.len(), placed.len(), "once each: {placed:?}");
    w.ok(&["validate"]);
    w.ok(&["verify"]);
}

/// An operator checkpoint pinned inside turn 1 keeps that whole turn: it
/// is placed where turn 1's own checkpoint is, as restore derives.
#[test]
fn a_checkpoint_inside_a_turn_is_placed_at_the_turns_end() {
    let w = claude_world_with(true, true);
    let w = World {
        home: tempfile::tempdir().unwrap(),
        ..w
    };
    // The record as the agent has written it by turn 1's first tool call:
    // up to its second prompt row (the tool's result).
    let full = std::fs::read(&w.record).unwrap();
    let second_row = record_lines(&w.record)
        .iter()
        .filter(|(_, l)| l.contains("\"type\":\"user\""))
        .nth(1)
        .unwrap()
        .0;
    std::fs::write(&w.record, &full[..second_row as usize]).unwrap();
    let hooks =
        std::fs::read_to_string(root().join("tests/fixtures/claude-code/interactive/hooks.jsonl"))
            .unwrap();
    let mut checkpointed = false;
    for line in hooks.lines().filter(|l| l.contains(CLAUDE)) {
        let mut v: Value = serde_json::from_str(line).unwrap();
        v["transcript_path"] = w.record.display().to_string().into();
        v["cwd"] = w.project.display().to_string().into();
        common::deliver(w.home.path(), "claude-code", &v.to_string());
        if v["hook_event_name"] == "PreToolUse" && !checkpointed {
            w.ok(&["finalize"]);
            w.ok(&["checkpoint", CLAUDE, "--id", "mid-turn"]);
            w.ok(&["finalize"]);
            std::fs::write(&w.record, &full).unwrap();
            checkpointed = true;
        }
    }
    w.ok(&["finalize"]);
    let checkpoints = placed_as_derived(w.home.path(), CLAUDE);
    let place = |id: &str| {
        checkpoints
            .iter()
            .find(|c| c.checkpoint_id == id)
            .and_then(|c| c.located.clone())
            .unwrap_or_else(|| panic!("{id} is placed: {checkpoints:#?}"))
    };
    assert_eq!(place("mid-turn"), place(&format!("turn:{CLAUDE_TURN_1}")));
    // Mid-turn, turn 1, and the last turn once the session ended.
    assert_eq!(located_events(&w, CLAUDE).len(), 3);
}

/// Every Copilot capture whose record is here: whatever is placed is
/// where restore's derivation cuts, and some are placed.
#[test]
fn every_copilot_capture_is_placed_as_derived() {
    let root = root().join("tests/fixtures");
    let mut placed = 0;
    let mut scenarios: Vec<String> = std::fs::read_dir(root.join("copilot"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|s| {
            root.join(format!("records/copilot/{s}.events.jsonl"))
                .exists()
        })
        .collect();
    scenarios.sort();
    assert!(scenarios.len() >= 20, "{scenarios:?}");
    for scenario in &scenarios {
        let record = root.join(format!("records/copilot/{scenario}.events.jsonl"));
        let first: Value = serde_json::from_str(&record_lines(&record)[0].1).unwrap();
        let Some(session) = first["data"]["sessionId"].as_str() else {
            continue;
        };
        let w = copilot_world_of(session, scenario, &[scenario]);
        let checkpoints = placed_as_derived(w.home.path(), session);
        placed += checkpoints.iter().filter(|c| c.located.is_some()).count();
    }
    assert!(placed >= 10, "{placed} placed");
}

/// Every Claude Code capture with one transcript: whatever is placed is
/// where restore's derivation cuts (the `resume` and `compact` captures
/// have more than one turn).
#[test]
fn every_claude_code_capture_is_placed_as_derived() {
    let root = root().join("tests/fixtures");
    let mut placed = 0;
    let mut scenarios = 0;
    for entry in std::fs::read_dir(root.join("claude-code")).unwrap() {
        let scenario = entry.unwrap().file_name().to_string_lossy().into_owned();
        let record = root.join(format!("records/claude-code/{scenario}.jsonl"));
        if !record.exists() {
            continue;
        }
        scenarios += 1;
        let session = record_lines(&record)
            .iter()
            .find_map(|(_, l)| {
                let v: Value = serde_json::from_str(l).ok()?;
                Some(v["sessionId"].as_str()?.to_string())
            })
            .unwrap();
        let user = tempfile::tempdir().unwrap();
        let project = user.path().join("proj");
        let dir = user.path().join("claude/projects/-proj");
        std::fs::create_dir_all(&dir).unwrap();
        let copy = dir.join(format!("{session}.jsonl"));
        std::fs::copy(&record, &copy).unwrap();
        let w = World {
            home: tempfile::tempdir().unwrap(),
            user,
            project,
            record: copy,
        };
        let hooks = root.join(format!("claude-code/{scenario}/hooks.jsonl"));
        for line in std::fs::read_to_string(hooks).unwrap().lines() {
            let Ok(mut v) = serde_json::from_str::<Value>(line) else {
                continue;
            };
            if v["session_id"] != session.as_str() {
                continue;
            }
            v["transcript_path"] = w.record.display().to_string().into();
            v["cwd"] = w.project.display().to_string().into();
            common::deliver(w.home.path(), "claude-code", &v.to_string());
        }
        w.ok(&["finalize"]);
        let checkpoints = placed_as_derived(w.home.path(), &session);
        placed += checkpoints.iter().filter(|c| c.located.is_some()).count();
        w.ok(&["validate"]);
    }
    assert!(scenarios >= 15, "{scenarios} scenarios");
    assert!(placed >= 2, "{placed} placed");
}

/// Claude Code's two-turn session, a finalize after every hook and after
/// every line the agent adds to its record: the turn is pinned (at the
/// next prompt) before its record lines are read, and placed once, as a
/// single finalize places it.
#[test]
fn a_finalize_after_every_signal_places_the_turn_once() {
    let whole = claude_world();
    let want = whole.json(&["checkpoints", CLAUDE, "--json"])["checkpoints"].clone();
    for record_with_stop in [false, true] {
        let w = claude_world_with(true, true);
        let home = tempfile::tempdir().unwrap();
        let w = World { home, ..w };
        let lines = record_lines(&w.record);
        // The agent's record as it stands: its preamble only, at first.
        let snapshot = lines
            .iter()
            .position(|(_, l)| l.contains("\"type\":\"user\""))
            .unwrap();
        let turn2 = lines
            .iter()
            .position(|(_, l)| l.contains(&format!("\"promptId\":\"{CLAUDE_TURN_2}")))
            .unwrap();
        let mut written = snapshot;
        let write = |n: usize| {
            let text: String = lines[..n].iter().map(|(_, l)| l.as_str()).collect();
            std::fs::write(&w.record, text).unwrap();
        };
        write(written);
        let hooks = std::fs::read_to_string(
            root().join("tests/fixtures/claude-code/interactive/hooks.jsonl"),
        )
        .unwrap();
        let mut prompts = 0;
        for line in hooks.lines().filter(|l| l.contains(CLAUDE)) {
            let mut v: Value = serde_json::from_str(line).unwrap();
            v["transcript_path"] = w.record.display().to_string().into();
            v["cwd"] = w.project.display().to_string().into();
            common::deliver(w.home.path(), "claude-code", &v.to_string());
            w.ok(&["finalize"]);
            if v["hook_event_name"] == "Stop" && record_with_stop && written < turn2 {
                written = turn2 - 1;
                write(written);
                w.ok(&["finalize"]);
            }
            if v["hook_event_name"] == "UserPromptSubmit" {
                prompts += 1;
            }
            // Once turn 2 started (turn 1 pinned), the record grows a
            // line at a time.
            while prompts == 2 && written < lines.len() {
                written += 1;
                write(written);
                w.ok(&["finalize"]);
            }
        }
        let got = w.json(&["checkpoints", CLAUDE, "--json"])["checkpoints"].clone();
        let strip = |v: &Value| -> Vec<Value> {
            v.as_array()
                .unwrap()
                .iter()
                .map(|c| serde_json::json!([c["checkpoint_id"], without_path(&c["located"])]))
                .collect()
        };
        assert_eq!(
            strip(&got),
            strip(&want),
            "record with stop: {record_with_stop}"
        );
        assert_eq!(got[0]["located"]["path"], w.record.display().to_string());
        // Turn 1, and the last turn once the session ended.
        assert_eq!(located_events(&w, CLAUDE).len(), 2);
        placed_as_derived(w.home.path(), CLAUDE);
        // More runs write nothing more.
        w.ok(&["finalize"]);
        w.ok(&["finalize"]);
        assert_eq!(located_events(&w, CLAUDE).len(), 2);
        w.ok(&["validate"]);
        w.ok(&["verify"]);
    }
}

/// Generation 7 ships by an epoch advance from the home generation 6
/// wrote: its checkpoints stay readable in the archive (unplaced: its
/// agents' records are not here, and generation 6 placed none), restore
/// still derives, and a session after the advance is placed.
#[test]
fn generation_seven_ships_by_an_epoch_advance_from_the_generation_six_home() {
    let (home, live) = crate::finalize::records::advanced_from("gen6");
    assert!(
        live.to_string()
            .contains(&harnery::contract::schema_digest_hex()),
        "{live}"
    );
    let home = home.path();
    let ok = |args: &[&str]| {
        let out = common::run(home, args);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        common::stdout(&out)
    };
    ok(&["finalize"]);
    let clean = "82655d0f-45cd-404f-9e4e-e90fea255247";
    let all: Value =
        serde_json::from_str(&ok(&["checkpoints", clean, "--epoch", "all", "--json"])).unwrap();
    let archived = &all[0]["checkpoints"][0];
    assert!(
        archived["checkpoint_id"]
            .as_str()
            .unwrap()
            .starts_with("turn:")
    );
    assert!(archived.get("located").is_none());
    ok(&["validate"]);
    ok(&["verify"]);
}

/// Claude Code's session, finalized up to turn 2's prompt while its
/// record holds only its preamble: turn 1 is pinned, its lines unread.
/// The world, the whole record, and the hooks still to deliver.
#[cfg(feature = "failpoints")]
fn pinned_unread() -> (World, Vec<u8>, Vec<Value>) {
    let w = claude_world_with(true, true);
    let home = tempfile::tempdir().unwrap();
    let w = World { home, ..w };
    let full = std::fs::read(&w.record).unwrap();
    let first_user = record_lines(&w.record)
        .iter()
        .find(|(_, l)| l.contains("\"type\":\"user\""))
        .unwrap()
        .0;
    std::fs::write(&w.record, &full[..first_user as usize]).unwrap();
    let hooks =
        std::fs::read_to_string(root().join("tests/fixtures/claude-code/interactive/hooks.jsonl"))
            .unwrap();
    let mut hooks: Vec<Value> = hooks
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
    for v in hooks.drain(..=second) {
        common::deliver(w.home.path(), "claude-code", &v.to_string());
    }
    w.ok(&["finalize"]);
    let turn1 = format!("turn:{CLAUDE_TURN_1}");
    let before = w.json(&["checkpoints", CLAUDE, "--json", "--id", &turn1]);
    assert!(before.get("located").is_none(), "not read yet: {before}");
    (w, full, hooks)
}

/// Turn 1's place as a single finalize over the whole session writes it.
#[cfg(feature = "failpoints")]
fn whole_place() -> Value {
    let whole = claude_world();
    let turn1 = format!("turn:{CLAUDE_TURN_1}");
    without_path(&whole.json(&["checkpoints", CLAUDE, "--json", "--id", &turn1])["located"])
}

/// A checkpoint pinned before an epoch advance, its turn's record read
/// after it: the new epoch places it, and `checkpoints --epoch all` shows
/// the place on the archived checkpoint.
#[cfg(feature = "failpoints")]
#[test]
fn a_checkpoint_pinned_before_an_advance_is_placed_after_it() {
    let (w, full, hooks) = pinned_unread();
    let turn1 = format!("turn:{CLAUDE_TURN_1}");
    w.next(&["epoch", "advance"]);
    std::fs::write(&w.record, &full).unwrap();
    for v in &hooks {
        common::deliver(w.home.path(), "claude-code", &v.to_string());
    }
    w.next(&["finalize"]);
    let all: Value =
        serde_json::from_str(&w.next(&["checkpoints", CLAUDE, "--epoch", "all", "--json"]))
            .unwrap();
    let archived = all[0]["checkpoints"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["checkpoint_id"] == turn1.as_str())
        .unwrap()
        .clone();
    assert_eq!(without_path(&archived["located"]), whole_place(), "{all:#}");
    assert_eq!(archived["located"]["path"], w.record.display().to_string());
    let text = w.next(&["checkpoints", CLAUDE, "--epoch", "all"]);
    assert!(text.contains("up to byte"), "{text}");
    w.next(&["validate"]);
    w.next(&["verify"]);
}

/// The finalize run that reads the turn's record killed at every
/// failpoint, then run again: the turn is placed once, where a run never
/// killed places it.
#[cfg(feature = "failpoints")]
#[test]
fn a_kill_at_any_failpoint_still_places_the_turn_once() {
    let want = whole_place();
    for point in harnery::failpoint::FINALIZE_POINTS {
        let (w, full, hooks) = pinned_unread();
        std::fs::write(&w.record, &full).unwrap();
        for v in &hooks {
            common::deliver(w.home.path(), "claude-code", &v.to_string());
        }
        let killed = w
            .command()
            .env("HARNERY_FAILPOINTS", point)
            .env("HARNERY_CHUNK_BYTES", "1")
            .arg("finalize")
            .output()
            .unwrap();
        assert_eq!(killed.status.code(), None, "{point}: killed by a signal");
        w.ok(&["finalize"]);
        w.ok(&["finalize"]);
        assert_eq!(located_events(&w, CLAUDE).len(), 2, "{point}");
        let turn1 = format!("turn:{CLAUDE_TURN_1}");
        let got = w.json(&["checkpoints", CLAUDE, "--json", "--id", &turn1]);
        assert_eq!(without_path(&got["located"]), want, "{point}");
        w.ok(&["verify"]);
    }
}
