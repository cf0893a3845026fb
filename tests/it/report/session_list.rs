//! What the sessions list reads beside the session rows (migration
//! `session_list`): how many of a session's resumes supersede a range, and
//! the problem finalize last reported for its own record.
//!
//! On a home with a restored and resumed session (a superseded range) and
//! a session whose record the agent deleted: `sessions --json` (the live
//! epoch and `--epoch all`), `/api/sessions` and the sessions page give
//! the same bytes from the kept rows as from the events and producer
//! states of the same ledger made to look older; the first writer fills
//! the rows exactly as the appends had kept them; `validate` names a row
//! that disagrees. A fill SIGKILLed at random moments and run again ends
//! with the rows an uninterrupted fill leaves.

use std::path::Path;
use std::time::{Duration, Instant};

use harnery::contract::{OffsetRange, Payload, SessionResumed};

use crate::common::{self, copy_tree, event, inject, session, stderr, stdout, tool_request};
use crate::finalize::records::with_transcript;
use crate::report::superseded::resumed_home;

/// Far past every grace, so a deleted record is `removed`.
const FAR_LATER: &str = "2100-01-01T00:00:00Z";

fn finalize_at(home: &Path, now: &str) {
    let out = common::harnery(home)
        .env("HARNERY_RECORDS", "on")
        .env("HARNERY_NOW", now)
        .arg("finalize")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
}

fn db(home: &Path) -> rusqlite::Connection {
    let conn = rusqlite::Connection::open(home.join("ledgers/v2/ledger.sqlite")).unwrap();
    harnery::ledger::eventz::register(&conn).unwrap();
    conn
}

/// The kept rows: each session's superseding resumes, and each record
/// problem.
type Kept = (Vec<(String, i64)>, Vec<(String, String)>);

fn kept(home: &Path) -> Kept {
    let conn = db(home);
    let rows = |sql: &str| -> Vec<(String, rusqlite::types::Value)> {
        let mut stmt = conn.prepare(sql).unwrap();
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    };
    let superseding = rows("SELECT session_id, superseding FROM sessions ORDER BY session_id")
        .into_iter()
        .map(|(s, v)| match v {
            rusqlite::types::Value::Integer(n) => (s, n),
            other => panic!("superseding {other:?}"),
        })
        .collect();
    let problems = rows("SELECT session_id, problem FROM session_records ORDER BY session_id")
        .into_iter()
        .map(|(s, v)| match v {
            rusqlite::types::Value::Text(p) => (s, p),
            other => panic!("problem {other:?}"),
        })
        .collect();
    (superseding, problems)
}

/// Everything the list answers, as bytes.
fn reads(home: &Path) -> Vec<String> {
    let ok = |args: &[&str]| {
        let out = common::run(home, args);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        stdout(&out)
    };
    let served = crate::serve::support::Served::start(home);
    vec![
        ok(&["sessions", "--json"]),
        ok(&["sessions", "--json", "--epoch", "all"]),
        ok(&["sessions"]),
        served.get("/api/sessions?limit=500"),
        served.get("/sessions"),
    ]
}

/// The ledger as a build before `session_list` left it.
fn make_older(home: &Path) {
    db(home)
        .execute_batch(
            "DELETE FROM migrations WHERE name LIKE '%_session_list';
             ALTER TABLE sessions DROP COLUMN superseding;
             DROP TABLE session_records;",
        )
        .unwrap();
}

/// A restored and resumed session, and a session whose record the agent
/// deleted after harnery read it.
fn listed_home(home: &Path) {
    resumed_home(home);
    let transcript = with_transcript(home);
    finalize_at(home, "2026-12-01T00:00:00Z");
    std::fs::remove_file(&transcript).unwrap();
    finalize_at(home, FAR_LATER);
    finalize_at(home, FAR_LATER);
}

fn validate_ok(home: &Path, when: &str) {
    let out = common::run(home, &["validate"]);
    assert!(
        out.status.success(),
        "{when}: {}{}",
        stdout(&out),
        stderr(&out)
    );
}

#[test]
fn the_list_reads_the_same_from_its_kept_rows_as_from_the_events() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    listed_home(home);
    let rows = kept(home);
    assert!(rows.0.iter().any(|(_, n)| *n == 1), "{rows:?}");
    assert!(rows.1.iter().any(|(_, p)| p == "removed"), "{rows:?}");
    let answers = reads(home);
    assert!(
        answers[0].contains("\"record\":\"removed\""),
        "{}",
        answers[0]
    );
    assert!(
        answers[0].contains("\"title_source\":\"prompt\""),
        "{}",
        answers[0]
    );
    validate_ok(home, "as appended");

    make_older(home);
    assert_eq!(reads(home), answers, "read from the events");
    // The first writer migrates and fills.
    finalize_at(home, FAR_LATER);
    assert_eq!(kept(home), rows, "filled as appended");
    assert_eq!(reads(home), answers, "read from the filled rows");
    validate_ok(home, "filled");

    // A row that disagrees with the events or the producer state is named.
    db(home)
        .execute_batch(
            "UPDATE sessions SET superseding = superseding + 1;
             DELETE FROM session_records;",
        )
        .unwrap();
    let out = common::run(home, &["validate", "--json"]);
    assert!(!out.status.success());
    let found = stdout(&out);
    assert!(found.contains("superseding resumes"), "{found}");
    assert!(
        found.contains("names record problem \\\"removed\\\""),
        "{found}"
    );
}

