//! Codex CLI 0.169.0's captures (`tests/fixtures/codex/`) through the real
//! `harnery-hook` and `harnery finalize`: every hook Codex ran is in the
//! ledger exactly once, the spans close (the killed call's by recovery
//! once the session is resumed), the rollout joins with no
//! `record.problem`, the tokens are the rollout's, and `search` finds the
//! tool's output. Expectations come from the captures, never from
//! harnery's output.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{self, stderr, stdout};

mod install;

fn fixture(scenario: &str, file: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/codex")
        .join(scenario)
        .join(file);
    std::fs::read_to_string(path).expect("fixture exists")
}

/// A scratch user whose Codex home holds `scenario`'s rollout where Codex
/// writes it.
struct Run {
    _dir: tempfile::TempDir,
    home: PathBuf,
    codex_home: PathBuf,
    rollout: PathBuf,
}

impl Run {
    fn new(rollout_of: &str) -> Run {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("hh");
        let codex_home = dir.path().join("user/.codex");
        let day = codex_home.join("sessions/2026/12/06");
        std::fs::create_dir_all(&day).unwrap();
        let rollout = day.join(fixture(rollout_of, "rollout-name").trim());
        std::fs::write(&rollout, fixture(rollout_of, "rollout.jsonl")).unwrap();
        Run {
            _dir: dir,
            home,
            codex_home,
            rollout,
        }
    }

    /// Deliver `scenario`'s hooks through the real `harnery-hook`, each
    /// rollout they name (`transcript_path`, a subagent's
    /// `agent_transcript_path`) pointing at this run's copy; how many.
    fn hooks(&self, scenario: &str) -> BTreeMap<String, usize> {
        let mut sent = BTreeMap::new();
        let day = self.rollout.parent().unwrap();
        for line in fixture(scenario, "hook-capture.jsonl").lines() {
            let capture: Value = serde_json::from_str(line).unwrap();
            let event = capture["event"].as_str().unwrap();
            let mut payload: Value =
                serde_json::from_str(capture["stdin_raw"].as_str().unwrap()).unwrap();
            for key in ["transcript_path", "agent_transcript_path"] {
                if let Some(named) = payload[key].as_str() {
                    let name = Path::new(named).file_name().unwrap();
                    payload[key] = day.join(name).display().to_string().into();
                }
            }
            crate::common::hook(&self.home, &["codex", event], payload.to_string());
            *sent.entry(event.to_string()).or_default() += 1;
        }
        sent
    }

    fn harnery(&self, args: &[&str]) -> String {
        let out = common::harnery(&self.home)
            .env("HARNERY_RECORDS", "on")
            .env("HOME", self.codex_home.parent().unwrap())
            .env("CODEX_HOME", &self.codex_home)
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        stdout(&out)
    }

    fn events(&self) -> Vec<Value> {
        self.harnery(&["export", "--format", "jsonl"])
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}

/// The raw hook records the ledger's events cite, counted per event name
/// (harnery's own signals, such as the record's chunks, left out).
fn cited_hooks(events: &[Value]) -> BTreeMap<String, usize> {
    let mut seen: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for e in events {
        for raw in e["raw"].as_array().into_iter().flatten() {
            if let Some(name) = raw["event_name"]
                .as_str()
                .filter(|n| !n.starts_with("harnery."))
            {
                let digest = raw["record_digest"].as_str().unwrap().to_string();
                seen.entry(name.to_string()).or_default().insert(digest);
            }
        }
    }
    seen.into_iter().map(|(k, v)| (k, v.len())).collect()
}

fn of_type<'a>(events: &'a [Value], ty: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == ty).collect()
}

/// The rollout's token kinds, summed (input without its cached part).
fn rollout_tokens(scenario: &str) -> BTreeMap<&'static str, u64> {
    let mut t = BTreeMap::new();
    for line in fixture(scenario, "rollout.jsonl").lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        if v["type"] != "token_usage_record" {
            continue;
        }
        let u = &v["payload"]["usage"];
        let n = |k: &str| u[k].as_u64().unwrap();
        *t.entry("input").or_default() += n("input_tokens") - n("cached_input_tokens");
        *t.entry("cache_read").or_default() += n("cached_input_tokens");
        *t.entry("output").or_default() += n("output_tokens");
        *t.entry("reasoning").or_default() += n("reasoning_output_tokens");
    }
    t
}

