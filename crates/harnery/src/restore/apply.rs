//! `harnery restore --apply [--exec]`: the session's record up to the
//! checkpoint, put back from the raw archive as a new session of its agent
//! (`materialize`), that session linked to its parent, and the agent's own
//! resume of it (run in the session's directory by `run`; for the Copilot
//! SDK, `node` running harnery's script).
//!
//! The link: the new session's first event is a checkpoint,
//! `restored-from:<parent checkpoint>`, with the parent's commit and one
//! effect `restored_from` whose ref is `<adapter>/<parent id>@<checkpoint>`
//! (spooled before the agent starts, so `finalize` pins it at offset 0).
//! The parent records nothing: it is not resumed, so its own process, if
//! it still runs, keeps its line untouched.

use std::path::PathBuf;

use super::claude_fork::ForkAt;
use super::error::PlanError;
use super::log::{Checkpoint, SessionLog};
use super::materialize::{self, Written, destination, with_session_id, write_new};
use super::record_cut::{Parts, RecordCut, cut_for};
use super::shim::{ResumeShim, Transport};
use super::steering::{self, Steering};
use crate::agents::harnery::{CHECKPOINT, CheckpointPayload, OperatorEffect};
use crate::contract::{AdapterId, Observation, SessionRef};
use crate::home::Home;
use crate::ledger::LedgerReader;
use crate::operator::Target;
use crate::spool::{IntakeSpool, read_segment};

/// What `--apply` writes (or, without it, would write).
#[derive(Debug, serde::Serialize)]
pub struct ApplyPlan {
    /// Whether it was written (`--apply`) or is only shown.
    pub applied: bool,
    /// The new session's id.
    pub session_id: String,
    /// Where the agent finds it.
    pub path: PathBuf,
    /// How many bytes it holds.
    pub bytes: u64,
    /// Where the checkpoint stands in the agent's record.
    pub record: RecordCut,
    /// Copilot's steering messages below the checkpoint, kept apart from
    /// the user's own (read from the record's lines).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub steering: Vec<Steering>,
    #[serde(skip)]
    content: Vec<u8>,
}

impl ApplyPlan {
    /// The bytes `--apply` writes: the record up to the checkpoint, the
    /// new session's id in it.
    pub(crate) fn content(&self) -> &[u8] {
        &self.content
    }
}

/// The plan for `log`'s session at `cp`: the record cut and the new
/// session's place. Nothing is written.
pub(crate) fn plan(
    home: &Home,
    ledger: &LedgerReader,
    log: &SessionLog,
    cp: &Checkpoint,
    new_id: Option<&str>,
) -> Result<ApplyPlan, PlanError> {
    let (record, bytes) = match cut_for(&Parts::one(ledger), log, cp) {
        // The session began before an epoch advance: its record's first
        // bytes and its directory are in the archived epoch.
        Err(e) if e.other_epochs_may_help() => {
            let (earlier, later) = super::epochs::around(home, ledger)?;
            let parts = Parts {
                ledger,
                earlier: earlier.iter().collect(),
                later: later.iter().collect(),
            };
            cut_for(&parts, log, cp)?
        }
        cut => cut?,
    };
    let session_id = match new_id {
        Some(id) => {
            materialize::check_new_id(id)?;
            id.to_string()
        }
        None => materialize::new_session_id(),
    };
    let path = destination(
        log.session.adapter,
        &record.path,
        record.cwd.as_deref(),
        &session_id,
        &crate::recover::home_dir(),
    )?;
    let steering = steering::below(ledger, log, cp.offset, &record.path, &bytes)?;
    let content = with_session_id(&bytes, &log.session.session_id, &session_id);
    Ok(ApplyPlan {
        applied: false,
        session_id,
        path,
        bytes: content.len() as u64,
        record,
        steering,
        content,
    })
}

/// Write the plan's record and link the new session to its parent.
pub(crate) fn apply(
    plan: &mut ApplyPlan,
    home: &Home,
    log: &SessionLog,
    cp: &Checkpoint,
    now: i64,
) -> Result<(), PlanError> {
    let adapter = log.session.adapter;
    let written = write_new(adapter, &plan.path, &plan.content)?;
    plan.applied = true;
    let target = Target {
        home: home.clone(),
        adapter,
        session_id: plan.session_id.clone(),
    };
    let checkpoint_id = format!("restored-from:{}", cp.checkpoint_id);
    // A rerun of a put-back killed after its record was written links the
    // new session unless the killed run already did: never twice.
    if written == Written::Resumed && linked(&target, &checkpoint_id)? {
        return Ok(());
    }
    let payload = CheckpointPayload {
        checkpoint_id,
        commit: match &cp.commit {
            Observation::Observed(sha) => Some(sha.clone()),
            Observation::Unknown(_) => None,
        },
        effects: vec![OperatorEffect {
            kind: "restored_from".into(),
            reference: format!("{adapter}/{}@{}", log.session.session_id, cp.checkpoint_id),
        }],
    };
    target.append(CHECKPOINT, &payload, now)?;
    Ok(())
}

