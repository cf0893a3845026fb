//! Session-level answers come from session-level rows: each session row
//! keeps the audit reasons its events carry and counts its resumes,
//! finalize keeps them current, a migration fills them for a ledger an
//! older build wrote, and `validate` checks them against the events.

use crate::common;

use std::path::Path;

use common::*;
use harnery::home::Home;
use harnery::ledger::{LedgerReader, LedgerWriter};
use harnery::report::audit::classify_events;

/// For every session: the reasons its rows keep equal the reasons its
/// events give.
fn rows_agree_with_events(home: &Path) -> usize {
    // Any generation: the fixture of generation 1 is read here too.
    let ledger = LedgerReader::open_dir(&LedgerReader::live_dir(&Home::at(home)), None).unwrap();
    let sessions = ledger.sessions().list().unwrap();
    for s in &sessions {
        let kept = ledger
            .sessions()
            .audit_reasons(&s.session)
            .unwrap()
            .expect("this build's tables keep the reasons");
        let derived = classify_events(&ledger.events().session_events(&s.session).unwrap()).reasons;
        assert_eq!(kept, derived, "{:?}", s.session);
    }
    sessions.len()
}

#[test]
fn the_kept_reasons_are_the_events_reasons_on_every_corpus_scenario() {
    let home = tempfile::tempdir().unwrap();
    for (agent, scenario) in [
        ("claude-code", "kill"),
        ("claude-code", "tool-failure"),
        ("claude-code", "parallel"),
        ("claude-code", "hook-failures"),
        ("claude-code", "subagent"),
        ("copilot", "interrupted-sigkill-1-killed"),
        ("copilot", "basic-shell-openai"),
        ("copilot", "hook-exit1-postToolUse"),
    ] {
        feed_fixture(home.path(), agent, scenario);
    }
    assert!(run(home.path(), &["finalize"]).status.success());
    // Both kinds of session are there: audit-only and eligible.
    let audit = stdout(&run(home.path(), &["audit"]));
    assert!(
        audit.contains("audit_only") && audit.contains("eligible"),
        "{audit}"
    );
    assert!(rows_agree_with_events(home.path()) >= 8);
}

#[test]
fn a_ledger_an_older_build_wrote_is_filled_by_the_migration() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/epoch/gen1/home");
    let home = tempfile::tempdir().unwrap();
    copy_tree(&fixture, home.path());
    // This build speaks generation 2, so it reads that home only after an
    // epoch advance; the migration itself runs on any epoch it opens for
    // writing, as the generation-1 builds after it did.
    let dir = LedgerReader::live_dir(&Home::at(home.path()));
    drop(LedgerWriter::open_dir(&dir, 0, false).unwrap());
    assert_eq!(rows_agree_with_events(home.path()), 4);
    // The killed Claude Code session: a recovered request and an open span.
    let ledger = LedgerReader::open_dir(&dir, None).unwrap();
    let killed = ledger
        .sessions()
        .resolve("5c0c90c9-7ca4-40b0-bbc8-834cd151f0ac")
        .unwrap();
    assert_eq!(
        ledger.sessions().audit_reasons(&killed).unwrap().unwrap(),
        vec![
            "recovery:request_not_observed".to_string(),
            "tool_pairing_incomplete".to_string()
        ]
    );
}

#[test]
fn validate_finds_a_session_row_whose_reasons_were_altered() {
    let home = tempfile::tempdir().unwrap();
    feed_fixture(home.path(), "claude-code", "kill");
    assert!(run(home.path(), &["finalize"]).status.success());
    let db = home.path().join("ledgers/v2/ledger.sqlite");
    let conn = rusqlite::Connection::open(db).unwrap();
    harnery::ledger::eventz::register(&conn).unwrap();
    assert_eq!(
        conn.execute(
            "UPDATE sessions SET audit_flags = 0 WHERE audit_flags != 0",
            []
        )
        .unwrap(),
        1
    );
    drop(conn);
    let out = run(home.path(), &["validate"]);
    assert_eq!(out.status.code(), Some(1));
    let text = stdout(&out);
    assert!(text.contains("session-audit-reasons"), "{text}");
    assert!(text.contains("recovery:request_not_observed"), "{text}");
}

