#![cfg(feature = "failpoints")]
//! A drain cuts its chunks by what they hold in memory: each file's bytes
//! and the producer state its session brings in (loaded, applied to and
//! stored again by the chunk). A thousand sessions with one small signal
//! each were chunks of 64 files with 64 states of ~94 KiB in them, the
//! largest memory a finalize held.

use crate::common;

use std::path::Path;

use common::*;

const SESSIONS: usize = 8;

fn spool_bytes(dir: &Path) -> u64 {
    let mut total = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let meta = entry.metadata().unwrap();
        total += if meta.is_dir() {
            spool_bytes(&entry.path())
        } else if entry.file_name().to_string_lossy().ends_with(".seg") {
            meta.len()
        } else {
            0
        };
    }
    total
}

#[test]
fn a_chunk_counts_the_producer_states_its_sessions_bring_in() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    let lines = basic_hook_lines();
    let first = &lines[..lines.len() - 1];
    spool_sessions(home, "chunk", SESSIONS, first, 1_796_000_000_000_000_000);
    let out = run(home, &["finalize", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let conn = rusqlite::Connection::open(home.join("ledgers/v2/ledger.sqlite")).unwrap();
    harnery::ledger::eventz::register(&conn).unwrap();
    let states: i64 = conn
        .query_row(
            "SELECT sum(octet_length(state)) FROM producer_state",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert!(states > 0);

    // One more signal a session: its files alone fit one chunk under the
    // limit, with the sessions' states they do not.
    let last = &lines[lines.len() - 1..];
    spool_sessions(home, "chunk", SESSIONS, last, 1_796_000_100_000_000_000);
    let files = spool_bytes(&home.join("spool/intake"));
    let out = harnery(home)
        .env("HARNERY_CHUNK_BYTES", (files + 1).to_string())
        .args(["finalize", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["signals_drained"], SESSIONS as u64, "{summary}");
    let batches = summary["batches_applied"].as_u64().unwrap();
    assert!(
        batches > 1,
        "{files} bytes of files and {states} of states in {batches} batch(es)"
    );
    for cmd in ["validate", "verify"] {
        let out = run(home, &[cmd]);
        assert!(out.status.success(), "{cmd}: {}", stderr(&out));
    }
}
