#![cfg(feature = "failpoints")]
//! Exactly once across crashes: SIGKILL `finalize` at every failpoint,
//! rerun it, and compare the ledger with an uninterrupted run's (same
//! events, ids and hashes, chain intact, spool empty). Also: two finalizers
//! at once, a durability failure, and damaged spool bytes.

use crate::common;

use std::io::Write;
use std::path::Path;

use common::*;

/// A spool with sessions of both agents and one damaged segment tail.
fn build_spool(home: &Path) {
    feed_fixture(home, "claude-code", "basic");
    feed_fixture(home, "claude-code", "kill");
    feed_fixture(home, "copilot", "subagent-task");
    feed_fixture(home, "claude-code", "tool-failure");
    // A resumed session with an operator checkpoint: the session log
    // (checkpoints, the resume, incarnations) is exactly once too.
    feed_fixture(home, "claude-code", "resume");
    let cp = run(
        home,
        &[
            "checkpoint",
            "8d31d374-43c7-42c3-aadb-185a6df76fcf",
            "--id",
            "crash",
        ],
    );
    assert!(cp.status.success(), "{}", stderr(&cp));
    let seg = std::fs::read_dir(home.join("spool/intake/claude-code"))
        .unwrap()
        .map(|e| e.unwrap().path().join("active.seg"))
        .find(|p| p.exists())
        .expect("an active segment");
    let mut f = std::fs::OpenOptions::new().append(true).open(seg).unwrap();
    f.write_all(b"\x00\x00\x00garbage-after-a-crash").unwrap();
    // Seal once here, so every copy of this spool names its segments (and
    // so its damaged ranges) the same way a rerun after a crash would.
    let spool = harnery::spool::IntakeSpool::open(&harnery::home::Home::at(home));
    for session in spool.sessions().unwrap() {
        session.seal().unwrap();
    }
}

fn finalize_in(home: &Path, failpoint: Option<&str>) -> std::process::Output {
    let mut cmd = harnery(home);
    cmd.env("HARNERY_CHUNK_BYTES", "1")
        .args(["finalize", "--json"]);
    if let Some(p) = failpoint {
        cmd.env("HARNERY_FAILPOINTS", p);
    }
    cmd.output().unwrap()
}

fn leftovers(home: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for dir in ["spool/ready", "spool/intake"] {
        collect(&home.join(dir), &mut out);
    }
    // The lease: never drained.
    out.retain(|p| !p.ends_with("/lease"));
    out
}

fn relative(home: &Path, paths: Vec<String>) -> Vec<String> {
    let root = home.display().to_string();
    let mut out: Vec<String> = paths
        .into_iter()
        .map(|p| p.strip_prefix(&root).unwrap_or(&p).to_string())
        .collect();
    out.sort();
    out
}

fn collect(dir: &Path, out: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries {
        let p = e.unwrap().path();
        if p.is_dir() {
            collect(&p, out);
        } else {
            out.push(p.display().to_string());
        }
    }
}

fn reference(spool: &Path) -> (tempfile::TempDir, Vec<(String, String, String)>) {
    let dir = tempfile::tempdir().unwrap();
    copy_tree(spool, dir.path());
    let out = finalize_in(dir.path(), None);
    assert!(out.status.success(), "{}", stderr(&out));
    let rows = ledger_rows(dir.path());
    (dir, rows)
}

fn same_rows(got: &[(String, String, String)], want: &[(String, String, String)], what: &str) {
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert_eq!(g, w, "{what}: row {i} differs from the uninterrupted run");
    }
    assert_eq!(got.len(), want.len(), "{what}: row count differs");
}

