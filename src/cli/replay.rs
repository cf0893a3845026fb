//! `harnery replay <session>`: a session's events in offset order.

use super::{CmdResult, Outcome};
use crate::home::Home;
use crate::ledger::{Ledger, format_time};
use std::io::Write;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Session id, or a unique prefix of one.
    pub session: String,
    /// First offset to print (inclusive).
    #[arg(long)]
    pub from: Option<u64>,
    /// Last offset to print (inclusive).
    #[arg(long)]
    pub to: Option<u64>,
    /// Print each event as its stored JSON, one per line.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args) -> CmdResult {
    let ledger = Ledger::open_read(&Home::from_env()?)?;
    let session = ledger.resolve_session(&args.session)?;
    let events = ledger.session_events(&session)?;
    let (from, to) = window(args.from, args.to, events.len() as u64)?;
    for e in events.iter().filter(|e| e.offset >= from && e.offset <= to) {
        if args.json {
            writeln!(std::io::stdout(), "{}", serde_json::to_string(e)?)?;
        } else {
            writeln!(
                std::io::stdout(),
                "{:>5}  {}  {:<20} {}",
                e.offset,
                format_time(e.time_unix_ns),
                e.event_type().as_str(),
                e.id
            )?;
        }
    }
    Ok(Outcome::Clean)
}

/// Check a `[from, to]` window against a session of `len` events.
pub fn window(from: Option<u64>, to: Option<u64>, len: u64) -> Result<(u64, u64), String> {
    let last = len.checked_sub(1).ok_or("the session has no events")?;
    let (from, to) = (from.unwrap_or(0), to.unwrap_or(last));
    if from > last {
        return Err(format!(
            "--from {from} is past the session's last offset {last}"
        ));
    }
    if to > last {
        return Err(format!(
            "--to {to} is past the session's last offset {last}"
        ));
    }
    if from > to {
        return Err(format!("inverted window: --from {from} is after --to {to}"));
    }
    Ok((from, to))
}
