//! `harnery finalize`: from raw intake signals to ledger rows, exactly once.
//!
//! Two stages (DESIGN §2). Stage one seals intake segments, normalizes their
//! records with the per-session producer (state loaded from the ledger) into
//! a batch stamped with the contract digest (the canonical rows, the raw
//! signals and the new producer state) and keeps the segments as the batch's
//! raw archive. Stage two validates every row of the batch and appends it in
//! one ledger transaction; only once that commit is durable are the intake
//! segments deleted, so a run that stops earlier leaves them to be drained
//! again, and nothing is lost or doubled. The ready spool (a batch as a
//! file) is applied first by every run: drains wrote one per batch until
//! 2026-12-07, and a crashed run of such a build may have left some.
//!
//! One finalizer at a time: a lease on the home plus the ledger's durable
//! incarnation number, checked by every write transaction. A failed fsync or
//! commit stops the run (never retried); the next run starts clean.
//!
//! Files, in the order a run uses them:
//! - `run.rs`: the finalize entry point, the whole job ([`finalize`]): epoch
//!   gate, one run (the search index caught up at its end), compaction.
//! - `steps.rs`: one run under the lease ([`Run`]), its steps as methods.
//! - `lease.rs`: the one-finalizer-at-a-time lease on the home.
//! - `last_run.rs`: when a run last completed (`ledgers/finalize.last`,
//!   outside the ledger), for `harnery health`.
//! - `summary.rs`: what a run is told ([`FinalizeOptions`]) and reports ([`Summary`]).
//! - `intake.rs` (+ `intake/`): the drain pipeline from sealed spool files to committed batches.
//! - `ready.rs` (+ `ready/`): the ready file, a batch on disk waiting to be applied.
//! - `apply.rs`: stage two, a batch appended and the files it came from released.
//! - `state.rs`: session producer state loaded, saved, and ticked by the time rules.
//! - `quiet.rs`: the sessions whose state ticks to nothing, kept between
//!   runs (`ledgers/finalize.quiet`, outside the ledger) so an idle run
//!   does not load them.
//! - `record.rs`: following each agent's own record after the hook signals.
//! - `compaction.rs`: after a run, the raw archive compressed within a budget.
//!
//! The per-session rules the drain applies live in `session/`.

mod apply;
pub mod compaction;
mod intake;
pub mod last_run;
pub(crate) mod lease;
mod quiet;
pub mod ready;
pub(crate) mod record;
mod record_source;
mod run;
mod state;
mod steps;
mod summary;

use std::path::{Path, PathBuf};

pub use run::{Drained, FinalizeRun, drain_if_free, finalize};
pub use steps::Run;
pub use summary::{DamagedRange, FinalizeOptions, HealthNote, Summary, UNREADABLE_ROW};

use crate::ledger::LedgerError;
use crate::progress::timing;

/// Why a finalizer run stopped.
#[derive(Debug, thiserror::Error)]
pub enum FinalizeError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Ledger(#[from] LedgerError),
    #[error(transparent)]
    Lease(#[from] lease::LeaseError),
    #[error("durability failure: {0}; the run stops here and the next run starts clean")]
    Durability(String),
    #[error("ready file {path} line {line}: {detail}")]
    BadReady {
        path: PathBuf,
        line: usize,
        detail: String,
    },
    #[error("spool: {0}")]
    Spool(String),
    /// A batch the ledger refused; `origin` names it ("ready file …", or
    /// the spool files a drain's batch came from).
    #[error("{origin} refused: {source}")]
    Refused { origin: String, source: LedgerError },
}

/// A durable write's failure, worded as the ledger words it.
impl From<crate::durable::DurableError> for FinalizeError {
    fn from(e: crate::durable::DurableError) -> FinalizeError {
        FinalizeError::Ledger(e.into())
    }
}

impl FinalizeError {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> FinalizeError {
        FinalizeError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}
