//! Tests of `ledger::raw`.

use std::os::unix::fs::MetadataExt;

use super::*;
use crate::spool::{SPOOL_FORMAT_VERSION, frame};

/// A spool file of one record per event name.
fn spool_file(path: &Path, events: &[&str]) {
    spool_file_padded(path, events, 0);
}

/// As [`spool_file`], each payload padded by `pad` bytes.
fn spool_file_padded(path: &Path, events: &[&str], pad: usize) {
    let mut bytes = Vec::new();
    for (i, event) in events.iter().enumerate() {
        let fill = "x".repeat(pad);
        let payload = format!(r#"{{"hook_event_name":"{event}","pad":"{fill}"}}"#);
        let envelope = serde_json::json!({
            "v": 1, "record_id": format!("r{i}"), "adapter": "claude-code",
            "event": event, "session_id": "s", "session_key": "s",
            "received_ns": i, "boot_id": null, "boottime_ns": null, "pid": 1,
            "writer": "test", "payload_len": payload.len(),
            "payload_blake3": blake3::hash(payload.as_bytes()).to_hex().to_string(),
            "write_path": "segment",
        });
        bytes.extend(frame::encode_record(
            SPOOL_FORMAT_VERSION,
            envelope.to_string().as_bytes(),
            payload.as_bytes(),
        ));
    }
    std::fs::write(path, bytes).unwrap();
}

/// Whether the record at `at` is the `i`th of its file, named `event`.
fn is_at(archive: &mut Archive, at: u64, event: &str, i: i64) -> Result<(), String> {
    let want = Identity {
        session_key: "s",
        event: Some(event),
        received_ns: i,
    };
    archive.identity_at(at, &want)
}

/// The archive links the spool files (no byte copied) and reads them
/// as one concatenation, across the boundary between them.
#[test]
fn an_archive_links_its_files_and_reads_them_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.seg"), dir.path().join("b.seg"));
    spool_file(&a, &["SessionStart", "Stop"]);
    spool_file(&b, &["PreToolUse"]);
    let ledger_dir = dir.path().join("ledger");
    std::fs::create_dir(&ledger_dir).unwrap();
    let kept = keep(&ledger_dir, "b1", &[&a, &b]).unwrap();
    let inode = |p: &Path| std::fs::metadata(p).unwrap().ino();
    assert_eq!(inode(&kept.join(member_name(0))), inode(&a));
    assert_eq!(inode(&kept.join(member_name(1))), inode(&b));
    let first_len = std::fs::metadata(&a).unwrap().len();
    let mut archive = Archive::open(&ledger_dir, "b1").unwrap();
    assert_eq!(is_at(&mut archive, 0, "SessionStart", 0), Ok(()));
    assert_eq!(is_at(&mut archive, first_len, "PreToolUse", 0), Ok(()));
    let wrong = is_at(&mut archive, 0, "Stop", 0).unwrap_err();
    assert!(wrong.contains("the record there is"), "{wrong}");
    let past = first_len + std::fs::metadata(&b).unwrap().len();
    let err = is_at(&mut archive, past, "Stop", 1).unwrap_err();
    assert!(err.contains("past the end"), "{err}");
}

/// Archives written as one file, before they were linked, still read.
#[test]
fn a_single_file_archive_still_reads() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(RAW_DIR)).unwrap();
    spool_file(&single_file_path(dir.path(), "old"), &["Stop"]);
    let mut archive = Archive::open(dir.path(), "old").unwrap();
    assert_eq!(is_at(&mut archive, 0, "Stop", 0), Ok(()));
}

/// Records larger than the read-ahead window, records the window holds
/// several of, lookups out of order, and a record the file cuts short.
#[test]
fn records_read_through_the_window_in_any_order() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(RAW_DIR)).unwrap();
    let path = single_file_path(dir.path(), "w");
    let events = ["A", "B", "C", "D"];
    spool_file_padded(&path, &events, WINDOW_LEN + 1000);
    let bytes = std::fs::read(&path).unwrap();
    let record_len = bytes.len() as u64 / 4;
    let mut archive = Archive::open(dir.path(), "w").unwrap();
    for i in [2, 0, 3, 1, 1] {
        let at = i as u64 * record_len;
        assert_eq!(is_at(&mut archive, at, events[i], i as i64), Ok(()));
    }
    spool_file_padded(&path, &events, 10);
    let record_len = std::fs::metadata(&path).unwrap().len() / 4;
    let mut archive = Archive::open(dir.path(), "w").unwrap();
    for i in [3, 0, 1, 2] {
        let at = i as u64 * record_len;
        assert_eq!(is_at(&mut archive, at, events[i], i as i64), Ok(()));
    }
    let cut = bytes.len() - 10;
    std::fs::write(&path, &bytes[..cut]).unwrap();
    let mut archive = Archive::open(dir.path(), "w").unwrap();
    let big = bytes.len() as u64 / 4;
    assert_eq!(is_at(&mut archive, 2 * big, "C", 2), Ok(()));
    let torn = is_at(&mut archive, 3 * big, "D", 3).unwrap_err();
    assert!(torn.contains("byte"), "{torn}");
}

/// A batch directory of three files, the middle one compressed as an
/// older build's compaction left it; returns the archive's bytes.
fn mixed_batch(ledger_dir: &Path, batch: &str) -> Vec<u8> {
    let dir = archive_path(ledger_dir, batch);
    std::fs::create_dir_all(&dir).unwrap();
    let mut all = Vec::new();
    for (i, events) in [&["SessionStart", "Stop"][..], &["PreToolUse"], &["Stop"]]
        .iter()
        .enumerate()
    {
        let plain = dir.join(member_name(i));
        spool_file_padded(&plain, events, 3000 * (i + 1));
        all.extend(std::fs::read(&plain).unwrap());
        if i == 1 {
            crate::ledger::rawz::compress_file(&plain, &compressed_path(&plain), 3).unwrap();
            std::fs::remove_file(&plain).unwrap();
        }
    }
    all
}

