//! `harnery finalize`: drain the spools into the ledger and say what
//! happened.

use super::{CmdResult, Outcome};
use harnery::finalize::{FinalizeOptions, FinalizeRun, finalize};
use harnery::home::Home;
use harnery::now::pinned_now;
use std::io::Write;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print the summary as JSON.
    #[arg(long)]
    pub json: bool,
    /// "Now" for the time rules, RFC 3339 (default: HARNERY_NOW, else the clock).
    #[arg(long)]
    pub now: Option<String>,
    /// Do not compress the raw archive after the run (by default a run
    /// converts what fits in `[archive] compact_budget_ms` of config.toml,
    /// default 1 s; `[archive] compact = false` turns it off for good).
    #[arg(long)]
    pub no_compact: bool,
}

/// Resolve "now" from `--now`, then `HARNERY_NOW`, then the wall clock.
pub fn options(now: Option<&str>) -> Result<FinalizeOptions, String> {
    let pinned = pinned_now(now).map_err(|bad| {
        format!(
            "--now / HARNERY_NOW {:?} is not an RFC 3339 time",
            bad.value
        )
    })?;
    Ok(FinalizeOptions::at(pinned))
}

pub fn run(args: Args) -> CmdResult {
    let home = Home::from_env()?;
    let mut opts = options(args.now.as_deref())?;
    opts.progress = super::progress::bar("events", args.json);
    opts.progress.stage("finalize");
    finalize(&home, opts, !args.no_compact, |run| {
        if args.json {
            writeln!(
                harnery::terminal::stdout(true),
                "{}",
                serde_json::to_string_pretty(run)?
            )?;
            Ok(())
        } else {
            write_run(run)
        }
    })?;
    Ok(Outcome::Clean)
}

fn write_run(run: &FinalizeRun) -> Result<(), super::CmdError> {
    match &run.completed_epoch_advance {
        // The advance's carry was this run's drain; its report says both.
        Some(report) => write!(
            harnery::terminal::stdout(false),
            "completed the epoch advance that was underway\n{}",
            report.done_text()
        )?,
        None => write!(harnery::terminal::stdout(false), "{}", run.summary.text())?,
    }
    Ok(())
}
