//! `harnery replay <session>`: a session's events in offset order.
//!
//! With `--epoch all` (or a genesis id) every part of the session is
//! replayed in chain order, a boundary line between parts; each JSON line
//! gains `"epoch"`. Offsets start again in each epoch, so `--from`/`--to`
//! are only taken for a session read from one epoch; a window is read as
//! one SQL range (`log::replay`, half-open `[from, to + 1)`).
//!
//! Events a resume superseded (`session.resumed`) are left out unless
//! `--include-superseded`, which keeps them marked (`superseded` in text,
//! `"superseded": true` in JSON). JSON lines carry each event's
//! `incarnation` once the session was resumed.

use super::{CmdResult, EpochArg, Outcome};
use harnery::clock::format_time;
use harnery::home::Home;
use harnery::report::epochs::{Epochs, boundary};
use harnery::report::replay::{Replayed, replay};
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
    /// Keep events a resume superseded, marked.
    #[arg(long)]
    pub include_superseded: bool,
    #[command(flatten)]
    pub epoch: EpochArg,
}

pub fn run(args: Args) -> CmdResult {
    let home = Home::from_env()?;
    let epochs = Epochs::open(&home, &args.epoch.epoch)?;
    epochs.report_unreadable("replay")?;
    let (parts, damaged) = replay(&epochs, &args.session, args.from, args.to)?;
    let mut out = harnery::terminal::stdout(args.json);
    for (i, part) in parts.iter().enumerate() {
        if i > 0 && !args.json {
            writeln!(out, "{}", boundary(parts[i - 1].part, part.part))?;
        }
        let tag = epochs.tagged.then_some(part.part.label.as_str());
        for e in part.shown(args.include_superseded) {
            writeln!(out, "{}", replay_line(&e, args.json, tag)?)?;
        }
    }
    out.flush()?;
    let set_aside = epochs.report_set_aside("replay");
    Ok(Outcome::problems_if(damaged || set_aside))
}

/// One event as replay prints it, with its marks (and its epoch's label
/// when epochs are tagged).
fn replay_line(r: &Replayed, json: bool, epoch: Option<&str>) -> serde_json::Result<String> {
    let e = r.event;
    if !json {
        let mark = if r.superseded { "  superseded" } else { "" };
        return Ok(format!(
            "{:>5}  {}  {:<20} {}{mark}",
            e.offset,
            format_time(e.time_unix_ns),
            e.event_type().as_str(),
            e.id
        ));
    }
    if epoch.is_none() && !r.superseded && r.incarnation.is_none() {
        return serde_json::to_string(e);
    }
    let mut v = serde_json::to_value(e)?;
    if let Some(epoch) = epoch {
        v["epoch"] = epoch.into();
    }
    if let Some(n) = r.incarnation {
        v["incarnation"] = n.into();
    }
    if r.superseded {
        v["superseded"] = true.into();
    }
    serde_json::to_string(&v)
}
