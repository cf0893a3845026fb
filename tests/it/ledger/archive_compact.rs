//! `harnery archive compact`: every raw signal of the corpus reads back
//! byte for byte from the archive packed one file a batch, a flipped byte
//! inside a frame is named by `verify`, and an archive as `finalize
//! --no-compact` writes it (uncompressed) reads and converts.

use crate::common;

use std::path::{Path, PathBuf};

#[cfg(feature = "failpoints")]
use super::raw_support::drain_in_batches;
use super::raw_support::raw_records;
use common::*;

/// Every fixture of both agents, fed through the real hook, finalized.
fn corpus_home(home: &Path) {
    feed_corpus(home);
    // The archive as finalize writes it, before any compaction.
    let out = run(home, &["finalize", "--no-compact"]);
    assert!(out.status.success(), "{}", stderr(&out));
}

/// Every fixture of both agents, fed through the real hook.
fn feed_corpus(home: &Path) {
    for agent in ["claude-code", "copilot"] {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures")
            .join(agent);
        let mut scenarios: Vec<_> = std::fs::read_dir(&root)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        scenarios.sort();
        for s in scenarios {
            let file = if agent == "copilot" {
                "hook-capture.jsonl"
            } else {
                "hooks.jsonl"
            };
            if root.join(&s).join(file).exists() {
                feed_fixture(home, agent, &s);
            }
        }
    }
}

fn raw_dir(home: &Path) -> PathBuf {
    home.join("ledgers/v2/raw")
}

/// Every archive file below `dir`, by its name below it.
fn files(dir: &Path) -> Vec<(String, PathBuf)> {
    let mut out = Vec::new();
    for e in walk(dir) {
        let name = e.strip_prefix(dir).unwrap().display().to_string();
        out.push((name, e));
    }
    out.sort();
    out
}