/// A few random numbers without a crate: the time's low bits, stirred.
fn random(seed: &mut u64) -> u64 {
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    *seed
}

/// Sessions each resumed by a restore that supersedes a range, for a fill
/// with something to read (ready to be applied by the next `finalize`).
fn restored_sessions(home: &Path, n: usize) {
    for i in 0..n {
        let s = session(&format!("r-{i:03}"));
        let mut events: Vec<_> = (0..40)
            .map(|o| tool_request(&s, o, &format!("c{o}")))
            .collect();
        events.push(event(
            &s,
            40,
            Payload::SessionResumed(SessionResumed {
                boundary_offset: 10,
                superseded: OffsetRange { from: 10, to: 30 },
                invalidated_checkpoints: Vec::new(),
                incarnation: 2,
                checkpoint_id: None,
                evidence: "restore".into(),
            }),
        ));
        inject(home, &format!("r{i}"), events);
    }
}

#[test]
fn a_fill_killed_at_random_moments_then_rerun_leaves_the_rows_of_one_whole_fill() {
    let base = tempfile::tempdir().unwrap();
    listed_home(base.path());
    restored_sessions(base.path(), 150);
    finalize_at(base.path(), FAR_LATER);
    let want = kept(base.path());
    assert_eq!(
        want.0.iter().filter(|(_, n)| *n == 1).count(),
        151,
        "{want:?}"
    );
    make_older(base.path());
    let mut seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos() as u64
        | 1;
    // How long a whole finalize with the fill takes here: the kills land
    // anywhere in it.
    let probe = tempfile::tempdir().unwrap();
    copy_tree(base.path(), probe.path());
    let t = Instant::now();
    finalize_at(probe.path(), FAR_LATER);
    let whole = t.elapsed().as_millis().max(1) as u64;
    assert_eq!(kept(probe.path()), want);
    for round in 0..6 {
        let t = tempfile::tempdir().unwrap();
        let home = t.path();
        copy_tree(base.path(), home);
        for _ in 0..3 {
            let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("harnery"))
                .env("HARNERY_HOME", home)
                .env_remove("HARNERY_FAILPOINTS")
                .env("HARNERY_RECORDS", "on")
                .env("HARNERY_NOW", FAR_LATER)
                .arg("finalize")
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .expect("harnery starts");
            let guard = Instant::now();
            std::thread::sleep(Duration::from_millis(random(&mut seed) % whole));
            let _ = child.kill(); // SIGKILL
            child.wait().unwrap();
            assert!(guard.elapsed() < Duration::from_secs(120), "a hang");
        }
        finalize_at(home, FAR_LATER);
        assert_eq!(kept(home), want, "round {round}");
        validate_ok(home, &format!("round {round}"));
    }
}

#[cfg(feature = "failpoints")]
fn titled(id: &str, offset: u64, title: &str) -> harnery::contract::Event {
    event(
        &session(id),
        offset,
        Payload::SessionTitled(harnery::contract::SessionTitled {
            title: title.into(),
            field: "name".into(),
            user_named: Some(true),
            path: "/tmp/workspace.yaml".into(),
            offset: None,
        }),
    )
}

/// A session renamed in its agent after an epoch advance is listed across
/// epochs under its new name, as within one epoch; one whose later part
/// has only a prompt keeps its first prompt's title. (The next contract
/// is simulated, which takes the failpoints build.)
#[cfg(feature = "failpoints")]
#[test]
fn across_an_advance_the_newest_own_title_names_the_session() {
    use crate::report::titles::prompt;
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    inject(
        home,
        "a1",
        vec![
            prompt("t", 0, "first words"),
            titled("t", 1, "Old name"),
            prompt("p", 0, "first prompt"),
        ],
    );
    assert!(common::run(home, &["finalize"]).status.success());
    let out = common::next(home, &["epoch", "advance"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let digest: String = db(home)
        .query_row(
            "SELECT value FROM meta WHERE key = 'schema_digest'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    // A new epoch numbers each session's events from 0 again.
    common::inject_with_digest(
        home,
        "a2",
        vec![
            prompt("t", 0, "later words"),
            titled("t", 1, "New name"),
            prompt("p", 0, "second prompt"),
        ],
        &digest,
    );
    let out = common::next(home, &["finalize"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = common::next(home, &["sessions", "--epoch", "all", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let listed: Vec<serde_json::Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let of = |id: &str| {
        listed
            .iter()
            .find(|s| s["session"]["session_id"] == id)
            .unwrap_or_else(|| panic!("{id}: {listed:?}"))
    };
    assert_eq!(of("t")["epochs"].as_array().unwrap().len(), 2, "{listed:?}");
    assert_eq!(of("t")["title"], "New name");
    assert_eq!(of("t")["title_source"], "record");
    assert_eq!(of("p")["title"], "first prompt");
    assert_eq!(of("p")["title_source"], "prompt");
    // `show` names the whole session as the list does.
    for (id, title) in [("t", "New name"), ("p", "first prompt")] {
        let out = common::next(home, &["show", id, "--epoch", "all", "--json"]);
        assert!(out.status.success(), "{}", stderr(&out));
        let shown: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
        assert_eq!(shown["summary"]["title"], title, "{id}: {shown}");
    }
}
