//! The record normalizers over every checked-in record of a real client
//! (`tests/fixtures/records/`). Every expectation is computed from the
//! record file itself with serde_json, never from the normalizer: each
//! assistant message, usage record, tool call and tool result the file
//! holds must come out exactly once and as written, and no frame of a type
//! the dialect knows may come out unrecognized.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use harnery::agents::harnery::chunk::read_line;
use harnery::agents::record::{RecordItem, RecordLine};
use harnery::agents::signal::SignalKind;
use harnery::contract::{AdapterId, RecordAt, UsageReported};
use serde_json::Value;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");

fn files(dir: &str) -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("fixture dir") {
            let path = entry.expect("dir entry").path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "jsonl") {
                out.push(path);
            }
        }
    }
    let mut out = Vec::new();
    walk(&Path::new(FIXTURES).join("records").join(dir), &mut out);
    out.sort();
    out
}

/// Every line of a record with its offset, its JSON and what the
/// normalizer read.
fn lines(adapter: AdapterId, path: &Path) -> Vec<(u64, Value, RecordLine)> {
    let bytes = std::fs::read(path).expect("record fixture");
    let mut offset = 0u64;
    let mut out = Vec::new();
    for line in bytes.split(|b| *b == b'\n') {
        let at = RecordAt {
            path: path.display().to_string(),
            offset,
        };
        offset += line.len() as u64 + 1;
        if line.is_empty() {
            continue;
        }
        let json: Value = serde_json::from_slice(line).expect("fixture lines are JSON");
        out.push((at.offset, json, read_line(adapter, line, &at)));
    }
    out
}

fn text(v: &Value) -> Option<String> {
    v.as_str().map(str::to_owned)
}

fn assert_usage(u: &UsageReported, tokens: [&Value; 4], cost: Option<&Value>, at: &str) {
    let got = [
        u.input_tokens,
        u.output_tokens,
        u.cache_read_tokens,
        u.cache_write_tokens,
    ];
    assert_eq!(got, tokens.map(Value::as_u64), "{at}: tokens");
    let got_cost = u
        .cost
        .as_ref()
        .map(|c| serde_json::from_str::<Value>(c.as_str()).expect("cost is JSON"));
    assert_eq!(got_cost.as_ref(), cost, "{at}: cost");
}

fn only<'a, T>(items: &'a [RecordItem], pick: impl Fn(&'a RecordItem) -> Option<T>) -> Vec<T> {
    items.iter().filter_map(pick).collect()
}

const CLAUDE_KNOWN: &[&str] = &[
    "user",
    "assistant",
    "system",
    "result",
    "cost-state",
    "attachment",
    "queue-operation",
    "last-prompt",
    "api-request",
    "api-request-blob",
    "api-request-shape",
    "tools-used",
    "atis-latch",
    "file-history-snapshot",
    "mode",
    "permission-mode",
];

/// The frame's type, which the test must know and the normalizer must
/// have read (nothing of it unrecognized).
fn known_and_read<'a>(json: &'a Value, line: &RecordLine, known: &[&str], at: &str) -> &'a str {
    let kind = json["type"].as_str().unwrap_or_default();
    assert!(
        known.contains(&kind),
        "{at}: a type the test does not know: {kind}"
    );
    assert!(
        !line
            .items
            .iter()
            .any(|i| matches!(i, RecordItem::Unrecognized { .. })),
        "{at}: {kind} came out unrecognized: {:?}",
        line.items
    );
    kind
}

