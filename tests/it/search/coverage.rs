//! Ten held-out queries over real Claude Code captures (the corpus'
//! hooks and transcripts in `tests/fixtures/`, subagent transcripts
//! beside their parent's) return exactly the sessions whose text holds
//! them. Two of the sessions are delivered without their `MessageDisplay`
//! hooks (as an older Claude Code sends them), so their assistant text is
//! in the agent's record alone.
//!
//! A session's text is computed here from the fixture files, never from
//! harnery's output: every string of its hook payloads but ids and paths,
//! and of its transcripts the user's strings, the text and thinking
//! blocks, each `tool_use`'s input and each `tool_result`'s content (a
//! string, or its text blocks). A tool's result that only the record's
//! `tool_result` and the `PostToolBatch` hook carry (a denied call's
//! "needs approval", a `Write`'s "created successfully", an async
//! subagent's launch) is found through `tool.recorded`'s `output`
//! (generation 11) and `tool.batch_result` (generation 12), as one hit;
//! with the records off, through the batch alone.

use crate::common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::Value;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// A captured session: its scenario, its transcripts (the session's own,
/// then its subagents'), and whether its `MessageDisplay` hooks are sent.
struct Capture {
    scenario: &'static str,
    records: &'static [&'static str],
    displayed: bool,
}

const CAPTURES: &[Capture] = &[
    Capture {
        scenario: "basic",
        records: &["basic.jsonl"],
        displayed: false,
    },
    Capture {
        scenario: "parallel",
        records: &["parallel.jsonl"],
        displayed: false,
    },
    Capture {
        scenario: "tool-failure",
        records: &["tool-failure.jsonl"],
        displayed: true,
    },
    Capture {
        scenario: "permission-denied",
        records: &["permission-denied.jsonl"],
        displayed: true,
    },
    Capture {
        scenario: "file-tools",
        records: &["file-tools.jsonl"],
        displayed: true,
    },
    Capture {
        scenario: "hook-block",
        records: &["hook-block.jsonl"],
        displayed: true,
    },
    Capture {
        scenario: "subagent",
        records: &[
            "subagent/2668abe1-379d-47fc-a818-0f8a3d39c1bf.jsonl",
            "subagent/agent-a6ade36a38f2eaf92.jsonl",
        ],
        displayed: true,
    },
];

/// Held out: chosen before the run, from the captures' text.
const QUERIES: [&str; 10] = [
    "\"I'll run it\"",
    "\"Running both at once\"",
    "\"Subagent done\"",
    "from-subagent",
    "not-allowed.txt",
    "gamma",
    "never-runs",
    "\"exit code 3\"",
    "\"echo two\"",
    "\"Print hi\"",
];

/// Held out too: text that only a tool result holds, in the record and
/// in the `PostToolBatch` hook.
const RESULT_QUERIES: [&str; 5] = [
    "\"needs approval\"",
    "\"File created successfully\"",
    "\"has been updated successfully\"",
    "\"Async agent launched\"",
    "\"blocked-by-test-hook\"",
];

fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

fn strings(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => out.push(s.clone()),
        Value::Array(items) => items.iter().for_each(|i| strings(i, out)),
        Value::Object(map) => map.values().for_each(|i| strings(i, out)),
        _ => {}
    }
}

/// Hook fields that name where or which, not what was said.
const NOT_TEXT: &[&str] = &[
    "session_id",
    "transcript_path",
    "agent_transcript_path",
    "cwd",
    "prompt_id",
    "permission_mode",
    "hook_event_name",
    "tool_use_id",
    "turn_id",
    "message_id",
    "agent_id",
];

/// Whether a hook payload is sent for `c`.
fn sent(c: &Capture, payload: &Value) -> bool {
    c.displayed || payload["hook_event_name"] != "MessageDisplay"
}

/// The capture's text, lowercased (see the module doc).
fn text_of(c: &Capture) -> String {
    let mut out = Vec::new();
    for mut payload in lines(&fixtures().join(format!("claude-code/{}/hooks.jsonl", c.scenario))) {
        if !sent(c, &payload) {
            continue;
        }
        for key in NOT_TEXT {
            payload.as_object_mut().unwrap().remove(*key);
        }
        strings(&payload, &mut out);
    }
    for record in c.records {
        for line in lines(&fixtures().join("records/claude-code").join(record)) {
            if !matches!(line["type"].as_str(), Some("user" | "assistant")) {
                continue;
            }
            match &line["message"]["content"] {
                Value::String(s) => out.push(s.clone()),
                Value::Array(blocks) => {
                    for b in blocks {
                        match b["type"].as_str() {
                            Some("text") => strings(&b["text"], &mut out),
                            Some("thinking") => strings(&b["thinking"], &mut out),
                            Some("tool_use") => strings(&b["input"], &mut out),
                            Some("tool_result") => result_text(&b["content"], &mut out),
                            _ => {}
                        }
                    }
                }
                _ => {}
            }
        }
    }
    out.join("\n").to_lowercase()
}

/// A `tool_result`'s content: a string, or its `text` blocks.
fn result_text(content: &Value, out: &mut Vec<String>) {
    match content {
        Value::String(s) => out.push(s.clone()),
        Value::Array(blocks) => blocks
            .iter()
            .filter(|b| b["type"] == "text")
            .for_each(|b| strings(&b["text"], out)),
        _ => {}
    }
}

