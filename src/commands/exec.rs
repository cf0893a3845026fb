//! `harnery exec --session <id> [--adapter A] -- <command> [args...]`.
//!
//! Exits with the child's status unchanged (its code, or 128 + signal),
//! which is why this subcommand ends the process itself instead of mapping
//! an outcome; harnery's own errors before the child starts exit 2.

use super::CmdResult;
use harnery::home::Home;
use harnery::now::resolve_now;
use harnery::operator::command;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The agent session the command belongs to: its id, a unique prefix, or adapter/id.
    #[arg(long)]
    session: String,
    /// claude-code, copilot, codex, gemini-cli, qwen-code or opencode; found from the spool or ledger when omitted.
    #[arg(long)]
    adapter: Option<String>,
    /// Pin the request time (RFC 3339 or unix ns); default HARNERY_NOW or the clock.
    #[arg(long)]
    now: Option<String>,
    /// The command and its arguments, after `--`.
    #[arg(last = true, required = true)]
    command: Vec<String>,
}

pub fn run(args: Args) -> CmdResult {
    let home = Home::from_env()?;
    let target = harnery::operator::Target::find(&home, &args.session, args.adapter.as_deref())?;
    let now = resolve_now(args.now.as_deref())?;
    let status = command::run(&target, &args.command, now)?;
    std::process::exit(status)
}
