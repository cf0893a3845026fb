//! A push delivers each session as one trace, exactly the spans `export
//! --format otlp` writes; a repeat sends nothing; a session that grew
//! sends only its new and changed spans; a 429 with `Retry-After` is
//! waited out; a receiver that is down gives an error naming it and the
//! next push delivers everything; a partial success is reported.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Output;

use super::receiver::{Got, Plan, Receiver};
use common::*;
use serde_json::Value;

/// Three sessions: two small ones (one call closed, one open) and a
/// longer one.
pub(crate) fn three_sessions(home: &Path) {
    inject(home, "b1", small_session("s-a"));
    inject(home, "b2", small_session("s-b"));
    inject(home, "b3", calls("s-c", 0, 12));
    let out = run(home, &["finalize"]);
    assert!(out.status.success(), "{}", stderr(&out));
}

/// `n` closed calls of session `id`, from offset `from` on.
pub(crate) fn calls(id: &str, from: u64, n: u64) -> Vec<harnery::contract::Event> {
    let s = session(id);
    let mut events = Vec::new();
    for i in 0..n {
        let at = from + 2 * i;
        let call = format!("c{at}");
        let r = tool_request(&s, at, &call);
        let d = tool_done(&s, at + 1, &call, &r.id);
        events.extend([r, d]);
    }
    events
}

pub(crate) fn push(home: &Path, url: &str, extra: &[&str]) -> Output {
    let mut args = vec!["otlp", "push", "--traces-endpoint", url, "--json"];
    args.extend(extra);
    harnery(home)
        .args(&args)
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        .output()
        .expect("harnery runs")
}

pub(crate) fn summary(out: &Output) -> Value {
    assert!(out.status.success(), "{}", stderr(out));
    serde_json::from_str(stdout(out).trim()).expect("a JSON summary")
}

