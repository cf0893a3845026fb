//! A home with a Claude Code session and its `--fork-session` copy: the
//! fork's transcript holds the parent's lines (message ids and all) under
//! its own session id, the copied assistant lines naming the parent
//! (`requestSessionId`, as the real client writes them), then one call of
//! its own. Shared by the local usage
//! tests and the fleet's, so both count the same calls.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

pub const FORK_ID: &str = "f0f0f0f0-0000-4000-8000-000000000001";

pub fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

pub fn lines_of(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_string)
        .collect()
}

/// Per message id, its (input, output, cache read, cache write) tokens,
/// over every record file given: ccusage's way, each id once.
pub fn calls(records: &[&[String]]) -> BTreeMap<String, [u64; 4]> {
    let mut out = BTreeMap::new();
    for lines in records {
        for line in lines.iter() {
            let v: Value = serde_json::from_str(line).unwrap();
            let u = &v["message"]["usage"];
            if v["type"] != "assistant" || !u.is_object() {
                continue;
            }
            let n = |k: &str| u[k].as_u64().unwrap_or(0);
            out.entry(v["message"]["id"].as_str().unwrap().to_string())
                .or_insert([
                    n("input_tokens"),
                    n("output_tokens"),
                    n("cache_read_input_tokens"),
                    n("cache_creation_input_tokens"),
                ]);
        }
    }
    out
}

pub fn total(calls: &BTreeMap<String, [u64; 4]>) -> [u64; 4] {
    calls.values().fold([0; 4], |mut t, c| {
        for i in 0..4 {
            t[i] += c[i];
        }
        t
    })
}

/// Where Claude Code keeps a session's transcript, under `home`.
pub fn transcript(home: &Path, session: &str) -> PathBuf {
    home.join(format!("claude/projects/-tmp-proj/{session}.jsonl"))
}

pub fn hook(home: &Path, line: &str, session: Option<&str>, transcript: &Path) {
    let mut payload: Value = serde_json::from_str(line).unwrap();
    payload["transcript_path"] = Value::String(transcript.display().to_string());
    if let Some(id) = session {
        payload["session_id"] = Value::String(id.into());
    }
    crate::common::hook(home, &["claude-code"], payload.to_string());
}

pub fn write(path: &Path, lines: &[String]) {
    use std::io::Write;
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    for l in lines {
        writeln!(f, "{l}").unwrap();
    }
}

/// The parent's and the fork's transcript lines, both finalized into the
/// home at `home`; `finalize` runs `harnery finalize` there.
pub fn forked_claude_home(home: &Path, finalize: impl Fn(&Path)) -> (Vec<String>, Vec<String>) {
    let hooks = lines_of(&root().join("tests/fixtures/claude-code/basic/hooks.jsonl"));
    let parent = lines_of(&root().join("tests/fixtures/records/claude-code/basic.jsonl"));
    let parent_id = serde_json::from_str::<Value>(&hooks[0]).unwrap()["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    // As the real client copies: its own session id on every line, the
    // copied assistant lines naming the session that made the call.
    let mut fork: Vec<String> = parent
        .iter()
        .map(|l| {
            let mut v: Value = serde_json::from_str(l).unwrap();
            if v.get("sessionId").is_some() {
                v["sessionId"] = Value::String(FORK_ID.into());
            }
            if v["type"] == "assistant" {
                v["requestSessionId"] = Value::String(parent_id.clone());
            }
            v.to_string()
        })
        .collect();
    let mut own: Value = serde_json::from_str(
        parent
            .iter()
            .rev()
            .find(|l| l.contains("\"usage\"") && l.contains("\"assistant\""))
            .unwrap(),
    )
    .unwrap();
    own["message"]["id"] = Value::String("msg_fork_own_0001".into());
    own["uuid"] = Value::String("fork-own-line".into());
    // The fork writes its own calls under its own id.
    own["sessionId"] = Value::String(FORK_ID.into());
    own["message"]["usage"]["output_tokens"] = Value::from(7);
    own.as_object_mut().unwrap().remove("requestSessionId");
    fork.push(own.to_string());

    let parent_path = transcript(home, &parent_id);
    let fork_path = transcript(home, FORK_ID);
    write(&parent_path, &parent);
    write(&fork_path, &fork);
    for h in &hooks {
        hook(home, h, None, &parent_path);
    }
    finalize(home);
    for h in &hooks {
        hook(home, h, Some(FORK_ID), &fork_path);
    }
    finalize(home);
    (parent, fork)
}
