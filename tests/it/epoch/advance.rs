#![cfg(feature = "failpoints")]
//! `harnery epoch advance` with a test-only digest change
//! (`HARNERY_TEST_SCHEMA_SUFFIX`): quiesce applies old ready rows to the
//! old epoch, the archive is read-only with a manifest and a fence, the new
//! genesis anchors to the archived chain head, raw intake is carried, and a
//! kill at any step resumes to the same result.

use crate::common;

use std::path::Path;

use common::*;
use harnery::home::Home;

/// An old epoch with an open span, one pending old ready file, and fresh
/// intake that only the new epoch will drain.
fn prepare(home: &Path) {
    feed_fixture(home, "claude-code", "kill");
    feed_fixture(home, "claude-code", "basic");
    assert!(run(home, &["finalize"]).status.success());
    inject(home, "00000000000000000001-old", small_session("old-ready"));
    feed_fixture(home, "copilot", "basic-shell-openai");
}

#[test]
fn an_advance_archives_anchors_and_carries() {
    let home = tempfile::tempdir().unwrap();
    prepare(home.path());
    let out = next(home.path(), &["epoch", "advance", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["ready_files_applied_to_old_epoch"], 1);
    // The killed Claude Code session and the injected one both end the
    // epoch with an open tool span.
    assert_eq!(report["audit_only_sessions"], 2);
    let archive = the_archive(home.path());
    assert!(archive.join("MANIFEST.json").exists() && archive.join("ARCHIVED.json").exists());
    let archived = chain_rows(&archive.join("ledger.sqlite"));
    let head = archived.last().unwrap().1.to_lowercase();
    assert_eq!(report["terminal_segment_digest"], head.as_str());
    assert!(archived.iter().any(|(id, _)| id.starts_with("ev_")));

    let genesis: serde_json::Value = serde_json::from_slice(
        &std::fs::read(home.path().join("ledgers/v2/genesis.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(genesis["anchor"]["terminal_segment_digest"], head.as_str());
    assert_ne!(
        genesis["schema_digest"],
        harnery::contract::schema_digest_hex()
    );

    let sessions = stdout(&next(home.path(), &["sessions"]));
    assert!(
        sessions.contains("copilot"),
        "intake was carried: {sessions}"
    );
    assert!(
        !sessions.contains("old-ready"),
        "old rows stay in the archive: {sessions}"
    );
    assert!(next(home.path(), &["verify"]).status.success());
    assert!(next(home.path(), &["validate"]).status.success());
    let old_build = run(home.path(), &["sessions"]);
    assert!(
        stderr(&old_build).contains("epoch advance"),
        "{}",
        stderr(&old_build)
    );

    let audit = harnery::epoch::archived_open_span_sessions(&Home::at(home.path())).unwrap();
    assert_eq!(audit.len(), 2);
    for a in &audit {
        assert_eq!(a.reasons, vec!["tool_pairing_incomplete".to_string()]);
    }

    let again = next(home.path(), &["epoch", "advance", "--json"]);
    let again: serde_json::Value = serde_json::from_slice(&again.stdout).unwrap();
    assert_eq!(again["already_current"], true);
}

#[test]
fn a_kill_at_any_step_resumes_to_the_same_epochs() {
    let spool = tempfile::tempdir().unwrap();
    prepare(spool.path());
    let reference = tempfile::tempdir().unwrap();
    copy_tree(spool.path(), reference.path());
    assert!(
        next(reference.path(), &["epoch", "advance"])
            .status
            .success()
    );
    let want_archive = chain_rows(&the_archive(reference.path()).join("ledger.sqlite"));
    let want_live = chain_rows(&reference.path().join("ledgers/v2/ledger.sqlite"));
    for point in harnery::failpoint::EPOCH_POINTS {
        let home = tempfile::tempdir().unwrap();
        copy_tree(spool.path(), home.path());
        let killed = harnery(home.path())
            .env("HARNERY_TEST_SCHEMA_SUFFIX", NEXT_CONTRACT)
            .env("HARNERY_FAILPOINTS", point)
            .args(["epoch", "advance"])
            .output()
            .unwrap();
        assert_eq!(killed.status.code(), None, "{point}: killed");
        let resumed = next(home.path(), &["epoch", "advance"]);
        assert!(resumed.status.success(), "{point}: {}", stderr(&resumed));
        assert_eq!(
            chain_rows(&the_archive(home.path()).join("ledger.sqlite")),
            want_archive,
            "{point}"
        );
        assert_eq!(
            chain_rows(&home.path().join("ledgers/v2/ledger.sqlite")),
            want_live,
            "{point}"
        );
        assert!(next(home.path(), &["verify"]).status.success(), "{point}");
    }
}