/// The ledger's token totals, in the rollout's kinds.
fn ledger_tokens(run: &Run) -> BTreeMap<&'static str, u64> {
    let usage: Value = serde_json::from_str(&run.harnery(&["usage", "--json"])).unwrap();
    let t = &usage["total"]["tokens"];
    ["input", "cache_read", "output", "reasoning"]
        .into_iter()
        .map(|k| (k, t[k].as_u64().unwrap_or(0)))
        .collect()
}

/// The ids of the hook spans, and the closers of each.
fn spans(events: &[Value]) -> BTreeMap<String, Vec<&Value>> {
    let mut spans: BTreeMap<String, Vec<&Value>> = BTreeMap::new();
    for e in of_type(events, "tool.requested") {
        assert_eq!(e["provenance"]["attestation"], "native", "{e}");
        spans.insert(e["id"].as_str().unwrap().to_string(), Vec::new());
    }
    for e in of_type(events, "tool.completed") {
        let request = e["payload"]["requested_event_id"].as_str().unwrap();
        spans
            .get_mut(request)
            .expect("a closer of a hook span")
            .push(e);
    }
    spans
}

/// Every hook span joined by the rollout's call, and no recorded call
/// without its span.
fn assert_joined(events: &[Value]) {
    assert!(of_type(events, "record.problem").is_empty(), "{events:#?}");
    let recorded = of_type(events, "tool.recorded");
    let joined: BTreeSet<&str> = recorded
        .iter()
        .map(|e| {
            e["payload"]["span_request_event_id"]
                .as_str()
                .expect("joined")
        })
        .collect();
    let hook_spans: BTreeSet<&str> = of_type(events, "tool.requested")
        .iter()
        .map(|e| e["id"].as_str().unwrap())
        .collect();
    assert_eq!(joined, hook_spans);
}

