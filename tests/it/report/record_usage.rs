//! One count per model call, across the sessions and epochs of a home:
//! expectations are computed here from the record files themselves
//! (ccusage's way: each message id's usage once), never from harnery's
//! output.

use crate::common;
use crate::report::usage_support;

use std::collections::BTreeMap;
use std::path::Path;

use common::{stderr, stdout};
use serde_json::Value;
use usage_support::{FORK_ID, calls, hook, lines_of, root, total, transcript, write};

fn usage_json(out: std::process::Output) -> Value {
    assert!(out.status.success(), "{}", stderr(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn tokens(v: &Value) -> [u64; 4] {
    let t = &v["tokens"];
    let n = |k: &str| t[k].as_u64().unwrap_or(0);
    [n("input"), n("output"), n("cache_read"), n("cache_write")]
}

/// `claude --resume <parent> --fork-session` copies the parent's messages,
/// message ids and all, into a new session's transcript: each call is
/// counted once, the copies shown as inherited.
#[test]
fn a_forked_session_counts_its_parents_calls_once() {
    let home = tempfile::tempdir().unwrap();
    let (parent, fork) = usage_support::forked_claude_home(home.path(), finalize);
    let want = calls(&[&parent, &fork]);
    let copies = calls(&[&parent]).len();
    let out = run(home.path(), &["usage", "--json"]);
    let v = usage_json(out);
    assert_eq!(tokens(&v["total"]), total(&want), "{v:#}");
    assert_eq!(v["total"]["records"], want.len() as u64, "{v:#}");
    assert_eq!(v["total"]["inherited_records"], copies as u64, "{v:#}");
    let groups = v["groups"].as_array().unwrap();
    let fork_group = groups
        .iter()
        .find(|g| g["key"].as_str().unwrap().ends_with(FORK_ID))
        .unwrap();
    assert_eq!(fork_group["records"], 1, "only its own call: {fork_group}");
    assert_eq!(fork_group["inherited_records"], copies as u64);
    let text = stdout(&run(home.path(), &["usage"]));
    assert!(text.contains("inherited:"), "{text}");
    // Asked for alone, the fork still counts only its own call: the
    // parent's calls are known as the parent's whatever is selected.
    let alone = usage_json(run(home.path(), &["usage", "--json", "--session", FORK_ID]));
    assert_eq!(alone["total"]["records"], 1, "{alone:#}");
    assert_eq!(
        alone["total"]["inherited_records"], copies as u64,
        "{alone:#}"
    );
    let parent_alone = usage_json(run(
        home.path(),
        &["usage", "--json", "--session", &parent_id(&v)],
    ));
    assert_eq!(
        parent_alone["total"]["records"], copies as u64,
        "{parent_alone:#}"
    );
    assert_eq!(
        parent_alone["total"]["inherited_records"]
            .as_u64()
            .unwrap_or(0),
        0,
        "{parent_alone:#}"
    );
}

/// The session id of the group that is not the fork.
fn parent_id(v: &serde_json::Value) -> String {
    let key = v["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["key"].as_str().unwrap())
        .find(|k| !k.ends_with(FORK_ID))
        .unwrap();
    key.rsplit('/').next().unwrap().to_string()
}

fn run(home: &Path, args: &[&str]) -> std::process::Output {
    common::harnery(home)
        .env("HARNERY_RECORDS", "on")
        .args(args)
        .output()
        .unwrap()
}

fn finalize(home: &Path) {
    let out = run(home, &["finalize"]);
    assert!(out.status.success(), "{}", stderr(&out));
}

#[cfg(feature = "failpoints")]
fn next(home: &Path, args: &[&str]) -> std::process::Output {
    common::harnery(home)
        .env("HARNERY_RECORDS", "on")
        .env("HARNERY_TEST_SCHEMA_SUFFIX", common::NEXT_CONTRACT)
        .args(args)
        .output()
        .unwrap()
}

/// An epoch advance between two turns of one session: the new epoch reads
/// the session's record on from where the old one stopped, so
/// `usage --epoch all` counts each call once and nothing is read twice.
/// (The next contract is simulated, which takes the failpoints build.)
#[cfg(feature = "failpoints")]
#[test]
fn an_epoch_advance_between_two_turns_reads_nothing_twice() {
    let home = tempfile::tempdir().unwrap();
    let hooks = lines_of(&root().join("tests/fixtures/claude-code/resume/hooks.jsonl"));
    let record = lines_of(&root().join("tests/fixtures/records/claude-code/resume.jsonl"));
    let transcript = transcript(home.path(), &session_of(&hooks));
    // The first run: hooks 0..8 and the record up to its first cost line.
    write(&transcript, &record[..31]);
    for h in &hooks[..8] {
        hook(home.path(), h, None, &transcript);
    }
    finalize(home.path());
    let out = next(home.path(), &["epoch", "advance"]);
    assert!(out.status.success(), "{}", stderr(&out));
    // The resumed run, under the new epoch.
    write(&transcript, &record[31..]);
    for h in &hooks[8..] {
        hook(home.path(), h, None, &transcript);
    }
    let out = next(home.path(), &["finalize"]);
    assert!(out.status.success(), "{}", stderr(&out));

    let want = calls(&[&record]);
    let v = usage_json(next(home.path(), &["usage", "--epoch", "all", "--json"]));
    assert_eq!(tokens(&v["total"]), total(&want), "{v:#}");
    assert_eq!(v["total"]["records"], want.len() as u64, "{v:#}");
    assert!(
        v["total"]["inherited_records"].is_null(),
        "read twice: {v:#}"
    );
    // The live epoch holds only what was written after the advance.
    let live = usage_json(next(home.path(), &["usage", "--json"]));
    let after = calls(&[&record[31..]]);
    assert_eq!(tokens(&live["total"]), total(&after), "{live:#}");
    let out = next(home.path(), &["export", "--format", "jsonl"]);
    let messages = stdout(&out)
        .lines()
        .filter(|l| l.contains("\"message.user\""))
        .count();
    let said = record[31..]
        .iter()
        .filter(|l| l.contains("\"type\":\"user\"") && !l.contains("tool_result"))
        .count();
    assert_eq!(messages, said, "no message read twice");
}

fn session_of(hooks: &[String]) -> String {
    serde_json::from_str::<Value>(&hooks[0]).unwrap()["session_id"]
        .as_str()
        .unwrap()
        .to_string()
}

/// A Copilot record's lines with 60 of each call's input tokens read from
/// the cache (Copilot counts them in `inputTokens` too).
fn cached(scenario: &str) -> Vec<String> {
    lines_of(&root().join(format!(
        "tests/fixtures/records/copilot/{scenario}.events.jsonl"
    )))
    .into_iter()
    .map(|l| {
        if l.contains("\"session.usage_record\"") {
            l.replace("\"cacheReadTokens\":0", "\"cacheReadTokens\":60")
        } else {
            l
        }
    })
    .collect()
}

/// The session id a Copilot record's `session.start` names.
pub(crate) fn copilot_session(lines: &[String]) -> String {
    lines
        .iter()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|v| v["type"] == "session.start")
        .unwrap()["data"]["sessionId"]
        .as_str()
        .unwrap()
        .to_string()
}

/// A home that finalized a Copilot session (with cached tokens) and its
/// resume, finalizing after each run; the whole record's lines.
pub(crate) fn resumed_copilot(home: &Path) -> Vec<String> {
    let copilot_home = home.join("copilot");
    let first = cached("resume-1-first-run");
    let second = cached("resume-2-resumed-run");
    assert!(second.starts_with(&first), "the resumed run appends");
    let session = copilot_session(&first);
    let dir = copilot_home.join("session-state").join(&session);
    std::fs::create_dir_all(&dir).unwrap();
    let events_file = dir.join("events.jsonl");
    let finalize = || {
        let out = common::harnery(home)
            .env("HARNERY_RECORDS", "on")
            .env("COPILOT_HOME", &copilot_home)
            .arg("finalize")
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
    };
    write(&events_file, &first);
    common::copilot_hooks(home, "resume-1-first-run", &events_file);
    finalize();
    write(&events_file, &second[first.len()..]);
    common::copilot_hooks(home, "resume-2-resumed-run", &events_file);
    finalize();
    second
}

/// Copilot's own totals (`session.shutdown` `modelMetrics`, contract
/// generation 5) are cumulative over resumes: `usage` shows the last
/// shutdown's, apart from the calls' counts, which they do not change.
#[test]
fn copilots_own_totals_are_its_last_shutdowns() {
    let home = tempfile::tempdir().unwrap();
    let lines = resumed_copilot(home.path());
    let shutdowns: Vec<Value> = lines
        .iter()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| v["type"] == "session.shutdown")
        .collect();
    assert_eq!(shutdowns.len(), 2, "one per run");
    let metrics = shutdowns[1]["data"]["modelMetrics"].as_object().unwrap();
    let (mut requests, mut premium, mut input, mut output) = (0u64, 0f64, 0u64, 0u64);
    for m in metrics.values() {
        requests += m["requests"]["count"].as_u64().unwrap();
        premium += m["requests"]["cost"].as_f64().unwrap();
        let u = &m["usage"];
        input += u["inputTokens"].as_u64().unwrap() - u["cacheReadTokens"].as_u64().unwrap();
        output += u["outputTokens"].as_u64().unwrap();
    }
    let first_requests: u64 = shutdowns[0]["data"]["modelMetrics"]
        .as_object()
        .unwrap()
        .values()
        .map(|m| m["requests"]["count"].as_u64().unwrap())
        .sum();
    assert!(requests > first_requests, "the second restates the first");

    let v = usage_json(
        common::harnery(home.path())
            .args(["usage", "--json"])
            .output()
            .unwrap(),
    );
    let totals = &v["total"]["agent_totals"];
    assert_eq!(totals["requests"], requests, "{v:#}");
    assert_eq!(totals["premium_requests"].as_f64(), Some(premium), "{v:#}");
    assert_eq!(totals["input"], input, "{v:#}");
    assert_eq!(totals["output"], output, "{v:#}");
    assert_eq!(totals["summaries"], metrics.len() as u64, "{v:#}");
    assert_eq!(v["groups"][0]["agent_totals"], *totals, "one session");
    let usage_ids: std::collections::HashSet<String> = lines
        .iter()
        .filter(|l| l.contains("\"session.usage_record\""))
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["data"]["usage"]["accounting"]["usageId"]
                .to_string()
        })
        .collect();
    assert_eq!(
        v["total"]["records"],
        usage_ids.len() as u64,
        "summaries add no records"
    );

    let text = common::harnery(home.path()).arg("usage").output().unwrap();
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(text.contains("the agents' own totals"), "{text}");
    let events = common::harnery(home.path())
        .args(["export", "--format", "jsonl"])
        .output()
        .unwrap();
    let summaries = String::from_utf8(events.stdout)
        .unwrap()
        .lines()
        .filter(|l| l.contains("\"type\":\"usage.summary\""))
        .count();
    assert_eq!(
        summaries,
        2 * metrics.len(),
        "each shutdown's totals are recorded"
    );
}

