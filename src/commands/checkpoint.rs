//! `harnery checkpoint <session> [--id ID] [--commit SHA] [--effect
//! KIND:REF]…` records a checkpoint; `harnery checkpoints <session>
//! [--json] [--latest | --id ID]` lists them.
//!
//! The request (`harnery::restore::checkpoint`) goes through the spool as
//! a `harnery.checkpoint` signal, so it lands in order with the session's
//! own signals and pins the offset the session is at when `finalize`
//! applies it. The first checkpoint recorded under an id stands; a repeat
//! is noted as a health condition.

use std::io::Write;

use super::{CmdResult, Outcome};
use harnery::agents::harnery::OperatorEffect;
use harnery::clock::format_ns;
use harnery::contract::Observation;
use harnery::home::Home;
use harnery::now::resolve_now;
use harnery::operator;
use harnery::restore::checkpoint::{self, parse_effect};
use harnery::restore::log::{Checkpoint, SessionLog};
use harnery::restore::{self};

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Exit codes: 0 requested; 2 unknown or ambiguous session, unknown adapter, bad --effect or --id, or I/O error."
)]
pub struct Args {
    /// The session to checkpoint: its id, a unique prefix, or adapter/id.
    session: String,
    /// The checkpoint's id [default: cp-<request time in unix ns>]. The
    /// first checkpoint recorded under an id is the one that counts.
    #[arg(long)]
    id: Option<String>,
    /// The commit the checkpoint pins [default: the head commit the agent's
    /// record named, else unknown].
    #[arg(long, value_name = "SHA")]
    commit: Option<String>,
    /// An effect the session had that a restore cannot undo, as KIND:REF
    /// (repeatable), e.g. `deploy:prod-42`.
    #[arg(long, value_name = "KIND:REF", value_parser = parse_effect)]
    effect: Vec<OperatorEffect>,
    /// claude-code, copilot, codex, gemini-cli, qwen-code or opencode; found from the spool or ledger when omitted.
    #[arg(long)]
    adapter: Option<String>,
    /// Pin the request time (RFC 3339 or unix ns); default HARNERY_NOW or the clock.
    #[arg(long)]
    now: Option<String>,
}

#[derive(Debug, clap::Args)]
#[command(after_help = "Exit codes: 0 listed; 2 unknown session or checkpoint, or I/O error.")]
pub struct ListArgs {
    /// Session id, or a unique prefix of one.
    session: String,
    /// Print JSON.
    #[arg(long)]
    json: bool,
    /// Only the latest valid checkpoint.
    #[arg(long, conflicts_with = "id")]
    latest: bool,
    /// Only the checkpoint with this id.
    #[arg(long)]
    id: Option<String>,
    #[command(flatten)]
    epoch: super::EpochArg,
}

pub fn run(args: Args) -> CmdResult {
    let home = Home::from_env()?;
    let target = super::operator_target(&home, &args.session, args.adapter.as_deref())?;
    let now = resolve_now(args.now.as_deref())?;
    let (commit, effects) = (args.commit.clone(), args.effect.clone());
    let (payload, receipt) =
        checkpoint::request(&target, args.id.as_deref(), commit, effects, now)?;
    let adapter = target.adapter;
    if let Some(warning) = operator::dead_letter_warning(&receipt) {
        harnery::terminal::warn(&format!("harnery checkpoint: {warning}"));
    }
    writeln!(
        harnery::terminal::stdout(false),
        "checkpoint {} requested for {adapter}/{}; it is pinned at the next `harnery finalize`",
        payload.checkpoint_id,
        target.session_id
    )?;
    Ok(Outcome::Clean)
}

pub fn run_list(args: ListArgs) -> CmdResult {
    let home = Home::from_env()?;
    if args.epoch.epoch != harnery::epoch::EpochSelector::Live {
        return list_epochs(&home, &args);
    }
    list_one(&args, &restore::epochs::live_log(&home, &args.session)?)
}

