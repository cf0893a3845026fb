//! `finalize` compacts the raw archive by default, after its run, every
//! file (or within a configured budget), stopping for a finalizer that
//! waits for the lease and resuming in the next run what it left;
//! `finalize --no-compact` and `[archive] compact = false` in
//! `config.toml` turn it off. `verify` still checks every byte.

use std::path::Path;

use crate::common::{feed_fixture, run, stderr, stdout};

/// `archive status --json`: (files, compressed files, bytes on disk,
/// original bytes).
fn status(home: &Path) -> (u64, u64, u64, u64) {
    let out = run(home, &["archive", "status", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    let n = |k: &str| v[k].as_u64().unwrap();
    (
        n("files"),
        n("compressed_files"),
        n("bytes_on_disk"),
        n("original_bytes"),
    )
}

fn finalize(home: &Path, args: &[&str]) {
    let out = run(home, &[&["finalize"], args].concat());
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).is_empty(), "{}", stderr(&out));
}

fn verify(home: &Path) {
    let v = run(home, &["verify"]);
    assert!(v.status.success(), "{}{}", stdout(&v), stderr(&v));
}

#[test]
fn a_default_finalize_leaves_the_raw_archive_compressed() {
    let t = tempfile::tempdir().unwrap();
    let home = t.path();
    feed_fixture(home, "claude-code", "basic");
    feed_fixture(home, "copilot", "basic-shell-anthropic");
    finalize(home, &[]);
    let (files, compressed, on_disk, original) = status(home);
    assert!(files > 0);
    assert_eq!(compressed, files, "every file compressed");
    assert!(on_disk < original, "{on_disk} < {original}");
    verify(home);
    // A later run compresses what it adds.
    feed_fixture(home, "claude-code", "tool-failure");
    finalize(home, &[]);
    let (files2, compressed2, _, _) = status(home);
    assert!(files2 > files);
    assert_eq!(compressed2, files2);
    verify(home);
}

#[test]
fn no_compact_and_the_config_key_turn_it_off() {
    let t = tempfile::tempdir().unwrap();
    let home = t.path();
    feed_fixture(home, "claude-code", "basic");
    finalize(home, &["--no-compact"]);
    let (files, compressed, _, _) = status(home);
    assert!(files > 0);
    assert_eq!(compressed, 0);
    std::fs::write(home.join("config.toml"), "[archive]\ncompact = false\n").unwrap();
    feed_fixture(home, "claude-code", "tool-failure");
    finalize(home, &[]);
    assert_eq!(status(home).1, 0, "compact = false");
    verify(home);
}

#[test]
fn a_run_compacts_what_fits_in_its_budget_and_the_next_goes_on() {
    let t = tempfile::tempdir().unwrap();
    let home = t.path();
    feed_fixture(home, "claude-code", "basic");
    // No time at all: nothing is begun.
    std::fs::write(
        home.join("config.toml"),
        "[archive]\ncompact_budget_ms = 0\n",
    )
    .unwrap();
    finalize(home, &[]);
    let (files, compressed, _, _) = status(home);
    assert!(files > 0);
    assert_eq!(compressed, 0);
    // The next run with time to spare finishes the job.
    std::fs::remove_file(home.join("config.toml")).unwrap();
    finalize(home, &[]);
    let (files, compressed, _, _) = status(home);
    assert_eq!(compressed, files);
    verify(home);
}

#[test]
fn a_bad_config_is_a_warning_and_the_run_still_succeeds() {
    let t = tempfile::tempdir().unwrap();
    let home = t.path();
    feed_fixture(home, "claude-code", "basic");
    std::fs::write(home.join("config.toml"), "[archive]\ncompact = 'yes'\n").unwrap();
    let out = run(home, &["finalize"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("config.toml") && err.contains("not compacted"),
        "{err}"
    );
    assert_eq!(status(home).1, 0);
    verify(home);
}

#[test]
fn a_finalizer_waiting_for_the_lease_stops_it_and_the_next_run_finishes() {
    let t = tempfile::tempdir().unwrap();
    let home = t.path();
    feed_fixture(home, "claude-code", "basic");
    feed_fixture(home, "copilot", "basic-shell-anthropic");
    finalize(home, &["--no-compact"]);
    // A finalizer waiting for the lease holds `finalize.want` shared.
    let want = std::fs::File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(home.join("ledgers/finalize.want"))
        .unwrap();
    want.lock_shared().unwrap();
    feed_fixture(home, "claude-code", "tool-failure");
    finalize(home, &[]);
    let (files, compressed, _, _) = status(home);
    assert!(files > 0);
    assert_eq!(compressed, 0, "nothing begun while another waits");
    want.unlock().unwrap();
    finalize(home, &[]);
    let (files, compressed, _, _) = status(home);
    assert_eq!(compressed, files, "the next run converts every file");
    verify(home);
}
