//! Qwen Code end to end over what the real client (0.24.4) sent and wrote:
//! each capture's hook payloads go through the real `harnery-hook` (as
//! `harnery install qwen-code` configures it: `harnery-hook qwen-code
//! <Event>`), its chat record sits where Qwen writes records, and the
//! real `harnery finalize` joins the two. Expectations come from the
//! capture files, never from harnery's output.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use assert_cmd::Command;
use serde_json::Value;

use crate::common::{self, stderr, stdout};

fn fixtures(scenario: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/qwen-code")
        .join(scenario)
}

fn json_lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .expect("the fixture reads")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

/// A temporary harnery home and Qwen directory with one captured session.
struct Capture {
    dir: tempfile::TempDir,
    scenario: &'static str,
    /// Where the capture's payloads said Qwen's directory was.
    captured_qwen: String,
    record: PathBuf,
}

impl Capture {
    fn new(scenario: &'static str) -> Capture {
        let dir = tempfile::tempdir().expect("a temp dir");
        let first = &json_lines(&fixtures(scenario).join("hooks.jsonl"))[0];
        let payload: Value = serde_json::from_str(first["stdin_raw"].as_str().unwrap()).unwrap();
        let path = payload["transcript_path"].as_str().unwrap().to_string();
        let cut = path.find("/projects/").expect("a record under projects");
        let record = dir.path().join("qwen").join(&path[cut + 1..]);
        Capture {
            dir,
            scenario,
            captured_qwen: path[..cut].to_string(),
            record,
        }
    }

    fn home(&self) -> &Path {
        self.dir.path()
    }

    /// The record as the client had written it by then.
    fn write_record(&self, file: &str) {
        std::fs::create_dir_all(self.record.parent().unwrap()).unwrap();
        std::fs::copy(fixtures(self.scenario).join(file), &self.record).unwrap();
    }

    /// A subagent's own record where the capture's `SubagentStop` says it
    /// is, moved as the payloads are.
    fn write_subagent_record(&self) {
        let stop = json_lines(&fixtures(self.scenario).join("hooks.jsonl"))
            .into_iter()
            .find(|v| v["event"] == "SubagentStop")
            .expect("a SubagentStop");
        let payload: Value = serde_json::from_str(stop["stdin_raw"].as_str().unwrap()).unwrap();
        let named = payload["agent_transcript_path"].as_str().unwrap();
        let here = self.dir.path().join("qwen").display().to_string();
        let path = PathBuf::from(named.replace(&self.captured_qwen, &here));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::copy(fixtures(self.scenario).join("subagent-record.jsonl"), path).unwrap();
    }

    /// Every captured hook of `file` through the real hook binary, its
    /// paths moved from the capturing machine to this one; their events.
    fn deliver(&self, file: &str) -> Vec<String> {
        let here = self.dir.path().join("qwen").display().to_string();
        let mut events = Vec::new();
        for v in json_lines(&fixtures(self.scenario).join(file)) {
            let event = v["event"].as_str().unwrap().to_string();
            let stdin = v["stdin_raw"]
                .as_str()
                .unwrap()
                .replace(&self.captured_qwen, &here);
            Command::cargo_bin("harnery-hook")
                .unwrap()
                .env("HARNERY_HOME", self.home().join("hh"))
                .args(["qwen-code", &event])
                .write_stdin(stdin)
                .assert()
                .success();
            events.push(event);
        }
        events
    }

    fn harnery(&self, args: &[&str]) -> String {
        let out = common::harnery(&self.home().join("hh"))
            .env("HARNERY_RECORDS", "on")
            .env("HOME", self.home())
            .env("QWEN_HOME", self.home().join("qwen"))
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        stdout(&out)
    }

