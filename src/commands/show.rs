//! `harnery show <session>`: one session's timeline.
//!
//! With `--epoch all` (or a genesis id) the session is shown whole: one
//! header over all its parts, then each part's entries in chain order with
//! a boundary line between them; times count from the session's first
//! event in any part.
//!
//! Entries a resume superseded are shown, marked `superseded` (a line
//! `── superseded by the resume at offset N ──` opens each such range;
//! `"superseded": true` in JSON), and left out of the summary's turn and
//! span counts unless `--include-superseded`. With `--at OFFSET` only the
//! entries around it, the one that holds it marked `>>`. Which entries and
//! marks is decided in [`harnery::report::show`]; the words are here.

use super::{CmdResult, EpochArg, Outcome, short};
use harnery::clock::format_time;
use harnery::home::Home;
use harnery::ledger::SessionSummary;
use harnery::report::epochs::{Epochs, boundary};
use harnery::report::show::{self, Around, Part, WholeJson, shifted, whole};
use harnery::report::timeline::{Timeline, TimelineEntry};
use std::io::Write;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Session id, or a unique prefix of one.
    pub session: String,
    /// Print the timeline as JSON.
    #[arg(long)]
    pub json: bool,
    /// Only the entries around this offset (a `harnery search` hit's), the
    /// entry that holds it marked `>>`.
    #[arg(long, value_name = "OFFSET")]
    pub at: Option<u64>,
    /// With --at: how many entries to show on each side.
    #[arg(long, value_name = "N", default_value_t = 5, requires = "at")]
    pub context: usize,
    /// Count the turns and spans a resume superseded in the summary too
    /// (their entries are shown, marked, either way).
    #[arg(long)]
    pub include_superseded: bool,
    #[command(flatten)]
    pub epoch: EpochArg,
}

pub fn run(args: Args) -> CmdResult {
    let home = Home::from_env()?;
    let epochs = Epochs::open(&home, &args.epoch.epoch)?;
    epochs.report_unreadable("show")?;
    let parts = show::parts(&epochs, &args.session, args.include_superseded)?;
    let mut out = harnery::terminal::stdout(args.json);
    if let Some(at) = args.at {
        write_around(&mut out, &Around::of(&parts, at, args.context)?, args.json)?;
    } else {
        write_whole(&mut out, &parts, &epochs, args.json)?;
    }
    let damaged = show::report_damaged_parts(&parts);
    out.flush()?;
    let set_aside = epochs.report_set_aside("show");
    Ok(Outcome::problems_if(damaged || set_aside))
}

fn write_whole(
    out: &mut dyn Write,
    parts: &[Part],
    epochs: &Epochs,
    json: bool,
) -> Result<(), super::CmdError> {
    match (epochs.tagged, json) {
        (false, true) => writeln!(out, "{}", serde_json::to_string_pretty(&parts[0].timeline)?)?,
        (false, false) => write!(out, "{}", render(&parts[0].timeline))?,
        (true, true) => writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&WholeJson::of(parts))?
        )?,
        (true, false) => write!(out, "{}", render_parts(parts))?,
    }
    Ok(())
}

/// `--at`: the header, then the entries around the offset, the hit `>>`.
fn write_around(out: &mut dyn Write, shown: &Around, json: bool) -> Result<(), super::CmdError> {
    if json {
        writeln!(out, "{}", serde_json::to_string_pretty(&shown.json())?)?;
        return Ok(());
    }
    write!(out, "{}", header(&shown.summary))?;
    for (i, (_, e)) in shown.entries.iter().enumerate() {
        let mark = if i == shown.hit { ">>" } else { "  " };
        write!(out, "{mark}{}", line(e))?;
    }
    Ok(())
}

/// The whole session: one header, the epochs it spans, each part's
/// entries with a boundary line between parts.
fn render_parts(parts: &[Part]) -> String {
    let summary = whole(parts);
    let mut out = header(&summary);
    let labels: Vec<&str> = parts.iter().map(|p| p.epoch.label.as_str()).collect();
    out.insert_str(
        out.len() - 1,
        &format!("  epochs: {}\n", labels.join(" → ")),
    );
    for (i, part) in parts.iter().enumerate() {
        if i > 0 {
            out.push_str(&format!("{}\n", boundary(parts[i - 1].epoch, part.epoch)));
        }
        out.push_str(&lines(shifted(part, summary.first_unix_ns)));
    }
    out
}

/// The human timeline: a header, then one line per entry with the time
/// since the session's first event.
pub fn render(t: &Timeline) -> String {
    let mut out = header(&t.summary);
    out.push_str(&lines(t.entries.iter().cloned()));
    out
}

/// One line per entry, a line opening each range a resume superseded.
fn lines(entries: impl Iterator<Item = TimelineEntry>) -> String {
    let mut out = String::new();
    let mut band = None;
    for e in entries {
        if e.superseded_by != band {
            band = e.superseded_by;
            if let Some(at) = band {
                out.push_str(&format!(
                    "                ── superseded by the resume at offset {at} ──\n"
                ));
            }
        }
        out.push_str(&line(&e));
    }
    out
}

fn header(s: &SessionSummary) -> String {
    let mut about = String::new();
    if let Some(title) = &s.title {
        about.push_str(&format!("  title: {title}\n"));
    }
    if let Some(project) = &s.project {
        about.push_str(&format!("  project: {project}\n"));
    }
    format!(
        "session {} {}\n{about}  {} .. {}  events {}  turns {}  spans: {} closed natively, {} recovered, {} open\n\n",
        s.session.adapter,
        s.session.session_id,
        format_time(s.first_unix_ns),
        format_time(s.last_unix_ns),
        s.events,
        s.turns,
        s.spans.closed_native,
        s.spans.recovered,
        s.spans.open
    )
}

fn line(e: &TimelineEntry) -> String {
    let indent = match e.kind.as_str() {
        "session.started" | "session.ended" | "turn.started" | "turn.completed" => "",
        _ => "  ",
    };
    let agent = e
        .agent_id
        .as_deref()
        .map(|a| format!(" <{}>", short(a)))
        .unwrap_or_default();
    let tokens = e
        .turn_tokens
        .map(|n| format!(" · {n} tokens"))
        .unwrap_or_default();
    let mark = if e.superseded { "  superseded" } else { "" };
    format!(
        "{:>4} {:>10} {indent}{}{agent}{tokens}{mark}\n",
        e.offset,
        format!("+{}.{:03}s", e.at_ms / 1000, e.at_ms % 1000),
        e.text
    )
}
