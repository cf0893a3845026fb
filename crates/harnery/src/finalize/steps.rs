//! One finalizer run under the lease, as a [`Run`]: the home, the ledger
//! writer, the incarnation that fences it, the options and the summary it
//! fills, held once and handed to each step as `self`. The steps, in
//! order: pending ready files (`apply.rs`), the intake spool session by
//! session (`intake.rs`), the agents' own records (`record.rs`), the time
//! rules (`state.rs`), the summary's span counts, and the ledger closed.
//!
//! The whole `harnery finalize` job (epoch gate, compaction) starts at
//! [`super::finalize`] in `run.rs`; an epoch advance's carry runs
//! [`Run::once`] directly.

use super::summary::{FinalizeOptions, HealthNote, Summary, UNREADABLE_ROW};
use super::{FinalizeError, lease::Lease};
use crate::home::Home;
use crate::ledger::LedgerWriter;

/// One run's shared values: what every step reads and fills.
pub struct Run<'a> {
    pub(super) home: &'a Home,
    pub(super) ledger: LedgerWriter,
    /// This run's durable incarnation number, checked by every append.
    pub(super) incarnation: u64,
    pub(super) opts: &'a FinalizeOptions,
    pub(super) summary: Summary,
}

impl<'a> Run<'a> {
    /// Run the finalizer once over `home`: take the lease, then every step.
    pub fn once(home: &'a Home, opts: &'a FinalizeOptions) -> Result<Summary, FinalizeError> {
        Self::under(Lease::take(home)?, home, opts, &|| {})
    }

    /// Run every step under `lease`, already held (dropped at the end).
    /// `intake_done` is called once the intake spool is drained and
    /// committed, before the agents' records are followed, if the run has
    /// appended anything by then: `finalize` starts the search catch-up
    /// there, so that it reads what the hooks brought while the rest of
    /// the run goes on (`run.rs`).
    pub(crate) fn under(
        lease: Lease,
        home: &'a Home,
        opts: &'a FinalizeOptions,
        intake_done: &dyn Fn(),
    ) -> Result<Summary, FinalizeError> {
        let _lease = lease;
        let t = std::time::Instant::now();
        let ledger = LedgerWriter::open(home, opts.now_unix_ns)?;
        let mut run = Run::on(home, ledger, opts)?;
        run.summary.ready_files_recovered = run.apply_pending()?;
        super::timing("open", t);
        let t = std::time::Instant::now();
        run.drain()?;
        super::timing("intake", t);
        if run.summary.events_appended > 0 {
            intake_done();
        }
        if opts.follow_records {
            run.follow_records()?;
        }
        let t = std::time::Instant::now();
        run.tick_all()?;
        super::timing("tick", t);
        let summary = run.finish()?;
        super::last_run::record(home, opts.now_unix_ns, &summary);
        Ok(summary)
    }

    /// A run over `ledger`, opened by a caller that holds the lease; it
    /// takes the ledger's next incarnation.
    pub(crate) fn on(
        home: &'a Home,
        mut ledger: LedgerWriter,
        opts: &'a FinalizeOptions,
    ) -> Result<Run<'a>, FinalizeError> {
        let incarnation = ledger.take_incarnation()?;
        Ok(Run {
            home,
            ledger,
            incarnation,
            opts,
            summary: Summary {
                incarnation,
                ..Summary::default()
            },
        })
    }

    /// The agents' own records, pass by pass, each drained before the next
    /// reads on; after the first, only the sessions whose records had more.
    fn follow_records(&mut self) -> Result<(), FinalizeError> {
        let mut only: Option<Vec<crate::contract::SessionRef>> = None;
        let mut budget = super::record::RunBudget::default();
        for _ in 0..super::record::MAX_PASSES {
            let t = std::time::Instant::now();
            let (written, wrote_for) = super::record::follow(
                self.home,
                &self.ledger,
                self.opts.now_unix_ns,
                &self.opts.clock,
                only.as_deref(),
                &mut budget,
            )?;
            if written == 0 {
                break;
            }
            self.summary.record_signals += written;
            super::timing("follow", t);
            let t = std::time::Instant::now();
            self.drain()?;
            super::timing("drain", t);
            only = Some(wrote_for);
        }
        Ok(())
    }

    /// The summary's span counts and set-aside rows; the ledger closed.
    fn finish(mut self) -> Result<Summary, FinalizeError> {
        let t = std::time::Instant::now();
        for s in self.ledger.sessions().list()? {
            self.summary.spans.open += s.spans.open;
            self.summary.spans.closed_native += s.spans.closed_native;
            self.summary.spans.recovered += s.spans.recovered;
        }
        super::timing("summary", t);
        for row in self.ledger.take_set_aside() {
            self.summary.health.push(HealthNote {
                session: row.row.clone(),
                code: UNREADABLE_ROW.into(),
                detail: row.to_string(),
            });
        }
        let t = std::time::Instant::now();
        drop(self.ledger);
        super::timing("close", t);
        Ok(self.summary)
    }
}
