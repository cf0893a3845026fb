//! The command line: one module per subcommand, each an `Args` struct and a
//! `run` function. Nothing here holds a rule of its own; every subcommand
//! parses, calls the library, and prints.
//!
//! Exit codes (also in `--help` and the README): 0 ok; 1 the command ran and
//! found problems (validate, verify, audit findings); 2 usage, input or I/O error.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

pub mod archive;
pub mod audit;
pub mod checkpoint;
pub mod demo;
pub mod end;
pub mod epoch;
pub mod exec;
pub mod export;
pub mod finalize;
pub mod fleet;
pub mod fleet_search;
pub mod health;
pub mod import;
pub mod install;
pub mod mcp;
pub mod otlp;
pub mod progress;
pub mod receipts;
pub mod recover;
pub mod replay;
pub mod restore;
pub mod schedule;
pub mod search;
pub mod serve;
pub mod sessions;
pub mod ship;
pub mod show;
pub mod spool;
pub mod usage;
pub mod validate;
pub mod verify;
pub mod view;

/// `--epoch`, shared by every command that reads the ledger.
#[derive(Debug, Clone, clap::Args)]
pub struct EpochArg {
    /// Which ledger epoch to read: `live` (the default), `all` (every
    /// epoch, oldest first), or a genesis id or a unique prefix of one.
    #[arg(
        long = "epoch",
        value_name = "live|all|GENESIS",
        default_value = "live"
    )]
    pub epoch: harnery::epoch::EpochSelector,
}

/// A time given on the command line (`--since`, `--until`), as Unix
/// nanoseconds: RFC 3339 (or Unix nanoseconds, the one parser's other form).
pub fn parse_instant(text: &str) -> Result<i64, String> {
    harnery::clock::parse_instant(text)
        .ok_or_else(|| format!("{text:?} is not an RFC 3339 time (e.g. 2026-12-01T09:00:00Z)"))
}

/// The session spool an operator command (`end`, `exec`, `checkpoint`)
/// writes to ([`harnery::operator::Target::find`]).
fn operator_target(
    home: &harnery::home::Home,
    session: &str,
    adapter: Option<&str>,
) -> Result<harnery::operator::Target, CmdError> {
    Ok(harnery::operator::Target::find(home, session, adapter)?)
}

/// The first 12 characters of an id, as the text tables show it.
pub(crate) fn short(id: &str) -> &str {
    id.get(..12).unwrap_or(id)
}

/// A figure an agent may not have reported, or `-` (never 0).
pub fn or_dash(n: Option<u64>) -> String {
    n.map_or("-".into(), |n| n.to_string())
}

/// What a subcommand reports when it finished without an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Everything checked out (exit 0).
    Clean,
    /// The command ran and found problems it has printed (exit 1).
    Problems,
}

impl Outcome {
    /// Problems when `found`, else clean.
    pub fn problems_if(found: bool) -> Outcome {
        match found {
            true => Outcome::Problems,
            false => Outcome::Clean,
        }
    }
}

/// Any error a subcommand hands back; printed once, exit 2.
pub type CmdError = Box<dyn std::error::Error + Send + Sync + 'static>;
pub type CmdResult = Result<Outcome, CmdError>;

