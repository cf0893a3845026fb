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
use harnery::contract::Event;
use harnery::home::Home;
use harnery::report::epochs::{Epochs, boundary, report_damaged};
use harnery::restore::log::{self, SessionLog};
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
    let found = epochs.session("replay", &args.session)?;
    let windowed = args.from.is_some() || args.to.is_some();
    if windowed && found.parts.len() > 1 {
        return Err(format!(
            "--from/--to name offsets within one epoch, and this session spans {}; pick one with --epoch <genesis id>",
            found.parts.len()
        )
        .into());
    }
    // A window is read as its own range below; only a whole replay reads
    // the whole session here.
    let parts = found.read("replay", &epochs, |l, s| {
        let log = SessionLog::read_resumes(l, s)?;
        let (events, bad) = match windowed {
            true => Default::default(),
            false => l.events().session_events_lenient(s)?,
        };
        Ok((events, bad, log))
    })?;
    let mut out = harnery::terminal::stdout(args.json);
    let mut damaged = false;
    for (i, (epoch, (events, bad, log))) in parts.iter().enumerate() {
        damaged |= report_damaged("replay", &epoch.label, bad);
        if i > 0 && !args.json {
            writeln!(out, "{}", boundary(parts[i - 1].0, epoch))?;
        }
        let windowed_events;
        let shown = if windowed {
            let (from, to) = window(args.from, args.to, log.head)?;
            windowed_events = log::replay(
                &epoch.ledger,
                &found.session,
                from as i64,
                Some(to as i64 + 1),
            )?;
            &windowed_events
        } else {
            events
        };
        let tag = epochs.tagged.then_some(epoch.label.as_str());
        for (e, superseded) in log::live_events(log, shown, args.include_superseded) {
            let marks = Marks {
                epoch: tag,
                superseded,
                incarnation: (!log.resumes.is_empty()).then(|| log.incarnation_at(e.offset)),
            };
            writeln!(out, "{}", replay_line(e, args.json, &marks)?)?;
        }
    }
    out.flush()?;
    let set_aside = epochs.report_set_aside("replay");
    Ok(if damaged || set_aside {
        Outcome::Problems
    } else {
        Outcome::Clean
    })
}

/// What replay adds to an event's line.
struct Marks<'a> {
    epoch: Option<&'a str>,
    superseded: bool,
    incarnation: Option<u64>,
}

/// One event as replay prints it, with its marks.
fn replay_line(e: &Event, json: bool, marks: &Marks) -> serde_json::Result<String> {
    if !json {
        let mark = if marks.superseded { "  superseded" } else { "" };
        return Ok(format!(
            "{:>5}  {}  {:<20} {}{mark}",
            e.offset,
            format_time(e.time_unix_ns),
            e.event_type().as_str(),
            e.id
        ));
    }
    if marks.epoch.is_none() && !marks.superseded && marks.incarnation.is_none() {
        return serde_json::to_string(e);
    }
    let mut v = serde_json::to_value(e)?;
    if let Some(epoch) = marks.epoch {
        v["epoch"] = epoch.into();
    }
    if let Some(n) = marks.incarnation {
        v["incarnation"] = n.into();
    }
    if marks.superseded {
        v["superseded"] = true.into();
    }
    serde_json::to_string(&v)
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