    fn events(&self) -> Vec<Value> {
        let text = self.harnery(&["export", "--format", "jsonl"]);
        text.lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// Per hook event name: how many raw signals the ledger holds, and
    /// how many of them made no event or were taken as a duplicate.
    fn raw_signals(&self) -> BTreeMap<String, (i64, i64)> {
        let db = self.home().join("hh/ledgers/v2/ledger.sqlite");
        let conn = rusqlite::Connection::open_with_flags(
            format!("file:{}?immutable=1", db.display()),
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_URI,
        )
        .unwrap();
        let mut stmt = conn
            .prepare(
                "SELECT event_name, count(*), \
                 sum(event_ids IN ('', '[]') OR duplicate_of IS NOT NULL) \
                 FROM raw_signals WHERE adapter = 'qwen-code' \
                 AND event_name NOT LIKE 'harnery.%' GROUP BY event_name",
            )
            .unwrap();
        stmt.query_map([], |r| Ok((r.get(0)?, (r.get(1)?, r.get(2)?))))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    }
}

fn count(events: &[String]) -> BTreeMap<String, (i64, i64)> {
    let mut counts = BTreeMap::new();
    for e in events {
        counts.entry(e.clone()).or_insert((0, 0)).0 += 1;
    }
    counts
}

/// The record's own token totals: (uncached input, output, cache reads,
/// reasoning), each model call once, as its `api_response` telemetry line
/// reports it (the main agent's calls and its subagents').
fn record_tokens(path: &Path) -> [u64; 4] {
    let mut t = [0; 4];
    for line in json_lines(path) {
        let u = &line["systemPayload"]["uiEvent"];
        if u["event.name"] != "qwen-code.api_response" {
            continue;
        }
        let n = |k: &str| u[k].as_u64().unwrap_or(0);
        t[0] += n("input_token_count") - n("cached_content_token_count");
        t[1] += n("output_token_count");
        t[2] += n("cached_content_token_count");
        t[3] += n("thoughts_token_count");
    }
    t
}

fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

/// What holds for every capture: each hook once in the ledger, every span
/// closed, the record joined without a problem (each recorded call to its
/// hook span, where one was native: `joined`), tokens as the record says.
fn check(capture: &Capture, delivered: &[String], joined: bool) -> Vec<Value> {
    assert_eq!(
        capture.raw_signals(),
        count(delivered),
        "{}",
        capture.scenario
    );
    let events = capture.events();
    assert!(of_type(&events, "record.problem").is_empty(), "{events:#?}");
    let requested = of_type(&events, "tool.requested");
    let completed = of_type(&events, "tool.completed");
    assert_eq!(requested.len(), completed.len(), "{}", capture.scenario);
    for recorded in of_type(&events, "tool.recorded") {
        let span = &recorded["payload"]["span_request_event_id"];
        assert_eq!(span.is_string(), joined, "{recorded}");
    }
    let usage: Value = serde_json::from_str(&capture.harnery(&["usage", "--json"])).unwrap();
    let t = &usage["total"]["tokens"];
    let got = [
        t["input"].as_u64().unwrap_or(0),
        t["output"].as_u64().unwrap_or(0),
        t["cache_read"].as_u64().unwrap_or(0),
        t["reasoning"].as_u64().unwrap_or(0),
    ];
    assert_eq!(got, record_tokens(&capture.record), "{t}");
    events
}

fn run(scenario: &'static str) -> (Capture, Vec<Value>) {
    let capture = Capture::new(scenario);
    capture.write_record("record.jsonl");
    let delivered = capture.deliver("hooks.jsonl");
    capture.harnery(&["finalize"]);
    // A call refused before it ran has no native hook span to join.
    let events = check(&capture, &delivered, scenario != "refused-call");
    (capture, events)
}

#[test]
fn a_shell_call_is_one_span_joined_to_the_record_and_found_by_search() {
    let (capture, events) = run("basic");
    let span = of_type(&events, "tool.completed")[0];
    assert_eq!(span["payload"]["tool_call_id"], "call_harnery_1");
    assert_eq!(span["payload"]["outcome"], "success");
    let sessions = capture.harnery(&["sessions", "--json"]);
    let row: Value = serde_json::from_str(sessions.lines().next().unwrap()).unwrap();
    assert_eq!(row["session"]["adapter"], "qwen-code");
    // Every signal understood, every span closed by the client.
    assert_eq!(row["eligibility"]["class"], "eligible", "{row}");
    let found = capture.harnery(&["search", "hello-from-harnery-e2e"]);
    assert!(found.contains("41cafee8"), "{found}");
}

#[test]
fn a_failing_command_fails_with_its_exit_code() {
    let (_, events) = run("failing");
    let span = of_type(&events, "tool.completed")[0];
    assert_eq!(span["payload"]["outcome"], "failure");
    let finished: Vec<_> = of_type(&events, "tool.recorded")
        .into_iter()
        .filter(|e| !e["payload"]["success"].is_null())
        .collect();
    assert_eq!(finished.len(), 1);
    assert_eq!(finished[0]["payload"]["success"], false);
    assert_eq!(finished[0]["payload"]["exit_code"], 2);
}

#[test]
fn two_runs_of_one_session_are_two_turns() {
    let (_, events) = run("two-turns");
    let turns = of_type(&events, "turn.started");
    assert_eq!(turns.len(), 2);
    assert_eq!(of_type(&events, "turn.completed").len(), 2);
}

#[test]
fn a_call_refused_before_it_ran_is_a_span_the_batch_alone_reports() {
    let (_, events) = run("refused-call");
    let requested = of_type(&events, "tool.requested");
    assert_eq!(requested.len(), 1);
    assert!(
        requested[0]["payload"]["recovery"].is_object(),
        "{requested:?}"
    );
}

#[test]
fn a_subagents_calls_and_tokens_are_the_sessions() {
    let (capture, events) = run("subagent");
    // Qwen's own per-call ledger agrees with the record's telemetry.
    let mut ledger = [0; 4];
    for v in json_lines(&fixtures("subagent").join("token-usage.jsonl")) {
        let n = |k: &str| v[k].as_u64().unwrap();
        let cached = n("cachedTokens");
        let call = [
            n("inputTokens") - cached,
            n("outputTokens"),
            cached,
            n("thoughtsTokens"),
        ];
        ledger.iter_mut().zip(call).for_each(|(sum, x)| *sum += x);
    }
    assert_eq!(record_tokens(&capture.record), ledger);
    let by_agent: Vec<&Value> = of_type(&events, "tool.completed")
        .into_iter()
        .map(|e| &e["agent_id"])
        .collect();
    assert_eq!(by_agent.len(), 2);
    assert!(
        by_agent.contains(&&Value::from("general-purpose-call_harnery_1")),
        "{by_agent:?}"
    );
    assert_eq!(of_type(&events, "subagent.started").len(), 1);
    assert_eq!(of_type(&events, "subagent.stopped").len(), 1);
}

#[test]
fn a_background_subagent_is_followed_into_its_own_record_without_counting_twice() {
    let capture = Capture::new("background-subagent");
    capture.write_record("record.jsonl");
    capture.write_subagent_record();
    let delivered = capture.deliver("hooks.jsonl");
    capture.harnery(&["finalize"]);
    let events = check(&capture, &delivered, true);
    let words: Vec<&Value> = of_type(&events, "message.assistant")
        .into_iter()
        .filter(|e| e["agent_id"] == "general-purpose-call_harnery_1")
        .collect();
    assert_eq!(words.len(), 2, "the subagent's two answers: {events:#?}");
    // Its turn goes on after the first Stop: the task's notice starts a
    // round of the model under the same prompt_id.
    assert_eq!(of_type(&events, "turn.started").len(), 1);
    assert_eq!(of_type(&events, "tool.completed").len(), 3);
}

#[test]
fn an_interactive_session_ends_with_its_session_end() {
    let (_, events) = run("interactive");
    assert_eq!(of_type(&events, "session.ended").len(), 1);
}

#[test]
fn a_killed_call_is_closed_by_recovery_when_the_session_is_resumed() {
    let capture = Capture::new("kill");
    capture.write_record("record.jsonl");
    let mut delivered = capture.deliver("hooks.jsonl");
    capture.harnery(&["finalize"]);
    let open = capture.events();
    assert_eq!(of_type(&open, "tool.completed").len(), 0);
    capture.write_record("record-after-resume.jsonl");
    delivered.extend(capture.deliver("resume-hooks.jsonl"));
    capture.harnery(&["finalize"]);
    let events = check(&capture, &delivered, true);
    let killed: Vec<_> = of_type(&events, "tool.completed")
        .into_iter()
        .filter(|e| e["payload"]["recovery"].is_object())
        .collect();
    assert_eq!(killed.len(), 1, "{events:#?}");
}

/// `harnery install|uninstall qwen-code` in the user scope: where
/// `QWEN_HOME` says, on the settings file the real client wrote (its own
/// hooks on all 22 events it accepted, and the `$version` it adds).
fn install(user: &Path, qwen: &Path, args: &[&str]) -> String {
    let hook = assert_cmd::cargo::cargo_bin("harnery-hook");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_harnery"))
        .args(args)
        .args(["--hook-bin", hook.to_str().unwrap(), "--no-schedule"])
        .env_clear()
        .env("HOME", user)
        .env("QWEN_HOME", qwen)
        .env("PATH", "/usr/bin:/bin")
        .current_dir(user)
        .output()
        .unwrap();
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    stdout(&out)
}

#[test]
fn install_adds_harnery_beside_the_clients_hooks_on_every_event_and_uninstall_takes_it_out() {
    let user = tempfile::tempdir().unwrap();
    let qwen = user.path().join("elsewhere");
    std::fs::create_dir_all(&qwen).unwrap();
    let settings = qwen.join("settings.json");
    let written =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/qwen-code/settings.json");
    std::fs::copy(&written, &settings).unwrap();
    let before: Value = serde_json::from_str(&std::fs::read_to_string(&settings).unwrap()).unwrap();

    let dry = install(user.path(), &qwen, &["install", "qwen-code", "--dry-run"]);
    assert!(dry.contains("$QWEN_HOME is set"), "{dry}");
    assert_eq!(
        std::fs::read_to_string(&settings).unwrap(),
        std::fs::read_to_string(&written).unwrap()
    );

    install(user.path(), &qwen, &["install", "qwen-code"]);
    let after: Value = serde_json::from_str(&std::fs::read_to_string(&settings).unwrap()).unwrap();
    assert_eq!(after["$version"], 4);
    let events: Vec<&String> = after["hooks"].as_object().unwrap().keys().collect();
    let theirs: Vec<&String> = before["hooks"].as_object().unwrap().keys().collect();
    assert_eq!(
        events, theirs,
        "harnery installs exactly the events the client accepted"
    );
    for (event, groups) in after["hooks"].as_object().unwrap() {
        let groups = groups.as_array().unwrap();
        assert_eq!(
            groups[0], before["hooks"][event][0],
            "{event}: the client's hook first"
        );
        let ours = groups[1]["hooks"][0]["command"].as_str().unwrap();
        assert!(
            ours.ends_with(&format!("harnery-hook' qwen-code {event}")),
            "{ours}"
        );
    }
    let backups = std::fs::read_dir(&qwen)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .contains("harnery-backup")
        })
        .count();
    assert_eq!(backups, 1);

    let once = std::fs::read(&settings).unwrap();
    install(user.path(), &qwen, &["install", "qwen-code"]);
    assert_eq!(
        std::fs::read(&settings).unwrap(),
        once,
        "installing twice is installing once"
    );

    install(user.path(), &qwen, &["uninstall", "qwen-code"]);
    let undone: Value = serde_json::from_str(&std::fs::read_to_string(&settings).unwrap()).unwrap();
    assert_eq!(undone, before);
    assert!(
        !user.path().join(".qwen").exists(),
        "nothing written where QWEN_HOME does not point"
    );
}

/// The event types of the tool-output hits of `query`.
fn output_hits(capture: &Capture, query: &str) -> Vec<String> {
    common::tool_output_types(
        &capture.harnery(&["search", "--json", "--limit", "100", "--", query]),
    )
}

/// The record's text of a result (generation 12, its function response)
/// is in `tool.recorded`, and found once: the hook's `llmContent` is the
/// same text, first in the chain.
#[test]
fn a_results_text_from_the_record_is_found_once() {
    let (capture, events) = run("basic");
    let recorded: Vec<&str> = of_type(&events, "tool.recorded")
        .iter()
        .filter_map(|e| e["payload"]["output"].as_str())
        .collect();
    assert_eq!(recorded.len(), 1, "{recorded:?}");
    assert!(recorded[0].starts_with("Command: echo hello-from-harnery-e2e\n"));
    assert_eq!(
        output_hits(&capture, "\"Process Group PGID\""),
        ["tool.completed"]
    );
    let (capture, _) = run("refused-call");
    assert_eq!(output_hits(&capture, "\"standalone sleep\"").len(), 1);
}
