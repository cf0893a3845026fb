//! The restore planner: one `harnery restore` worked out from its request.
//!
//! It reads the session's log, builds the seed at the checkpoint, works
//! out what `--apply` writes (`apply::plan`), chooses the shim that
//! resumes the agent and, on request, does it: `--apply` writes the
//! record back as a new session and links it, `--record` records the
//! restore through the spool. Printing it, and running the shim
//! (`run::exec`), are the caller's.
//!
//! - After `--apply`, the shim is the agent's resume of the new session
//!   (or, where the archive cannot give the record back, Claude Code's
//!   own fork); else the agent's resume of this one exactly at the
//!   checkpoint (`look`), or putting the record back first when the
//!   agent's own is gone.
//! - A put-back shim (`harnery restore … --apply`) carries this restore's
//!   flags that decide the resume ([`carried_flags`]) and the agent's
//!   words after `--`.
//! - Only an explicit `--record` arms an in-place resume, and only where
//!   a native shim resumes the session exactly at the checkpoint.

use std::path::{Path, PathBuf};

use super::apply::{self, ApplyPlan};
use super::copilot_sdk::SdkRequest;
pub use super::error::PlanError;
use super::log::{Checkpoint, SessionLog};
use super::look::Look;
use super::run::{self, absolute};
use super::seed::{self, Restore};
use super::shim::{self, ResumeShim, Transport};
use crate::agents::copilot;
use crate::agents::harnery::{RESTORE, RestorePayload};
use crate::contract::AdapterId;
use crate::epoch::EpochSelector;
use crate::home::Home;
use crate::ledger::LedgerReader;
use crate::now::resolve_now;
use crate::operator::Target;
use crate::recover::hint::{CopilotFlags, running_copilot};
use crate::recover::policy::{ResumeAssessment, StreamSize};

/// What a `harnery restore` asks for.
#[derive(Debug, Clone)]
pub struct RestoreRequest {
    /// A checkpoint id, or `latest`.
    pub checkpoint: String,
    /// Keep superseded events in the seed, marked.
    pub include_superseded: bool,
    pub transport: Transport,
    /// `--sdk DIR`: where the Copilot SDK is.
    pub sdk: Option<PathBuf>,
    /// `--sdk-timeout SECS`.
    pub sdk_timeout: Option<u64>,
    /// `--apply`: put the record back as a new session.
    pub apply: bool,
    /// `--exec`: the caller runs the shim after printing it.
    pub exec: bool,
    /// `--record`: arm an in-place resume.
    pub record: bool,
    /// `--new-id`: the new session's id.
    pub new_id: Option<String>,
    /// `--cwd`: where the resume runs.
    pub cwd: Option<String>,
    /// `--copilot-home`.
    pub copilot_home: Option<PathBuf>,
    /// `--now`, as given.
    pub now: Option<String>,
    pub copilot: CopilotFlags,
    /// The epochs read (a put-back carries the selection).
    pub epoch: EpochSelector,
    /// The words for the agent, after `--`.
    pub agent_args: Vec<String>,
}

/// A restore worked out (and, with `--apply` or `--record`, done).
pub struct Restored<'a> {
    pub restore: Restore<'a>,
    /// What `--apply` writes (or wrote), or why it cannot.
    pub plan: Result<ApplyPlan, PlanError>,
    /// Whether the restore was recorded (`harnery.restore`).
    pub recorded: bool,
}

/// Restore `session` in `ledger` at the request's checkpoint.
pub fn restore<'a>(
    home: &Home,
    ledger: &'a LedgerReader,
    session_name: &str,
    req: &RestoreRequest,
) -> Result<Restored<'a>, PlanError> {
    let session = ledger.sessions().resolve(session_name)?;
    let log = SessionLog::read(ledger, &session)?;
    let seed = seed::seed(ledger, &log, Some(&req.checkpoint), req.include_superseded)?;
    let cp = seed.checkpoint.clone();
    let now = resolve_now(req.now.as_deref())?;
    // A refused id is never a reason to fall back to anything.
    if let Some(new_id) = &req.new_id {
        super::materialize::check_new_id(new_id)?;
    }
    // What --apply does, worked out (and done, with --apply).
    let mut plan = apply::plan(home, ledger, &log, &cp, req.new_id.as_deref());
    let shim = choose_shim(req, ledger, &log, &cp, &mut plan, home, now)?;
    // Only an explicit --record arms an in-place resume; a shim that is
    // not native starts a new session, and this one is not resumed.
    let recorded =
        req.record && shim.native && !super::exact::kept_turn_goes_on(ledger, &log, cp.offset)?;
    if recorded {
        let target = Target {
            home: home.clone(),
            adapter: session.adapter,
            session_id: session.session_id.clone(),
        };
        let payload = RestorePayload {
            checkpoint_id: seed.checkpoint.checkpoint_id.clone(),
            boundary_offset: seed.boundary_offset,
        };
        target.append(RESTORE, &payload, now)?;
    }
    Ok(Restored {
        restore: Restore { seed, shim },
        plan,
        recorded,
    })
}

