//! `harnery import [<agent>…]`: read the sessions the agents recorded
//! before harnery was installed into the ledger, as sessions of evidence
//! class `imported` (see `harnery::import`).

use super::{CmdResult, Outcome};
use harnery::home::Home;
use harnery::import::{ImportReport, parse_agent, plan, read};
use std::io::Write;

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Sessions are read from each agent's own record (Claude Code's \
    <config>/projects, Copilot's session-state, Codex's sessions, Qwen Code's chats, \
    OpenCode's opencode.db) where the agent keeps it in this environment \
    (CLAUDE_CONFIG_DIR, COPILOT_HOME, CODEX_HOME, QWEN_HOME, XDG_DATA_HOME). \
    An imported session is never eligible evidence: no hook saw it. \
    A rerun imports nothing twice; a session hooks already recorded is left alone."
)]
pub struct Args {
    /// The agents to import from (claude-code, copilot, codex, gemini-cli,
    /// qwen-code, opencode); default: every agent whose record directory exists.
    #[arg(value_parser = parse_agent)]
    pub agents: Vec<harnery::contract::AdapterId>,
    /// Say what would be imported (sessions and bytes per agent), and change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Only records last written at or after this time (RFC 3339).
    #[arg(long, value_parser = super::parse_instant)]
    pub since: Option<i64>,
    /// Print the summary as JSON.
    #[arg(long)]
    pub json: bool,
    /// "Now" for the time rules, RFC 3339 (default: HARNERY_NOW, else the clock).
    #[arg(long)]
    pub now: Option<String>,
}

/// `harnery import` with no argument (serve's first-start offer).
pub fn run_every_agent() -> CmdResult {
    run(Args {
        agents: Vec::new(),
        dry_run: false,
        since: None,
        json: false,
        now: None,
    })
}

pub fn run(args: Args) -> CmdResult {
    let home = Home::from_env()?;
    let mut finalize = super::finalize::options(args.now.as_deref())?;
    let plan = plan(&home, &args.agents, args.since)?;
    let report = if args.dry_run || plan.sessions() == 0 {
        plan.report(args.dry_run, None)
    } else {
        plan.spool(&home, &super::progress::bar("sessions", args.json))?;
        finalize.progress = super::progress::bar("events", args.json);
        finalize.progress.stage("import: reading the records");
        let run = read(&home, finalize)?;
        plan.report(false, Some(run))
    };
    let mut out = harnery::terminal::stdout(args.json);
    if args.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&report)?)?;
    } else {
        write!(out, "{}", text(&report))?;
    }
    Ok(Outcome::Clean)
}

/// The summary for a person: one line per agent, the refused records, and
/// what the finalize run that read them said.
fn text(report: &ImportReport) -> String {
    let mut s = String::new();
    if report.agents.is_empty() {
        s.push_str("no agent's record directory was found here; nothing to import\n");
        return s;
    }
    let verb = if report.dry_run {
        "would import"
    } else {
        "imported"
    };
    for a in &report.agents {
        s.push_str(&format!(
            "{:<12} {verb} {} session(s), {} of records ({} found in {}; {} already recorded{})\n",
            a.agent.as_str(),
            a.imported,
            bytes(a.bytes),
            a.found,
            a.records_dir,
            a.known,
            match a.older {
                0 => String::new(),
                n => format!("; {n} older than --since"),
            },
        ));
        if a.agent == harnery::contract::AdapterId::GeminiCli {
            s.push_str(
                "  Gemini CLI's record files name only the first 8 characters of a session id: \
                 not imported yet\n",
            );
        }
        for r in &a.refused {
            s.push_str(&format!(
                "  not imported: {} ({}): {}\n",
                r.session_id, r.path, r.reason
            ));
        }
    }
    match (&report.finalize, report.dry_run) {
        (_, true) => s.push_str("dry run: nothing was changed\n"),
        (Some(run), false) => {
            s.push_str(&format!(
                "{} session(s) imported, class imported (never eligible evidence)\n",
                report.sessions
            ));
            s.push_str(&run.summary.text());
        }
        (None, false) => s.push_str("nothing new to import\n"),
    }
    s
}

fn bytes(n: u64) -> String {
    match n {
        n if n >= 1 << 20 => format!("{:.1} MiB", n as f64 / (1 << 20) as f64),
        n if n >= 1 << 10 => format!("{:.1} KiB", n as f64 / (1 << 10) as f64),
        n => format!("{n} B"),
    }
}
