//! The finalize entry point: [`finalize`], the whole `harnery finalize`
//! job. In order: the epoch gate (an advance found underway is completed
//! first, its carry being the drain), one [`Run`] (pending ready files,
//! intake, the agents' own records, the time rules), then, side by side,
//! the search index caught up on a thread of its own and, on the caller's,
//! the report of the run and the raw archive compacted within its budget.
//! Neither waits for the other: the catch-up reads the ledger in read
//! transactions and writes only the index's own file, and compaction
//! changes how the ledger stores what the run committed (never what it
//! says) in write transactions of its own, under the lease. The catch-up
//! starts early, beside the run itself, once the intake is committed: it
//! reads what the hooks brought while the records are followed and the
//! time rules run, and the catch-up after the run reads the rest, within
//! what the first left of the one budget.
//!
//! The CLI parses and prints; every rule of the job is here.

use serde::Serialize;

use super::compaction::{CompactSettings, after_run};
use super::lease::Lease;
use super::steps::Run;
use super::summary::{FinalizeOptions, Summary};
use crate::epoch::{AdvanceReport, EpochError, advance, advance_underway};
use crate::home::Home;
use crate::ledger::{Checkpointer, LedgerReader};

/// What `harnery finalize` ran: the drain, and the advance it completed
/// first when it found one underway.
#[derive(Debug, Clone, Serialize)]
pub struct FinalizeRun {
    #[serde(flatten)]
    pub summary: Summary,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completed_epoch_advance: Option<AdvanceReport>,
}

/// `harnery finalize`: drain the spools (the search index catching up on
/// what the hooks brought once their intake is committed), then bring the
/// search index up to date beside handing what ran to `report` (the caller
/// prints it) and, unless `compact` is false, compressing what fits in the
/// raw archive's budget. On a large run the catch-up and compaction take
/// about as long as each other, so side by side they use the cores the
/// other leaves idle (`docs/perf/figures.md`, the ingest against ccusage).
pub fn finalize<E: From<EpochError>>(
    home: &Home,
    opts: FinalizeOptions,
    compact: bool,
    report: impl FnOnce(&FinalizeRun) -> Result<(), E>,
) -> Result<(), E> {
    std::thread::scope(|scope| {
        // The catch-up starts as soon as the hook signals are committed,
        // on a thread beside the rest of the run: following the records
        // and the time rules leave a core idle much of the time.
        let early = std::cell::OnceCell::new();
        let start_early = || {
            let thread = std::thread::Builder::new()
                .name("harnery-search".into())
                .spawn_scoped(scope, || catch_up_quietly(home));
            // Without a thread, the catch-up after the run reads it all.
            if let Ok(thread) = thread {
                let _ = early.set(thread);
            }
        };
        let run = gated(home, &opts, &start_early)?;
        let early = early.into_inner();
        let started_early = early.is_some();
        let read_early = early.map_or(0, |t| t.join().expect("the search catch-up does not panic"));
        let budget = crate::search::FINALIZE_BUDGET.saturating_sub(read_early);
        let search = std::thread::Builder::new()
            .name("harnery-search".into())
            .spawn_scoped(scope, move || keep_search_current(home, budget));
        let reported = report(&run);
        let compacted = reported.is_ok() && compact && compact_after(home, opts.now_unix_ns);
        match search {
            Ok(thread) => thread.join().expect("the search catch-up does not panic"),
            Err(_) => keep_search_current(home, budget),
        }
        // The early catch-up may have been reading when the run closed its
        // ledger, as compaction's writer may close while the final one reads.
        if compacted || started_early {
            leave_wal_empty(home);
        }
        reported
    })
}

/// The drain behind the epoch gate. An advance found underway is completed
/// first, by the same steps `harnery epoch advance` runs, and its carry is
/// the drain. With no advance underway this never starts one: a live epoch
/// under another digest is refused and nothing drained.
/// `intake_done` is called once the run's intake is committed (not
/// by an advance's carry).
fn gated(
    home: &Home,
    opts: &FinalizeOptions,
    intake_done: &dyn Fn(),
) -> Result<FinalizeRun, EpochError> {
    if !advance_underway(home)? {
        let lease = Lease::take(home).map_err(super::FinalizeError::from)?;
        return Ok(FinalizeRun {
            summary: Run::under(lease, home, opts, intake_done)?,
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
    Ok(Drained::Ran(Run::under(lease, home, opts, &|| {})?))
}

/// Compress the raw archive (all of it, or what fits in a configured budget), after
/// the run's report (the run is complete; this only saves space); whether
/// it wrote to the ledger. A failure is a warning: the next run, or
/// `harnery archive compact`, goes on from where this stopped.
fn compact_after(home: &Home, now_unix_ns: i64) -> bool {
    let done = CompactSettings::load(home).and_then(|settings| {
        if !settings.enabled {
            return Ok(false);
        }
        let t = std::time::Instant::now();
        let ran = after_run(home, now_unix_ns, settings.budget)?;
        super::timing("compact", t);
        Ok(ran.is_some())
    });
    done.unwrap_or_else(|e| {
        crate::terminal::warn(&format!(
            "harnery finalize: the raw archive was not compacted ({e}); \
             the ledger is complete, and the next finalize (or `harnery archive compact`) tries again"
        ));
        // It may have committed some batches before it failed.
        true
    })
}

/// Leave the live ledger's WAL empty once compaction and the search
/// catch-up are both done, as a run leaves it when it closes the ledger
/// last. Compaction's writer may close while the catch-up still reads, and
/// a connection that only reads cannot checkpoint when it closes last: the
/// WAL would keep compaction's commits until some later writer, and a
/// copy of `ledger.sqlite` alone would not be the whole ledger. Only a
/// tidy-up: a reader elsewhere that holds on keeps the WAL (after the
/// checkpointer's short wait), and its last writer empties it later.
fn leave_wal_empty(home: &Home) {
    let dir = LedgerReader::live_dir(home);
    let db = dir.join(crate::ledger::DB_FILE);
    if !(db.exists() && Checkpointer::wal_of(&dir).exists()) {
        return;
    }
    if let Ok(checkpointer) = Checkpointer::open(&dir) {
        let _ = checkpointer.truncate();
    }
}

/// Bring the search index up to date with what the run committed, reading
/// `budget` ledger rows at most (what the early catch-up left of
/// [`crate::search::FINALIZE_BUDGET`]). The index is never the truth: a
/// failure is a warning, and the next run (or the next search) catches up
/// from where the index stopped.
fn keep_search_current(home: &Home, budget: u64) {
    if budget == 0 {
        return;
    }
    let t = std::time::Instant::now();
    let caught_up = crate::search::update_live_within(home, budget);
    super::timing("search", t);
    if let Err(e) = caught_up {
        crate::terminal::warn(&format!(
            "harnery finalize: the search index was not brought up to date ({e}); \
             the ledger is complete, and the next finalize or search tries again"
        ));
    }
}

/// The catch-up over what the hooks brought, while the run goes on: the
/// rows it read. A failure is not reported here: the catch-up after the
/// run tries again, and warns if it fails too.
fn catch_up_quietly(home: &Home) -> u64 {
    let t = std::time::Instant::now();
    let read = crate::search::update_live_within(home, crate::search::FINALIZE_BUDGET).unwrap_or(0);
    super::timing("search-early", t);
    read
}
