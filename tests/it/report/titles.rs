//! Titles and projects: each session's title (its first prompt, with the
//! context a harness injects taken out; a later prompt never replaces
//! it) and project (the git root of its cwd, else the cwd), kept on its
//! row by finalize and carried by `sessions` (table and `--json`), its
//! order (newest activity first) and its `--project` filter.

use std::path::Path;

use crate::common;

use common::*;
use harnery::contract::{
    Attestation, Confidence, Event, MessageUser, Payload, PromptSubmitted, Provenance, RecordAt,
    SessionStarted,
};

pub(crate) fn started(id: &str, offset: u64, cwd: &Path) -> Event {
    event(
        &session(id),
        offset,
        Payload::SessionStarted(SessionStarted {
            source: Some("startup".into()),
            cwd: Some(cwd.to_string_lossy().into_owned()),
            model: None,
            transcript_path: None,
        }),
    )
}

pub(crate) fn prompt(id: &str, offset: u64, text: &str) -> Event {
    event(
        &session(id),
        offset,
        Payload::PromptSubmitted(PromptSubmitted {
            prompt: Some(text.into()),
            transformed: false,
        }),
    )
}

fn recorded_user(id: &str, offset: u64, text: &str) -> Event {
    let mut e = event(
        &session(id),
        offset,
        Payload::MessageUser(MessageUser {
            record: RecordAt {
                path: "/t.jsonl".into(),
                offset: 0,
            },
            message_id: None,
            text: Some(text.into()),
            source: None,
        }),
    );
    e.provenance = Provenance {
        attestation: Attestation::Record,
        confidence: Confidence::High,
    };
    e
}

/// `event`'s times moved by `by` nanoseconds.
fn at(mut e: Event, by: i64) -> Event {
    e.time_unix_ns += by;
    e
}

fn finalize(home: &Path) {
    let out = run(home, &["finalize"]);
    assert!(out.status.success(), "{}", stderr(&out));
}

fn line_of<'a>(lines: &'a [serde_json::Value], id: &str) -> &'a serde_json::Value {
    lines
        .iter()
        .find(|l| l["session"]["session_id"] == id)
        .unwrap_or_else(|| panic!("{id} is listed: {lines:?}"))
}

const HOUR: i64 = 3_600_000_000_000;

/// A repository with a subdirectory, and a plain directory, in `root`.
fn places(root: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let repo = root.join("work/harnery");
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    std::fs::create_dir_all(repo.join("crates/deep")).unwrap();
    let plain = root.join("scratch");
    std::fs::create_dir_all(&plain).unwrap();
    (repo, plain)
}

#[test]
fn a_title_is_the_first_prompt_without_injected_context_and_a_project_the_git_root() {
    let home = tempfile::tempdir().unwrap();
    let places_dir = tempfile::tempdir().unwrap();
    let (repo, plain) = places(places_dir.path());
    inject(
        home.path(),
        "b1",
        vec![
            started("in-repo", 0, &repo.join("crates/deep")),
            prompt(
                "in-repo",
                1,
                "<current_datetime>2026-11-30T00:18:44+00:00</current_datetime>\n\n\
                 Fix the flaky\n  build <system-reminder>be brief</system-reminder>",
            ),
        ],
    );
    inject(
        home.path(),
        "b2",
        vec![
            started("plain", 0, &plain),
            // Only injected context: not a title; the next prompt is.
            prompt(
                "plain",
                1,
                "<local-command-stdout>Compacted</local-command-stdout>",
            ),
            recorded_user(
                "plain",
                2,
                "<command-name>/review</command-name>\n<command-args>PR 7</command-args>",
            ),
        ],
    );
    inject(home.path(), "b3", small_session("quiet"));
    finalize(home.path());
    // A later prompt, in a later batch, leaves the first as the title.
    inject(
        home.path(),
        "b4",
        vec![prompt("in-repo", 2, "and now something else")],
    );
    finalize(home.path());

    let lines = sessions_json(home.path());
    let in_repo = line_of(&lines, "in-repo");
    assert_eq!(in_repo["title"], "Fix the flaky build");
    assert_eq!(in_repo["project"], repo.to_str().unwrap());
    assert_eq!(in_repo["cwd"], repo.join("crates/deep").to_str().unwrap());
    let plain_line = line_of(&lines, "plain");
    assert_eq!(plain_line["title"], "/review PR 7");
    assert_eq!(plain_line["project"], plain.to_str().unwrap());
    // Unknown is null, never missing.
    let quiet = line_of(&lines, "quiet");
    for key in ["title", "project", "cwd"] {
        assert!(quiet[key].is_null(), "{key}: {quiet}");
    }
    // The table shows them; `show` heads with them.
    let table = ok_text(home.path(), &["sessions"]);
    let head = table.lines().next().unwrap();
    assert!(
        head.contains("PROJECT") && head.contains("TITLE"),
        "{table}"
    );
    let row = table.lines().find(|l| l.contains("in-repo")).unwrap();
    assert!(
        row.contains("Fix the flaky build") && row.contains("harnery"),
        "{row}"
    );
    let shown = ok_text(home.path(), &["show", "in-repo"]);
    assert!(shown.contains("title: Fix the flaky build"), "{shown}");
    assert!(
        shown.contains(&format!("project: {}", repo.display())),
        "{shown}"
    );
    let shown = json_of(home.path(), &["show", "in-repo", "--json"]);
    assert_eq!(shown["summary"]["title"], "Fix the flaky build");
    // `view`'s index lists them; the session's page heads with them.
    let site = tempfile::tempdir().unwrap();
    let index = site.path().join("index.html");
    ok_text(home.path(), &["view", "-o", index.to_str().unwrap()]);
    let page = std::fs::read_to_string(&index).unwrap();
    let row = page
        .lines()
        .find(|l| l.contains("<code>in-repo</code>"))
        .expect("the session's row");
    assert!(
        row.contains("<td class=\"title\">Fix the flaky build</td>"),
        "{page}"
    );
    assert!(
        row.contains(&format!("<td class=\"project\">{}</td>", repo.display())),
        "{page}"
    );
    let own = std::fs::read_to_string(site.path().join("in-repo.html")).unwrap();
    assert!(
        own.contains("<p class=\"title\">Fix the flaky build</p>"),
        "{own}"
    );
}

