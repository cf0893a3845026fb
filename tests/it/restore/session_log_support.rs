//! Shared helpers for the session log tests (`session_log`,
//! `session_log_copilot`): the corpus sessions they drive, their hook
//! captures delivered through the real hook, and the real `harnery`.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use serde_json::Value;

pub use crate::common::ok;
use crate::common::{self, stderr, stdout};

pub const CLAUDE: &str = "8d31d374-43c7-42c3-aadb-185a6df76fcf";

pub const CLAUDE_TURN_1: &str = "d1d29774-7308-409e-90bc-11f23fd06acc";

pub const COPILOT_RESUME: &str = "7271c131-2f28-400e-a537-c4eb30e50959";

pub const COPILOT_KILLED: &str = "93ac04b6-be37-48e5-9126-c3f986eaa653";

pub fn fixture(agent: &str, scenario: &str) -> std::path::PathBuf {
    let file = if agent == "copilot" {
        "hook-capture.jsonl"
    } else {
        "hooks.jsonl"
    };
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(agent)
        .join(scenario)
        .join(file)
}

/// Lines `range` of a fixture's hook capture.
pub fn lines(agent: &str, scenario: &str) -> Vec<String> {
    std::fs::read_to_string(fixture(agent, scenario))
        .expect("fixture exists")
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_string)
        .collect()
}

pub fn feed(home: &Path, agent: &str, lines: &[String]) {
    for line in lines {
        common::deliver(home, agent, line);
    }
}

/// `harnery args…`, on a machine with no agent installed (what restore's
/// Copilot policy finds is the test's, not the machine's).
pub fn run(home: &Path, args: &[&str]) -> std::process::Output {
    let mut cmd = common::harnery(home);
    common::without_installed_agents(&mut cmd, common::empty_user_home());
    cmd.args(args).output().expect("harnery runs")
}

/// `harnery args…` exits 2, saying `why` on stderr.
pub fn refused(home: &Path, args: &[&str], why: &str) {
    let out = run(home, args);
    assert_eq!(out.status.code(), Some(2), "{args:?}");
    assert!(stderr(&out).contains(why), "{args:?}: {}", stderr(&out));
}

pub fn json(home: &Path, args: &[&str]) -> Value {
    serde_json::from_str(&ok(home, args)).expect("JSON output")
}

pub fn replay(home: &Path, session: &str, extra: &[&str]) -> Vec<Value> {
    let mut args = vec!["replay", session, "--json"];
    args.extend_from_slice(extra);
    ok(home, &args)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

pub fn of_type<'a>(events: &'a [Value], ty: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == ty).collect()
}

pub fn ids(events: &[Value]) -> Vec<String> {
    events.iter().map(|e| e["id"].to_string()).collect()
}

/// `receipts --include-superseded` notes `superseded` exactly on the
/// turns whose every event the resume superseded (as `replay` marks them);
/// the count of such turns.
pub fn superseded_turns_are_marked(home: &Path, session: &str, all: &[Value]) -> usize {
    let out = run(
        home,
        &["receipts", session, "--json", "--include-superseded"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let receipts: Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut marked = 0;
    for turn in receipts["turns"].as_array().unwrap() {
        let id = &turn["turn_id"];
        let of_turn: Vec<&Value> = all.iter().filter(|e| &e["turn"]["turn_id"] == id).collect();
        let whole = !of_turn.is_empty() && of_turn.iter().all(|e| e["superseded"] == true);
        let noted = turn["notes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n == "superseded");
        assert_eq!(noted, whole, "{session}: turn {id}");
        marked += usize::from(noted);
    }
    let plain = run(home, &["receipts", session, "--json"]);
    assert!(
        !stdout(&plain).contains("\"superseded\""),
        "not without the flag"
    );
    marked
}

/// A Copilot home whose `session-state/<session>/events.jsonl` is the
/// captured record `scenario` (under `tests/fixtures/records/copilot`);
/// the home, and the record's path in it.
pub fn copilot_home_with_record(session: &str, scenario: &str) -> (tempfile::TempDir, PathBuf) {
    let copilot_home = tempfile::tempdir().unwrap();
    let state = copilot_home.path().join("session-state").join(session);
    std::fs::create_dir_all(&state).unwrap();
    let record = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/records/copilot")
        .join(format!("{scenario}.events.jsonl"));
    let at = state.join("events.jsonl");
    std::fs::copy(record, &at).unwrap();
    (copilot_home, at)
}

/// `harnery restore <session> --json [extra…] --copilot-home <home>`.
pub fn restore_json(home: &Path, session: &str, copilot_home: &Path, extra: &[&str]) -> Value {
    let mut args = vec!["restore", session, "--json"];
    args.extend_from_slice(extra);
    args.extend(["--copilot-home", copilot_home.to_str().unwrap()]);
    json(home, &args)
}

/// Record a restore of `session` at `checkpoint` as `restore --record`
/// does where its printed resume is exact (a `harnery.restore` through
/// the spool, boundary the checkpoint's offset): these tests drive the
/// producer's rules for a recorded restore, whatever command a corpus
/// session's restore may print. The restore `--dry-run --json` shows.
pub fn record_restore(home: &Path, adapter: &str, session: &str, checkpoint: &str) -> Value {
    let shown = json(
        home,
        &[
            "restore",
            session,
            "--checkpoint",
            checkpoint,
            "--json",
            "--dry-run",
        ],
    );
    let target = harnery::operator::Target {
        home: harnery::home::Home::at(home),
        adapter: harnery::contract::AdapterId::parse(adapter).expect("an adapter id"),
        session_id: shown["seed"]["session"]["session_id"]
            .as_str()
            .expect("the session's id")
            .to_string(),
    };
    let payload = harnery::agents::harnery::RestorePayload {
        checkpoint_id: shown["seed"]["checkpoint"]["checkpoint_id"]
            .as_str()
            .expect("the checkpoint's id")
            .to_string(),
        boundary_offset: shown["seed"]["boundary_offset"].as_u64().unwrap(),
    };
    let now = harnery::now::resolve_now(Some(common::NOW)).unwrap();
    target
        .append(harnery::agents::harnery::RESTORE, &payload, now)
        .unwrap();
    shown
}
