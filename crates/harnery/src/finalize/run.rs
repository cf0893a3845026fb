//! One finalizer run: lease, incarnation, pending ready files, then the
//! intake spool session by session, then the time rules.

use std::path::Path;

use serde::Serialize;

use super::{FinalizeError, lease::Lease, ready};
use crate::clock::ClockSample;
use crate::failpoint;
use crate::home::Home;
use crate::ledger::{AppendBatch, AppendOutcome, Ledger, LedgerError, SpanCounts};

/// What a run is told about the world.
#[derive(Debug, Clone)]
pub struct FinalizeOptions {
    /// "Now" for time rules (24 h end expiry); injectable for tests.
    pub now_unix_ns: i64,
    pub clock: ClockSample,
    /// Events appended, as they are (a bar on a terminal, else nobody).
    pub progress: crate::progress::Progress,
    /// Read on in each session's own record after the hook signals
    /// (`HARNERY_RECORDS=off` says no; see `finalize::record`).
    pub follow_records: bool,
}

/// A damaged spool byte range the run skipped (also a ledger health event).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DamagedRange {
    pub file: String,
    pub start: u64,
    pub end: u64,
    pub kind: String,
}

/// The condition code of a ledger row a command could not read and went
/// on without (see `ledger::UnreadableRow`).
pub const UNREADABLE_ROW: &str = "unreadable_row";

/// A health condition the run recorded or found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HealthNote {
    pub session: String,
    pub code: String,
    pub detail: String,
}

/// What `harnery finalize` reports.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Summary {
    pub incarnation: u64,
    pub ready_files_recovered: u64,
    pub batches_applied: u64,
    pub signals_drained: u64,
    pub events_appended: u64,
    /// `harnery.record` and `harnery.record_problem` signals this run wrote
    /// from the agents' own records (and drained with the others).
    pub record_signals: u64,
    /// Span counts by state over the whole ledger after the run.
    pub spans: SpanCounts,
    pub damaged_ranges: Vec<DamagedRange>,
    pub health: Vec<HealthNote>,
}

/// Run the finalizer once over `home`.
pub fn finalize(home: &Home, opts: &FinalizeOptions) -> Result<Summary, FinalizeError> {
    let _lease = Lease::take(home)?;
    let mut ledger = Ledger::open_write(home, opts.now_unix_ns)?;
    let incarnation = ledger.take_incarnation()?;
    let mut summary = Summary {
        incarnation,
        ..Summary::default()
    };
    summary.ready_files_recovered =
        apply_pending(home, &mut ledger, incarnation, opts, &mut summary)?;
    super::intake::drain(home, &mut ledger, incarnation, opts, &mut summary)?;
    if opts.follow_records {
        // Pass by pass, each drained before the next reads on; after the
        // first, only the sessions whose records had more.
        let mut only: Option<Vec<crate::contract::SessionRef>> = None;
        let mut budget = super::record::RunBudget::default();
        for _ in 0..super::record::MAX_PASSES {
            let (written, wrote_for) = super::record::follow(
                home,
                &ledger,
                opts.now_unix_ns,
                &opts.clock,
                only.as_deref(),
                &mut budget,
            )?;
            if written == 0 {
                break;
            }
            summary.record_signals += written;
            super::intake::drain(home, &mut ledger, incarnation, opts, &mut summary)?;
            only = Some(wrote_for);
        }
    }
    super::state::tick_all(home, &mut ledger, incarnation, opts, &mut summary)?;
    finish_summary(&ledger, &mut summary)?;
    for row in ledger.take_set_aside() {
        summary.health.push(HealthNote {
            session: row.row.clone(),
            code: UNREADABLE_ROW.into(),
            detail: row.to_string(),
        });
    }
    Ok(summary)
}

/// Apply every pending ready file (oldest first); returns how many.
pub fn apply_pending(
    home: &Home,
    ledger: &mut Ledger,
    incarnation: u64,
    opts: &FinalizeOptions,
    summary: &mut Summary,
) -> Result<u64, FinalizeError> {
    ready::remove_orphans(home)?;
    let files = ready::pending(home)?;
    let waiting: std::collections::HashSet<String> =
        files.iter().filter_map(|p| ready::batch_of(p)).collect();
    crate::ledger::raw::remove_orphans(ledger, |batch| waiting.contains(batch))?;
    for path in &files {
        apply_file(home, ledger, path, incarnation, opts, summary)?;
    }
    Ok(files.len() as u64)
}

/// Stage two for one ready file read back from disk.
pub(super) fn apply_file(
    home: &Home,
    ledger: &mut Ledger,
    path: &Path,
    incarnation: u64,
    opts: &FinalizeOptions,
    summary: &mut Summary,
) -> Result<(), FinalizeError> {
    let t = std::time::Instant::now();
    let batch = ready::read(path)?;
    super::intake::timing("ready-read", t);
    apply_batch(home, ledger, path, &batch, incarnation, opts, summary)
}

/// Stage two: validate + append `batch` (the content of the durable ready
/// file at `path`) in one transaction, then delete the intake segments it
/// names and the ready file itself.
pub(super) fn apply_batch(
    home: &Home,
    ledger: &mut Ledger,
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
    ledger: &mut Ledger,
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
    super::intake::timing("append", t);
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

fn finish_summary(ledger: &Ledger, summary: &mut Summary) -> Result<(), FinalizeError> {
    for s in ledger.sessions()? {
        summary.spans.open += s.spans.open;
        summary.spans.closed_native += s.spans.closed_native;
        summary.spans.recovered += s.spans.recovered;
    }
    Ok(())
}
