//! A tool result's text from the agent's own record (contract generation
//! 11): the `basic` scenario's real transcript, its one `tool_result`
//! kept as captured or made longer than `tool.recorded` keeps, finalized
//! with its real hooks; the ledger's `output` is the text's beginning and
//! `output_cut_bytes` says how much was left out, and `verify` passes.

use crate::common;

use std::path::Path;

use common::{stderr, stdout};
use serde_json::Value;

/// `OUTPUT_CAP`, written out: a change to it is a contract change.
const CAP: usize = 64 * 1024;

const SESSION: &str = "82655d0f-45cd-404f-9e4e-e90fea255247";

fn fixture(path: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(path)).unwrap()
}

/// The `basic` session in a fresh home, its transcript's `tool_result`
/// content replaced by `content` (`None`: as captured); its events.
fn recorded(content: Option<&str>) -> Vec<Value> {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let transcript = dir
        .path()
        .join(format!("claude/projects/-tmp-proj/{SESSION}.jsonl"));
    std::fs::create_dir_all(transcript.parent().unwrap()).unwrap();
    let mut lines = Vec::new();
    for line in fixture("tests/fixtures/records/claude-code/basic.jsonl").lines() {
        let mut v: Value = serde_json::from_str(line).unwrap();
        if let (Some(text), Some(blocks)) = (content, v["message"]["content"].as_array_mut()) {
            for b in blocks.iter_mut().filter(|b| b["type"] == "tool_result") {
                b["content"] = Value::String(text.to_string());
            }
        }
        lines.push(v.to_string());
    }
    std::fs::write(&transcript, lines.join("\n") + "\n").unwrap();
    for line in fixture("tests/fixtures/claude-code/basic/hooks.jsonl").lines() {
        let mut payload: Value = serde_json::from_str(line).unwrap();
        payload["transcript_path"] = Value::String(transcript.display().to_string());
        common::deliver(&home, "claude-code", &payload.to_string());
    }
    for args in [&["finalize"][..], &["verify"]] {
        let out = common::harnery(&home)
            .env("HARNERY_RECORDS", "on")
            .args(args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
    }
    let out = common::harnery(&home)
        .args(["export", "--format", "jsonl"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    stdout(&out)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["type"] == "tool.recorded")
        .collect()
}

#[test]
fn a_short_result_is_kept_whole_and_a_call_start_has_none() {
    let recorded = recorded(None);
    let outputs: Vec<(&Value, &Value)> = recorded
        .iter()
        .map(|e| (&e["payload"]["output"], &e["payload"]["output_cut_bytes"]))
        .collect();
    // The call's start (no text), then its result, as captured.
    assert_eq!(
        outputs,
        [
            (&Value::Null, &Value::Null),
            (&Value::from("hi"), &Value::Null)
        ]
    );
    let finished = recorded[1]["payload"].as_object().unwrap();
    assert!(!finished.contains_key("output_cut_bytes"), "{finished:?}");
}

#[test]
fn a_long_hostile_result_keeps_its_beginning_and_counts_the_rest() {
    // Control characters, markup and a forged marker, then multi-byte
    // characters across the cap.
    let head = "\u{1b}[31m<script>alert(1)</script>\u{0} [output_cut_bytes: 0]\n";
    let whole = format!("{head}{}", "é".repeat(CAP));
    let recorded = recorded(Some(&whole));
    let p = &recorded[1]["payload"];
    let kept = p["output"].as_str().unwrap();
    assert!(kept.len() <= CAP && kept.len() > CAP - 4, "{}", kept.len());
    assert!(whole.starts_with(kept));
    assert!(kept.starts_with(head));
    assert_eq!(
        p["output_cut_bytes"].as_u64(),
        Some((whole.len() - kept.len()) as u64)
    );
}
