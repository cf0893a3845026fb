//! Gemini CLI, from captures of the real client (0.61.0, offline against a
//! scripted model: `tests/fixtures/gemini-cli/<scenario>/`, each with the
//! hook payloads the client gave every hook (`hooks.jsonl`), its own
//! record (`session-*.jsonl`) and the model server's log). The payloads of
//! the events `harnery install gemini-cli` installs go through the real
//! `harnery-hook`, the record lies where their `transcript_path` says, and
//! `harnery finalize` follows it. Every expectation is computed from the
//! fixture files with serde_json, never from harnery's output.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use assert_cmd::Command;
use serde_json::Value;

use crate::common::{self, stderr, stdout};

/// The events `harnery install gemini-cli` writes hooks for: all the
/// client has.
const INSTALLED: [&str; 11] = [
    "SessionStart",
    "SessionEnd",
    "BeforeAgent",
    "AfterAgent",
    "BeforeModel",
    "AfterModel",
    "BeforeToolSelection",
    "BeforeTool",
    "AfterTool",
    "PreCompress",
    "Notification",
];

/// The events that say no more than that they fired (`hook.observed`).
const OBSERVED: [&str; 4] = [
    "BeforeModel",
    "AfterModel",
    "BeforeToolSelection",
    "PreCompress",
];

fn fixture(scenario: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/gemini-cli")
        .join(scenario)
}

fn json_lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// One scenario fed and finalized.
struct Run {
    _dir: tempfile::TempDir,
    home: PathBuf,
    user: PathBuf,
    /// The client's record, as the fixture holds it.
    record: Vec<Value>,
    /// The hook payloads fed, by event name, in order.
    fed: Vec<(String, Value)>,
    events: Vec<Value>,
}

impl Run {
    fn of(scenario: &str) -> Run {
        Run::finalized_between(scenario, |_| false)
    }

