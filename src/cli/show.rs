//! `harnery show <session>`: one session's timeline.

use super::{CmdResult, Outcome};
use crate::home::Home;
use crate::ledger::{Ledger, Timeline, format_time};
use std::io::Write;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Session id, or a unique prefix of one.
    pub session: String,
    /// Print the timeline as JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args) -> CmdResult {
    let ledger = Ledger::open_read(&Home::from_env()?)?;
    let session = ledger.resolve_session(&args.session)?;
    let timeline = ledger.timeline(&session)?;
    if args.json {
        writeln!(
            std::io::stdout(),
            "{}",
            serde_json::to_string_pretty(&timeline)?
        )?;
    } else {
        write!(std::io::stdout(), "{}", render(&timeline))?;
    }
    Ok(Outcome::Clean)
}

/// The human timeline: a header, then one line per entry with the time
/// since the session's first event.
pub fn render(t: &Timeline) -> String {
    let s = &t.summary;
    let mut out = format!(
        "session {} {}\n  {} .. {}  events {}  turns {}  spans: {} closed natively, {} recovered, {} open\n\n",
        s.session.adapter,
        s.session.session_id,
        format_time(s.first_unix_ns),
        format_time(s.last_unix_ns),
        s.events,
        s.turns,
        s.spans.closed_native,
        s.spans.recovered,
        s.spans.open
    );
    for e in &t.entries {
        let indent = match e.kind.as_str() {
            "session.started" | "session.ended" | "turn.started" | "turn.completed" => "",
            _ => "  ",
        };
        let agent = e
            .agent_id
            .as_deref()
            .map(|a| format!(" <{}>", short(a)))
            .unwrap_or_default();
        out.push_str(&format!(
            "{:>4} {:>10} {indent}{}{agent}\n",
            e.offset,
            format!("+{}.{:03}s", e.at_ms / 1000, e.at_ms % 1000),
            e.text
        ));
    }
    out
}

fn short(id: &str) -> &str {
    id.get(..12).unwrap_or(id)
}
