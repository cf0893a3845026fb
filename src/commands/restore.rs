//! `harnery restore <session> [--checkpoint ID|latest] [--json]`: the seed
//! a fresh incarnation starts from and the shim that resumes the agent.
//!
//! Unless `--dry-run` (or the shim is not native: Copilot's recovery
//! packet starts a new session), the restore is recorded through the spool
//! (`harnery.restore`), so the session's next native activity is taken
//! for the resume: `finalize` then appends `session.resumed`, supersedes
//! the events from the checkpoint up to the restore and invalidates the
//! checkpoints above it. Exit 2 for an unknown session or checkpoint.

use std::io::Write;
use std::path::PathBuf;

use super::recover::{EvidenceArgs, hint};
use super::{CmdResult, Outcome};
use harnery::agents::copilot;
use harnery::agents::harnery::{RESTORE, RestorePayload};
use harnery::contract::{AdapterId, Observation};
use harnery::home::Home;
use harnery::now::resolve_now;
use harnery::operator::Target;
use harnery::resume::evidence::SearchPlan;
use harnery::resume::log::SessionLog;
use harnery::resume::policy::StreamSize;
use harnery::resume::restore::{Restore, seed};
use harnery::resume::shim::{self, Transport};

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
    /// SDK's `resumeSession`).
    #[arg(long, value_enum, default_value_t = TransportArg::Cli)]
    transport: TransportArg,
    /// Print the restore without recording it (the next native activity is
    /// then not taken for a resume from this checkpoint).
    #[arg(long)]
    dry_run: bool,
    /// Copilot's home, for the session's events.jsonl size [default:
    /// $COPILOT_HOME, else ~/.copilot].
    #[arg(long, value_name = "DIR")]
    copilot_home: Option<PathBuf>,
    /// Pin the restore time (RFC 3339 or unix ns); default HARNERY_NOW or the clock.
    #[arg(long)]
    now: Option<String>,
    #[command(flatten)]
    evidence: EvidenceArgs,
}

pub fn run(args: Args) -> CmdResult {
    let home = Home::from_env()?;
    let Some(ledger) = harnery::report::source::live_or_none(&home)? else {
        return Err(format!("no session matches {:?}: the ledger is empty", args.session).into());
    };
    let session = ledger.resolve_session(&args.session)?;
    let log = SessionLog::read(&ledger, &session)?;
    let seed = seed(
        &ledger,
        &log,
        Some(&args.checkpoint),
        args.include_superseded,
    )?;
    let id = session.session_id.clone();
    let shim = shim::for_adapter(session.adapter, &id, args.transport.into(), || {
        copilot_policy(&args, &id)
    });
    let now = resolve_now(args.now.as_deref())?;
    // A shim that is not native starts a new session with the recovery
    // packet: this session is not resumed, so nothing is recorded.
    let record = !args.dry_run && shim.native;
    if record {
        let target = Target {
            home,
            adapter: session.adapter,
            session_id: id.clone(),
        };
        let payload = RestorePayload {
            checkpoint_id: seed.checkpoint.checkpoint_id.clone(),
            boundary_offset: seed.boundary_offset,
        };
        target.append(RESTORE, &payload, now)?;
    }
    let restore = Restore { seed, shim };
    let mut out = harnery::terminal::stdout(args.json);
    if args.json {
        // The seed's events stream from the ledger as they are written.
        serde_json::to_writer_pretty(&mut out, &restore)?;
        writeln!(out)?;
    } else {
        let events = restore.seed.events.count()?;
        write_text(&mut out, &restore, events, session.adapter, record)?;
    }
    out.flush()?;
    Ok(Outcome::Clean)
}

fn copilot_policy(
    args: &Args,
    id: &str,
) -> (
    harnery::resume::policy::ResumeAssessment,
    Option<StreamSize>,
) {
    let plan = SearchPlan::from_env(args.evidence.copilot_package.clone());
    let assessment = harnery::resume::assess_copilot(hint(&args.evidence, Some(id)), &plan);
    let copilot_home = args
        .copilot_home
        .clone()
        .unwrap_or_else(|| copilot::home(&harnery::resume::home_dir()));
    // An id that is not a plain name never becomes a path (it could leave
    // the home).
    let stream = copilot::events_file(&copilot_home, id)
        .ok()
        .and_then(|path| std::fs::metadata(path).ok())
        .map(|m| StreamSize::new(m.len(), None));
    (assessment, stream)
}

fn write_text(
    out: &mut impl Write,
    r: &Restore,
    events: u64,
    adapter: AdapterId,
    recorded: bool,
) -> std::io::Result<()> {
    let cp = &r.seed.checkpoint;
    let commit = match &cp.commit {
        Observation::Observed(sha) => format!("commit {sha}"),
        Observation::Unknown(why) => format!("commit unknown ({why})"),
    };
    writeln!(
        out,
        "restore {adapter}/{} from checkpoint {} ({}, {commit})",
        r.seed.session.session_id, cp.checkpoint_id, cp.origin
    )?;
    writeln!(
        out,
        "  seed: {} events below offset {}; the log goes on at offset {} as incarnation {}",
        events, r.seed.boundary_offset, r.seed.next_offset, r.seed.next_incarnation
    )?;
    writeln!(out, "  effects ({}):", r.seed.effects.len())?;
    for e in &r.seed.effects {
        let mut line = format!("    {} {}", e.kind, e.reference);
        for (label, value) in [
            ("tool", e.tool_name.clone()),
            ("call", e.tool_call_id.clone()),
            (
                "outcome",
                e.outcome.map(|o| format!("{o:?}").to_lowercase()),
            ),
            ("command", e.command.clone()),
            ("exit", e.exit_code.map(|c| c.to_string())),
        ] {
            if let Some(v) = value {
                line.push_str(&format!("  {label} {v}"));
            }
        }
        for p in &e.paths {
            line.push_str(&format!("  path {p}"));
        }
        writeln!(out, "{line}")?;
    }
    let native = if r.shim.native {
        "native"
    } else {
        "not native"
    };
    writeln!(out, "  resume ({native}; {}):", r.shim.reason)?;
    writeln!(out, "    {}", r.shim.text)?;
    if !recorded {
        writeln!(
            out,
            "  (not recorded: a dry run, or a fresh session that the packet starts)"
        )?;
    }
    Ok(())
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
