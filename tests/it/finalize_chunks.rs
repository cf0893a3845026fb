#![cfg(feature = "failpoints")]
//! A drain cuts its chunks by what they hold in memory: each file's bytes
//! and the producer state its session brings in (loaded, applied to and
//! stored again by the chunk). A thousand sessions with one small signal
//! each were chunks of 64 files with 64 states of ~94 KiB in them, the
//! largest memory a finalize held.

use crate::common;

use std::path::Path;

use common::*;
use harnery::clock::ClockSample;
use harnery::home::Home;
use harnery::spool::{Signal, SpoolWriter, WriterOptions};

const SESSIONS: usize = 8;

/// Spool `lines` (hook payloads of the `basic` fixture, its session id
/// replaced) for each of the sessions, received from `at` on.
fn spool(home: &Path, lines: &[(String, String)], at: i64) {
    let writer = SpoolWriter::with_options(
        Home::at(home),
        WriterOptions {
            sync: false,
            ..WriterOptions::default()
        },
    );
    for s in 0..SESSIONS {
        let sid = format!("chunk-{s:04}-0000-4000-8000-000000000000");
        let texts: Vec<String> = lines
            .iter()
            .map(|(_, t)| t.replace("SESSION", &sid))
            .collect();
        let signals: Vec<Signal> = lines
            .iter()
            .zip(&texts)
            .enumerate()
            .map(|(i, ((event, _), text))| {
                let mut sig = Signal::new("claude-code", Some(event), Some(&sid), text.as_bytes());
                sig.received_ns = at + (s * 1000 + i) as i64 * 1_000;
                sig.clock = ClockSample::default();
                sig
            })
            .collect();
        writer.append_batch(&signals).unwrap();
    }
}

fn basic_lines() -> Vec<(String, String)> {
    let fixture = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/claude-code/basic/hooks.jsonl"),
    )
    .unwrap();
    fixture
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            let event = v["hook_event_name"].as_str().unwrap().to_string();
            let sid = v["session_id"].as_str().unwrap().to_string();
            (event, l.replace(&sid, "SESSION"))
        })
        .collect()
}

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
    let lines = basic_lines();
    spool(home, &lines[..lines.len() - 1], 1_796_000_000_000_000_000);
    let out = run(home, &["finalize", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let states: i64 = rusqlite::Connection::open(home.join("ledgers/v2/ledger.sqlite"))
        .unwrap()
        .query_row(
            "SELECT sum(octet_length(state)) FROM producer_state",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert!(states > 0);

    // One more signal a session: its files alone fit one chunk under the
    // limit, with the sessions' states they do not.
    spool(home, &lines[lines.len() - 1..], 1_796_000_100_000_000_000);
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
