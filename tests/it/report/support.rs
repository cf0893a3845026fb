//! Shared helpers for the read-side integration tests: a temporary
//! HARNERY_HOME, the real `harnery` binary, and a reader for the records
//! `harnery end` / `harnery exec` left in the intake spool.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use assert_cmd::cargo::CommandCargoExt;
use harnery::home::Home;
use harnery::spool::{IntakeSpool, SpoolRecord, read_segment};

pub struct Sandbox {
    pub dir: tempfile::TempDir,
}

impl Sandbox {
    pub fn new() -> Sandbox {
        Sandbox {
            dir: tempfile::tempdir().expect("a temporary directory"),
        }
    }

    pub fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    /// `harnery <args>` with this home and a pinned clock.
    pub fn harnery(&self, args: &[&str]) -> std::process::Command {
        let mut cmd = std::process::Command::cargo_bin("harnery").expect("the harnery binary");
        cmd.args(args)
            .env("HARNERY_HOME", self.home())
            .env("HARNERY_NOW", "2026-11-30T00:00:00Z")
            .env("HARNERY_RECORDS", "off")
            .current_dir(self.dir.path());
        cmd
    }

    /// Deliver one signal through the real `harnery-hook`, as the agent
    /// would: a Claude Code payload, or a Copilot capture line (its event
    /// name and stdin).
    pub fn deliver(&self, agent: &str, line: &str) {
        let (args, stdin): (Vec<String>, String) = if agent == "copilot" {
            let v: serde_json::Value = serde_json::from_str(line).expect("capture line is JSON");
            let event = v["event"].as_str().expect("event name").to_string();
            let raw = v["stdin_raw"].as_str().unwrap_or("").to_string();
            (vec!["copilot".into(), event], raw)
        } else {
            (vec!["claude-code".into()], line.to_string())
        };
        let mut child = std::process::Command::cargo_bin("harnery-hook")
            .expect("the hook binary")
            .args(&args)
            .env("HARNERY_HOME", self.home())
            .stdin(std::process::Stdio::piped())
            .spawn()
            .expect("the hook runs");
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(stdin.as_bytes())
            .unwrap();
        assert!(child.wait().unwrap().success());
    }

    /// Start a session as its agent does (one session-start signal), so
    /// that `end` and `exec` find it.
    pub fn start(&self, agent: &str, id: &str) {
        let line = match agent {
            "copilot" => serde_json::json!({
                "event": "sessionStart",
                "stdin_raw": serde_json::json!({"sessionId": id, "timestamp": 1_795_997_711_500_i64,
                    "cwd": "/tmp", "source": "new"}).to_string(),
            }),
            _ => serde_json::json!({"hook_event_name": "SessionStart", "session_id": id,
                "source": "startup", "cwd": "/tmp"}),
        };
        self.deliver(agent, &line.to_string());
    }

    /// Every intact record in the intake spool, in file order per session.
    pub fn spooled(&self) -> Vec<SpoolRecord> {
        let spool = IntakeSpool::open(&Home::at(self.home()));
        let mut out = Vec::new();
        for session in spool.sessions().expect("listing the spool") {
            for file in session.files().expect("listing a session") {
                out.extend(read(&file.path));
            }
        }
        out
    }

    /// The JSON payloads of spooled records named `event`.
    pub fn payloads(&self, event: &str) -> Vec<serde_json::Value> {
        self.spooled()
            .into_iter()
            .filter(|r| r.envelope.event.as_deref() == Some(event))
            .map(|r| serde_json::from_slice(&r.payload).expect("harnery writes JSON"))
            .collect()
    }
}

fn read(path: &Path) -> Vec<SpoolRecord> {
    read_segment(path).expect("a readable segment").records
}
