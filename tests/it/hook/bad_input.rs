//! Hostile and broken input: the hook always exits 0, prints nothing on
//! stdout, and writes nothing outside HARNERY_HOME.

use crate::hook::support as hook_support;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

use hook_support::*;

/// Run the hook with `HOME` pointing at a sandbox, so that anything written
/// outside HARNERY_HOME would show up there.
fn run_sandboxed(
    input: &[u8],
    args: &[&str],
) -> (tempfile::TempDir, Vec<harnery::spool::SpoolRecord>) {
    let sandbox = tempfile::tempdir().unwrap();
    let home = sandbox.path().join("hh");
    let mut c = hook_cmd(&home, args);
    c.env("HOME", sandbox.path().join("user"))
        .current_dir(sandbox.path());
    run_cmd(c, input);
    assert_outside_untouched(sandbox.path());
    let (records, damage) = read_all(&home);
    assert!(damage.is_empty());
    (sandbox, records)
}

fn assert_outside_untouched(sandbox: &Path) {
    for p in tree(sandbox) {
        assert!(
            p.starts_with(sandbox.join("hh")),
            "written outside HARNERY_HOME: {}",
            p.display()
        );
    }
}

fn one_record(input: &[u8], args: &[&str]) -> harnery::spool::SpoolRecord {
    let (_t, mut records) = run_sandboxed(input, args);
    assert_eq!(records.len(), 1);
    let r = records.remove(0);
    assert_eq!(r.payload, input);
    r
}

#[test]
fn empty_not_json_and_invalid_utf8_are_recorded_as_is() {
    for input in [
        &b""[..],
        b"not json at all",
        b"\xff\xfe\x00garbage\x80",
        b"{\"session_id\": 12}",
    ] {
        let r = one_record(input, &["claude-code"]);
        assert_eq!(r.envelope.session_key, "_nosession");
        assert_eq!(r.envelope.session_id, None);
    }
    let r = one_record(b"{}", &["copilot", "preToolUse"]);
    assert_eq!(r.envelope.event.as_deref(), Some("preToolUse"));
}

#[test]
fn unsafe_session_ids_are_hashed_and_kept() {
    let long = "x".repeat(10 * 1024);
    for id in [
        "../../etc",
        "/",
        ".",
        "..",
        long.as_str(),
        "a\u{1}b\u{7f}\n",
        "a/b",
    ] {
        let payload = serde_json::json!({"session_id": id, "hook_event_name": "Stop"}).to_string();
        let r = one_record(payload.as_bytes(), &["claude-code"]);
        assert_eq!(r.envelope.session_id.as_deref(), Some(id));
        assert!(r.envelope.session_key.starts_with('_') && r.envelope.session_key.len() == 65);
    }
    let r = one_record(br#"{"sessionId":"../x"}"#, &["../../evil", "preToolUse"]);
    assert_eq!(r.envelope.adapter, "../../evil");
}

#[test]
fn payload_above_the_bound_is_truncated_explicitly() {
    let bound = harnery::spool::hook::MAX_PAYLOAD;
    let mut input = br#"{"session_id":"big","hook_event_name":"PostToolUse","x":""#.to_vec();
    input.resize(bound + 1000, b'a');
    let (_t, records) = run_sandboxed(&input, &["claude-code"]);
    assert_eq!(records.len(), 1);
    let r = &records[0];
    assert!(r.envelope.truncated);
    assert_eq!(r.envelope.payload_len, input.len() as u64);
    assert_eq!(r.payload.len(), bound);
    assert_eq!(r.payload[..], input[..bound]);
    assert_eq!(
        r.envelope.payload_blake3,
        blake3::hash(&input).to_hex().to_string()
    );
    assert_eq!(r.envelope.session_id.as_deref(), Some("big"));
}

#[test]
fn stdin_that_never_closes_is_bounded_and_marked_incomplete() {
    let home = tempfile::tempdir().unwrap();
    for input in [
        &br#"{"session_id":"open","hook_event_name":"SessionEnd"}"#[..],
        b"",
        b"{\"session_id\":\"op",
    ] {
        let mut child = hook_cmd(home.path(), &["claude-code"]).spawn().unwrap();
        let mut stdin = child.stdin.take().unwrap();
        std::io::Write::write_all(&mut stdin, input).unwrap();
        let start = Instant::now();
        let out = child.wait_with_output().unwrap();
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "hook hung on open stdin"
        );
        assert_ok(&out);
        drop(stdin);
    }
    let (records, _) = read_all(home.path());
    assert_eq!(records.len(), 3);
    assert!(records.iter().all(|r| r.envelope.incomplete));
}