/// The shim: after `--apply`, the agent's resume of the new session (or,
/// without the record in the archive, Claude Code's own fork); else the
/// agent's resume of this one, or putting the record back first when
/// the agent's own is gone. Run in the session's directory.
fn choose_shim(
    req: &RestoreRequest,
    ledger: &LedgerReader,
    log: &SessionLog,
    cp: &Checkpoint,
    plan: &mut Result<ApplyPlan, PlanError>,
    home: &Home,
    now: i64,
) -> Result<ResumeShim, PlanError> {
    let session = &log.session;
    let id = &session.session_id;
    // The checkpoint's own directory (generation 6), else the one derived
    // from the ledger below it.
    let derived = plan.as_ref().ok().and_then(|p| p.record.cwd.clone());
    let mut cwd = cp.cwd.clone().or(derived);
    let sdk = sdk_words(req, session.adapter, id)?;
    let shim = if req.apply {
        match plan.as_mut() {
            Ok(p) => {
                // Whatever stops the SDK resume stops it before anything is written.
                if let Some(request) = sdk.as_ref().filter(|_| req.exec) {
                    let dir = req.cwd.clone().or(cwd.clone());
                    run::check(dir.as_deref(), request)?;
                }
                apply::apply(p, home, log, cp, now)?;
                let policy = || copilot_policy(req, id).0;
                apply::shim_for(session.adapter, p, req.transport, policy)
            }
            Err(e) => {
                let words = &req.agent_args;
                let fork = apply::fork_instead(home, ledger, log, cp, e, words, req.exec)?;
                cwd = fork.cwd.clone();
                shim::claude_at(id, &fork.row, true, None)
            }
        }
    } else {
        let sdk_dir = sdk.as_ref().and_then(|r| r.sdk_dir.as_deref());
        let look = Look {
            home,
            ledger,
            log,
            cp,
            plan,
            carried: &carried_flags(req, sdk_dir)?,
            in_place: req.record,
            transport: req.transport,
        };
        let (shim, its_cwd) = look.shim(|| copilot_policy(req, id))?;
        cwd = cwd.or(its_cwd);
        shim
    };
    let sdk_dir = sdk.and_then(|r| r.sdk_dir);
    Ok(shim
        .in_dir(req.cwd.clone().or(cwd))
        .with_words(&req.agent_args, sdk_dir)?
        .within(req.sdk_timeout))
}

/// The flags of this restore that decide how the agent is resumed, for
/// a put-back shim to carry to `restore … --apply` (the words after `--`
/// follow them there). Paths are made absolute, so the printed command
/// works from any directory.
pub(crate) fn carried_flags(
    req: &RestoreRequest,
    sdk_dir: Option<&str>,
) -> Result<Vec<String>, PlanError> {
    let mut flags = Vec::new();
    let mut carry = |name: &str, value: &str| flags.extend(shim::option(name, value));
    match &req.epoch {
        EpochSelector::Live => {}
        EpochSelector::All => carry("--epoch", "all"),
        EpochSelector::Id(id) => carry("--epoch", id),
    }
    if req.transport == Transport::Sdk {
        carry("--transport", "sdk");
    }
    if let Some(dir) = sdk_dir {
        carry("--sdk", dir);
    }
    if let Some(secs) = req.sdk_timeout {
        carry("--sdk-timeout", &secs.to_string());
    }
    if let Some(dir) = &req.cwd {
        carry("--cwd", &absolute("--cwd", Path::new(dir))?);
    }
    if let Some(dir) = &req.copilot_home {
        carry("--copilot-home", &absolute("--copilot-home", dir)?);
    }
    let flags_given = &req.copilot;
    if let Some(version) = &flags_given.version {
        carry("--copilot-version", version);
    }
    if let Some(dir) = &flags_given.dist_dir {
        carry("--copilot-dist-dir", &absolute("--copilot-dist-dir", dir)?);
    }
    for dir in &flags_given.packages {
        carry("--copilot-package", &absolute("--copilot-package", dir)?);
    }
    Ok(flags)
}

/// With `--transport sdk` on a Copilot session: the words after `--` read
/// as the SDK resume takes them, and where the SDK is; refused words stop
/// the restore before anything is written.
fn sdk_words(
    req: &RestoreRequest,
    adapter: AdapterId,
    id: &str,
) -> Result<Option<SdkRequest>, PlanError> {
    if req.sdk_timeout.is_some() && req.transport != Transport::Sdk {
        return Err("--sdk-timeout limits the SDK resume's turn: it needs --transport sdk".into());
    }
    if req.transport != Transport::Sdk || adapter != AdapterId::Copilot {
        return Ok(None);
    }
    let dir = run::sdk_dir(req.sdk.as_deref())?;
    let request = SdkRequest::new(id).with_words(&req.agent_args)?;
    Ok(Some(request.in_sdk_dir(dir)))
}

/// The Copilot resume policy for `id` (`resume-policy`), and the size of
/// its events.jsonl where the agent's home has it.
fn copilot_policy(req: &RestoreRequest, id: &str) -> (ResumeAssessment, Option<StreamSize>) {
    let plan = req.copilot.search_plan();
    let assessment = crate::recover::assess_copilot(running_copilot(&req.copilot, Some(id)), &plan);
    let copilot_home = req
        .copilot_home
        .clone()
        .unwrap_or_else(|| copilot::home(&crate::recover::home_dir()));
    // An id that is not a plain name never becomes a path (it could leave
    // the home).
    let stream = copilot::events_file(&copilot_home, id)
        .ok()
        .and_then(|path| std::fs::metadata(path).ok())
        .map(|m| StreamSize::new(m.len(), None));
    (assessment, stream)
}
