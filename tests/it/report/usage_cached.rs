//! Copilot's cached tokens with either provider: the real client's
//! `inputTokens` are the whole prompt (cache reads and cache writes
//! included), so harnery's input, and the cost priced from it, are the
//! uncached part that the model server reported. Expectations come from
//! the record files (and the scripted server's own numbers), never from
//! harnery's output.

use std::path::Path;

use serde_json::Value;

use crate::common::{self, stderr};
use crate::report::usage_support::{lines_of, root, write};

/// The `basic-shell-anthropic` capture with its usage lines replaced by
/// those of a real run against a model that reports cached tokens
/// (`tests/fixtures/records/copilot-cache/`), finalized into `home`;
/// the record's lines.
fn cached_session(home: &Path, provider: &str) -> Vec<String> {
    let scenario = "basic-shell-anthropic";
    let base = lines_of(&root().join(format!(
        "tests/fixtures/records/copilot/{scenario}.events.jsonl"
    )));
    let real = lines_of(&root().join(format!(
        "tests/fixtures/records/copilot-cache/{provider}.usage.jsonl"
    )));
    let session = base
        .iter()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|v| v["type"] == "session.start")
        .unwrap()["data"]["sessionId"]
        .clone();
    let mut real = real.iter();
    let lines: Vec<String> = base
        .into_iter()
        .map(|l| {
            let mut v: Value = serde_json::from_str(&l).unwrap();
            if v["type"] != "session.usage_record" {
                return l;
            }
            let mut usage: Value = serde_json::from_str(real.next().unwrap()).unwrap();
            usage["data"]["usage"]["accounting"]["sourceSessionId"] = session.clone();
            v["data"] = usage["data"].take();
            v.to_string()
        })
        .collect();
    assert!(real.next().is_none(), "one real usage line for each");
    let copilot_home = home.join("copilot");
    let dir = copilot_home
        .join("session-state")
        .join(session.as_str().unwrap());
    let events = dir.join("events.jsonl");
    write(&events, &lines);
    common::copilot_hooks(home, scenario, &events);
    let out = common::harnery(home)
        .env("HARNERY_RECORDS", "on")
        .env("COPILOT_HOME", &copilot_home)
        .arg("finalize")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    lines
}

/// Each call's (uncached input, output, cache read, cache write), from
/// the record: the whole prompt less what was read from or written to
/// the cache.
fn calls(lines: &[String]) -> Vec<[u64; 4]> {
    lines
        .iter()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| v["type"] == "session.usage_record")
        .map(|v| {
            let u = &v["data"]["usage"];
            let n = |k: &str| u[k].as_u64().unwrap();
            let cached = n("cacheReadTokens") + n("cacheWriteTokens");
            [
                n("inputTokens") - cached,
                n("outputTokens"),
                n("cacheReadTokens"),
                n("cacheWriteTokens"),
            ]
        })
        .collect()
}

/// Anthropic's list prices for claude-sonnet-4, per million tokens.
const PRICES: &str =
    "[models.claude-sonnet-4]\ninput = 3.0\noutput = 15.0\ncache_read = 0.3\ncache_write = 3.75\n";

fn usage(home: &Path) -> Value {
    let prices = home.join("prices.toml");
    std::fs::write(&prices, PRICES).unwrap();
    let out = common::harnery(home)
        .args(["usage", "--json", "--prices"])
        .arg(&prices)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn tokens(v: &Value) -> [u64; 4] {
    let t = &v["tokens"];
    ["input", "output", "cache_read", "cache_write"].map(|k| t[k].as_u64().unwrap())
}

#[test]
fn copilot_with_the_anthropic_provider_counts_cache_writes_once() {
    let home = tempfile::tempdir().unwrap();
    let lines = cached_session(home.path(), "anthropic");
    let calls = calls(&lines);
    // What the model server said of its two calls: input_tokens 91 and 92.
    assert_eq!(calls.iter().map(|c| c[0]).collect::<Vec<_>>(), [91, 92]);
    let want = calls.iter().fold([0; 4], |mut t, c| {
        (0..4).for_each(|i| t[i] += c[i]);
        t
    });
    let v = usage(home.path());
    assert_eq!(tokens(&v["total"]), want, "{v:#}");
    // Each kind priced once, as ccusage prices the server's numbers.
    let priced = (want[0] as f64 * 3.0
        + want[1] as f64 * 15.0
        + want[2] as f64 * 0.3
        + want[3] as f64 * 3.75)
        / 1e6;
    let got = v["total"]["priced_cost"].as_f64().unwrap();
    assert!((got - priced).abs() < 1e-9, "priced {got}, want {priced}");
}

#[test]
fn copilot_with_the_openai_provider_counts_the_uncached_prompt() {
    let home = tempfile::tempdir().unwrap();
    let lines = cached_session(home.path(), "openai");
    let calls = calls(&lines);
    // prompt_tokens 6100, of which 5000 read from and 1000 written to the cache.
    assert_eq!(calls.iter().map(|c| c[0]).collect::<Vec<_>>(), [100, 100]);
    let v = usage(home.path());
    assert_eq!(tokens(&v["total"])[0], 200, "{v:#}");
    assert_eq!(tokens(&v["total"])[3], 2000, "{v:#}");
}
