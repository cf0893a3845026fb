//! `harnery audit [--json]`: each session's evidence class and reasons.
//!
//! Exits 0 even when sessions are audit-only: that is a classification the
//! command reports, not a problem it found.

use serde::Serialize;

use super::{CmdResult, Outcome};
use crate::contract::SessionRef;
use crate::home::Home;
use crate::read::audit::{Classification, classify_session};
use crate::read::source::load_events;

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
    session: &'a SessionRef,
    #[serde(flatten)]
    classification: &'a Classification,
}

pub fn run(args: Args) -> CmdResult {
    let home = Home::from_env()?;
    let events = load_events(&home, args.session.as_deref())?;
    for (session, group) in crate::read::by_session(&events) {
        let classification = classify_session(&group);
        if args.json {
            let row = Row {
                session: &session,
                classification: &classification,
            };
            println!("{}", serde_json::to_string(&row)?);
        } else {
            println!(
                "{}/{}  {}  {}",
                session.adapter,
                session.session_id,
                classification.class,
                classification.reasons.join(" ")
            );
        }
    }
    Ok(Outcome::Clean)
}