    /// As [`Run::of`], with a finalize (records followed) after each
    /// payload `pause` picks, as a finalize loop may run there.
    fn finalized_between(scenario: &str, pause: impl Fn(&Value) -> bool) -> Run {
        let dir = tempfile::tempdir().unwrap();
        let (home, user) = (dir.path().join("hh"), dir.path().join("user"));
        // Where the client wrote its record: <home>/.gemini/tmp/<project>/chats/
        // (two files of one session where a resume began in a later minute).
        let chats = user.join(".gemini/tmp/proj/chats");
        std::fs::create_dir_all(&chats).unwrap();
        let mut record = Vec::new();
        let mut files: Vec<PathBuf> = std::fs::read_dir(fixture(scenario))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| {
                p.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with("session-")
            })
            .collect();
        files.sort();
        assert!(!files.is_empty(), "the scenario has its record");
        for file in &files {
            std::fs::copy(file, chats.join(file.file_name().unwrap())).unwrap();
            record.extend(json_lines(file));
        }
        let hooks = json_lines(&fixture(scenario).join("hooks.jsonl"));
        // A subagent's record: chats/<session id>/<subagent id>.jsonl.
        let subagents = fixture(scenario).join("subagent");
        if subagents.is_dir() {
            let payload: Value = serde_json::from_str(hooks[0]["stdin"].as_str().unwrap()).unwrap();
            let dir = chats.join(payload["session_id"].as_str().unwrap());
            std::fs::create_dir_all(&dir).unwrap();
            for file in std::fs::read_dir(&subagents).unwrap() {
                let file = file.unwrap().path();
                std::fs::copy(&file, dir.join(file.file_name().unwrap())).unwrap();
                record.extend(json_lines(&file));
            }
        }
        let mut fed = Vec::new();
        for line in hooks {
            let event = line["event"].as_str().unwrap().to_string();
            if !INSTALLED.contains(&event.as_str()) {
                continue;
            }
            let mut payload: Value = serde_json::from_str(line["stdin"].as_str().unwrap()).unwrap();
            let named = payload["transcript_path"].as_str().unwrap().to_string();
            let placed = chats.join(Path::new(&named).file_name().unwrap());
            payload["transcript_path"] = Value::String(placed.display().to_string());
            hook(&home, &event, &payload);
            if pause(&payload) {
                // The record as it stood then: its lines up to the first
                // one written later than this payload.
                let then = payload["timestamp"].as_str().unwrap();
                for file in &files {
                    let text = std::fs::read_to_string(file).unwrap();
                    let before: String = text
                        .lines()
                        .take_while(|l| {
                            let v: Value = serde_json::from_str(l).unwrap();
                            v["timestamp"].as_str().is_none_or(|t| t <= then)
                        })
                        .map(|l| format!("{l}\n"))
                        .collect();
                    std::fs::write(chats.join(file.file_name().unwrap()), before).unwrap();
                }
                let out = common::harnery(&home)
                    .env("HARNERY_RECORDS", "on")
                    .env("HOME", &user)
                    .args(["finalize"])
                    .output()
                    .unwrap();
                assert!(out.status.success(), "{}", stderr(&out));
                // The client writes on.
                for file in &files {
                    std::fs::copy(file, chats.join(file.file_name().unwrap())).unwrap();
                }
            }
            fed.push((event, payload));
        }
        let mut run = Run {
            _dir: dir,
            home,
            user,
            record,
            fed,
            events: Vec::new(),
        };
        run.finalize(scenario);
        run
    }

    fn harnery(&self, args: &[&str]) -> std::process::Output {
        common::harnery(&self.home)
            .env("HARNERY_RECORDS", "on")
            .env("HOME", &self.user)
            .env_remove("GEMINI_CLI_HOME")
            .args(args)
            .output()
            .unwrap()
    }

    fn finalize(&mut self, what: &str) {
        let out = self.harnery(&["finalize", "--json"]);
        assert!(out.status.success(), "{what}: {}", stderr(&out));
        for cmd in ["validate", "verify"] {
            let out = self.harnery(&[cmd]);
            assert!(out.status.success(), "{what} {cmd}: {}", stdout(&out));
        }
        let out = self.harnery(&["export", "--format", "jsonl"]);
        self.events = stdout(&out)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
    }

    fn of_type(&self, ty: &str) -> Vec<&Value> {
        self.events.iter().filter(|e| e["type"] == ty).collect()
    }

    fn fed_count(&self, event: &str) -> usize {
        self.fed.iter().filter(|(e, _)| e == event).count()
    }

    /// The record's model messages, each id once, at its last line (the
    /// client's own reading of a repeated id).
    fn model_messages(&self) -> BTreeMap<String, &Value> {
        let mut out = BTreeMap::new();
        for line in &self.record {
            if line["type"] == "gemini" {
                out.insert(line["id"].as_str().unwrap().to_string(), line);
            }
        }
        out
    }

    fn session_row(&self) -> Value {
        let out = self.harnery(&["sessions", "--json"]);
        let rows: Vec<Value> = stdout(&out)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(rows.len(), 1, "one session: {rows:?}");
        rows[0].clone()
    }
}

fn hook(home: &Path, event: &str, payload: &Value) {
    Command::cargo_bin("harnery-hook")
        .unwrap()
        .env("HARNERY_HOME", home)
        .args(["gemini-cli", event])
        .write_stdin(serde_json::to_vec(payload).unwrap())
        .assert()
        .success();
}

/// Every hook signal fed is in the ledger once: the distinct raw records
/// the events name, by event name, are the ones fed.
fn every_signal_once(run: &Run, scenario: &str) {
    let mut digests: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for e in &run.events {
        for raw in e["raw"].as_array().into_iter().flatten() {
            // The agent's hooks (harnery's own `harnery.record` signals
            // carry the record's lines).
            if let Some(name) = raw["event_name"].as_str().filter(|n| INSTALLED.contains(n)) {
                digests
                    .entry(name.to_string())
                    .or_default()
                    .insert(raw["record_digest"].as_str().unwrap().to_string());
            }
        }
    }
    let got: BTreeMap<&str, usize> = digests.iter().map(|(k, v)| (k.as_str(), v.len())).collect();
    let mut want: BTreeMap<&str, usize> = BTreeMap::new();
    for (event, _) in &run.fed {
        *want.entry(event.as_str()).or_default() += 1;
    }
    assert_eq!(got, want, "{scenario}: the signals in the ledger");
    assert!(run.of_type("signal.unrecognized").is_empty(), "{scenario}");
    let observed = run
        .fed
        .iter()
        .filter(|(e, _)| OBSERVED.contains(&e.as_str()));
    assert_eq!(
        run.of_type("hook.observed").len(),
        observed.count(),
        "{scenario}: each model step and compression check observed"
    );
    assert!(
        run.of_type("record.problem").is_empty(),
        "{scenario}: {:?}",
        run.of_type("record.problem")
    );
}