/// Whether the new session's link (its checkpoint `checkpoint_id`) is
/// recorded: spooled and not yet drained, or in the ledger.
fn linked(target: &Target, checkpoint_id: &str) -> Result<bool, PlanError> {
    let names_it = |payload: &[u8]| {
        serde_json::from_slice::<CheckpointPayload>(payload)
            .is_ok_and(|p| p.checkpoint_id == checkpoint_id)
    };
    let spool = IntakeSpool::open(&target.home);
    if let Some(s) = spool.session(target.adapter.as_str(), Some(&target.session_id))? {
        for f in s.files()? {
            let read = read_segment(&f.path)?;
            let mut records = read.records.iter();
            if records
                .any(|r| r.envelope.event.as_deref() == Some(CHECKPOINT) && names_it(&r.payload))
            {
                return Ok(true);
            }
        }
    }
    let live = LedgerReader::live_dir(&target.home);
    if !live.join(crate::ledger::GENESIS_FILE).exists() {
        return Ok(false);
    }
    let ledger = LedgerReader::open(&target.home)?;
    let session = SessionRef {
        adapter: target.adapter,
        session_id: target.session_id.clone(),
    };
    let log = SessionLog::read(&ledger, &session)?;
    Ok(log
        .checkpoints
        .iter()
        .any(|c| c.checkpoint_id == checkpoint_id))
}

/// The archive cannot give the record back (`why`): Claude Code's own
/// transcript, if still there, is forked at the checkpoint's last row by
/// the agent itself, in print mode only (so `--exec` needs `-p`). Nothing
/// is written and nothing recorded: the new session's id is the agent's
/// to choose.
pub(crate) fn fork_instead(
    home: &Home,
    ledger: &LedgerReader,
    log: &SessionLog,
    cp: &Checkpoint,
    why: &PlanError,
    agent_args: &[String],
    exec: bool,
) -> Result<ForkAt, PlanError> {
    let refused = |more: String| format!("restore --apply: {why}{more}");
    if log.session.adapter != AdapterId::ClaudeCode {
        return Err(refused(String::new()).into());
    }
    let fork = claude_fork_at(home, ledger, log, cp.offset).map_err(|e| {
        refused(format!(
            "; nor can Claude Code fork its own transcript: {e}"
        ))
    })?;
    let print = agent_args.iter().any(|a| a == "-p" || a == "--print");
    if exec && !print {
        return Err(refused(
            "; Claude Code's own fork (--resume-session-at) works only in print mode: give \
             the prompt after `--`, e.g. -- -p \"go on\""
                .into(),
        )
        .into());
    }
    Ok(fork)
}

/// Where Claude Code forks its own transcript for the checkpoint pinned
/// at `boundary`: from this epoch's part of the session, else (it began
/// before an advance) with the earlier epochs' parts too.
pub(crate) fn claude_fork_at(
    home: &Home,
    ledger: &LedgerReader,
    log: &SessionLog,
    boundary: u64,
) -> Result<ForkAt, String> {
    use super::claude_fork::{fork_at, fork_at_across};
    fork_at(ledger, log, boundary).or_else(|first| {
        let Ok((earlier, _)) = super::epochs::around(home, ledger) else {
            return Err(first);
        };
        if earlier.is_empty() {
            return Err(first);
        }
        let earlier: Vec<&LedgerReader> = earlier.iter().collect();
        fork_at_across(&earlier, ledger, log, boundary)
    })
}

/// The shim for the applied plan: the agent's own resume of the new
/// session, in the session's directory.
pub(crate) fn shim_for(
    adapter: AdapterId,
    plan: &ApplyPlan,
    transport: Transport,
    copilot_policy: impl FnOnce() -> crate::recover::policy::ResumeAssessment,
) -> ResumeShim {
    use crate::recover::policy::StreamSize;
    super::shim::for_adapter(adapter, &plan.session_id, None, transport, || {
        (copilot_policy(), Some(StreamSize::new(plan.bytes, None)))
    })
}
