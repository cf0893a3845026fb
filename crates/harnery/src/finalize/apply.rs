//! Stage two: validate a ready file's batch and append it in one ledger
//! transaction, then release what it came from (its intake segments and
//! the ready file itself) once the commit is durable. Also the recovery
//! step at the start of a run: apply every ready file a crashed run left.

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

    /// Stage two for one ready file read back from disk.
    fn apply_file(&mut self, path: &Path) -> Result<(), FinalizeError> {
        let t = std::time::Instant::now();
        let batch = ready::read(path)?;
        timing("ready-read", t);
        self.apply_batch(path, &batch)
    }

    /// Stage two: validate + append `batch` (the content of the durable ready
    /// file at `path`) in one transaction, then delete the intake segments it
    /// names and the ready file itself.
    pub(super) fn apply_batch(
        &mut self,
        path: &Path,
        batch: &AppendBatch,
    ) -> Result<(), FinalizeError> {
        self.append_batch(path, batch, None)?;
        release(self.home, path, &batch.sources)
    }

    /// Validate + append `batch` in one transaction (with its work made
    /// ahead, if it was); its files stay until the commit is
    /// durable (see [`release`]).
    pub(super) fn append_batch(
        &mut self,
        path: &Path,
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
            .map_err(|e| refuse(path, e))?;
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
/// names (relative to the home) and its ready file at `path`.
pub(super) fn release(home: &Home, path: &Path, sources: &[String]) -> Result<(), FinalizeError> {
    for source in sources {
        remove_segment(&home.root().join(source))?;
    }
    ready::remove(path)
}

fn refuse(path: &Path, e: LedgerError) -> FinalizeError {
    match e {
        LedgerError::Refused { .. } => FinalizeError::Refused {
            path: path.to_path_buf(),
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
