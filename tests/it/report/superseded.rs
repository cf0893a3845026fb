//! The read side of resumes and restores over real homes (the real hook,
//! the real `finalize`, a recorded restore and a real `restore --apply`):
//! `sessions` names the session a restore started from and leaves
//! superseded turns and spans out of its counts; `show` marks a
//! superseded range and counts it only with `--include-superseded`;
//! `view` draws the range as a labelled band, its spans marked.

use std::path::Path;

use serde_json::Value;

use crate::restore::apply::{CLAUDE as PARENT, claude_world};
use crate::restore::session_log_support::*;

/// The Claude Code `resume` scenario: leg one with an operator checkpoint
/// right after its session start, a restore recorded from it, then leg
/// two, which supersedes the rest of leg one. The resume's offset.
pub(crate) fn resumed_home(home: &Path) -> u64 {
    let all = lines("claude-code", "resume");
    feed(home, "claude-code", &all[..1]);
    ok(home, &["checkpoint", CLAUDE, "--id", "early"]);
    feed(home, "claude-code", &all[1..8]);
    ok(home, &["finalize"]);
    // Nothing resumes Claude Code before its first reply, so `restore
    // --record` records nothing at `early`: recorded as it records one.
    record_restore(home, "claude-code", CLAUDE, "early");
    feed(home, "claude-code", &all[8..]);
    ok(home, &["finalize"]);
    let log = json(home, &["checkpoints", CLAUDE, "--json"]);
    log["resumes"][0]["offset"].as_u64().unwrap()
}

/// `count` of the session's events of `ty` that replay shows (`extra`:
/// `--include-superseded` or nothing).
fn count(home: &Path, ty: &str, extra: &[&str]) -> u64 {
    of_type(&replay(home, CLAUDE, extra), ty).len() as u64
}

fn session_line(home: &Path, id: &str) -> Value {
    ok(home, &["sessions", "--json"])
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|v| v["session"]["session_id"] == id)
        .expect("the session is listed")
}

#[test]
fn sessions_and_show_count_what_the_resume_left_live() {
    let home = tempfile::tempdir().unwrap();
    resumed_home(home.path());
    let all = ["--include-superseded"];
    let (live_turns, every_turn) = (
        count(home.path(), "turn.started", &[]),
        count(home.path(), "turn.started", &all),
    );
    assert!(live_turns < every_turn, "the resume superseded a turn");
    let requests = |extra: &[&str]| {
        count(home.path(), "tool.requested", extra) + count(home.path(), "command.requested", extra)
    };
    let line = session_line(home.path(), CLAUDE);
    assert_eq!(line["turns"], live_turns);
    let spans = &line["spans"];
    let listed = ["open", "closed_native", "recovered"]
        .iter()
        .map(|k| spans[k].as_u64().unwrap())
        .sum::<u64>();
    assert_eq!(listed, requests(&[]));
    assert!(
        line.get("restored_from").is_none(),
        "not a restored session"
    );
    let shown = json(home.path(), &["show", CLAUDE, "--json"]);
    assert_eq!(shown["summary"]["turns"], live_turns);
    assert_eq!(shown["summary"]["spans"], line["spans"]);
    let counted = json(
        home.path(),
        &["show", CLAUDE, "--json", "--include-superseded"],
    );
    assert_eq!(counted["summary"]["turns"], every_turn);
    let text = ok(home.path(), &["sessions"]);
    let row = text.lines().find(|l| l.contains(CLAUDE)).unwrap();
    // TURNS is right-aligned under its heading.
    let end = text.lines().next().unwrap().find("TURNS").unwrap() + "TURNS".len();
    let turns = row[..end].split_whitespace().last().unwrap();
    assert_eq!(turns, live_turns.to_string(), "{row}");
    // `view`'s index counts the same way.
    let out = tempfile::tempdir().unwrap();
    let index = out.path().join("index.html");
    ok(home.path(), &["view", "-o", index.to_str().unwrap()]);
    let page = std::fs::read_to_string(&index).unwrap();
    let cells = page.split(CLAUDE).nth(1).expect("the session's row");
    let turns_cell = cells.split("<td class=\"n\">").nth(1).unwrap();
    assert!(turns_cell.starts_with(&format!("{live_turns}<")), "{page}");
}

