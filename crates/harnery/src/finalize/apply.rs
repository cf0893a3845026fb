//! Stage two: validate a batch and append it in one ledger transaction,
//! then release what it came from (its intake segments, and the ready file
//! it was read from, if any) once the commit is durable. Also the recovery
//! step at the start of a run: apply every ready file left in the ready
//! spool (by an injection, or by a crashed build from before 2026-12-07,
//! which wrote one per batch).

use std::path::Path;

use super::steps::Run;
use super::summary::{HealthNote, Summary};
use super::{FinalizeError, ready, timing};
use crate::failpoint;
use crate::home::Home;
use crate::ledger::{AppendBatch, AppendOutcome, LedgerError, MadeAhead};

impl Run<'_> {
    /// Apply every pending ready file (oldest first); returns how many.
    pub(crate) fn apply_pending(&mut self) -> Result<u64, FinalizeError> {
        ready::remove_orphans(self.home)?;
        let files = ready::pending(self.home)?;
        let waiting: std::collections::HashSet<String> =
            files.iter().filter_map(|p| ready::batch_of(p)).collect();
        crate::ledger::remove_orphans(&self.ledger, |batch| waiting.contains(batch))?;
        for path in &files {
            self.apply_file(path)?;
        }
        Ok(files.len() as u64)
    }

    /// Stage two for one ready file read back from disk: validate + append
    /// its batch in one transaction (durable when it returns: no run syncs
    /// in the background here), then delete the intake segments it names
    /// and the ready file itself.
    fn apply_file(&mut self, path: &Path) -> Result<(), FinalizeError> {
        let t = std::time::Instant::now();
        let batch = ready::read(path)?;
        timing("ready-read", t);
        let origin = || format!("ready file {}", path.display());
        self.append_batch(&origin, &batch, None)?;
        release(self.home, &batch.sources)?;
        ready::remove(path)
    }

    /// Validate + append `batch` in one transaction (with its work made
    /// ahead, if it was); what it came from stays until the commit is
    /// durable (see [`release`]). `origin` names the batch in a refusal
    /// (called only then).
    pub(super) fn append_batch(
        &mut self,
        origin: &dyn Fn() -> String,
        batch: &AppendBatch,
        made: Option<&MadeAhead>,
    ) -> Result<(), FinalizeError> {
        let t = std::time::Instant::now();
        let outcome = self
            .ledger
            .append_ahead(
                batch,
                made,
                self.incarnation,
                self.opts.now_unix_ns,
                &|| failpoint::hit("mid-transaction"),
            )
            .map_err(|e| refuse(origin, e))?;
        timing("append", t);
        if let AppendOutcome::Appended { events, signals } = outcome {
            let summary = &mut self.summary;
            summary.batches_applied += 1;
            summary.events_appended += events as u64;
            self.opts.progress.add(events as u64);
            summary.signals_drained += signals as u64;
            note_health(batch, summary);
        }
        failpoint::hit("after-commit");
        Ok(())
    }
}

/// Delete what a durably committed batch came from: the intake segments it
/// names (relative to the home). Until then they are the batch's only
/// durable form besides the raw archive: a run that stops before the
/// commit is durable leaves them, and the next run drains them again.
pub(super) fn release(home: &Home, sources: &[String]) -> Result<(), FinalizeError> {
    for source in sources {
        remove_segment(&home.root().join(source))?;
    }
    Ok(())
}

fn refuse(origin: &dyn Fn() -> String, e: LedgerError) -> FinalizeError {
    match e {
        LedgerError::Refused { .. } => FinalizeError::Refused {
            origin: origin(),
            source: e,
        },
        other => other.into(),
    }
}

fn note_health(batch: &crate::ledger::AppendBatch, summary: &mut Summary) {
    for row in &batch.events {
        if let crate::contract::Payload::HealthCondition(h) = &row.event.payload {
            summary.health.push(HealthNote {
                session: row.event.session.session_id.clone(),
                code: h.code.clone(),
                detail: h.detail.clone(),
            });
        }
    }
}

/// Delete a drained intake segment (already gone is fine). The unlink is
/// not fsynced: if a crash undoes it, the ledger's drained-segment record
/// makes the next run delete the file again instead of draining it twice.
pub(super) fn remove_segment(path: &Path) -> Result<(), FinalizeError> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(FinalizeError::io(path, e)),
    }
}
