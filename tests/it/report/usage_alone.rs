//! The session rows' usage facts (migration `session_usage`): a session
//! whose usage no other session's rows bear on is tallied from its own
//! rows, and every answer is the one the events give.
//!
//! On homes with unrelated sessions sharing call ids, a `--fork-session`
//! pair and a `restore --apply` child: which sessions are tied is checked
//! against what the records say; `usage --session` (every grouping, with
//! and without `--since`) equals the tally of every row (`--epoch all`);
//! and `sessions --json`, `usage --json` and `usage --session` give the
//! same bytes on the same ledger made to look older (the columns and the
//! table taken out, so the reads fall back to the events), and again once
//! a `finalize` has migrated and filled it, which fills the rows exactly
//! as the appends had. The sessions page's rows (tokens and cost, from
//! the usage sums an untied session's rows keep, migration
//! `session_usage_sums`) are the same bytes as those its events give.

use std::path::Path;
use std::process::Output;

use serde_json::Value;

use crate::common::{self, stderr};
use crate::report::usage_copies::{FORK_CHILD, FORK_PARENT, fork_pair, four_sessions_sharing_ids};

/// Runs harnery on one home as its test world does.
type Harnery<'a> = &'a dyn Fn(&[&str]) -> Output;

fn records_on(home: &Path) -> impl Fn(&[&str]) -> Output + '_ {
    move |args: &[&str]| {
        common::harnery(home)
            .env("HARNERY_RECORDS", "on")
            .args(args)
            .output()
            .unwrap()
    }
}

fn stdout_of(run: Harnery, args: &[&str]) -> String {
    let out = run(args);
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    String::from_utf8(out.stdout).unwrap()
}

fn db(home: &Path) -> rusqlite::Connection {
    let conn = rusqlite::Connection::open(home.join("ledgers/v2/ledger.sqlite")).unwrap();
    // The compact ledger's views decode through the ledger's SQL functions.
    harnery::ledger::eventz::register(&conn).unwrap();
    conn
}

