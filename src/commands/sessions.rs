//! `harnery sessions`: one line per recorded session, newest first, with
//! `--since`, `--until`, `--adapter`, `--class` and `--limit` (in text and
//! in `--json` alike).
//!
//! A session's eligibility is that of the whole session: a live session an
//! epoch advance closed administratively in an archive is audit-only here
//! too. With `--epoch all` a session that continues across a boundary is
//! one line, its counts summed over its parts, with the epochs it spans.
//!
//! A resumed session's turns and spans leave out what its resumes
//! superseded; a session `restore --apply` started names its parent under
//! the table (`restored_from` in JSON).

use super::{CmdResult, EpochArg, Outcome};
use harnery::clock::format_time;
use harnery::contract::AdapterId;
use harnery::home::Home;
use harnery::ledger::SessionSummary;
use harnery::report::audit::{AuditClass, Classification};
use harnery::report::epochs::{Epochs, archive_note};
use harnery::report::session_list::{Listed, SessionFilter, list};
use std::io::Write;

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Sessions are listed newest first (by first event). The filters combine; \
    --limit applies after them."
)]
pub struct Args {
    /// Print JSON lines instead of a table.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub epoch: EpochArg,
    /// Only sessions with an event at or after this time (RFC 3339).
    #[arg(long, value_parser = super::parse_instant)]
    pub since: Option<i64>,
    /// Only sessions that started at or before this time (RFC 3339).
    #[arg(long, value_parser = super::parse_instant)]
    pub until: Option<i64>,
    /// Only this agent's sessions: claude-code, copilot, codex, gemini-cli, qwen-code or opencode.
    #[arg(long, value_parser = parse_adapter)]
    pub adapter: Option<AdapterId>,
    /// Only sessions of this evidence class.
    #[arg(long, value_enum)]
    pub class: Option<ClassFilter>,
    /// At most this many sessions (the newest).
    #[arg(long)]
    pub limit: Option<usize>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
#[value(rename_all = "snake_case")]
pub enum ClassFilter {
    Eligible,
    AuditOnly,
    /// Read by `harnery import` from the agent's own record.
    Imported,
}

fn parse_adapter(text: &str) -> Result<AdapterId, String> {
    AdapterId::parse(text).ok_or_else(|| {
        format!(
            "{text:?} is not an adapter: {}",
            harnery::contract::AdapterId::choices()
        )
    })
}

impl Args {
    /// The library's filter for these flags (every session from the
    /// newest, up to `--limit`).
    fn filter(&self) -> SessionFilter {
        SessionFilter {
            since: self.since,
            until: self.until,
            adapter: self.adapter,
            class: self.class.map(|c| match c {
                ClassFilter::Eligible => AuditClass::Eligible,
                ClassFilter::AuditOnly => AuditClass::AuditOnly,
                ClassFilter::Imported => AuditClass::Imported,
            }),
            skip: 0,
            limit: self.limit,
        }
    }
}

pub fn run(args: Args) -> CmdResult {
    let home = Home::from_env()?;
    let epochs = Epochs::open(&home, &args.epoch.epoch)?;
    epochs.report_unreadable("sessions")?;
    let listed = list(&home, &epochs, "sessions", &args.filter())?;
    let mut out = harnery::terminal::stdout(args.json);
    if args.json {
        for l in &listed {
            writeln!(out, "{}", l.to_json(epochs.tagged))?;
        }
        return Ok(Outcome::problems_if(epochs.report_set_aside("sessions")));
    }
    let (summaries, classes): (Vec<_>, Vec<_>) = listed
        .iter()
        .map(|l| (l.summary.clone(), l.class.clone()))
        .unzip();
    let mut text = table(&summaries, &classes);
    if epochs.tagged {
        text = with_epochs(&text, &listed);
    } else if let Some(note) = archive_note(&home) {
        harnery::terminal::warn(&note);
    }
    write!(out, "{text}")?;
    write!(out, "{}", removed_note(&listed))?;
    write!(out, "{}", restored_note(&listed))?;
    out.flush()?;
    // Exit 1 when rows were passed over, for they are a problem found.
    Ok(Outcome::problems_if(epochs.report_set_aside("sessions")))
}

/// A line under the table naming the sessions whose agent deleted its own
/// record after harnery read it (nothing when there are none).
fn removed_note(listed: &[Listed]) -> String {
    let removed: Vec<&str> = listed
        .iter()
        .filter(|l| l.record_removed())
        .map(|l| l.summary.session.session_id.as_str())
        .collect();
    if removed.is_empty() {
        return String::new();
    }
    format!(
        "record removed by the agent, history only in harnery: {}\n",
        removed.join(", ")
    )
}

/// A line under the table for each session `restore --apply` started
/// from another's checkpoint (nothing when there are none).
fn restored_note(listed: &[Listed]) -> String {
    listed
        .iter()
        .filter_map(|l| {
            let from = l.restored_from.as_ref()?;
            Some(format!(
                "{} was restored from {} at checkpoint {}\n",
                l.summary.session.session_id, from.session, from.checkpoint
            ))
        })
        .collect()
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
