//! Every command that takes a session takes a unique prefix of its id,
//! through the real binaries: `end`, `checkpoint`, `exec` (sessions the
//! spool or the ledger knows), `recover` (sessions under the agents'
//! homes), `restore` and `show` (the ledger's). An ambiguous prefix lists
//! the candidates and exits 2; an unknown session exits 2, and nothing
//! in the home changes: no phantom session directory, no record.

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use common::*;

/// Two finalized Claude Code sessions that share the prefix `abc-`, each
/// with one turn (so each has a checkpoint to restore), and a Copilot
/// session the hooks spooled but no `finalize` has drained yet.
fn home_with_sessions(dir: &Path) -> PathBuf {
    let home = dir.join("home");
    for id in ["abc-111", "abc-222"] {
        start_session(&home, "claude-code", id);
        for line in [
            serde_json::json!({"hook_event_name": "UserPromptSubmit", "session_id": id, "prompt": "hi"}),
            serde_json::json!({"hook_event_name": "Stop", "session_id": id}),
        ] {
            deliver(&home, "claude-code", &line.to_string());
        }
    }
    let out = run(&home, &["finalize"]);
    assert!(out.status.success(), "{}", stderr(&out));
    start_session(&home, "copilot", "xyz-spooled-only");
    home
}

/// Every file under `root` with its bytes.
fn snapshot(root: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if entry.file_type().unwrap().is_dir() {
                out.insert(path.clone(), Vec::new());
                dirs.push(path);
            } else {
                out.insert(path.clone(), std::fs::read(&path).unwrap());
            }
        }
    }
    out
}

/// `args` exits 2, says `says` on stderr, and leaves the home as it was.
fn refused(home: &Path, args: &[&str], says: &[&str]) {
    let before = snapshot(home);
    let out = run(home, args);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
    for s in says {
        assert!(stderr(&out).contains(s), "{args:?}: {}", stderr(&out));
    }
    assert!(
        snapshot(home) == before,
        "{args:?} changed the home: {:?}",
        changed(&before, &snapshot(home))
    );
}

fn changed(a: &BTreeMap<PathBuf, Vec<u8>>, b: &BTreeMap<PathBuf, Vec<u8>>) -> Vec<PathBuf> {
    let mut keys: Vec<&PathBuf> = a.keys().chain(b.keys()).collect();
    keys.dedup();
    keys.into_iter()
        .filter(|k| a.get(*k) != b.get(*k))
        .cloned()
        .collect()
}

/// The operator records the intake spool holds for a session, by event.
fn spooled_events(home: &Path, adapter: &str, id: &str) -> Vec<String> {
    let spool = harnery::spool::IntakeSpool::open(&harnery::home::Home::at(home.to_path_buf()));
    let Some(session) = spool.session(adapter, Some(id)).unwrap() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for f in session.files().unwrap() {
        for r in harnery::spool::read_segment(&f.path).unwrap().records {
            assert_eq!(r.envelope.session_id.as_deref(), Some(id));
            out.extend(r.envelope.event.filter(|e| e.starts_with("harnery.")));
        }
    }
    out
}

const AMBIGUOUS: [&str; 3] = [
    "matches 2 sessions",
    "claude-code/abc-111",
    "claude-code/abc-222",
];

