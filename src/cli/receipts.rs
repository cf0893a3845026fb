//! `harnery receipts <session> [--json]`: per-turn latency receipts.

use std::io::Write;

use super::{CmdResult, Outcome};
use crate::home::Home;
use crate::read::receipts::{SessionReceipts, TurnReceipt, session_receipts};
use crate::read::source::{SourceError, load_events};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The session (its id or a unique prefix, or adapter/id).
    session: String,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args) -> CmdResult {
    let home = Home::from_env()?;
    let events = load_events(&home, Some(&args.session))?;
    if events.is_empty() {
        return Err(SourceError::NoSuchSession(args.session).into());
    }
    let refs: Vec<_> = events.iter().collect();
    let receipts = session_receipts(&refs);
    let mut out = std::io::stdout().lock();
    if args.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&receipts)?)?;
    } else {
        write_table(&mut out, &receipts)?;
    }
    Ok(Outcome::Clean)
}

fn write_table(out: &mut impl Write, receipts: &SessionReceipts) -> std::io::Result<()> {
    writeln!(
        out,
        "{:<38} {:>9} {:>9} {:>9} {:>7} {:>6}  notes",
        "turn", "wall_ms", "known_ms", "bound_ms", "bound%", "rank"
    )?;
    for turn in &receipts.turns {
        write_turn(out, turn)?;
    }
    if receipts.unattributed_spans > 0 {
        writeln!(
            out,
            "{} tool span(s) have no trustworthy turn and appear in no receipt",
            receipts.unattributed_spans
        )?;
    }
    Ok(())
}

fn write_turn(out: &mut impl Write, turn: &TurnReceipt) -> std::io::Result<()> {
    let tools = &turn.tools;
    let share = tools
        .upper_bound_share_pct
        .map_or("-".to_string(), |p| format!("{p:.1}"));
    let rank = if tools.eligible_for_ranking {
        "yes"
    } else {
        "no"
    };
    let mut notes: Vec<String> = turn.notes.iter().map(|n| n.to_string()).collect();
    notes.extend(
        tools
            .ineligible_because
            .iter()
            .map(|n| format!("ineligible:{n}")),
    );
    writeln!(
        out,
        "{:<38} {:>9} {:>9} {:>9} {:>7} {:>6}  {}",
        turn.turn_id,
        turn.wall_ms,
        tools.known_ms,
        tools.upper_bound_ms,
        share,
        rank,
        notes.join(" ")
    )
}
