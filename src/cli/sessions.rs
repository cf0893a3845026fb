//! `harnery sessions`: one line per recorded session.

use super::{CmdResult, Outcome};
use crate::home::Home;
use crate::ledger::{Ledger, SessionSummary, format_time};
use crate::read::audit::Classification;
use crate::read::source::classify_summaries;
use std::io::Write;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print JSON lines instead of a table.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args) -> CmdResult {
    let ledger = Ledger::open_read(&Home::from_env()?)?;
    let sessions = ledger.sessions()?;
    let classes = classify_summaries(&ledger, &sessions)?;
    if args.json {
        for (s, class) in sessions.iter().zip(&classes) {
            let mut v = serde_json::to_value(s)?;
            v["eligibility"] = serde_json::to_value(class)?;
            writeln!(std::io::stdout(), "{v}")?;
        }
        return Ok(Outcome::Clean);
    }
    write!(std::io::stdout(), "{}", table(&sessions, &classes))?;
    Ok(Outcome::Clean)
}

/// The text table, one session per line.
pub fn table(sessions: &[SessionSummary], classes: &[Classification]) -> String {
    let mut out = format!(
        "{:<12} {:<38} {:<24} {:<24} {:>5} {:>5} {:>6} {:>9}  {}\n",
        "ADAPTER",
        "SESSION",
        "FIRST",
        "LAST",
        "TURNS",
        "OPEN",
        "NATIVE",
        "RECOVERED",
        "ELIGIBILITY"
    );
    for (s, class) in sessions.iter().zip(classes) {
        out.push_str(&format!(
            "{:<12} {:<38} {:<24} {:<24} {:>5} {:>5} {:>6} {:>9}  {}\n",
            s.session.adapter.as_str(),
            s.session.session_id,
            format_time(s.first_unix_ns),
            format_time(s.last_unix_ns),
            s.turns,
            s.spans.open,
            s.spans.closed_native,
            s.spans.recovered,
            class.class
        ));
    }
    out
}
