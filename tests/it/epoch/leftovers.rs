#![cfg(feature = "failpoints")]
//! What an epoch advance killed at a random moment leaves behind, and the
//! rerun that must end as one uninterrupted advance would:
//!
//! - a kill inside the archive step's fence or manifest write leaves the
//!   write's temporary file in the epoch directory; the resumed archive
//!   step must not list it in the tree manifest (the manifest write would
//!   rename it away, and every later `finalize` and `epoch advance` would
//!   be refused with `.MANIFEST.json.tmp: missing`);
//! - an archive that an older build already wrote that way resumes too.
//!
//! The kill lands at the named failpoint just before the archive step and
//! the leftovers are what `durable::write_atomic` leaves when killed
//! before its rename; `scripts/kill-campaign.sh epoch-advance` finds the
//! same states with real random-delay kills.

use crate::common;

use std::path::{Path, PathBuf};

use common::*;

fn gen1_home() -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/epoch/gen1/home");
    copy_tree(&fixture, home.path());
    home
}

fn killed_at(home: &Path, point: &str) {
    let out = harnery(home)
        .env("HARNERY_TEST_SCHEMA_SUFFIX", NEXT_CONTRACT)
        .env("HARNERY_FAILPOINTS", point)
        .args(["epoch", "advance"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        None,
        "{point}: killed ({})",
        stderr(&out)
    );
}

fn ok(home: &Path, args: &[&str]) -> String {
    let out = next(home, args);
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    stdout(&out)
}

fn manifest_paths(archive: &Path) -> Vec<String> {
    let m: serde_json::Value =
        serde_json::from_slice(&std::fs::read(archive.join("MANIFEST.json")).unwrap()).unwrap();
    m["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap().to_string())
        .collect()
}

/// The home keeps draining: cron's finalize, then new hook records and
/// another finalize, and the epochs check out.
fn drains_and_verifies(home: &Path) {
    let run: serde_json::Value = serde_json::from_str(&ok(home, &["finalize", "--json"])).unwrap();
    assert!(run["completed_epoch_advance"].is_object(), "{run}");
    feed_fixture(home, "claude-code", "parallel");
    ok(home, &["finalize"]);
    let again: serde_json::Value =
        serde_json::from_str(&ok(home, &["epoch", "advance", "--json"])).unwrap();
    assert_eq!(again["already_current"], true);
    let verdict = next(home, &["epoch", "verify"]);
    assert!(verdict.status.success(), "{}", stdout(&verdict));
    ok(home, &["verify"]);
    let sessions = ok(home, &["sessions", "--epoch", "all"]);
    assert!(
        sessions.contains("8d31d374"),
        "the carry landed: {sessions}"
    );
}

#[test]
fn a_kill_inside_the_manifest_write_leaves_no_entry_for_its_temporary_file() {
    let home = gen1_home();
    killed_at(home.path(), "epoch-after-quiesce");
    let live = home.path().join("ledgers/v2");
    // The fence was written, the manifest's write was killed before its
    // rename: its temporary file holds part of a manifest.
    std::fs::write(live.join(".ARCHIVED.json.tmp"), b"{\"genesis_id\":").unwrap();
    std::fs::write(
        live.join(".MANIFEST.json.tmp"),
        b"{\n  \"genesis_id\": \"gen_",
    )
    .unwrap();
    drains_and_verifies(home.path());
    let listed = manifest_paths(&the_archive(home.path()));
    assert!(
        listed.iter().all(|p| !p.ends_with(".tmp")),
        "the manifest lists a leftover of the killed run: {listed:?}"
    );
    assert!(listed.contains(&"ledger.sqlite".to_string()), "{listed:?}");
}

/// Make a read-only archive writable, run `edit`, and make it read-only
/// again (as the advance left it).
fn with_writable(dir: &Path, edit: impl FnOnce()) {
    use std::os::unix::fs::PermissionsExt;
    let set =
        |p: &PathBuf, mode| std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode));
    set(&dir.to_path_buf(), 0o700).unwrap();
    set(&dir.join("MANIFEST.json"), 0o600).unwrap();
    edit();
    set(&dir.join("MANIFEST.json"), 0o400).unwrap();
    set(&dir.to_path_buf(), 0o500).unwrap();
}

#[test]
fn an_archive_whose_manifest_lists_its_own_temporary_file_resumes() {
    let home = gen1_home();
    killed_at(home.path(), "epoch-after-archive");
    let archive = the_archive(home.path());
    // What an older build's resumed archive step wrote: the killed run's
    // `.MANIFEST.json.tmp`, listed, then renamed to MANIFEST.json.
    with_writable(&archive, || {
        let path = archive.join("MANIFEST.json");
        let mut m: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        m["files"].as_array_mut().unwrap().insert(
            0,
            serde_json::json!({"path": ".MANIFEST.json.tmp", "size": 17, "blake3": "0".repeat(64)}),
        );
        std::fs::write(&path, serde_json::to_vec_pretty(&m).unwrap()).unwrap();
    });
    drains_and_verifies(home.path());
}

#[test]
fn a_leftover_found_in_an_archive_is_still_reported_as_added() {
    let home = gen1_home();
    ok(home.path(), &["epoch", "advance"]);
    let archive = the_archive(home.path());
    with_writable(&archive, || {
        std::fs::write(archive.join(".MANIFEST.json.tmp"), b"{").unwrap();
    });
    let verdict = next(home.path(), &["epoch", "verify"]);
    assert_eq!(verdict.status.code(), Some(1), "{}", stdout(&verdict));
    assert!(
        stdout(&verdict).contains(".MANIFEST.json.tmp: added"),
        "{}",
        stdout(&verdict)
    );
}