#[test]
fn validate_finds_a_span_whose_state_disagrees_with_its_terminal() {
    let home = tempfile::tempdir().unwrap();
    feed_fixture(home.path(), "claude-code", "parallel");
    assert!(run(home.path(), &["finalize"]).status.success());
    let db = home.path().join("ledgers/v2/ledger.sqlite");
    let conn = rusqlite::Connection::open(db).unwrap();
    harnery::ledger::eventz::register(&conn).unwrap();
    let id: String = conn
        .query_row(
            "SELECT request_event_id FROM spans WHERE state = 'closed_native' ORDER BY seq LIMIT 1",
            [],
            |r| r.get(0),
        )
        .unwrap();
    conn.execute(
        "UPDATE spans SET state = 'open' WHERE request_event_id = ?1",
        [&id],
    )
    .unwrap();
    drop(conn);
    let out = run(home.path(), &["validate"]);
    assert_eq!(out.status.code(), Some(1));
    let text = stdout(&out);
    assert!(
        text.contains(&format!(
            "{id}: span-state: span is open but has a terminal event"
        )),
        "{text}"
    );
}

#[test]
fn validate_reports_a_damaged_row_at_its_seq_and_checks_the_rest() {
    let home = tempfile::tempdir().unwrap();
    feed_fixture(home.path(), "claude-code", "parallel");
    assert!(run(home.path(), &["finalize"]).status.success());
    let db = home.path().join("ledgers/v2/ledger.sqlite");
    let conn = rusqlite::Connection::open(db).unwrap();
    harnery::ledger::eventz::register(&conn).unwrap();
    let rows: i64 = conn
        .query_row("SELECT count(*) FROM events", [], |r| r.get(0))
        .unwrap();
    conn.execute(
        "UPDATE events SET json = CAST(X'FF00FE' AS TEXT) WHERE seq = 3",
        [],
    )
    .unwrap();
    drop(conn);
    let out = run(home.path(), &["validate", "--json"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["rows"], rows, "every row was read");
    let text = v["violations"].to_string();
    assert!(text.contains("row seq 3 does not parse"), "{text}");
}

/// Claude Code's `compact` run resumes its session twice. Its row counts
/// both; a ledger from before the count (the column and its migration
/// taken away) gets the count back from the migration, with the same
/// audit, and `validate` names a count that was altered.
#[test]
fn a_session_row_counts_its_resumes_from_finalize_or_the_migration() {
    let home = tempfile::tempdir().unwrap();
    feed_fixture(home.path(), "claude-code", "compact");
    assert!(run(home.path(), &["finalize"]).status.success());
    let dir = LedgerReader::live_dir(&Home::at(home.path()));
    let compact = || {
        let ledger = LedgerReader::open_dir(&dir, None).unwrap();
        let session = ledger
            .sessions()
            .resolve("221d6ed5-93db-49fb-b651-1c5540460db1")
            .unwrap();
        (ledger, session)
    };
    let resumes = || {
        let (ledger, session) = compact();
        ledger.sessions().resumes(&session).unwrap()
    };
    assert_eq!(resumes(), Some(2));
    let audit = stdout(&run(home.path(), &["audit", "--json"]));

    let db = dir.join("ledger.sqlite");
    let conn = rusqlite::Connection::open(&db).unwrap();
    harnery::ledger::eventz::register(&conn).unwrap();
    conn.execute_batch(
        "ALTER TABLE sessions DROP COLUMN resumes; \
         DELETE FROM migrations WHERE name LIKE '%_session_resumes';",
    )
    .unwrap();
    drop(conn);
    // Read as it is (a read-only open never migrates): counted by nobody.
    // (That such a ledger finds its resumes from the events is checked
    // where a superseded range carries a reason: the killed Copilot run in
    // `session_log_copilot`.)
    assert_eq!(resumes(), None);
    drop(LedgerWriter::open_dir(&dir, 0, false).unwrap());
    assert_eq!(resumes(), Some(2));
    assert_eq!(stdout(&run(home.path(), &["audit", "--json"])), audit);

    assert!(run(home.path(), &["validate"]).status.success());
    let conn = rusqlite::Connection::open(&db).unwrap();
    harnery::ledger::eventz::register(&conn).unwrap();
    conn.execute("UPDATE sessions SET resumes = 0", []).unwrap();
    drop(conn);
    let out = run(home.path(), &["validate"]);
    assert_eq!(out.status.code(), Some(1));
    let text = stdout(&out);
    assert!(
        text.contains("session-resumes: the session row counts 0 resumes, its events 2"),
        "{text}"
    );
}
