//! `harnery import`: the sessions agents recorded before harnery was
//! installed, read from their own records (copies of the corpus captures
//! in `tests/fixtures/records/`) into the ledger as sessions of evidence
//! class `imported`.

mod damage;
mod fleet;
mod gemini;
mod hooks_later;
mod kill;
mod listed;
mod progress;
mod serve_offer;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Output;

use assert_cmd::Command;
use serde_json::Value;

use crate::common;

/// A user home holding agents' records (Claude Code's config dir, Copilot's
/// home), as a machine where harnery was just installed has them.
pub(crate) struct AgentDirs {
    pub user: tempfile::TempDir,
}

impl AgentDirs {
    pub(crate) fn new() -> AgentDirs {
        AgentDirs {
            user: tempfile::tempdir().expect("a temp dir"),
        }
    }

    /// Claude Code's projects folder.
    pub(crate) fn projects(&self) -> PathBuf {
        self.user.path().join(".claude/projects")
    }

    /// Copy the Claude Code record `tests/fixtures/records/claude-code/<name>.jsonl`
    /// where Claude Code writes it; its session id.
    pub(crate) fn claude_record(&self, name: &str) -> String {
        let bytes = std::fs::read(fixture(&format!("claude-code/{name}.jsonl"))).unwrap();
        let id = first_value(&bytes, "sessionId");
        self.write_claude(&id, &bytes);
        id
    }

    /// Write `bytes` as the record of Claude Code session `id`; its path.
    pub(crate) fn write_claude(&self, id: &str, bytes: &[u8]) -> PathBuf {
        let dir = self.projects().join("-work-project");
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("{id}.jsonl"));
        std::fs::write(&path, bytes).unwrap();
        path
    }

    /// Copy the Copilot record `tests/fixtures/records/copilot/<name>.events.jsonl`
    /// where Copilot writes it; its session id.
    pub(crate) fn copilot_record(&self, name: &str) -> String {
        let bytes = std::fs::read(fixture(&format!("copilot/{name}.events.jsonl"))).unwrap();
        let first: Value = serde_json::from_slice(bytes.split(|b| *b == b'\n').next().unwrap())
            .expect("a Copilot record starts with session.start");
        let id = first["data"]["sessionId"].as_str().unwrap().to_string();
        let dir = self.user.path().join(".copilot/session-state").join(&id);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("events.jsonl"), bytes).unwrap();
        id
    }

    /// `harnery args…` with this user home, the agents' records read.
    pub(crate) fn cmd(&self, home: &Path) -> Command {
        let mut cmd = common::harnery(home);
        common::without_installed_agents(&mut cmd, self.user.path());
        cmd.env_remove("HARNERY_RECORDS");
        cmd
    }

    /// [`AgentDirs::cmd`] as a plain process, for a test that kills it.
    pub(crate) fn process(&self, home: &Path) -> std::process::Command {
        let mut cmd = common::harnery_process(home);
        cmd.env_remove("HARNERY_RECORDS");
        common::without_installed_agents(&mut cmd, self.user.path());
        cmd
    }

    pub(crate) fn run(&self, home: &Path, args: &[&str]) -> Output {
        self.cmd(home).args(args).output().expect("harnery runs")
    }

    /// `harnery import args…`.
    pub(crate) fn import(&self, home: &Path, args: &[&str]) -> Output {
        let args: Vec<&str> = ["import"].iter().chain(args).copied().collect();
        self.run(home, &args)
    }

    /// `harnery import --json args…`, which must succeed, parsed.
    pub(crate) fn import_json(&self, home: &Path, args: &[&str]) -> Value {
        let args: Vec<&str> = ["--json"].iter().chain(args).copied().collect();
        let out = self.import(home, &args);
        assert!(out.status.success(), "{}", common::stderr(&out));
        serde_json::from_str(&common::stdout(&out)).expect("import --json is JSON")
    }
}

pub(crate) fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/records")
        .join(rel)
}

/// The first string value of `key` in a JSON-lines record.
fn first_value(bytes: &[u8], key: &str) -> String {
    bytes
        .split(|b| *b == b'\n')
        .filter_map(|l| serde_json::from_slice::<Value>(l).ok())
        .find_map(|v| v[key].as_str().map(str::to_string))
        .unwrap_or_else(|| panic!("the record names a {key}"))
}

/// `harnery sessions --json --epoch all`, by session id.
pub(crate) fn sessions_by_id(home: &Path) -> HashMap<String, Value> {
    let out = common::run(home, &["sessions", "--json", "--epoch", "all"]);
    assert!(out.status.success(), "{}", common::stderr(&out));
    common::stdout(&out)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .map(|v| (v["session"]["session_id"].as_str().unwrap().to_string(), v))
        .collect()
}

/// The ledger's events of type `ty`, from `export`.
pub(crate) fn events_of(home: &Path, ty: &str) -> Vec<Value> {
    let out = common::run(home, &["export"]);
    assert!(out.status.success(), "{}", common::stderr(&out));
    common::stdout(&out)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["type"] == ty)
        .collect()
}

/// `harnery verify` passes.
pub(crate) fn verified(home: &Path) {
    let out = common::run(home, &["verify"]);
    assert!(
        out.status.success(),
        "{}{}",
        common::stdout(&out),
        common::stderr(&out)
    );
}
