//! Every corpus scenario that has the agent's own record, finalized with
//! it: the real hooks through the real hook binary, the record where the
//! hooks say it is. Expectations are computed from the record files here
//! with serde_json, never from harnery's output.

use crate::common::{self, hook};

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use common::{stderr, stdout};
use serde_json::Value;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn run(home: &Path, copilot_home: &Path, args: &[&str]) -> std::process::Output {
    common::harnery(home)
        .env("HARNERY_RECORDS", "on")
        .env("COPILOT_HOME", copilot_home)
        .args(args)
        .output()
        .unwrap()
}

fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Point every record path a hook payload names at `to(session)`, and a
/// subagent's (`agent_transcript_path`) at `to_agent(session, its file
/// name)`.
fn repoint_all(
    payload: &mut Value,
    to: &dyn Fn(&str) -> PathBuf,
    to_agent: &dyn Fn(&str, &str) -> PathBuf,
) {
    repoint(payload, to);
    if let Some(path) = payload["agent_transcript_path"].as_str() {
        let name = Path::new(path).file_name().unwrap().to_string_lossy();
        let session = payload["session_id"].as_str().unwrap_or("");
        let to = to_agent(session, &name);
        payload["agent_transcript_path"] = Value::String(to.display().to_string());
    }
}

/// Point every record path a hook payload names at `to(session)`.
fn repoint(payload: &mut Value, to: &dyn Fn(&str) -> PathBuf) {
    let session = payload["session_id"]
        .as_str()
        .or(payload["sessionId"].as_str())
        .unwrap_or("")
        .to_string();
    for key in ["transcript_path", "transcriptPath"] {
        if payload.get(key).is_some() {
            payload[key] = Value::String(to(&session).display().to_string());
        }
    }
}

struct Finalized {
    events: Vec<Value>,
}

impl Finalized {
    fn of(home: &Path, copilot_home: &Path, what: &str) -> Finalized {
        let out = run(home, copilot_home, &["finalize", "--json"]);
        assert!(out.status.success(), "{what}: {}", stderr(&out));
        for cmd in ["validate", "verify"] {
            let out = run(home, copilot_home, &[cmd]);
            assert!(out.status.success(), "{what} {cmd}: {}", stdout(&out));
        }
        let out = run(home, copilot_home, &["export", "--format", "jsonl"]);
        let events = stdout(&out)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        Finalized { events }
    }

    fn of_type(&self, ty: &str) -> Vec<&Value> {
        self.events.iter().filter(|e| e["type"] == ty).collect()
    }

    /// The hook span each record call joined: call id to request event id.
    fn span_of_calls(&self) -> BTreeMap<String, String> {
        self.of_type("tool.recorded")
            .iter()
            .filter_map(|e| {
                Some((
                    e["payload"]["tool_call_id"].as_str()?.to_string(),
                    e["payload"]["span_request_event_id"].as_str()?.to_string(),
                ))
            })
            .collect()
    }

    fn problems(&self) -> Vec<&Value> {
        self.of_type("record.problem")
    }
}

/// The subagent transcripts of a Claude Code scenario, by file name.
fn claude_subagent_transcripts(scenario: &str) -> BTreeMap<String, PathBuf> {
    let dir = fixtures().join("records/claude-code").join(scenario);
    let mut out = BTreeMap::new();
    if dir.is_dir() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            if name.starts_with("agent-") {
                out.insert(name, p);
            }
        }
    }
    out
}

/// The Claude Code transcripts of a scenario, by session id.
fn claude_transcripts(scenario: &str) -> BTreeMap<String, PathBuf> {
    let root = fixtures().join("records/claude-code");
    let dir = root.join(scenario);
    let mut out = BTreeMap::new();
    if dir.is_dir() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            let stem = p.file_stem().unwrap().to_string_lossy().into_owned();
            if !stem.starts_with("agent-") {
                out.insert(stem, p);
            }
        }
    } else {
        let p = root.join(format!("{scenario}.jsonl"));
        if !p.exists() {
            return out;
        }
        let session = lines(&p)
            .iter()
            .find_map(|l| l["sessionId"].as_str().map(str::to_string))
            .unwrap();
        out.insert(session, p);
    }
    out
}