#[test]
fn a_kill_at_any_failpoint_then_a_rerun_equals_an_uninterrupted_run() {
    let spool = tempfile::tempdir().unwrap();
    build_spool(spool.path());
    let (ref_dir, want) = reference(spool.path());
    assert!(
        want.len() > 30,
        "the reference run appended {} rows",
        want.len()
    );
    let typed = |ty: &str| {
        let tag = format!("\"type\":\"{ty}\"");
        want.iter()
            .filter(|(_, json, _)| json.contains(&tag))
            .count()
    };
    assert_eq!(typed("session.resumed"), 1, "the resumed session's resume");
    assert!(
        typed("checkpoint.recorded") >= 3,
        "turn and operator checkpoints"
    );
    // The damaged tail belongs to a Claude Code session: the damage is an
    // event of that session, and the audit holds it against it.
    let audit = stdout(&run(ref_dir.path(), &["audit", "--json"]));
    let damaged: Vec<&str> = audit
        .lines()
        .filter(|l| l.contains("spool_damage") && l.contains("claude-code"))
        .collect();
    assert_eq!(
        damaged.len(),
        1,
        "damage is a ledger event of its session: {audit}"
    );
    for point in harnery::failpoint::FINALIZE_POINTS {
        let dir = tempfile::tempdir().unwrap();
        copy_tree(spool.path(), dir.path());
        let killed = finalize_in(dir.path(), Some(point));
        assert_eq!(
            killed.status.code(),
            None,
            "{point}: the process was killed by a signal"
        );
        // A drain writes no ready file: until a batch's commit, its intake
        // files are all there is of it, so a kill before any commit leaves
        // every one of them.
        if *point != "after-commit" {
            assert_eq!(
                relative(dir.path(), leftovers(dir.path())),
                relative(spool.path(), leftovers(spool.path())),
                "{point}: the intake spool as it was, and no ready file"
            );
        }
        let rerun = finalize_in(dir.path(), None);
        assert!(rerun.status.success(), "{point}: {}", stderr(&rerun));
        same_rows(&ledger_rows(dir.path()), &want, point);
        assert!(run(dir.path(), &["verify"]).status.success(), "{point}");
        assert!(run(dir.path(), &["validate"]).status.success(), "{point}");
        assert_eq!(
            leftovers(dir.path()),
            Vec::<String>::new(),
            "{point}: spool drained"
        );
        assert_eq!(
            raw_archives(dir.path()),
            archived_batches(dir.path()),
            "{point}: the raw archive holds exactly the committed batches' files"
        );
    }
}

/// The batch ids of the raw archive: its directories and packed files.
fn raw_archives(home: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(home.join("ledgers/v2/raw"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|n| {
            // A batch packed by the compaction after the run, or a single
            // file of an older ledger.
            let batch = n.strip_suffix(".segz").or_else(|| n.strip_suffix(".seg"));
            batch.map(str::to_string).unwrap_or(n)
        })
        .collect()
}

/// The batches whose raw signals point into the raw archive.
fn archived_batches(home: &Path) -> Vec<String> {
    let conn = rusqlite::Connection::open(home.join("ledgers/v2/ledger.sqlite")).unwrap();
    harnery::ledger::eventz::register(&conn).unwrap();
    let mut stmt = conn
        .prepare(
            "SELECT DISTINCT batch FROM raw_signals WHERE archive_at IS NOT NULL ORDER BY batch",
        )
        .unwrap();
    stmt.query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

#[test]
fn two_finalizers_at_once_make_one_ledger() {
    let spool = tempfile::tempdir().unwrap();
    build_spool(spool.path());
    let (_ref_dir, want) = reference(spool.path());
    let dir = tempfile::tempdir().unwrap();
    copy_tree(spool.path(), dir.path());
    let spawn = || {
        std::process::Command::new(env!("CARGO_BIN_EXE_harnery"))
            .env("HARNERY_HOME", dir.path())
            .env("HARNERY_RECORDS", "off")
            .env("HARNERY_NOW", NOW)
            .env("HARNERY_CHUNK_BYTES", "1")
            .env_remove("HARNERY_FAILPOINTS")
            .arg("finalize")
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (a, b) = (spawn(), spawn());
    assert!(a.wait_with_output().unwrap().status.success());
    assert!(b.wait_with_output().unwrap().status.success());
    same_rows(&ledger_rows(dir.path()), &want, "rerun");
}

#[test]
fn a_durability_failure_stops_the_run_and_the_next_run_starts_clean() {
    let spool = tempfile::tempdir().unwrap();
    build_spool(spool.path());
    let (_ref_dir, want) = reference(spool.path());
    let dir = tempfile::tempdir().unwrap();
    copy_tree(spool.path(), dir.path());
    let failed = finalize_in(dir.path(), Some("fsync-error"));
    assert_eq!(failed.status.code(), Some(2));
    assert!(
        stderr(&failed).contains("durability failure"),
        "{}",
        stderr(&failed)
    );
    let rerun = finalize_in(dir.path(), None);
    assert!(rerun.status.success(), "{}", stderr(&rerun));
    same_rows(&ledger_rows(dir.path()), &want, "rerun");
}

#[test]
fn a_record_spooled_twice_is_drained_once() {
    let spool = tempfile::tempdir().unwrap();
    feed_fixture(spool.path(), "claude-code", "basic");
    let (_ref_dir, want) = reference(spool.path());
    let dir = tempfile::tempdir().unwrap();
    copy_tree(spool.path(), dir.path());
    // A fallback copy of every record, as a writer leaves after a failed
    // segment sync: the same envelope and payload in a second file.
    let session = std::fs::read_dir(dir.path().join("spool/intake/claude-code"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    std::fs::copy(
        session.join("active.seg"),
        session.join("fallback-00000000000000000001-1-0.rec"),
    )
    .unwrap();
    let out = finalize_in(dir.path(), None);
    assert!(out.status.success(), "{}", stderr(&out));
    same_rows(&ledger_rows(dir.path()), &want, "duplicate copy");
    assert_eq!(leftovers(dir.path()), Vec::<String>::new());
}
