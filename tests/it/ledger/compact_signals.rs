#![cfg(feature = "failpoints")]
//! Compact raw signal rows (`ledger::signalz`): a new ledger keeps them in
//! `raw_signal_store` from its first row; a ledger the build before wrote
//! (events compact, the plain `raw_signals` table) reads as it is and is
//! converted only by `harnery archive compact-events`, which a SIGKILL at
//! any moment leaves verifying with the same rows, a rerun finishing the
//! job; `verify` names a row whose stored session or batch number points
//! nowhere.

use std::path::Path;

use super::compact_events::{conversions_killed, db, verified_export};
use crate::common::*;
use harnery::ledger::PLAIN_SIGNALS_ENV;

/// Finalize what is spooled in `home`, by a build writing plain signal
/// rows when `plain`.
fn finalize(home: &Path, plain: bool) {
    let mut cmd = harnery(home);
    if plain {
        cmd.env(PLAIN_SIGNALS_ENV, "1");
    }
    let out = cmd.args(["finalize", "--no-compact"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
}

fn home_with_signals(home: &Path, plain: bool) {
    for (agent, scenario) in [
        ("claude-code", "basic"),
        ("claude-code", "parallel"),
        ("copilot", "basic-shell-anthropic"),
    ] {
        feed_fixture(home, agent, scenario);
    }
    finalize(home, plain);
}

fn is_compact(home: &Path) -> bool {
    let conn = rusqlite::Connection::open(db(home)).unwrap();
    conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM sqlite_schema WHERE name = 'raw_signal_store')",
        [],
        |r| r.get(0),
    )
    .unwrap()
}

/// Every raw signal row as SQLite quotes its columns (so a text and a
/// blob of the same bytes differ), read with plain SQL, oldest first.
fn signal_rows(home: &Path) -> Vec<String> {
    let conn = rusqlite::Connection::open(db(home)).unwrap();
    let mut stmt = conn
        .prepare(
            "SELECT quote(record_digest) || '|' || quote(adapter) || '|' || quote(session_key) || '|' \
             || quote(event_name) || '|' || quote(received_unix_ns) || '|' || quote(env) || '|' \
             || quote(archive_at) || '|' || quote(envelope) || '|' || quote(payload) || '|' \
             || quote(event_ids) || '|' || quote(duplicate_of) || '|' || quote(batch) \
             FROM raw_signals ORDER BY received_unix_ns, record_digest",
        )
        .unwrap();
    stmt.query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

fn compact_events(home: &Path) -> serde_json::Value {
    let out = run(home, &["archive", "compact-events", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    serde_json::from_str(stdout(&out).trim()).unwrap()
}

#[test]
fn a_new_ledger_keeps_its_signal_rows_packed() {
    let t = tempfile::tempdir().unwrap();
    home_with_signals(t.path(), false);
    assert!(is_compact(t.path()));
    let conn = rusqlite::Connection::open(db(t.path())).unwrap();
    let (rows, packed): (i64, i64) = conn
        .query_row(
            "SELECT count(*), sum(typeof(digest) = 'blob' AND length(digest) = 32 \
             AND typeof(event_ids) = 'blob') FROM raw_signal_store",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert!(rows > 0);
    assert_eq!(packed, rows);
    verified_export(t.path(), "new");
}

#[test]
fn plain_signal_rows_stay_so_until_the_command_converts_them() {
    let t = tempfile::tempdir().unwrap();
    let home = t.path();
    home_with_signals(home, true);
    assert!(!is_compact(home));
    // Reading and finalizing never convert them.
    feed_fixture(home, "claude-code", "hook-events");
    let out = run(home, &["finalize"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!is_compact(home), "finalize converted silently");
    let (rows, export) = (signal_rows(home), verified_export(home, "plain"));
    let done = compact_events(home);
    assert_eq!(done["rows"].as_u64(), Some(0), "{done}");
    assert_eq!(done["signal_rows"].as_u64(), Some(rows.len() as u64));
    assert!(is_compact(home));
    assert_eq!(signal_rows(home), rows);
    assert_eq!(verified_export(home, "converted"), export);
    // A rerun has nothing to move; new rows go to the store.
    assert_eq!(compact_events(home)["signal_rows"].as_u64(), Some(0));
    feed_fixture(home, "claude-code", "file-tools");
    finalize(home, false);
    let grown = signal_rows(home);
    assert!(grown.len() > rows.len() && grown.starts_with(&rows));
    verified_export(home, "grown");
}

#[test]
fn a_kill_at_any_moment_of_the_conversion_leaves_the_same_signal_rows() {
    let t = tempfile::tempdir().unwrap();
    let template = t.path().join("template");
    std::fs::create_dir_all(&template).unwrap();
    home_with_signals(&template, true);
    let (want_rows, want) = (
        signal_rows(&template),
        verified_export(&template, "template"),
    );
    conversions_killed(
        t.path(),
        &template,
        0x5167_a15e,
        10,
        is_compact,
        |home, when| {
            assert_eq!(signal_rows(home), want_rows, "{when}");
            assert_eq!(verified_export(home, when), want, "{when}");
        },
    );
}

#[test]
fn verify_names_a_signal_row_whose_stored_numbers_point_nowhere() {
    let t = tempfile::tempdir().unwrap();
    let home = t.path();
    home_with_signals(home, false);
    let rows = signal_rows(home);
    for column in ["session_k", "batch_k"] {
        let conn = rusqlite::Connection::open(db(home)).unwrap();
        let (ns, digest, was): (i64, String, i64) = conn
            .query_row(
                &format!(
                    "SELECT received_unix_ns, lower(hex(digest)), {column} FROM raw_signal_store \
                     WHERE archive_at IS NOT NULL ORDER BY received_unix_ns LIMIT 1 OFFSET 3"
                ),
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .unwrap();
        let set = format!("UPDATE raw_signal_store SET {column} = ?1 WHERE received_unix_ns = ?2");
        conn.execute(&set, rusqlite::params![999_999, ns]).unwrap();
        let v = run(home, &["verify"]);
        let said = format!("{}{}", stdout(&v), stderr(&v));
        assert!(!v.status.success(), "{column} damaged, verify passed");
        assert!(said.contains(&digest), "{column}: the row is named: {said}");
        conn.execute(&set, rusqlite::params![was, ns]).unwrap();
    }
    assert_eq!(signal_rows(home), rows);
    verified_export(home, "restored");
}
