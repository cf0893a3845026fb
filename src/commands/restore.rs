//! `harnery restore <session> [--checkpoint ID|latest] [--json]`: the seed
//! a fresh incarnation starts from, the shim that resumes the agent, and
//! what `--apply` would do. It shows; it writes and records nothing.
//!
//! - `--apply` puts the agent's record up to the checkpoint back from the
//!   raw archive as a new session of the agent, links it to its parent
//!   and prints the agent's resume of it; `--exec` runs that in the
//!   session's directory (`restore_apply`).
//! - `--record` (what a plain `restore` did before) records the restore
//!   through the spool (`harnery.restore`), so the session's next native
//!   activity is taken for an in-place resume: `finalize` then appends
//!   `session.resumed`, supersedes the events from the checkpoint up to
//!   the restore and invalidates the checkpoints above it.
//!
//! - Where the agent's own record is gone, the shim is a put-back,
//!   `harnery restore … --apply`: it carries this restore's flags that
//!   decide the resume (`carried_flags`) and the agent's words after `--`.
//!
//! Exit 2 for an unknown session or checkpoint, or a record that cannot
//! be put back.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::recover::{EvidenceArgs, hint};
use super::restore_apply::{self as apply, ApplyPlan};
use super::restore_sdk::absolute;
use super::session_epochs;
use super::{CmdResult, EpochArg, Outcome};
use harnery::agents::copilot;
use harnery::agents::harnery::{RESTORE, RestorePayload};
use harnery::contract::{AdapterId, Observation};
use harnery::epoch::EpochSelector;
use harnery::home::Home;
use harnery::now::resolve_now;
use harnery::operator::Target;
use harnery::report::epochs::Epochs;
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
    let live;
    let epochs;
    // The live epoch, or the newest selected one that has the checkpoint.
    let (ledger, epoch) = if args.epoch.epoch == EpochSelector::Live {
        let Some(found) = harnery::report::source::live_or_none(&home)? else {
            return Err(
                format!("no session matches {:?}: the ledger is empty", args.session).into(),
            );
        };
        live = found;
        (&live, None)
    } else {
        epochs = Epochs::open(&home, &args.epoch.epoch)?;
        let part = session_epochs::for_checkpoint(&epochs, &args.session, &args.checkpoint)?;
        if args.record && part.label != "live" {
            return Err(format!(
                "--record: checkpoint {:?} is in the archived epoch {}, which a finalize never \
                 writes to; use --apply",
                args.checkpoint, part.label
            )
            .into());
        }
        (&part.ledger, Some(part.label.clone()))
    };
    let session = ledger.sessions().resolve(&args.session)?;
    let log = SessionLog::read(ledger, &session)?;
    let seed = seed(
        ledger,
        &log,
        Some(&args.checkpoint),
        args.include_superseded,
    )?;
    let id = session.session_id.clone();
    let cp = seed.checkpoint.clone();
    let now = resolve_now(args.now.as_deref())?;
    // A refused id is never a reason to fall back to anything.
    if let Some(new_id) = &args.new_id {
        harnery::resume::materialize::check_new_id(new_id)?;
    }
    // What --apply does, worked out (and done, with --apply).
    let mut plan = apply::plan(&home, ledger, &log, &cp, args.new_id.as_deref());
    let shim = choose_shim(&args, ledger, &log, &cp, &mut plan, &home, now)?;
    // Only an explicit --record arms an in-place resume; a shim that is
    // not native starts a new session, and this one is not resumed.
    let record = args.record
        && shim.native
        && !harnery::resume::exact::kept_turn_goes_on(ledger, &log, cp.offset)?;
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
    print(&args, epoch, &restore, &plan, session.adapter, record)?;
    if args.exec {
        let status = apply::exec(&restore.shim)?;
        std::process::exit(status);
    }
    Ok(Outcome::Clean)
}

