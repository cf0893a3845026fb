//! OpenCode end to end over the real client's captures
//! (`tests/fixtures/opencode/`): each captured plugin hand-over goes
//! through the real `harnery-hook`, the session's `opencode.db` is rebuilt
//! from the captured journal rows where OpenCode keeps it, and the real
//! `harnery finalize` follows it. Expectations come from the captures.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use assert_cmd::Command;
use common::{stderr, stdout};
use serde_json::Value;

const SCENARIOS: [&str; 7] = [
    "basic",
    "failing",
    "two-turns",
    "kill",
    "model-error",
    "permission",
    "todo",
];

fn fixture(scenario: &str, file: &str) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/opencode");
    std::fs::read_to_string(root.join(scenario).join(file)).expect("fixture")
}

fn session_row(scenario: &str) -> Value {
    serde_json::from_str(fixture(scenario, "session.jsonl").lines().next().unwrap()).unwrap()
}

/// A harnery home and a user whose OpenCode data directory holds the
/// scenario's database, the hooks delivered.
struct Run {
    home: tempfile::TempDir,
    user: tempfile::TempDir,
    session: String,
    /// (event name, payload) of each hook hand-over.
    hooks: Vec<(String, String)>,
}

impl Run {
    fn new(scenario: &str) -> Run {
        let run = Run {
            home: tempfile::tempdir().unwrap(),
            user: tempfile::tempdir().unwrap(),
            session: session_row(scenario)["id"].as_str().unwrap().to_string(),
            hooks: fixture(scenario, "hooks.jsonl")
                .lines()
                .map(|l| {
                    let v: Value = serde_json::from_str(l).unwrap();
                    let event = v["argv"][1].as_str().unwrap().to_string();
                    (event, v["stdin_raw"].as_str().unwrap().to_string())
                })
                .collect(),
        };
        write_db(&run.db(), scenario);
        run
    }

    fn db(&self) -> PathBuf {
        self.user.path().join("data/opencode/opencode.db")
    }

    fn deliver(&self, hooks: &[(String, String)]) {
        for (event, payload) in hooks {
            Command::cargo_bin("harnery-hook")
                .unwrap()
                .env("HARNERY_HOME", self.home.path())
                .args(["opencode", event])
                .write_stdin(payload.as_bytes())
                .assert()
                .success();
        }
    }

    fn harnery(&self, args: &[&str]) -> std::process::Output {
        common::harnery(self.home.path())
            .env("HARNERY_RECORDS", "on")
            .env("HOME", self.user.path())
            .env("XDG_DATA_HOME", self.user.path().join("data"))
            .env_remove("OPENCODE_DB")
            .args(args)
            .output()
            .unwrap()
    }

    fn finalize(&self) -> Value {
        let out = self.harnery(&["finalize", "--json"]);
        assert!(out.status.success(), "{}", stderr(&out));
        serde_json::from_slice(&out.stdout).unwrap()
    }

