//! `harnery validate`: every row against the contract, offsets, span
//! states, and the genesis digest against this build's.
//!
//! With `--epoch all` (or a genesis id) each epoch is checked on its own
//! and reported under its label. An archive validates under its own
//! contract generation, so its digest is never compared with this build's;
//! one written by a newer generation, or whose rows cannot be read, is a
//! problem of that epoch, and the others are still checked.

use std::io::Write;

use super::{CmdResult, EpochArg, Outcome};
use harnery::epoch::EpochSelector;
use harnery::home::Home;
use harnery::ledger::{ValidationProblem, binary_digest};
use harnery::report::epochs::warn;
use harnery::report::validate::{Checked, validate_epochs, validate_live};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub epoch: EpochArg,
}

pub fn run(args: Args) -> CmdResult {
    let home = Home::from_env()?;
    let progress = super::progress::bar("rows", args.json);
    progress.stage("validate");
    if args.epoch.epoch == EpochSelector::Live {
        let (rows, problems) = validate_live(&home, &progress)?;
        return print_live(rows, &problems, args.json);
    }
    let checked = validate_epochs(&home, &args.epoch.epoch, &progress)?;
    for c in &checked {
        if let Some(why) = &c.unreadable {
            warn("validate", &c.epoch, why);
        }
    }
    let ok = checked.iter().all(|c| c.ok);
    let mut out = harnery::terminal::stdout(args.json);
    if args.json {
        writeln!(out, "{}", serde_json::json!({"ok": ok, "epochs": checked}))?;
    } else {
        for c in &checked {
            write_text(&mut out, c)?;
        }
    }
    Ok(Outcome::problems_if(!ok))
}

/// The default: the live epoch, printed as it always has been.
fn print_live(rows: u64, problems: &[ValidationProblem], json: bool) -> CmdResult {
    let mut out = harnery::terminal::stdout(json);
    if json {
        let v =
            serde_json::json!({"rows": rows, "ok": problems.is_empty(), "violations": problems});
        writeln!(out, "{v}")?;
    } else {
        for p in problems {
            writeln!(out, "{}", problem_line(p))?;
        }
        if problems.is_empty() {
            writeln!(
                out,
                "ok: {rows} rows valid under schema digest {}",
                binary_digest()
            )?;
        }
    }
    Ok(Outcome::problems_if(!problems.is_empty()))
}
fn write_text(out: &mut impl Write, c: &Checked) -> std::io::Result<()> {
    let label = &c.epoch;
    if let Some(why) = &c.unreadable {
        writeln!(out, "{label}: unreadable: {why}")?;
    }
    for p in &c.violations {
        writeln!(out, "{label}: {}", problem_line(p))?;
    }
    if c.ok {
        writeln!(
            out,
            "{label}: ok: {} rows valid under schema digest {}",
            c.rows, c.digest
        )?;
    }
    Ok(())
}

fn problem_line(p: &ValidationProblem) -> String {
    format!("{}: {}: {}", p.event_id, p.rule, p.detail)
}
