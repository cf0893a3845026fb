//! The finalize entry point: [`finalize`], the whole `harnery finalize`
//! job. In order: the epoch gate (an advance found underway is completed
//! first, its carry being the drain), one [`Run`] (pending ready files,
//! intake, the agents' own records, the time rules, then the search index
//! caught up beside emptying the WAL), the caller's report of it, and the
//! raw archive compacted within its budget.
//!
//! The CLI parses and prints; every rule of the job is here.

use serde::Serialize;

use super::compaction::{CompactSettings, after_run};
use super::lease::Lease;
use super::steps::Run;
use super::summary::{FinalizeOptions, Summary};
use crate::epoch::{AdvanceReport, EpochError, advance, advance_underway};
use crate::home::Home;

/// What `harnery finalize` ran: the drain, and the advance it completed
/// first when it found one underway.
#[derive(Debug, Clone, Serialize)]
pub struct FinalizeRun {
    #[serde(flatten)]
    pub summary: Summary,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completed_epoch_advance: Option<AdvanceReport>,
}

/// `harnery finalize`: drain the spools, hand what ran to `report` (the
/// caller prints it), then, unless `compact` is false, compress what fits
/// in the raw archive's budget. The search index is brought up to date at
/// the run's end.
pub fn finalize<E: From<EpochError>>(
    home: &Home,
    mut opts: FinalizeOptions,
    compact: bool,
    report: impl FnOnce(&FinalizeRun) -> Result<(), E>,
) -> Result<(), E> {
    opts.catch_up_search = true;
    let run = gated(home, &opts)?;
    report(&run)?;
    if compact {
        compact_after(home, opts.now_unix_ns);
    }
    Ok(())
}

/// The drain behind the epoch gate. An advance found underway is completed
/// first, by the same steps `harnery epoch advance` runs, and its carry is
/// the drain. With no advance underway this never starts one: a live epoch
/// under another digest is refused and nothing drained.
fn gated(home: &Home, opts: &FinalizeOptions) -> Result<FinalizeRun, EpochError> {
    if !advance_underway(home)? {
        return Ok(FinalizeRun {
            summary: Run::once(home, opts)?,
            completed_epoch_advance: None,
        });
    }
    let report = advance(home, opts)?;
    let summary = match &report.carried {
        Some(s) => s.clone(),
        None => Run::once(home, opts)?,
    };
    Ok(FinalizeRun {
        summary,
        completed_epoch_advance: Some(report),
    })
}

/// What [`drain_if_free`] came to.
#[derive(Debug)]
pub enum Drained {
    /// The run's summary.
    Ran(Summary),
    /// Another finalizer (cron's `finalize`, an epoch advance) holds the
    /// lease: nothing was done, and that one drains.
    Busy,
    /// An epoch advance is underway: left for `harnery finalize` (or
    /// `harnery epoch advance`) to complete.
    AdvanceUnderway,
}

/// One drain as `harnery finalize` runs it ([`Run::once`]: ready files,
/// intake, the agents' own records, the time rules), if the lease is free
/// now; it never waits for it. For a caller that drains often (`serve`):
/// no search catch-up (a search brings the index up to date itself) and no
/// compaction (the scheduled `finalize` does both).
pub fn drain_if_free(home: &Home, opts: &FinalizeOptions) -> Result<Drained, EpochError> {
    let Some(lease) = Lease::try_take(home).map_err(super::FinalizeError::from)? else {
        return Ok(Drained::Busy);
    };
    if advance_underway(home)? {
        return Ok(Drained::AdvanceUnderway);
    }
    Ok(Drained::Ran(Run::under(lease, home, opts)?))
}

/// Compress the raw archive (all of it, or what fits in a configured budget), after
/// the run's report (the run is complete; this only saves space). A
/// failure is a warning: the next run, or `harnery archive compact`, goes
/// on from where this stopped.
fn compact_after(home: &Home, now_unix_ns: i64) {
    let done = CompactSettings::load(home).and_then(|settings| {
        if settings.enabled {
            after_run(home, now_unix_ns, settings.budget)?;
        }
        Ok(())
    });
    if let Err(e) = done {
        crate::terminal::warn(&format!(
            "harnery finalize: the raw archive was not compacted ({e}); \
             the ledger is complete, and the next finalize (or `harnery archive compact`) tries again"
        ));
    }
}