/// Every (trace, span) of `export --format otlp`, with the span's text.
pub(crate) fn exported(home: &Path) -> BTreeMap<(String, String), Value> {
    let out = run(home, &["export", "--format", "otlp"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let mut spans = BTreeMap::new();
    for line in stdout(&out).lines() {
        let doc: Value = serde_json::from_str(line).unwrap();
        for rs in doc["resourceSpans"].as_array().unwrap() {
            for span in rs["scopeSpans"][0]["spans"].as_array().unwrap() {
                let key = (
                    span["traceId"].as_str().unwrap().to_string(),
                    span["spanId"].as_str().unwrap().to_string(),
                );
                assert!(spans.insert(key, span.clone()).is_none());
            }
        }
    }
    spans
}

pub(crate) fn ids(got: &[Got]) -> BTreeSet<(String, String)> {
    got.iter()
        .map(|g| (g.trace.clone(), g.span.clone()))
        .collect()
}

fn each_once(got: &[Got]) {
    assert_eq!(ids(got).len(), got.len(), "a span sent twice: {got:?}");
}

#[test]
fn every_session_arrives_as_one_trace_and_a_repeat_adds_nothing() {
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    three_sessions(home);
    let want = exported(home);
    for protocol in ["http/protobuf", "http/json"] {
        let receiver = Receiver::start();
        let first = summary(&push(home, &receiver.url(), &["--protocol", protocol]));
        let got = receiver.spans();
        each_once(&got);
        assert_eq!(ids(&got), want.keys().cloned().collect(), "{protocol}");
        let traces: BTreeSet<&str> = got.iter().map(|g| g.trace.as_str()).collect();
        assert_eq!(traces.len(), 3, "one trace per session");
        for trace in traces {
            let roots: Vec<_> = got
                .iter()
                .filter(|g| g.trace == trace && g.name.starts_with("invoke_agent"))
                .collect();
            assert_eq!(roots.len(), 1, "one root per trace");
        }
        assert_eq!(first["spans_sent"], got.len());
        assert_eq!(first["traces"], 3);
        assert_eq!(first["protocol"], protocol);
        let want_type = if protocol == "http/json" {
            "application/json"
        } else {
            "application/x-protobuf"
        };
        assert!(receiver.content_types().iter().all(|t| t == want_type));

        let again = summary(&push(home, &receiver.url(), &["--protocol", protocol]));
        assert_eq!(again["spans_sent"], 0);
        // Passed over unread: no session grew since the endpoint took it.
        assert_eq!(again["sessions_unchanged"], 3);
        assert_eq!(again["spans_unchanged"], 0);
        // Forgetting the sessions (not the spans) reads them all again,
        // and every span is found taken as it is.
        let record = home.join("otlp/delivered.sqlite");
        let db = rusqlite::Connection::open(&record).unwrap();
        db.execute("DELETE FROM sessions", []).unwrap();
        drop(db);
        let read = summary(&push(home, &receiver.url(), &["--protocol", protocol]));
        assert_eq!(read["spans_sent"], 0);
        assert_eq!(read["sessions_unchanged"], 0);
        assert_eq!(read["spans_unchanged"], got.len());
        assert_eq!(receiver.spans().len(), got.len(), "a repeat adds nothing");
    }
}

/// Each span as the receiver decoded it, with its resource, by ids.
fn decoded(receiver: &Receiver) -> BTreeMap<(Vec<u8>, Vec<u8>), String> {
    let mut out = BTreeMap::new();
    for request in receiver.taken() {
        for rs in &request.resource_spans {
            for ss in &rs.scope_spans {
                for span in &ss.spans {
                    let key = (span.trace_id.clone(), span.span_id.clone());
                    let text = format!("{:?} {:?} {span:?}", rs.resource, ss.scope);
                    assert!(out.insert(key, text).is_none());
                }
            }
        }
    }
    out
}

#[test]
fn protobuf_carries_exactly_what_json_says() {
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    three_sessions(home);
    let json = Receiver::start();
    let proto = Receiver::start();
    summary(&push(home, &json.url(), &["--protocol", "http/json"]));
    summary(&push(home, &proto.url(), &["--protocol", "http/protobuf"]));
    let (json, proto) = (decoded(&json), decoded(&proto));
    assert_eq!(json.len(), exported(home).len());
    assert_eq!(json, proto);
}

#[test]
fn a_growing_session_sends_its_new_and_changed_spans_once() {
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    three_sessions(home);
    let receiver = Receiver::start();
    summary(&push(home, &receiver.url(), &[]));
    let before = exported(home);
    let first = receiver.spans().len();

    // s-c goes on: three more calls.
    inject(home, "b4", calls("s-c", 24, 3));
    assert!(run(home, &["finalize"]).status.success());
    let after = exported(home);
    let second = summary(&push(home, &receiver.url(), &[]));
    let got = receiver.spans();
    let new: Vec<&Got> = got[first..].iter().collect();
    let changed: BTreeSet<(String, String)> = after
        .iter()
        .filter(|(k, v)| before.get(*k) != Some(*v))
        .map(|(k, _)| k.clone())
        .collect();
    assert_eq!(
        new.iter()
            .map(|g| (g.trace.clone(), g.span.clone()))
            .collect::<BTreeSet<_>>(),
        changed
    );
    // Three new tool spans, and the root and the turn that grew.
    assert_eq!(changed.len(), 5, "{new:?}");
    assert!(new.iter().all(|g| g.name != "execute_tool Bash"
        || !before.contains_key(&(g.trace.clone(), g.span.clone()))));
    assert_eq!(second["spans_sent"], 5);
    // s-a and s-b did not grow: passed over unread.
    assert_eq!(second["sessions_unchanged"], 2);
    assert_eq!(ids(&got), after.keys().cloned().collect());
}

#[test]
fn a_429_with_retry_after_is_waited_out() {
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    three_sessions(home);
    let receiver = Receiver::start();
    receiver.plan(Plan::Status {
        status: 429,
        retry_after: Some(1),
    });
    receiver.plan(Plan::Status {
        status: 503,
        retry_after: None,
    });
    let out = push(
        home,
        &receiver.url(),
        &["--header", "x-mlflow-experiment-id=7"],
    );
    let s = summary(&out);
    assert_eq!(s["retries"], 2);
    assert_eq!(receiver.requests(), 3);
    assert!(stderr(&out).contains("HTTP 429"), "{}", stderr(&out));
    assert_eq!(
        ids(&receiver.spans()),
        exported(home).keys().cloned().collect()
    );
    assert!(
        receiver
            .headers()
            .iter()
            .any(|h| h == "x-mlflow-experiment-id: 7")
    );
}

#[test]
fn a_receiver_that_is_down_is_named_and_the_next_push_delivers_everything() {
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    three_sessions(home);
    let port = Receiver::start().port; // started, then dropped: nothing listens
    let url = format!("http://127.0.0.1:{port}/v1/traces");
    let out = push(home, &url, &["--retries", "1"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains(&url) && err.contains("2 attempt(s)") && err.contains("next push"),
        "{err}"
    );

    let receiver = Receiver::on(port);
    let s = summary(&push(home, &url, &[]));
    assert_eq!(
        ids(&receiver.spans()),
        exported(home).keys().cloned().collect()
    );
    assert_eq!(s["spans_sent"], receiver.spans().len());
}

#[test]
fn a_refusal_stops_the_push_and_a_partial_success_is_reported() {
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    three_sessions(home);
    let receiver = Receiver::start();
    receiver.plan(Plan::Status {
        status: 401,
        retry_after: None,
    });
    let out = push(home, &receiver.url(), &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("refused the spans: HTTP 401: busy"),
        "{}",
        stderr(&out)
    );
    assert_eq!(receiver.requests(), 1, "no retry of a refusal");

    receiver.plan(Plan::Partial {
        rejected: 2,
        message: "spans too old".into(),
    });
    let out = push(home, &receiver.url(), &[]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let s: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(s["rejected_spans"], 2);
    assert!(stderr(&out).contains("spans too old"));
}

#[test]
fn a_dry_run_counts_and_sends_nothing() {
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    three_sessions(home);
    let receiver = Receiver::start();
    let s = summary(&push(home, &receiver.url(), &["--dry-run"]));
    assert_eq!(s["spans_sent"], exported(home).len());
    assert_eq!(receiver.requests(), 0);
    let s = summary(&push(home, &receiver.url(), &["--spans-per-request", "4"]));
    assert_eq!(s["spans_sent"], exported(home).len());
    assert_eq!(s["requests"], receiver.requests());
    assert!(receiver.requests() >= exported(home).len() / 4);
    let s = summary(&push(home, &receiver.url(), &["--resend"]));
    assert_eq!(s["spans_sent"], exported(home).len());
}
