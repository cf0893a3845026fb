//! The read side over real corpus sessions and over harnery's own signals,
//! normalized by the real producer (`route` + `SessionProducer`), as
//! `finalize` does: audit classes, receipts, pending ends, and the command
//! closer after a SIGKILLed `harnery exec`.

use crate::report::support as readside_support;
use crate::session::support as producer_support;

use std::time::{Duration, Instant};

use harnery::contract::{AdapterId, Event, Payload, RecoveryReason, SessionRef};
use harnery::report::audit::{AuditClass, classify_session};
use harnery::report::health::pending_ends;
use harnery::report::receipts::{BOUND_EXCEEDS_WALL, session_receipts};
use harnery::spool::SpoolRecord;
use producer_support::*;
use readside_support::Sandbox;

fn claude(scenario: &str) -> Run {
    finished(&claude_records(scenario))
}

fn copilot(scenario: &str) -> Run {
    finished(&copilot_records(scenario))
}

fn classify(run: &Run) -> (AuditClass, Vec<String>) {
    let (_, events) = run.only();
    let refs: Vec<&Event> = events.iter().collect();
    let c = classify_session(&refs);
    (c.class, c.reasons)
}

#[test]
fn clean_native_scenarios_are_eligible() {
    for scenario in [
        "basic",
        "file-tools",
        "parallel",
        "tool-failure",
        "subagent",
    ] {
        assert_eq!(
            classify(&claude(scenario)).0,
            AuditClass::Eligible,
            "{scenario}"
        );
    }
    for scenario in [
        "basic-shell-anthropic",
        "subagent-task",
        "shell-nonzero-exit",
    ] {
        assert_eq!(
            classify(&copilot(scenario)).0,
            AuditClass::Eligible,
            "{scenario}"
        );
    }
}

#[test]
fn interrupted_scenarios_are_audit_only_with_their_reasons() {
    let cases: &[(Run, &[&str])] = &[
        (
            claude("hook-block"),
            &["recovery:completion_not_observed_before_turn_end"],
        ),
        (
            claude("permission-denied"),
            &["recovery:completion_not_observed_before_turn_end"],
        ),
        (
            claude("kill"),
            &["recovery:request_not_observed", "tool_pairing_incomplete"],
        ),
        (
            claude("sigterm"),
            &[
                "recovery:explicit_end_salvage",
                "recovery:request_not_observed",
            ],
        ),
        (
            copilot("interrupted-sigterm"),
            &["recovery:explicit_end_salvage"],
        ),
        (
            copilot("interrupted-sigkill-1-killed"),
            &["tool_pairing_incomplete"],
        ),
    ];
    for (run, reasons) in cases {
        let (class, found) = classify(run);
        assert_eq!(class, AuditClass::AuditOnly);
        assert_eq!(&found, reasons);
    }
}

#[test]
fn receipts_of_real_turns_keep_known_time_and_bounds_apart() {
    let run = claude("basic");
    let refs: Vec<&Event> = run.only().1.iter().collect();
    let turn = &session_receipts(&refs).turns[0];
    assert!(turn.tools.known_ms > 0);
    assert_eq!(turn.tools.upper_bound_ms, 0);
    assert!(turn.tools.eligible_for_ranking);

    let run = claude("hook-block");
    let refs: Vec<&Event> = run.only().1.iter().collect();
    let turn = &session_receipts(&refs).turns[0];
    assert_eq!(turn.tools.known_ms, 0);
    assert!(turn.tools.upper_bound_ms > 0);
    assert!(!turn.tools.eligible_for_ranking);

    let run = copilot("interrupted-sigint");
    let refs: Vec<&Event> = run.only().1.iter().collect();
    let turn = &session_receipts(&refs).turns[0];
    assert!(turn.notes.contains(&BOUND_EXCEEDS_WALL));
    assert!(turn.tools.upper_bound_share_pct.unwrap() <= 100.0);
}

/// Spool records written by the real binary, as producer input.
fn from_spool(records: &[SpoolRecord]) -> Vec<Record> {
    records
        .iter()
        .map(|r| {
            let env = &r.envelope;
            Record {
                adapter: AdapterId::parse(&env.adapter).expect("a known adapter"),
                event_name: env.event.clone(),
                session_id: env.session_id.clone().unwrap_or_default(),
                payload: r.payload.clone(),
                received_unix_ns: env.received_ns,
                clock: harnery::clock::ClockSample {
                    boot_id: env.boot_id.clone(),
                    boottime_ns: env.boottime_ns,
                },
                digest: format!("{}@{}", env.payload_blake3, r.at.offset),
            }
        })
        .collect()
}

#[test]
fn a_killed_exec_is_closed_by_the_session_end_with_command_completion_not_observed() {
    let sb = Sandbox::new();
    let marker = sb.dir.path().join("started");
    let script = format!("touch {}; sleep 5", marker.display());
    sb.start("claude-code", "s-k");
    let args = ["exec", "--session", "s-k", "--adapter", "claude-code", "--"];
    let mut cmd = sb.harnery(&args);
    let mut child = cmd.args(["sh", "-c", &script]).spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !marker.exists() {
        assert!(Instant::now() < deadline, "the child never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let out = sb
        .harnery(&["end", "s-k", "--reason", "agent gone"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let mut run = run_records(&from_spool(&sb.spooled()));
    let session = SessionRef {
        adapter: AdapterId::ClaudeCode,
        session_id: "s-k".into(),
    };
    let before: Vec<&Event> = run.events[&session].iter().collect();
    let pending = pending_ends(&before);
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].open_spans.len(), 1);
    assert!(pending[0].open_spans[0].approved);
    assert_eq!(pending[0].reason.as_deref(), Some("agent gone"));

    run.tick(2_000_000_000_000_000_000);
    run.check();
    let events: Vec<&Event> = run.events[&session].iter().collect();
    assert!(pending_ends(&events).is_empty());
    let closer = events
        .iter()
        .find_map(|e| match &e.payload {
            Payload::CommandCompleted(c) => c.recovery.as_ref(),
            _ => None,
        })
        .expect("the closer minted a command terminal");
    assert_eq!(closer.reason, RecoveryReason::CommandCompletionNotObserved);
    let c = classify_session(&events);
    assert_eq!(c.reasons, vec!["recovery:command_completion_not_observed"]);
}

#[test]
fn an_operator_end_salvages_the_open_span_of_a_killed_agent() {
    let records = copilot_records("interrupted-sigkill-1-killed");
    let mut run = run_records(&records);
    let (producer, _) = run.only();
    let session = producer.session().clone();
    let sb = Sandbox::new();
    // The agent's hooks spooled the session before the operator ends it.
    sb.start("copilot", &session.session_id);
    let out = sb
        .harnery(&["end", &session.session_id, "--adapter", "copilot"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let ends: Vec<SpoolRecord> = sb
        .spooled()
        .into_iter()
        .filter(|r| r.envelope.event.as_deref() == Some("harnery.end_requested"))
        .collect();
    run.feed(&from_spool(&ends));
    let events: Vec<&Event> = run.events[&session].iter().collect();
    assert_eq!(pending_ends(&events)[0].open_spans.len(), 1);
    run.tick(2_000_000_000_000_000_000);
    run.check();
    let events: Vec<&Event> = run.events[&session].iter().collect();
    assert!(pending_ends(&events).is_empty());
    let c = classify_session(&events);
    assert_eq!(c.reasons, vec!["recovery:explicit_end_salvage"]);
}
