//! The lines `harnery restore` prints for a person: the checkpoint, the
//! seed and its effects, the resume, whether the restore was recorded,
//! and what `--apply` writes (or wrote, or why it cannot). The JSON form
//! is the serde form of the same values.

use std::fmt::Write;

use super::apply::ApplyPlan;
use super::error::PlanError;
use super::plan::Restored;
use super::seed::Restore;
use crate::contract::{Effect, Observation};

impl Restored<'_> {
    /// The restore in lines. `events` is the seed's event count (counting
    /// reads the ledger), `asked_record` whether `--record` was given,
    /// `exec` whether the resume runs now (its command is then shown
    /// briefly).
    pub fn text(&self, events: u64, asked_record: bool, exec: bool) -> String {
        let mut out = String::new();
        restore_lines(&mut out, &self.restore, events, exec);
        match (asked_record, self.recorded) {
            (_, true) => {}
            (true, false) => out.push_str(
                "  (not recorded: --record arms an in-place resume, and none resumes this session \
                 exactly at the checkpoint: either no command resumes it in place there, or the \
                 kept turns' events go on past its offset and would be marked superseded though \
                 the agent is given them; --apply starts a new session there)\n",
            ),
            (false, false) => out.push_str(
                "  (not recorded: --record arms an in-place resume; --apply starts a new session)\n",
            ),
        }
        plan_lines(&mut out, &self.plan);
        out
    }
}

/// The checkpoint, the seed, its effects and the resume.
fn restore_lines(out: &mut String, r: &Restore, events: u64, exec: bool) {
    let cp = &r.seed.checkpoint;
    let commit = match &cp.commit {
        Observation::Observed(sha) => format!("commit {sha}"),
        Observation::Unknown(why) => format!("commit unknown ({why})"),
    };
    let _ = writeln!(
        out,
        "restore {}/{} from checkpoint {} ({}, {commit})",
        r.seed.session.adapter, r.seed.session.session_id, cp.checkpoint_id, cp.origin
    );
    let _ = writeln!(
        out,
        "  seed: {} events below offset {}; the log goes on at offset {} as incarnation {}",
        events, r.seed.boundary_offset, r.seed.next_offset, r.seed.next_incarnation
    );
    let _ = writeln!(out, "  effects ({}):", r.seed.effects.len());
    effect_lines(out, &r.seed.effects);
    if !r.seed.may_have_run.is_empty() {
        let _ = writeln!(out, "  may have run ({}):", r.seed.may_have_run.len());
        effect_lines(out, &r.seed.may_have_run);
    }
    if !r.shim.runnable {
        let _ = writeln!(out, "  resume: none ({})", r.shim.reason);
    } else {
        let native = if r.shim.native {
            "native"
        } else {
            "not native"
        };
        let _ = writeln!(out, "  resume ({native}; {}):", r.shim.reason);
        // What runs next need not be written out whole.
        let command = if exec {
            r.shim.brief()
        } else {
            r.shim.text.clone()
        };
        let _ = writeln!(out, "    {command}");
    }
    if let Some(interactive) = &r.shim.interactive {
        let _ = writeln!(out, "  interactive resume: {interactive}");
    }
}

/// One line per effect: its kind and reference, then each field it has.
fn effect_lines(out: &mut String, effects: &[Effect]) {
    for e in effects {
        let _ = write!(out, "    {} {}", e.kind, e.reference);
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
                let _ = write!(out, "  {label} {v}");
            }
        }
        for p in &e.paths {
            let _ = write!(out, "  path {p}");
        }
        out.push('\n');
    }
}

/// What `--apply` writes or wrote, with the steering kept apart, or why
/// it cannot put the record back.
fn plan_lines(out: &mut String, plan: &Result<ApplyPlan, PlanError>) {
    let p = match plan {
        Ok(p) => p,
        Err(e) => {
            let _ = writeln!(out, "  --apply cannot put the record back: {e}");
            return;
        }
    };
    let verb = if p.applied {
        "wrote"
    } else {
        "--apply would write"
    };
    let _ = writeln!(
        out,
        "  {verb} {} bytes of {} ({} turns, up to byte {}) as new session {} at {}",
        p.bytes,
        p.record.path,
        p.record.turns,
        p.record.end,
        p.session_id,
        p.path.display()
    );
    if !p.steering.is_empty() {
        let _ = writeln!(out, "  steering, not the user's ({}):", p.steering.len());
    }
    for s in &p.steering {
        let text: String = s.text.as_deref().unwrap_or("").chars().take(72).collect();
        let _ = writeln!(out, "    offset {} from {}: {text}", s.offset, s.source);
    }
}
