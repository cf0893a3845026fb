//! `harnery restore <session> [--checkpoint ID|latest] [--json]`: the seed
//! a fresh incarnation starts from, the shim that resumes the agent, and
//! what `--apply` would do. It shows; it writes and records nothing.
//! This module parses, picks the epoch, calls the restore planner
//! (`harnery::restore::plan`) and prints.
//!
//! - `--apply` puts the agent's record up to the checkpoint back from the
//!   raw archive as a new session of the agent, links it to its parent
//!   and prints the agent's resume of it; `--exec` runs that in the
//!   session's directory (`harnery::restore::apply`, `run`).
//! - `--record` (what a plain `restore` did before) records the restore
//!   through the spool (`harnery.restore`), so the session's next native
//!   activity is taken for an in-place resume: `finalize` then appends
//!   `session.resumed`, supersedes the events from the checkpoint up to
//!   the restore and invalidates the checkpoints above it.
//!
//! - Where the agent's own record is gone, the shim is a put-back,
//!   `harnery restore … --apply`: it carries this restore's flags that
//!   decide the resume (`harnery::restore::plan::carried_flags`) and the
//!   agent's words after `--`.
//!
//! Exit 2 for an unknown session or checkpoint, or a record that cannot
//! be put back.

use std::io::Write;
use std::path::PathBuf;

use super::recover::EvidenceArgs;
use super::{CmdResult, EpochArg, Outcome};
use harnery::home::Home;
use harnery::restore::apply::ApplyPlan;
use harnery::restore::epochs::restore_ledger;
use harnery::restore::plan::{self, RestoreRequest, Restored};
use harnery::restore::seed::Restore;
use harnery::restore::shim::Transport;

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Exit codes: 0 restored; 2 unknown session or checkpoint, usage or I/O error."
)]
pub struct Args {
    /// Session id, or a unique prefix of one.
    session: String,
    /// The checkpoint to restore: an id, or `latest` (the valid one pinned highest).
    #[arg(long, value_name = "ID|latest", default_value = "latest")]
    checkpoint: String,
    /// Print the seed and the shim as JSON.
    #[arg(long)]
    json: bool,
    /// Keep superseded events in the seed, marked.
    #[arg(long)]
    include_superseded: bool,
    /// How the agent is resumed: `cli` (a command line) or `sdk` (Copilot
    /// SDK's `resumeSession`, run by `node`; after `--`: -p PROMPT, --model
    /// NAME, --allow-all-tools).
    #[arg(long, value_enum, default_value_t = TransportArg::Cli)]
    transport: TransportArg,
    /// With --transport sdk: the directory holding
    /// node_modules/@github/copilot-sdk [default: $HARNERY_COPILOT_SDK,
    /// else node's resolution from the session's directory, then `npm root
    /// -g`].
    #[arg(long, value_name = "DIR")]
    sdk: Option<PathBuf>,
    /// With --transport sdk: give the resumed turn up after SECS seconds,
    /// 1 to 2000000 (it is aborted, and `--exec` exits 1) [default: no
    /// limit].
    #[arg(long, value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..=2_000_000))]
    sdk_timeout: Option<u64>,
    /// Show the restore without writing or recording anything (what
    /// `restore` does without `--apply` or `--record`; kept for scripts).
    #[arg(long)]
    dry_run: bool,
    /// Put the agent's record up to the checkpoint back as a new session
    /// of the agent (from harnery's raw archive; never over an existing
    /// file), link it to this one, and print the agent's resume of it.
    #[arg(long, conflicts_with_all = ["dry_run", "record"])]
    apply: bool,
    /// With --apply: run the resume in the session's directory; words
    /// after `--` go to the agent (e.g. `-- -p "go on"`). Exits with the
    /// agent's status (the SDK resume: 0 the turn ended, 1 it failed).
    #[arg(long, requires = "apply")]
    exec: bool,
    /// Record the restore so that the session's next native activity is
    /// taken for an in-place resume (`harnery.restore`).
    #[arg(long, conflicts_with = "dry_run")]
    record: bool,
    /// With --apply: the new session's id [default: a new UUID].
    #[arg(long, value_name = "ID", requires = "apply")]
    new_id: Option<String>,
    /// The directory the resume runs in [default: the session's own].
    #[arg(long, value_name = "DIR")]
    cwd: Option<String>,
    /// Copilot's home, for the session's events.jsonl size [default:
    /// $COPILOT_HOME, else ~/.copilot].
    #[arg(long, value_name = "DIR")]
    copilot_home: Option<PathBuf>,
    /// Pin the restore time (RFC 3339 or unix ns); default HARNERY_NOW or the clock.
    #[arg(long)]
    now: Option<String>,
    #[command(flatten)]
    evidence: EvidenceArgs,
    #[command(flatten)]
    epoch: EpochArg,
    /// Words for the agent, after `--`: run with --exec, else written into
    /// the printed resume (a put-back hands them on after its own `--`).
    #[arg(last = true, value_name = "AGENT ARGS")]
    agent_args: Vec<String>,
}