#[test]
fn symlinked_session_dir_goes_to_dead_letter_not_through_the_link() {
    let sandbox = tempfile::tempdir().unwrap();
    let home = sandbox.path().join("hh");
    let target = sandbox.path().join("target");
    std::fs::create_dir_all(&target).unwrap();
    std::fs::create_dir_all(home.join("spool/intake/claude-code")).unwrap();
    std::os::unix::fs::symlink(&target, home.join("spool/intake/claude-code/s1")).unwrap();
    let payload = br#"{"session_id":"s1","hook_event_name":"Stop"}"#;
    run_hook(&home, &["claude-code"], payload);
    assert!(tree(&target).is_empty(), "wrote through a planted symlink");
    let (records, _) = read_all(&home);
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].payload, payload);
    assert_eq!(
        records[0].envelope.write_path,
        harnery::spool::WritePath::DeadLetter
    );
    // A planted symlink in place of the active segment is refused too.
    std::fs::create_dir_all(home.join("spool/intake/claude-code/s2")).unwrap();
    let victim = sandbox.path().join("victim");
    std::fs::write(&victim, b"keep").unwrap();
    std::os::unix::fs::symlink(&victim, home.join("spool/intake/claude-code/s2/active.seg"))
        .unwrap();
    run_hook(&home, &["claude-code"], br#"{"session_id":"s2"}"#);
    assert_eq!(std::fs::read(&victim).unwrap(), b"keep");
    let (records, _) = read_all(&home);
    assert_eq!(records.len(), 2);
}

