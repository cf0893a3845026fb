//! `harnery export` through the real binary: JSON lines are the rows'
//! stored text, byte for byte what earlier builds printed; OTLP comes in
//! documents of at most `SPANS_PER_DOCUMENT` spans whose spans are the
//! ones earlier builds printed, but for recovered spans' end; `--since`
//! and `--session` combine; a damaged row is named and the export goes on.

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;

use common::*;
use harnery::contract::{Event, Observation, Payload, Recovery, RecoveryReason};
use harnery::export::SPANS_PER_DOCUMENT;
use serde_json::Value;

/// Times of `common::event`: a base, then 250 ms per offset.
const BASE_NS: i64 = 1_780_000_000_000_000_000;
const STEP_NS: i64 = 250_000_000;

fn json_lines(text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

fn export(home: &Path, args: &[&str]) -> std::process::Output {
    let mut all = vec!["export"];
    all.extend(args);
    run(home, &all)
}

fn ok(home: &Path, args: &[&str]) -> String {
    let out = export(home, args);
    assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
    stdout(&out)
}

/// `small_session`'s open call recovered at offset 4, with a bound.
fn recovered_session(id: &str) -> Vec<Event> {
    let s = session(id);
    let mut events = small_session(id);
    let mut done = recovered_done(&s, 4, &events[3].id);
    if let Payload::ToolCompleted(p) = &mut done.payload {
        p.recovery = Some(Recovery {
            reason: RecoveryReason::CompletionNotObservedBeforeTurnEnd,
            requested_event_id: Some(events[3].id.clone()),
            elapsed_upper_bound_ms: Some(Observation::Observed(1500)),
        });
    }
    events.push(done);
    events
}

/// A ledger whose times and ids are fixed: `s-rec` (one closed, one
/// recovered tool span) and `s-open` (one closed, one open), the golden
/// `tests/fixtures/export/otlp-before.json` was written from it by the
/// build before export streamed.
fn fixed_home(home: &Path) {
    inject(home, "b1", recovered_session("s-rec"));
    inject(home, "b2", small_session("s-open"));
    let out = run(home, &["finalize"]);
    assert!(out.status.success(), "{}", stderr(&out));
}

/// Every span of every document, by span id (each id once).
fn spans_by_id(docs: &[Value]) -> BTreeMap<String, Value> {
    let mut out = BTreeMap::new();
    for doc in docs {
        for r in doc["resourceSpans"].as_array().unwrap() {
            for span in r["scopeSpans"][0]["spans"].as_array().unwrap() {
                let id = span["spanId"].as_str().unwrap().to_string();
                assert!(out.insert(id, span.clone()).is_none(), "a span twice");
            }
        }
    }
    out
}

fn span_count(doc: &Value) -> usize {
    doc["resourceSpans"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["scopeSpans"][0]["spans"].as_array().unwrap().len())
        .sum()
}

/// `span` without the ledger places later builds added (the ids of its
/// request and terminal rows), checked here against the rows themselves.
fn without_event_ids(span: &Value, rows: &[String]) -> Value {
    let mut span = span.clone();
    let ids: Vec<(String, String)> = ["harnery.request.event_id", "harnery.terminal.event_id"]
        .iter()
        .filter_map(|k| {
            Some((
                k.to_string(),
                attr(&span, k)?["stringValue"].as_str()?.to_string(),
            ))
        })
        .collect();
    for (_, id) in &ids {
        assert!(rows.contains(id), "{id} is an event of the ledger");
    }
    // Where the rows stand in the chain, and their evidence, came after
    // the golden was written.
    let later = [
        "harnery.request.seq",
        "harnery.request.hash",
        "harnery.terminal.seq",
        "harnery.terminal.hash",
        "harnery.evidence",
    ];
    if let Some(attrs) = span["attributes"].as_array_mut() {
        attrs.retain(|a| !ids.iter().any(|(k, _)| a["key"] == k.as_str()));
        attrs.retain(|a| !later.iter().any(|k| a["key"] == *k));
    }
    span
}

fn attr<'v>(span: &'v Value, key: &str) -> Option<&'v Value> {
    span["attributes"]
        .as_array()?
        .iter()
        .find(|a| a["key"] == key)
        .map(|a| &a["value"])
}

#[test]
fn json_lines_are_the_stored_rows_as_earlier_builds_printed_them() {
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    for scenario in ["kill", "basic", "parallel", "tool-failure"] {
        feed_fixture(home, "claude-code", scenario);
    }
    feed_fixture(home, "copilot", "interrupted-sigkill-1-killed");
    assert!(run(home, &["finalize"]).status.success());
    let text = ok(home, &[]);
    let rows = ledger_rows(home);
    assert!(rows.len() > 30, "a corpus ledger: {}", rows.len());
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), rows.len());
    for (line, (_, json, _)) in lines.iter().zip(&rows) {
        // What the build before the rewrite printed: the event parsed and
        // serialised again.
        let event: Event = serde_json::from_str(json).unwrap();
        assert_eq!(*line, serde_json::to_string(&event).unwrap());
    }
}

