//! `harnery epoch advance`: ship a contract change as a new ledger epoch.

use super::{CmdResult, Outcome};
use crate::epoch::advance;
use crate::home::Home;
use std::io::Write;

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub command: EpochCommand,
}

#[derive(Debug, clap::Subcommand)]
pub enum EpochCommand {
    /// Quiesce, archive, reinstall, carry (idempotent; resumes after a crash).
    Advance {
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
        /// "Now" for the carried finalize run, RFC 3339.
        #[arg(long)]
        now: Option<String>,
    },
}

pub fn run(args: Args) -> CmdResult {
    let EpochCommand::Advance { json, now } = args.command;
    let home = Home::from_env()?;
    let opts = super::finalize::options(now.as_deref())?;
    let report = advance(&home, &opts)?;
    if json {
        writeln!(
            std::io::stdout(),
            "{}",
            serde_json::to_string_pretty(&report)?
        )?;
        return Ok(Outcome::Clean);
    }
    if report.already_current {
        writeln!(
            std::io::stdout(),
            "the live epoch already speaks schema digest {}; nothing to advance",
            report.schema_digest
        )?;
        return Ok(Outcome::Clean);
    }
    writeln!(
        std::io::stdout(),
        "archived epoch {} ({} events, terminal-segment digest {}) at {}",
        report.archived_genesis_id.as_deref().unwrap_or("-"),
        report.archived_events,
        report.terminal_segment_digest.as_deref().unwrap_or("-"),
        report.archive.as_deref().unwrap_or("-")
    )?;
    writeln!(
        std::io::stdout(),
        "new epoch {} under schema digest {}; {} audit-only sessions left in archives",
        report.new_genesis_id.as_deref().unwrap_or("-"),
        report.schema_digest,
        report.audit_only_sessions
    )?;
    if let Some(c) = &report.carried {
        write!(std::io::stdout(), "carried: {}", super::finalize::render(c))?;
    }
    Ok(Outcome::Clean)
}