#[test]
fn end_takes_a_unique_prefix_and_refuses_the_rest() {
    let tmp = tempfile::tempdir().unwrap();
    let home = home_with_sessions(tmp.path());
    let out = run(&home, &["end", "abc-1", "--reason", "done"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("claude-code/abc-111"),
        "{}",
        stdout(&out)
    );
    assert_eq!(
        spooled_events(&home, "claude-code", "abc-111"),
        ["harnery.end_requested"]
    );
    // A session only the spool knows yet is found too, by `spool cat` as well.
    let out = run(&home, &["spool", "cat", "copilot", "xyz"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("xyz-spooled-only"),
        "{}",
        stdout(&out)
    );
    let out = run(&home, &["end", "xyz"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        spooled_events(&home, "copilot", "xyz-spooled-only"),
        ["harnery.end_requested"]
    );
    refused(&home, &["end", "abc"], &AMBIGUOUS);
    refused(&home, &["end", "nope"], &["no session matches \"nope\""]);
    // --adapter narrows; it never creates a session.
    refused(
        &home,
        &["end", "nope", "--adapter", "claude-code"],
        &["nope"],
    );
    refused(&home, &["end", "abc-1", "--adapter", "copilot"], &["abc-1"]);
    assert!(spooled_events(&home, "claude-code", "abc-222").is_empty());
}

#[test]
fn checkpoint_takes_a_unique_prefix_and_refuses_the_rest() {
    let tmp = tempfile::tempdir().unwrap();
    let home = home_with_sessions(tmp.path());
    let out = run(&home, &["checkpoint", "abc-2", "--id", "cp-x"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("claude-code/abc-222"),
        "{}",
        stdout(&out)
    );
    assert_eq!(
        spooled_events(&home, "claude-code", "abc-222"),
        ["harnery.checkpoint"]
    );
    refused(&home, &["checkpoint", "abc"], &AMBIGUOUS);
    refused(
        &home,
        &["checkpoint", "ghost", "--adapter", "copilot"],
        &["no session matches \"ghost\""],
    );
    // `checkpoints` (the listing) and `restore` read the ledger by prefix.
    let out = run(&home, &["finalize"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = run(&home, &["checkpoints", "abc-2", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("cp-x"), "{}", stdout(&out));
}

#[test]
fn exec_takes_a_unique_prefix_and_runs_nothing_otherwise() {
    let tmp = tempfile::tempdir().unwrap();
    let home = home_with_sessions(tmp.path());
    let marker = tmp.path().join("ran");
    let touch = format!("touch {}", marker.display());
    let out = run(
        &home,
        &["exec", "--session", "abc-1", "--", "sh", "-c", "exit 4"],
    );
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    assert_eq!(
        spooled_events(&home, "claude-code", "abc-111"),
        ["harnery.command_requested", "harnery.command_completed"]
    );
    for (args, says) in [
        (vec!["--session", "abc"], &AMBIGUOUS[..]),
        (
            vec!["--session", "ghost", "--adapter", "claude-code"],
            &["ghost"][..],
        ),
    ] {
        let mut all = vec!["exec"];
        all.extend(args);
        all.extend(["--", "sh", "-c", &touch]);
        refused(&home, &all, says);
        assert!(!marker.exists(), "{all:?} ran the command");
    }
}

#[test]
fn show_and_restore_take_a_unique_prefix_and_list_the_candidates_otherwise() {
    let tmp = tempfile::tempdir().unwrap();
    let home = home_with_sessions(tmp.path());
    let out = run(&home, &["show", "abc-2"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("session claude-code abc-222"));
    let out = run(&home, &["restore", "abc-1", "--dry-run", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let restore: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(restore["seed"]["session"]["session_id"], "abc-111");
    for cmd in [vec!["show"], vec!["restore", "--dry-run"]] {
        let mut args = cmd.clone();
        args.push("abc");
        refused(&home, &args, &AMBIGUOUS);
        let mut args = cmd.clone();
        args.push("ghost");
        refused(&home, &args, &["no session matches \"ghost\""]);
    }
    // `adapter/id` names a session too.
    let out = run(&home, &["show", "claude-code/abc-1"]);
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn recover_takes_a_unique_prefix_of_a_session_under_the_agents_homes() {
    let tmp = tempfile::tempdir().unwrap();
    let copilot = tmp.path().join("copilot");
    let stream = Path::new(env!("CARGO_MANIFEST_DIR")).join(
        "tests/fixtures/recover/copilot/interrupted-sigkill-1-killed/session-state/\
         93ac04b6-be37-48e5-9126-c3f986eaa653/events.jsonl",
    );
    for id in [
        "93ac04b6-be37-48e5-9126-c3f986eaa653",
        "93ac9999-0000-4000-8000-000000000000",
    ] {
        let dir = copilot.join("session-state").join(id);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::copy(&stream, dir.join("events.jsonl")).unwrap();
    }
    let home = tmp.path().join("harnery");
    let recover = |args: &[&str]| {
        let mut cmd = harnery(&home);
        common::without_installed_agents(&mut cmd, &tmp.path().join("user"));
        cmd.env("COPILOT_HOME", &copilot)
            .env("CLAUDE_CONFIG_DIR", tmp.path().join("claude"))
            .arg("recover")
            .args(args)
            .output()
            .unwrap()
    };
    let out = recover(&["93ac04", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let packet: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        packet["session_id"], "93ac04b6-be37-48e5-9126-c3f986eaa653",
        "{packet}"
    );
    let out = recover(&["93ac"]);
    assert_eq!(out.status.code(), Some(2));
    for id in ["copilot/93ac04b6-", "copilot/93ac9999-"] {
        assert!(stderr(&out).contains(id), "{}", stderr(&out));
    }
    let out = recover(&["77"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("session 77 not found"),
        "{}",
        stderr(&out)
    );
    assert!(!home.exists(), "recover wrote into the harnery home");
}