#[test]
fn otlp_spans_are_unchanged_but_recovered_ones_and_their_roots_end_where_the_agent_last_spoke() {
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    fixed_home(home);
    let golden = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/export/otlp-before.json"),
    )
    .unwrap();
    let before = spans_by_id(&json_lines(&golden));
    let docs = json_lines(&ok(home, &["--format", "otlp"]));
    assert!(docs.iter().all(|d| span_count(d) <= SPANS_PER_DOCUMENT));
    let now = spans_by_id(&docs);
    assert_eq!(
        before.keys().collect::<Vec<_>>(),
        now.keys().collect::<Vec<_>>()
    );
    let (mut recovered, mut roots_moved) = (0, 0);
    let rows: Vec<String> = ledger_rows(home).into_iter().map(|r| r.0).collect();
    for (id, old) in &before {
        let new = &without_event_ids(&now[id], &rows);
        if attr(old, "harnery.span.state").is_some_and(|s| s["stringValue"] == "recovered") {
            recovered += 1;
            assert_eq!(new["endTimeUnixNano"], new["startTimeUnixNano"], "{new}");
            assert_eq!(new["startTimeUnixNano"], old["startTimeUnixNano"]);
            assert_eq!(
                attr(new, "harnery.span.end").unwrap()["stringValue"],
                "not_observed"
            );
            assert_eq!(
                attr(new, "harnery.recovery.elapsed_upper_bound_ms").unwrap()["intValue"],
                "1500"
            );
            let swept = (BASE_NS + 4 * STEP_NS).to_string();
            assert_eq!(
                attr(new, "harnery.recovery.swept_unix_nano").unwrap()["intValue"],
                swept.as_str()
            );
            assert_eq!(old["endTimeUnixNano"], swept.as_str(), "the old sweep end");
        } else if new != old && new["name"] == "invoke_agent claude-code" {
            // The session whose last event is the sweep: its root ends at
            // the last event the agent reported, not at the sweep.
            roots_moved += 1;
            assert_eq!(old["endTimeUnixNano"], (BASE_NS + 4 * STEP_NS).to_string());
            assert_eq!(new["endTimeUnixNano"], (BASE_NS + 3 * STEP_NS).to_string());
            let mut moved_back = new.clone();
            moved_back["endTimeUnixNano"] = old["endTimeUnixNano"].clone();
            assert_eq!(&moved_back, old, "{id}");
        } else {
            assert_eq!(new, old, "{id}");
        }
    }
    assert_eq!(recovered, 1);
    assert_eq!(roots_moved, 1);
}

