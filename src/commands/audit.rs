//! `harnery audit [--json] [--session S] [--epoch E]`: each session's
//! evidence class and reasons, the session classified as a whole: every
//! reason any of its parts gives, and every reason an epoch advance's
//! recorded closure holds against it (so a live session closed in an
//! archive is audit-only in the live view too).
//!
//! The default reads the live epoch and says on stderr when archives
//! exist; `--session` finds a session only an archive holds as well.
//! `--epoch all` lists each session once, its `epoch` the last epoch it
//! appears in and `epochs` all of them.
//!
//! Exits 0 even when sessions are audit-only: that is a classification the
//! command reports, not a problem it found. An epoch that cannot be read is
//! a problem (exit 1): it is named on stderr, the others are still read,
//! and the sessions its recorded closure names are still reported.

use std::collections::BTreeMap;
use std::io::Write;

use serde::Serialize;

use super::{CmdError, CmdResult, EpochArg, Outcome};
use harnery::contract::SessionRef;
use harnery::epoch::EpochSelector;
use harnery::home::Home;
use harnery::ledger::GENESIS_FILE;
use harnery::ledger::LedgerReader;
use harnery::report::audit::Classification;
use harnery::report::epochs::{Epochs, OpenEpoch, archive_note, classify_whole_with};
use harnery::report::source::{Closed, SourceError, closed_sessions, names};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Only this session (its id or a unique prefix, or adapter/id).
    #[arg(long)]
    session: Option<String>,
    /// Print JSON lines, one session per line.
    #[arg(long)]
    json: bool,
    /// Count the ranges a resume superseded too (left out by default).
    #[arg(long)]
    include_superseded: bool,
    #[command(flatten)]
    epoch: EpochArg,
}

#[derive(Serialize)]
struct Row<'a> {
    /// `live`, or the genesis id of the last archived epoch it is in.
    epoch: &'a str,
    /// Every epoch the session is in, oldest first (not in the default view).
    #[serde(skip_serializing_if = "Option::is_none")]
    epochs: Option<&'a [String]>,
    session: &'a SessionRef,
    #[serde(flatten)]
    classification: &'a Classification,
}

/// One session's verdict and the epochs it was found in.
struct Verdict {
    epochs: Vec<String>,
    classification: Classification,
}

/// What one audit run read, and whether anything could not be read.
struct Audit {
    rows: BTreeMap<SessionRef, Verdict>,
    /// Epochs, or parts of them, that could not be read.
    failed: usize,
    include_superseded: bool,
}

pub fn run(args: Args) -> CmdResult {
    let home = Home::from_env()?;
    let closed = closed_sessions(&home)?;
    let mut epochs = open(&home, &args.epoch.epoch)?;
    let mut audit = Audit {
        rows: BTreeMap::new(),
        failed: epochs.unreadable.len(),
        include_superseded: args.include_superseded,
    };
    match &args.session {
        Some(name) => {
            let in_live = !epochs.tagged && epochs.session("audit", name).is_ok();
            if !epochs.tagged && !in_live {
                // Not in the live epoch: an archive may hold it.
                epochs = Epochs::open(&home, &EpochSelector::All)?;
                audit.failed = epochs.unreadable.len();
            }
            epochs.warn_unreadable("audit");
            one_session(&mut audit, &epochs, name, &closed)?;
        }
        None => {
            epochs.warn_unreadable("audit");
            every_session(&mut audit, &epochs, &closed);
        }
    }
    let tagged = epochs.tagged;
    write_rows(
        &mut harnery::terminal::stdout(args.json),
        &audit.rows,
        &args,
        tagged,
    )?;
    if !args.json
        && !tagged
        && let Some(note) = archive_note(&home)
    {
        harnery::terminal::warn(&note);
    }
    let set_aside = epochs.report_set_aside("audit");
    Ok(if audit.failed > 0 || set_aside {
        Outcome::Problems
    } else {
        Outcome::Clean
    })
}