/// Copilot with cached tokens and a resume: its `inputTokens` include the
/// cache reads, so harnery's input is theirs less the cache reads, each
/// call is counted once across the resume, and the bundled table prices
/// the cached tokens once, as cache reads.
#[test]
fn copilot_cached_tokens_are_priced_once_across_a_resume() {
    let home = tempfile::tempdir().unwrap();
    let second = resumed_copilot(home.path());

    // Expected, from the record: each usage id once.
    let mut seen = std::collections::HashSet::new();
    let (mut input, mut read, mut output) = (0u64, 0u64, 0u64);
    for l in &second {
        let v: Value = serde_json::from_str(l).unwrap();
        if v["type"] != "session.usage_record" {
            continue;
        }
        let u = &v["data"]["usage"];
        if !seen.insert(u["accounting"]["usageId"].as_str().unwrap().to_string()) {
            continue;
        }
        let n = |k: &str| u[k].as_u64().unwrap();
        input += n("inputTokens") - n("cacheReadTokens");
        read += n("cacheReadTokens");
        output += n("outputTokens");
    }
    assert!(read > 0 && seen.len() > 2);
    let v = usage_json(
        common::harnery(home.path())
            .args(["usage", "--json"])
            .output()
            .unwrap(),
    );
    let t = &v["total"];
    assert_eq!(t["tokens"]["input"], input, "{v:#}");
    assert_eq!(t["tokens"]["cache_read"], read, "{v:#}");
    assert_eq!(t["tokens"]["output"], output, "{v:#}");
    assert_eq!(t["records"], seen.len() as u64, "{v:#}");
    let p = harnery::report::usage::Prices::bundled().models["gpt-4.1"];
    let want = (input as f64 * p.input.unwrap()
        + read as f64 * p.cache_read.unwrap()
        + output as f64 * p.output.unwrap())
        / 1e6;
    let got = t["priced_cost"].as_f64().unwrap();
    assert!((got - want).abs() < 1e-9, "priced {got}, want {want}");
}