    fn events(&self) -> Vec<Value> {
        let out = self.harnery(&["export", "--format", "jsonl"]);
        assert!(out.status.success(), "{}", stderr(&out));
        stdout(&out)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}

/// `opencode.db` at `db` with the scenario's session, journal and the rows
/// their foreign keys name, in OpenCode's own tables.
fn write_db(db: &Path, scenario: &str) {
    std::fs::create_dir_all(db.parent().unwrap()).unwrap();
    let conn = rusqlite::Connection::open(db).unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/opencode");
    conn.execute_batch(&std::fs::read_to_string(root.join("schema.sql")).unwrap())
        .unwrap();
    let s = session_row(scenario);
    let events = fixture(scenario, "event.jsonl");
    conn.execute(
        "INSERT INTO project (id, worktree, time_created, time_updated, sandboxes) \
         VALUES (?1, '/', 0, 0, '[]')",
        [s["project_id"].as_str()],
    )
    .unwrap();
    conn.execute(
        "INSERT INTO session (id, project_id, slug, directory, title, version, time_created, \
         time_updated) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        rusqlite::params![
            s["id"].as_str(),
            s["project_id"].as_str(),
            s["slug"].as_str(),
            s["directory"].as_str(),
            s["title"].as_str(),
            s["version"].as_str(),
            s["time_created"].as_i64(),
            s["time_updated"].as_i64()
        ],
    )
    .unwrap();
    conn.execute(
        "INSERT INTO event_sequence (aggregate_id, seq) VALUES (?1, ?2)",
        rusqlite::params![s["id"].as_str(), events.lines().count() as i64 - 1],
    )
    .unwrap();
    for l in events.lines() {
        let r: Value = serde_json::from_str(l).unwrap();
        conn.execute(
            "INSERT INTO event (id, aggregate_id, seq, type, data) VALUES (?1, ?2, ?3, ?4, ?5)",
            rusqlite::params![
                r["id"].as_str(),
                r["aggregate_id"].as_str(),
                r["seq"].as_i64(),
                r["type"].as_str(),
                r["data"].as_str()
            ],
        )
        .unwrap();
    }
}

fn of_type<'a>(events: &'a [Value], ty: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == ty).collect()
}

/// How many distinct spool records of each hook event the ledger's events
/// point back to.
fn hooks_in_ledger(events: &[Value]) -> BTreeMap<String, usize> {
    let mut seen: BTreeSet<(String, String)> = BTreeSet::new();
    for e in events {
        for raw in e["raw"].as_array().into_iter().flatten() {
            let name = raw["event_name"].as_str().unwrap_or("").to_string();
            if name != "harnery.record" {
                seen.insert((name, raw["record_digest"].as_str().unwrap().to_string()));
            }
        }
    }
    let mut counts = BTreeMap::new();
    for (name, _) in seen {
        *counts.entry(name).or_insert(0) += 1;
    }
    counts
}

fn delivered(hooks: &[(String, String)]) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for (event, _) in hooks {
        *counts.entry(event.clone()).or_insert(0) += 1;
    }
    counts
}

