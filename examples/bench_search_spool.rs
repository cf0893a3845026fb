//! Benchmark input for `scripts/bench-search.sh`: N Claude Code signals over
//! S sessions, like `bench_spool`, but with text worth searching. Every
//! prompt, tool call (input and response) and stop is a real corpus line
//! (`tests/fixtures/claude-code/*/hooks.jsonl`) with fresh ids; each prompt,
//! command and output also gets words drawn from the corpus transcripts
//! (`tests/fixtures/records/claude-code/*.jsonl`: system prompts, messages,
//! tool results, paths), so no two events carry the same text.
//!
//! Usage: bench_search_spool <home> <signals> <sessions>   (run from the
//! repository root: it reads the fixtures from there)

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use harnery::clock::ClockSample;
use harnery::home::Home;
use harnery::spool::{Signal, SpoolWriter, WriterOptions};
use serde_json::Value;

/// The corpus as templates and a vocabulary.
struct Corpus {
    prompts: Vec<Value>,
    /// A PreToolUse line and the PostToolUse (or PostToolUseFailure) of
    /// the same call.
    calls: Vec<(Value, Value)>,
    start: Value,
    stop: Value,
    words: Vec<String>,
}

fn json_lines(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

fn files(dir: &str, pick: impl Fn(&Path) -> Option<std::path::PathBuf>) -> Vec<std::path::PathBuf> {
    let mut out: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{dir}: {e} (run from the repository root)"))
        .filter_map(|e| pick(&e.ok()?.path()))
        .collect();
    out.sort();
    out
}

impl Corpus {
    fn load() -> Corpus {
        let hooks = files("tests/fixtures/claude-code", |p| {
            Some(p.join("hooks.jsonl"))
        });
        let mut by_event: BTreeMap<String, Vec<Value>> = BTreeMap::new();
        for f in &hooks {
            for v in json_lines(f) {
                let event = v["hook_event_name"].as_str().unwrap_or("").to_string();
                by_event.entry(event).or_default().push(v);
            }
        }
        let mut posts = by_event["PostToolUse"].clone();
        posts.extend(
            by_event
                .get("PostToolUseFailure")
                .cloned()
                .unwrap_or_default(),
        );
        let calls = by_event["PreToolUse"]
            .iter()
            .filter_map(|pre| {
                let post = posts
                    .iter()
                    .find(|p| p["tool_use_id"] == pre["tool_use_id"])?;
                Some((pre.clone(), post.clone()))
            })
            .collect();
        Corpus {
            prompts: by_event["UserPromptSubmit"].clone(),
            calls,
            start: by_event["SessionStart"][0].clone(),
            stop: by_event["Stop"][0].clone(),
            words: vocabulary(),
        }
    }
}

/// Every distinct token of the transcripts' text, 3 to 40 characters.
fn vocabulary() -> Vec<String> {
    let mut words = BTreeSet::new();
    let records = files("tests/fixtures/records/claude-code", |p| {
        (p.extension()? == "jsonl").then(|| p.to_path_buf())
    });
    for f in records {
        for v in json_lines(&f) {
            collect(&v["message"]["content"], &mut words);
        }
    }
    words.into_iter().collect()
}

fn collect(v: &Value, out: &mut BTreeSet<String>) {
    match v {
        Value::String(s) => {
            for w in s.split_whitespace() {
                let w = w.trim_matches(|c: char| ",.;:()[]{}\"'`".contains(c));
                if (3..=40).contains(&w.chars().count()) && !w.contains('\\') {
                    out.insert(w.to_string());
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|i| collect(i, out)),
        Value::Object(map) => map.values().for_each(|i| collect(i, out)),
        _ => {}
    }
}

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn pick<'a, T>(&mut self, from: &'a [T]) -> &'a T {
        &from[(self.next() % from.len() as u64) as usize]
    }

    fn sentence(&mut self, words: &[String], n: usize) -> String {
        (0..n)
            .map(|_| self.pick(words).as_str())
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// One session's payloads: start, then turns of a prompt, eight calls and
/// a stop, cut to `n` signals.
fn session(c: &Corpus, rng: &mut Rng, s: usize, n: usize) -> Vec<(&'static str, Value)> {
    let sid = format!("bench-{s:06}-0000-4000-8000-000000000000");
    let own = |mut v: Value, turn: usize| {
        v["session_id"] = sid.clone().into();
        v["prompt_id"] = format!("prompt-{s}-{turn}").into();
        v
    };
    let mut out = vec![("SessionStart", own(c.start.clone(), 0))];
    let mut turn = 0;
    while out.len() < n {
        turn += 1;
        let mut prompt = own(rng.pick(&c.prompts).clone(), turn);
        let text = format!(
            "{} {}",
            prompt["prompt"].as_str().unwrap_or(""),
            rng.sentence(&c.words, 12)
        );
        prompt["prompt"] = text.into();
        out.push(("UserPromptSubmit", prompt));
        for k in 0..8 {
            let (pre, post) = call(c, rng, &format!("toolu_{s}_{turn}_{k}"));
            out.push(("PreToolUse", own(pre, turn)));
            let event = match post["hook_event_name"].as_str() {
                Some("PostToolUseFailure") => "PostToolUseFailure",
                _ => "PostToolUse",
            };
            out.push((event, own(post, turn)));
        }
        out.push(("Stop", own(c.stop.clone(), turn)));
    }
    out.truncate(n);
    out
}

/// A corpus call with a fresh id, its command given a few more words and
/// its response a few lines of corpus text.
fn call(c: &Corpus, rng: &mut Rng, id: &str) -> (Value, Value) {
    let (mut pre, mut post) = rng.pick(&c.calls).clone();
    if let Some(cmd) = pre["tool_input"]["command"].as_str() {
        let more = format!("{cmd} && echo {}", rng.sentence(&c.words, 3));
        pre["tool_input"]["command"] = more.into();
    }
    pre["tool_use_id"] = id.into();
    post["tool_use_id"] = id.into();
    post["tool_input"] = pre["tool_input"].clone();
    let lines = rng.sentence(&c.words, 40);
    if let Some(error) = post["error"].as_str() {
        post["error"] = format!("{error}\n{lines}").into();
        return (pre, post);
    }
    match &mut post["tool_response"] {
        Value::Object(map) if map.contains_key("stdout") => {
            let out = format!("{}\n{lines}", map["stdout"].as_str().unwrap_or(""));
            map.insert("stdout".into(), out.into());
        }
        other => *other = Value::String(format!("{}\n{lines}", other.as_str().unwrap_or(""))),
    }
    (pre, post)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, home, signals, sessions] = &args[..] else {
        eprintln!("usage: bench_search_spool <home> <signals> <sessions>");
        std::process::exit(2);
    };
    let (signals, sessions): (usize, usize) = (signals.parse().unwrap(), sessions.parse().unwrap());
    let corpus = Corpus::load();
    let writer = SpoolWriter::with_options(
        Home::at(home),
        WriterOptions {
            sync: false,
            ..WriterOptions::default()
        },
    );
    let per = signals / sessions;
    let base_ns: i64 = 1_796_000_000_000_000_000;
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for s in 0..sessions {
        let sid = format!("bench-{s:06}-0000-4000-8000-000000000000");
        let payloads: Vec<(&str, String)> = session(&corpus, &mut rng, s, per)
            .into_iter()
            .map(|(event, v)| (event, v.to_string()))
            .collect();
        let batch: Vec<Signal> = payloads
            .iter()
            .enumerate()
            .map(|(i, (event, text))| {
                let mut sig = Signal::new("claude-code", Some(event), Some(&sid), text.as_bytes());
                sig.received_ns = base_ns + (s * per + i) as i64 * 1_000;
                sig.clock = ClockSample::default();
                sig
            })
            .collect();
        writer.append_batch(&batch).expect("spool append");
    }
    println!(
        "wrote {} signals over {sessions} sessions ({} words of corpus vocabulary)",
        per * sessions,
        corpus.words.len()
    );
}
