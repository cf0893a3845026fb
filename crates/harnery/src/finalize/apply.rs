//! Stage two: validate a ready file's batch and append it in one ledger
//! transaction, then release what it came from (its intake segments and
//! the ready file itself) once the commit is durable. Also the recovery
//! step at the start of a run: apply every ready file a crashed run left.

use std::path::Path;

use super::summary::{FinalizeOptions, HealthNote, Summary};
use super::{FinalizeError, ready, timing};
use crate::failpoint;
use crate::home::Home;
use crate::ledger::{AppendBatch, AppendOutcome, LedgerError, LedgerWriter};

/// Apply every pending ready file (oldest first); returns how many.
pub fn apply_pending(
    home: &Home,
    ledger: &mut LedgerWriter,
    incarnation: u64,
    opts: &FinalizeOptions,
    summary: &mut Summary,
) -> Result<u64, FinalizeError> {
    ready::remove_orphans(home)?;
    let files = ready::pending(home)?;
    let waiting: std::collections::HashSet<String> =
        files.iter().filter_map(|p| ready::batch_of(p)).collect();
    crate::ledger::remove_orphans(ledger, |batch| waiting.contains(batch))?;
    for path in &files {
        apply_file(home, ledger, path, incarnation, opts, summary)?;
    }
    Ok(files.len() as u64)
}

/// Stage two for one ready file read back from disk.
pub(super) fn apply_file(
    home: &Home,
    ledger: &mut LedgerWriter,
    path: &Path,
    incarnation: u64,
    opts: &FinalizeOptions,
    summary: &mut Summary,
) -> Result<(), FinalizeError> {
    let t = std::time::Instant::now();
    let batch = ready::read(path)?;
    timing("ready-read", t);
    apply_batch(home, ledger, path, &batch, incarnation, opts, summary)
}

/// Stage two: validate + append `batch` (the content of the durable ready
/// file at `path`) in one transaction, then delete the intake segments it
/// names and the ready file itself.
pub(super) fn apply_batch(
    home: &Home,
    ledger: &mut LedgerWriter,
    path: &Path,
    batch: &AppendBatch,
    incarnation: u64,
    opts: &FinalizeOptions,
    summary: &mut Summary,
) -> Result<(), FinalizeError> {
    append_batch(ledger, path, batch, incarnation, opts, summary)?;
    release(home, path, &batch.sources)
}

/// Validate + append `batch` in one transaction; its files stay until the
/// commit is durable (see [`release`]).
pub(super) fn append_batch(
    ledger: &mut LedgerWriter,
    path: &Path,
    batch: &AppendBatch,
    incarnation: u64,
    opts: &FinalizeOptions,
    summary: &mut Summary,
) -> Result<(), FinalizeError> {
    let t = std::time::Instant::now();
    let outcome = ledger
        .append(batch, incarnation, opts.now_unix_ns, &|| {
            failpoint::hit("mid-transaction")
        })
        .map_err(|e| refuse(path, e))?;
    timing("append", t);
    if let AppendOutcome::Appended { events, signals } = outcome {
        summary.batches_applied += 1;
        summary.events_appended += events as u64;
        opts.progress.add(events as u64);
        summary.signals_drained += signals as u64;
        note_health(batch, summary);
    }
    failpoint::hit("after-commit");
    Ok(())
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
