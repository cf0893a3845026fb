//! The capability-profile authority check, end to end: producer state
//! stored under another capability digest is not silently reused. The
//! real hook binary feeds the `hook-block` corpus (a pre whose post never
//! comes, then a Stop and a session end) across two finalize runs; between
//! them the stored state's digest is replaced, as a build with another
//! profile would have written it.

use crate::common;

use std::path::Path;

use common::*;
use harnery::agents::CapabilityProfile;
use harnery::contract::{AdapterId, Event, Payload, RecoveryReason, TurnSource};

/// A digest no build's profile has.
const FOREIGN: &str = "00000000000000000000000000000000000000000000000000000000deadbeef";

fn hook_block() -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/claude-code/hook-block/hooks.jsonl");
    let text = std::fs::read_to_string(path).expect("fixture exists");
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(String::from)
        .collect()
}

fn feed(home: &Path, lines: &[String]) {
    for line in lines {
        crate::common::hook(home, &["claude-code"], line.as_bytes().to_vec());
    }
}

fn finalize(home: &Path) -> serde_json::Value {
    let out = run(home, &["finalize", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    serde_json::from_slice(&out.stdout).expect("summary is JSON")
}

fn db(home: &Path) -> rusqlite::Connection {
    let conn =
        rusqlite::Connection::open(home.join("ledgers/v2/ledger.sqlite")).expect("ledger opens");
    harnery::ledger::eventz::register(&conn).unwrap();
    conn
}

fn stored_digest(home: &Path) -> String {
    let state: String = db(home)
        .query_row("SELECT state FROM producer_state", [], |r| r.get(0))
        .expect("one session has state");
    let v: serde_json::Value = serde_json::from_str(&state).expect("state is JSON");
    v["capability_digest"]
        .as_str()
        .expect("a digest")
        .to_string()
}

/// Rewrite the stored state as a build with another profile left it.
fn store_under(home: &Path, digest: &str) {
    let conn = db(home);
    let state: String = conn
        .query_row("SELECT state FROM producer_state", [], |r| r.get(0))
        .expect("one session has state");
    let mut v: serde_json::Value = serde_json::from_str(&state).expect("state is JSON");
    v["capability_digest"] = digest.into();
    let text = serde_json::to_string(&v).expect("json");
    conn.execute("UPDATE producer_state SET state = ?1", [text])
        .expect("state rewritten");
}

fn events(home: &Path) -> Vec<Event> {
    ledger_rows(home)
        .iter()
        .map(|(_, json, _)| serde_json::from_str(json).expect("rows parse"))
        .collect()
}

fn spans(home: &Path) -> (u64, u64) {
    let s = &sessions_json(home)[0]["spans"];
    (
        s["open"].as_u64().unwrap(),
        s["recovered"].as_u64().unwrap(),
    )
}

/// Up to the Stop, finalize, optionally replace the stored digest, then
/// the Stop, finalize again; returns that second summary.
fn through_the_stop(home: &Path, replace_with: Option<&str>) -> serde_json::Value {
    let lines = hook_block();
    feed(home, &lines[..5]);
    finalize(home);
    assert_eq!(spans(home), (1, 0), "the blocked tool's span is open");
    let current = CapabilityProfile::of(AdapterId::ClaudeCode).digest_hex();
    assert_eq!(stored_digest(home), current, "state names its profile");
    if let Some(digest) = replace_with {
        store_under(home, digest);
    }
    feed(home, &lines[5..6]);
    finalize(home)
}

#[test]
fn state_of_this_profile_is_reused_and_the_stop_sweeps() {
    let home = tempfile::tempdir().unwrap();
    let summary = through_the_stop(home.path(), None);
    assert_eq!(summary["health"], serde_json::json!([]));
    assert_eq!(
        spans(home.path()),
        (0, 1),
        "the turn-end sweep recovered it"
    );
}

#[test]
fn state_of_another_profile_is_loud_and_its_spans_fail_closed() {
    let home = tempfile::tempdir().unwrap();
    let current = CapabilityProfile::of(AdapterId::ClaudeCode).digest_hex();
    let summary = through_the_stop(home.path(), Some(FOREIGN));

    // Loud: one condition naming both digests, in the summary and ledger.
    let health = summary["health"].as_array().expect("health list");
    assert_eq!(health.len(), 1, "{summary}");
    assert_eq!(health[0]["code"], "capability_profile_changed");
    let detail = health[0]["detail"].as_str().unwrap();
    assert!(
        detail.contains(FOREIGN) && detail.contains(&current),
        "{detail}"
    );
    let all = events(home.path());
    let at = all
        .iter()
        .position(|e| matches!(&e.payload, Payload::HealthCondition(h) if h.code == "capability_profile_changed"))
        .expect("the condition is in the ledger");
    assert_eq!(all[at].turn.source, TurnSource::None);
    assert!(
        matches!(all[at + 1].payload, Payload::TurnCompleted(_)),
        "the condition precedes what the loaded state emits next"
    );

    // Continuity: offsets go on; the span stays open through the Stop.
    assert_eq!(spans(home.path()), (1, 0), "no sweep closed the span");
    assert_eq!(
        stored_digest(home.path()),
        current,
        "the new digest is adopted"
    );
    let out = run(home.path(), &["validate"]);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));

    // Adopted once: a run with nothing new raises nothing.
    assert_eq!(finalize(home.path())["health"], serde_json::json!([]));

    // Only explicit-end salvage reaches the span, without a turn.
    feed(home.path(), &hook_block()[6..]);
    finalize(home.path());
    assert_eq!(spans(home.path()), (0, 1));
    let all = events(home.path());
    let salvaged: Vec<_> = all
        .iter()
        .filter(|e| e.payload.recovery().is_some())
        .collect();
    assert_eq!(salvaged.len(), 1);
    let reason = salvaged[0].payload.recovery().unwrap().reason;
    assert_eq!(reason, RecoveryReason::ExplicitEndSalvage);
    assert_eq!(salvaged[0].turn.source, TurnSource::None);
    let out = run(home.path(), &["validate"]);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
}