/// Claude Code writes its cost only as a running total (`cost-state`):
/// the reported cost of a session is its last total, the calls counted
/// once each.
#[test]
fn claude_codes_own_cost_is_kept() {
    let home = tempfile::tempdir().unwrap();
    let hooks = lines_of(&root().join("tests/fixtures/claude-code/resume/hooks.jsonl"));
    let record = lines_of(&root().join("tests/fixtures/records/claude-code/resume.jsonl"));
    let transcript = transcript(home.path(), &session_of(&hooks));
    write(&transcript, &record);
    for h in &hooks {
        hook(home.path(), h, None, &transcript);
    }
    finalize(home.path());
    let last_total = record
        .iter()
        .rev()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|v| v["type"] == "cost-state")
        .unwrap()["totalCostUSD"]
        .as_f64()
        .unwrap();
    let v = usage_json(run(home.path(), &["usage", "--json"]));
    let t = &v["total"];
    assert_eq!(t["records"], calls(&[&record]).len() as u64, "{v:#}");
    let got = t["reported_cost"].as_f64().unwrap();
    assert!((got - last_total).abs() < 1e-9, "{got} vs {last_total}");
}

/// A real `claude --resume … --fork-session` (Claude Code 2.1.332): the
/// fork's transcript repeats the parent's lines under its own session and
/// prompt ids, the copied assistant lines naming the parent as the session
/// that made the call (`requestSessionId`). Each call counts once, in the
/// turn of the session that made it: `usage` and the per-turn tokens of
/// `receipts` equal what the records say, computed here from the files.
#[test]
fn a_real_fork_counts_each_call_once_in_usage_and_in_turns() {
    let home = tempfile::tempdir().unwrap();
    let dir = root().join("tests/fixtures/records/claude-code-fork");
    let parent_id = "352c328f-717f-4fc1-9025-91757a024a6f";
    let fork_id = "599bcab2-b71c-4bb3-a091-06f473db1310";
    let start = r#"{"hook_event_name":"SessionStart","source":"startup","cwd":"/tmp/proj"}"#;
    let mut expected: BTreeMap<(String, String), u64> = BTreeMap::new();
    let mut seen = std::collections::HashSet::new();
    for id in [parent_id, fork_id] {
        let lines = lines_of(&dir.join(format!("{id}.jsonl")));
        let path = transcript(home.path(), id);
        write(&path, &lines);
        hook(home.path(), start, Some(id), &path);
        finalize(home.path());
        let rows: Vec<Value> = lines
            .iter()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let by_uuid: BTreeMap<&str, &Value> = rows
            .iter()
            .filter_map(|r| Some((r["uuid"].as_str()?, r)))
            .collect();
        for r in rows.iter().filter(|r| r["type"] == "assistant") {
            let u = &r["message"]["usage"];
            if !u.is_object() || !seen.insert(r["message"]["id"].to_string()) {
                continue;
            }
            let mut at = Some(r);
            let mut turn = None;
            while let (Some(line), None) = (at, &turn) {
                turn = line["promptId"].as_str().map(str::to_string);
                at = line["parentUuid"]
                    .as_str()
                    .and_then(|p| by_uuid.get(p).copied());
            }
            let n = u["input_tokens"].as_u64().unwrap() + u["output_tokens"].as_u64().unwrap();
            *expected.entry((id.to_string(), turn.unwrap())).or_default() += n;
        }
    }
    assert_eq!(
        seen.len(),
        3,
        "two calls of the parent's, one of the fork's own"
    );

    let mut got = BTreeMap::new();
    for id in [parent_id, fork_id] {
        let r: Value =
            serde_json::from_slice(&run(home.path(), &["receipts", id, "--json"]).stdout).unwrap();
        for t in r["turns"].as_array().unwrap() {
            if let Some(n) = t["tokens"].as_u64() {
                got.insert(
                    (id.to_string(), t["turn_id"].as_str().unwrap().to_string()),
                    n,
                );
            }
        }
    }
    assert_eq!(got, expected, "per-turn tokens");

    let v = usage_json(run(home.path(), &["usage", "--json"]));
    let all: u64 = expected.values().sum();
    let t = &v["total"]["tokens"];
    assert_eq!(
        t["input"].as_u64().unwrap() + t["output"].as_u64().unwrap(),
        all,
        "{v:#}"
    );
    assert_eq!(v["total"]["records"], 3, "{v:#}");
    assert_eq!(v["total"]["inherited_records"], 2, "{v:#}");
    // The copied Bash call ran in the parent (here without hooks, so
    // unjoined there): in the fork it is neither a lost hook signal nor a
    // result of an unknown tool.
    let export = stdout(&run(home.path(), &["export", "--format", "jsonl"]));
    let recorded: Vec<Value> = export
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["type"] == "tool.recorded")
        .collect();
    assert!(!recorded.is_empty());
    assert!(
        recorded
            .iter()
            .all(|e| e["session"]["session_id"] == parent_id),
        "{recorded:#?}"
    );
    // The fork asked for alone: only its own call, whatever it copied.
    let alone = usage_json(run(
        home.path(),
        &["usage", "--json", "--epoch", "live", "--session", fork_id],
    ));
    assert_eq!(alone["total"]["records"], 1, "{alone:#}");
}