#[test]
fn show_marks_the_superseded_range_and_names_its_resume() {
    let home = tempfile::tempdir().unwrap();
    let resume_at = resumed_home(home.path());
    let superseded: Vec<u64> = replay(home.path(), CLAUDE, &["--include-superseded"])
        .iter()
        .filter(|e| e["superseded"] == true)
        .map(|e| e["offset"].as_u64().unwrap())
        .collect();
    assert!(!superseded.is_empty());
    let shown = json(home.path(), &["show", CLAUDE, "--json"]);
    let entries = shown["entries"].as_array().unwrap();
    assert!(entries.len() > superseded.len(), "live entries too");
    for e in entries {
        let offset = e["offset"].as_u64().unwrap();
        let marked = e.get("superseded").is_some();
        assert_eq!(marked, superseded.contains(&offset), "offset {offset}");
        if marked {
            assert_eq!(e["superseded"], true);
        }
    }
    let text = ok(home.path(), &["show", CLAUDE]);
    let band = format!("── superseded by the resume at offset {resume_at} ──");
    assert_eq!(text.matches(&band).count(), 1, "{text}");
    let after: Vec<&str> = text.lines().skip_while(|l| !l.contains(&band)).collect();
    assert!(after[1].ends_with("  superseded"), "{text}");
    let marked = text.lines().filter(|l| l.ends_with("  superseded")).count();
    let first = text.lines().find(|l| l.ends_with("  superseded")).unwrap();
    let offset: u64 = first.split_whitespace().next().unwrap().parse().unwrap();
    assert_eq!(offset, superseded[0], "{text}");
    assert!(marked > 0 && marked <= superseded.len(), "{text}");
    // The resume's own line and what follows it are live.
    let resumed = text
        .lines()
        .find(|l| l.trim_start().starts_with(&format!("{resume_at} ")))
        .unwrap();
    assert!(!resumed.ends_with("superseded"), "{resumed}");
    let at = superseded[0].to_string();
    let around = ok(
        home.path(),
        &["show", CLAUDE, "--at", &at, "--context", "0"],
    );
    let hit = around.lines().find(|l| l.starts_with(">>")).unwrap();
    assert!(hit.ends_with("  superseded"), "{around}");
}

#[test]
fn a_restored_session_names_its_parent_and_checkpoint() {
    let w = claude_world();
    let log = w.json(&["checkpoints", PARENT, "--json"]);
    let turn1 = log["checkpoints"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["origin"] == "turn")
        .unwrap()["checkpoint_id"]
        .as_str()
        .unwrap()
        .to_string();
    let before = w.ok(&["sessions"]);
    assert!(!before.contains("restored"), "{before}");
    let new_id = "0b5e6c1e-0000-4000-8000-000000000002";
    w.ok(&[
        "restore",
        PARENT,
        "--checkpoint",
        &turn1,
        "--apply",
        "--new-id",
        new_id,
    ]);
    w.ok(&["finalize"]);
    let lines: Vec<Value> = w
        .ok(&["sessions", "--json"])
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let of = |id: &str| {
        lines
            .iter()
            .find(|v| v["session"]["session_id"] == id)
            .unwrap()
    };
    assert_eq!(
        of(new_id)["restored_from"],
        serde_json::json!({"session": format!("claude-code/{PARENT}"), "checkpoint": turn1})
    );
    assert!(of(PARENT).get("restored_from").is_none());
    let text = w.ok(&["sessions"]);
    let note = format!("{new_id} was restored from claude-code/{PARENT} at checkpoint {turn1}");
    assert_eq!(text.lines().last(), Some(note.as_str()), "{text}");
    // The parent's row reads as it did before the restore.
    let parent_row = |t: &str| t.lines().find(|l| l.contains(PARENT)).unwrap().to_string();
    assert_eq!(parent_row(&text), parent_row(&before));
    assert_eq!(text.lines().next(), before.lines().next(), "same header");
    // Neither session was resumed: nothing reads as superseded.
    for id in [PARENT, new_id] {
        let page = w.ok(&["view", id, "-o", "-"]);
        assert!(!page.contains("superseded"), "{id}");
        assert!(!w.ok(&["show", id]).contains("superseded"), "{id}");
    }
}

#[test]
fn view_draws_the_superseded_range_as_a_band_with_its_spans_marked() {
    let home = tempfile::tempdir().unwrap();
    let resume_at = resumed_home(home.path());
    let shown = json(home.path(), &["show", CLAUDE, "--json"]);
    let entries = shown["entries"].as_array().unwrap();
    let spans_in = |superseded: bool| {
        entries
            .iter()
            .filter(|e| e.get("span").is_some() && (e.get("superseded").is_some() == superseded))
            .count()
    };
    assert!(spans_in(true) > 0 && spans_in(false) > 0, "{shown}");
    let page = ok(home.path(), &["view", CLAUDE, "-o", "-"]);
    let band = format!("data-resume-offset=\"{resume_at}\"");
    assert_eq!(
        page.matches("<div class=\"superseded").count(),
        1,
        "one band"
    );
    assert_eq!(page.matches(&band).count(), 1);
    assert!(page.contains(&format!(">superseded by the resume at offset {resume_at}<")));
    assert_eq!(
        page.matches("data-superseded=\"true\"").count(),
        spans_in(true)
    );
    assert_eq!(
        page.matches("data-span-id=").count(),
        spans_in(true) + spans_in(false)
    );
    assert!(
        page.contains("class=\"superseded-line\""),
        "the show lines are marked"
    );
}