/// The usage in the ledger is the record's, message by message, and the
/// record's is the model server's.
fn tokens_are_the_records(run: &Run, scenario: &str) {
    let mut want = BTreeMap::new();
    for (id, m) in run.model_messages() {
        let t = &m["tokens"];
        if t.is_null() {
            continue;
        }
        let n = |k: &str| t[k].as_u64().unwrap();
        let kinds = (
            n("input") - n("cached") + n("tool"),
            n("cached"),
            n("output") + n("thoughts"),
            n("thoughts"),
        );
        want.insert(id, kinds);
    }
    let got: BTreeMap<String, (u64, u64, u64, u64)> = run
        .of_type("usage.reported")
        .iter()
        .map(|e| {
            let p = &e["payload"];
            let n = |k: &str| p[k].as_u64().unwrap();
            (
                p["message_id"].as_str().unwrap().to_string(),
                (
                    n("input_tokens"),
                    n("cache_read_tokens"),
                    n("output_tokens"),
                    n("reasoning_tokens"),
                ),
            )
        })
        .collect();
    assert_eq!(got, want, "{scenario}: usage per model call");
    assert_eq!(
        run.of_type("usage.reported").len(),
        want.len(),
        "{scenario}: one usage per model call"
    );
    // Each main-model call the server answered is one message's tokens.
    let served: BTreeSet<(u64, u64, u64, u64)> =
        json_lines(&fixture(scenario).join("model-requests.jsonl"))
            .iter()
            .filter(|r| r["tools"] == true)
            .map(|r| {
                let u = &r["usage"];
                let n = |k: &str| u[k].as_u64().unwrap();
                (
                    n("promptTokenCount"),
                    n("cachedContentTokenCount"),
                    n("candidatesTokenCount"),
                    n("thoughtsTokenCount"),
                )
            })
            .collect();
    let recorded: BTreeSet<(u64, u64, u64, u64)> = run
        .model_messages()
        .values()
        .filter(|m| !m["tokens"].is_null())
        .map(|m| {
            let n = |k: &str| m["tokens"][k].as_u64().unwrap();
            (n("input"), n("cached"), n("output"), n("thoughts"))
        })
        .collect();
    assert_eq!(
        recorded, served,
        "{scenario}: the record has every model call"
    );
}