#[test]
fn a_session_past_the_span_limit_goes_on_in_the_next_document() {
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    let s = session("s-big");
    let mut events = Vec::new();
    let calls = SPANS_PER_DOCUMENT + 200;
    for i in 0..calls as u64 {
        let call = format!("c{i}");
        let request = tool_request(&s, 2 * i, &call);
        let done = tool_done(&s, 2 * i + 1, &call, &request.id);
        events.extend([request, done]);
    }
    inject(home, "big", events);
    inject(home, "small", small_session("s-small"));
    assert!(run(home, &["finalize"]).status.success());
    let docs = json_lines(&ok(home, &["--format", "otlp"]));
    assert_eq!(docs.len(), 2);
    assert!(docs.iter().all(|d| span_count(d) <= SPANS_PER_DOCUMENT));
    // Root, one turn, every call; then the small session's root, turn and two.
    assert_eq!(spans_by_id(&docs).len(), calls + 2 + 4);
    let sessions_in = |d: &Value| -> Vec<String> {
        d["resourceSpans"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                attr(&r["resource"], "harnery.session.id").unwrap()["stringValue"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect()
    };
    assert_eq!(sessions_in(&docs[0]), ["s-big"]);
    assert_eq!(sessions_in(&docs[1]), ["s-big", "s-small"]);
}

#[test]
fn since_and_session_combine() {
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    fixed_home(home);
    // Offset 3 and later: `s-rec` has offsets 3 and 4, `s-open` offset 3.
    let at = |offset: i64| {
        let ns = BASE_NS + offset * STEP_NS;
        let t = time::OffsetDateTime::from_unix_timestamp_nanos(ns.into()).unwrap();
        t.format(&time::format_description::well_known::Rfc3339)
            .unwrap()
    };
    let since = at(3);
    let picked = |args: &[&str]| -> Vec<(String, u64)> {
        json_lines(&ok(home, args))
            .iter()
            .map(|e| {
                let id = e["session"]["session_id"].as_str().unwrap().to_string();
                (id, e["offset"].as_u64().unwrap())
            })
            .collect()
    };
    let owned = |v: &[(&str, u64)]| -> Vec<(String, u64)> {
        v.iter().map(|(s, o)| (s.to_string(), *o)).collect()
    };
    assert_eq!(picked(&[]).len(), 9);
    assert_eq!(
        picked(&["--since", &since]),
        owned(&[("s-rec", 3), ("s-rec", 4), ("s-open", 3)])
    );
    assert_eq!(
        picked(&["--session", "s-rec", "--since", &since]),
        owned(&[("s-rec", 3), ("s-rec", 4)])
    );
    assert_eq!(picked(&["--session", "s-open"]).len(), 4);
    assert!(picked(&["--since", &at(5)]).is_empty());
    assert!(picked(&["--session", "s-open", "--since", &at(4)]).is_empty());

    let traced = |args: &[&str]| -> Vec<String> {
        let mut all = vec!["--format", "otlp"];
        all.extend(args);
        let docs = json_lines(&ok(home, &all));
        let mut sessions: Vec<String> = spans_by_id(&docs)
            .values()
            .filter(|s| s["name"].as_str().unwrap().starts_with("invoke_agent"))
            .map(|s| {
                attr(s, "gen_ai.conversation.id").unwrap()["stringValue"]
                    .as_str()
                    .unwrap()
                    .into()
            })
            .collect();
        sessions.sort();
        sessions
    };
    // Whole sessions: each has an event at or after offset 3.
    assert_eq!(traced(&["--since", &since]), ["s-open", "s-rec"]);
    assert_eq!(traced(&["--since", &at(4)]), ["s-rec"]);
    assert_eq!(
        traced(&["--since", &at(4), "--session", "s-rec"]),
        ["s-rec"]
    );
    assert!(traced(&["--since", &at(4), "--session", "s-open"]).is_empty());
    let whole = json_lines(&ok(home, &["--format", "otlp", "--since", &at(4)]));
    assert_eq!(spans_by_id(&whole).len(), 4, "root, turn and both spans");

    let bad = export(home, &["--since", "yesterday"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(stderr(&bad).contains("RFC 3339"), "{}", stderr(&bad));
}

/// Replace one row's stored text in the live ledger.
fn damage_row(home: &Path, seq: i64, json: &str) {
    let conn = rusqlite::Connection::open(home.join("ledgers/v2/ledger.sqlite")).unwrap();
    harnery::ledger::eventz::register(&conn).unwrap();
    let changed = conn
        .execute(
            "UPDATE event_store SET body = event_body(?1) WHERE seq = ?2",
            (json, seq),
        )
        .unwrap();
    assert_eq!(changed, 1);
}

fn event_id_at(home: &Path, seq: i64) -> String {
    let conn = rusqlite::Connection::open(home.join("ledgers/v2/ledger.sqlite")).unwrap();
    harnery::ledger::eventz::register(&conn).unwrap();
    conn.query_row("SELECT id FROM events WHERE seq = ?1", [seq], |r| r.get(0))
        .unwrap()
}

#[test]
fn a_damaged_row_is_named_and_the_export_goes_on() {
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    fixed_home(home);
    let seq = 2;
    let id = event_id_at(home, seq);
    damage_row(home, seq, "{\"id\": \"ev_torn");
    let out = export(home, &[]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains(&format!("row seq {seq} (event {id})")),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    let lines = json_lines(&stdout(&out));
    assert_eq!(lines.len(), 8, "every other row");
    assert!(lines.iter().all(|l| l["id"] != id.as_str()));

    // JSON, but no event: JSON lines copy it. OTLP reads the row's trace
    // row, which finalize wrote from the event and `validate` checks, so
    // the trace is whole; the row is named once OTLP has to read its text.
    damage_row(home, seq, "{\"not\":\"an event\"}");
    assert_eq!(json_lines(&ok(home, &[])).len(), 9);
    let before = ok(home, &["--format", "otlp"]);
    assert_eq!(both_roots(&before), 2);
    edit_trace_entry(home, seq, |entry| {
        entry.truncate(3);
        entry.push("whole".into());
    });
    named_by_otlp(
        home,
        &format!("row seq {seq} (event {id}) does not parse as an event"),
    );

    // A trace entry that cannot be used is named by its event's seq.
    edit_trace_entry(home, seq, |entry| {
        *entry = vec![entry[0].clone(), entry[1].clone(), entry[2].clone()];
        entry.extend([
            "mark".into(),
            "sideways".into(),
            serde_json::Value::Null,
            "native".into(),
        ]);
    });
    named_by_otlp(
        home,
        &format!(
            "row seq {seq} has a trace entry that cannot be used (unknown turn source \"sideways\")"
        ),
    );
}

/// OTLP says `what` of one row on stderr, exits 1, and still exports
/// both sessions.
fn named_by_otlp(home: &Path, what: &str) {
    let out = export(home, &["--format", "otlp"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains(what), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert_eq!(
        both_roots(&stdout(&out)),
        2,
        "both sessions are still exported"
    );
}

fn both_roots(otlp: &str) -> usize {
    spans_by_id(&json_lines(otlp))
        .values()
        .filter(|s| s["name"].as_str().unwrap().starts_with("invoke_agent"))
        .count()
}