/// Copy each file of `files` into `dir` under `name(key)`; the copies by key.
fn copy_into(
    dir: &Path,
    files: &BTreeMap<String, PathBuf>,
    name: impl Fn(&str) -> String,
) -> BTreeMap<String, PathBuf> {
    files
        .iter()
        .map(|(key, p)| {
            let to = dir.join(name(key));
            std::fs::copy(p, &to).unwrap();
            (key.clone(), to)
        })
        .collect()
}

/// Every Claude Code scenario whose hooks and transcript are both here.
fn claude_scenarios() -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(fixtures().join("claude-code"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|s| !claude_transcripts(s).is_empty())
        .collect();
    out.sort();
    out
}

#[test]
fn every_claude_code_transcript_joins_its_hooks() {
    let scenarios = claude_scenarios();
    assert_eq!(scenarios.len(), 19, "{scenarios:?}");
    for scenario in &scenarios {
        let home = tempfile::tempdir().unwrap();
        // Where Claude Code writes them (only that shape is followed).
        let records = home.path().join("claude/projects/-proj");
        std::fs::create_dir_all(&records).unwrap();
        let transcripts = claude_transcripts(scenario);
        let copies = copy_into(&records, &transcripts, |s| format!("{s}.jsonl"));
        let to = |s: &str| {
            copies
                .get(s)
                .cloned()
                .unwrap_or_else(|| records.join(format!("{s}.jsonl")))
        };
        // A subagent transcript the capture did not keep is named but
        // missing: loud, once each.
        let subagents = claude_subagent_transcripts(scenario);
        let to_agent =
            |session: &str, name: &str| records.join(session).join("subagents").join(name);
        let subagent_copies: BTreeMap<String, PathBuf> = subagents
            .iter()
            .map(|(name, p)| {
                let session = lines(p)[0]["sessionId"].as_str().unwrap().to_string();
                let to = to_agent(&session, name);
                std::fs::create_dir_all(to.parent().unwrap()).unwrap();
                std::fs::copy(p, &to).unwrap();
                (name.clone(), to)
            })
            .collect();
        let hooks = std::fs::read_to_string(
            fixtures()
                .join("claude-code")
                .join(scenario)
                .join("hooks.jsonl"),
        )
        .unwrap();
        for line in hooks.lines().filter(|l| !l.trim().is_empty()) {
            let mut payload: Value = serde_json::from_str(line).unwrap();
            repoint_all(&mut payload, &to, &to_agent);
            hook(
                home.path(),
                &["claude-code"],
                payload.to_string().into_bytes(),
            );
        }
        let got = Finalized::of(home.path(), home.path(), scenario);
        let named_in: BTreeMap<String, String> = hooks
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter_map(|v| {
                let p = v["agent_transcript_path"].as_str()?;
                let name = Path::new(p).file_name()?.to_string_lossy().into_owned();
                Some((name, v["session_id"].as_str()?.to_string()))
            })
            .collect();
        let named_agents: BTreeSet<String> = named_in.keys().cloned().collect();
        let missing: BTreeSet<String> = named_in
            .iter()
            .filter(|(name, _)| !subagents.contains_key(*name))
            .map(|(name, session)| to_agent(session, name).display().to_string())
            .collect();
        let problems: BTreeSet<String> = got
            .problems()
            .iter()
            .map(|p| {
                assert_eq!(p["payload"]["kind"], "missing", "{scenario}: {p}");
                p["payload"]["path"].as_str().unwrap().to_string()
            })
            .collect();
        assert_eq!(problems, missing, "{scenario}: missing subagent records");
        assert_eq!(got.problems().len(), missing.len(), "{scenario}: once each");

        let mut texts: Vec<String> = Vec::new();
        let mut usage_ids = BTreeSet::new();
        let mut tool_ids = BTreeSet::new();
        let followed: Vec<&PathBuf> = subagents
            .iter()
            .filter(|(name, _)| named_agents.contains(*name))
            .map(|(_, p)| p)
            .collect();
        for path in &followed {
            // The subagent's lines are its own: read from its file, under
            // its agent id.
            let name = path.file_name().unwrap().to_string_lossy();
            let copy = subagent_copies[name.as_ref()].display().to_string();
            let agent = lines(path)[0]["agentId"].as_str().unwrap().to_string();
            let from_it: Vec<&Value> = got
                .events
                .iter()
                .filter(|e| e["payload"]["record"]["path"] == copy.as_str())
                .collect();
            assert!(!from_it.is_empty(), "{scenario}: {name} followed");
            assert!(
                from_it.iter().all(|e| e["agent_id"] == agent.as_str()),
                "{scenario}: {name} under {agent}"
            );
        }
        for path in transcripts.values().chain(followed) {
            for v in lines(path).iter().filter(|v| v["type"] == "assistant") {
                let message = &v["message"];
                if message.get("usage").is_some() {
                    usage_ids.insert(message["id"].as_str().unwrap().to_string());
                }
                let blocks = message["content"].as_array().cloned().unwrap_or_default();
                let text: Vec<&str> = blocks
                    .iter()
                    .filter(|b| b["type"] == "text")
                    .filter_map(|b| b["text"].as_str())
                    .collect();
                if !text.is_empty() {
                    texts.push(text.join("\n"));
                }
                for b in blocks.iter().filter(|b| b["type"] == "tool_use") {
                    tool_ids.insert(b["id"].as_str().unwrap().to_string());
                }
            }
        }
        let mut recorded: Vec<String> = got
            .of_type("message.assistant")
            .iter()
            .filter_map(|e| e["payload"]["text"].as_str().map(str::to_string))
            .collect();
        texts.sort();
        recorded.sort();
        assert_eq!(recorded, texts, "{scenario}: every assistant text once");
        // Model calls; the cost reports of Claude Code's running total
        // carry no message id.
        let usage: Vec<String> = got
            .of_type("usage.reported")
            .iter()
            .filter_map(|e| e["payload"]["message_id"].as_str().map(str::to_string))
            .collect();
        assert_eq!(
            usage.len(),
            usage_ids.len(),
            "{scenario}: usage once per message"
        );
        assert_eq!(usage.into_iter().collect::<BTreeSet<_>>(), usage_ids);

        let requests: BTreeMap<String, String> = got
            .of_type("tool.requested")
            .iter()
            .filter(|e| e["provenance"]["attestation"] == "native")
            .filter_map(|e| {
                Some((
                    e["payload"]["tool_call_id"].as_str()?.to_string(),
                    e["id"].as_str()?.to_string(),
                ))
            })
            .collect();
        for id in &tool_ids {
            let joined: Vec<_> = got
                .of_type("tool.recorded")
                .into_iter()
                .filter(|e| e["payload"]["tool_call_id"] == id.as_str())
                .collect();
            assert!(!joined.is_empty(), "{scenario}: call {id} recorded");
            for e in joined {
                assert_eq!(
                    e["payload"]["span_request_event_id"].as_str(),
                    requests.get(id).map(String::as_str),
                    "{scenario}: {e}"
                );
            }
        }
    }
}