#[test]
fn read_only_home_still_exits_zero_silently_on_stdout() {
    let sandbox = tempfile::tempdir().unwrap();
    let home = sandbox.path().join("hh");
    std::fs::create_dir(&home).unwrap();
    std::fs::set_permissions(&home, std::fs::Permissions::from_mode(0o500)).unwrap();
    let out = run_hook(&home, &["copilot", "preToolUse"], br#"{"sessionId":"ro"}"#);
    // As root the permission bits do not bind: the record lands; as a user it
    // is reported on stderr. Either way: exit 0, nothing on stdout.
    let (records, _) = read_all(&home);
    assert!(records.len() == 1 || String::from_utf8_lossy(&out.stderr).contains("LOST"));
    std::fs::set_permissions(&home, std::fs::Permissions::from_mode(0o700)).unwrap();
    assert_outside_untouched(sandbox.path());
}

#[test]
fn home_not_a_directory_reports_on_stderr() {
    let sandbox = tempfile::tempdir().unwrap();
    let home = sandbox.path().join("hh");
    std::fs::write(&home, b"a file").unwrap();
    let out = run_hook(&home, &["claude-code"], br#"{"session_id":"x"}"#);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("LOST") && err.lines().count() == 1, "{err}");
}

#[test]
fn home_unset_uses_harnery_home() {
    let sandbox = tempfile::tempdir().unwrap();
    let home = sandbox.path().join("hh");
    let mut c = hook_cmd(&home, &["claude-code"]);
    c.env_remove("HOME");
    run_cmd(c, br#"{"session_id":"nohome"}"#);
    assert_eq!(read_all(&home).0.len(), 1);
}

/// Neither `HARNERY_HOME` nor `HOME`: the record lands in the password
/// database's home (a stand-in here: the test must never reach the real
/// one, where this case would otherwise write on every `cargo test`).
#[test]
#[cfg_attr(not(feature = "failpoints"), ignore = "needs --features failpoints")]
fn home_and_harnery_home_unset_use_the_passwd_home() {
    let sandbox = tempfile::tempdir().unwrap();
    let passwd_home = sandbox.path().join("pw");
    std::fs::create_dir(&passwd_home).unwrap();
    let mut c = hook_cmd(&sandbox.path().join("unused"), &["claude-code"]);
    c.env_remove("HARNERY_HOME")
        .env_remove("HOME")
        .env("HARNERY_TEST_PASSWD_HOME", &passwd_home);
    let out = run_cmd(c, br#"{"session_id":"nohome2"}"#);
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (records, _) = read_all(&passwd_home.join(".harnery"));
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].payload, br#"{"session_id":"nohome2"}"#);
    assert!(!sandbox.path().join("unused").exists());
    // Every write path failing there too: still exit 0, one LOST line.
    let mut c = hook_cmd(&sandbox.path().join("unused"), &["claude-code"]);
    c.env_remove("HARNERY_HOME")
        .env_remove("HOME")
        .env("HARNERY_TEST_PASSWD_HOME", &passwd_home)
        .env("HARNERY_FAILPOINTS", "segment_append,fallback-,dl-");
    let out = run_cmd(c, br#"{"session_id":"nohome3"}"#);
    assert!(String::from_utf8_lossy(&out.stderr).contains("LOST"));
}

#[test]
#[cfg_attr(not(feature = "failpoints"), ignore = "needs --features failpoints")]
fn every_fallback_path_is_read_back() {
    let home = tempfile::tempdir().unwrap();
    let payload = br#"{"session_id":"fp","hook_event_name":"Stop"}"#;
    for (fp, path) in [
        ("segment_append", harnery::spool::WritePath::Fallback),
        (
            "segment_append,fallback-",
            harnery::spool::WritePath::DeadLetter,
        ),
    ] {
        let mut c = hook_cmd(home.path(), &["claude-code"]);
        c.env("HARNERY_FAILPOINTS", fp);
        run_cmd(c, payload);
        let (records, _) = read_all(home.path());
        assert!(
            records
                .iter()
                .any(|r| r.envelope.write_path == path && r.payload == payload)
        );
    }
    let mut c = hook_cmd(home.path(), &["claude-code"]);
    c.env("HARNERY_FAILPOINTS", "segment_append,fallback-,dl-");
    let out = run_cmd(c, payload);
    assert!(String::from_utf8_lossy(&out.stderr).contains("LOST"));
}

#[test]
#[cfg_attr(not(feature = "failpoints"), ignore = "needs --features failpoints")]
fn panic_still_exits_zero() {
    let home = tempfile::tempdir().unwrap();
    let mut c = hook_cmd(home.path(), &["claude-code"]);
    c.env("HARNERY_FAILPOINTS", "panic");
    let out = run_cmd(c, b"{}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("internal error"));
}

#[test]
fn endless_stdin_is_cut_at_the_total_bound() {
    let home = tempfile::tempdir().unwrap();
    let mut child = hook_cmd(home.path(), &["copilot", "postToolUse"])
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let feeder = std::thread::spawn(move || {
        let chunk = vec![b'y'; 64 * 1024];
        let _ = std::io::Write::write_all(&mut stdin, br#"{"sessionId":"endless","x":""#);
        while std::io::Write::write_all(&mut stdin, &chunk).is_ok() {}
    });
    let start = Instant::now();
    let out = child.wait_with_output().unwrap();
    assert!(
        start.elapsed() < Duration::from_secs(30),
        "hook did not stop reading"
    );
    assert_ok(&out);
    feeder.join().unwrap();
    let (records, _) = read_all(home.path());
    assert_eq!(records.len(), 1);
    assert!(records[0].envelope.incomplete);
    assert_eq!(records[0].envelope.session_id.as_deref(), Some("endless"));
}

#[test]
fn spool_directories_are_0700_and_files_0600() {
    use std::os::unix::fs::MetadataExt;
    let home = tempfile::tempdir().unwrap();
    let root = home.path().join("hh");
    run_hook(&root, &["claude-code"], br#"{"session_id":"modes"}"#);
    // With failpoints compiled in, a second record is forced through the
    // fallback path so that its file's mode is checked too.
    let expected_paths = if cfg!(feature = "failpoints") {
        let mut c = hook_cmd(&root, &["claude-code"]);
        c.env("HARNERY_FAILPOINTS", "segment_append");
        run_cmd(c, br#"{"session_id":"modes"}"#);
        7
    } else {
        6
    };
    let paths = tree(&root);
    assert!(paths.len() >= expected_paths, "{paths:?}");
    for p in paths {
        let m = std::fs::symlink_metadata(&p).unwrap();
        let want = if m.is_dir() { 0o700 } else { 0o600 };
        assert_eq!(m.mode() & 0o777, want, "{}", p.display());
    }
}
