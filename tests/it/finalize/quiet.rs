//! An idle `finalize` passes over the sessions whose stored state an
//! earlier run found to tick to nothing (`ledgers/finalize.quiet`), until
//! a batch writes that state again. The proof that the pass-over happens
//! is a state damaged behind an unchanged version (same batch, same
//! length): passed over, it goes unnoticed; read, it is reported.

use std::path::Path;

use crate::common::*;

const QUIET: &str = "0a0a0a0a-0000-4000-8000-00000000000a";
/// The basic session's prompt and tool call ids.
const PROMPT: &str = "c68551d6-9785-4cd4-9f63-669805f3927c";
const CALL: &str = "toolu_01oOb0TT009RCjxYiOfGSjLDr5";

fn finalize(home: &Path) -> String {
    let out = harnery(home)
        .args(["finalize", "--no-compact", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    stdout(&out)
}

/// Each event's session, offset and type, in chain order.
fn events(home: &Path) -> Vec<(String, u64, String)> {
    ledger_rows(home)
        .into_iter()
        .map(|(_, json, _)| {
            let v: serde_json::Value = serde_json::from_str(&json).unwrap();
            (
                v["session"]["session_id"].as_str().unwrap().to_string(),
                v["offset"].as_u64().unwrap(),
                v["type"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn quiet_file(home: &Path) -> String {
    std::fs::read_to_string(home.join("ledgers/finalize.quiet")).unwrap_or_default()
}

/// The basic session, finalized, then an idle run: its state is listed.
fn quiet_home(home: &Path) {
    for (_, line) in basic_hook_lines() {
        deliver(home, "claude-code", &line.replace("SESSION", QUIET));
    }
    // The first run's time rules salvage its end and pin its turn's
    // checkpoint; the second, idle, finds nothing left for them.
    finalize(home);
    assert!(!quiet_file(home).contains(QUIET));
    finalize(home);
    assert!(quiet_file(home).contains(QUIET), "{}", quiet_file(home));
}

#[test]
fn a_quiet_state_is_not_loaded_again_until_a_batch_writes_it() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (a, b) = (a.path(), b.path());
    quiet_home(a);
    let conn = rusqlite::Connection::open(a.join("ledgers/v2/ledger.sqlite")).unwrap();
    let damaged = conn
        .execute(
            "UPDATE producer_state_store SET state = zeroblob(length(state)) WHERE session_id = ?1",
            [QUIET],
        )
        .unwrap();
    assert_eq!(damaged, 1);
    drop(conn);
    copy_tree(a, b);
    std::fs::remove_file(b.join("ledgers/finalize.quiet")).unwrap();
    // Passed over: the damage goes unnoticed.
    finalize(a);
    // Without the list, the state is read, and found damaged.
    refused(b);
    // A damaged list is no list.
    std::fs::write(a.join("ledgers/finalize.quiet"), "not a list\n").unwrap();
    refused(a);
}

/// A run that stops at the damaged state, naming its session.
fn refused(home: &Path) {
    let out = harnery(home)
        .args(["finalize", "--no-compact"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(stderr(&out).contains(QUIET), "{}", stderr(&out));
}

#[test]
fn a_quiet_session_that_goes_on_is_ticked_again() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (a, b) = (a.path(), b.path());
    quiet_home(a);
    copy_tree(a, b);
    std::fs::remove_file(b.join("ledgers/finalize.quiet")).unwrap();
    // The session resumed for one more turn (a prompt and a tool call of
    // their own), whose end the time rules salvage and whose checkpoint
    // they pin once its state (a new version) is loaded.
    for (_, line) in basic_hook_lines() {
        let line = line
            .replace("SESSION", QUIET)
            .replace(PROMPT, "c68551d6-9785-4cd4-9f63-000000000002")
            .replace(CALL, "toolu_02oOb0TT009RCjxYiOfGSjLDr5");
        deliver(a, "claude-code", &line);
        deliver(b, "claude-code", &line);
    }
    let before = events(a).len();
    finalize(a);
    finalize(b);
    let (with_list, without) = (events(a), events(b));
    assert_eq!(with_list, without);
    assert_eq!(
        with_list.last().map(|e| e.2.as_str()),
        Some("checkpoint.recorded"),
        "{:?}",
        &with_list[before..]
    );
}