/// The Copilot scenarios with a record, and the session id it is for.
fn copilot_records() -> Vec<(String, PathBuf, String)> {
    let dir = fixtures().join("records/copilot");
    let mut out = Vec::new();
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        let Some(scenario) = name.strip_suffix(".events.jsonl") else {
            continue;
        };
        if !fixtures()
            .join("copilot")
            .join(scenario)
            .join("hook-capture.jsonl")
            .exists()
        {
            continue;
        }
        let session = lines(&p)
            .iter()
            .find(|l| l["type"] == "session.start" || l["type"] == "session.resume")
            .and_then(|l| l["data"]["sessionId"].as_str().map(str::to_string))
            .unwrap();
        out.push((scenario.to_string(), p, session));
    }
    out.sort();
    out
}

/// A Copilot scenario's hooks through the real hook binary and its record
/// where Copilot keeps it, finalized.
fn copilot_finalized(scenario: &str, record: &Path, session: &str) -> Finalized {
    let home = tempfile::tempdir().unwrap();
    let copilot_home = home.path().join("copilot");
    let state = copilot_home.join("session-state").join(session);
    std::fs::create_dir_all(&state).unwrap();
    let events_file = state.join("events.jsonl");
    std::fs::copy(record, &events_file).unwrap();
    let to = |_: &str| events_file.clone();
    let capture = fixtures()
        .join("copilot")
        .join(scenario)
        .join("hook-capture.jsonl");
    for v in lines(&capture) {
        let event = v["event"].as_str().unwrap().to_string();
        let raw = v["stdin_raw"].as_str().unwrap_or("");
        let stdin = match serde_json::from_str::<Value>(raw) {
            Ok(mut payload) => {
                repoint(&mut payload, &to);
                payload.to_string().into_bytes()
            }
            Err(_) => raw.as_bytes().to_vec(),
        };
        hook(home.path(), &["copilot", &event], stdin);
    }
    Finalized::of(home.path(), &copilot_home, scenario)
}