/// `checkpoints --epoch all|GENESIS`: the session's log in each selected
/// epoch that holds part of it, oldest first, each under its epoch (in
/// JSON, `{"epoch": label, …log}` each, in an array). `--latest` and
/// `--id` look in the newest epoch first.
fn list_epochs(home: &Home, args: &ListArgs) -> CmdResult {
    let epochs = harnery::report::epochs::Epochs::open(home, &args.epoch.epoch)?;
    let logs = restore::epochs::logs(&epochs, "checkpoints", &args.session)?;
    if args.id.is_some() || args.latest {
        let wanted = args.id.as_deref().unwrap_or("latest");
        let (epoch, log) = restore::epochs::newest_with(&logs, wanted);
        if !args.json {
            writeln!(harnery::terminal::stdout(false), "epoch {}", epoch.label)?;
        }
        return list_one(args, log);
    }
    let mut out = harnery::terminal::stdout(args.json);
    if args.json {
        let parts = restore::epochs::EpochLog::all(&logs);
        writeln!(out, "{}", serde_json::to_string_pretty(&parts)?)?;
        return Ok(Outcome::Clean);
    }
    for (epoch, log) in &logs {
        writeln!(out, "epoch {}", epoch.label)?;
        write_log(&mut out, log)?;
    }
    Ok(Outcome::Clean)
}

fn list_one(args: &ListArgs, log: &SessionLog) -> CmdResult {
    let one = log.listed(args.id.as_deref(), args.latest)?;
    let mut out = harnery::terminal::stdout(args.json);
    match (one, args.json) {
        (Some(cp), true) => writeln!(out, "{}", serde_json::to_string_pretty(cp)?)?,
        (None, true) => writeln!(out, "{}", serde_json::to_string_pretty(log)?)?,
        (Some(cp), false) => write_table(&mut out, std::slice::from_ref(cp))?,
        (None, false) => write_log(&mut out, log)?,
    }
    Ok(Outcome::Clean)
}

fn write_log(out: &mut impl Write, log: &SessionLog) -> std::io::Result<()> {
    let session = &log.session;
    writeln!(
        out,
        "{}/{}  head {}  incarnation {}  {} checkpoints  {} resumes",
        session.adapter,
        session.session_id,
        log.head,
        log.incarnation,
        log.checkpoints.len(),
        log.resumes.len()
    )?;
    write_table(out, &log.checkpoints)
}

fn write_table(out: &mut impl Write, checkpoints: &[Checkpoint]) -> std::io::Result<()> {
    writeln!(
        out,
        "{:<40} {:>6} {:<8} {:<14} {:>7} {:>4} {:<24} STATE",
        "ID", "OFFSET", "ORIGIN", "COMMIT", "EFFECTS", "INC", "TIME"
    )?;
    for cp in checkpoints {
        let commit = match &cp.commit {
            Observation::Observed(sha) => sha.chars().take(12).collect(),
            Observation::Unknown(_) => "unknown".to_string(),
        };
        let state = match cp.invalidated_at {
            Some(at) => format!("invalid (resume at offset {at})"),
            None => "valid".into(),
        };
        writeln!(
            out,
            "{:<40} {:>6} {:<8} {:<14} {:>7} {:>4} {:<24} {state}",
            cp.checkpoint_id,
            cp.offset,
            cp.origin,
            commit,
            cp.effects.len(),
            cp.incarnation,
            format_ns(cp.time_unix_ns)
        )?;
        if let Some(at) = &cp.located {
            writeln!(out, "  {}", located_line(at))?;
        }
    }
    Ok(())
}

/// A checkpoint's place in the agent's record, in one short line.
fn located_line(at: &harnery::restore::log::Located) -> String {
    let file = std::path::Path::new(&at.path)
        .file_name()
        .map_or(at.path.clone(), |f| f.to_string_lossy().into_owned());
    let last = at
        .line_id
        .as_deref()
        .map(|id| format!(", last line {id}"))
        .unwrap_or_default();
    format!("record: {file} up to byte {}{last}", at.end)
}
