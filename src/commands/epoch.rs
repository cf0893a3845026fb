//! `harnery epoch advance|status|list|verify`: ship a contract change as a
//! new ledger epoch, and see and check every epoch the home holds.

use std::io::Write;

use super::{CmdResult, Outcome};
use harnery::epoch::{self, AdvanceReport, EpochStatus, EpochVerdict, ListedEpoch};
use harnery::home::Home;

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
    /// The live epoch, this build's contract, an advance underway, what is undrained, the archives.
    Status {
        /// Print the status as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Every epoch, oldest first, the live one last.
    List {
        /// Print JSON lines, one epoch per line.
        #[arg(long)]
        json: bool,
    },
    /// Check archives (manifest, fence, read-only, chain) and the anchor links to the live epoch; exit 1 on any problem.
    Verify {
        /// Only this epoch (a genesis id or a unique prefix) and its links.
        genesis_id: Option<String>,
        /// Print the findings as JSON.
        #[arg(long)]
        json: bool,
    },
}

pub fn run(args: Args) -> CmdResult {
    let home = Home::from_env()?;
    match args.command {
        EpochCommand::Advance { json, now } => {
            let mut opts = super::finalize::options(now.as_deref())?;
            opts.progress = super::progress::bar("events", json);
            let report = epoch::advance(&home, &opts)?;
            print_advance(&report, json)?;
            Ok(Outcome::Clean)
        }
        EpochCommand::Status { json } => {
            print_status(&epoch::status(&home)?, json)?;
            Ok(Outcome::Clean)
        }
        EpochCommand::List { json } => {
            print_list(&home, json)?;
            Ok(Outcome::Clean)
        }
        EpochCommand::Verify { genesis_id, json } => {
            let verdict = epoch::verify(&home, genesis_id.as_deref())?;
            print_verdict(&verdict, json)?;
            Ok(if verdict.ok {
                Outcome::Clean
            } else {
                Outcome::Problems
            })
        }
    }
}

/// The advance report, as JSON or as the lines a person reads.
pub fn print_advance(report: &AdvanceReport, json: bool) -> std::io::Result<()> {
    let mut out = harnery::terminal::stdout(json);
    if json {
        return writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(report).expect("a report serializes")
        );
    }
    write!(out, "{}", report.text())
}

fn print_status(s: &EpochStatus, json: bool) -> std::io::Result<()> {
    let mut out = harnery::terminal::stdout(json);
    if json {
        return writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(s).expect("a status serializes")
        );
    }
    write!(out, "{}", s.text())
}

fn print_list(home: &Home, json: bool) -> Result<(), super::CmdError> {
    let mut out = harnery::terminal::stdout(json);
    if !json {
        write!(out, "{}", ListedEpoch::header())?;
    }
    for e in epoch::epochs(home)? {
        let e = ListedEpoch::of(home, &e);
        if json {
            writeln!(out, "{}", serde_json::to_string(&e)?)?;
        } else {
            write!(out, "{}", e.row())?;
        }
    }
    Ok(())
}

fn print_verdict(v: &EpochVerdict, json: bool) -> std::io::Result<()> {
    let mut out = harnery::terminal::stdout(json);
    if json {
        return writeln!(
            out,
            "{}",
            serde_json::to_string(v).expect("a verdict serializes")
        );
    }
    write!(out, "{}", v.text())
}