/// Each session's id and how its row says its usage is tied (0 not, 1
/// by a parent, 2 by a call another session reported first).
fn tied(home: &Path) -> Vec<(String, i64)> {
    let conn = db(home);
    let mut stmt = conn
        .prepare("SELECT session_id, usage_tied FROM sessions ORDER BY session_id")
        .unwrap();
    stmt.query_map([], |r| Ok((r.get(0)?, r.get::<_, i64>(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

/// The kept facts, whole: each session's id, link and tie, and each
/// call's owner; each session's reported cost and usage sums.
type Kept = (
    Vec<(String, Option<String>, i64)>,
    Vec<(i64, i64)>,
    Vec<(String, Option<f64>, i64, i64)>,
    Vec<Vec<String>>,
);

fn kept(home: &Path) -> Kept {
    let conn = db(home);
    let sessions = conn
        .prepare("SELECT session_id, restored_from, usage_tied FROM sessions ORDER BY session_id")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let calls = conn
        .prepare("SELECT call, session FROM usage_calls ORDER BY call")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let costs = conn
        .prepare(
            "SELECT session_id, reported_cost, cost_records, cost_unreadable FROM sessions \
             ORDER BY session_id",
        )
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let sums = conn
        .prepare(
            "SELECT * FROM usage_sums ORDER BY adapter, session_id, named, model, kinds, inherited",
        )
        .unwrap()
        .query_map([], |r| {
            (0..12)
                .map(|i| Ok(format!("{:?}", r.get_ref(i)?)))
                .collect::<Result<Vec<String>, rusqlite::Error>>()
        })
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    (sessions, calls, costs, sums)
}

/// The sessions page's rows (with `serve`'s fixed clock), as served.
fn page_rows(home: &Path) -> String {
    let served = crate::serve::support::Served::start(home);
    served.get("/sessions?fragment=rows")
}

/// The ledger as a build before `session_usage` left it.
fn make_older(home: &Path) {
    db(home)
        .execute_batch(
            "DELETE FROM migrations WHERE name LIKE '%_session_usage%';
             DROP INDEX sessions_tied_by_call;
             ALTER TABLE sessions DROP COLUMN restored_from;
             ALTER TABLE sessions DROP COLUMN usage_tied;
             DROP TABLE usage_calls;
             DROP TABLE usage_sums;
             ALTER TABLE sessions DROP COLUMN reported_cost;
             ALTER TABLE sessions DROP COLUMN cost_records;
             ALTER TABLE sessions DROP COLUMN cost_unreadable;
             DELETE FROM meta WHERE key = 'session_usage';",
        )
        .unwrap();
}

/// Each session's id, and the middle of its first and last times (a
/// `--since` that cuts it), as RFC 3339.
fn sessions_and_midways(run: Harnery) -> Vec<(String, String)> {
    stdout_of(run, &["sessions", "--json"])
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            let (first, last) = (
                v["first_unix_ns"].as_i64().unwrap(),
                v["last_unix_ns"].as_i64().unwrap(),
            );
            let id = v["session"]["session_id"].as_str().unwrap().to_string();
            (id, time_of((first / 2 + last / 2) / 1_000_000_000))
        })
        .collect()
}

/// `secs` since the epoch as RFC 3339, UTC.
fn time_of(secs: i64) -> String {
    let out = std::process::Command::new("date")
        .args(["-u", "-d", &format!("@{secs}"), "+%Y-%m-%dT%H:%M:%SZ"])
        .output()
        .unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// Every read this file compares, with its output.
fn reads(run: Harnery) -> Vec<(Vec<String>, String)> {
    let mut asks: Vec<Vec<String>> = vec![vec!["sessions".into(), "--json".into()]];
    for by in ["session", "day", "model"] {
        asks.push(vec![
            "usage".into(),
            "--json".into(),
            "--by".into(),
            by.into(),
        ]);
        for (id, since) in sessions_and_midways(run) {
            let one = |extra: &[&str]| {
                let mut a: Vec<String> = ["usage", "--json", "--by", by, "--session", &id]
                    .map(String::from)
                    .to_vec();
                a.extend(extra.iter().map(|s| s.to_string()));
                a
            };
            asks.push(one(&[]));
            asks.push(one(&["--since", &since]));
        }
    }
    asks.into_iter()
        .map(|a| {
            let args: Vec<&str> = a.iter().map(String::as_str).collect();
            let out = stdout_of(run, &args);
            (a, out)
        })
        .collect()
}

/// Each `usage --session` read equals the tally of every row, which
/// `--epoch all` always reads.
fn alone_equals_every_row(run: Harnery, answers: &[(Vec<String>, String)]) {
    let mut compared = 0;
    for (args, out) in answers {
        if !args.iter().any(|a| a == "--session") {
            continue;
        }
        let mut all: Vec<&str> = args.iter().map(String::as_str).collect();
        all.extend(["--epoch", "all"]);
        assert_eq!(
            out,
            &stdout_of(run, &all),
            "{args:?}: its own rows and every row disagree"
        );
        compared += 1;
    }
    assert!(compared > 0);
}

/// The whole comparison on one home: tied as `expect_tied` says, alone
/// equals every row, older ledger equal, filled rows equal.
fn compare(home: &Path, run: Harnery, expect_tied: &[(&str, i64)]) {
    let tied = tied(home);
    for (id, want) in expect_tied {
        let found = tied.iter().find(|(s, _)| s == id).unwrap_or_else(|| {
            panic!("{id} is not a session of the home: {tied:?}");
        });
        assert_eq!(found.1, *want, "{id}: tied? {tied:?}");
    }
    let now = reads(run);
    alone_equals_every_row(run, &now);
    stdout_of(run, &["validate"]);
    let filled = kept(home);
    // An untied session keeps its usage sums: the page reads them.
    let untied = expect_tied.iter().filter(|(_, t)| *t == 0);
    let kept_sums = |id: &str| {
        let id = format!("Text({:?})", id.as_bytes());
        filled.3.iter().any(|row| row[1] == id)
    };
    assert!(untied.clone().count() > 0);
    for (id, _) in untied {
        assert!(kept_sums(id), "{id} keeps no usage sums");
    }
    let page = page_rows(home);
    assert!(page.contains("<tr"), "{page}");
    make_older(home);
    let older = reads(run);
    for ((args, a), (_, b)) in now.iter().zip(&older) {
        assert_eq!(a, b, "{args:?}: the kept rows and the events disagree");
    }
    assert_eq!(
        page,
        page_rows(home),
        "the page's kept sums and its events disagree"
    );
    let out = run(&["finalize"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(kept(home), filled, "the fill and the appends disagree");
    let again = reads(run);
    assert_eq!(now, again);
    assert_eq!(page, page_rows(home));
    stdout_of(run, &["validate"]);
}

#[test]
fn sessions_sharing_call_ids_are_tied_by_call_after_the_first() {
    let home = tempfile::tempdir().unwrap();
    let (ids, _) = four_sessions_sharing_ids(home.path());
    let run = records_on(home.path());
    let expect: Vec<(&str, i64)> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| (id.as_str(), if i == 0 { 0 } else { 2 }))
        .collect();
    compare(home.path(), &run, &expect);
}

#[test]
fn a_fork_is_tied_by_its_parent_and_its_parent_is_not_tied() {
    let home = tempfile::tempdir().unwrap();
    fork_pair(home.path());
    let run = records_on(home.path());
    compare(home.path(), &run, &[(FORK_PARENT, 0), (FORK_CHILD, 1)]);
}

#[test]
fn a_restored_child_keeps_its_link_and_is_tied_by_its_copies() {
    use crate::restore::apply::{CLAUDE, claude_world};
    let w = claude_world();
    let restored = crate::report::usage_copies::restored_child(&w);
    let run = |args: &[&str]| w.harnery(args);
    let (sessions, ..) = kept(w.home.path());
    let child = sessions.iter().find(|s| s.0 == restored.child).unwrap();
    let link = child.1.as_deref().unwrap();
    assert!(
        link.starts_with(&format!("claude-code/{CLAUDE}@")),
        "{link}"
    );
    compare(
        w.home.path(),
        &run,
        &[(CLAUDE, 0), (restored.child.as_str(), 2)],
    );
}

/// Sessions of two agents that no other session's rows bear on (a
/// Copilot session resumed, with its own totals; a fork's parent) are
/// tallied from their own rows, to the same bytes; the fork is tied.
#[test]
fn sessions_of_two_agents_are_read_from_their_own_rows() {
    let home = tempfile::tempdir().unwrap();
    let lines = crate::report::record_usage::resumed_copilot(home.path());
    let copilot = crate::report::record_usage::copilot_session(&lines);
    fork_pair(home.path());
    let copilot_home = home.path().join("copilot");
    let run = |args: &[&str]| {
        common::harnery(home.path())
            .env("HARNERY_RECORDS", "on")
            .env("COPILOT_HOME", &copilot_home)
            .args(args)
            .output()
            .unwrap()
    };
    compare(
        home.path(),
        &run,
        &[(copilot.as_str(), 0), (FORK_PARENT, 0), (FORK_CHILD, 1)],
    );
}