/// The usage totals harnery reports, kind by kind, in the session row's
/// column order.
fn harnery_tokens(run: &Run) -> [u64; 5] {
    let out = run.harnery(&["usage", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let usage: Value = serde_json::from_slice(&out.stdout).unwrap();
    let t = &usage["total"]["tokens"];
    ["input", "output", "reasoning", "cache_read", "cache_write"]
        .map(|k| t[k].as_u64().unwrap_or(0))
}

fn record_tokens(scenario: &str) -> [u64; 5] {
    let s = session_row(scenario);
    [
        "tokens_input",
        "tokens_output",
        "tokens_reasoning",
        "tokens_cache_read",
        "tokens_cache_write",
    ]
    .map(|k| s[k].as_u64().unwrap())
}

#[test]
fn every_captured_scenario_lands_whole_joined_and_counted() {
    for scenario in SCENARIOS {
        let run = Run::new(scenario);
        run.deliver(&run.hooks);
        let report = run.finalize();
        let events = run.events();
        assert_eq!(
            hooks_in_ledger(&events),
            delivered(&run.hooks),
            "{scenario}: every hook hand-over once"
        );
        for ty in ["record.problem", "signal.unrecognized"] {
            assert!(
                of_type(&events, ty).is_empty(),
                "{scenario}: {ty}: {events:?}"
            );
        }
        let spans = &report["spans"];
        let (open, recovered) = (spans["open"].as_u64(), spans["recovered"].as_u64());
        let expected = match scenario {
            // Killed: nothing more comes until the session is ended.
            "kill" => (Some(1), Some(0)),
            // Refused: the turn's end closes what no hook will.
            "permission" => (Some(0), Some(1)),
            _ => (Some(0), Some(0)),
        };
        assert_eq!(
            (open, recovered),
            expected,
            "{scenario}: open and recovered spans"
        );
        for r in of_type(&events, "tool.recorded") {
            assert!(
                r["payload"]["span_request_event_id"].is_string(),
                "{scenario}: a recorded call joins its hook span: {r}"
            );
        }
        assert_eq!(
            harnery_tokens(&run),
            record_tokens(scenario),
            "{scenario}: tokens equal OpenCode's session totals"
        );
        for e in &events {
            assert_eq!(
                e["session"]["session_id"],
                run.session.as_str(),
                "{scenario}"
            );
        }
    }
}

#[test]
fn a_killed_call_is_recovered_when_the_session_is_ended() {
    let run = Run::new("kill");
    run.deliver(&run.hooks);
    run.finalize();
    let out = run.harnery(&["end", &format!("opencode/{}", run.session)]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report = run.finalize();
    assert_eq!(report["spans"]["open"], 0);
    assert_eq!(report["spans"]["recovered"], 1);
    let events = run.events();
    let done = of_type(&events, "tool.completed");
    assert_eq!(done.len(), 1);
    assert_eq!(
        done[0]["payload"]["outcome"], "unknown",
        "recovered, not observed"
    );
    assert_eq!(done[0]["payload"]["tool_call_id"], "call_e2e_0002");
}

#[test]
fn the_record_says_how_the_call_a_refused_permission_left_open_ended() {
    let run = Run::new("permission");
    run.deliver(&run.hooks);
    run.finalize();
    let events = run.events();
    let done = of_type(&events, "tool.completed");
    assert_eq!(done.len(), 1, "no hook completed it; the turn's end did");
    assert_eq!(
        done[0]["provenance"]["attestation"], "derived",
        "{:?}",
        done[0]
    );
    assert_eq!(
        done[0]["payload"]["recovery"]["reason"], "completion_not_observed_before_turn_end",
        "{:?}",
        done[0]
    );
    let recorded = of_type(&events, "tool.recorded");
    let finished: Vec<_> = recorded
        .iter()
        .filter(|r| r["payload"]["success"] == false)
        .collect();
    assert_eq!(finished.len(), 1, "{recorded:?}");
    assert_eq!(finished[0]["payload"]["tool_call_id"], "call_e2e_0002");
}

#[test]
fn search_finds_the_tool_output_and_sessions_name_the_agent() {
    let run = Run::new("basic");
    run.deliver(&run.hooks);
    run.finalize();
    let out = run.harnery(&["search", "--adapter", "opencode", "hello-from-harnery-e2e"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("tool-output bash"),
        "{}",
        stdout(&out)
    );
    let out = run.harnery(&["sessions", "--json"]);
    let sessions: Vec<Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(sessions.len(), 1);
    assert_eq!(sessions[0]["session"]["adapter"], "opencode");
    for cmd in ["validate", "verify"] {
        let out = run.harnery(&[cmd]);
        assert!(out.status.success(), "{cmd}: {}", stdout(&out));
    }
}

/// A finalize between the hooks and the record (the journal grows after
/// a pass read it) reads on from its cursor: the same ledger as one pass.
#[test]
fn a_journal_read_in_passes_gives_what_one_pass_gives() {
    let whole = Run::new("two-turns");
    whole.deliver(&whole.hooks);
    whole.finalize();
    let one_pass = whole.events();

    let parts = Run::new("two-turns");
    let conn = rusqlite::Connection::open(parts.db()).unwrap();
    let rows: Vec<(i64, String)> = {
        let mut stmt = conn
            .prepare("SELECT seq, id FROM event ORDER BY seq")
            .unwrap();
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    let kept: Vec<(i64, String, String, String)> = {
        let mut stmt = conn
            .prepare("SELECT seq, id, type, data FROM event WHERE seq >= 30 ORDER BY seq")
            .unwrap();
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    conn.execute("DELETE FROM event WHERE seq >= 30", [])
        .unwrap();
    let half = parts.hooks.len() / 2;
    parts.deliver(&parts.hooks[..half]);
    parts.finalize();
    for (seq, id, ty, data) in &kept {
        conn.execute(
            "INSERT INTO event (id, aggregate_id, seq, type, data) VALUES (?1, ?2, ?3, ?4, ?5)",
            rusqlite::params![id, parts.session, seq, ty, data],
        )
        .unwrap();
    }
    parts.deliver(&parts.hooks[half..]);
    parts.finalize();
    let in_passes = parts.events();
    assert!(rows.len() > 30);
    // Where a checkpoint stands in the record depends on where passes
    // ended; restoring at a checkpoint is not supported for OpenCode.
    let types = |events: &[Value]| -> BTreeMap<String, usize> {
        let mut m = BTreeMap::new();
        for e in events.iter().filter(|e| e["type"] != "checkpoint.located") {
            *m.entry(e["type"].as_str().unwrap().to_string())
                .or_insert(0) += 1;
        }
        m
    };
    assert_eq!(types(&in_passes), types(&one_pass));
    assert!(of_type(&in_passes, "record.problem").is_empty());
    assert_eq!(harnery_tokens(&parts), record_tokens("two-turns"));
}

/// A database that is not where OpenCode keeps it is never read: a
/// symlink from the data directory to another name is refused, loudly.
#[test]
fn a_database_elsewhere_is_refused_not_read() {
    let run = Run::new("basic");
    let elsewhere = run.user.path().join("elsewhere.db");
    std::fs::rename(run.db(), &elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, run.db()).unwrap();
    run.deliver(&run.hooks);
    run.finalize();
    let events = run.events();
    let problems = of_type(&events, "record.problem");
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert_eq!(problems[0]["payload"]["kind"], "refused");
    assert!(of_type(&events, "usage.reported").is_empty());
}

/// `harnery` with only `HOME`, `PATH` and `vars` set, run in `cwd`, the hook
/// binary named.
fn harnery_in(
    user: &Path,
    cwd: &Path,
    args: &[&str],
    vars: &[(&str, &Path)],
) -> std::process::Output {
    let hook = assert_cmd::cargo::cargo_bin("harnery-hook");
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_harnery"));
    cmd.args(args)
        .args(["--hook-bin", hook.to_str().unwrap(), "--no-schedule"])
        .env_clear()
        .env("HOME", user)
        .env("PATH", "/usr/bin:/bin")
        .current_dir(cwd);
    for (name, value) in vars {
        cmd.env(name, value);
    }
    cmd.output().unwrap()
}

#[test]
fn install_writes_the_plugin_where_opencode_loads_it_and_uninstall_takes_it_back() {
    let user = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let (u, p) = (user.path(), project.path());
    let plugin = u.join(".config/opencode/plugins/harnery.js");
    let hook = assert_cmd::cargo::cargo_bin("harnery-hook");
    let named = format!("const HOOK = {}", serde_json::json!(hook.to_str().unwrap()));

    let out = harnery_in(u, p, &["install", "opencode", "--dry-run"], &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains(&named), "{}", stdout(&out));
    assert!(!plugin.exists(), "a dry run writes nothing");

    let out = harnery_in(u, p, &["install", "opencode"], &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = std::fs::read_to_string(&plugin).unwrap();
    assert!(text.contains(&named) && !text.contains("{hook_bin}"));
    let again = harnery_in(u, p, &["install", "opencode"], &[]);
    assert!(
        stdout(&again).contains("already up to date"),
        "{}",
        stdout(&again)
    );
    assert_eq!(std::fs::read_to_string(&plugin).unwrap(), text);

    // OpenCode's own variable moves its config directory, and the plugin with it.
    let xdg = u.join("xdg");
    let out = harnery_in(u, p, &["install", "opencode"], &[("XDG_CONFIG_HOME", &xdg)]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(xdg.join("opencode/plugins/harnery.js").is_file());

    let out = harnery_in(u, p, &["install", "opencode", "--scope", "project"], &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let in_project = p.join(".opencode/plugins/harnery.js");
    assert_eq!(std::fs::read_to_string(&in_project).unwrap(), text);

    for (scope, file) in [("user", &plugin), ("project", &in_project)] {
        let out = harnery_in(u, p, &["uninstall", "opencode", "--scope", scope], &[]);
        assert!(out.status.success(), "{}", stderr(&out));
        assert!(!file.exists(), "{scope}: removed");
        let out = harnery_in(u, p, &["uninstall", "opencode", "--scope", scope], &[]);
        assert!(
            out.status.success(),
            "{scope}: a second uninstall: {}",
            stderr(&out)
        );
    }
}

/// `OPENCODE_DB` naming a database of another name is refused, not read.
#[test]
fn an_opencode_db_of_another_name_is_refused() {
    let run = Run::new("basic");
    let other = run.user.path().join("data/opencode/mine.db");
    std::fs::rename(run.db(), &other).unwrap();
    run.deliver(&run.hooks);
    let out = common::harnery(run.home.path())
        .env("HARNERY_RECORDS", "on")
        .env("HOME", run.user.path())
        .env("XDG_DATA_HOME", run.user.path().join("data"))
        .env("OPENCODE_DB", &other)
        .args(["finalize"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let events = run.events();
    let problems = of_type(&events, "record.problem");
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert_eq!(problems[0]["payload"]["kind"], "refused");
    assert!(of_type(&events, "message.user").is_empty());
}

/// Passes of a few lines each (the rendering kept from just before each
/// cursor) give what one pass gives. The pass size is a failpoints
/// build's tuning (`HARNERY_RECORD_PASS_BYTES`).
#[cfg(feature = "failpoints")]
#[test]
fn many_small_passes_over_the_rendering_give_what_one_pass_gives() {
    let whole = Run::new("two-turns");
    whole.deliver(&whole.hooks);
    whole.finalize();
    let small = Run::new("two-turns");
    small.deliver(&small.hooks);
    let out = common::harnery(small.home.path())
        .env("HARNERY_RECORDS", "on")
        .env("HARNERY_RECORD_PASS_BYTES", "3000")
        .env("HOME", small.user.path())
        .env("XDG_DATA_HOME", small.user.path().join("data"))
        .args(["finalize", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(report["record_signals"].as_u64().unwrap() > 5, "{report}");
    // Each event's type and payload, its ids and the run's temporary paths
    // left out (they differ between two runs of the same thing).
    let ids = regex::Regex::new(r"ev_[0-9a-f]+|stamped-\d+-[0-9a-f]+|/tmp/[^/]+/").unwrap();
    let payloads = |events: Vec<Value>| -> Vec<String> {
        let mut all: Vec<String> = events
            .into_iter()
            .filter(|e| e["type"] != "checkpoint.located")
            .map(|e| {
                ids.replace_all(&format!("{} {}", e["type"], e["payload"]), "_")
                    .into_owned()
            })
            .collect();
        all.sort();
        all
    };
    assert_eq!(payloads(small.events()), payloads(whole.events()));
}

/// The event types of the tool-output hits of `query`.
fn output_hits(run: &Run, query: &str) -> Vec<String> {
    let out = run.harnery(&["search", "--json", "--limit", "100", "--", query]);
    assert!(out.status.success(), "{}", stderr(&out));
    common::tool_output_types(&stdout(&out))
}

/// The record's text of a result (generation 12, the tool part's output
/// or error) is found once: the hook's `output` is the same text, first in
/// the chain; a call whose permission was refused has no hook after it,
/// and its error is found from the record alone.
#[test]
fn a_results_text_from_the_record_is_found_once() {
    for (scenario, query, hit) in [
        ("failing", "\"No such file or directory\"", "tool.completed"),
        ("permission", "\"rejected permission\"", "tool.recorded"),
    ] {
        let run = Run::new(scenario);
        run.deliver(&run.hooks);
        run.finalize();
        assert_eq!(output_hits(&run, query), [hit], "{scenario}");
    }
}
