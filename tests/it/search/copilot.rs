#![cfg(feature = "failpoints")]
//! `harnery search` over a captured Copilot session (`shell-nonzero-exit`:
//! its hooks through the real hook binary, its `events.jsonl` where its
//! `agentStop` says it is): the shell command that exited 3 is a failure
//! for `--failed` and `show` alike, though Copilot's hook called the result
//! a success; and the prompt, said by the hook and again by the record, is
//! one hit. Expectations come from the fixture's text.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{self, stderr, stdout};

const SESSION: &str = "5c79dc83-f503-4419-9dac-b07b9e4416c7";
/// Where the capture's Copilot kept its home.
const CAPTURED_HOME: &str = "/tmp/copilot-run.GeBmOZ/home/.copilot";

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

struct Home {
    _dir: tempfile::TempDir,
    home: PathBuf,
}

impl Home {
    fn build() -> Home {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("hh");
        let copilot_home = dir.path().join("copilot");
        let state = copilot_home.join("session-state").join(SESSION);
        std::fs::create_dir_all(&state).unwrap();
        std::fs::copy(
            fixtures().join("records/copilot/shell-nonzero-exit.events.jsonl"),
            state.join("events.jsonl"),
        )
        .unwrap();
        let capture = fixtures().join("copilot/shell-nonzero-exit/hook-capture.jsonl");
        let moved = copilot_home.display().to_string();
        for line in std::fs::read_to_string(capture).unwrap().lines() {
            common::deliver(&home, "copilot", &line.replace(CAPTURED_HOME, &moved));
        }
        let h = Home { _dir: dir, home };
        h.json(&["finalize"]);
        h
    }

    fn run(&self, args: &[&str]) -> std::process::Output {
        common::harnery(&self.home)
            .env("HARNERY_RECORDS", "on")
            .args(args)
            .output()
            .unwrap()
    }

    fn json(&self, args: &[&str]) -> Vec<Value> {
        let out = self.run(args);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
        stdout(&out)
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }
}

/// The command the fixture's model ran, and what it printed.
const COMMAND: &str = "echo about-to-fail; exit 3";

#[test]
fn a_command_that_exited_non_zero_is_a_failure() {
    let h = Home::build();
    let failed = h.json(&["search", "--json", "--failed", "about-to-fail"]);
    let kinds: HashSet<&str> = failed.iter().map(|v| v["kind"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        HashSet::from(["tool-input", "tool-output"]),
        "the request and the result of `{COMMAND}`: {failed:?}"
    );
    assert!(
        failed.iter().all(|v| v["outcome"] == "failure"),
        "{failed:?}"
    );
    // `show` reads the same span row.
    let show = h.run(&["show", "--json", SESSION]);
    let show: Value = serde_json::from_slice(&show.stdout).expect("show --json is JSON");
    let spans: Vec<&Value> = show["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e.get("span"))
        .collect();
    assert_eq!(spans.len(), 1);
    assert_eq!(spans[0]["outcome"], "failure");
}

#[test]
fn a_prompt_said_by_the_hook_and_by_the_record_is_one_hit() {
    let h = Home::build();
    // The fixture's prompts: the one the user typed (the hook's
    // `userPromptSubmitted`, and the record's `user.message` again) and
    // the one Copilot rewrote (`userPromptTransformed`, a date before it).
    let hits = h.json(&[
        "search",
        "--json",
        "--kind",
        "prompt",
        "then tell me what it printed",
    ]);
    let texts: Vec<(&str, &str)> = hits
        .iter()
        .map(|v| {
            let snippet = v["snippet"].as_str().unwrap();
            (v["turn"].as_str().unwrap(), snippet.trim_start_matches('…'))
        })
        .collect();
    let distinct: HashSet<&(&str, &str)> = texts.iter().collect();
    assert_eq!(distinct.len(), texts.len(), "a text twice: {hits:?}");
    assert_eq!(hits.len(), 2, "{hits:?}");
    assert_eq!(hits[0]["event_type"], "prompt.submitted");
}

/// The command's result, said by the hook (`toolResult`, its text inside
/// an object) and by the record (`tool.execution_complete`'s
/// `result.content`, on the `tool.recorded` joined to the hook's span),
/// is one hit: the hook's, first in the chain.
#[test]
fn a_result_said_by_the_hook_and_by_the_record_is_one_hit() {
    let h = Home::build();
    let hits = h.json(&[
        "search",
        "--json",
        "--kind",
        "tool-output",
        "\"completed with exit code 3\"",
    ]);
    assert_eq!(hits.len(), 1, "{hits:?}");
    assert_eq!(hits[0]["event_type"], "tool.completed");
    // The record did keep it.
    let export = h.run(&["export", "--format", "jsonl"]);
    let recorded: Vec<Value> = stdout(&export)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["type"] == "tool.recorded" && e["payload"]["output"].is_string())
        .collect();
    assert_eq!(recorded.len(), 1, "{recorded:?}");
    let output = recorded[0]["payload"]["output"].as_str().unwrap();
    assert!(output.contains("about-to-fail"), "{output}");
}