/// A home with every capture delivered through the hook binary, its
/// transcripts where the hooks say they are, finalized with the records
/// followed (`records`) or not; and each capture's session id.
fn home_of(dir: &Path, records: bool) -> (PathBuf, Vec<String>) {
    let home = dir.join("home");
    let mut ids = Vec::new();
    for c in CAPTURES {
        let hooks = lines(&fixtures().join(format!("claude-code/{}/hooks.jsonl", c.scenario)));
        let session = hooks[0]["session_id"].as_str().unwrap().to_string();
        let project = dir.join(format!("claude/projects/-{}", c.scenario));
        let main = project.join(format!("{session}.jsonl"));
        for record in c.records {
            let from = fixtures().join("records/claude-code").join(record);
            let name = Path::new(record).file_name().unwrap().to_str().unwrap();
            let to = match name.starts_with("agent-") {
                true => project.join(&session).join("subagents").join(name),
                false => main.clone(),
            };
            std::fs::create_dir_all(to.parent().unwrap()).unwrap();
            std::fs::copy(from, to).unwrap();
        }
        for mut payload in hooks {
            if !sent(c, &payload) {
                continue;
            }
            payload["transcript_path"] = Value::String(main.display().to_string());
            if let Some(agent) = payload["agent_id"].as_str()
                && payload.get("agent_transcript_path").is_some()
            {
                let path = project
                    .join(&session)
                    .join("subagents")
                    .join(format!("agent-{agent}.jsonl"));
                payload["agent_transcript_path"] = Value::String(path.display().to_string());
            }
            common::deliver(&home, "claude-code", &payload.to_string());
        }
        ids.push(session);
    }
    let out = common::harnery(&home)
        .env("HARNERY_RECORDS", if records { "on" } else { "off" })
        .arg("finalize")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    (home, ids)
}

/// The sessions `harnery search --json QUERY` finds.
fn found(home: &Path, query: &str) -> BTreeSet<String> {
    let out = common::harnery(home)
        .args(["search", "--json", "--limit", "1000", "--", query])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{query}: {}",
        common::stderr(&out)
    );
    common::stdout(&out)
        .lines()
        .map(|l| {
            let hit: Value = serde_json::from_str(l).unwrap();
            assert_eq!(hit["index_behind"], 0, "{l}");
            hit["session"]["session_id"].as_str().unwrap().to_string()
        })
        .collect()
}

/// The sessions whose text holds `query` (its quotes taken off).
fn holding(ids: &[String], texts: &[String], query: &str) -> BTreeSet<String> {
    let needle = query.trim_matches('"').to_lowercase();
    ids.iter()
        .zip(texts)
        .filter(|(_, text)| text.contains(&needle))
        .map(|(id, _)| id.clone())
        .collect()
}

#[test]
fn held_out_queries_find_exactly_the_sessions_whose_text_holds_them() {
    let dir = tempfile::tempdir().unwrap();
    let (home, ids) = home_of(dir.path(), true);
    let texts: Vec<String> = CAPTURES.iter().map(text_of).collect();
    for query in QUERIES.iter().chain(&RESULT_QUERIES) {
        let want = holding(&ids, &texts, query);
        assert!(!want.is_empty(), "{query} is in some capture");
        assert_eq!(found(&home, query), want, "{query}");
    }
    // Without the records, the assistant text of the sessions sent no
    // `MessageDisplay` is not in the ledger: what the record alone holds
    // is what made those hits.
    let bare = tempfile::tempdir().unwrap();
    let (bare_home, _) = home_of(bare.path(), false);
    for query in ["\"I'll run it\"", "\"Running both at once\""] {
        assert!(found(&bare_home, query).is_empty(), "{query}");
        assert_eq!(found(&home, query).len(), 1, "{query}");
    }
    // A result's text that the record and the batch carry is found from
    // the batch alone.
    for query in RESULT_QUERIES {
        let want = holding(&ids, &texts, query);
        assert_eq!(found(&bare_home, query), want, "{query}");
    }
}

/// One text seen twice in one turn or call is one hit.
#[test]
fn a_text_seen_twice_is_one_hit() {
    let dir = tempfile::tempdir().unwrap();
    let (home, _) = home_of(dir.path(), true);
    let hits = |query: &str| -> Vec<Value> {
        let out = common::harnery(&home)
            .args(["search", "--json", "--limit", "1000", query])
            .output()
            .unwrap();
        common::stdout(&out)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    // `message.displayed` (hook) and `message.assistant` (record).
    let said = hits("\"The subagent finished\"");
    assert_eq!(said.len(), 1, "{said:?}");
    assert_eq!(said[0]["kind"], "message");
    // `tool.requested` and the `permission.requested` after it, one input.
    let asked = hits("\"touch not-allowed.txt\"");
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0]["event_type"], "tool.requested");
    // A result whose text the hook's `tool.completed` and the record's
    // `tool.recorded` both hold (the subagent's `echo from-subagent`): the
    // hook's, first in the chain. (The `Agent` call's output names the
    // text too, in the prompt it gave: another text.)
    let output = |query: &str| -> Vec<Value> {
        let hits = hits(query);
        let bash = |h: &Value| h["kind"] == "tool-output" && h["tool"] == "Bash";
        hits.into_iter().filter(bash).collect()
    };
    let both = output("from-subagent");
    assert_eq!(both.len(), 1, "{both:?}");
    assert_eq!(both[0]["event_type"], "tool.completed");
    // A result the batch and the record hold, and no post: the denied
    // call's, the batch's first in the chain.
    let denied = output("\"needs approval\"");
    assert_eq!(denied.len(), 1, "{denied:?}");
    assert_eq!(denied[0]["event_type"], "tool.batch_result");
    assert_eq!(denied[0]["tool"], "Bash");
    // One the post, the batch and the record hold: the post's `stdout`.
    let parallel = output("two");
    assert_eq!(parallel.len(), 1, "{parallel:?}");
    assert_eq!(parallel[0]["event_type"], "tool.completed");
}