fn one_scenario(scenario: &str, marker: &str) -> (Run, Vec<Value>) {
    let run = Run::new(scenario);
    let sent = run.hooks(scenario);
    run.harnery(&["finalize"]);
    let events = run.events();
    assert_eq!(cited_hooks(&events), sent, "every hook exactly once");
    let sessions: BTreeSet<(String, String)> = events
        .iter()
        .map(|e| {
            let s = &e["session"];
            (
                s["adapter"].as_str().unwrap().into(),
                s["session_id"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert_eq!(sessions.len(), 1);
    assert_eq!(sessions.iter().next().unwrap().0, "codex");
    assert_joined(&events);
    assert_eq!(ledger_tokens(&run), rollout_tokens(scenario));
    let hits = run.harnery(&["search", marker, "--json"]);
    assert!(!hits.trim().is_empty(), "search finds {marker:?}");
    (run, events)
}

/// Its two `PreModelRequest`s are the same bytes (one per model request):
/// both are in the ledger (`one_scenario` counts every hook).
#[test]
fn a_shell_call_is_recorded_from_hooks_and_rollout() {
    let (_run, events) = one_scenario("basic", "hello-from-harnery-e2e");
    assert_eq!(of_type(&events, "hook.observed").len(), 2);
    for (_, closers) in spans(&events) {
        assert_eq!(closers.len(), 1);
        assert_eq!(closers[0]["provenance"]["attestation"], "native");
    }
    let said: Vec<&str> = of_type(&events, "message.assistant")
        .iter()
        .filter_map(|e| e["payload"]["text"].as_str())
        .collect();
    assert_eq!(said, ["Done: the command ran and I read its output."]);
    let models: BTreeSet<&str> = of_type(&events, "usage.reported")
        .iter()
        .map(|e| e["payload"]["model"].as_str().expect("the turn's model"))
        .collect();
    assert_eq!(models, BTreeSet::from(["gpt-5.1-codex"]));
}

#[test]
fn a_failing_command_is_judged_by_the_rollouts_exit_code() {
    let (_run, events) = one_scenario("fail", "nonexistent-harnery");
    // The call's start and its result, both joined to the one span.
    let recorded = of_type(&events, "tool.recorded");
    assert_eq!(recorded.len(), 2);
    let result = recorded[1];
    assert_eq!(result["payload"]["exit_code"], 2);
    assert_eq!(result["payload"]["success"], false);
    assert_eq!(recorded[0]["payload"]["exit_code"], Value::Null);
}

#[test]
fn a_resumed_session_is_one_session_of_two_turns() {
    let (_run, events) = one_scenario("two-turns", "hello-from-harnery-e2e");
    assert_eq!(of_type(&events, "prompt.submitted").len(), 2);
    let turns: BTreeSet<&str> = of_type(&events, "tool.requested")
        .iter()
        .map(|e| e["turn"]["turn_id"].as_str().expect("a native turn"))
        .collect();
    assert_eq!(turns.len(), 2);
    for (_, closers) in spans(&events) {
        assert_eq!(closers.len(), 1);
    }
}

/// Killed during `sleep 30`, then resumed with a new prompt: the killed
/// call's span is closed by recovery when the next turn starts, with an
/// unknown outcome; the rest closed natively.
#[test]
fn a_call_killed_mid_tool_is_recovered_when_the_session_goes_on() {
    let run = Run::new("kill-resume");
    let mut sent = run.hooks("kill");
    for (event, n) in run.hooks("kill-resume") {
        *sent.entry(event).or_default() += n;
    }
    run.harnery(&["finalize"]);
    let events = run.events();
    assert_eq!(cited_hooks(&events), sent);
    assert_joined(&events);
    assert_eq!(ledger_tokens(&run), rollout_tokens("kill-resume"));
    let spans = spans(&events);
    assert_eq!(spans.len(), 2);
    let mut recovered = 0;
    for closers in spans.values() {
        assert_eq!(closers.len(), 1);
        if closers[0]["provenance"]["attestation"] != "native" {
            recovered += 1;
            assert_eq!(closers[0]["payload"]["outcome"], "unknown");
        }
    }
    assert_eq!(recovered, 1);
}

/// Codex writes a resumed turn's first lines to the rollout before it runs
/// the hooks that resume the session: a finalize in between reads the new
/// turn from the record first. That turn is still the resumed leg's, and
/// its hooks are not stale signals of an older incarnation.
#[test]
fn a_resumed_turn_read_from_the_rollout_before_its_hooks_is_live() {
    let run = Run::new("kill-resume");
    let whole = fixture("kill-resume", "rollout.jsonl");
    let lines: Vec<&str> = whole.lines().collect();
    let user_said = lines
        .iter()
        .rposition(|l| l.contains(r#""type":"UserMessage""#))
        .unwrap();
    std::fs::write(&run.rollout, lines[..=user_said].join("\n") + "\n").unwrap();
    let mut sent = run.hooks("kill");
    run.harnery(&["finalize"]);
    for (event, n) in run.hooks("kill-resume") {
        *sent.entry(event).or_default() += n;
    }
    std::fs::write(&run.rollout, &whole).unwrap();
    run.harnery(&["finalize"]);
    let events = run.events();
    assert!(
        of_type(&events, "session.stale_signal").is_empty(),
        "{events:#?}"
    );
    assert_eq!(cited_hooks(&events), sent);
    assert_eq!(of_type(&events, "prompt.submitted").len(), 2);
    assert_eq!(of_type(&events, "session.resumed").len(), 1);
}

/// A subagent (`spawn_agent`) runs the shell call: its hooks come in the
/// parent's session under its agent id, its own rollout is followed from
/// `SubagentStop`, and the session's tokens are both rollouts'.
#[test]
fn a_subagents_hooks_and_rollout_join_the_parent_session() {
    let run = Run::new("subagent");
    let child = run
        .rollout
        .with_file_name(fixture("subagent", "subagent-rollout-name").trim());
    std::fs::write(&child, fixture("subagent", "subagent-rollout.jsonl")).unwrap();
    let sent = run.hooks("subagent");
    run.harnery(&["finalize"]);
    let events = run.events();
    assert_eq!(cited_hooks(&events), sent);
    let sessions: BTreeSet<&str> = events
        .iter()
        .map(|e| e["session"]["session_id"].as_str().unwrap())
        .collect();
    assert_eq!(sessions.len(), 1, "the subagent is no session of its own");
    assert_joined(&events);
    let agent_calls: Vec<&Value> = of_type(&events, "tool.requested")
        .into_iter()
        .filter(|e| e["agent_id"].is_string())
        .collect();
    assert_eq!(
        agent_calls.len(),
        1,
        "the subagent's shell call is the agent's"
    );
    for closers in spans(&events).values() {
        assert_eq!(closers.len(), 1);
        assert_eq!(closers[0]["provenance"]["attestation"], "native");
    }
    let mut want = rollout_tokens("subagent");
    for (kind, n) in subagent_tokens() {
        *want.entry(kind).or_default() += n;
    }
    assert_eq!(ledger_tokens(&run), want);
}

/// The subagent rollout's token kinds, summed.
fn subagent_tokens() -> BTreeMap<&'static str, u64> {
    let mut t = BTreeMap::new();
    for line in fixture("subagent", "subagent-rollout.jsonl").lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        if v["type"] != "token_usage_record" {
            continue;
        }
        let u = &v["payload"]["usage"];
        let n = |k: &str| u[k].as_u64().unwrap();
        *t.entry("input").or_default() += n("input_tokens") - n("cached_input_tokens");
        *t.entry("cache_read").or_default() += n("cached_input_tokens");
        *t.entry("output").or_default() += n("output_tokens");
        *t.entry("reasoning").or_default() += n("reasoning_output_tokens");
    }
    t
}

/// Killed and never resumed: the span stays open (nothing says how it
/// ended) and the rollout still joins, until the session is ended by hand.
#[test]
fn a_killed_session_leaves_its_call_open_until_it_is_ended() {
    let run = Run::new("kill");
    let sent = run.hooks("kill");
    run.harnery(&["finalize"]);
    let events = run.events();
    assert_eq!(cited_hooks(&events), sent);
    assert_joined(&events);
    assert!(spans(&events).values().all(Vec::is_empty));
    assert_eq!(ledger_tokens(&run), rollout_tokens("kill"));

    // Ended by hand (`harnery end`): the open span is salvaged, its outcome
    // unknown.
    let session = events[0]["session"]["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    run.harnery(&["end", &session, "--reason", "killed"]);
    run.harnery(&["finalize"]);
    let events = run.events();
    let closers: Vec<&Value> = spans(&events).into_values().flatten().collect();
    assert_eq!(closers.len(), 1);
    assert_ne!(closers[0]["provenance"]["attestation"], "native");
    assert_eq!(closers[0]["payload"]["outcome"], "unknown");
    assert_eq!(
        closers[0]["payload"]["recovery"]["reason"],
        "explicit_end_salvage"
    );
}

/// Interrupted (SIGINT) during `sleep 30`: Codex sends no `PostToolUse`
/// and no `Stop`, then its `SessionEnd`; the rollout ends the call as
/// aborted and the turn as over. The span is closed by the session's end,
/// its outcome unknown, and the record's call joins it, unsuccessful.
#[test]
fn an_interrupted_call_is_closed_by_the_sessions_end() {
    let run = Run::new("interrupt");
    let sent = run.hooks("interrupt");
    assert!(!sent.contains_key("PostToolUse") && !sent.contains_key("Stop"));
    run.harnery(&["finalize"]);
    let events = run.events();
    assert_eq!(cited_hooks(&events), sent);
    assert_joined(&events);
    assert_eq!(ledger_tokens(&run), rollout_tokens("interrupt"));
    let closers: Vec<&Value> = spans(&events).into_values().flatten().collect();
    assert_eq!(closers.len(), 1);
    assert_ne!(closers[0]["provenance"]["attestation"], "native");
    assert_eq!(closers[0]["payload"]["outcome"], "unknown");
    let results: Vec<&Value> = of_type(&events, "tool.recorded")
        .into_iter()
        .filter(|e| e["payload"]["success"] == false)
        .collect();
    assert_eq!(results.len(), 1);
}

/// A call of a tool Codex runs no hooks for (here `view_image`, a line
/// added to the basic capture's rollout beside its shell call): `show`
/// says so, rather than that a hook signal was lost.
#[test]
fn a_call_of_a_tool_without_hooks_is_not_called_lost() {
    let run = Run::new("basic");
    let mut lines: Vec<String> = fixture("basic", "rollout.jsonl")
        .lines()
        .map(String::from)
        .collect();
    let at = lines
        .iter()
        .position(|l| l.contains(r#""type":"function_call""#))
        .unwrap();
    let mut call: Value = serde_json::from_str(&lines[at]).unwrap();
    call["payload"]["name"] = "view_image".into();
    call["payload"]["call_id"] = "call_no_hooks".into();
    call["payload"]["arguments"] = r#"{"path":"/tmp/x.png"}"#.into();
    lines.insert(at, call.to_string());
    std::fs::write(&run.rollout, lines.join("\n") + "\n").unwrap();
    run.hooks("basic");
    run.harnery(&["finalize"]);
    let session = run.events()[0]["session"]["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    // The call waits for a hook request (30 s by its line's time) first.
    let settled = common::harnery(&run.home)
        .env("HARNERY_RECORDS", "on")
        .env("HOME", run.codex_home.parent().unwrap())
        .env("CODEX_HOME", &run.codex_home)
        .env("HARNERY_NOW", "2030-01-01T00:00:00Z")
        .arg("finalize")
        .output()
        .unwrap();
    assert!(settled.status.success(), "{}", stderr(&settled));
    let shown = run.harnery(&["show", &session]);
    let line = shown
        .lines()
        .find(|l| l.contains("call_no_hooks"))
        .unwrap_or_else(|| panic!("{shown}"));
    assert!(line.contains("runs no hooks for this tool"), "{line}");
    assert!(!shown.contains("a hook signal was lost"), "{shown}");
}

/// `health` names a Codex session whose rollout was written after harnery
/// began recording but whose hooks never ran harnery (installed where
/// Codex does not read them, say), and no longer once its hooks run.
#[test]
fn health_names_a_codex_session_that_never_reached_the_spool() {
    let dir = tempfile::tempdir().unwrap();
    let (home, user) = (dir.path().join("hh"), dir.path().join("user"));
    let codex_home = dir.path().join("elsewhere");
    std::fs::create_dir_all(&user).unwrap();
    let out = common::harnery(&home).arg("finalize").output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let name = fixture("basic", "rollout-name");
    let rollout = codex_home.join("sessions/2026/12/06").join(name.trim());
    std::fs::create_dir_all(rollout.parent().unwrap()).unwrap();
    std::fs::write(&rollout, fixture("basic", "rollout.jsonl")).unwrap();
    let now = harnery::now::resolve_now(Some(common::NOW)).unwrap();
    let written =
        std::time::UNIX_EPOCH + std::time::Duration::from_nanos(now as u64 + 3_600_000_000_000);
    let file = std::fs::File::options().write(true).open(&rollout).unwrap();
    file.set_modified(written).unwrap();
    let later = (now + 7_200_000_000_000).to_string();
    let health = || {
        let mut cmd = common::harnery(&home);
        common::without_installed_agents(&mut cmd, &user);
        cmd.env("HARNERY_RECORDS", "on")
            .env("CODEX_HOME", &codex_home)
            .args(["health", "--json", "--now", &later])
            .output()
            .unwrap()
    };
    let named = |out: &std::process::Output| -> Vec<Value> {
        stdout(out)
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .filter(|c| c["code"] == "hooks_not_reaching_spool")
            .collect()
    };
    let found = named(&health());
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0]["session"]["adapter"], "codex");
    let session = found[0]["session"]["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(name.contains(&session));
    let detail = found[0]["detail"].as_str().unwrap();
    assert!(detail.contains("CODEX_HOME"), "{detail}");
    let start = format!(r#"{{"session_id":"{session}","hook_event_name":"SessionStart"}}"#);
    crate::common::hook(&home, &["codex", "SessionStart"], start);
    assert!(named(&health()).is_empty());
}

/// The event types of the tool-output hits of `query`.
fn output_hits(run: &Run, query: &str) -> Vec<String> {
    common::tool_output_types(&run.harnery(&["search", "--json", "--limit", "100", "--", query]))
}

/// The rollout's text of a call's result (generation 12) is found once:
/// where the hook sent the same output (the shell's, which the rollout
/// wraps in unified exec's header), as the hook's; where no hook said it
/// (a call the user interrupted), from the rollout alone.
#[test]
fn a_results_text_from_the_rollout_is_found_once() {
    let (run, events) = one_scenario("fail", "nonexistent-harnery");
    let recorded: Vec<&str> = of_type(&events, "tool.recorded")
        .iter()
        .filter_map(|e| e["payload"]["output"].as_str())
        .collect();
    assert_eq!(recorded.len(), 1, "{recorded:?}");
    assert!(recorded[0].ends_with(
        "Output:\nls: cannot access '/nonexistent-harnery': No such file or directory\n"
    ));
    assert_eq!(
        output_hits(&run, "\"No such file or directory\""),
        ["tool.completed"]
    );
    // The interrupted call had no `PostToolUse`.
    let run = Run::new("interrupt");
    run.hooks("interrupt");
    run.harnery(&["finalize"]);
    assert_eq!(output_hits(&run, "\"aborted by user\""), ["tool.recorded"]);
}
