//! `harnery demo`: bundled real sessions of both agents, replayed through
//! the real hook binary into a temporary home, then finalized, validated,
//! verified and shown. Needs no agent installed and reads nothing outside
//! the binary: the fixtures are compiled in.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::{CmdResult, Outcome};
use harnery::home::Home;
use harnery::ledger::LedgerReader;
use harnery::spool::SpoolWriter;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Keep the temporary home instead of deleting it.
    #[arg(long)]
    pub keep: bool,
}

/// A Claude Code session with three file tools, and a Copilot session that
/// delegates to a subagent (whose hooks arrive under the agent id).
const CLAUDE: &str = include_str!("../../tests/fixtures/claude-code/file-tools/hooks.jsonl");
const COPILOT: &str = include_str!("../../tests/fixtures/copilot/subagent-task/hook-capture.jsonl");

/// One recorded hook call: argv after the binary name, and stdin.
struct HookCall {
    args: Vec<String>,
    stdin: Vec<u8>,
}

fn calls() -> Vec<HookCall> {
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

/// The hook binary next to this executable, if there is one.
fn sibling_hook() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let hook = exe.parent()?.join("harnery-hook");
    hook.is_file().then_some(hook)
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

fn write_in_process(home: &Home, call: &HookCall) -> Result<(), super::CmdError> {
    let writer = SpoolWriter::new(home.clone());
    writer.append(
        &call.args[0],
        call.args.get(1).map(String::as_str),
        &call.stdin,
        &[],
    )?;
    Ok(())
}

pub fn run(args: Args) -> CmdResult {
    let dir = std::env::temp_dir().join(format!("harnery-demo-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir)?;
    let result = demo(&dir);
    if args.keep {
        writeln!(
            std::io::stdout(),
            "\nthe demo home is kept at {}",
            dir.display()
        )?;
    } else {
        let _ = std::fs::remove_dir_all(&dir);
    }
    result
}

fn demo(dir: &Path) -> CmdResult {
    let home = Home::at(dir);
    let calls = calls();
    match sibling_hook() {
        Some(hook) => {
            writeln!(
                std::io::stdout(),
                "replaying {} recorded hook calls through {}",
                calls.len(),
                hook.display()
            )?;
            for call in &calls {
                run_hook(&hook, dir, call)?;
            }
        }
        None => {
            writeln!(
                std::io::stdout(),
                "harnery-hook was not found next to this binary; writing {} recorded signals with the in-process spool writer instead",
                calls.len()
            )?;
            for call in &calls {
                write_in_process(&home, call)?;
            }
        }
    }
    let mut opts = super::finalize::options(None)?;
    // The bundled sessions come without the agents' own records (their
    // hooks name files on the machine that captured them).
    opts.follow_records = false;
    let summary = harnery::finalize::Run::once(&home, &opts)?;
    write!(
        std::io::stdout(),
        "\n$ harnery finalize\n{}",
        super::run_report::render_summary(&summary)
    )?;
    let ledger = LedgerReader::open(&home)?;
    let (rows, problems) = ledger.verify().validate()?;
    let (_, breaks) = ledger.verify().chain()?;
    let (signals, misplaced) = ledger.raw().verify()?;
    writeln!(
        std::io::stdout(),
        "\n$ harnery validate\n{}",
        verdict(rows, problems.len(), "contract violations")
    )?;
    writeln!(
        std::io::stdout(),
        "\n$ harnery verify\n{}",
        verdict(rows, breaks.len(), "chain breaks")
    )?;
    writeln!(
        std::io::stdout(),
        "{}",
        verdict(signals, misplaced.len(), "raw signals out of place")
    )?;
    let sessions = ledger.sessions().list()?;
    write!(
        std::io::stdout(),
        "\n$ harnery sessions\n{}",
        super::sessions::table(
            &sessions,
            &harnery::report::stored_reasons::classify_summaries(&ledger, &sessions)?
        )
    )?;
    if let Some(s) = sessions
        .iter()
        .find(|s| s.session.adapter == harnery::contract::AdapterId::Copilot)
    {
        let short = &s.session.session_id[..8.min(s.session.session_id.len())];
        write!(
            std::io::stdout(),
            "\n$ harnery show {short}\n{}",
            super::show::render(&harnery::report::timeline::timeline(&ledger, &s.session)?)
        )?;
    }
    Ok(
        if problems.is_empty() && breaks.is_empty() && misplaced.is_empty() {
            Outcome::Clean
        } else {
            Outcome::Problems
        },
    )
}

fn verdict(rows: u64, found: usize, what: &str) -> String {
    if found == 0 {
        format!("ok: {rows} rows, no {what}")
    } else {
        format!("{found} {what} in {rows} rows")
    }
}
