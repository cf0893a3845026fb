//! `health` and `end --list` answer from session-level rows; their answers
//! are those the projections over every event give, on corpus sessions
//! and on hand-built sessions with pending, expired and salvaged ends and
//! recorded conditions.

mod common;

use common::*;
use harnery::contract::{EndExpired, EndRequested, EventId, HealthCondition, Payload};
use harnery::home::Home;
use harnery::ledger::Ledger;
use harnery::read::{by_session, health, session_rows};

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

    let ledger = Ledger::open_read(&Home::at(home.path())).unwrap();
    let events = ledger.events().unwrap();
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
