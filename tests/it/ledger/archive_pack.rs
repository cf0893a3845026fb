//! A raw archive an older build compacted file by file (each batch a
//! directory of `.segz` files, some of them still `.seg` when that build
//! stopped for its budget) is repacked one file a batch by the next
//! default `finalize`, every record reading back the same; a kill at each
//! step of the repacking leaves every record readable and `verify` clean,
//! and the next run finishes it. The home is a fixture that build wrote
//! (tests/fixtures/raw-archive/per-file).

use std::path::Path;

#[cfg(feature = "failpoints")]
use super::raw_support::drain_in_batches;
use super::raw_support::{not_packed, raw_records};
use crate::common::*;

/// A copy of the home the older build wrote.
fn older_home(to: &Path) {
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/raw-archive/per-file/home");
    copy_tree(&fixture, to);
}

/// `archive status --json`: (files, compressed files).
fn status(home: &Path) -> (u64, u64) {
    let v: serde_json::Value =
        serde_json::from_str(ok(home, &["archive", "status", "--json"]).trim()).unwrap();
    (
        v["files"].as_u64().unwrap(),
        v["compressed_files"].as_u64().unwrap(),
    )
}

#[test]
fn an_archive_compacted_file_by_file_is_repacked_by_the_next_finalize() {
    let t = tempfile::tempdir().unwrap();
    let home = t.path();
    older_home(home);
    let files = walk(&home.join("ledgers/v2/raw"));
    assert_eq!(files.len(), 4, "{files:?}");
    assert!(files.iter().all(|f| f.to_string_lossy().ends_with(".segz")));
    let records = raw_records(home);
    assert!(!records.is_empty());
    ok(home, &["verify"]);
    let before = ok(home, &["sessions", "--json"]);

    ok(home, &["finalize"]);
    assert_eq!(status(home), (2, 2), "one packed file a batch");
    assert!(not_packed(home).is_empty(), "{:?}", not_packed(home));
    assert_eq!(raw_records(home), records);
    ok(home, &["verify"]);
    assert_eq!(ok(home, &["sessions", "--json"]), before);
    // A later run's batch is packed too, and the packed ones stay.
    feed_fixture(home, "claude-code", "basic");
    ok(home, &["finalize"]);
    assert_eq!(status(home), (3, 3));
    assert!(not_packed(home).is_empty(), "{:?}", not_packed(home));
    ok(home, &["verify"]);
}

/// A batch the older build converted only in part (its budget ran out):
/// one file still `.seg`, recorded so, the other `.segz`.
#[test]
fn a_batch_converted_in_part_is_packed_whole() {
    let t = tempfile::tempdir().unwrap();
    let home = t.path();
    older_home(home);
    let records = raw_records(home);
    let raw = home.join("ledgers/v2/raw");
    let mut batch_files: Vec<_> = walk(&raw);
    batch_files.sort();
    let z = &batch_files[0];
    let c = harnery::ledger::rawz::Compressed::open(z).unwrap();
    let mut bytes = Vec::new();
    c.read(0, usize::MAX, &mut bytes).unwrap();
    let plain = z.with_extension("seg");
    std::fs::write(&plain, &bytes).unwrap();
    std::fs::remove_file(z).unwrap();
    let name = |p: &Path| p.strip_prefix(&raw).unwrap().display().to_string();
    let conn = rusqlite::Connection::open(home.join("ledgers/v2/ledger.sqlite")).unwrap();
    let changed = conn
        .execute(
            "UPDATE raw_members SET name = ?1, len = ?2, mtime_ns = ?3 WHERE name = ?4",
            rusqlite::params![name(&plain), bytes.len() as i64, mtime_ns(&plain), name(z)],
        )
        .unwrap();
    assert_eq!(changed, 1);
    drop(conn);
    assert_eq!(status(home), (4, 3));
    ok(home, &["verify"]);

    let out = ok(home, &["archive", "compact", "--json"]);
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["compacted"]["files"], 4);
    assert_eq!(v["compacted"]["batches"], 2);
    assert_eq!(status(home), (2, 2));
    assert!(not_packed(home).is_empty(), "{:?}", not_packed(home));
    assert_eq!(raw_records(home), records);
    ok(home, &["verify"]);
}

fn mtime_ns(p: &Path) -> i64 {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(p).unwrap();
    m.mtime() * 1_000_000_000 + m.mtime_nsec()
}

/// A kill at each step of the repacking a default `finalize` runs.
#[cfg(feature = "failpoints")]
#[test]
fn a_kill_at_each_step_of_the_repacking_leaves_every_record_readable() {
    let base = tempfile::tempdir().unwrap();
    older_home(base.path());
    let records = raw_records(base.path());
    for point in harnery::failpoint::COMPACT_POINTS {
        let t = tempfile::tempdir().unwrap();
        let home = t.path();
        copy_tree(base.path(), home);
        super::raw_support::killed_at(home, point, &["finalize"]);
        assert_eq!(raw_records(home), records, "{point}: after the kill");
        ok(home, &["verify"]);
        ok(home, &["finalize"]);
        assert_eq!(status(home), (2, 2), "{point}");
        assert!(
            not_packed(home).is_empty(),
            "{point}: {:?}",
            not_packed(home)
        );
        assert_eq!(raw_records(home), records, "{point}: after the rerun");
        ok(home, &["verify"]);
    }
}

/// Readers running while `archive compact` packs batch after batch (in
/// this process through the archive reader, and `verify` processes) read
/// every record at every moment: a reader that listed a batch's directory
/// before it was packed and deleted reads on from the packed file.
#[cfg(feature = "failpoints")]
#[test]
fn readers_read_every_record_while_batches_are_packed() {
    let t = tempfile::tempdir().unwrap();
    let home = t.path();
    for s in [
        "basic",
        "parallel",
        "file-tools",
        "compact",
        "interactive",
        "resume",
    ] {
        feed_fixture(home, "claude-code", s);
    }
    feed_fixture(home, "copilot", "basic-shell-openai");
    // Batches of a few files each, many of them.
    let batches = drain_in_batches(home, 8000).len();
    assert!(batches > 3, "{batches} batches");
    let records = raw_records(home);
    let mut compact = std::process::Command::new(assert_cmd::cargo::cargo_bin("harnery"))
        .env("HARNERY_HOME", home)
        .env("HARNERY_RECORDS", "off")
        // The slowest level: more reads while it packs.
        .args(["archive", "compact", "--level", "19"])
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("harnery starts");
    let mut rounds = 0;
    let mut verified = 0;
    loop {
        assert_eq!(raw_records(home), records, "round {rounds}");
        rounds += 1;
        if rounds % 4 == 0 {
            let v = run(home, &["verify"]);
            assert!(v.status.success(), "{}{}", stdout(&v), stderr(&v));
            verified += 1;
        }
        if compact.try_wait().unwrap().is_some() {
            break;
        }
    }
    assert!(compact.wait().unwrap().success());
    assert!(not_packed(home).is_empty(), "{:?}", not_packed(home));
    assert_eq!(raw_records(home), records);
    ok(home, &["verify"]);
    eprintln!("{rounds} reads of every record and {verified} verify runs while packing");
}
