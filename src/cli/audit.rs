//! `harnery audit [--json]`: each session's evidence class and reasons, for
//! the live epoch and every archived epoch (whose sessions left with open
//! spans are audit-only for good: nothing can close them there).
//!
//! Exits 0 even when sessions are audit-only: that is a classification the
//! command reports, not a problem it found. An archived epoch this build
//! cannot read is reported on stderr and skipped.

use std::io::Write;

use serde::Serialize;

use super::{CmdResult, Outcome};
use crate::contract::{Event, SessionRef};
use crate::home::Home;
use crate::read::audit::{Classification, classify_session};
use crate::read::source::{archived_epochs, load_all_or_none, load_events, names};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Only this session (its id, or adapter/id).
    #[arg(long)]
    session: Option<String>,
    /// Print JSON lines, one session per line.
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
struct Row<'a> {
    epoch: &'a str,
    session: &'a SessionRef,
    #[serde(flatten)]
    classification: &'a Classification,
}

pub fn run(args: Args) -> CmdResult {
    let home = Home::from_env()?;
    let live = match args.session.as_deref() {
        Some(name) => load_events(&home, Some(name))?,
        None => load_all_or_none(&home)?,
    };
    report("live", &live, &args)?;
    for archive in archived_epochs(&home) {
        let label = archive
            .dir
            .file_name()
            .map_or("archive".into(), |n| n.to_string_lossy().into_owned());
        match archive.events {
            Ok(events) => report(&label, &events, &args)?,
            Err(err) => eprintln!("harnery audit: archived epoch {label} skipped: {err}"),
        }
    }
    Ok(Outcome::Clean)
}

fn report(epoch: &str, events: &[Event], args: &Args) -> Result<(), super::CmdError> {
    let mut out = std::io::stdout().lock();
    for (session, group) in crate::read::by_session(events) {
        if args.session.as_deref().is_some_and(|n| !names(n, &session)) && epoch != "live" {
            continue;
        }
        let classification = classify_session(&group);
        if args.json {
            let row = Row {
                epoch,
                session: &session,
                classification: &classification,
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
