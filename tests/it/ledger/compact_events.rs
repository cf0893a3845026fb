#![cfg(feature = "failpoints")]
//! Compact event storage (`ledger::eventz`): a new ledger is compact from
//! its first row; a ledger in the plain form an older build wrote reads as
//! it is and is converted only by `harnery archive compact-events`, which a
//! SIGKILL at any moment leaves verifying with the same export, a rerun
//! finishing the job; `verify` finds a flipped byte anywhere in a stored
//! body.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::common::*;
use harnery::ledger::PLAIN_EVENTS_ENV;

const FIXTURES: &[(&str, &str)] = &[
    ("claude-code", "basic"),
    ("claude-code", "tool-failure"),
    ("claude-code", "parallel"),
    ("claude-code", "interactive"),
    ("copilot", "basic-shell-anthropic"),
];

pub(super) fn db(home: &Path) -> std::path::PathBuf {
    home.join("ledgers/v2/ledger.sqlite")
}

fn is_compact(home: &Path) -> bool {
    let conn = rusqlite::Connection::open(db(home)).unwrap();
    conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM sqlite_schema WHERE name = 'event_store')",
        [],
        |r| r.get(0),
    )
    .unwrap()
}

/// A home holding the fixtures, finalized by a build writing `plain` or
/// compact events.
fn home_with_events(home: &Path, plain: bool) {
    for (agent, scenario) in FIXTURES {
        feed_fixture(home, agent, scenario);
    }
    let mut cmd = harnery(home);
    if plain {
        cmd.env(PLAIN_EVENTS_ENV, "1");
    }
    let out = cmd.args(["finalize", "--no-compact"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
}

/// Rewrite the ledger's rows as a writer before blocks left them: each
/// row's text a frame of its own, no block; the texts and the chain as
/// they were. (The writer now stores a ledger's events in blocks; rows
/// an older one wrote are packed by the compaction pass.)
pub(super) fn as_an_older_writer_left(home: &Path) {
    open_ledger(home)
        .execute_batch(
            "UPDATE event_store SET body = event_body(event_json(body)); DELETE FROM event_blocks;",
        )
        .unwrap();
}

/// `verify`'s verdict and the whole ledger's jsonl export.
pub(super) fn verified_export(home: &Path, when: &str) -> String {
    let v = run(home, &["verify"]);
    assert!(v.status.success(), "{when}: {}{}", stdout(&v), stderr(&v));
    let e = run(home, &["export", "--format", "jsonl"]);
    assert!(e.status.success(), "{when}: {}", stderr(&e));
    stdout(&e)
}

/// Delays below `span_us` microseconds, drawn from `seed` (the same each
/// run, so a failing trial can be run again).
fn random_delays(mut seed: u64, span_us: u64) -> impl Iterator<Item = Duration> {
    std::iter::repeat_with(move || {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        Duration::from_micros((seed >> 33) % span_us)
    })
}

/// `harnery <args>` on `home` (records off), SIGKILLed after `delay`:
/// whether it ended killed rather than by its own exit.
fn killed_after(home: &Path, args: &[&str], delay: Duration) -> bool {
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("harnery"))
        .env("HARNERY_HOME", home)
        .env("HARNERY_NOW", NOW)
        .env("HARNERY_RECORDS", "off")
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(delay);
    let _ = child.kill();
    !child.wait().unwrap().success()
}

/// `harnery archive compact-events` on `trials` copies of `template` (in
/// `dir`), each SIGKILLed after a delay drawn from `seed` over the time an
/// uninterrupted run takes here (and a little after), then run again to
/// its end: `same` checks each copy after the kill and after the rerun,
/// `compact` that the rerun converted it. At least one trial must have
/// been killed mid-run.
pub(super) fn conversions_killed(
    dir: &Path,
    template: &Path,
    seed: u64,
    trials: usize,
    compact: fn(&Path) -> bool,
    same: impl Fn(&Path, &str),
) {
    let probe = dir.join("probe");
    copy_tree(template, &probe);
    let start = Instant::now();
    assert!(run(&probe, &["archive", "compact-events"]).status.success());
    let span = start.elapsed().as_micros().max(1_000) as u64 * 5 / 4;
    let mut killed = 0;
    for (trial, delay) in random_delays(seed, span).take(trials).enumerate() {
        let home = dir.join(format!("trial-{trial}"));
        copy_tree(template, &home);
        killed += usize::from(killed_after(&home, &["archive", "compact-events"], delay));
        let when = format!("trial {trial}, killed after {delay:?}");
        same(&home, &when);
        let rerun = run(&home, &["archive", "compact-events"]);
        assert!(rerun.status.success(), "{when}: {}", stderr(&rerun));
        assert!(compact(&home), "{when}");
        same(&home, &format!("{when}: after the rerun"));
    }
    assert!(killed > 0, "no trial was killed mid-run");
}

#[test]
fn a_new_ledger_is_compact_and_reads_the_same_as_a_plain_one() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    home_with_events(a.path(), true);
    home_with_events(b.path(), false);
    assert!(!is_compact(a.path()) && is_compact(b.path()));
    // The same rows, but their ids and times come from each run: compare
    // what the chain and the reports see, by count and by type.
    let (plain, compact) = (
        verified_export(a.path(), "plain"),
        verified_export(b.path(), "compact"),
    );
    let types = |text: &str| {
        let mut t: Vec<String> = text
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["type"].to_string())
            .collect();
        t.sort();
        t
    };
    assert!(!plain.is_empty());
    assert_eq!(types(&plain), types(&compact));
    for args in [&["sessions", "--json"][..], &["usage", "--json"]] {
        let (x, y) = (run(a.path(), args), run(b.path(), args));
        assert!(x.status.success() && y.status.success(), "{args:?}");
    }
}

