//! `harnery view [<session>] [--epoch …] [-o FILE]`: a session as one
//! self-contained HTML page, or, without a session, an index of every
//! session (newest first) with a page for each beside it. A range a resume
//! superseded is drawn as a labelled band, its spans marked.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::{CmdError, CmdResult, EpochArg, Outcome};
use harnery::contract::{Event, SessionRef};
use harnery::home::Home;
use harnery::ledger::{LedgerError, LedgerReader, SpanRow};
use harnery::report::epochs::{
    Epochs, OpenEpoch, SessionParts, WholeSession, classify_whole, report_damaged,
};
use harnery::report::inherited::Inherited;
use harnery::report::source::closed_sessions;
use harnery::report::superseded::{mark_timeline, superseded};
use harnery::report::timeline::Timeline;
use harnery::restore::log::SessionLog;
use harnery::view::index::IndexRow;
use harnery::view::{PartRows, build, page, page_file, page_files};

#[derive(Debug, clap::Args)]
#[command(
    after_help = "The page needs no network: style, drawing and script are inline. \
    Without a session, FILE is the index (default index.html) and each session's page \
    is written beside it."
)]
pub struct Args {
    /// Session id, or a unique prefix of one; without it, every session.
    pub session: Option<String>,
    #[command(flatten)]
    pub epoch: EpochArg,
    /// Where to write the page: a path, or `-` for stdout (one session
    /// only). Default: `<session-prefix>.html`, or `index.html`.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// What one epoch's part of a session gives the view.
struct PartRead {
    timeline: Timeline,
    spans: Vec<SpanRow>,
    events: Vec<Event>,
}

pub fn run(args: Args) -> CmdResult {
    let home = Home::from_env()?;
    let epochs = Epochs::open(&home, &args.epoch.epoch)?;
    epochs.report_unreadable("view")?;
    match &args.session {
        Some(name) => one(&epochs, name, args.output.as_deref()),
        None => all(&home, &epochs, args.output.as_deref()),
    }
}

/// One session's page, to the file asked for (or its default) or stdout.
fn one(epochs: &Epochs, name: &str, output: Option<&Path>) -> CmdResult {
    let found = epochs.session("view", name)?;
    let (html, damaged) = session_page(epochs, &found)?;
    let to_stdout = output == Some(Path::new("-"));
    if to_stdout {
        std::io::stdout().lock().write_all(html.as_bytes())?;
    } else {
        let path = output
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from(page_file(&found.session.session_id)));
        write_file(&path, &html)?;
        writeln!(std::io::stdout(), "{}", path.display())?;
    }
    Ok(outcome(damaged))
}

/// The index of every session and each session's page beside it.
fn all(home: &Home, epochs: &Epochs, output: Option<&Path>) -> CmdResult {
    if output == Some(Path::new("-")) {
        return Err(
            "the index links to one page per session, so it needs a file \
                    (e.g. -o index.html); name a session to print its page to stdout"
                .into(),
        );
    }
    let index = output.unwrap_or(Path::new("index.html"));
    let dir = index.parent().unwrap_or(Path::new(""));
    let closed = closed_sessions(home)?;
    let mut failed = 0;
    let wholes = epochs.newest_first("view", &mut failed);
    let refs: Vec<SessionRef> = wholes.iter().map(|w| w.session.clone()).collect();
    let files = page_files(&refs);
    let mut rows = Vec::with_capacity(wholes.len());
    let mut damaged = false;
    for (whole, file) in wholes.into_iter().zip(files) {
        let class = classify_whole(
            "view",
            &whole.session,
            &whole.parts,
            closed.get(&whole.session),
            &mut failed,
        );
        let (html, d) = session_page(epochs, &parts_of(&whole))?;
        damaged |= d;
        write_file(&dir.join(&file), &html)?;
        // Counted as `sessions` counts: without superseded ranges.
        let mut summary = whole.summary;
        for part in &whole.parts {
            superseded(&part.ledger, &whole.session)?.leave_out(&mut summary);
        }
        rows.push(IndexRow {
            summary,
            eligibility: class.class.to_string(),
            epochs: whole.parts.iter().map(|e| e.label.clone()).collect(),
            file,
        });
    }
    write_file(index, &harnery::view::index::render(&rows, epochs.tagged))?;
    let pages = match rows.len() {
        1 => "1 session page".to_string(),
        n => format!("{n} session pages"),
    };
    writeln!(std::io::stdout(), "{} ({pages} beside it)", index.display())?;
    Ok(outcome(damaged || failed > 0))
}

fn parts_of<'a>(whole: &WholeSession<'a>) -> SessionParts<'a> {
    SessionParts {
        session: whole.session.clone(),
        parts: whole.parts.clone(),
    }
}

/// A session's page, and whether any of its rows could not be read (each
/// reported on stderr).
fn session_page(epochs: &Epochs, found: &SessionParts) -> Result<(String, bool), CmdError> {
    let read: Vec<(&OpenEpoch, PartRead)> = found.read("view", epochs, read_part)?;
    let mut damaged = false;
    for (epoch, part) in &read {
        damaged |= report_damaged("view", &epoch.label, &part.timeline.damaged_rows);
    }
    let parts: Vec<PartRows> = read
        .iter()
        .map(|(epoch, p)| PartRows {
            epoch: &epoch.label,
            timeline: &p.timeline,
            spans: &p.spans,
            events: &p.events,
        })
        .collect();
    Ok((page::render(&build(&parts, epochs.tagged)), damaged))
}

fn read_part(ledger: &LedgerReader, session: &SessionRef) -> Result<PartRead, LedgerError> {
    let (mut timeline, events) = harnery::report::timeline::with_events(ledger, session)?;
    // Superseded ranges are drawn marked and counted as `show` counts.
    let log = SessionLog::read_resumes(ledger, session)?;
    mark_timeline(ledger, &log, &mut timeline, false)?;
    // A restored session's copy of its parent's record is drawn as
    // inherited; its turns are the parent's.
    let inherited = Inherited::of(ledger, session)?;
    inherited.mark(&mut timeline, &events);
    let events = inherited.own(&events).into_iter().cloned().collect();
    Ok(PartRead {
        timeline,
        spans: ledger.spans().list(Some(session))?,
        // Rows that do not parse are named once, by the timeline.
        events,
    })
}

fn write_file(path: &Path, html: &str) -> Result<(), CmdError> {
    std::fs::write(path, html).map_err(|e| format!("writing {}: {e}", path.display()).into())
}

fn outcome(problems: bool) -> Outcome {
    if problems {
        Outcome::Problems
    } else {
        Outcome::Clean
    }
}