/// The archive read as one stream is its files' bytes one after another,
/// compressed or not, whatever the sizes of the reads.
#[test]
fn the_archive_reads_as_one_stream_across_its_files() {
    use std::io::Read;
    let dir = tempfile::tempdir().unwrap();
    let all = mixed_batch(dir.path(), "m");
    let archive = Archive::open(dir.path(), "m").unwrap();
    assert_eq!(archive.len(), all.len() as u64);
    let mut got = Vec::new();
    archive.bytes().read_to_end(&mut got).unwrap();
    assert!(got == all);
    let mut small = Vec::new();
    let mut bytes = archive.bytes();
    let mut buf = [0u8; 777];
    loop {
        match bytes.read(&mut buf).unwrap() {
            0 => break,
            n => small.extend_from_slice(&buf[..n]),
        }
    }
    assert!(small == all);
}

/// A reader that opened a batch's directory before compaction packed it
/// and deleted the directory reads on from the packed file; one that
/// opens it then finds the packed file first.
#[test]
fn a_reader_that_opened_the_directory_reads_on_from_the_packed_file() {
    use std::io::Read;
    let dir = tempfile::tempdir().unwrap();
    let all = mixed_batch(dir.path(), "p");
    let mut before = Archive::open(dir.path(), "p").unwrap();
    assert_eq!(is_at(&mut before, 0, "SessionStart", 0), Ok(()));
    let last_at = all.len() as u64
        - std::fs::metadata(archive_path(dir.path(), "p").join(member_name(2)))
            .unwrap()
            .len();
    let packed = packed_path(dir.path(), "p");
    crate::ledger::rawz::compress(&mut before.bytes(), &packed, 3).unwrap();
    std::fs::remove_dir_all(archive_path(dir.path(), "p")).unwrap();
    // The third file was never opened: it is gone, and read from the packed file.
    assert_eq!(is_at(&mut before, last_at, "Stop", 0), Ok(()));
    let after = Archive::open(dir.path(), "p").unwrap();
    assert_eq!(after.files().collect::<Vec<_>>(), [packed.as_path()]);
    let mut got = Vec::new();
    after.bytes().read_to_end(&mut got).unwrap();
    assert!(got == all);
}

/// A batch packed and its directory deleted after a reader listed the
/// directory, before it sized the files: the reader opens the packed file.
#[cfg(feature = "failpoints")]
#[test]
fn a_batch_packed_between_listing_and_sizing_opens_packed() {
    use std::io::Read;
    let dir = tempfile::tempdir().unwrap();
    let all = mixed_batch(dir.path(), "q");
    let (ledger_dir, packed) = (dir.path().to_path_buf(), packed_path(dir.path(), "q"));
    let listed = archive_path(dir.path(), "q");
    let to_pack = packed.clone();
    crate::failpoint::arm_hook(
        LISTED,
        &listed,
        Box::new(move || {
            let archive = Archive::open(&ledger_dir, "q").unwrap();
            crate::ledger::rawz::compress(&mut archive.bytes(), &to_pack, 3).unwrap();
            std::fs::remove_dir_all(archive_path(&ledger_dir, "q")).unwrap();
        }),
    );
    let opened = Archive::open(dir.path(), "q").unwrap();
    assert!(!listed.exists(), "the hook ran");
    assert_eq!(opened.files().collect::<Vec<_>>(), [packed.as_path()]);
    let mut got = Vec::new();
    opened.bytes().read_to_end(&mut got).unwrap();
    assert!(got == all);
}

/// The archives a verify keeps open hold at most `WINDOWS_LEN` of
/// decompressed frames besides the one in use, which keeps its own.
#[test]
fn the_archives_kept_open_give_back_their_windows() {
    let dir = tempfile::tempdir().unwrap();
    let raw = dir.path().join(RAW_DIR);
    std::fs::create_dir_all(&raw).unwrap();
    let batches: Vec<String> = (0..5).map(|i| format!("b{i}")).collect();
    for b in &batches {
        let plain = raw.join(format!("{b}{SUFFIX}"));
        spool_file_padded(&plain, &["Stop"], 3 << 20);
        crate::ledger::rawz::compress_file(&plain, &packed_path(dir.path(), b), 3).unwrap();
        std::fs::remove_file(&plain).unwrap();
    }
    let mut open = OpenArchives::default();
    let held = |open: &OpenArchives| -> Vec<usize> {
        let bytes = |(_, a): &(String, Result<Archive, String>)| {
            a.as_ref().map_or(0, |a| a.window.bytes.capacity())
        };
        open.open.iter().map(bytes).collect()
    };
    for b in batches.iter().chain(&batches[..1]) {
        let a = open.get(dir.path(), b).as_mut().unwrap();
        assert_eq!(is_at(a, 0, "Stop", 0), Ok(()));
        let windows = held(&open);
        let (in_use, others) = windows.split_last().unwrap();
        assert!(*in_use >= 3 << 20, "{windows:?}");
        assert!(
            others.iter().sum::<usize>() <= OpenArchives::WINDOWS_LEN,
            "{windows:?}"
        );
    }
    // More than one other kept a window, and at least one gave it back.
    let windows = held(&open);
    assert!(
        windows.iter().filter(|w| **w > 0).count() > 1,
        "{windows:?}"
    );
    assert!(windows.contains(&0), "{windows:?}");
}
