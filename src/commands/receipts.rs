//! `harnery receipts <session> [--json]`: per-turn latency receipts, with
//! the model time and tokens the agent reported for each turn (`-` when it
//! reported none).
//!
//! With `--epoch all` (or a genesis id) each part of the session gets its
//! own receipts, in chain order: a turn never spans an epoch boundary (an
//! archive's open spans can never close), so parts are not merged. Text
//! prints a boundary line between the parts' tables; JSON is
//! `{"session", "parts": [{"epoch", "genesis_id", "turns", "unattributed_spans"}]}`.

use std::io::Write;

use super::{CmdResult, EpochArg, Outcome, or_dash};
use harnery::home::Home;
use harnery::report::epochs::{Epochs, boundary};
use harnery::report::receipts::{SessionReceipts, TurnReceipt};
use harnery::report::receipts_parts::receipts_across;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The session (its id or a unique prefix, or adapter/id).
    session: String,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
    /// Count the ranges a resume superseded too (left out by default).
    #[arg(long)]
    include_superseded: bool,
    #[command(flatten)]
    epoch: EpochArg,
}

pub fn run(args: Args) -> CmdResult {
    let home = Home::from_env()?;
    let epochs = Epochs::open(&home, &args.epoch.epoch)?;
    epochs.report_unreadable("receipts")?;
    let whole = receipts_across(&epochs, &args.session, args.include_superseded)?;
    let parts = &whole.parts;
    let mut out = harnery::terminal::stdout(args.json);
    if args.json && !epochs.tagged {
        writeln!(out, "{}", serde_json::to_string_pretty(&parts[0].receipts)?)?;
    } else if args.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&whole)?)?;
    } else {
        for (i, part) in parts.iter().enumerate() {
            if i > 0 {
                writeln!(out, "{}", boundary(parts[i - 1].part, part.part))?;
            }
            write_table(&mut out, &part.receipts)?;
        }
    }
    out.flush()?;
    let set_aside = epochs.report_set_aside("receipts");
    Ok(Outcome::problems_if(whole.damaged || set_aside))
}

fn write_table(out: &mut impl Write, receipts: &SessionReceipts) -> std::io::Result<()> {
    writeln!(
        out,
        "{:<38} {:>9} {:>9} {:>9} {:>7} {:>6} {:>9} {:>9}  notes",
        "turn", "wall_ms", "known_ms", "bound_ms", "bound%", "rank", "model_ms", "tokens"
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
        "{:<38} {:>9} {:>9} {:>9} {:>7} {:>6} {:>9} {:>9}  {}",
        turn.turn_id,
        turn.wall_ms,
        tools.known_ms,
        tools.upper_bound_ms,
        share,
        rank,
        or_dash(turn.model_ms),
        or_dash(turn.tokens),
        notes.join(" ")
    )
}
