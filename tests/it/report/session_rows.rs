//! `health` and `end --list` answer from session-level rows; their answers
//! are those the projections over every event give, on corpus sessions
//! and on hand-built sessions with pending, expired and salvaged ends and
//! recorded conditions.

use crate::common;

use common::*;
use harnery::contract::{EndExpired, EndRequested, EventId, HealthCondition, Payload};
use harnery::home::Home;
use harnery::ledger::LedgerReader;
use harnery::report::{by_session, health, session_rows};

/// A session with an open span, a pending end approving it, and a
/// recorded damage condition.
fn pending_session(id: &str) -> Vec<harnery::contract::Event> {
    let s = session(id);
    let mut events = small_session(id);
    let open = events[3].id.clone();
    events.push(event(
        &s,
        4,
        Payload::EndRequested(EndRequested {
            origin: "operator".into(),
            reason: Some("gone".into()),
            approved_spans: vec![open],
        }),
    ));
    events.push(event(
        &s,
        5,
        Payload::HealthCondition(HealthCondition {
            code: "spool_damage".into(),
            detail: "bytes 10..20 of a segment".into(),
        }),
    ));
    events
}

/// A session whose end request expired.
fn expired_session(id: &str) -> Vec<harnery::contract::Event> {
    let s = session(id);
    let mut events = small_session(id);
    let end = event(
        &s,
        4,
        Payload::EndRequested(EndRequested {
            origin: "operator".into(),
            reason: None,
            approved_spans: vec![],
        }),
    );
    let end_id: EventId = end.id.clone();
    events.push(end);
    events.push(event(
        &s,
        5,
        Payload::EndExpired(EndExpired {
            end_event_id: end_id,
        }),
    ));
    events
}

#[test]
fn health_and_pending_ends_from_rows_equal_those_from_events() {
    let home = tempfile::tempdir().unwrap();
    for (agent, scenario) in [
        ("claude-code", "kill"),
        ("claude-code", "parallel"),
        ("copilot", "interrupted-sigkill-1-killed"),
        ("copilot", "hook-exit1-postToolUse"),
    ] {
        feed_fixture(home.path(), agent, scenario);
    }
    inject(
        home.path(),
        "00000000000000000001-a",
        pending_session("pend-a"),
    );
    inject(
        home.path(),
        "00000000000000000002-b",
        pending_session("pend-b"),
    );
    inject(
        home.path(),
        "00000000000000000003-c",
        expired_session("exp-c"),
    );
    assert!(run(home.path(), &["finalize"]).status.success());

    let ledger = LedgerReader::open(&Home::at(home.path())).unwrap();
    let events = ledger.events().all().unwrap();
    let now = 1_790_000_000_000_000_000;
    let from_events = health::ledger_conditions(&events, now);
    let from_rows = session_rows::conditions(&ledger, now).unwrap();
    assert_eq!(from_rows, from_events);
    let codes: Vec<&str> = from_rows.iter().map(|c| c.code.as_str()).collect();
    for code in [
        "end_pending_overdue",
        "end_expired",
        "reported:spool_damage",
    ] {
        assert!(codes.contains(&code), "{code} in {codes:?}");
    }

    let groups = by_session(&events);
    let want: Vec<_> = groups
        .values()
        .flat_map(|g| health::pending_ends(g))
        .collect();
    let got = session_rows::pending_ends(&ledger).unwrap();
    assert_eq!(got, want);
    assert_eq!(got.len(), 2);
    assert!(got[0].open_spans[0].approved);

    let listed = stdout(&run(home.path(), &["end", "--list", "--json"]));
    let listed: serde_json::Value = serde_json::from_str(&listed).unwrap();
    assert_eq!(listed["pending"], serde_json::to_value(&want).unwrap());
}

fn listed(home: &std::path::Path, args: &[&str]) -> Vec<String> {
    let mut all = vec!["sessions", "--json"];
    all.extend_from_slice(args);
    let out = run(home, &all);
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    stdout(&out)
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            v["session"]["session_id"].as_str().unwrap().to_string()
        })
        .collect()
}

/// Sessions whose events are one second apart: s0 first, s3 last.
fn dated_home() -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    for i in 0..4 {
        let id = format!("s{i}");
        let mut events = small_session(&id);
        if i % 2 == 0 {
            // Close the open span: even sessions are eligible.
            let req = events[3].id.clone();
            events.push(tool_done(&session(&id), 4, "c2", &req));
        }
        for e in &mut events {
            e.time_unix_ns += i as i64 * 1_000_000_000_000;
        }
        inject(home.path(), &format!("{:020}-{id}", i + 1), events);
    }
    assert!(run(home.path(), &["finalize"]).status.success());
    home
}

#[test]
fn sessions_are_newest_first_and_the_filters_combine() {
    let home = dated_home();
    let h = home.path();
    assert_eq!(listed(h, &[]), ["s3", "s2", "s1", "s0"]);
    assert_eq!(listed(h, &["--limit", "2"]), ["s3", "s2"]);
    assert_eq!(listed(h, &["--class", "eligible"]), ["s2", "s0"]);
    assert_eq!(listed(h, &["--class", "audit_only"]), ["s3", "s1"]);
    assert_eq!(
        listed(h, &["--class", "audit_only", "--limit", "1"]),
        ["s3"]
    );
    let t = |i: i64| harnery::clock::format_time(1_780_000_000_000_000_000 + i * 1_000_000_000_000);
    let (t1, t2) = (t(1), t(2));
    assert_eq!(listed(h, &["--since", &t1]), ["s3", "s2", "s1"]);
    assert_eq!(listed(h, &["--until", &t2]), ["s2", "s1", "s0"]);
    assert_eq!(listed(h, &["--since", &t1, "--until", &t2]), ["s2", "s1"]);
    assert_eq!(
        listed(h, &["--since", &t1, "--until", &t2, "--class", "eligible"]),
        ["s2"]
    );
    assert_eq!(
        listed(h, &["--adapter", "claude-code", "--limit", "3"]),
        ["s3", "s2", "s1"]
    );
    assert!(listed(h, &["--adapter", "copilot"]).is_empty());
    // The text table lists the same sessions, in the same order.
    let text = stdout(&run(h, &["sessions", "--class", "eligible"]));
    let rows: Vec<&str> = text.lines().skip(1).collect();
    assert_eq!(rows.len(), 2);
    assert!(
        rows[0].contains(" s2 ") && rows[1].contains(" s0 "),
        "{text}"
    );
}

#[test]
fn a_bad_filter_names_itself() {
    let home = dated_home();
    let out = run(home.path(), &["sessions", "--since", "yesterday"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--since"), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("not an RFC 3339 time"),
        "{}",
        stderr(&out)
    );
    let out = run(home.path(), &["sessions", "--adapter", "cursor"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("claude-code, copilot, codex, gemini-cli, qwen-code or opencode"),
        "{}",
        stderr(&out)
    );
    let out = run(home.path(), &["sessions", "--class", "fine"]);
    assert_eq!(out.status.code(), Some(2));
}