#[test]
fn an_old_ledger_stays_plain_until_the_command_converts_it() {
    let t = tempfile::tempdir().unwrap();
    let home = t.path();
    home_with_events(home, true);
    let before = verified_export(home, "before");
    // Reading and finalizing never convert it.
    feed_fixture(home, "claude-code", "hook-events");
    let out = run(home, &["finalize"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!is_compact(home), "finalize converted silently");
    let grown = verified_export(home, "grown");
    assert!(grown.starts_with(&before));
    let out = run(home, &["archive", "compact-events", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let done: serde_json::Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(done["rows"].as_u64(), Some(grown.lines().count() as u64));
    assert!(
        done["bytes_after"].as_u64() < done["bytes_before"].as_u64(),
        "{done}"
    );
    assert!(is_compact(home));
    assert_eq!(verified_export(home, "converted"), grown);
    // A rerun has nothing to move; new rows are written compact.
    let again = run(home, &["archive", "compact-events", "--json"]);
    let again: serde_json::Value = serde_json::from_str(stdout(&again).trim()).unwrap();
    assert_eq!(again["rows"].as_u64(), Some(0));
    feed_fixture(home, "claude-code", "file-tools");
    assert!(run(home, &["finalize"]).status.success());
    let after = verified_export(home, "appended");
    assert!(after.starts_with(&grown) && after.len() > grown.len());
}

#[test]
fn a_kill_at_any_moment_of_the_conversion_leaves_a_ledger_that_verifies() {
    let t = tempfile::tempdir().unwrap();
    let template = t.path().join("template");
    std::fs::create_dir_all(&template).unwrap();
    home_with_events(&template, true);
    let want = verified_export(&template, "template");
    conversions_killed(
        t.path(),
        &template,
        0x5151_e0e0,
        12,
        is_compact,
        |home, when| {
            assert_eq!(verified_export(home, when), want, "{when}");
        },
    );
}

#[test]
fn verify_finds_a_flipped_byte_anywhere_in_a_stored_body() {
    let t = tempfile::tempdir().unwrap();
    let home = t.path();
    home_with_events(home, false);
    // A place in a block, as the writer stores a row, then a frame of
    // its own, as a row an older writer left.
    flip_every_byte_of_the_longest_body(home);
    as_an_older_writer_left(home);
    flip_every_byte_of_the_longest_body(home);
}

fn flip_every_byte_of_the_longest_body(home: &Path) {
    let conn = rusqlite::Connection::open(db(home)).unwrap();
    let (seq, body): (i64, Vec<u8>) = conn
        .query_row(
            "SELECT seq, body FROM event_store ORDER BY length(body) DESC LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    drop(conn);
    // Every byte of the header and the frame's first ones, then a spread.
    let mut at: Vec<usize> = (0..body.len().min(24)).collect();
    at.extend((24..body.len()).step_by(7));
    for i in at {
        let mut bad = body.clone();
        bad[i] ^= 0x20;
        let conn = rusqlite::Connection::open(db(home)).unwrap();
        conn.execute(
            "UPDATE event_store SET body = ?1 WHERE seq = ?2",
            rusqlite::params![bad, seq],
        )
        .unwrap();
        drop(conn);
        let v = run(home, &["verify"]);
        assert!(
            !v.status.success(),
            "byte {i} of row {seq} flipped, verify passed"
        );
        assert!(
            stdout(&v).contains(&seq.to_string()) || stderr(&v).contains(&seq.to_string()),
            "byte {i}: the row is named: {}{}",
            stdout(&v),
            stderr(&v)
        );
    }
    let conn = rusqlite::Connection::open(db(home)).unwrap();
    conn.execute(
        "UPDATE event_store SET body = ?1 WHERE seq = ?2",
        rusqlite::params![body, seq],
    )
    .unwrap();
    drop(conn);
    verified_export(home, "restored");
}

/// Each stored body's format byte (1: a frame of its own; 2: a place in
/// a block).
fn formats(home: &Path) -> Vec<u8> {
    let conn = rusqlite::Connection::open(db(home)).unwrap();
    let mut stmt = conn
        .prepare("SELECT substr(body, 1, 1) FROM event_store ORDER BY seq")
        .unwrap();
    stmt.query_map([], |r| r.get::<_, Vec<u8>>(0).map(|b| b[0]))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

#[test]
fn events_are_stored_in_blocks_and_verify_finds_a_flipped_byte_in_one() {
    let t = tempfile::tempdir().unwrap();
    let home = t.path();
    home_with_events(home, false);
    // The writer packs, even without the compaction pass.
    assert!(formats(home).iter().all(|&f| f == 2));
    let written = verified_export(home, "written");
    as_an_older_writer_left(home);
    assert!(formats(home).iter().all(|&f| f == 1));
    let before = verified_export(home, "before");
    assert_eq!(before, written);
    // Nothing new to drain: the compaction pass alone runs, and packs the
    // rows an older writer left.
    let out = run(home, &["finalize"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(formats(home).iter().all(|&f| f == 2), "{:?}", formats(home));
    assert_eq!(verified_export(home, "packed"), before);
    // New rows are packed by the run that wrote them.
    feed_fixture(home, "claude-code", "file-tools");
    assert!(run(home, &["finalize"]).status.success());
    assert!(formats(home).iter().all(|&f| f == 2));
    let grown = verified_export(home, "grown");
    assert!(grown.starts_with(&before) && grown.len() > before.len());

    let conn = rusqlite::Connection::open(db(home)).unwrap();
    let (block, body): (i64, Vec<u8>) = conn
        .query_row(
            "SELECT id, body FROM event_blocks ORDER BY length(body) DESC LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    let held: Vec<String> = {
        let mut stmt = conn
            .prepare("SELECT seq FROM event_store WHERE substr(body, 2, 8) = ?1")
            .unwrap();
        stmt.query_map([&block.to_le_bytes()[..]], |r| r.get::<_, i64>(0))
            .unwrap()
            .map(|s| s.unwrap().to_string())
            .collect()
    };
    drop(conn);
    assert!(!held.is_empty());
    let mut at: Vec<usize> = (0..body.len().min(24)).collect();
    at.extend((24..body.len()).step_by(body.len() / 16 + 1));
    for i in at {
        let mut bad = body.clone();
        bad[i] ^= 0x20;
        let conn = rusqlite::Connection::open(db(home)).unwrap();
        conn.execute(
            "UPDATE event_blocks SET body = ?1 WHERE id = ?2",
            rusqlite::params![bad, block],
        )
        .unwrap();
        drop(conn);
        let v = run(home, &["verify"]);
        let said = format!("{}{}", stdout(&v), stderr(&v));
        assert!(
            !v.status.success(),
            "byte {i} of block {block} flipped, verify passed"
        );
        assert!(
            held.iter().any(|seq| said.contains(seq.as_str())),
            "byte {i}: a row of the block is named: {said}"
        );
    }
    let conn = rusqlite::Connection::open(db(home)).unwrap();
    conn.execute(
        "UPDATE event_blocks SET body = ?1 WHERE id = ?2",
        rusqlite::params![body, block],
    )
    .unwrap();
    drop(conn);
    assert_eq!(verified_export(home, "restored"), grown);
}

#[test]
fn a_compact_ledger_without_blocks_is_packed_only_by_the_command() {
    let t = tempfile::tempdir().unwrap();
    let home = t.path();
    home_with_events(home, false);
    // What the build before blocks wrote: compact, no blocks' tables.
    as_an_older_writer_left(home);
    let conn = rusqlite::Connection::open(db(home)).unwrap();
    conn.execute_batch("DROP TABLE event_blocks; DROP TABLE event_packed;")
        .unwrap();
    drop(conn);
    let before = verified_export(home, "before");
    feed_fixture(home, "claude-code", "hook-events");
    assert!(run(home, &["finalize"]).status.success());
    assert!(
        formats(home).iter().all(|&f| f == 1),
        "finalize packed silently"
    );
    let grown = verified_export(home, "grown");
    assert!(grown.starts_with(&before));
    let out = run(home, &["archive", "compact-events", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let done: serde_json::Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(done["rows"].as_u64(), Some(0), "{done}");
    assert_eq!(done["packed"].as_u64(), Some(grown.lines().count() as u64));
    assert!(formats(home).iter().all(|&f| f == 2));
    assert_eq!(verified_export(home, "packed"), grown);
    let again = run(home, &["archive", "compact-events", "--json"]);
    let again: serde_json::Value = serde_json::from_str(stdout(&again).trim()).unwrap();
    assert_eq!(again["packed"].as_u64(), Some(0));
}

#[test]
fn a_kill_at_any_moment_of_finalizes_compaction_leaves_a_ledger_that_verifies() {
    let t = tempfile::tempdir().unwrap();
    let template = t.path().join("template");
    std::fs::create_dir_all(&template).unwrap();
    // Finalized without its compaction pass, its rows as an older writer
    // left them: the raw archive uncompressed and no event packed, all of
    // it for the next run's pass to do.
    home_with_events(&template, false);
    as_an_older_writer_left(&template);
    let want = verified_export(&template, "template");
    let probe = t.path().join("probe");
    copy_tree(&template, &probe);
    let start = Instant::now();
    assert!(run(&probe, &["finalize"]).status.success());
    assert!(formats(&probe).iter().all(|&f| f == 2));
    let span = start.elapsed().as_micros().max(1_000) as u64 * 5 / 4;
    let (mut killed, mut halfway) = (0, 0);
    for (trial, delay) in random_delays(0x5151_0a0b, span).take(12).enumerate() {
        let home = t.path().join(format!("trial-{trial}"));
        copy_tree(&template, &home);
        killed += usize::from(killed_after(&home, &["finalize"], delay));
        let when = format!("trial {trial}, killed after {delay:?}");
        let f = formats(&home);
        halfway += usize::from(f.contains(&1) && f.contains(&2));
        assert_eq!(verified_export(&home, &when), want, "{when}");
        let rerun = run(&home, &["finalize"]);
        assert!(rerun.status.success(), "{when}: {}", stderr(&rerun));
        assert!(formats(&home).iter().all(|&f| f == 2), "{when}");
        assert_eq!(
            verified_export(&home, &when),
            want,
            "{when}: after the rerun"
        );
    }
    assert!(killed > 0, "no trial was killed mid-run");
    eprintln!("{killed} of 12 killed, {halfway} with rows packed and rows not");
}
