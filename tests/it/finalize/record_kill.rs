//! A finalize killed in the middle of writing what it read from a large
//! record, then run again, leaves the record's messages in the ledger once
//! each and no spool damage: what a killed record pass wrote is never half
//! there (its bytes are read again from the record, so a torn copy would
//! be damage reported where nothing was lost). Killed in the middle of a
//! write by the kernel (`ulimit -f`, SIGXFSZ), and by SIGKILL at random
//! moments with cron's runs and the agent's new lines after it.

use std::path::{Path, PathBuf};
use std::time::Instant;

use super::records::{append_line, events, of_type, run, with_transcript};
use crate::common::{kill_after, kill_delay, stderr};

/// Messages added to the scenario's record, each this long.
const MESSAGES: usize = 192;
const MESSAGE_LEN: usize = 64 << 10;
/// The scenario's session.
const SESSION: &str = "82655d0f-45cd-404f-9e4e-e90fea255247";

/// The scenario's record with [`MESSAGES`] long user messages after it
/// (12 MiB: several record passes, each spooling signals of megabytes);
/// the record's path.
fn with_large_record(home: &Path) -> PathBuf {
    let transcript = with_transcript(home);
    add_messages(&transcript, 0..MESSAGES);
    transcript
}

/// Long user messages numbered `numbers`, appended to the record as the
/// agent does.
fn add_messages(transcript: &Path, numbers: std::ops::Range<usize>) {
    let text = "x".repeat(MESSAGE_LEN);
    for i in numbers {
        let line = serde_json::json!({
            "type": "user",
            "uuid": format!("00000000-0000-4000-8000-{i:012}"),
            "parentUuid": null,
            "sessionId": SESSION,
            "timestamp": "2026-11-30T00:39:00.000Z",
            "message": {"role": "user", "content": format!("{i} {text}")},
        });
        append_line(transcript, &line.to_string());
    }
}

/// The session's batch files a killed record pass left (never read).
fn left_batches(home: &Path) -> usize {
    let dir = home.join("spool/intake/claude-code").join(SESSION);
    std::fs::read_dir(dir)
        .unwrap()
        .filter(|e| {
            let name = e.as_ref().unwrap().file_name();
            name.to_string_lossy().starts_with(".tmp-batch-")
        })
        .count()
}

fn finalize_ok(home: &Path, context: &str) {
    let out = run(home, &["finalize"]);
    assert!(out.status.success(), "{context}: {}", stderr(&out));
}

/// Each message's number, in ledger order, and every session listed.
fn outcome(home: &Path) -> (Vec<String>, Vec<String>) {
    let all = events(home);
    let users = of_type(&all, "message.user")
        .iter()
        .filter_map(|e| e["payload"]["text"].as_str())
        .filter_map(|t| t.split_once(' ').map(|(n, _)| n.to_owned()))
        .collect();
    let mut sessions: Vec<String> = all
        .iter()
        .filter_map(|e| e["session"]["session_id"].as_str().map(str::to_owned))
        .collect();
    sessions.sort();
    sessions.dedup();
    (users, sessions)
}

/// `harnery finalize` in `home` with its files limited to `limit` bytes
/// (`ulimit -f`): the write that crosses the limit is cut short there, and
/// the next one kills the process with SIGXFSZ. Only the record pass's
/// spool file grows that large before it, so the kill lands in the middle
/// of its writing, with a record half written.
fn finalize_cut_at(home: &Path, limit: u64) -> std::process::ExitStatus {
    let mut cmd = crate::common::harnery_process(home);
    let bin = cmd.get_program().to_owned();
    cmd.env("HARNERY_RECORDS", "on")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -f {}; exec \"$0\" finalize", limit / 512))
        .arg(bin)
        .envs(cmd.get_envs().filter_map(|(k, v)| Some((k, v?))))
        .status()
        .unwrap()
}

#[test]
fn a_finalize_killed_in_the_middle_of_a_record_write_leaves_no_damage() {
    use std::os::unix::process::ExitStatusExt;
    let whole = tempfile::tempdir().unwrap();
    with_large_record(whole.path());
    finalize_ok(whole.path(), "uninterrupted");
    let expected = outcome(whole.path());
    assert!(expected.0.len() > MESSAGES, "{:?}", expected.0.len());
    assert_eq!(expected.1, [SESSION], "the uninterrupted run");
    // Inside the first signal's payload, inside the second one's, and just
    // after a signal's first bytes.
    for limit in [(3 << 20) + 512, (6 << 20) + 1024, (4 << 20) + 4096] {
        let home = tempfile::tempdir().unwrap();
        let h = home.path();
        with_large_record(h);
        let status = finalize_cut_at(h, limit);
        let context = format!("files limited to {limit} bytes: {status:?}");
        assert_eq!(status.signal(), Some(libc::SIGXFSZ), "{context}");
        assert_eq!(
            left_batches(h),
            1,
            "{context}: killed while writing its batch"
        );
        finalize_ok(h, &context);
        assert_eq!(outcome(h), expected, "{context}");
    }
}

/// Rounds of the random-moment test (`HARNERY_KILL_ROUNDS` for more).
fn rounds() -> u64 {
    std::env::var("HARNERY_KILL_ROUNDS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(3)
}

/// A finalize SIGKILLed at a random moment of its run, then cron's
/// finalize, the agent writing on, and finalize again: the ledger of a
/// run never killed (`HARNERY_KILL_SEED` replays a failure).
#[test]
fn a_finalize_killed_at_random_moments_then_cron_follows_the_record_as_if_never_killed() {
    let more = MESSAGES..MESSAGES + 8;
    let whole = tempfile::tempdir().unwrap();
    let transcript = with_large_record(whole.path());
    let started = Instant::now();
    finalize_ok(whole.path(), "uninterrupted");
    let span = started.elapsed();
    add_messages(&transcript, more.clone());
    finalize_ok(whole.path(), "uninterrupted, after more messages");
    let expected = outcome(whole.path());
    assert_eq!(
        expected.0.len(),
        more.end + 1,
        "the scenario's prompt and every message"
    );
    let seed = std::env::var("HARNERY_KILL_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
            u64::from(now.unwrap().subsec_nanos())
        });
    for round in 0..rounds() {
        let home = tempfile::tempdir().unwrap();
        let h = home.path();
        let transcript = with_large_record(h);
        let wait = kill_delay(seed, round, span);
        let context =
            format!("HARNERY_KILL_SEED={seed} round {round}: killed after {wait:?} of {span:?}");
        let mut finalize = crate::common::harnery_process(h);
        kill_after(finalize.env("HARNERY_RECORDS", "on").arg("finalize"), wait);
        finalize_ok(h, &context);
        add_messages(&transcript, more.clone());
        finalize_ok(h, &context);
        assert_eq!(outcome(h), expected, "{context}");
    }
}
