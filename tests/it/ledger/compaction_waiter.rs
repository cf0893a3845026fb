#![cfg(feature = "failpoints")]
//! A finalizer that comes to wait for the lease while the compaction pass
//! after a run packs events, or rewrites the file (`VACUUM`), stops that
//! pass: packing between two of its steps, the rewrite by SQLite's
//! interrupt (which rolls it back whole). The waiting finalizer then runs,
//! and the next pass finishes what was left; `verify` passes and the
//! export is the same throughout. Each test pauses the first finalizer at
//! a failpoint (`failpoint::pause`) until the second one waits, so the
//! order of the two is the same in every run, whatever the machine's load.

use std::path::{Path, PathBuf};
use std::process::{Child, Output, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;

/// Claude Code sessions of [`TURNS`] turns each, made of the `basic`
/// fixture's lines: events enough for packing to take more than one step
/// (4,096 rows), and long sessions, whose events packing frees enough of
/// for the pass to rewrite the file (an eighth of it).
const SESSIONS: usize = 10;
const TURNS: usize = 50;
/// The `basic` fixture's prompt id and tool call id, made fresh in each
/// turn and call (the same payload twice in a session is one signal).
const FIXTURE_PROMPT: &str = "c68551d6-9785-4cd4-9f63-669805f3927c";
const FIXTURE_CALL: &str = "toolu_01oOb0TT009RCjxYiOfGSjLDr5";

/// One session's lines: a start, then turns of a prompt, eight tool calls
/// and a stop.
fn session_lines() -> Vec<(String, String)> {
    let lines = basic_hook_lines();
    let line = |event: &str| {
        let (_, text) = lines.iter().find(|(e, _)| e == event).unwrap();
        (event.to_string(), text.clone())
    };
    let mut out = vec![line("SessionStart")];
    for turn in 0..TURNS {
        let fresh = |(e, t): (String, String), call: usize| {
            let t = t
                .replace(
                    FIXTURE_PROMPT,
                    &format!("c68551d6-9785-4cd4-9f63-{turn:012}"),
                )
                .replace(FIXTURE_CALL, &format!("toolu_{turn:04}_{call:04}"));
            (e, t)
        };
        out.push(fresh(line("UserPromptSubmit"), 0));
        for call in 0..8 {
            out.push(fresh(line("PreToolUse"), call));
            out.push(fresh(line("PostToolUse"), call));
        }
        out.push(fresh(line("Stop"), 0));
    }
    out
}

fn ledger_dir(home: &Path) -> PathBuf {
    home.join("ledgers/v2")
}

/// A home whose ledger holds the sessions' events, finalized without the
/// compaction pass and its rows as an older writer left them: every event
/// is left for the next pass to pack.
fn home_to_pack(home: &Path) {
    spool_sessions(
        home,
        "waiter",
        SESSIONS,
        &session_lines(),
        1_796_000_000_000_000_000,
    );
    let out = run(home, &["finalize", "--no-compact"]);
    assert!(out.status.success(), "{}", stderr(&out));
    // The writer stores events in blocks: leave them as one frame each,
    // as an older writer did, for the pass to pack.
    super::compact_events::as_an_older_writer_left(home);
}

/// The packing's progress: the last seq packed, the bytes it freed that
/// no rewrite gave back yet, and the ledger's last seq.
fn packing(home: &Path) -> (i64, i64, i64) {
    let conn = rusqlite::Connection::open(ledger_dir(home).join("ledger.sqlite")).unwrap();
    conn.query_row(
        "SELECT through_seq, freed, (SELECT max(seq) FROM event_store) FROM event_packed",
        [],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    )
    .unwrap()
}

/// `verify`'s verdict and the whole ledger's jsonl export.
fn verified_export(home: &Path, when: &str) -> String {
    let v = run(home, &["verify"]);
    assert!(v.status.success(), "{when}: {}{}", stdout(&v), stderr(&v));
    let e = run(home, &["export", "--format", "jsonl"]);
    assert!(e.status.success(), "{when}: {}", stderr(&e));
    stdout(&e)
}

/// Whether a finalizer waits for the lease: it holds `finalize.want`
/// shared while it does (`finalize::lease`).
fn someone_waits(home: &Path) -> bool {
    let Ok(want) = std::fs::File::open(home.join("ledgers/finalize.want")) else {
        return false;
    };
    match want.try_lock() {
        Ok(()) => {
            want.unlock().unwrap();
            false
        }
        Err(std::fs::TryLockError::WouldBlock) => true,
        Err(std::fs::TryLockError::Error(e)) => panic!("finalize.want: {e}"),
    }
}

/// Wait until `done` says so; a minute without it is a hang, not a slow
/// machine, and fails the test.
fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "waited for {what}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn finalizer(home: &Path, args: &[&str], failpoint: Option<&str>) -> Child {
    let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("harnery"));
    cmd.env("HARNERY_HOME", home)
        .env("HARNERY_NOW", NOW)
        .env("HARNERY_RECORDS", "off")
        .env_remove("HARNERY_FAILPOINTS")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(point) = failpoint {
        cmd.env("HARNERY_FAILPOINTS", point);
    }
    cmd.spawn().unwrap()
}

