//! One finalizer run: lease, incarnation, pending ready files, then the
//! intake spool session by session (`intake`), then the agents' own
//! records (`record`), then the time rules (`state`).

use super::apply::apply_pending;
use super::summary::{FinalizeOptions, HealthNote, Summary, UNREADABLE_ROW};
use super::{FinalizeError, lease::Lease};
use crate::home::Home;
use crate::ledger::{Checkpointer, LedgerReader, LedgerWriter};

/// Run the finalizer once over `home`.
pub fn finalize(home: &Home, opts: &FinalizeOptions) -> Result<Summary, FinalizeError> {
    let t = std::time::Instant::now();
    let _lease = Lease::take(home)?;
    let mut ledger = LedgerWriter::open(home, opts.now_unix_ns)?;
    let incarnation = ledger.take_incarnation()?;
    let mut summary = Summary {
        incarnation,
        ..Summary::default()
    };
    summary.ready_files_recovered =
        apply_pending(home, &mut ledger, incarnation, opts, &mut summary)?;
    super::timing("open", t);
    let t = std::time::Instant::now();
    super::intake::drain(home, &mut ledger, incarnation, opts, &mut summary)?;
    super::timing("intake", t);
    if opts.follow_records {
        // Pass by pass, each drained before the next reads on; after the
        // first, only the sessions whose records had more.
        let mut only: Option<Vec<crate::contract::SessionRef>> = None;
        let mut budget = super::record::RunBudget::default();
        for _ in 0..super::record::MAX_PASSES {
            let t = std::time::Instant::now();
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
            super::timing("follow", t);
            let t = std::time::Instant::now();
            super::intake::drain(home, &mut ledger, incarnation, opts, &mut summary)?;
            super::timing("drain", t);
            only = Some(wrote_for);
        }
    }
    let t = std::time::Instant::now();
    super::state::tick_all(home, &mut ledger, incarnation, opts, &mut summary)?;
    super::timing("tick", t);
    let t = std::time::Instant::now();
    finish_summary(&ledger, &mut summary)?;
    super::timing("summary", t);
    for row in ledger.take_set_aside() {
        summary.health.push(HealthNote {
            session: row.row.clone(),
            code: UNREADABLE_ROW.into(),
            detail: row.to_string(),
        });
    }
    if let Some(work) = opts.beside_close {
        let t = std::time::Instant::now();
        empty_wal_beside(&ledger, || work(home));
        super::timing("beside-close", t);
    }
    Ok(summary)
}

/// Do `work` while another thread checkpoints the WAL this run grew and
/// cuts it to nothing. Closing the ledger deletes that file, and the
/// kernel freeing its pages is a serial stretch at the run's end (60 ms
/// for the 150 MB a 170 MB drain of agents' records leaves); beside
/// `work` it costs nothing. Only a saving: when a reader keeps the WAL,
/// the cut gives up after the checkpointer's busy timeout, and the close
/// deletes the file as it always did.
fn empty_wal_beside(ledger: &LedgerWriter, work: impl FnOnce()) {
    // The writer's page cache is not needed any more; `work` reuses it.
    let _ = ledger.shrink_memory();
    let dir = ledger.dir().to_path_buf();
    std::thread::scope(|scope| {
        // A thread that does not start is only a saving missed.
        let _ = std::thread::Builder::new()
            .name("harnery-wal".into())
            .spawn_scoped(scope, move || {
                if let Ok(checkpointer) = Checkpointer::open(&dir) {
                    let _ = checkpointer.truncate();
                }
            });
        work();
    });
}

fn finish_summary(ledger: &LedgerReader, summary: &mut Summary) -> Result<(), FinalizeError> {
    for s in ledger.sessions()? {
        summary.spans.open += s.spans.open;
        summary.spans.closed_native += s.spans.closed_native;
        summary.spans.recovered += s.spans.recovered;
    }
    Ok(())
}