/// The calls of a Copilot record that an agent started in a turn the
/// record then ended without finishing them, by call id.
fn calls_open_at_their_turn_end(frames: &[Value]) -> BTreeSet<String> {
    let mut open: BTreeMap<String, (Value, Value)> = BTreeMap::new();
    let mut swept = BTreeSet::new();
    for f in frames {
        let data = &f["data"];
        match f["type"].as_str().unwrap_or("") {
            "tool.execution_start" => {
                let call = data["toolCallId"].as_str().unwrap().to_string();
                open.insert(call, (f["agentId"].clone(), data["turnId"].clone()));
            }
            "tool.execution_complete" => {
                open.remove(data["toolCallId"].as_str().unwrap());
            }
            "assistant.turn_end" => {
                let ended = (f["agentId"].clone(), data["turnId"].clone());
                open.retain(|call, at| {
                    if *at == ended {
                        swept.insert(call.clone());
                    }
                    *at != ended
                });
            }
            _ => {}
        }
    }
    swept
}

/// Copilot's hooks give no turn boundary a sweep may trust, but its record
/// does: a call the record started and its turn then ended without (an
/// interrupt) gets the turn-end terminal on its hook span, outcome unknown.
/// Where the record shows no turn end (SIGKILL), the span stays as the
/// hooks left it.
#[test]
fn a_copilot_turn_end_in_the_record_recovers_the_calls_it_cut_off() {
    let records = copilot_records();
    let mut swept_somewhere = 0;
    for scenario in [
        "interrupted-sigint",
        "interrupted-sigterm",
        "interrupted-sigkill-1-killed",
        "subagent-task",
        "basic-shell-openai",
    ] {
        let (_, record, session) = records.iter().find(|(s, ..)| s == scenario).unwrap();
        let got = copilot_finalized(scenario, record, session);
        let cut_off = calls_open_at_their_turn_end(&lines(record));
        let span_of = got.span_of_calls();
        let turn_end_terminals: BTreeSet<String> = got
            .of_type("tool.completed")
            .iter()
            .filter(|e| {
                e["payload"]["recovery"]["reason"] == "completion_not_observed_before_turn_end"
            })
            .map(|e| {
                assert_eq!(e["payload"]["outcome"], "unknown", "{scenario}: {e}");
                assert_eq!(e["provenance"]["attestation"], "derived", "{scenario}: {e}");
                e["payload"]["requested_event_id"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect();
        let expected: BTreeSet<String> = cut_off
            .iter()
            .map(|call| span_of.get(call).expect("the cut-off call joined").clone())
            .collect();
        assert_eq!(turn_end_terminals, expected, "{scenario}");
        swept_somewhere += expected.len();
    }
    assert_eq!(
        swept_somewhere, 2,
        "sigint and sigterm each cut one call off"
    );
}

/// Each line of a record file with the byte offset it starts at.
fn frames_at(path: &Path) -> Vec<(u64, Value)> {
    let bytes = std::fs::read(path).unwrap();
    let mut out = Vec::new();
    let mut at = 0u64;
    for line in bytes.split_inclusive(|b| *b == b'\n') {
        if let Ok(v) = serde_json::from_slice::<Value>(line) {
            out.push((at, v));
        }
        at += line.len() as u64;
    }
    out
}

/// Copilot's record and hooks meet at the prompt: the record's messages
/// and usage of an interaction land in the stamped turn of the hook prompt
/// its user message repeats, in order; an interaction whose prompt the
/// hooks did not deliver stays unattributed.
#[test]
fn copilot_record_lines_land_in_the_turn_of_the_prompt_they_follow() {
    let mut attributed = 0;
    for (scenario, record, session) in copilot_records() {
        let got = copilot_finalized(&scenario, &record, &session);
        let mut prompts: Vec<(String, Value)> = got
            .of_type("prompt.submitted")
            .iter()
            .map(|e| {
                let text = e["payload"]["prompt"].as_str().unwrap_or("").to_string();
                (text, e["turn"]["turn_id"].clone())
            })
            .collect();
        let mut current: BTreeMap<String, Value> = BTreeMap::new();
        let mut expected: BTreeMap<u64, Value> = BTreeMap::new();
        for (offset, frame) in frames_at(&record) {
            let agent = frame["agentId"].as_str().unwrap_or("").to_string();
            match frame["type"].as_str().unwrap_or("") {
                "user.message" => {
                    let text = frame["data"]["content"].as_str().unwrap_or("");
                    let turn = prompts
                        .iter()
                        .position(|(t, _)| t == text)
                        .map(|i| prompts.remove(i).1)
                        .unwrap_or(Value::Null);
                    current.insert(agent, turn);
                }
                "assistant.message" | "session.usage_record" => {
                    let turn = current.get(&agent).cloned().unwrap_or(Value::Null);
                    expected.insert(offset, turn);
                }
                _ => {}
            }
        }
        for ty in ["message.assistant", "usage.reported"] {
            for e in got.of_type(ty) {
                let offset = e["payload"]["record"]["offset"].as_u64().unwrap();
                let want = &expected[&offset];
                assert_eq!(&e["turn"]["turn_id"], want, "{scenario}: {ty} at {offset}");
                if !want.is_null() {
                    assert_eq!(e["turn"]["source"], "stamped", "{scenario}: {e}");
                    attributed += 1;
                }
            }
        }
    }
    assert!(attributed > 40, "{attributed} record events attributed");
}

#[test]
fn every_copilot_event_log_joins_its_hooks_with_call_ids_and_exit_codes() {
    let records = copilot_records();
    assert!(records.len() >= 20, "{} scenarios", records.len());
    for (scenario, record, session) in records {
        let got = copilot_finalized(&scenario, &record, &session);
        assert!(
            got.problems().is_empty(),
            "{scenario}: {:?}",
            got.problems()
        );
        let frames = lines(&record);
        let count = |ty: &str| frames.iter().filter(|f| f["type"] == ty).count();
        assert_eq!(
            got.of_type("message.assistant").len(),
            count("assistant.message"),
            "{scenario}: every assistant message once"
        );
        assert_eq!(
            got.of_type("usage.reported").len(),
            count("session.usage_record"),
            "{scenario}: every usage record once"
        );
        let recorded = got.of_type("tool.recorded");
        let span_of = got.span_of_calls();
        // Every hook span the record also has carries the record's call id,
        // and a shell's exit code.
        let record_names: BTreeSet<&str> = frames
            .iter()
            .filter(|f| f["type"] == "tool.execution_start")
            .filter_map(|f| f["data"]["toolName"].as_str())
            .collect();
        let joined: BTreeSet<&String> = span_of.values().collect();
        for request in got.of_type("tool.requested") {
            let name = request["payload"]["tool_name"].as_str().unwrap();
            if request["provenance"]["attestation"] != "native" || !record_names.contains(name) {
                continue;
            }
            let id = request["id"].as_str().unwrap().to_string();
            assert!(
                joined.contains(&id),
                "{scenario}: hook span {id} ({name}) joined"
            );
        }
        for f in frames
            .iter()
            .filter(|f| f["type"] == "tool.execution_complete")
        {
            let call = f["data"]["toolCallId"].as_str().unwrap();
            let Some(span) = span_of.get(call) else {
                continue;
            };
            let finished: Vec<_> = recorded
                .iter()
                .filter(|e| {
                    e["payload"]["tool_call_id"] == call && !e["payload"]["success"].is_null()
                })
                .collect();
            assert_eq!(finished.len(), 1, "{scenario}: {call} finished once");
            assert_eq!(
                finished[0]["payload"]["span_request_event_id"],
                span.as_str()
            );
            assert_eq!(
                finished[0]["payload"]["exit_code"], f["data"]["shellExecution"]["exitCode"],
                "{scenario}: {call} exit code"
            );
        }
    }
}
