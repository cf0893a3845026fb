//! One finalizer run: lease, incarnation, pending ready files, then the
//! intake spool session by session (`intake`), then the agents' own
//! records (`record`), then the time rules (`state`).

use super::apply::apply_pending;
use super::summary::{FinalizeOptions, HealthNote, Summary, UNREADABLE_ROW};
use super::{FinalizeError, lease::Lease};
use crate::home::Home;
use crate::ledger::{LedgerReader, LedgerWriter};

/// Run the finalizer once over `home`.
pub fn finalize(home: &Home, opts: &FinalizeOptions) -> Result<Summary, FinalizeError> {
    let _lease = Lease::take(home)?;
    let mut ledger = LedgerWriter::open(home, opts.now_unix_ns)?;
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

fn finish_summary(ledger: &LedgerReader, summary: &mut Summary) -> Result<(), FinalizeError> {
    for s in ledger.sessions()? {
        summary.spans.open += s.spans.open;
        summary.spans.closed_native += s.spans.closed_native;
        summary.spans.recovered += s.spans.recovered;
    }
    Ok(())
}
