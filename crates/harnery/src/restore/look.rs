//! The resume a look-only `restore` prints (and `--record` arms): one
//! that resumes the agent exactly at the checkpoint, harnery writing
//! nothing (`exact`), and never one that hands the model
//! a turn past it or that cannot work.
//!
//! - Claude Code: `claude -p --resume <id> --resume-session-at <row>
//!   --fork-session` (in place, without `--fork-session`, for `--record`),
//!   the row the kept turns' last `assistant` row, read from harnery's
//!   archive of the record, else from the agent's own transcript. The
//!   text names `restore … --apply` for an interactive resume.
//! - Copilot: its plain resume (under `resume-policy`) only at the
//!   session's latest point; past a later turn, `restore … --apply`.
//! - Either: where the agent's own record is gone, `restore … --apply`
//!   (the put-back); where harnery's archive cannot give the record back
//!   either, no command at all, and the reason says what cannot be done.

use std::path::Path;

use super::apply::ApplyPlan;
use super::error::PlanError;
use super::exact;
use super::log::{Checkpoint, SessionLog};
use super::shim::{self, ResumeShim, Transport};
use crate::contract::AdapterId;
use crate::ledger::LedgerReader;
use crate::recover::policy::{ResumeAssessment, StreamSize};

/// What the look-only restore needs to choose.
pub(crate) struct Look<'a> {
    pub home: &'a crate::home::Home,
    pub ledger: &'a LedgerReader,
    pub log: &'a SessionLog,
    pub cp: &'a Checkpoint,
    pub plan: &'a Result<ApplyPlan, PlanError>,
    /// This restore's flags a put-back carries (`plan::carried_flags`).
    pub carried: &'a [String],
    /// `--record`: the resume is to be in place.
    pub in_place: bool,
    pub transport: Transport,
}

impl Look<'_> {
    /// The shim, and the directory it runs in where only it knows one.
    pub(crate) fn shim(
        &self,
        copilot_policy: impl FnOnce() -> (ResumeAssessment, Option<StreamSize>),
    ) -> Result<(ResumeShim, Option<String>), PlanError> {
        match self.log.session.adapter {
            AdapterId::ClaudeCode => Ok(self.claude()),
            AdapterId::Copilot => Ok((self.copilot(copilot_policy)?, None)),
            other => Ok((shim::native(other, self.id()), None)),
        }
    }

    fn id(&self) -> &str {
        &self.log.session.session_id
    }

    /// `restore … --apply`, carrying this restore's flags.
    fn put_back(&self, why: String) -> ResumeShim {
        shim::put_back_first(self.id(), Some(&self.cp.checkpoint_id), why).carrying(self.carried)
    }

    /// Why neither the archive nor the agent can give the session back.
    fn nothing(&self, agent: &str, archive: &PlanError) -> ResumeShim {
        shim::unavailable(format!(
            "no command can resume {} at checkpoint {}: {agent}, and harnery's raw archive \
             cannot put the record back ({archive}); the seed above is what is left of it",
            self.id(),
            self.cp.checkpoint_id
        ))
    }

    fn claude(&self) -> (ResumeShim, Option<String>) {
        let id = self.id();
        let fork = !self.in_place;
        match self.plan {
            Ok(p) if !Path::new(&p.record.path).exists() => (
                self.put_back(format!(
                    "Claude Code's own record {} is gone",
                    p.record.path
                )),
                None,
            ),
            Ok(p) => match exact::last_assistant_row(p.content()) {
                Some(row) => {
                    let interactive = self.put_back(String::new()).text;
                    (shim::claude_at(id, &row, fork, Some(interactive)), None)
                }
                // Nothing the model said is kept: only a put-back starts
                // there.
                None => (
                    self.put_back("the checkpoint keeps no reply of the model's".into()),
                    None,
                ),
            },
            Err(archive) => {
                let (home, ledger, log) = (self.home, self.ledger, self.log);
                match super::apply::claude_fork_at(home, ledger, log, self.cp.offset) {
                    Ok(at) => (shim::claude_at(id, &at.row, fork, None), at.cwd),
                    Err(agent) => (
                        self.nothing(
                            &format!("Claude Code cannot resume there ({agent})"),
                            archive,
                        ),
                        None,
                    ),
                }
            }
        }
    }

    fn copilot(
        &self,
        policy: impl FnOnce() -> (ResumeAssessment, Option<StreamSize>),
    ) -> Result<ResumeShim, PlanError> {
        let id = self.id();
        let record_on = self.plan.as_ref().ok().is_some_and(|p| {
            p.record.next_turn_at.is_some()
                || exact::copilot_record_goes_on(Path::new(&p.record.path), p.record.end)
        });
        if record_on || exact::later_turn(self.ledger, self.log, self.cp.offset)? {
            let why = "the session went on past the checkpoint, and Copilot's own resume \
                       hands the model every later turn (it cannot resume at an earlier point)";
            return Ok(match self.plan {
                Ok(_) => self.put_back(why.into()),
                Err(archive) => self.nothing(why, archive),
            });
        }
        let at = Some(self.cp.checkpoint_id.as_str());
        let (assessment, stream) = policy();
        let native = shim::copilot(id, at, self.transport, &assessment, stream.as_ref());
        Ok(match (self.plan, native.native) {
            // `recover` or a put-back already, or the agent's resume of
            // its own record.
            (Ok(p), true) if !Path::new(&p.record.path).exists() => {
                self.put_back(format!("Copilot's own record {} is gone", p.record.path))
            }
            (Ok(_), _) => native.carrying(self.carried),
            (Err(_), true) => native,
            // A put-back that the archive cannot serve fails: say so.
            (Err(archive), false) if native.program.as_deref() == Some("harnery") => {
                match native.arguments.first().map(String::as_str) {
                    Some("restore") => {
                        self.nothing("Copilot's own events.jsonl was not found", archive)
                    }
                    _ => native,
                }
            }
            (Err(_), false) => native,
        })
    }
}
