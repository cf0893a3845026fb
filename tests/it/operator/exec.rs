//! `harnery exec` through the real binary: stdio passes through, the exit
//! status is the child's, and the request is durable before the child runs.

use crate::report::support as readside_support;

use std::io::Write;
use std::process::Stdio;
use std::time::{Duration, Instant};

use readside_support::Sandbox;

const REQUESTED: &str = "harnery.command_requested";
const COMPLETED: &str = "harnery.command_completed";

fn exec(sb: &Sandbox, command: &[&str]) -> std::process::Command {
    if sb.spooled().is_empty() {
        sb.start("claude-code", "s-1");
    }
    let mut args = vec!["exec", "--session", "s-1", "--adapter", "claude-code", "--"];
    args.extend_from_slice(command);
    sb.harnery(&args)
}

#[test]
fn exit_status_and_stdio_pass_through_unchanged() {
    let sb = Sandbox::new();
    let mut child = exec(&sb, &["sh", "-c", "cat; echo out; echo err >&2; exit 7"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"in\n").unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(7));
    assert_eq!(out.stdout, b"in\nout\n");
    assert_eq!(out.stderr, b"err\n");
    let req = sb.payloads(REQUESTED);
    let done = sb.payloads(COMPLETED);
    assert_eq!(req.len(), 1);
    assert_eq!(req[0]["argv"][0], "sh");
    assert_eq!(done.len(), 1);
    assert_eq!(done[0]["exit_code"], 7);
    assert_eq!(done[0]["command_id"], req[0]["command_id"]);
    assert!(done[0]["duration_ms"].is_u64());
}

#[test]
fn a_signal_death_is_128_plus_the_signal_and_missing_programs_are_127() {
    let sb = Sandbox::new();
    let out = exec(&sb, &["sh", "-c", "kill -TERM $$"]).output().unwrap();
    assert_eq!(out.status.code(), Some(128 + 15));
    assert_eq!(sb.payloads(COMPLETED)[0]["signal"], 15);
    let out = exec(&sb, &["/nonexistent/program"]).output().unwrap();
    assert_eq!(out.status.code(), Some(127));
    assert_eq!(sb.payloads(REQUESTED).len(), 2);
}

#[test]
fn sigkill_of_exec_keeps_the_request() {
    let sb = Sandbox::new();
    let marker = sb.dir.path().join("child-started");
    let script = format!("touch {}; sleep 5", marker.display());
    let mut child = exec(&sb, &["sh", "-c", &script]).spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !marker.exists() {
        assert!(Instant::now() < deadline, "the child never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(sb.payloads(REQUESTED).len(), 1);
    assert!(sb.payloads(COMPLETED).is_empty());
}

#[test]
fn an_unknown_session_without_adapter_is_a_usage_error_and_runs_nothing() {
    let sb = Sandbox::new();
    let marker = sb.dir.path().join("ran");
    let script = format!("touch {}", marker.display());
    let out = sb
        .harnery(&["exec", "--session", "nobody", "--", "sh", "-c", &script])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(!marker.exists());
}

#[test]
fn end_writes_an_end_request_signal() {
    let sb = Sandbox::new();
    sb.start("copilot", "s-2");
    let out = sb
        .harnery(&["end", "s-2", "--adapter", "copilot", "--reason", "stuck"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ends = sb.payloads("harnery.end_requested");
    assert_eq!(ends, vec![serde_json::json!({"reason": "stuck"})]);
    let spooled = sb.spooled();
    let record = spooled
        .iter()
        .find(|r| r.envelope.event.as_deref() == Some("harnery.end_requested"))
        .expect("the end request");
    assert_eq!(record.envelope.received_ns, 1_795_996_800_000_000_000);
    assert_eq!(record.envelope.adapter, "copilot");
}
