//! `harnery audit [--json]`: each session's evidence class and reasons, for
//! the live epoch and every archived epoch (whose sessions left with open
//! spans are audit-only for good: nothing can close them there).
//!
//! Exits 0 even when sessions are audit-only: that is a classification the
//! command reports, not a problem it found. When this build cannot read an
//! archive's events, that is said on stderr and the archive's span-row facts
//! are still reported.

use std::collections::BTreeMap;
use std::io::Write;

use serde::Serialize;

use super::{CmdError, CmdResult, Outcome};
use crate::contract::{Event, SessionRef};
use crate::home::Home;
use crate::read::audit::{Classification, archived_reasons, classify_session};
use crate::read::source::{ArchivedEpoch, archived_epochs, load_all_or_none, load_events, names};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Only this session (its id or a unique prefix, or adapter/id).
    #[arg(long)]
    session: Option<String>,
    /// Print JSON lines, one session per line.
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
struct Row<'a> {
    /// `live`, or the genesis id of an archived epoch.
    epoch: &'a str,
    session: &'a SessionRef,
    #[serde(flatten)]
    classification: &'a Classification,
}

type Rows = BTreeMap<SessionRef, Classification>;

pub fn run(args: Args) -> CmdResult {
    let home = Home::from_env()?;
    let live = match args.session.as_deref() {
        Some(name) => load_events(&home, Some(name))?,
        None => load_all_or_none(&home)?,
    };
    let mut out = std::io::stdout().lock();
    write_rows(&mut out, "live", &classify_all(&live), &args)?;
    for archive in archived_epochs(&home)? {
        let rows = classify_archive(&archive);
        write_rows(&mut out, &archive.label, &rows, &args)?;
    }
    Ok(Outcome::Clean)
}

fn classify_all(events: &[Event]) -> Rows {
    crate::read::by_session(events)
        .into_iter()
        .map(|(session, group)| (session, classify_session(&group)))
        .collect()
}

fn classify_archive(archive: &ArchivedEpoch) -> Rows {
    let mut rows = match &archive.events {
        Ok(events) => classify_all(events),
        Err(err) => {
            eprintln!(
                "harnery audit: events of archived epoch {} unreadable here ({err}); span facts only",
                archive.label
            );
            Rows::new()
        }
    };
    for unfinished in &archive.unfinished {
        rows.entry(unfinished.session.clone())
            .or_insert_with(Classification::eligible)
            .add_reasons(archived_reasons(unfinished));
    }
    rows
}

fn write_rows(out: &mut impl Write, epoch: &str, rows: &Rows, args: &Args) -> Result<(), CmdError> {
    for (session, classification) in rows {
        let wanted = args.session.as_deref().is_none_or(|n| {
            epoch == "live" || names(n, session) || session.session_id.starts_with(n)
        });
        if !wanted {
            continue;
        }
        if args.json {
            let row = Row {
                epoch,
                session,
                classification,
            };
            writeln!(out, "{}", serde_json::to_string(&row)?)?;
        } else {
            writeln!(
                out,
                "{epoch:<10} {}/{}  {}  {}",
                session.adapter,
                session.session_id,
                classification.class,
                classification.reasons.join(" ")
            )?;
        }
    }
    Ok(())
}
