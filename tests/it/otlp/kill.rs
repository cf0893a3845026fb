//! A push SIGKILLed at random moments, then run to the end: the receiver
//! holds every span of every session at least once, and its set of
//! (trace, span) ids is exactly the export's: a kill never loses a span
//! nor makes up one.

use crate::common;

use std::time::{Duration, Instant};

use super::push::{calls, exported, ids, summary};
use super::receiver::Receiver;
use common::*;

/// A few random numbers without a crate: the time's low bits, stirred.
fn random(seed: &mut u64) -> u64 {
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    *seed
}

#[test]
fn a_push_killed_at_random_moments_then_rerun_delivers_each_span_exactly_as_exported() {
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    for i in 0..8 {
        inject(home, &format!("b{i}"), calls(&format!("s-{i}"), 0, 10));
    }
    assert!(run(home, &["finalize"]).status.success());
    let want = exported(home);
    let receiver = Receiver::start();
    receiver.delay(Duration::from_millis(30));
    let url = receiver.url();
    let mut seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos() as u64
        | 1;
    for round in 0..6 {
        let before = receiver.requests();
        let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("harnery"))
            .env("HARNERY_HOME", home)
            .env("HARNERY_RECORDS", "off")
            .args([
                "otlp",
                "push",
                "--traces-endpoint",
                &url,
                "--spans-per-request",
                "3",
            ])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("harnery starts");
        let guard = Instant::now();
        if round == 0 {
            // Once for sure in the middle: after a request was taken.
            while receiver.requests() == before {
                assert!(
                    guard.elapsed() < Duration::from_secs(120),
                    "no request came"
                );
                std::thread::sleep(Duration::from_millis(5));
            }
        } else {
            std::thread::sleep(Duration::from_millis(random(&mut seed) % 400));
        }
        let _ = child.kill(); // SIGKILL
        child.wait().unwrap();
        assert!(guard.elapsed() < Duration::from_secs(120), "a hang");
    }
    let out = harnery(home)
        .args([
            "otlp",
            "push",
            "--traces-endpoint",
            &url,
            "--json",
            "--spans-per-request",
            "3",
        ])
        .output()
        .unwrap();
    let last = summary(&out);
    let got = receiver.spans();
    assert!(
        last["spans_sent"].as_u64().unwrap() < got.len() as u64,
        "the kills left work done"
    );
    assert_eq!(
        ids(&got),
        want.keys().cloned().collect(),
        "each span, none made up"
    );
    let again = summary(
        &harnery(home)
            .args(["otlp", "push", "--traces-endpoint", &url, "--json"])
            .output()
            .unwrap(),
    );
    assert_eq!(again["spans_sent"], 0, "after the kills, nothing is owed");
}
