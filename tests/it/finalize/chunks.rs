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

/// Copilot hooks of one session in four spool directories, one file each:
/// the parent's own, two other sessions', and a subagent's, whose hooks
/// name the subagent's id and belong to the parent (`parentAgentId`).
fn spool_a_subagent_after_other_sessions(home: &Path) {
    use harnery::home::Home;
    use harnery::spool::{Signal, SpoolWriter, WriterOptions};
    let writer = SpoolWriter::with_options(
        Home::at(home),
        WriterOptions {
            sync: false,
            ..WriterOptions::default()
        },
    );
    let mut at = 1_796_000_000_000_000_000_i64;
    let mut session = |sid: &str, hooks: &[(&str, String)]| {
        let signals: Vec<Signal> = hooks
            .iter()
            .map(|(event, text)| {
                at += 1_000_000;
                let mut s = Signal::new("copilot", Some(event), Some(sid), text.as_bytes());
                s.received_ns = at;
                s.clock = harnery::clock::ClockSample::default();
                s
            })
            .collect();
        writer.append_batch(&signals).unwrap();
    };
    let parent = "a-parent";
    let tool = |sid: &str, n: u32| {
        format!(
            r#"{{"sessionId":"{sid}","agentId":"z-agent","parentAgentId":"{parent}","timestamp":{n},"toolName":"bash","toolArgs":"{{\"command\":\"ls {n}\"}}"}}"#
        )
    };
    let opening = |sid: &str, prompt: &str| {
        vec![
            (
                "sessionStart",
                format!(r#"{{"sessionId":"{sid}","timestamp":1,"source":"new"}}"#),
            ),
            (
                "userPromptSubmitted",
                format!(r#"{{"sessionId":"{sid}","timestamp":2,"prompt":"{prompt}"}}"#),
            ),
        ]
    };
    let mut hooks = opening(parent, "go");
    hooks.push((
        "subagentStart",
        format!(
            r#"{{"sessionId":"{parent}","timestamp":3,"agentId":"z-agent","parentAgentId":"{parent}"}}"#
        ),
    ));
    session(parent, &hooks);
    for other in ["m-one", "m-two"] {
        session(other, &opening(other, "hi"));
    }
    session(
        "z-agent",
        &[
            ("preToolUse", tool("z-agent", 4)),
            ("postToolUse", tool("z-agent", 5)),
            ("preToolUse", tool("z-agent", 6)),
        ],
    );
}

/// Every event, by session and offset (chunks change the chain's order of
/// sessions, never a session's events).
fn events_by_session(home: &Path) -> Vec<(String, i64, String, String)> {
    let conn = open_ledger(home);
    let mut stmt = conn
        .prepare("SELECT session_id, offset, id, json FROM events ORDER BY session_id, offset")
        .unwrap();
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

#[test]
fn a_session_that_comes_back_chunks_later_goes_on_from_its_saved_state() {
    // One file a chunk: the parent's producer is three chunks old when the
    // subagent's file brings it back, so the drain goes on from the state
    // its first chunk saved, not from a parsed producer it kept.
    let chunked = tempfile::tempdir().unwrap();
    spool_a_subagent_after_other_sessions(chunked.path());
    let out = harnery(chunked.path())
        .env("HARNERY_CHUNK_BYTES", "1")
        .args(["finalize", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["batches_applied"], 4, "{summary}");

    let whole = tempfile::tempdir().unwrap();
    spool_a_subagent_after_other_sessions(whole.path());
    let out = run(whole.path(), &["finalize", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["batches_applied"], 1, "{summary}");

    let events = events_by_session(chunked.path());
    let parents = events.iter().filter(|e| e.0 == "a-parent").count();
    assert!(
        parents >= 6,
        "the subagent's hooks are the parent's: {events:#?}"
    );
    assert!(events.iter().all(|e| e.0 != "z-agent"), "{events:#?}");
    assert_eq!(events, events_by_session(whole.path()));
    for cmd in ["validate", "verify"] {
        let out = run(chunked.path(), &[cmd]);
        assert!(out.status.success(), "{cmd}: {}", stderr(&out));
    }
}
