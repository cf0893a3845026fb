//! Claude Code's turns get their tokens from the agent's own record, however
//! `finalize` runs interleave with the agent: the real hook binary spools a
//! captured session's hooks, its transcript is written line by line where
//! the hooks say, and `finalize` runs after every hook signal and every
//! transcript line (in several orders), or once at the end. Expectations
//! are computed here from the transcript itself (ccusage's way: the first
//! usage of each message id; an assistant line's turn is the `promptId` its
//! `parentUuid` chain leads back to), never from harnery's output.

use crate::common;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

use common::{stderr, stdout};
use serde_json::Value;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn lines_of(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_string)
        .collect()
}

/// Input and output tokens per turn (prompt id), from the transcript.
fn expected(transcript: &[String]) -> BTreeMap<String, (u64, u64)> {
    let mut prompt_of: HashMap<String, String> = HashMap::new();
    let mut last_prompt: Option<String> = None;
    let mut seen = HashSet::new();
    let mut out: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for line in transcript {
        let v: Value = serde_json::from_str(line).unwrap();
        let own = v["promptId"].as_str().map(str::to_string);
        let prompt = own
            .clone()
            .or_else(|| prompt_of.get(v["parentUuid"].as_str()?).cloned())
            .or_else(|| last_prompt.clone());
        if own.is_some() {
            last_prompt = own;
        }
        if let (Some(uuid), Some(p)) = (v["uuid"].as_str(), &prompt) {
            prompt_of.insert(uuid.to_string(), p.clone());
        }
        let usage = &v["message"]["usage"];
        if v["type"] != "assistant" || !usage.is_object() {
            continue;
        }
        let id = v["message"]["id"].as_str().unwrap().to_string();
        if !seen.insert(id) {
            continue;
        }
        let turn = out
            .entry(prompt.expect("every call descends from a prompt"))
            .or_default();
        turn.0 += usage["input_tokens"].as_u64().unwrap_or(0);
        turn.1 += usage["output_tokens"].as_u64().unwrap_or(0);
    }
    out
}

fn harnery(home: &Path, now: &str, args: &[&str]) -> std::process::Output {
    common::harnery(home)
        .env("HARNERY_RECORDS", "on")
        .env("HARNERY_NOW", now)
        .args(args)
        .output()
        .unwrap()
}

fn finalize(home: &Path, now: &str) {
    let out = harnery(home, now, &["finalize"]);
    assert!(out.status.success(), "{}", stderr(&out));
}

fn hook(home: &Path, line: &str, transcript: &Path) {
    let mut payload: Value = serde_json::from_str(line).unwrap();
    payload["transcript_path"] = Value::String(transcript.display().to_string());
    crate::common::hook(home, &["claude-code"], payload.to_string());
}

fn append(path: &Path, line: &str) {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    writeln!(f, "{line}").unwrap();
}

/// One step of a run: a hook signal or a transcript line.
#[derive(Clone, Copy)]
enum Step {
    Hook(usize),
    Line(usize),
}

