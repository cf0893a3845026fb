//! Benchmark input: write N Claude Code signals over S sessions into a
//! home's intake spool with the in-process spool writer (no fsync per
//! record; the spool is input here, not what is measured).
//!
//! Usage: bench_spool <home> <signals> <sessions>
//!
//! Each session is SessionStart, then turns of UserPromptSubmit, eight
//! PreToolUse/PostToolUse pairs and Stop, cut to its share of the signals.
//! Payloads are the real `basic` fixture lines with fresh ids.

use harnery::clock::ClockSample;
use harnery::home::Home;
use harnery::spool::{Signal, SpoolWriter, WriterOptions};

const FIXTURE: &str = include_str!("../tests/fixtures/claude-code/basic/hooks.jsonl");
const FIXTURE_SESSION: &str = "82655d0f-45cd-404f-9e4e-e90fea255247";
const FIXTURE_PROMPT: &str = "c68551d6-9785-4cd4-9f63-669805f3927c";
const FIXTURE_CALL: &str = "toolu_01oOb0TT009RCjxYiOfGSjLDr5";

fn template(event: &str) -> &'static str {
    FIXTURE
        .lines()
        .find(|l| l.contains(&format!("\"hook_event_name\":\"{event}\"")))
        .unwrap_or_else(|| panic!("the fixture has a {event} line"))
}

/// The event names of one session of `n` signals, in order.
fn script(n: usize) -> Vec<&'static str> {
    let mut out = vec!["SessionStart"];
    while out.len() < n {
        out.push("UserPromptSubmit");
        for _ in 0..8 {
            out.push("PreToolUse");
            out.push("PostToolUse");
        }
        out.push("Stop");
    }
    out.truncate(n);
    out
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, home, signals, sessions] = &args[..] else {
        eprintln!("usage: bench_spool <home> <signals> <sessions>");
        std::process::exit(2);
    };
    let (signals, sessions): (usize, usize) = (signals.parse().unwrap(), sessions.parse().unwrap());
    let writer = SpoolWriter::with_options(
        Home::at(home),
        WriterOptions {
            sync: false,
            ..WriterOptions::default()
        },
    );
    let per = signals / sessions;
    // BENCH_SPOOL_BASE_NS moves the receive times (a second spool for a
    // home already drained: its records are new, not the same again).
    let base_ns: i64 = match std::env::var("BENCH_SPOOL_BASE_NS") {
        Ok(v) => v.parse().unwrap_or_else(|_| {
            eprintln!("BENCH_SPOOL_BASE_NS={v:?}: not a whole number of nanoseconds");
            std::process::exit(2);
        }),
        Err(_) => 1_796_000_000_000_000_000,
    };
    for s in 0..sessions {
        let sid = format!("bench-{s:06}-0000-4000-8000-000000000000");
        let mut turn = 0;
        let mut payloads = Vec::with_capacity(per);
        for (i, event) in script(per).into_iter().enumerate() {
            if event == "UserPromptSubmit" {
                turn += 1;
            }
            let text = template(event)
                .replace(FIXTURE_SESSION, &sid)
                .replace(FIXTURE_PROMPT, &format!("prompt-{s}-{turn}"))
                .replace(FIXTURE_CALL, &format!("toolu_{s}_{}", i / 2));
            payloads.push((event, text));
        }
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
    println!("wrote {} signals over {sessions} sessions", per * sessions);
}