#[test]
fn every_claude_code_record_reads_as_the_file_says() {
    let paths = files("claude-code");
    assert_eq!(paths.iter().filter(|p| !is_stream(p)).count(), 22);
    assert_eq!(paths.iter().filter(|p| is_stream(p)).count(), 16);
    let mut seen = [0usize; 4];
    for path in paths {
        for (offset, json, line) in lines(AdapterId::ClaudeCode, &path) {
            let at = format!("{}@{offset}", path.display());
            let kind = known_and_read(&json, &line, CLAUDE_KNOWN, &at);
            match kind {
                "assistant" => claude_assistant(&json, &line, &at, &mut seen),
                "user" => claude_user(&json, &line, &at, &mut seen),
                "result" | "cost-state" => claude_totals(&json, &line, &at),
                "system" if json["subtype"] == "init" => {
                    let version = text(&json["claude_code_version"]);
                    assert_eq!(
                        metadata(&line),
                        vec![(version, text(&json["model"]))],
                        "{at}"
                    );
                }
                _ => {}
            }
        }
    }
    assert!(
        seen.iter().all(|n| *n > 0),
        "each kind was checked: {seen:?}"
    );
}

fn is_stream(path: &Path) -> bool {
    path.to_string_lossy().ends_with(".stream.jsonl")
}

fn claude_assistant(json: &Value, line: &RecordLine, at: &str, seen: &mut [usize; 4]) {
    let message = &json["message"];
    let blocks = message["content"].as_array().expect("assistant content");
    let texts: Vec<String> = blocks
        .iter()
        .filter(|b| b["type"] == "text")
        .filter_map(|b| text(&b["text"]))
        .collect();
    let uses: Vec<(String, String)> = blocks
        .iter()
        .filter(|b| b["type"] == "tool_use")
        .map(|b| (text(&b["id"]).expect("id"), text(&b["name"]).expect("name")))
        .collect();
    let messages = only(&line.items, |i| match i {
        RecordItem::AssistantMessage(m) => Some(m),
        _ => None,
    });
    if texts.is_empty() && uses.is_empty() {
        assert!(messages.is_empty(), "{at}: a message from nothing");
    } else {
        assert_eq!(messages.len(), 1, "{at}: one message per line");
        let m = messages[0];
        assert_eq!(m.message_id, text(&message["id"]), "{at}");
        assert_eq!(
            m.text,
            (!texts.is_empty()).then(|| texts.join("\n")),
            "{at}"
        );
        let ids: Vec<_> = uses.iter().map(|(id, _)| id.clone()).collect();
        assert_eq!(m.tool_call_ids, ids, "{at}");
        seen[0] += 1;
    }
    let started = only(&line.items, |i| match i {
        RecordItem::ToolStarted(c) => Some((c.tool_call_id.clone(), c.tool_name.clone())),
        _ => None,
    });
    assert_eq!(started, uses, "{at}: every tool_use is a started call");
    let turn = text(&json["promptId"]);
    assert_eq!(line.native_turn_id, turn, "{at}");
    assert_eq!(
        line.agent_id,
        text(&json["agentId"]).or(text(&json["agent_id"])),
        "{at}"
    );
    let usages = only(&line.items, |i| match i {
        RecordItem::Usage(u) => Some(u),
        _ => None,
    });
    // A stream-json frame's usage is the first streamed token's, not a count.
    if json.get("parent_tool_use_id").is_some() {
        assert!(usages.is_empty(), "{at}: stream usage reported");
        return;
    }
    let u = &message["usage"];
    assert_eq!(usages.len(), 1, "{at}: usage once per line");
    assert_eq!(usages[0].message_id, text(&message["id"]), "{at}");
    assert_eq!(usages[0].model, text(&message["model"]), "{at}");
    let tokens = [
        &u["input_tokens"],
        &u["output_tokens"],
        &u["cache_read_input_tokens"],
        &u["cache_creation_input_tokens"],
    ];
    assert_usage(usages[0], tokens, None, at);
    seen[1] += 1;
}