fn ok_text(home: &Path, args: &[&str]) -> String {
    let out = run(home, args);
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    stdout(&out)
}

fn json_of(home: &Path, args: &[&str]) -> serde_json::Value {
    serde_json::from_str(&ok_text(home, args)).unwrap()
}

#[test]
fn sessions_are_listed_by_last_activity_and_a_restored_one_by_its_own() {
    let home = tempfile::tempdir().unwrap();
    // `old` started first and was active last; `parent` started later
    // and stopped; `restored` carries copies of its parent's earliest
    // times (so it starts first of all) but was active after `parent`.
    let old: Vec<Event> = small_session("old")
        .into_iter()
        .enumerate()
        .map(|(i, e)| at(e, if i == 3 { 10 * HOUR } else { 0 }))
        .collect();
    let parent: Vec<Event> = small_session("parent")
        .into_iter()
        .map(|e| at(e, HOUR))
        .collect();
    let restored: Vec<Event> = small_session("restored")
        .into_iter()
        .enumerate()
        .map(|(i, e)| at(e, if i == 0 { -HOUR } else { 2 * HOUR }))
        .collect();
    inject(home.path(), "b1", [old, parent, restored].concat());
    finalize(home.path());
    let ids: Vec<String> = sessions_json(home.path())
        .iter()
        .map(|l| l["session"]["session_id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ids, ["old", "restored", "parent"]);
    let table = ok_text(home.path(), &["sessions"]);
    let rows: Vec<&str> = table.lines().skip(1).collect();
    assert!(
        rows[0].contains("old") && rows[2].contains("parent"),
        "{table}"
    );
    // Relative times for people (now pinned two hours after `old`'s last).
    let last_old = 1_780_000_000_000_000_000 + 3 * 250_000_000 + 10 * HOUR;
    let out = harnery(home.path())
        .env(
            "HARNERY_NOW",
            (last_old + 2 * HOUR + 60_000_000_000).to_string(),
        )
        .arg("sessions")
        .output()
        .unwrap();
    let table = stdout(&out);
    let row = table.lines().find(|l| l.contains(" old ")).unwrap();
    assert!(row.contains("2 h ago"), "{table}");
}

#[test]
fn project_keeps_the_sessions_of_a_root_a_name_or_a_path() {
    let home = tempfile::tempdir().unwrap();
    let places_dir = tempfile::tempdir().unwrap();
    let (repo, plain) = places(places_dir.path());
    inject(
        home.path(),
        "b1",
        vec![started("a", 0, &repo), prompt("a", 1, "in the repo")],
    );
    inject(
        home.path(),
        "b2",
        vec![
            started("b", 0, &repo.join("crates/deep")),
            prompt("b", 1, "deeper"),
        ],
    );
    inject(home.path(), "b3", vec![started("c", 0, &plain)]);
    finalize(home.path());
    let listed = |args: &[&str], cwd: &Path| -> Vec<String> {
        let out = harnery(home.path())
            .current_dir(cwd)
            .args(["sessions", "--json"])
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        let mut ids: Vec<String> = stdout(&out)
            .lines()
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).unwrap();
                v["session"]["session_id"].as_str().unwrap().to_string()
            })
            .collect();
        ids.sort();
        ids
    };
    let anywhere = places_dir.path();
    assert_eq!(listed(&["--project", "harnery"], anywhere), ["a", "b"]);
    assert_eq!(listed(&["--project", "work/harnery"], anywhere), ["a", "b"]);
    assert_eq!(
        listed(&["--project", repo.to_str().unwrap()], anywhere),
        ["a", "b"]
    );
    assert_eq!(listed(&["--project", "scratch"], anywhere), ["c"]);
    assert!(listed(&["--project", "arnery"], anywhere).is_empty());
    // A path names the project it is in: `.` inside the repository.
    assert_eq!(
        listed(&["--project", "."], &repo.join("crates/deep")),
        ["a", "b"]
    );
    // The table filters alike.
    let out = harnery(home.path())
        .args(["sessions", "--project", "scratch"])
        .output()
        .unwrap();
    let table = stdout(&out);
    assert_eq!(table.lines().count(), 2, "{table}");
}