/// The shim: after `--apply`, the agent's resume of the new session (or,
/// without the record in the archive, Claude Code's own fork); else the
/// agent's resume of this one, or putting the record back first when
/// the agent's own is gone. Run in the session's directory.
fn choose_shim(
    args: &Args,
    ledger: &harnery::ledger::LedgerReader,
    log: &SessionLog,
    cp: &harnery::resume::log::Checkpoint,
    plan: &mut Result<ApplyPlan, super::CmdError>,
    home: &Home,
    now: i64,
) -> Result<harnery::resume::shim::ResumeShim, super::CmdError> {
    let session = &log.session;
    let id = &session.session_id;
    // The checkpoint's own directory (generation 6), else the one derived
    // from the ledger below it.
    let derived = plan.as_ref().ok().and_then(|p| p.record.cwd.clone());
    let mut cwd = cp.cwd.clone().or(derived);
    let sdk = sdk_words(args, session.adapter, id)?;
    let shim = if args.apply {
        match plan.as_mut() {
            Ok(p) => {
                // Whatever stops the SDK resume stops it before anything is written.
                if let Some(request) = sdk.as_ref().filter(|_| args.exec) {
                    let dir = args.cwd.clone().or(cwd.clone());
                    super::restore_sdk::check(dir.as_deref(), request)?;
                }
                apply::apply(p, home, log, cp, now)?;
                let policy = || copilot_policy(args, id).0;
                apply::shim_for(session.adapter, p, args.transport.into(), policy)
            }
            Err(e) => {
                let words = &args.agent_args;
                let fork = apply::fork_instead(home, ledger, log, cp, e, words, args.exec)?;
                cwd = fork.cwd.clone();
                shim::claude_at(id, &fork.row, true, None)
            }
        }
    } else {
        let sdk_dir = sdk.as_ref().and_then(|r| r.sdk_dir.as_deref());
        let look = super::restore_resume::Look {
            home,
            ledger,
            log,
            cp,
            plan,
            carried: &carried_flags(args, sdk_dir)?,
            in_place: args.record,
            transport: args.transport.into(),
        };
        let (shim, its_cwd) = look.shim(|| copilot_policy(args, id))?;
        cwd = cwd.or(its_cwd);
        shim
    };
    let sdk_dir = sdk.and_then(|r| r.sdk_dir);
    Ok(shim
        .in_dir(args.cwd.clone().or(cwd))
        .with_words(&args.agent_args, sdk_dir)?
        .within(args.sdk_timeout))
}

/// The flags of this restore that decide how the agent is resumed, for
/// a put-back shim to carry to `restore … --apply` (the words after `--`
/// follow them there). Paths are made absolute, so the printed command
/// works from any directory.
fn carried_flags(args: &Args, sdk_dir: Option<&str>) -> Result<Vec<String>, super::CmdError> {
    let mut flags = Vec::new();
    let mut carry = |name: &str, value: &str| flags.extend(shim::option(name, value));
    match &args.epoch.epoch {
        EpochSelector::Live => {}
        EpochSelector::All => carry("--epoch", "all"),
        EpochSelector::Id(id) => carry("--epoch", id),
    }
    if args.transport == TransportArg::Sdk {
        carry("--transport", "sdk");
    }
    if let Some(dir) = sdk_dir {
        carry("--sdk", dir);
    }
    if let Some(secs) = args.sdk_timeout {
        carry("--sdk-timeout", &secs.to_string());
    }
    if let Some(dir) = &args.cwd {
        carry("--cwd", &absolute("--cwd", Path::new(dir))?);
    }
    if let Some(dir) = &args.copilot_home {
        carry("--copilot-home", &absolute("--copilot-home", dir)?);
    }
    let evidence = &args.evidence;
    if let Some(version) = &evidence.copilot_version {
        carry("--copilot-version", version);
    }
    if let Some(dir) = &evidence.copilot_dist_dir {
        carry("--copilot-dist-dir", &absolute("--copilot-dist-dir", dir)?);
    }
    for dir in &evidence.copilot_package {
        carry("--copilot-package", &absolute("--copilot-package", dir)?);
    }
    Ok(flags)
}

