#![cfg(feature = "failpoints")]
//! A drain keeps its WAL bounded: past a number of frames, the appending
//! thread lets a checkpoint catch up, and SQLite writes the WAL from its
//! start again. Without that the WAL grows to the size of everything the
//! drain appends. Either way the ledger holds the same events.

use crate::common;

use std::path::Path;

use common::*;

const SESSIONS: usize = 256;

/// Claude Code sessions made from the `basic` fixture (nine signals), each
/// with its own session id, written with the in-process spool writer.
fn write_spool(home: &Path) {
    spool_sessions(
        home,
        "wal",
        SESSIONS,
        &basic_hook_lines(),
        1_796_000_000_000_000_000,
    );
}

/// Finalize a fresh spool while this process holds a connection to the
/// ledger, so the WAL outlives the run and its size shows the most it ever
/// held (without compaction, which would write to the WAL after the drain
/// and have the job empty it at the end). `Some(limit)`: the WAL restarts past `limit` frames, checkpoints
/// lag behind the appending thread (as they do when batches are large;
/// with these small ones they would often catch up and let the WAL start
/// over by chance). `None`: the connection holds a read transaction from
/// before the drain, so nothing can be checkpointed and the WAL ends up
/// holding every page the drain wrote. Returns that size and the rows.
fn drain(limit: Option<u64>) -> (u64, Vec<(String, String)>) {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    // An empty finalize creates the ledger to connect to.
    let out = run(home, &["finalize", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let watcher = rusqlite::Connection::open(home.join("ledgers/v2/ledger.sqlite")).unwrap();
    harnery::ledger::eventz::register(&watcher).unwrap();
    if limit.is_none() {
        watcher.execute_batch("BEGIN").unwrap();
    }
    watcher
        .query_row("SELECT count(*) FROM events", [], |r| r.get::<_, i64>(0))
        .unwrap();
    write_spool(home);
    let mut cmd = harnery(home);
    cmd.env("HARNERY_CHUNK_BYTES", "1");
    match limit {
        Some(limit) => cmd
            .env("HARNERY_WAL_RESTART_FRAMES", limit.to_string())
            .env("HARNERY_FAILPOINTS", "slow-checkpoint"),
        None => cmd.env("HARNERY_WAL_RESTART_FRAMES", u64::MAX.to_string()),
    };
    let out = cmd
        .args(["finalize", "--json", "--no-compact"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let wal = std::fs::metadata(home.join("ledgers/v2/ledger.sqlite-wal"))
        .unwrap()
        .len();
    drop(watcher);
    for cmd in ["validate", "verify"] {
        let out = run(home, &[cmd]);
        assert!(out.status.success(), "{cmd}: {}", stderr(&out));
    }
    let rows = ledger_rows(home)
        .into_iter()
        .map(|(id, json, _)| (id, json))
        .collect();
    (wal, rows)
}

#[test]
fn the_wal_starts_over_instead_of_growing_with_the_drain() {
    let (bounded, rows) = drain(Some(8));
    let (everything, all_rows) = drain(None);
    eprintln!("WAL of {bounded} bytes with restarts; the drain wrote {everything}");
    assert!(rows.len() >= SESSIONS * 9, "{} events", rows.len());
    // Restarting the WAL changes nothing in what is appended.
    assert!(rows == all_rows, "the limit changed what was appended");
    // With restarts, the WAL holds the limit plus the batch whose commit
    // passed it (the appending thread reads the WAL's size after each
    // commit, and waits for the restart before the next): a small
    // fraction of all the drain wrote (about 1/90 here; 1/8 to 1/11 when
    // the size was learned only from the checkpoints, every 16th batch).
    assert!(
        bounded * 32 < everything,
        "a WAL of {bounded} bytes, of {everything} written"
    );
}

/// A reader that holds a snapshot for the whole drain keeps every frame
/// in the WAL: each restart gives up after its short wait, the next is
/// tried once the WAL has doubled, and the drain still appends everything.
#[test]
fn a_reader_that_holds_on_does_not_stop_the_drain() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    let out = run(home, &["finalize", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let reader = rusqlite::Connection::open(home.join("ledgers/v2/ledger.sqlite")).unwrap();
    harnery::ledger::eventz::register(&reader).unwrap();
    reader.execute_batch("BEGIN").unwrap();
    reader
        .query_row("SELECT count(*) FROM events", [], |r| r.get::<_, i64>(0))
        .unwrap();
    write_spool(home);
    let out = harnery(home)
        .env("HARNERY_CHUNK_BYTES", "1")
        .env("HARNERY_WAL_RESTART_FRAMES", "256")
        .args(["finalize", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        summary["signals_drained"],
        (SESSIONS * 9) as u64,
        "{summary}"
    );
    drop(reader);
    for cmd in ["validate", "verify"] {
        let out = run(home, &[cmd]);
        assert!(out.status.success(), "{cmd}: {}", stderr(&out));
    }
}
