//! Every real hook payload in the corpus fixtures, fed through the real
//! `harnery-hook`, comes back byte-exact from the spool reader.

use crate::hook::support as hook_support;

use hook_support::*;

/// (args, payload) for every captured hook invocation.
fn corpus_calls() -> Vec<(Vec<String>, Vec<u8>)> {
    let mut calls = Vec::new();
    for dir in sorted_dirs(&fixtures().join("claude-code")) {
        let text = std::fs::read(dir.join("hooks.jsonl")).unwrap();
        for line in text.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
            calls.push((vec!["claude-code".to_owned()], line.to_vec()));
        }
    }
    for dir in sorted_dirs(&fixtures().join("copilot")) {
        let Ok(text) = std::fs::read_to_string(dir.join("hook-capture.jsonl")) else {
            continue;
        };
        for line in text.lines().filter(|l| !l.is_empty()) {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            let event = v["event"].as_str().unwrap().to_owned();
            let raw = v["stdin_raw"].as_str().unwrap().as_bytes().to_vec();
            calls.push((vec!["copilot".to_owned(), event], raw));
        }
    }
    calls
}

fn sorted_dirs(p: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(p)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    v.sort();
    v
}

#[test]
fn every_corpus_payload_round_trips_byte_exact() {
    let home = tempfile::tempdir().unwrap();
    let calls = corpus_calls();
    assert!(
        calls.len() > 300,
        "corpus fixtures missing: {}",
        calls.len()
    );
    let chunks: Vec<_> = calls
        .chunks(calls.len().div_ceil(4))
        .map(|c| c.to_vec())
        .collect();
    std::thread::scope(|s| {
        for chunk in chunks {
            let home = home.path();
            s.spawn(move || {
                for (args, payload) in chunk {
                    let args: Vec<&str> = args.iter().map(String::as_str).collect();
                    let out = run_hook(home, &args, &payload);
                    assert!(
                        out.stderr.is_empty(),
                        "stderr: {}",
                        String::from_utf8_lossy(&out.stderr)
                    );
                }
            });
        }
    });
    let (records, damage) = read_all(home.path());
    assert!(damage.is_empty(), "{damage:?}");
    let mut got: Vec<(String, Vec<u8>)> = records
        .iter()
        .map(|r| (r.envelope.adapter.clone(), r.payload.clone()))
        .collect();
    let mut want: Vec<(String, Vec<u8>)> = calls
        .iter()
        .map(|(a, p)| (a[0].clone(), p.clone()))
        .collect();
    got.sort();
    want.sort();
    assert_eq!(got.len(), want.len());
    assert!(got == want, "payloads differ");
    for r in &records {
        assert!(!r.envelope.truncated && !r.envelope.incomplete);
        assert!(
            r.envelope.session_id.is_some(),
            "no session id routed for {:?}",
            String::from_utf8_lossy(&r.payload)
        );
        assert!(r.envelope.event.is_some());
        assert_eq!(
            r.envelope.payload_blake3,
            blake3::hash(&r.payload).to_hex().to_string()
        );
    }
}
