//! The ledger through the real binary: ready rows injected into the ready
//! spool, then `finalize`, `sessions`, `show`, `replay`, `validate`,
//! `verify`, and the refusals.

use crate::common;

use common::*;
use harnery::contract::{
    Attestation, Confidence, Observation, Outcome, Payload, Provenance, Recovery, RecoveryReason,
};

#[test]
fn injected_rows_are_appended_once_and_read_back() {
    let home = tempfile::tempdir().unwrap();
    inject(home.path(), "0001-a", small_session("alpha-1"));
    let out = run(home.path(), &["finalize", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["events_appended"], 4);
    assert_eq!(summary["spans"]["open"], 1);
    assert_eq!(summary["spans"]["closed_native"], 1);
    let again = run(home.path(), &["finalize", "--json"]);
    let summary: serde_json::Value = serde_json::from_slice(&again.stdout).unwrap();
    assert_eq!(summary["events_appended"], 0);

    let sessions = stdout(&run(home.path(), &["sessions"]));
    assert!(sessions.contains("alpha-1"), "{sessions}");
    let show = run(home.path(), &["show", "alph"]);
    assert!(show.status.success(), "{}", stderr(&show));
    assert!(
        stdout(&show).contains("tool Bash [closed_native] success 40 ms"),
        "{}",
        stdout(&show)
    );
    assert!(
        stdout(&show).contains("tool Bash [open]"),
        "{}",
        stdout(&show)
    );
    let replay = stdout(&run(
        home.path(),
        &["replay", "alpha-1", "--from", "1", "--to", "2"],
    ));
    assert_eq!(replay.lines().count(), 2, "{replay}");
    assert!(run(home.path(), &["validate"]).status.success());
    assert!(run(home.path(), &["verify"]).status.success());
}

#[test]
fn replay_windows_are_checked() {
    let home = tempfile::tempdir().unwrap();
    inject(home.path(), "0001-a", small_session("alpha-1"));
    run(home.path(), &["finalize"]);
    let inverted = run(
        home.path(),
        &["replay", "alpha-1", "--from", "3", "--to", "1"],
    );
    assert_eq!(inverted.status.code(), Some(2));
    assert!(
        stderr(&inverted).contains("inverted window"),
        "{}",
        stderr(&inverted)
    );
    let past = run(home.path(), &["replay", "alpha-1", "--from", "9"]);
    assert_eq!(past.status.code(), Some(2));
    assert!(
        stderr(&past).contains("past the session's last offset 3"),
        "{}",
        stderr(&past)
    );
    let unknown = run(home.path(), &["show", "nope"]);
    assert_eq!(unknown.status.code(), Some(2));
}

#[test]
fn a_flipped_byte_in_any_row_is_reported_at_that_event() {
    let home = tempfile::tempdir().unwrap();
    let events = small_session("alpha-1");
    inject(home.path(), "0001-a", events.clone());
    run(home.path(), &["finalize"]);
    let db = home.path().join("ledgers/v2/ledger.sqlite");
    for (i, target) in events.iter().enumerate() {
        let conn = rusqlite::Connection::open(&db).unwrap();
        harnery::ledger::eventz::register(&conn).unwrap();
        let json: String = conn
            .query_row(
                "SELECT json FROM events WHERE id = ?1",
                [target.id.as_str()],
                |r| r.get(0),
            )
            .unwrap();
        let mut bytes = json.clone().into_bytes();
        let at = bytes.len() / 2 + i;
        bytes[at] ^= 0x01;
        conn.execute(
            "UPDATE events SET json = CAST(?1 AS TEXT) WHERE id = ?2",
            rusqlite::params![bytes, target.id.as_str()],
        )
        .unwrap();
        drop(conn);
        let out = run(home.path(), &["verify"]);
        assert_eq!(out.status.code(), Some(1));
        let text = stdout(&out);
        assert_eq!(text.lines().count(), 1, "{text}");
        assert!(text.contains(target.id.as_str()), "{text}");
        let conn = rusqlite::Connection::open(&db).unwrap();
        harnery::ledger::eventz::register(&conn).unwrap();
        conn.execute(
            "UPDATE events SET json = ?1 WHERE id = ?2",
            rusqlite::params![json, target.id.as_str()],
        )
        .unwrap();
    }
    assert!(run(home.path(), &["verify"]).status.success());
}

fn refused_with(rule: &str, mutate: impl FnOnce(&mut harnery::contract::Event)) {
    let home = tempfile::tempdir().unwrap();
    let mut events = small_session("beta-1");
    let req = events[3].id.clone();
    let mut bad = recovered_done(&events[3].session, 4, &req);
    mutate(&mut bad);
    events.push(bad.clone());
    inject(home.path(), "0001-bad", events);
    let out = run(home.path(), &["finalize"]);
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    let err = stderr(&out);
    assert!(err.contains(rule), "expected {rule} in: {err}");
    assert!(err.contains(bad.id.as_str()), "{err}");
    assert!(
        !home.path().join("ledgers/v2/ledger.sqlite").exists()
            || common::ledger_rows(home.path()).is_empty()
    );
}

#[test]
fn a_valid_recovered_completion_is_accepted() {
    let home = tempfile::tempdir().unwrap();
    let mut events = small_session("beta-1");
    let req = events[3].id.clone();
    events.push(recovered_done(&events[3].session, 4, &req));
    inject(home.path(), "0001", events);
    let out = run(home.path(), &["finalize", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let s: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(s["spans"]["recovered"], 1);
}

#[test]
fn rule_1_recovery_requires_derived() {
    refused_with("rule 1 (recovery-requires-derived)", |e| {
        e.provenance = Provenance::NATIVE
    });
}

#[test]
fn rule_2_recovered_outcome_unknown() {
    refused_with("rule 2 (recovered-outcome-unknown)", |e| {
        if let Payload::ToolCompleted(p) = &mut e.payload {
            p.outcome = Outcome::Success;
        }
    });
}

#[test]
fn rule_3_derived_tool_needs_recovery() {
    refused_with("rule 3 (derived-tool-needs-recovery)", |e| {
        if let Payload::ToolCompleted(p) = &mut e.payload {
            p.recovery = None;
            p.duration_ms = Observation::Observed(3);
        }
    });
}

#[test]
fn rule_4_reason_binds_event_type() {
    refused_with("rule 4 (reason-binds-event-type)", |e| {
        if let Payload::ToolCompleted(p) = &mut e.payload {
            p.recovery = Some(Recovery {
                reason: RecoveryReason::RequestNotObserved,
                requested_event_id: None,
                elapsed_upper_bound_ms: None,
            });
            p.duration_ms = Observation::Unknown("request_not_observed".into());
        }
    });
}

#[test]
fn rule_5_recovered_duration_unknown() {
    refused_with("rule 5 (recovered-duration-unknown)", |e| {
        e.provenance = Provenance {
            attestation: Attestation::Derived,
            confidence: Confidence::Low,
        };
        if let Payload::ToolCompleted(p) = &mut e.payload {
            p.duration_ms = Observation::Observed(12);
        }
    });
}

#[test]
fn a_ready_batch_from_another_digest_is_refused() {
    let home = tempfile::tempdir().unwrap();
    inject_with_digest(
        home.path(),
        "0001",
        small_session("gamma"),
        &"ab".repeat(32),
    );
    let out = run(home.path(), &["finalize"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("stamped with contract digest"),
        "{}",
        stderr(&out)
    );
}

#[test]
#[cfg(feature = "failpoints")]
fn a_ledger_from_another_digest_is_refused_by_every_reader() {
    let home = tempfile::tempdir().unwrap();
    inject(home.path(), "0001", small_session("gamma"));
    run(home.path(), &["finalize"]);
    let changed = |cmd: &[&str]| {
        harnery(home.path())
            .env("HARNERY_TEST_SCHEMA_SUFFIX", "next")
            .args(cmd)
            .output()
            .unwrap()
    };
    for cmd in [
        &["sessions"][..],
        &["show", "gamma"],
        &["replay", "gamma"],
        &["finalize"],
    ] {
        let out = changed(cmd);
        assert_eq!(out.status.code(), Some(2), "{cmd:?}");
        assert!(
            stderr(&out).contains("run `harnery epoch advance`"),
            "{cmd:?}: {}",
            stderr(&out)
        );
    }
    let validate = changed(&["validate"]);
    assert_eq!(validate.status.code(), Some(1));
    assert!(
        stdout(&validate).contains("genesis: genesis-digest"),
        "{}",
        stdout(&validate)
    );
}

#[test]
#[cfg(feature = "failpoints")]
fn a_kill_mid_transaction_leaves_the_ready_file_for_the_next_run() {
    let home = tempfile::tempdir().unwrap();
    inject(home.path(), "0001", small_session("delta"));
    let out = harnery(home.path())
        .env("HARNERY_FAILPOINTS", "mid-transaction")
        .arg("finalize")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let out = run(home.path(), &["finalize", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(ledger_rows(home.path()).len(), 4);
}

#[test]
fn ledger_files_are_0600_and_directories_0700() {
    use std::os::unix::fs::MetadataExt;
    let home = tempfile::tempdir().unwrap();
    inject(home.path(), "0001", small_session("modes"));
    assert!(run(home.path(), &["finalize"]).status.success());
    let mut stack = vec![home.path().join("ledgers"), home.path().join("spool")];
    while let Some(p) = stack.pop() {
        let m = std::fs::symlink_metadata(&p).unwrap();
        let want = if m.is_dir() { 0o700 } else { 0o600 };
        assert_eq!(m.mode() & 0o777, want, "{}", p.display());
        if m.is_dir() {
            stack.extend(std::fs::read_dir(&p).unwrap().map(|e| e.unwrap().path()));
        }
    }
}
