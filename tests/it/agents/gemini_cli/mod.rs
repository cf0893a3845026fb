//! Gemini CLI, from captures of the real client (0.61.0, offline against a
//! scripted model: `tests/fixtures/gemini-cli/<scenario>/`, each with the
//! hook payloads the client gave every hook (`hooks.jsonl`), its own
//! record (`session-*.jsonl`) and the model server's log). The payloads of
//! the events `harnery install gemini-cli` installs go through the real
//! `harnery-hook`, the record lies where their `transcript_path` says, and
//! `harnery finalize` follows it. Every expectation is computed from the
//! fixture files with serde_json, never from harnery's output.
//!
//! Here: the fed and finalized scenario ([`Run`]) and the checks every
//! scenario makes; the scenarios are in `scenarios`, `install` in `install`.

mod install;
mod scenarios;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

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
    crate::common::hook(
        home,
        &["gemini-cli", event],
        serde_json::to_vec(payload).unwrap(),
    );
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
