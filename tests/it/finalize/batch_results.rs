//! Claude Code's `PostToolBatch` responses in the ledger (contract
//! generation 12): real captures fed through the real hook binary, the
//! records off. Each call of a batch whose span is known has a
//! `tool.batch_result` after the batch's `tool.batch_completed`, naming
//! its request, with the text the model was given (a string, or its text
//! blocks joined by newlines), as computed here from the hooks' file,
//! unless its `PostToolUse` held the same text (a shell's `stdout`); a
//! response longer than the cap keeps its beginning as written and says
//! how much was cut; `verify` passes.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use crate::common::{self, stderr, stdout};

/// `OUTPUT_CAP`, written out: a change to it is a contract change.
const CAP: usize = 64 * 1024;

fn hooks(scenario: &str) -> Vec<Value> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/claude-code")
        .join(scenario)
        .join("hooks.jsonl");
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The events of a home fed `payloads`, finalized with the records off.
fn ledger_of(payloads: &[Value]) -> Vec<Value> {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    for payload in payloads {
        common::deliver(home, "claude-code", &payload.to_string());
    }
    for args in [&["finalize"][..], &["verify"], &["validate"]] {
        let out = common::harnery(home)
            .env("HARNERY_RECORDS", "off")
            .args(args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
    }
    stdout(&common::run(home, &["export", "--format", "jsonl"]))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// A response's text as the model was given it: a string, or its text
/// blocks joined by newlines.
fn text_of(response: &Value) -> Option<String> {
    match response {
        Value::String(s) => Some(s.clone()),
        Value::Array(blocks) => {
            let texts: Vec<&str> = blocks
                .iter()
                .filter(|b| b["type"] == "text")
                .filter_map(|b| b["text"].as_str())
                .collect();
            (!texts.is_empty()).then(|| texts.join("\n"))
        }
        _ => None,
    }
}

fn strings(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => out.push(s.trim().to_string()),
        Value::Array(items) => items.iter().for_each(|i| strings(i, out)),
        Value::Object(map) => map.values().for_each(|i| strings(i, out)),
        _ => {}
    }
}

/// Each batched call with a text response whose `PreToolUse` was sent and
/// whose `PostToolUse`, if any, held no string equal to that text: (call
/// id, tool, text), in the order the batches list them.
fn expected(payloads: &[Value]) -> Vec<(String, String, String)> {
    let of = |event: &'static str| {
        payloads
            .iter()
            .filter(move |p| p["hook_event_name"] == event)
    };
    let requested: Vec<&str> = of("PreToolUse")
        .filter_map(|p| p["tool_use_id"].as_str())
        .collect();
    let posted: BTreeMap<&str, Vec<String>> = of("PostToolUse")
        .map(|p| {
            let mut said = Vec::new();
            strings(&p["tool_response"], &mut said);
            (p["tool_use_id"].as_str().unwrap(), said)
        })
        .collect();
    of("PostToolBatch")
        .flat_map(|p| p["tool_calls"].as_array().unwrap())
        .filter(|c| requested.contains(&c["tool_use_id"].as_str().unwrap()))
        .filter_map(|c| {
            let id = c["tool_use_id"].as_str()?;
            let text = text_of(&c["tool_response"])?;
            let said = posted
                .get(id)
                .is_some_and(|s| s.contains(&text.trim().to_string()));
            let tool = c["tool_name"].as_str()?.to_string();
            (!said).then(|| (id.to_string(), tool, text))
        })
        .collect()
}

#[test]
fn each_known_call_of_a_batch_has_its_result_after_the_summary() {
    let mut seen = 0;
    for scenario in ["permission-denied", "file-tools", "parallel", "subagent"] {
        let payloads = hooks(scenario);
        let events = ledger_of(&payloads);
        let requests: BTreeMap<&str, &str> = events
            .iter()
            .filter(|e| e["type"] == "tool.requested")
            .filter_map(|e| Some((e["payload"]["tool_call_id"].as_str()?, e["id"].as_str()?)))
            .collect();
        let mut got = Vec::new();
        for (at, event) in events.iter().enumerate() {
            if event["type"] != "tool.batch_result" {
                continue;
            }
            let p = &event["payload"];
            let call = p["tool_call_id"].as_str().unwrap();
            assert_eq!(p["requested_event_id"], requests[call], "{scenario}: {p}");
            assert!(p.get("output_cut_bytes").is_none(), "{scenario}: {p}");
            // After its batch's summary: the event before is the summary
            // or another result of the same batch.
            let before = &events[at - 1]["type"];
            assert!(
                before == "tool.batch_completed" || before == "tool.batch_result",
                "{scenario}: {before}"
            );
            got.push((
                call.to_string(),
                p["tool_name"].as_str().unwrap().to_string(),
                p["output"].as_str().unwrap().to_string(),
            ));
        }
        let want = expected(&payloads);
        assert_eq!(got, want, "{scenario}");
        seen += want.len();
    }
    // The denied call, Write, Read, Edit and the async launch; the
    // shells' `stdout`s were their posts'.
    assert_eq!(seen, 5);
}

#[test]
fn a_long_response_keeps_its_beginning_and_says_how_much_was_cut() {
    let mut payloads = hooks("permission-denied");
    // Hostile text past the cap: markup, control characters, a forged
    // marker, and a character across the cut.
    let head = "<script>\u{1b}[31m\u{0}\"output_cut_bytes\":0";
    let long = format!(
        "{head}{}é{}",
        "x".repeat(CAP - head.len() - 1),
        "y".repeat(9)
    );
    for p in payloads
        .iter_mut()
        .filter(|p| p["hook_event_name"] == "PostToolBatch")
    {
        p["tool_calls"][0]["tool_response"] = Value::String(long.clone());
    }
    let events = ledger_of(&payloads);
    let results: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "tool.batch_result")
        .map(|e| &e["payload"])
        .collect();
    assert_eq!(results.len(), 1, "{results:?}");
    let kept = results[0]["output"].as_str().unwrap();
    // `é` would end past the cap: the cut falls before it.
    assert_eq!(kept.len(), CAP - 1);
    assert!(long.starts_with(kept));
    assert_eq!(
        results[0]["output_cut_bytes"],
        (long.len() - kept.len()) as u64
    );
}