/// With `--transport sdk` on a Copilot session: the words after `--` read
/// as the SDK resume takes them, and where the SDK is; refused words stop
/// the restore before anything is written.
fn sdk_words(
    args: &Args,
    adapter: AdapterId,
    id: &str,
) -> Result<Option<harnery::resume::copilot_sdk::SdkRequest>, super::CmdError> {
    if args.sdk_timeout.is_some() && args.transport != TransportArg::Sdk {
        return Err("--sdk-timeout limits the SDK resume's turn: it needs --transport sdk".into());
    }
    if args.transport != TransportArg::Sdk || adapter != AdapterId::Copilot {
        return Ok(None);
    }
    let dir = super::restore_sdk::sdk_dir(args.sdk.as_deref())?;
    let request = harnery::resume::copilot_sdk::SdkRequest::new(id).with_words(&args.agent_args)?;
    Ok(Some(request.in_sdk_dir(dir)))
}

/// Print the restore: JSON (the seed's events streamed from the ledger),
/// or text with what `--apply` does.
fn print(
    args: &Args,
    epoch: Option<String>,
    restore: &Restore,
    plan: &Result<ApplyPlan, super::CmdError>,
    adapter: AdapterId,
    record: bool,
) -> Result<(), super::CmdError> {
    let apply_plan = plan.as_ref().ok();
    let mut out = harnery::terminal::stdout(args.json);
    if args.json {
        // The seed's events stream from the ledger as they are written.
        let shown = Shown {
            epoch,
            restore,
            apply: apply_plan,
            apply_refused: plan.as_ref().err().map(|e| e.to_string()),
        };
        serde_json::to_writer_pretty(&mut out, &shown)?;
        writeln!(out)?;
    } else {
        let events = restore.seed.events.count()?;
        if let Some(label) = &epoch {
            writeln!(out, "epoch {label}")?;
        }
        let asked = args.record;
        write_text(
            &mut out,
            restore,
            events,
            adapter,
            (asked, record),
            args.exec,
        )?;
        write_plan(&mut out, plan)?;
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

fn write_plan(
    out: &mut impl Write,
    plan: &Result<ApplyPlan, super::CmdError>,
) -> std::io::Result<()> {
    match plan {
        Ok(p) => {
            let verb = if p.applied {
                "wrote"
            } else {
                "--apply would write"
            };
            writeln!(
                out,
                "  {verb} {} bytes of {} ({} turns, up to byte {}) as new session {} at {}",
                p.bytes,
                p.record.path,
                p.record.turns,
                p.record.end,
                p.session_id,
                p.path.display()
            )?;
            if !p.steering.is_empty() {
                writeln!(out, "  steering, not the user's ({}):", p.steering.len())?;
            }
            for s in &p.steering {
                let text: String = s.text.as_deref().unwrap_or("").chars().take(72).collect();
                writeln!(out, "    offset {} from {}: {text}", s.offset, s.source)?;
            }
            Ok(())
        }
        Err(e) => writeln!(out, "  --apply cannot put the record back: {e}"),
    }
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
    (asked, recorded): (bool, bool),
    exec: bool,
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
    write_effects(out, &r.seed.effects)?;
    if !r.seed.may_have_run.is_empty() {
        writeln!(out, "  may have run ({}):", r.seed.may_have_run.len())?;
        write_effects(out, &r.seed.may_have_run)?;
    }
    if !r.shim.runnable {
        writeln!(out, "  resume: none ({})", r.shim.reason)?;
    } else {
        let native = if r.shim.native {
            "native"
        } else {
            "not native"
        };
        writeln!(out, "  resume ({native}; {}):", r.shim.reason)?;
        // What runs next need not be written out whole.
        let command = if exec {
            r.shim.brief()
        } else {
            r.shim.text.clone()
        };
        writeln!(out, "    {command}")?;
    }
    if let Some(interactive) = &r.shim.interactive {
        writeln!(out, "  interactive resume: {interactive}")?;
    }
    match (asked, recorded) {
        (_, true) => {}
        (true, false) => writeln!(
            out,
            "  (not recorded: --record arms an in-place resume, and none resumes this session \
             exactly at the checkpoint: either no command resumes it in place there, or the \
             kept turns' events go on past its offset and would be marked superseded though \
             the agent is given them; --apply starts a new session there)"
        )?,
        (false, false) => writeln!(
            out,
            "  (not recorded: --record arms an in-place resume; --apply starts a new session)"
        )?,
    }
    Ok(())
}

fn write_effects(
    out: &mut impl Write,
    effects: &[harnery::contract::Effect],
) -> std::io::Result<()> {
    for e in effects {
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