fn claude_user(json: &Value, line: &RecordLine, at: &str, seen: &mut [usize; 4]) {
    let content = &json["message"]["content"];
    let results: Vec<(String, Option<bool>)> = content
        .as_array()
        .into_iter()
        .flatten()
        .filter(|b| b["type"] == "tool_result")
        .map(|b| {
            (
                text(&b["tool_use_id"]).expect("id"),
                // `is_error` is written only on a failure.
                Some(!b["is_error"].as_bool().unwrap_or(false)),
            )
        })
        .collect();
    let finished = only(&line.items, |i| match i {
        RecordItem::ToolFinished(r) => Some((r.tool_call_id.clone(), r.success)),
        _ => None,
    });
    assert_eq!(
        finished, results,
        "{at}: every tool_result is a finished call"
    );
    seen[2] += results.len();
    let prompt = match content {
        Value::String(s) => Some(s.clone()),
        Value::Array(blocks) => {
            let texts: Vec<_> = blocks
                .iter()
                .filter(|b| b["type"] == "text")
                .filter_map(|b| text(&b["text"]))
                .collect();
            (!texts.is_empty()).then(|| texts.join("\n"))
        }
        _ => None,
    };
    let messages = only(&line.items, |i| match i {
        RecordItem::UserMessage(m) => Some(m.text.clone()),
        _ => None,
    });
    assert_eq!(
        messages,
        prompt.into_iter().map(Some).collect::<Vec<_>>(),
        "{at}"
    );
    seen[3] += messages.len();
}

/// The (agent version, model) of each metadata item of a line.
fn metadata(line: &RecordLine) -> Vec<(Option<String>, Option<String>)> {
    only(&line.items, |i| match i {
        RecordItem::Metadata(m) => Some((m.agent_version.clone(), m.model.clone())),
        _ => None,
    })
}

fn claude_totals(json: &Value, line: &RecordLine, at: &str) {
    let models = json["modelUsage"].as_object().expect("modelUsage");
    let totals = only(&line.items, |i| match i {
        RecordItem::UsageTotal(u) => Some(u),
        _ => None,
    });
    assert_eq!(totals.len(), models.len(), "{at}: one total per model");
    for (total, (model, m)) in totals.into_iter().zip(models) {
        assert_eq!(total.model.as_deref(), Some(model.as_str()), "{at}");
        let tokens = [
            &m["inputTokens"],
            &m["outputTokens"],
            &m["cacheReadInputTokens"],
            &m["cacheCreationInputTokens"],
        ];
        assert_usage(total, tokens, m.get("costUSD"), at);
    }
    assert!(
        !line.items.iter().any(|i| matches!(i, RecordItem::Usage(_))),
        "{at}: a total counted as a call"
    );
}

const COPILOT_KNOWN: &[&str] = &[
    "session.start",
    "session.resume",
    "session.shutdown",
    "session.usage_record",
    "session.error",
    "session.warning",
    "session.model_change",
    "user.message",
    "assistant.message",
    "assistant.turn_start",
    "assistant.turn_end",
    "tool.execution_start",
    "tool.execution_complete",
    "hook.start",
    "hook.end",
    "system.message",
    "abort",
    "permission.requested",
    "permission.completed",
    "subagent.started",
    "subagent.configured",
    "subagent.completed",
];

#[test]
fn every_copilot_record_reads_as_the_file_says() {
    let paths = files("copilot");
    assert_eq!(paths.len(), 29);
    let mut seen = BTreeMap::<String, usize>::new();
    for path in paths {
        for (offset, json, line) in lines(AdapterId::Copilot, &path) {
            let at = format!("{}@{offset}", path.display());
            let kind = known_and_read(&json, &line, COPILOT_KNOWN, &at);
            let data = &json["data"];
            assert_eq!(line.native_turn_id, text(&data["turnId"]), "{at}");
            assert_eq!(line.agent_id, text(&json["agentId"]), "{at}");
            assert!(line.time_unix_ns.is_some(), "{at}: every frame has a time");
            *seen.entry(kind.to_owned()).or_default() += 1;
            copilot_frame(kind, data, &line, &at);
        }
    }
    for kind in [
        "assistant.message",
        "session.usage_record",
        "tool.execution_complete",
    ] {
        assert!(seen.get(kind).is_some_and(|n| *n > 0), "{kind} was checked");
    }
}

