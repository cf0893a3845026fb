//! Whose model call a usage record is: unrelated sessions that reuse
//! message ids each keep their tokens (reported by `health`, never
//! `null`), while copies that provably are copies (a fork's lines naming
//! their source, a `restore --apply` session linked to its parent) count
//! once, and a session's reported cost is its own. Expectations come from
//! the record files, never from harnery's output.

use std::path::Path;

use serde_json::Value;

use crate::common::{self, stderr, stdout};
use crate::report::usage_support::{calls, hook, lines_of, root, total, transcript, write};

fn run(home: &Path, args: &[&str]) -> std::process::Output {
    common::harnery(home)
        .env("HARNERY_RECORDS", "on")
        .args(args)
        .output()
        .unwrap()
}

fn json(home: &Path, args: &[&str]) -> Value {
    let out = run(home, args);
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn tokens(v: &Value) -> [u64; 4] {
    let t = &v["tokens"];
    ["input", "output", "cache_read", "cache_write"].map(|k| {
        t[k].as_u64()
            .unwrap_or_else(|| panic!("{k} is a count, not {}", t[k]))
    })
}

/// The `basic` capture four times over, each copy a session of its own
/// (new session id on its hooks and lines) whose model calls keep the
/// captured message ids, as a proxy that does not make ids unique gives.
pub(crate) fn four_sessions_sharing_ids(home: &Path) -> (Vec<String>, Vec<String>) {
    let hooks = lines_of(&root().join("tests/fixtures/claude-code/basic/hooks.jsonl"));
    let record = lines_of(&root().join("tests/fixtures/records/claude-code/basic.jsonl"));
    let ids: Vec<String> = (1..=4)
        .map(|n| format!("5e55105{n}-0000-4000-8000-00000000000{n}"))
        .collect();
    for id in &ids {
        let lines: Vec<String> = record
            .iter()
            .map(|l| {
                let mut v: Value = serde_json::from_str(l).unwrap();
                if v.get("sessionId").is_some() {
                    v["sessionId"] = Value::String(id.clone());
                }
                v.to_string()
            })
            .collect();
        let path = transcript(home, id);
        write(&path, &lines);
        for h in &hooks {
            hook(home, h, Some(id), &path);
        }
        let out = run(home, &["finalize"]);
        assert!(out.status.success(), "{}", stderr(&out));
    }
    (ids, record)
}

#[test]
fn unrelated_sessions_reusing_message_ids_each_keep_their_tokens() {
    let home = tempfile::tempdir().unwrap();
    let (ids, record) = four_sessions_sharing_ids(home.path());
    let each = calls(&[&record]);
    assert!(each.len() >= 2, "the capture has calls with ids");
    let one = total(&each);

    let v = json(home.path(), &["usage", "--json"]);
    let groups = v["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 4, "{v:#}");
    for g in groups {
        assert_eq!(tokens(g), one, "every session keeps its calls: {g:#}");
        assert_eq!(g["records"], each.len() as u64, "{g:#}");
    }
    assert_eq!(tokens(&v["total"]), one.map(|n| 4 * n), "{v:#}");
    assert_eq!(v["total"]["shared_id_records"], 3 * each.len() as u64);
    let shared = v["shared_ids"].as_array().unwrap();
    assert_eq!(shared.len(), 3, "the later three, each against the first");

    // One session asked for alone keeps its tokens too.
    let alone = json(home.path(), &["usage", "--json", "--session", &ids[2]]);
    assert_eq!(tokens(&alone["total"]), one, "{alone:#}");
    // No count is null however usage is grouped.
    for by in ["day", "model"] {
        let v = json(home.path(), &["usage", "--json", "--by", by]);
        for g in v["groups"].as_array().unwrap() {
            tokens(g);
        }
        assert_eq!(tokens(&v["total"]), one.map(|n| 4 * n), "{v:#}");
    }
    // Health names the sessions and the ids, as a note.
    let text = stdout(&run(home.path(), &["health", "--json"]));
    let notes: Vec<Value> = text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|c| c["code"] == "usage_ids_shared")
        .collect();
    assert_eq!(notes.len(), 3, "{text}");
    for (note, id) in notes.iter().zip(&ids[1..]) {
        let detail = note["detail"].as_str().unwrap();
        assert_eq!(note["session"]["session_id"], id.as_str(), "{note}");
        assert_eq!(note["note"], true, "{note}");
        assert!(detail.contains(&ids[0]), "{detail}");
        assert!(each.keys().all(|m| detail.contains(m.as_str())), "{detail}");
    }
}

/// The last `cost-state` total of a Claude Code transcript.
fn last_total(lines: &[String]) -> f64 {
    lines
        .iter()
        .rev()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|v| v["type"] == "cost-state")
        .unwrap()["totalCostUSD"]
        .as_f64()
        .unwrap()
}

pub(crate) const FORK_PARENT: &str = "352c328f-717f-4fc1-9025-91757a024a6f";
pub(crate) const FORK_CHILD: &str = "599bcab2-b71c-4bb3-a091-06f473db1310";

/// A real `claude --resume … --fork-session` pair (Claude Code 2.1.332),
/// finalized into `home`, parent first: their last cost lines.
pub(crate) fn fork_pair(home: &Path) -> [f64; 2] {
    let dir = root().join("tests/fixtures/records/claude-code-fork");
    let start = r#"{"hook_event_name":"SessionStart","source":"startup","cwd":"/tmp/proj"}"#;
    [FORK_PARENT, FORK_CHILD].map(|id| {
        let lines = lines_of(&dir.join(format!("{id}.jsonl")));
        let path = transcript(home, id);
        write(&path, &lines);
        hook(home, start, Some(id), &path);
        let out = run(home, &["finalize"]);
        assert!(out.status.success(), "{}", stderr(&out));
        last_total(&lines)
    })
}

/// The fork pair of [`fork_pair`]: the fork's cost line is cumulative from the parent's total, so its
/// reported cost is that line less the parent's, and the two sessions'
/// costs add up to the fork's line, the whole spend.
#[test]
fn a_forks_reported_cost_is_its_own() {
    let home = tempfile::tempdir().unwrap();
    let totals = fork_pair(home.path());
    let (parent, fork) = (totals[0], totals[1]);
    assert!(fork > parent, "the fork's line includes the parent's spend");
    let v = json(home.path(), &["usage", "--json"]);
    let (parent_id, fork_id) = (FORK_PARENT, FORK_CHILD);
    let cost = |key: &str| {
        v["groups"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["key"].as_str().unwrap().ends_with(key))
            .unwrap()["reported_cost"]
            .as_f64()
            .unwrap()
    };
    let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
    assert!(close(cost(parent_id), parent), "{v:#}");
    assert!(close(cost(fork_id), fork - parent), "{v:#}");
    let total = v["total"]["reported_cost"].as_f64().unwrap();
    assert!(close(total, fork), "{v:#}");
    // Asked for alone, the fork's cost is still its own.
    let alone = json(home.path(), &["usage", "--json", "--session", fork_id]);
    let own = alone["total"]["reported_cost"].as_f64().unwrap();
    assert!(close(own, fork - parent), "{alone:#}");
}

/// The ids a Claude Code transcript's lines name for themselves: line
/// uuids, message ids and tool call ids.
fn own_ids(lines: &[String]) -> Vec<String> {
    let mut ids = Vec::new();
    for l in lines {
        let v: Value = serde_json::from_str(l).unwrap();
        ids.extend(v["uuid"].as_str().map(String::from));
        ids.extend(v["message"]["id"].as_str().map(String::from));
        for b in v["message"]["content"].as_array().into_iter().flatten() {
            ids.extend(b["id"].as_str().map(String::from));
        }
    }
    ids.sort();
    ids.dedup();
    ids
}

/// `text` with each of `ids` made new, and the parent's session id the
/// child's.
fn renamed(text: &str, ids: &[String], parent: &str, child: &str) -> String {
    let mut out = text.replace(parent, child);
    for id in ids {
        out = out.replace(&format!("\"{id}\""), &format!("\"{id}-own\""));
    }
    out
}

/// What [`restored_child`] made: the child's id, its copied lines (the
/// parent's first turn) and its own (a turn of its own).
pub(crate) struct Restored {
    pub child: String,
    pub copied: Vec<String>,
    pub own: Vec<String>,
}

/// In `w`, a session made by `restore --apply` from the first turn of
/// Claude Code's two-turn capture, then resumed: its record is the copy
/// of the parent's first turn followed by a turn of its own (the parent's
/// second turn played again under new ids, with its hooks). Finalized.
pub(crate) fn restored_child(w: &crate::restore::apply::World) -> Restored {
    use crate::restore::apply::{CLAUDE, CLAUDE_TURN_1, CLAUDE_TURN_2};
    let home = w.home.path();
    let parent_lines = lines_of(&w.record);
    let child = "0b5e6c1e-0000-4000-8000-0000000000a1";
    let turn1 = format!("turn:{CLAUDE_TURN_1}");
    let out = w.json(&[
        "restore",
        CLAUDE,
        "--checkpoint",
        &turn1,
        "--apply",
        "--new-id",
        child,
        "--json",
    ]);
    let written = std::path::PathBuf::from(out["apply"]["path"].as_str().unwrap());
    let copied = lines_of(&written);
    let second = parent_lines
        .iter()
        .position(|l| l.contains(&format!("\"promptId\":\"{CLAUDE_TURN_2}")))
        .unwrap();
    let replayed: Vec<String> = parent_lines[second..]
        .iter()
        .filter(|l| !l.contains("\"cost-state\""))
        .cloned()
        .collect();
    let ids = own_ids(&replayed);
    let own: Vec<String> = replayed
        .iter()
        .map(|l| renamed(l, &ids, CLAUDE, child))
        .collect();
    write(&written, &own);
    let hooks = lines_of(&root().join("tests/fixtures/claude-code/interactive/hooks.jsonl"));
    for (i, h) in hooks.iter().enumerate().filter(|(_, h)| h.contains(CLAUDE)) {
        let mut v: Value = serde_json::from_str(&renamed(h, &ids, CLAUDE, child)).unwrap();
        let of_turn_2 = v["prompt_id"]
            .as_str()
            .is_some_and(|p| p.starts_with(CLAUDE_TURN_2));
        if i > 0 && !of_turn_2 {
            continue;
        }
        v["transcript_path"] = written.display().to_string().into();
        v["cwd"] = w.project.display().to_string().into();
        common::deliver(home, "claude-code", &v.to_string());
    }
    w.ok(&["finalize"]);
    Restored {
        child: child.to_string(),
        copied,
        own,
    }
}

/// [`restored_child`]'s copies are the parent's calls: shown as
/// inherited, never a lost hook signal or an unknown tool, and counted
/// once in `usage`, `receipts`, OTLP and `serve`'s sessions list.
#[test]
fn a_restored_sessions_copies_are_inherited_in_every_view() {
    use crate::restore::apply::{CLAUDE, CLAUDE_TURN_2, claude_world};
    let w = claude_world();
    let home = w.home.path();
    let parent_lines = lines_of(&w.record);
    let Restored { child, copied, own } = restored_child(&w);
    let child = child.as_str();

    let copies = calls(&[&copied]);
    let mine = calls(&[&own]);
    let everything = calls(&[&parent_lines, &own]);
    assert!(!copies.is_empty() && !mine.is_empty());
    assert_eq!(everything.len(), calls(&[&parent_lines]).len() + mine.len());

    // usage: the child counts its own calls, its copies inherited.
    let v = w.json(&["usage", "--json"]);
    assert_eq!(tokens(&v["total"]), total(&everything), "{v:#}");
    let group = v["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["key"].as_str().unwrap().ends_with(child))
        .unwrap();
    assert_eq!(group["records"], mine.len() as u64, "{group:#}");
    assert_eq!(group["inherited_records"], copies.len() as u64, "{group:#}");
    assert_eq!(tokens(group), total(&mine), "{group:#}");
    assert!(
        v.get("shared_ids").is_none(),
        "copies are no collision: {v:#}"
    );

    // receipts: the child's turns are its own.
    let in_out = |c: &std::collections::BTreeMap<String, [u64; 4]>| {
        c.values().map(|t| t[0] + t[1]).sum::<u64>()
    };
    let r = w.json(&["receipts", child, "--json"]);
    let turns = r["turns"].as_array().unwrap();
    let counted: u64 = turns.iter().filter_map(|t| t["tokens"].as_u64()).sum();
    assert_eq!(counted, in_out(&mine), "{r:#}");
    assert!(
        turns
            .iter()
            .all(|t| t["turn_id"].as_str().unwrap().starts_with(CLAUDE_TURN_2)),
        "the parent's first turn is the parent's: {r:#}"
    );

    // show: copies are inherited, not lost signals or unknown tools.
    let shown = w.ok(&["show", child]);
    assert!(!shown.contains("a hook signal was lost"), "{shown}");
    assert!(!shown.contains("tool unknown"), "{shown}");
    assert!(
        shown.contains(&format!("inherited from claude-code/{CLAUDE}")),
        "{shown}"
    );
    let timeline = w.json(&["show", child, "--json"]);
    let turn_tokens: u64 = timeline["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["turn_tokens"].as_u64())
        .sum();
    assert_eq!(turn_tokens, in_out(&mine), "{timeline:#}");

    // OTLP: every token once, across both sessions' traces.
    let out = w.harnery(&["export", "--format", "otlp"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let mut traced = 0u64;
    for line in stdout(&out).lines() {
        let doc: Value = serde_json::from_str(line).unwrap();
        for r in doc["resourceSpans"].as_array().unwrap() {
            for s in r["scopeSpans"][0]["spans"].as_array().unwrap() {
                for a in s["attributes"].as_array().unwrap() {
                    let key = a["key"].as_str().unwrap();
                    if s["name"] == "turn"
                        && (key == "gen_ai.usage.input_tokens"
                            || key == "gen_ai.usage.output_tokens")
                    {
                        traced += a["value"]["intValue"]
                            .as_str()
                            .unwrap()
                            .parse::<u64>()
                            .unwrap();
                    }
                }
            }
        }
    }
    assert_eq!(traced, in_out(&everything), "OTLP counts each call once");

    // serve's sessions list: the child's row shows its own tokens (its
    // tokens cell says "N in, M out" on hover).
    let served = crate::serve::support::Served::start(home);
    let page = served.get("/sessions");
    let row = page
        .split("<tr ")
        .find(|r| r.contains(&format!("data-session=\"{child}\"")))
        .unwrap_or_else(|| panic!("{page}"));
    let said = row
        .split("title=\"")
        .map(|t| t.split('"').next().unwrap())
        .find(|t| t.ends_with(" out"))
        .unwrap_or_else(|| panic!("no tokens cell: {row}"));
    let numbers: Vec<u64> = said
        .split(['i', 'o'])
        .filter_map(|part| part.replace([',', ' ', 'n'], "").parse().ok())
        .collect();
    let mine_total = total(&mine);
    assert_eq!(numbers, vec![mine_total[0], mine_total[1]], "{row}");
}