/// Play `steps` (finalizing after each when `each`), then finalize once
/// more a minute after the transcript's last line; the per-turn input and
/// output tokens that `receipts`, the `usage.reported` events and the OTLP
/// turn spans give.
fn play(
    scenario: &str,
    steps: &[Step],
    each: bool,
    joins: bool,
) -> [BTreeMap<String, (u64, u64)>; 3] {
    let home = tempfile::tempdir().unwrap();
    let hooks =
        lines_of(&root().join(format!("tests/fixtures/claude-code/{scenario}/hooks.jsonl")));
    // Where Claude Code writes this session's transcript: only that shape
    // is followed.
    let session = serde_json::from_str::<Value>(&hooks[0]).unwrap()["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    let transcript = home
        .path()
        .join(format!("claude/projects/-tmp-proj/{session}.jsonl"));
    std::fs::create_dir_all(transcript.parent().unwrap()).unwrap();
    let record = lines_of(&root().join(format!(
        "tests/fixtures/records/claude-code/{scenario}.jsonl"
    )));
    let times: Vec<Option<i64>> = record
        .iter()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            v["timestamp"]
                .as_str()
                .and_then(harnery::clock::parse_rfc3339_ns)
        })
        .collect();
    let first = times.iter().flatten().min().copied().unwrap();
    let last = times.iter().flatten().max().copied().unwrap();
    // A finalize runs just after the newest line written so far (as a
    // cron every 0.3 s would), so a call read before its hook waits.
    let mut now = first;
    for step in steps {
        match *step {
            Step::Hook(i) => hook(home.path(), &hooks[i], &transcript),
            Step::Line(i) => {
                append(&transcript, &record[i]);
                now = now.max(times[i].unwrap_or(now));
            }
        }
        if each {
            finalize(home.path(), &harnery::clock::format_ns(now + 100_000_000));
        }
    }
    let end = harnery::clock::format_ns(last + 60_000_000_000);
    finalize(home.path(), &end);

    // No loss invented: no record problem, every record call joined (where
    // each call's hook came before its result, as it does in life).
    let out = harnery(home.path(), &end, &["export", "--format", "jsonl"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let events: Vec<Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let of = |ty: &'static str| events.iter().filter(move |e| e["type"] == ty);
    assert_eq!(of("record.problem").count(), 0);
    assert!(of("tool.recorded").count() > 0);
    for r in of("tool.recorded").filter(|_| joins) {
        assert!(r["payload"]["span_request_event_id"].is_string(), "{r}");
    }
    let mut from_events: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for u in of("usage.reported") {
        let turn = u["turn"]["turn_id"].as_str().expect("usage has a turn");
        let t = from_events.entry(turn.to_string()).or_default();
        t.0 += u["payload"]["input_tokens"].as_u64().unwrap_or(0);
        t.1 += u["payload"]["output_tokens"].as_u64().unwrap_or(0);
    }

    let session = events[0]["session"]["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    let out = harnery(home.path(), &end, &["receipts", &session, "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let receipts: Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut from_receipts = BTreeMap::new();
    for t in receipts["turns"].as_array().unwrap() {
        if let Some(n) = t["tokens"].as_u64() {
            from_receipts.insert(t["turn_id"].as_str().unwrap().to_string(), (n, 0));
        }
    }

    let out = harnery(home.path(), &end, &["export", "--format", "otlp"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let mut from_otlp = BTreeMap::new();
    for doc in stdout(&out).lines() {
        let doc: Value = serde_json::from_str(doc).unwrap();
        for rs in doc["resourceSpans"].as_array().into_iter().flatten() {
            for ss in rs["scopeSpans"].as_array().into_iter().flatten() {
                for span in ss["spans"].as_array().into_iter().flatten() {
                    let attr = |key: &str| {
                        span["attributes"]
                            .as_array()?
                            .iter()
                            .find(|a| a["key"] == key)
                            .map(|a| a["value"].clone())
                    };
                    let (Some(turn), Some(input), Some(output)) = (
                        attr("harnery.turn.id"),
                        attr("gen_ai.usage.input_tokens"),
                        attr("gen_ai.usage.output_tokens"),
                    ) else {
                        continue;
                    };
                    let int = |v: Value| -> u64 {
                        let i = &v["intValue"];
                        i.as_u64().or_else(|| i.as_str()?.parse().ok()).unwrap()
                    };
                    from_otlp.insert(
                        turn["stringValue"].as_str().unwrap().to_string(),
                        (int(input), int(output)),
                    );
                }
            }
        }
    }
    [from_events, from_receipts, from_otlp]
}

/// The orders a run is played in: one finalize at the end; hooks first,
/// then the record; the record first, then the hooks; and the agent's own
/// order (each hook after the record line it follows), each of the last
/// three with a finalize after every step.
fn check(scenario: &str, hook_after_line: &[usize]) {
    let hooks =
        lines_of(&root().join(format!("tests/fixtures/claude-code/{scenario}/hooks.jsonl")));
    let record = lines_of(&root().join(format!(
        "tests/fixtures/records/claude-code/{scenario}.jsonl"
    )));
    assert_eq!(hook_after_line.len(), hooks.len());
    let want = expected(&record);
    assert!(!want.is_empty());
    let receipts_want: BTreeMap<String, (u64, u64)> = want
        .iter()
        .map(|(k, (i, o))| (k.clone(), (i + o, 0)))
        .collect();
    let hooks_steps = (0..hooks.len()).map(Step::Hook);
    let lines_steps = (0..record.len()).map(Step::Line);
    let mut agent_order = Vec::new();
    for i in 0..record.len() {
        agent_order.push(Step::Line(i));
        for (h, &after) in hook_after_line.iter().enumerate() {
            if after == i {
                agent_order.push(Step::Hook(h));
            }
        }
    }
    // The record first is no order an agent writes in (a call's hook runs
    // before its result is written): its calls may go unjoined, but its
    // tokens are the same.
    let runs: [(&str, Vec<Step>, bool, bool); 4] = [
        (
            "once",
            hooks_steps.clone().chain(lines_steps.clone()).collect(),
            false,
            true,
        ),
        (
            "hooks first",
            hooks_steps.clone().chain(lines_steps.clone()).collect(),
            true,
            true,
        ),
        (
            "record first",
            lines_steps.chain(hooks_steps).collect(),
            true,
            false,
        ),
        ("agent order", agent_order, true, true),
    ];
    for (name, steps, each, joins) in runs {
        let [events, receipts, otlp] = play(scenario, &steps, each, joins);
        assert_eq!(events, want, "{scenario}, {name}: usage.reported by turn");
        assert_eq!(receipts, receipts_want, "{scenario}, {name}: receipts");
        assert_eq!(otlp, want, "{scenario}, {name}: OTLP turn spans");
    }
}

#[test]
fn basic_turn_tokens_equal_the_transcripts_in_every_interleaving() {
    // SessionStart and the prompt before the record's first line; the
    // rest after the line each follows (the call at line 21, its result
    // at 22, the answer at 27, the end at 30).
    check("basic", &[0, 0, 20, 21, 22, 23, 27, 28, 30]);
}

#[test]
fn resume_turn_tokens_equal_the_transcripts_in_every_interleaving() {
    check(
        "resume",
        &[0, 0, 18, 21, 22, 26, 27, 30, 31, 32, 35, 36, 37, 38, 39, 42],
    );
}