/// A default `finalize` paused at `point`; meanwhile a second finalizer
/// (`--no-compact`, draining the sessions spooled meanwhile) starts and
/// waits for the lease; then the first goes on. Both outputs.
fn finalize_with_a_waiter(home: &Path, point: &str) -> (Output, Output) {
    let marker = ledger_dir(home).join(point);
    let first = finalizer(home, &["finalize"], Some(point));
    wait_until(point, || marker.exists());
    assert!(!someone_waits(home));
    spool_sessions(
        home,
        "late",
        4,
        &basic_hook_lines(),
        1_796_000_100_000_000_000,
    );
    let mut second = finalizer(home, &["finalize", "--no-compact", "--json"], None);
    wait_until("the second finalizer to wait", || {
        if let Some(status) = second.try_wait().unwrap() {
            panic!("the second finalizer ended without waiting: {status}");
        }
        someone_waits(home)
    });
    std::fs::remove_file(&marker).unwrap();
    let first = first.wait_with_output().unwrap();
    let second = second.wait_with_output().unwrap();
    assert!(first.status.success(), "{}", stderr(&first));
    assert!(second.status.success(), "{}", stderr(&second));
    (first, second)
}

/// The second finalizer drained the sessions spooled while it waited.
fn drained_the_late_sessions(second: &Output) {
    let v: serde_json::Value = serde_json::from_str(stdout(second).trim()).unwrap();
    assert!(v["signals_drained"].as_u64().unwrap() > 0, "{v}");
}

#[test]
fn a_waiting_finalizer_stops_packing_between_two_steps() {
    let t = tempfile::tempdir().unwrap();
    let home = t.path();
    home_to_pack(home);
    let (through, _, last) = packing(home);
    assert_eq!(through, 0);
    let (_, second) = finalize_with_a_waiter(home, "pack-between-steps");
    drained_the_late_sessions(&second);
    let (through, _, last_now) = packing(home);
    assert!(last_now > last);
    // One step was packed before the pause, none after it.
    assert!(
        through > 0 && through < last,
        "packed through {through} of {last}"
    );
    let before = verified_export(home, "stopped");
    let out = run(home, &["finalize"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let (through, _, last) = packing(home);
    assert_eq!(through, last, "the next pass packs the rest");
    assert_eq!(verified_export(home, "finished"), before);
}

#[test]
fn a_waiting_finalizer_interrupts_the_rewrite() {
    let t = tempfile::tempdir().unwrap();
    let home = t.path();
    home_to_pack(home);
    let db = ledger_dir(home).join("ledger.sqlite");
    let (_, second) = finalize_with_a_waiter(home, "vacuum-running");
    drained_the_late_sessions(&second);
    // Every row was packed, and what packing freed is still to give back:
    // the rewrite that would have was rolled back.
    let (through, freed, last) = packing(home);
    assert!(
        through > 0 && freed > 0,
        "packed through {through}, {freed} bytes freed"
    );
    let before = verified_export(home, "interrupted");
    let size = std::fs::metadata(&db).unwrap().len();
    let out = run(home, &["finalize"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let (through, freed, last_now) = packing(home);
    assert_eq!(
        (through, freed),
        (last_now, 0),
        "the next pass rewrites the file"
    );
    assert!(last_now >= last);
    assert!(std::fs::metadata(&db).unwrap().len() < size);
    assert_eq!(verified_export(home, "rewritten"), before);
}