/// The selected epochs; the default view of a home with no ledger yet is
/// empty rather than an error.
fn open(home: &Home, selector: &EpochSelector) -> Result<Epochs, SourceError> {
    let dir = LedgerReader::live_dir(home);
    let no_live = !dir.join(GENESIS_FILE).exists() && harnery::ledger::integrity::is_new(&dir)?;
    if *selector == EpochSelector::Live && no_live {
        return Ok(Epochs::none());
    }
    Epochs::open(home, selector)
}

fn one_session(
    audit: &mut Audit,
    epochs: &Epochs,
    name: &str,
    closed: &BTreeMap<SessionRef, Closed>,
) -> Result<(), SourceError> {
    match epochs.session("audit", name) {
        Ok(found) => classify(
            audit,
            &found.session,
            &found.parts,
            closed.get(&found.session),
        ),
        Err(SourceError::NoSuchSession(_)) => {
            // Only a recorded closure knows it (its archive is unreadable).
            let known = closed.iter().find(|(s, _)| names(name, s));
            let (session, c) = known.ok_or_else(|| SourceError::NoSuchSession(name.into()))?;
            closure_only(audit, session, c);
        }
        Err(e) => return Err(e),
    }
    Ok(())
}

fn every_session(audit: &mut Audit, epochs: &Epochs, closed: &BTreeMap<SessionRef, Closed>) {
    for (session, parts) in epochs.sessions("audit", &mut audit.failed) {
        let parts: Vec<&OpenEpoch> = parts.into_iter().map(|(e, _)| e).collect();
        classify(audit, &session, &parts, closed.get(&session));
    }
    if !epochs.tagged {
        return;
    }
    // A session only an unreadable archive holds is still known by the
    // closure the next epoch recorded for it.
    let selected: Vec<&str> = epochs
        .open
        .iter()
        .map(|e| e.genesis_id.as_str())
        .chain(epochs.unreadable.iter().map(|u| u.label.as_str()))
        .collect();
    for (session, c) in closed {
        let wanted = c.archives.iter().any(|a| selected.contains(&a.as_str()));
        if wanted && !audit.rows.contains_key(session) {
            closure_only(audit, session, c);
        }
    }
}

fn classify(
    audit: &mut Audit,
    session: &SessionRef,
    parts: &[&OpenEpoch],
    closed: Option<&Closed>,
) {
    let whole = classify_whole_with(
        "audit",
        session,
        parts,
        closed,
        &mut audit.failed,
        audit.include_superseded,
    );
    let verdict = Verdict {
        epochs: parts.iter().map(|e| e.label.clone()).collect(),
        classification: whole,
    };
    audit.rows.insert(session.clone(), verdict);
}

fn closure_only(audit: &mut Audit, session: &SessionRef, c: &Closed) {
    let mut classification = Classification::eligible();
    classification.add_reasons(c.reasons.clone());
    let verdict = Verdict {
        epochs: c.archives.clone(),
        classification,
    };
    audit.rows.insert(session.clone(), verdict);
}

fn write_rows(
    out: &mut impl Write,
    rows: &BTreeMap<SessionRef, Verdict>,
    args: &Args,
    tagged: bool,
) -> Result<(), CmdError> {
    for (session, verdict) in rows {
        let epoch = verdict.epochs.last().map_or("live", String::as_str);
        if args.json {
            let row = Row {
                epoch,
                epochs: (tagged || epoch != "live").then_some(verdict.epochs.as_slice()),
                session,
                classification: &verdict.classification,
            };
            writeln!(out, "{}", serde_json::to_string(&row)?)?;
        } else {
            writeln!(
                out,
                "{epoch:<10} {}/{}  {}  {}",
                session.adapter,
                session.session_id,
                verdict.classification.class,
                verdict.classification.reasons.join(" ")
            )?;
        }
    }
    Ok(())
}
