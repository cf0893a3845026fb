//! `harnery demo`'s sessions and steps: a Claude Code session with three
//! file tools and a Copilot session that delegates to a subagent (whose
//! hooks arrive under the agent id), compiled in, replayed through the real
//! hook binary beside the running executable (or, without one, through the
//! in-process spool writer) into a temporary home, then checked as
//! `validate` and `verify` check. Reads nothing outside the binary.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::contract::{AdapterId, SessionRef};
use crate::home::Home;
use crate::install::HOOK_BIN_NAME;
use crate::ledger::{LedgerError, LedgerReader, SessionSummary};
use crate::spool::{SpoolError, SpoolWriter};

const CLAUDE: &str = include_str!("../../../tests/fixtures/claude-code/file-tools/hooks.jsonl");
const COPILOT: &str =
    include_str!("../../../tests/fixtures/copilot/subagent-task/hook-capture.jsonl");

/// One recorded hook call: argv after the binary name, and stdin.
pub struct HookCall {
    args: Vec<String>,
    stdin: Vec<u8>,
}

/// Every bundled hook call, Claude Code's first.
pub fn calls() -> Vec<HookCall> {
    let mut out: Vec<HookCall> = CLAUDE
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| HookCall {
            args: vec!["claude-code".into()],
            stdin: l.as_bytes().to_vec(),
        })
        .collect();
    for line in COPILOT.lines().filter(|l| !l.trim().is_empty()) {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        let event = v["event"].as_str().unwrap_or_default().to_string();
        let stdin = v["stdin_raw"]
            .as_str()
            .unwrap_or_default()
            .as_bytes()
            .to_vec();
        out.push(HookCall {
            args: vec!["copilot".into(), event],
            stdin,
        });
    }
    out
}

/// A fresh directory for the demo's home under the system's temp dir.
pub fn temp_home() -> std::io::Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("harnery-demo-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

/// The hook binary next to this executable, if there is one.
pub fn sibling_hook() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let hook = exe.parent()?.join(HOOK_BIN_NAME);
    hook.is_file().then_some(hook)
}

/// Why a call could not be recorded.
#[derive(Debug, thiserror::Error)]
pub enum DemoError {
    #[error(transparent)]
    Io(#[from] std::io::Error),
    #[error(transparent)]
    Spool(#[from] SpoolError),
    #[error(transparent)]
    Ledger(#[from] LedgerError),
}

/// Record every call into the home at `dir`: through `hook`, one process a
/// call, or with the in-process spool writer.
pub fn record(dir: &Path, hook: Option<&Path>, calls: &[HookCall]) -> Result<(), DemoError> {
    for call in calls {
        match hook {
            Some(hook) => run_hook(hook, dir, call)?,
            None => write_in_process(&Home::at(dir), call)?,
        }
    }
    Ok(())
}

fn run_hook(hook: &Path, home: &Path, call: &HookCall) -> std::io::Result<()> {
    let mut child = Command::new(hook)
        .args(&call.args)
        .env("HARNERY_HOME", home)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()?;
    child
        .stdin
        .take()
        .expect("stdin is piped")
        .write_all(&call.stdin)?;
    child.wait()?;
    Ok(())
}

fn write_in_process(home: &Home, call: &HookCall) -> Result<(), SpoolError> {
    let writer = SpoolWriter::new(home.clone());
    writer.append(
        &call.args[0],
        call.args.get(1).map(String::as_str),
        &call.stdin,
        &[],
    )?;
    Ok(())
}

/// What `validate` and `verify` find in the demo's ledger.
pub struct Checks {
    pub rows: u64,
    pub violations: usize,
    pub breaks: usize,
    pub raw_signals: u64,
    pub misplaced: usize,
}

impl Checks {
    /// Validate the rows, recompute the chain, place every raw signal.
    pub fn of(ledger: &LedgerReader) -> Result<Checks, LedgerError> {
        let (rows, problems) = ledger.verify().validate()?;
        let (_, breaks) = ledger.verify().chain()?;
        let (raw_signals, misplaced) = ledger.raw().verify()?;
        Ok(Checks {
            rows,
            violations: problems.len(),
            breaks: breaks.len(),
            raw_signals,
            misplaced: misplaced.len(),
        })
    }

    pub fn clean(&self) -> bool {
        self.violations == 0 && self.breaks == 0 && self.misplaced == 0
    }

    /// What the demo prints for `validate` and `verify`, each after its
    /// command line.
    pub fn text(&self) -> String {
        format!(
            "\n$ harnery validate\n{}\n\n$ harnery verify\n{}\n{}\n",
            verdict(self.rows, self.violations, "contract violations"),
            verdict(self.rows, self.breaks, "chain breaks"),
            verdict(self.raw_signals, self.misplaced, "raw signals out of place")
        )
    }
}

/// `ok` and what was checked when nothing was found, else the count found.
fn verdict(rows: u64, found: usize, what: &str) -> String {
    if found == 0 {
        format!("ok: {rows} rows, no {what}")
    } else {
        format!("{found} {what} in {rows} rows")
    }
}

/// The session the demo shows: the Copilot one, and the short name
/// `show` is given for it.
pub fn shown(sessions: &[SessionSummary]) -> Option<(&SessionRef, &str)> {
    let s = sessions
        .iter()
        .find(|s| s.session.adapter == AdapterId::Copilot)?;
    let id = &s.session.session_id;
    Some((&s.session, &id[..8.min(id.len())]))
}
