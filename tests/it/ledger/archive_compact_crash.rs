#![cfg(feature = "failpoints")]
//! A kill at any point of `harnery archive compact` leaves a readable
//! archive: every raw signal still reads from the old files or the packed
//! one, `verify` finds nothing, the home still opens for writing (its
//! `raw_members` records match the files), and a rerun finishes the job.

use crate::common;

use std::path::Path;

use super::raw_support::{killed_at, not_packed, raw_records};
use common::*;
use harnery::failpoint::COMPACT_POINTS;

fn verify_ok(home: &Path, when: &str) {
    let v = run(home, &["verify"]);
    assert!(v.status.success(), "{when}: {}{}", stdout(&v), stderr(&v));
}

#[test]
fn a_kill_during_compaction_leaves_a_readable_archive() {
    let base = tempfile::tempdir().unwrap();
    feed_fixture(base.path(), "claude-code", "basic");
    feed_fixture(base.path(), "copilot", "basic-shell-anthropic");
    let f = run(base.path(), &["finalize", "--no-compact"]);
    assert!(f.status.success(), "{}", stderr(&f));
    let records = raw_records(base.path());
    assert!(!records.is_empty());
    for point in COMPACT_POINTS {
        let t = tempfile::tempdir().unwrap();
        let home = t.path();
        copy_tree(base.path(), home);
        killed_at(home, point, &["archive", "compact"]);
        assert_eq!(raw_records(home), records, "{point}: after the kill");
        verify_ok(home, point);
        let again = run(home, &["archive", "compact", "--json"]);
        assert!(again.status.success(), "{point}: {}", stderr(&again));
        let v: serde_json::Value = serde_json::from_str(stdout(&again).trim()).unwrap();
        assert_eq!(
            v["archive"]["files"], v["archive"]["compressed_files"],
            "{point}"
        );
        assert_eq!(raw_records(home), records, "{point}: after the rerun");
        verify_ok(home, point);
        // Every batch packed, no file of the old form left.
        let leftovers = not_packed(home);
        assert!(leftovers.is_empty(), "{point}: {leftovers:?}");
        let f = run(home, &["finalize"]);
        assert!(f.status.success(), "{point}: {}", stderr(&f));
    }
}

/// The same kills during the compaction a default `finalize` runs after
/// its commit: the run's batch is committed and every record reads back;
/// the next `finalize` finishes the compaction.
#[test]
fn a_kill_during_a_finalize_compaction_leaves_the_run_committed() {
    let plain = tempfile::tempdir().unwrap();
    feed_fixture(plain.path(), "claude-code", "basic");
    feed_fixture(plain.path(), "copilot", "basic-shell-anthropic");
    let fed = tempfile::tempdir().unwrap();
    copy_tree(plain.path(), fed.path());
    let f = run(plain.path(), &["finalize", "--no-compact"]);
    assert!(f.status.success(), "{}", stderr(&f));
    let records = raw_records(plain.path());
    let verified = |home: &Path| stdout(&run(home, &["verify", "--json"]));
    for point in COMPACT_POINTS {
        let t = tempfile::tempdir().unwrap();
        let home = t.path();
        copy_tree(fed.path(), home);
        let out = killed_at(home, point, &["finalize"]);
        assert!(
            stdout(&out).contains("events"),
            "{point}: the run reported first"
        );
        assert_eq!(raw_records(home), records, "{point}: after the kill");
        verify_ok(home, point);
        let f = run(home, &["finalize"]);
        assert!(f.status.success(), "{point}: {}", stderr(&f));
        assert_eq!(raw_records(home), records, "{point}: after the rerun");
        verify_ok(home, point);
        assert_eq!(
            verified(home),
            verified(plain.path()),
            "{point}: as one run"
        );
        let leftovers = not_packed(home);
        assert!(leftovers.is_empty(), "{point}: {leftovers:?}");
    }
}
