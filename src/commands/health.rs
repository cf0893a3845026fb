//! `harnery health [--json]`: loud conditions from the ledger and the spool.
//!
//! Exits 1 when any condition is present (the command found something to
//! look at), 0 when there is none or only notes (a record the agent
//! deleted after harnery read it). No condition is a failure of harnery.

use std::io::Write;

use super::{CmdError, CmdResult, Outcome};
use harnery::clock::format_ns;
use harnery::home::Home;
use harnery::now::resolve_now;
use harnery::report::health::Condition;
use harnery::report::health_check::{gather, hours_to_ns};
use harnery::report::unhooked::AgentRecordDir;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print JSON lines, one condition per line.
    #[arg(long)]
    json: bool,
    /// A session spool holding data older than this many hours is stale.
    #[arg(long, default_value_t = 1.0)]
    stale_after_hours: f64,
    /// Judge ages at this time (RFC 3339 or unix ns); default HARNERY_NOW or the clock.
    #[arg(long)]
    now: Option<String>,
}

pub fn run(args: Args) -> CmdResult {
    let home = Home::from_env()?;
    let now = resolve_now(args.now.as_deref())?;
    let stale_ns = hours_to_ns(args.stale_after_hours);
    let agents = AgentRecordDir::from_env();
    let report = gather(&home, now, stale_ns, &agents)?;
    let found = &report.conditions;
    let mut out = harnery::terminal::stdout(args.json);
    for condition in found {
        match args.json {
            true => writeln!(out, "{}", report.condition_json(condition))?,
            false => write_condition(&mut out, condition)?,
        }
    }
    if found.is_empty() && !args.json {
        writeln!(out, "no conditions")?;
    }
    // The archive's size on disk beside its original size (`harnery
    // archive status --json` has the same figures as JSON).
    if let (Some(size), false) = (&report.archive, args.json) {
        super::archive::write_size(&mut out, size)?;
    }
    if !args.json {
        write_last_finalize(&mut out, report.finalize.last_finalize_unix_ns, now)?;
        write_schedule(&mut out, &home)?;
    }
    Ok(Outcome::problems_if(report.needs_attention()))
}

fn write_condition(out: &mut impl Write, condition: &Condition) -> Result<(), CmdError> {
    let session = condition.session.as_ref().map_or("-".to_string(), |s| {
        format!("{}/{}", s.adapter, s.session_id)
    });
    let at = condition.at_unix_ns.map_or("-".to_string(), format_ns);
    writeln!(
        out,
        "{:<22} {session}  {at}  {}",
        condition.code, condition.detail
    )?;
    Ok(())
}

/// When `finalize` last ran (recorded by each run since this version).
fn write_last_finalize(out: &mut impl Write, last: Option<i64>, now: i64) -> Result<(), CmdError> {
    match last {
        Some(t) => writeln!(
            out,
            "last finalize: {} ({} ago)",
            format_ns(t),
            harnery::report::health::human_age(now - t)
        )?,
        None => writeln!(out, "last finalize: none recorded")?,
    }
    Ok(())
}

/// Which schedule runs `finalize` for this home, as far as a cheap look
/// tells (the timer's unit file, else harnery's crontab line).
fn write_schedule(out: &mut impl Write, home: &Home) -> Result<(), CmdError> {
    use harnery::install::schedule::{Installed, installed};
    let Ok(user) = harnery::home::user_dir() else {
        return Ok(());
    };
    match installed(home.root(), &user) {
        Installed::Systemd(timer) => {
            writeln!(out, "schedule: systemd user timer {}", timer.display())?
        }
        Installed::Cron => writeln!(out, "schedule: harnery's crontab line")?,
        Installed::None => writeln!(
            out,
            "schedule: none found (`harnery install schedule` sets one up)"
        )?,
    }
    Ok(())
}
