//! OTLP export reads each event's trace entry (what finalize derived from it
//! as it wrote it) instead of parsing its text. The trace must be the one
//! the events give: byte for byte what the export builds from the stored
//! text, on every corpus scenario of both agents, an agent's own record,
//! and the rows that need their text (commands, usage, failures, recovery).
//! A ledger an older build wrote gets its trace rows from the migration,
//! the same rows finalize writes, and `validate` checks each one.

use crate::common;

use std::path::Path;

use common::*;
use harnery::contract::{
    CommandCompleted, CommandRequested, Observation, Outcome, Payload, ToolCompleted,
};

const CLAUDE: &[&str] = &[
    "basic",
    "compact",
    "hook-failures",
    "kill",
    "parallel",
    "permission-denied",
    "resume",
    "sigint",
    "subagent",
    "tool-failure",
];

const COPILOT: &[&str] = &[
    "basic-shell-openai",
    "hook-exit1-postToolUse",
    "interrupted-sigkill-1-killed",
    "interrupted-sigkill-2-resumed",
    "resume-1-first-run",
    "resume-2-resumed-run",
    "shell-nonzero-exit",
    "subagent-task",
    "tool-failure-view",
];

/// A session of the rows whose trace reads their text (a command, a failed
/// tool with its message) and of rows the trace rows must tell apart: a
/// tool whose duration is unknown, a last row that is derived.
fn rows_read_whole() -> Vec<harnery::contract::Event> {
    let s = session("s-whole");
    let command = event(
        &s,
        0,
        Payload::CommandRequested(CommandRequested {
            argv: vec!["cargo".into(), "test".into()],
            cwd: None,
            pid: Some(7),
        }),
    );
    let command_done = event(
        &s,
        1,
        Payload::CommandCompleted(CommandCompleted {
            requested_event_id: Some(command.id.clone()),
            outcome: Outcome::Failure,
            duration_ms: Observation::Observed(900),
            exit_code: Some(101),
            signal: None,
            recovery: None,
        }),
    );
    let failed = tool_request(&s, 2, "c1");
    let mut failed_done = tool_done(&s, 3, "c1", &failed.id);
    if let Payload::ToolCompleted(p) = &mut failed_done.payload {
        p.outcome = Outcome::Failure;
        p.error = Some("no such file".into());
    }
    let unknown = tool_request(&s, 4, "c2");
    let unknown_done = event(
        &s,
        5,
        Payload::ToolCompleted(ToolCompleted {
            tool_call_id: Some("c2".into()),
            tool_name: "Bash".into(),
            requested_event_id: None,
            outcome: Outcome::Success,
            duration_ms: Observation::Unknown("not_reported".into()),
            exit_code: None,
            error: None,
            content: None,
            recovery: None,
            paired_by: None,
        }),
    );
    // The turn is never seen to end, and its last row is not the agent's
    // own: its wall ends at the last native row.
    let mut ended = event(
        &s,
        6,
        Payload::SessionEnded(harnery::contract::SessionEnded {
            reason: Some("swept".into()),
        }),
    );
    ended.provenance.attestation = harnery::contract::Attestation::Derived;
    vec![
        command,
        command_done,
        failed,
        failed_done,
        unknown,
        unknown_done,
        ended,
    ]
}

/// A session of twenty commands: a chunk with more whole entries than an
/// entry has members.
fn many_commands() -> Vec<harnery::contract::Event> {
    let s = session("s-commands");
    let mut events = Vec::new();
    for i in 0..20 {
        let request = event(
            &s,
            2 * i,
            Payload::CommandRequested(CommandRequested {
                argv: vec![format!("step{i}")],
                cwd: None,
                pid: None,
            }),
        );
        let done = event(
            &s,
            2 * i + 1,
            Payload::CommandCompleted(CommandCompleted {
                requested_event_id: Some(request.id.clone()),
                outcome: Outcome::Success,
                duration_ms: Observation::Observed(5),
                exit_code: Some(0),
                signal: None,
                recovery: None,
            }),
        );
        events.extend([request, done]);
    }
    events
}

fn corpus_home(home: &Path) {
    for scenario in CLAUDE {
        feed_fixture(home, "claude-code", scenario);
    }
    for scenario in COPILOT {
        feed_fixture(home, "copilot", scenario);
    }
    inject(home, "b-whole", rows_read_whole());
    inject(home, "b-commands", many_commands());
    let out = run(home, &["finalize"]);
    assert!(out.status.success(), "{}", stderr(&out));
}

