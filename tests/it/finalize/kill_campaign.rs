//! The short random-moment kill campaigns: `scripts/kill-campaign.sh OP N`
//! with a few trials per operation and a fixed seed, run against the
//! binaries this test build made. Each trial SIGKILLs the real operation
//! after a random delay, runs cron's `finalize` and new hook records
//! through the real hook, reruns the operation and compares the home (and
//! for `ship` the server) with an uninterrupted run of an identical home.
//! The long campaigns (200 trials and more per operation) and their
//! results are in docs/design/testing.md.

use std::path::Path;

/// Run one campaign; on failure the script's output names each failing
/// trial, its diff and the home it kept. Each seed is one whose delays all
/// fall in the first 60% of the calibrated run (`u` below 0.7), so a trial
/// is killed mid-run wherever that lands. On a loaded machine an
/// uninterrupted run can be slower than the trials after it, so that every
/// kill comes after the end; the campaign then runs again (calibrated
/// afresh), up to three times, and every run must end with every trial ok.
fn campaign(op: &str, trials: u32, seed: u64) {
    let mut outputs = String::new();
    for _ in 0..3 {
        let text = campaign_once(op, trials, seed);
        let killed = text
            .lines()
            .filter(|l| l.contains(", killed after"))
            .count();
        if killed > 0 {
            return;
        }
        outputs.push_str(&text);
    }
    panic!("no trial was killed mid-run in three campaigns: {outputs}");
}

/// One run of the campaign script; panics unless every trial ended as the
/// uninterrupted run did. Returns what it printed.
fn campaign_once(op: &str, trials: u32, seed: u64) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let bin = Path::new(env!("CARGO_BIN_EXE_harnery")).parent().unwrap();
    let work = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(root.join("scripts/kill-campaign.sh"))
        .args([op, &trials.to_string()])
        .env("BIN", bin)
        .env("SEED", seed.to_string())
        .env("WORK", work.path())
        .output()
        .expect("the campaign script runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{op} (SEED={seed}): {text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary = format!("{op}: {trials} trials, {trials} ok, 0 failed (SEED={seed})");
    assert!(text.contains(&summary), "{text}");
    text
}

#[test]
fn an_epoch_advance_killed_at_random_moments_ends_as_one_advance() {
    campaign("epoch-advance", 3, 45);
}

#[test]
fn an_archive_compact_killed_at_random_moments_ends_as_one_compact() {
    campaign("archive-compact", 2, 61);
}

#[test]
fn a_finalize_killed_at_random_moments_ends_as_one_finalize() {
    campaign("finalize", 2, 66);
}

#[test]
fn a_ship_killed_at_random_moments_ends_as_one_ship() {
    campaign("ship", 2, 69);
}

#[test]
fn a_restore_apply_killed_at_random_moments_ends_as_one_apply() {
    campaign("restore-apply", 2, 73);
}

/// Only a failpoints build writes the plain form the conversion starts from.
#[cfg(feature = "failpoints")]
#[test]
fn a_compact_events_killed_at_random_moments_ends_as_one_conversion() {
    campaign("compact-events", 2, 81);
}

#[test]
fn an_otlp_push_killed_at_random_moments_ends_as_one_push() {
    campaign("otlp-push", 2, 73);
}
