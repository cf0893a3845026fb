//! `harnery sessions`: one line per recorded session.
//!
//! A session's eligibility is that of the whole session: a live session an
//! epoch advance closed administratively in an archive is audit-only here
//! too. With `--epoch all` a session that continues across a boundary is
//! one line, its counts summed over its parts, with the epochs it spans.

use super::{CmdResult, EpochArg, Outcome};
use crate::home::Home;
use crate::ledger::{SessionSummary, format_time};
use crate::read::audit::Classification;
use crate::read::epochs::{Epochs, archive_note, classify_whole, combine};
use crate::read::source::closed_sessions;
use std::io::Write;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print JSON lines instead of a table.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub epoch: EpochArg,
}

/// One listed session: its combined summary, class, and the epochs it spans.
struct Listed {
    summary: SessionSummary,
    class: Classification,
    epochs: Vec<String>,
}

pub fn run(args: Args) -> CmdResult {
    let home = Home::from_env()?;
    let epochs = Epochs::open(&home, &args.epoch.epoch)?;
    epochs.report_unreadable("sessions")?;
    let listed = list(&home, &epochs)?;
    let mut out = std::io::stdout().lock();
    if args.json {
        for l in &listed {
            let mut v = serde_json::to_value(&l.summary)?;
            v["eligibility"] = serde_json::to_value(&l.class)?;
            if epochs.tagged {
                v["epochs"] = serde_json::to_value(&l.epochs)?;
            }
            writeln!(out, "{v}")?;
        }
        return Ok(Outcome::Clean);
    }
    let (summaries, classes): (Vec<_>, Vec<_>) = listed
        .iter()
        .map(|l| (l.summary.clone(), l.class.clone()))
        .unzip();
    let mut text = table(&summaries, &classes);
    if epochs.tagged {
        text = with_epochs(&text, &listed);
    } else if let Some(note) = archive_note(&home) {
        eprintln!("{note}");
    }
    write!(out, "{text}")?;
    Ok(Outcome::Clean)
}

fn list(home: &Home, epochs: &Epochs) -> Result<Vec<Listed>, crate::cli::CmdError> {
    let closed = closed_sessions(home)?;
    let mut out = Vec::new();
    // A listing reports what it could not read on stderr and lists the rest.
    let mut failed = 0;
    for (session, parts) in epochs.sessions("sessions", &mut failed) {
        let summaries: Vec<SessionSummary> = parts.iter().map(|(_, s)| s.clone()).collect();
        let part_epochs: Vec<_> = parts.iter().map(|(e, _)| *e).collect();
        let class = classify_whole(
            "sessions",
            &session,
            &part_epochs,
            closed.get(&session),
            &mut failed,
        );
        out.push(Listed {
            summary: combine(&summaries).expect("a listed session has a part"),
            class,
            epochs: part_epochs.iter().map(|e| e.label.clone()).collect(),
        });
    }
    Ok(out)
}

/// The width of a table line up to the end of its widest class
/// (`audit_only`), where the EPOCHS column starts.
const CLASS_END: usize = 142;

/// The table with an EPOCHS column: the epochs each session spans.
fn with_epochs(table: &str, listed: &[Listed]) -> String {
    let mut out = String::new();
    for (i, line) in table.lines().enumerate() {
        let extra = match i {
            0 => "EPOCHS".to_string(),
            n => listed[n - 1].epochs.join(","),
        };
        out.push_str(&format!("{line:<CLASS_END$}  {extra}\n"));
    }
    out
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
