//! A push draws its progress on a terminal and only there: under a real
//! pseudo-terminal (util-linux `script`) the rows read and the spans sent
//! so far; with stderr a pipe (cron, systemd), nothing but what went wrong.

use crate::common;

use std::process::Command;

use super::push::{push, summary, three_sessions};
use super::receiver::Receiver;
use common::*;

#[test]
fn a_terminal_sees_the_spans_sent_and_a_pipe_sees_nothing() {
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    three_sessions(home);
    let receiver = Receiver::start();
    let bin = assert_cmd::cargo::cargo_bin("harnery");
    let line = format!(
        "{} otlp push --traces-endpoint {} --spans-per-request 2",
        bin.display(),
        receiver.url()
    );
    let out = Command::new("script")
        .args(["-qec", &line, "/dev/null"])
        .env("HARNERY_HOME", home)
        .env("HARNERY_NOW", NOW)
        .env("TERM", "xterm")
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        .output()
        .expect("util-linux `script` runs");
    let shown = stdout(&out);
    assert!(out.status.success(), "{shown}");
    assert!(shown.contains("spans sent in"), "{shown:?}");
    assert!(shown.contains("rows ("), "{shown:?}");

    let piped = harnery(home)
        .args([
            "otlp",
            "push",
            "--traces-endpoint",
            &receiver.url(),
            "--resend",
        ])
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        .output()
        .unwrap();
    assert!(piped.status.success(), "{}", stderr(&piped));
    assert!(stdout(&piped).contains("sent"), "{}", stdout(&piped));
    assert_eq!(stderr(&piped), "", "nothing on a piped stderr");
    // --json: the summary alone, and no progress even on a terminal's
    // stderr (the JSON reader is a program).
    summary(&push(home, &receiver.url(), &[]));
}