fn compact(home: &Path) -> serde_json::Value {
    let out = run(home, &["archive", "compact", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    serde_json::from_str(stdout(&out).trim()).unwrap()
}

#[test]
fn every_raw_signal_of_the_corpus_reads_back_after_compaction() {
    let t = tempfile::tempdir().unwrap();
    let home = t.path();
    corpus_home(home);
    // The previous build's archive: uncompressed spool files.
    let before_files = files(&raw_dir(home));
    assert!(before_files.iter().all(|(n, _)| n.ends_with(".seg")));
    let before_bytes: Vec<Vec<u8>> = before_files
        .iter()
        .map(|(_, p)| std::fs::read(p).unwrap())
        .collect();
    let records = raw_records(home);
    assert!(records.len() > 400, "{} raw signals", records.len());

    let done = compact(home);
    assert_eq!(
        done["compacted"]["files"].as_u64().unwrap(),
        before_files.len() as u64
    );
    // One file a batch, its name the batch's, holding the batch's files
    // one after another.
    let mut batches: Vec<(String, Vec<u8>)> = Vec::new();
    for ((name, _), bytes) in before_files.iter().zip(&before_bytes) {
        let (batch, _) = name.split_once('/').expect("a file of a batch directory");
        match batches.last_mut() {
            Some((b, all)) if b == batch => all.extend_from_slice(bytes),
            _ => batches.push((batch.to_string(), bytes.clone())),
        }
    }
    assert!(
        batches.len() < before_files.len(),
        "a batch of several files: {} batches, {} files",
        batches.len(),
        before_files.len()
    );
    assert_eq!(
        done["compacted"]["batches"].as_u64().unwrap(),
        batches.len() as u64
    );
    let after = files(&raw_dir(home));
    assert_eq!(after.len(), batches.len());
    for ((batch, bytes), (new, path)) in batches.iter().zip(&after) {
        assert_eq!(format!("{batch}.segz"), *new);
        assert!(harnery::ledger::rawz::is_compressed(path));
        let c = harnery::ledger::rawz::Compressed::open(path).unwrap();
        let mut got = Vec::new();
        c.read(0, usize::MAX, &mut got).unwrap();
        assert!(got == *bytes, "{}", path.display());
    }
    let dirs = std::fs::read_dir(raw_dir(home))
        .unwrap()
        .filter(|e| e.as_ref().unwrap().path().is_dir())
        .count();
    assert_eq!(dirs, 0, "no batch directory is left");
    assert_eq!(raw_records(home), records);
    let size = &done["archive"];
    assert!(size["bytes_on_disk"].as_u64() < size["original_bytes"].as_u64());
    assert_eq!(
        size["original_bytes"].as_u64().unwrap(),
        before_bytes.iter().map(|b| b.len() as u64).sum::<u64>()
    );

    let status = run(home, &["archive", "status", "--json"]);
    assert!(status.status.success(), "{}", stderr(&status));
    let status: serde_json::Value = serde_json::from_str(stdout(&status).trim()).unwrap();
    assert_eq!(status, *size);
    // `health` says the same in its human output.
    let health = stdout(&run(home, &["health"]));
    let line = format!(
        "raw archive: {} bytes on disk, {} bytes original",
        size["bytes_on_disk"], size["original_bytes"]
    );
    assert!(health.contains(&line), "{health}");

    // The home still opens for writing (raw_members records the new
    // files), verifies, and a second compaction has nothing to do.
    let v = run(home, &["verify"]);
    assert!(v.status.success(), "{}{}", stdout(&v), stderr(&v));
    feed_fixture(home, "claude-code", "basic");
    let f = run(home, &["finalize"]);
    assert!(f.status.success(), "{}", stderr(&f));
    let again = compact(home);
    assert_eq!(
        again["archive"]["files"],
        again["archive"]["compressed_files"]
    );
    let v = run(home, &["verify"]);
    assert!(v.status.success(), "{}{}", stdout(&v), stderr(&v));
}

#[test]
fn a_flipped_byte_inside_a_frame_is_named_by_verify() {
    let t = tempfile::tempdir().unwrap();
    let home = t.path();
    feed_fixture(home, "claude-code", "basic");
    let out = run(home, &["finalize"]);
    assert!(out.status.success(), "{}", stderr(&out));
    compact(home);
    let (_, path) = files(&raw_dir(home)).into_iter().next().unwrap();
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[100] ^= 0x20;
    std::fs::write(&path, &bytes).unwrap();
    let v = run(home, &["verify"]);
    assert_eq!(v.status.code(), Some(1), "{}", stdout(&v));
    let text = stdout(&v);
    assert!(text.contains("of session "), "{text}");
    assert!(text.contains("frame 0"), "{text}");
    let j = run(home, &["verify", "--json"]);
    let j: serde_json::Value = serde_json::from_str(stdout(&j).trim()).unwrap();
    let p = &j["raw_problems"][0];
    assert!(p["record_digest"].as_str().is_some_and(|d| !d.is_empty()));
    assert!(p["session_key"].as_str().is_some_and(|d| !d.is_empty()));
}

/// Packing checks the rows of many batches in one pass over them: a batch
/// with a damaged record is left as it is and named, and every other one
/// is packed.
#[cfg(feature = "failpoints")]
#[test]
fn a_damaged_batch_is_left_as_it_is_and_every_other_one_is_packed() {
    let t = tempfile::tempdir().unwrap();
    let home = t.path();
    feed_corpus(home);
    // A batch for each spool file.
    let batches = drain_in_batches(home, 1);
    assert!(batches.len() >= 8, "{batches:?}");
    let damaged = &batches[batches.len() / 2];
    let member = damaged.join("00000000.seg");
    // Damage no stat of the file shows (as a disk's can): the same
    // length, the same modification time.
    let modified = std::fs::metadata(&member).unwrap().modified().unwrap();
    let mut bytes = std::fs::read(&member).unwrap();
    bytes[100] ^= 0x20;
    std::fs::write(&member, &bytes).unwrap();
    std::fs::File::options()
        .write(true)
        .open(&member)
        .unwrap()
        .set_modified(modified)
        .unwrap();
    let name = damaged.file_name().unwrap().to_string_lossy().into_owned();
    // It exits 1, as a run with problems does.
    let out = run(home, &["archive", "compact", "--json"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let out: serde_json::Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    let done = &out["compacted"];
    assert_eq!(done["skipped_batches"], serde_json::json!([name]), "{done}");
    assert_eq!(done["batches"], batches.len() as u64 - 1, "{done}");
    assert!(damaged.is_dir(), "left as it was");
    let j = run(home, &["verify", "--json"]);
    let j: serde_json::Value = serde_json::from_str(stdout(&j).trim()).unwrap();
    let named: Vec<&str> = j["raw_problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["batch"].as_str().unwrap())
        .collect();
    assert!(!named.is_empty() && named.iter().all(|b| *b == name), "{j}");
}