#[derive(Debug, Parser)]
#[command(
    name = "harnery",
    version,
    about = "Record what AI coding agents do: spool, finalize, verify, read.",
    after_help = "Exit codes: 0 ok; 1 the command found problems; 2 usage, input or I/O error.\n\
                  HARNERY_HOME overrides the default home (~/.harnery)."
)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Inspect the intake spool.
    Spool(spool::Args),
    /// Configure harnery as an agent's hook command, and run `finalize` every minute.
    Install(install::InstallArgs),
    /// Remove harnery's hooks from an agent's settings (and the schedule with the last agent's).
    Uninstall(install::UninstallArgs),
    /// Drain the spools into the ledger.
    Finalize(finalize::Args),
    /// Read the sessions agents recorded before harnery was installed (class imported).
    Import(import::Args),
    /// Ship a contract change: quiesce, archive, reinstall, carry.
    Epoch(epoch::Args),
    /// Keep the raw archive compressed (`archive compact`).
    Archive(archive::Args),
    /// List recorded sessions.
    Sessions(sessions::Args),
    /// Show one session's timeline.
    Show(show::Args),
    /// Draw a session as a self-contained HTML timeline (or all of them, with an index).
    View(view::Args),
    /// Serve a read-only local web app over the ledger (sessions, timelines, usage, health).
    Serve(serve::Args),
    /// Answer an agent's questions about past sessions: an MCP server over stdio (read-only).
    Mcp(mcp::Args),
    /// Print a session's events in offset order.
    Replay(replay::Args),
    /// Find what an agent said or did: prompts, messages, tool inputs and outputs, commands.
    Search(search::Args),
    /// Check every ledger row against the contract.
    Validate(validate::Args),
    /// Recompute the ledger's hash chain.
    Verify(verify::Args),
    /// Record, list or inspect explicit session ends.
    End(end::Args),
    /// Pin a checkpoint of a session (commit, effects) at its current offset.
    Checkpoint(checkpoint::Args),
    /// List a session's checkpoints, valid and invalidated.
    Checkpoints(checkpoint::ListArgs),
    /// Hand a session back to its agent: the seed up to a checkpoint and the resume shim.
    Restore(restore::Args),
    /// Run a command and record it as a command span.
    Exec(exec::Args),
    /// Per-turn latency receipts: known tool time and recovery bounds.
    Receipts(receipts::Args),
    /// Classify sessions as eligible evidence or audit-only.
    Audit(audit::Args),
    /// Model usage as the agents reported it: tokens by kind, reported cost.
    Usage(usage::Args),
    /// Loud conditions: span caps, pending ends, damaged spool, dead letters.
    Health(health::Args),
    /// Export the ledger (JSON lines or OTLP JSON).
    Export(export::Args),
    /// Deliver sessions as traces to an OTLP/HTTP receiver (`otlp push`).
    Otlp(otlp::Args),
    /// Build a recovery packet for an interrupted session.
    Recover(recover::Args),
    /// Say whether native Copilot resume is safe, and why.
    ResumePolicy(recover::PolicyArgs),
    /// Run bundled real sessions end to end in a temporary home.
    Demo(demo::Args),
    /// Send this host's ledger, secrets masked, to the central PostgreSQL.
    Ship(ship::Args),
    /// Read the central PostgreSQL: sessions, audit, usage, verify.
    Fleet(fleet::Args),
}

/// Parse the process arguments, run the subcommand, and map its outcome.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    match dispatch(cli.command) {
        Ok(Outcome::Clean) => ExitCode::SUCCESS,
        Ok(Outcome::Problems) => ExitCode::from(1),
        Err(err) => report(err.as_ref()),
    }
}

fn dispatch(command: Command) -> CmdResult {
    match command {
        Command::Spool(a) => spool::run(a),
        Command::Install(a) => install::run_install(a),
        Command::Uninstall(a) => install::run_uninstall(a),
        Command::Finalize(a) => finalize::run(a),
        Command::Import(a) => import::run(a),
        Command::Epoch(a) => epoch::run(a),
        Command::Archive(a) => archive::run(a),
        Command::Sessions(a) => sessions::run(a),
        Command::Show(a) => show::run(a),
        Command::View(a) => view::run(a),
        Command::Serve(a) => serve::run(a),
        Command::Mcp(a) => mcp::run(a),
        Command::Replay(a) => replay::run(a),
        Command::Search(a) => search::run(a),
        Command::Validate(a) => validate::run(a),
        Command::Verify(a) => verify::run(a),
        Command::End(a) => end::run(a),
        Command::Checkpoint(a) => checkpoint::run(a),
        Command::Checkpoints(a) => checkpoint::run_list(a),
        Command::Restore(a) => restore::run(a),
        Command::Exec(a) => exec::run(a),
        Command::Receipts(a) => receipts::run(a),
        Command::Audit(a) => audit::run(a),
        Command::Usage(a) => usage::run(a),
        Command::Health(a) => health::run(a),
        Command::Export(a) => export::run(a),
        Command::Otlp(a) => otlp::run(a),
        Command::Recover(a) => recover::run(a),
        Command::ResumePolicy(a) => recover::run_policy(a),
        Command::Demo(a) => demo::run(a),
        Command::Ship(a) => ship::run(a),
        Command::Fleet(a) => fleet::run(a),
    }
}

fn report(err: &(dyn std::error::Error + 'static)) -> ExitCode {
    if is_broken_pipe(err) {
        return ExitCode::SUCCESS;
    }
    let mut line = format!("harnery: {err}");
    let mut source = err.source();
    while let Some(cause) = source {
        line.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    harnery::terminal::warn(&line);
    ExitCode::from(2)
}

fn is_broken_pipe(err: &(dyn std::error::Error + 'static)) -> bool {
    err.downcast_ref::<std::io::Error>()
        .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
}
