//! `harnery health [--json]`: loud conditions from the ledger and the spool.
//!
//! Exits 1 when any condition is present (the command found something to
//! look at), 0 when there is none or only notes (a record the agent
//! deleted after harnery read it). No condition is a failure of harnery.

use std::io::Write;

use super::{CmdError, CmdResult, Outcome};
use harnery::clock::format_ns;
use harnery::home::Home;
use harnery::ledger::integrity::RawFault;
use harnery::now::resolve_now;
use harnery::report::health::{Condition, spool_conditions};
use harnery::report::source::SourceError;

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
    let mut archive = None;
    let mut found = match harnery::report::source::live_or_none(&home) {
        Ok(Some(ledger)) => {
            archive = ledger.archive_size().ok();
            let mut found = harnery::report::session_rows::conditions(&ledger, now)?;
            found.extend(harnery::report::health::record_conditions(&ledger, now)?);
            found.extend(ledger.raw_archive_faults()?.into_iter().map(damaged));
            found.extend(harnery::report::health::set_aside_conditions(&ledger));
            found
        }
        Ok(None) => Vec::new(),
        Err(SourceError::Ledger(e)) => vec![damaged(e.damage().ok_or(e)?)],
        Err(e) => return Err(e.into()),
    };
    let stale_ns = (args.stale_after_hours * 3600.0 * 1e9) as i64;
    let facts = harnery::report::spool_facts::gather(&home)?;
    found.extend(spool_conditions(&facts, now, stale_ns));
    let mut out = harnery::terminal::stdout(args.json);
    for condition in &found {
        write_condition(&mut out, condition, args.json)?;
    }
    if found.is_empty() && !args.json {
        writeln!(out, "no conditions")?;
    }
    // The archive's size on disk beside its original size (`harnery
    // archive status --json` has the same figures as JSON).
    if let (Some(size), false) = (&archive, args.json) {
        super::archive::write_size(&mut out, size)?;
    }
    if found.is_empty() {
        return Ok(Outcome::Clean);
    }
    // Notes alone (a record the agent deleted after it was read) are not
    // something to fix.
    if found.iter().all(Condition::is_note) {
        return Ok(Outcome::Clean);
    }
    Ok(Outcome::Problems)
}

/// A live epoch file that is not what the ledger recorded: `home_damaged`,
/// the condition under which `harnery finalize` refuses to run.
fn damaged(fault: RawFault) -> Condition {
    Condition {
        code: "home_damaged".into(),
        session: None,
        at_unix_ns: None,
        detail: format!(
            "{} {}; {}",
            fault.path.display(),
            fault.what,
            harnery::ledger::integrity::recovery(&fault.path)
        ),
    }
}

fn write_condition(
    out: &mut impl Write,
    condition: &Condition,
    json: bool,
) -> Result<(), CmdError> {
    if json {
        let mut v = serde_json::to_value(condition)?;
        if condition.is_note() {
            v["note"] = serde_json::Value::Bool(true);
        }
        writeln!(out, "{v}")?;
        return Ok(());
    }
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