/// Every tool call of the record is joined to a hook span, and the
/// model's text is the record's.
fn calls_and_texts_are_the_records(run: &Run, scenario: &str) {
    let calls: BTreeSet<String> = run
        .model_messages()
        .values()
        .flat_map(|m| m["toolCalls"].as_array().cloned().unwrap_or_default())
        .map(|c| c["id"].as_str().unwrap().to_string())
        .collect();
    let joined: BTreeSet<String> = run
        .of_type("tool.recorded")
        .iter()
        .filter(|e| e["payload"]["span_request_event_id"].is_string())
        .map(|e| e["payload"]["tool_call_id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(joined, calls, "{scenario}: record calls joined to spans");
    let texts: Vec<String> = run
        .model_messages()
        .values()
        .filter_map(|m| m["content"].as_str().filter(|t| !t.is_empty()))
        .map(str::to_string)
        .collect();
    let got: Vec<String> = run
        .of_type("message.assistant")
        .iter()
        .filter_map(|e| e["payload"]["text"].as_str().map(str::to_string))
        .collect();
    assert_eq!(
        got.iter().collect::<BTreeSet<_>>(),
        texts.iter().collect::<BTreeSet<_>>(),
        "{scenario}: assistant texts"
    );
    assert_eq!(got.len(), texts.len(), "{scenario}: each text once");
}

fn spans(run: &Run) -> (u64, u64, u64) {
    let row = run.session_row();
    let n = |k: &str| row["spans"][k].as_u64().unwrap();
    (n("open"), n("closed_native"), n("recovered"))
}

#[test]
fn a_shell_call_is_one_closed_span_joined_to_the_record_and_found_by_search() {
    let run = Run::of("basic");
    every_signal_once(&run, "basic");
    tokens_are_the_records(&run, "basic");
    calls_and_texts_are_the_records(&run, "basic");
    let after_tool = run.fed_count("AfterTool") as u64;
    assert_eq!(spans(&run), (0, after_tool, 0));
    let completed = run.of_type("tool.completed");
    assert_eq!(completed[0]["payload"]["paired_by"], "order");
    assert_eq!(run.session_row()["turns"], 1);
    // The marker the command printed is found as the tool's output.
    let out = run.harnery(&[
        "search",
        "--json",
        "--kind",
        "tool-output",
        "hello-from-harnery-e2e",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let hits: Vec<Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(hits.len(), 1, "{hits:?}");
    assert_eq!(hits[0]["session"]["adapter"], "gemini-cli");
}

/// The model's thoughts (a `thought` part the client splits into a
/// subject and a description) are its reasoning, once, with its message.
#[test]
fn thoughts_are_recorded_as_reasoning() {
    let run = Run::of("think");
    every_signal_once(&run, "think");
    tokens_are_the_records(&run, "think");
    calls_and_texts_are_the_records(&run, "think");
    let want: Vec<(String, String)> = run
        .model_messages()
        .iter()
        .flat_map(|(id, m)| {
            m["thoughts"].as_array().unwrap().iter().map(move |t| {
                let text = format!(
                    "{}\n{}",
                    t["subject"].as_str().unwrap(),
                    t["description"].as_str().unwrap()
                );
                (id.clone(), text)
            })
        })
        .collect();
    assert_eq!(want.len(), 1, "the capture has one thought");
    let got: Vec<(String, String)> = run
        .of_type("reasoning.recorded")
        .iter()
        .map(|e| {
            let p = &e["payload"];
            (
                p["message_id"].as_str().unwrap().to_string(),
                p["text"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(got, want);
}

#[test]
fn a_command_that_exited_non_zero_is_a_failure_with_its_exit_code() {
    let run = Run::of("fail");
    every_signal_once(&run, "fail");
    tokens_are_the_records(&run, "fail");
    calls_and_texts_are_the_records(&run, "fail");
    // The code is in the text the tool gave the model, in the hook and
    // the record alike.
    let text =
        run.fed.iter().find(|(e, _)| e == "AfterTool").unwrap().1["tool_response"]["llmContent"]
            .as_str()
            .unwrap()
            .to_string();
    let code: i64 = text
        .lines()
        .find_map(|l| l.strip_prefix("Exit Code: "))
        .unwrap()
        .parse()
        .unwrap();
    let completed = run.of_type("tool.completed");
    assert_eq!(completed[0]["payload"]["exit_code"], code);
    let finished: Vec<&Value> = run
        .of_type("tool.recorded")
        .into_iter()
        .filter(|e| e["payload"]["success"].is_boolean())
        .collect();
    assert_eq!(finished[0]["payload"]["exit_code"], code);
    let out = run.harnery(&["search", "--json", "--failed", "nonexistent-harnery"]);
    assert!(
        stdout(&out).lines().count() > 0,
        "the failed call is found as one: {}",
        stderr(&out)
    );
}

#[test]
fn a_resumed_session_is_one_session_of_two_turns() {
    let run = Run::of("two-turns");
    every_signal_once(&run, "two-turns");
    tokens_are_the_records(&run, "two-turns");
    calls_and_texts_are_the_records(&run, "two-turns");
    let starts: Vec<&str> = run
        .fed
        .iter()
        .filter(|(e, _)| e == "SessionStart")
        .map(|(_, p)| p["source"].as_str().unwrap())
        .collect();
    assert_eq!(starts, ["startup", "resume"]);
    assert_eq!(run.of_type("session.resumed").len(), 1);
    assert_eq!(run.session_row()["turns"], 2);
    assert_eq!(spans(&run), (0, 2, 0));
}

/// A resume that begins in a later minute than the session did: the
/// client first writes a new file of the same session (its header and
/// context alone, named by the resumed leg's `SessionStart`), then goes on
/// in the original, which the leg's other hooks name. The original is the
/// one followed, both legs' calls and tokens from it.
#[test]
fn a_resume_in_a_later_minute_is_followed_in_the_file_the_client_writes() {
    let run = Run::of("resume-later");
    let named: BTreeSet<&str> = run
        .fed
        .iter()
        .map(|(_, p)| p["transcript_path"].as_str().unwrap())
        .collect();
    assert_eq!(named.len(), 2, "the capture names both files: {named:?}");
    every_signal_once(&run, "resume-later");
    tokens_are_the_records(&run, "resume-later");
    calls_and_texts_are_the_records(&run, "resume-later");
    assert_eq!(run.of_type("session.resumed").len(), 1);
    assert_eq!(run.session_row()["turns"], 2);
    assert_eq!(spans(&run), (0, 2, 0));
}

/// The same, with a finalize right after the resumed leg's `SessionStart`
/// and nothing of the session read before it: the file that start names
/// (the new one, a header and the context alone) is not the one taken up.
#[test]
fn a_finalize_after_the_resumed_start_still_follows_the_written_file() {
    let run = Run::finalized_between("resume-later", |p| {
        p["hook_event_name"] == "SessionStart" && p["source"] == "resume"
    });
    every_signal_once(&run, "resume-later");
    tokens_are_the_records(&run, "resume-later");
    calls_and_texts_are_the_records(&run, "resume-later");
}

#[test]
fn a_killed_client_leaves_its_span_open_until_the_session_is_ended() {
    let mut run = Run::of("kill");
    every_signal_once(&run, "kill");
    tokens_are_the_records(&run, "kill");
    // The client wrote the call that was running nowhere: no id to join.
    assert!(run.of_type("tool.recorded").is_empty());
    assert_eq!(
        (run.fed_count("BeforeTool"), run.fed_count("AfterTool")),
        (1, 0)
    );
    assert_eq!(spans(&run), (1, 0, 0));
    let session = run.session_row()["session"]["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    let end = run.harnery(&[
        "end",
        &format!("gemini-cli/{session}"),
        "--reason",
        "killed",
    ]);
    assert!(end.status.success(), "{}", stderr(&end));
    run.finalize("kill, ended");
    assert_eq!(spans(&run), (0, 0, 1));
}

#[test]
fn the_interactive_uis_repeated_session_ends_are_each_kept() {
    let run = Run::of("interactive");
    every_signal_once(&run, "interactive");
    tokens_are_the_records(&run, "interactive");
    calls_and_texts_are_the_records(&run, "interactive");
    let ends = run.fed_count("SessionEnd");
    assert_eq!(ends, 3, "the capture has the repeats");
    assert_eq!(run.of_type("session.ended").len(), ends);
    assert_eq!(spans(&run), (0, 1, 0));
}

/// The same with a finalize between the first `SessionEnd` and its
/// repeats, as a finalize loop may run: the repeats are kept as well.
#[test]
fn repeated_session_ends_across_finalizes_are_each_kept() {
    let ends = std::cell::Cell::new(0);
    let run = Run::finalized_between("interactive", |p| {
        ends.set(ends.get() + usize::from(p["hook_event_name"] == "SessionEnd"));
        ends.get() == 1 && p["hook_event_name"] == "SessionEnd"
    });
    every_signal_once(&run, "interactive, finalized between");
    tokens_are_the_records(&run, "interactive");
    assert_eq!(spans(&run), (0, 1, 0));
}

/// A subagent (`invoke_agent`, the client's generalist) runs its tools
/// under the parent's session id: its hooks are spans of the parent's
/// session, closed natively. Its own record
/// (`chats/<session>/<subagent>.jsonl`, whose header names the subagent)
/// is named only by the `AfterTool` of the call that ran it, in the ids of
/// its calls; followed from there, its calls join the spans and its model
/// calls' usage is the session's, with the parent's.
#[test]
fn a_subagents_record_is_followed_from_the_call_that_ran_it() {
    let run = Run::of("subagent");
    let tools: Vec<&str> = run
        .fed
        .iter()
        .filter(|(e, _)| e == "BeforeTool")
        .map(|(_, p)| p["tool_name"].as_str().unwrap())
        .collect();
    assert_eq!(
        tools,
        ["invoke_agent", "run_shell_command", "complete_task"]
    );
    let sessions: BTreeSet<&str> = run
        .fed
        .iter()
        .map(|(_, p)| p["session_id"].as_str().unwrap())
        .collect();
    assert_eq!(sessions.len(), 1, "the subagent's hooks name the parent");
    every_signal_once(&run, "subagent");
    // Both files: every model call the server answered, each call joined.
    tokens_are_the_records(&run, "subagent");
    calls_and_texts_are_the_records(&run, "subagent");
    assert_eq!(spans(&run), (0, 3, 0));
}

#[test]
fn a_record_a_payload_names_elsewhere_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("hh");
    let elsewhere = dir.path().join("notes/secret.jsonl");
    std::fs::create_dir_all(elsewhere.parent().unwrap()).unwrap();
    std::fs::copy(
        fixture("basic").join("session-2026-12-06T10-08-735e7804.jsonl"),
        &elsewhere,
    )
    .unwrap();
    let first = &json_lines(&fixture("basic").join("hooks.jsonl"))[0];
    let mut payload: Value = serde_json::from_str(first["stdin"].as_str().unwrap()).unwrap();
    payload["transcript_path"] = Value::String(elsewhere.display().to_string());
    hook(&home, "SessionStart", &payload);
    let out = common::harnery(&home)
        .env("HARNERY_RECORDS", "on")
        .args(["finalize"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let out = common::run(&home, &["export", "--format", "jsonl"]);
    let problems: Vec<Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["type"] == "record.problem")
        .collect();
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert_eq!(problems[0]["payload"]["kind"], "refused");
    assert!(!stdout(&out).contains("message.user"));
}

/// `harnery <args>` with only `HOME` (and `vars`) set, as a user runs it.
fn install_cmd(home: &Path, args: &[&str], vars: &[(&str, &Path)]) -> std::process::Output {
    let hook = assert_cmd::cargo::cargo_bin("harnery-hook");
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_harnery"));
    cmd.args(args)
        .args(["--hook-bin", hook.to_str().unwrap()])
        .env_clear()
        .env("HOME", home)
        .env("PATH", "/usr/bin:/bin")
        .env("HARNERY_NPM_PREFIXES", "")
        .current_dir(home);
    for (name, value) in vars {
        cmd.env(name, value);
    }
    cmd.output().unwrap()
}

/// `GEMINI_CLI_HOME` moves the client's idea of the user's home, so its
/// settings are `$GEMINI_CLI_HOME/.gemini/settings.json` (probed with the
/// real client: `docs/agents/gemini-cli.md`). Install writes a command
/// line per event there, keeps what else the file holds, does nothing the
/// second time, and uninstall takes exactly its own entries away.
#[test]
fn install_writes_one_command_per_event_where_the_client_reads_it() {
    let t = tempfile::tempdir().unwrap();
    let (home, moved) = (t.path().join("home"), t.path().join("cli-home"));
    let settings = moved.join(".gemini/settings.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    let theirs = serde_json::json!({
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "hooks": {"BeforeTool": [{"matcher": "write_file", "hooks": [{"type": "command", "command": "lint"}]}]}
    });
    std::fs::write(&settings, serde_json::to_vec_pretty(&theirs).unwrap()).unwrap();
    let vars: &[(&str, &Path)] = &[("GEMINI_CLI_HOME", &moved)];

    let out = install_cmd(&home, &["install", "gemini-cli"], vars);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("$GEMINI_CLI_HOME is set"),
        "{}",
        stdout(&out)
    );
    assert!(
        !home.join(".gemini").exists(),
        "wrote where the client never reads"
    );
    let doc: Value = serde_json::from_slice(&std::fs::read(&settings).unwrap()).unwrap();
    assert_eq!(doc["security"], theirs["security"]);
    let hooks = doc["hooks"].as_object().unwrap();
    assert_eq!(
        hooks.keys().map(String::as_str).collect::<BTreeSet<_>>(),
        INSTALLED.into_iter().collect::<BTreeSet<_>>()
    );
    let hook = assert_cmd::cargo::cargo_bin("harnery-hook");
    for event in INSTALLED {
        let ours: Vec<&Value> = hooks[event]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|g| g["hooks"].as_array().unwrap())
            .filter(|h| h["command"].as_str().unwrap().contains("harnery-hook"))
            .collect();
        assert_eq!(ours.len(), 1, "{event}");
        assert_eq!(
            ours[0]["command"],
            format!("'{}' gemini-cli {event}", hook.display())
        );
        assert_eq!(ours[0]["timeout"], 10_000, "milliseconds");
    }
    assert_eq!(hooks["BeforeTool"][0], theirs["hooks"]["BeforeTool"][0]);

    let before = std::fs::read(&settings).unwrap();
    let again = install_cmd(&home, &["install", "gemini-cli"], vars);
    assert!(again.status.success(), "{}", stderr(&again));
    assert_eq!(
        std::fs::read(&settings).unwrap(),
        before,
        "a second install changes nothing"
    );

    let out = install_cmd(&home, &["uninstall", "gemini-cli"], vars);
    assert!(out.status.success(), "{}", stderr(&out));
    let doc: Value = serde_json::from_slice(&std::fs::read(&settings).unwrap()).unwrap();
    assert_eq!(doc, theirs, "only harnery's entries were taken away");
}
