//! `harnery audit [--json] [--session S] [--epoch E]`: each session's
//! evidence class and reasons, the session classified as a whole: every
//! reason any of its parts gives, and every reason an epoch advance's
//! recorded closure holds against it (so a live session closed in an
//! archive is audit-only in the live view too).
//!
//! The default reads the live epoch and says on stderr when archives
//! exist; `--session` finds a session only an archive holds as well.
//! `--epoch all` lists each session once, its `epoch` the last epoch it
//! appears in and `epochs` all of them.
//!
//! Exits 0 even when sessions are audit-only: that is a classification the
//! command reports, not a problem it found. An epoch that cannot be read is
//! a problem (exit 1): it is named on stderr, the others are still read,
//! and the sessions its recorded closure names are still reported.

use std::io::Write;

use super::{CmdError, CmdResult, EpochArg, Outcome};
use harnery::home::Home;
use harnery::report::audit_sessions::{AuditAsk, AuditRun, audit};
use harnery::report::epochs::archive_note;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Only this session (its id or a unique prefix, or adapter/id).
    #[arg(long)]
    session: Option<String>,
    /// Print JSON lines, one session per line.
    #[arg(long)]
    json: bool,
    /// Count the ranges a resume superseded too (left out by default).
    #[arg(long)]
    include_superseded: bool,
    #[command(flatten)]
    epoch: EpochArg,
}

pub fn run(args: Args) -> CmdResult {
    let home = Home::from_env()?;
    let ask = AuditAsk {
        session: args.session.as_deref(),
        selector: &args.epoch.epoch,
        include_superseded: args.include_superseded,
    };
    let run = audit(&home, &ask)?;
    write_rows(&mut harnery::terminal::stdout(args.json), &run, args.json)?;
    if !args.json
        && !run.epochs.tagged
        && let Some(note) = archive_note(&home)
    {
        harnery::terminal::warn(&note);
    }
    let set_aside = run.epochs.report_set_aside("audit");
    Ok(Outcome::problems_if(run.failed > 0 || set_aside))
}

fn write_rows(out: &mut impl Write, run: &AuditRun, json: bool) -> Result<(), CmdError> {
    for row in run.printed() {
        if json {
            writeln!(out, "{}", serde_json::to_string(&row)?)?;
        } else {
            writeln!(
                out,
                "{:<10} {}/{}  {}  {}",
                row.epoch,
                row.session.adapter,
                row.session.session_id,
                row.classification.class,
                row.classification.reasons.join(" ")
            )?;
        }
    }
    Ok(())
}