fn copilot_frame(kind: &str, data: &Value, line: &RecordLine, at: &str) {
    match kind {
        "assistant.message" => {
            let m = only(&line.items, |i| match i {
                RecordItem::AssistantMessage(m) => Some(m),
                _ => None,
            });
            assert_eq!(m.len(), 1, "{at}");
            assert_eq!(m[0].message_id, text(&data["messageId"]), "{at}");
            let content = text(&data["content"]).filter(|c| !c.is_empty());
            assert_eq!(m[0].text, content, "{at}");
            let ids: Vec<_> = data["toolRequests"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|r| text(&r["toolCallId"]))
                .collect();
            assert_eq!(m[0].tool_call_ids, ids, "{at}");
        }
        "session.usage_record" => {
            let u = &data["usage"];
            let usages = only(&line.items, |i| match i {
                RecordItem::Usage(u) => Some(u),
                _ => None,
            });
            assert_eq!(usages.len(), 1, "{at}");
            assert_eq!(usages[0].model, text(&u["model"]), "{at}");
            let tokens = [
                &u["inputTokens"],
                &u["outputTokens"],
                &u["cacheReadTokens"],
                &u["cacheWriteTokens"],
            ];
            assert_usage(usages[0], tokens, u.get("cost"), at);
            let ttft = u["timeToFirstTokenMs"].as_f64().map(|ms| ms.round() as u64);
            assert_eq!(usages[0].time_to_first_token_ms, ttft, "{at}");
            assert_eq!(usages[0].duration_ms, u["duration"].as_u64(), "{at}");
        }
        "tool.execution_start" => {
            let started = only(&line.items, |i| match i {
                RecordItem::ToolStarted(c) => Some((c.tool_call_id.clone(), c.tool_name.clone())),
                _ => None,
            });
            let expected = (text(&data["toolCallId"]), text(&data["toolName"]));
            assert_eq!(
                started,
                vec![(expected.0.unwrap(), expected.1.unwrap())],
                "{at}"
            );
        }
        "tool.execution_complete" => {
            let finished = only(&line.items, |i| match i {
                RecordItem::ToolFinished(r) => Some(r),
                _ => None,
            });
            assert_eq!(finished.len(), 1, "{at}");
            let r = finished[0];
            assert_eq!(
                Some(r.tool_call_id.clone()),
                text(&data["toolCallId"]),
                "{at}"
            );
            assert_eq!(r.success, data["success"].as_bool(), "{at}");
            assert_eq!(
                r.exit_code,
                data["shellExecution"]["exitCode"].as_i64(),
                "{at}"
            );
        }
        "session.start" => {
            let m = only(&line.items, |i| match i {
                RecordItem::Metadata(m) => Some(m),
                _ => None,
            });
            assert_eq!(m.len(), 1, "{at}");
            assert_eq!(m[0].agent_version, text(&data["copilotVersion"]), "{at}");
            assert_eq!(
                m[0].head_commit,
                text(&data["context"]["headCommit"]),
                "{at}"
            );
            assert_eq!(m[0].model, text(&data["selectedModel"]), "{at}");
        }
        "assistant.turn_start" | "assistant.turn_end" => {
            let turn = text(&data["turnId"]).expect("turnId");
            let expected = if kind == "assistant.turn_start" {
                RecordItem::TurnStarted { turn_id: turn }
            } else {
                RecordItem::TurnEnded { turn_id: turn }
            };
            assert_eq!(line.items, vec![expected], "{at}");
        }
        _ => {}
    }
}

#[test]
fn a_truncated_line_of_every_record_is_unrecognized() {
    let records = files("claude-code")
        .into_iter()
        .map(|p| (AdapterId::ClaudeCode, p))
        .chain(
            files("copilot")
                .into_iter()
                .map(|p| (AdapterId::Copilot, p)),
        );
    for (adapter, path) in records {
        let bytes = std::fs::read(&path).expect("record fixture");
        let first = bytes.split(|b| *b == b'\n').next().expect("a first line");
        let torn = &first[..first.len() / 2];
        let at = RecordAt {
            path: "torn".into(),
            offset: 0,
        };
        let line = read_line(adapter, torn, &at);
        assert!(
            matches!(line.items.as_slice(), [RecordItem::Unrecognized { .. }]),
            "{}: {:?}",
            path.display(),
            line.items
        );
    }
}