/// A home of `s-whole` (`rows_read_whole`) and `common::small_session`'s
/// `s-small`, finalized.
fn two_session_home() -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    inject(home.path(), "b-whole", rows_read_whole());
    inject(home.path(), "b-small", small_session("s-small"));
    assert!(run(home.path(), &["finalize"]).status.success());
    home
}

fn otlp(home: &Path) -> String {
    let out = run(home, &["export", "--format", "otlp"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    stdout(&out)
}

fn db(home: &Path) -> rusqlite::Connection {
    let conn = rusqlite::Connection::open(home.join("ledgers/v2/ledger.sqlite")).unwrap();
    harnery::ledger::eventz::register(&conn).unwrap();
    conn
}

/// Every trace entry, by session and offset, as text (chunks may be cut
/// differently by finalize and by the migration).
fn trace_entries(home: &Path) -> Vec<String> {
    let conn = db(home);
    let mut stmt = conn
        .prepare(
            "SELECT c.adapter || '/' || c.session_id || ' ' || e.value FROM trace_chunks c, json_each(c.entries) e \
             ORDER BY c.adapter, c.session_id, json_extract(e.value, '$[0]')",
        )
        .unwrap();
    stmt.query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

/// How many entries of each part, by part.
fn parts(home: &Path) -> Vec<(String, i64)> {
    let conn = db(home);
    let mut stmt = conn
        .prepare(
            "SELECT json_extract(e.value, '$[3]') AS part, count(*) FROM trace_chunks c, json_each(c.entries) e \
             GROUP BY part ORDER BY part",
        )
        .unwrap();
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

fn count(home: &Path, sql: &str) -> i64 {
    db(home).query_row(sql, [], |r| r.get(0)).unwrap()
}

#[test]
fn otlp_from_trace_rows_is_otlp_from_the_stored_text() {
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    corpus_home(home);
    // Every part is there, the rows read whole among them.
    let kinds: Vec<String> = parts(home).into_iter().map(|(p, _)| p).collect();
    assert_eq!(
        kinds,
        [
            "mark",
            "tool_completed",
            "tool_requested",
            "turn_completed",
            "turn_started",
            "whole"
        ]
    );
    let from_rows = otlp(home);
    assert!(from_rows.contains("exec cargo") && from_rows.contains("no such file"));
    assert_eq!(from_rows.matches("\"name\":\"exec step").count(), 20);
    assert!(run(home, &["validate"]).status.success());
    let written = trace_entries(home);

    // Without the table (its migration still recorded, as in an archive an
    // older build wrote and this one reads as it is), every row's text is
    // parsed: the same documents, byte for byte.
    db(home)
        .execute_batch("DROP VIEW trace_chunks; DROP TABLE trace_chunk_store;")
        .unwrap();
    assert_eq!(otlp(home), from_rows);

    // Without the migration's record too, a read still reads it as it is
    // (reads never migrate), and the next finalize fills the table: the
    // entries finalize wrote, and the same export.
    db(home)
        .execute_batch("DELETE FROM migrations WHERE name LIKE '%_trace_chunks'")
        .unwrap();
    assert_eq!(otlp(home), from_rows);
    assert!(run(home, &["finalize"]).status.success());
    assert_eq!(otlp(home), from_rows);
    assert_eq!(trace_entries(home), written);
    assert!(run(home, &["validate"]).status.success());
}

#[test]
fn otlp_from_trace_rows_with_the_agents_record() {
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    // Where Claude Code writes the `basic` session's transcript: only
    // that shape is followed.
    let transcript = home
        .join("claude/projects/-tmp-proj")
        .join("82655d0f-45cd-404f-9e4e-e90fea255247.jsonl");
    std::fs::create_dir_all(transcript.parent().unwrap()).unwrap();
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/records/claude-code/basic.jsonl"),
        &transcript,
    )
    .unwrap();
    let hooks = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/claude-code/basic/hooks.jsonl"),
    )
    .unwrap();
    for line in hooks.lines().filter(|l| !l.trim().is_empty()) {
        let mut payload: serde_json::Value = serde_json::from_str(line).unwrap();
        payload["transcript_path"] = transcript.display().to_string().into();
        deliver(home, "claude-code", &payload.to_string());
    }
    let out = harnery(home)
        .env("HARNERY_RECORDS", "on")
        .arg("finalize")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let from_rows = otlp(home);
    // The record's usage rows are read whole; its other rows are marks
    // attested by the record.
    let wholes = count(
        home,
        "SELECT count(*) FROM trace_chunks c, json_each(c.wholes) w JOIN events e ON e.seq = w.value \
         WHERE e.type = 'usage.reported'",
    );
    // Two model calls, and one report of what Claude Code's running cost
    // total grew by.
    assert_eq!(wholes, 3);
    let by_record = "SELECT count(*) FROM trace_chunks c, json_each(c.entries) e \
                     WHERE json_extract(e.value, '$[6]') = 'record'";
    assert!(count(home, by_record) > 0);
    // Its recorded calls are notes, found through their index.
    assert_eq!(count(home, "SELECT sum(notes) FROM trace_chunks"), 2);
    db(home)
        .execute_batch("DROP VIEW trace_chunks; DROP TABLE trace_chunk_store;")
        .unwrap();
    assert_eq!(otlp(home), from_rows);
}

#[test]
fn validate_names_a_trace_row_that_disagrees_with_its_event() {
    let home = two_session_home();
    let home = home.path();
    assert!(run(home, &["validate"]).status.success());
    let conn = db(home);
    let (seq, id): (i64, String) = conn
        .query_row(
            "SELECT seq, id FROM events WHERE session_id = 's-small' AND type = 'tool.completed'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    edit_trace_entry(home, seq, |entry| entry[11] = "failure".into());
    let out = run(home, &["validate"]);
    assert_eq!(out.status.code(), Some(1));
    let text = stdout(&out);
    assert!(text.contains(&id) && text.contains("trace-row"), "{text}");
    assert!(
        text.contains("Failure") && text.contains("Success"),
        "{text}"
    );

    // A session's chunk gone: its rows have no entry, and the chunks count
    // fewer events than the ledger holds.
    conn.execute_batch("DELETE FROM trace_chunks WHERE session_id = 's-small'")
        .unwrap();
    let text = stdout(&run(home, &["validate"]));
    assert!(
        text.contains(&format!("row seq {seq} has no trace entry")),
        "{text}"
    );
    assert!(
        text.contains("the trace chunks count 7 events, the ledger holds 11"),
        "{text}"
    );
}

#[test]
fn an_entry_or_chunk_that_cannot_be_used_is_named_and_the_rest_exported() {
    let home = two_session_home();
    let home = home.path();
    let roots = |otlp: &str| {
        otlp.matches("\"name\":\"invoke_agent claude-code\"")
            .count()
    };

    // A whole entry whose event row is not there (its seq names none).
    let seq: i64 = db(home)
        .query_row(
            "SELECT seq FROM events WHERE session_id = 's-whole' AND type = 'command.requested'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    edit_trace_entry(home, seq, |entry| entry[1] = 999_999.into());
    let out = run(home, &["export", "--format", "otlp"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("row seq 999999 has a trace entry whose event row is not there"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    assert_eq!(roots(&stdout(&out)), 2);

    // A chunk that does not read: its events are left out, once named, and
    // the other session is whole.
    db(home)
        .execute(
            "UPDATE trace_chunks SET entries = '[[' WHERE session_id = 's-small'",
            [],
        )
        .unwrap();
    let out = run(
        home,
        &["export", "--format", "otlp", "--session", "s-small"],
    );
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("session claude-code/s-small has a trace chunk that cannot be read"),
        "{err}"
    );
    let text = stdout(&out);
    assert_eq!(roots(&text), 1, "the session's root is still there");
    assert!(!text.contains("execute_tool"), "{text}");
    let text = stdout(&run(home, &["validate"]));
    assert!(text.contains("cannot be read"), "{text}");
}

/// A chunk that does not read stands for the events it counts, no more:
/// the session's next chunk is still checked.
#[test]
fn validate_goes_on_past_a_chunk_that_cannot_be_read() {
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    let s = session("s-two");
    let first = small_session("s-two");
    let request = tool_request(&s, 4, "c3");
    let done = tool_done(&s, 5, "c3", &request.id);
    inject(home, "b-a", first);
    inject(home, "b-b", vec![request, done]);
    assert!(run(home, &["finalize"]).status.success());
    assert_eq!(count(home, "SELECT count(*) FROM trace_chunks"), 2);
    let seq = count(home, "SELECT seq FROM events WHERE offset = 5");
    db(home)
        .execute(
            "UPDATE trace_chunks SET entries = '[[' WHERE first_offset = 0",
            [],
        )
        .unwrap();
    edit_trace_entry(home, seq, |entry| entry[11] = "failure".into());
    let out = run(home, &["validate"]);
    assert_eq!(out.status.code(), Some(1));
    let text = stdout(&out);
    assert!(
        text.contains("the trace chunk at offset 0 cannot be read"),
        "{text}"
    );
    assert!(
        text.contains(&format!("row seq {seq}'s trace entry holds")),
        "{text}"
    );
}
