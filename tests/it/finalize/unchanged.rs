//! A record that did not change since `finalize` read it to its end (same
//! file, size and modification time) is not opened again; one that grew
//! or was rewritten is read as before. The proof that the skip happens is
//! a rewrite hidden behind an unchanged modification time: skipped, it
//! goes unnoticed; once the time moves, it is read and reported.

use std::path::Path;
use std::time::{Duration, SystemTime};

use super::records::{append_line, events, finalize, of_type, with_transcript};

/// Set `path`'s modification time.
fn set_mtime(path: &Path, at: SystemTime) {
    let file = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    file.set_modified(at).unwrap();
}

fn mtime(path: &Path) -> SystemTime {
    std::fs::metadata(path).unwrap().modified().unwrap()
}

/// The transcript followed to its end, written a minute ago (its time
/// settled, so the read keeps it).
fn followed(home: &Path) -> std::path::PathBuf {
    let transcript = with_transcript(home);
    set_mtime(&transcript, SystemTime::now() - Duration::from_secs(60));
    finalize(home);
    transcript
}

/// `bytes` with the last line's session id changed in one character:
/// the same length, other bytes, inside what the cursor's fingerprint
/// covers.
fn rewritten(bytes: &[u8]) -> Vec<u8> {
    let at = bytes
        .windows(8)
        .rposition(|w| w == b"82655d0f")
        .expect("the session id is on the last line");
    let mut out = bytes.to_vec();
    out[at] = b'9';
    out
}

#[test]
fn a_rewrite_is_skipped_while_size_and_time_stay_and_read_once_the_time_moves() {
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    let transcript = followed(home);
    let before = events(home).len();
    assert!(of_type(&events(home), "record.problem").is_empty());

    // The same bytes' length, the same inode, the time put back.
    let time = mtime(&transcript);
    let bytes = std::fs::read(&transcript).unwrap();
    std::fs::write(&transcript, rewritten(&bytes)).unwrap();
    set_mtime(&transcript, time);
    let idle = finalize(home);
    assert_eq!(idle["record_signals"], 0, "{idle}");
    let after = events(home);
    assert_eq!(after.len(), before, "not opened, nothing recorded");
    assert!(of_type(&after, "record.problem").is_empty());

    // A new time: read, and the change before the cursor is reported.
    set_mtime(&transcript, time + Duration::from_secs(1));
    finalize(home);
    let after = events(home);
    let problems = of_type(&after, "record.problem");
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert_eq!(problems[0]["payload"]["kind"], "rewritten");
}

#[test]
fn an_append_after_a_skip_is_read() {
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    let transcript = followed(home);
    let idle = finalize(home);
    assert_eq!(idle["record_signals"], 0, "{idle}");
    let before = of_type(&events(home), "message.user").len();

    let line = r#"{"parentUuid":null,"isSidechain":false,"promptId":"p-after-skip","type":"user","message":{"role":"user","content":"appended after a skip"},"uuid":"u-after-skip","timestamp":"2026-11-30T00:40:00.000Z","userType":"external","cwd":"/tmp/cc-capture/runs/basic/proj","sessionId":"82655d0f-45cd-404f-9e4e-e90fea255247","version":"2.1.332"}"#;
    append_line(&transcript, line);
    let read = finalize(home);
    assert!(read["record_signals"].as_u64() >= Some(1), "{read}");
    let all = events(home);
    let users = of_type(&all, "message.user");
    assert_eq!(users.len(), before + 1);
    assert!(
        users
            .iter()
            .any(|e| e["payload"]["text"] == "appended after a skip"),
        "{users:?}"
    );
    assert!(of_type(&all, "record.problem").is_empty());
}

/// A record read to its end by a run that could not keep its time (just
/// written) is kept on the next run that can: an empty chunk, once, and
/// nothing is recorded from it.
#[test]
fn a_record_read_while_its_time_was_fresh_is_stamped_once_later() {
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    let transcript = with_transcript(home);
    set_mtime(&transcript, SystemTime::now() + Duration::from_secs(3600));
    finalize(home);
    let before = events(home).len();
    // Still fresh: nothing to keep, nothing spooled.
    assert_eq!(finalize(home)["record_signals"], 0);
    set_mtime(&transcript, SystemTime::now() - Duration::from_secs(60));
    assert_eq!(finalize(home)["record_signals"], 1);
    assert_eq!(finalize(home)["record_signals"], 0);
    assert_eq!(events(home).len(), before);
}