/// Claude Code: a record call and the hook's call with the same
/// `tool_use_id` digest the same.
#[test]
fn claude_code_record_digests_equal_the_hook_digests() {
    let mut hook = BTreeMap::new();
    for dir in std::fs::read_dir(Path::new(FIXTURES).join("claude-code")).expect("hook fixtures") {
        let Ok(text) = std::fs::read(dir.expect("entry").path().join("hooks.jsonl")) else {
            continue;
        };
        for payload in text.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
            let signal = harnery::agents::claude_code::normalize(payload, 0);
            if let SignalKind::ToolRequested(call) = signal.kind {
                let id = call.call_id.clone().expect("Claude Code hooks carry ids");
                hook.insert(id, (call.tool_name.clone(), call.input_digest()));
            }
        }
    }
    let mut matched = 0;
    for path in files("claude-code") {
        for (offset, _, line) in lines(AdapterId::ClaudeCode, &path) {
            for call in only(&line.items, |i| match i {
                RecordItem::ToolStarted(c) => Some(c),
                _ => None,
            }) {
                let Some(expected) = hook.get(&call.tool_call_id) else {
                    continue;
                };
                let got = (call.tool_name.clone(), call.input_digest.clone());
                assert_eq!(&got, expected, "{}@{offset}", path.display());
                matched += 1;
            }
        }
    }
    assert!(matched >= 40, "only {matched} record calls had a hook call");
}

/// Copilot hooks carry no call ids: every record call must find a hook
/// call of the same scenario with its tool name and digest. A resumed
/// session's record (`<name>-2-*`) also holds the calls of its first run,
/// whose hooks were captured as `<name>-1-*`.
#[test]
fn copilot_record_digests_equal_the_hook_digests() {
    let mut matched = 0;
    for path in files("copilot") {
        let name = path
            .file_name()
            .expect("name")
            .to_string_lossy()
            .into_owned();
        let scenario = name.trim_end_matches(".events.jsonl");
        let mut hooks = copilot_hook_calls(scenario);
        if let Some((name, _)) = scenario.split_once("-2-") {
            for first in scenario_dirs(&format!("{name}-1-")) {
                hooks.extend(copilot_hook_calls(&first));
            }
        }
        if hooks.is_empty() {
            continue;
        }
        for (offset, _, line) in lines(AdapterId::Copilot, &path) {
            for call in only(&line.items, |i| match i {
                RecordItem::ToolStarted(c) => Some(c),
                _ => None,
            }) {
                let key = (call.tool_name.to_lowercase(), call.input_digest.clone());
                assert!(
                    hooks.contains(&key),
                    "{}@{offset}: {key:?} not among the hook calls {hooks:?}",
                    path.display()
                );
                matched += 1;
            }
        }
    }
    assert!(matched >= 20, "only {matched} record calls were compared");
}

fn scenario_dirs(prefix: &str) -> Vec<String> {
    std::fs::read_dir(Path::new(FIXTURES).join("copilot"))
        .expect("hook fixtures")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with(prefix))
        .collect()
}

fn copilot_hook_calls(scenario: &str) -> BTreeSet<(String, String)> {
    let path = Path::new(FIXTURES).join(format!("copilot/{scenario}/hook-capture.jsonl"));
    let Ok(text) = std::fs::read_to_string(path) else {
        return BTreeSet::new();
    };
    let mut calls = BTreeSet::new();
    for capture in text.lines().filter(|l| !l.trim().is_empty()) {
        let capture: Value = serde_json::from_str(capture).expect("capture line");
        let raw = capture["stdin_raw"].as_str().unwrap_or_default();
        let event = capture["event"].as_str();
        let signal = harnery::agents::copilot::normalize(event, raw.as_bytes(), 0);
        if let SignalKind::ToolRequested(call) = signal.kind {
            calls.insert((call.tool_name.to_lowercase(), call.input_digest()));
        }
    }
    calls
}