pub fn run(args: Args) -> CmdResult {
    let home = Home::from_env()?;
    let (ledger, epoch) = restore_ledger(
        &home,
        &args.epoch.epoch,
        &args.session,
        &args.checkpoint,
        args.record,
    )?;
    let restored = plan::restore(&home, &ledger, &args.session, &request(&args))?;
    print(&args, epoch, &restored)?;
    if args.exec {
        let status = harnery::restore::run::exec(&restored.restore.shim)?;
        std::process::exit(status);
    }
    Ok(Outcome::Clean)
}

/// The library's request, from the flags.
fn request(args: &Args) -> RestoreRequest {
    RestoreRequest {
        checkpoint: args.checkpoint.clone(),
        include_superseded: args.include_superseded,
        transport: args.transport.into(),
        sdk: args.sdk.clone(),
        sdk_timeout: args.sdk_timeout,
        apply: args.apply,
        exec: args.exec,
        record: args.record,
        new_id: args.new_id.clone(),
        cwd: args.cwd.clone(),
        copilot_home: args.copilot_home.clone(),
        now: args.now.clone(),
        copilot: args.evidence.flags(),
        epoch: args.epoch.epoch.clone(),
        agent_args: args.agent_args.clone(),
    }
}

/// Print the restore: JSON (the seed's events streamed from the ledger),
/// or text with what `--apply` does.
fn print(args: &Args, epoch: Option<String>, restored: &Restored) -> Result<(), super::CmdError> {
    let (restore, plan) = (&restored.restore, &restored.plan);
    let mut out = harnery::terminal::stdout(args.json);
    if args.json {
        // The seed's events stream from the ledger as they are written.
        let shown = Shown {
            epoch,
            restore,
            apply: plan.as_ref().ok(),
            apply_refused: plan.as_ref().err().map(|e| e.to_string()),
        };
        serde_json::to_writer_pretty(&mut out, &shown)?;
        writeln!(out)?;
    } else {
        let events = restore.seed.events.count()?;
        if let Some(label) = &epoch {
            writeln!(out, "epoch {label}")?;
        }
        write!(out, "{}", restored.text(events, args.record, args.exec))?;
    }
    out.flush()?;
    Ok(())
}

/// What `restore --json` prints: the seed and shim, and what `--apply`
/// does (or why it cannot).
#[derive(serde::Serialize)]
struct Shown<'a, 'b> {
    /// The epoch read, when `--epoch` selected one.
    #[serde(skip_serializing_if = "Option::is_none")]
    epoch: Option<String>,
    #[serde(flatten)]
    restore: &'b Restore<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    apply: Option<&'b ApplyPlan>,
    #[serde(skip_serializing_if = "Option::is_none")]
    apply_refused: Option<String>,
}

/// `--transport`, as clap reads it; the library's `Transport` knows no clap.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum TransportArg {
    /// A command line.
    Cli,
    /// A call on the agent's SDK client.
    Sdk,
}

impl From<TransportArg> for Transport {
    fn from(arg: TransportArg) -> Transport {
        match arg {
            TransportArg::Cli => Transport::Cli,
            TransportArg::Sdk => Transport::Sdk,
        }
    }
}
