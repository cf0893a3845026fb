//! `harnery epoch`: ship a contract change as a new ledger epoch, and read
//! every epoch a home holds.
//!
//! - `advance.rs`: the epoch advance (quiesce, archive, reinstall, carry;
//!   resumable after a crash); `harnery finalize` completes one left
//!   underway (`finalize/run.rs`).
//! - `archive.rs`: an archived epoch's tree manifest and what the advance
//!   closed in it.
//! - `list.rs`: the epochs a home holds, and `--epoch` selection.
//! - `status.rs`: `harnery epoch status`.
//! - `text.rs`: the lines each `harnery epoch` report prints for a person.
//! - `verify.rs`: `harnery epoch verify`, every archive checked against its
//!   manifest and chain.

mod advance;
mod archive;
mod list;
mod status;
mod text;
mod verify;

use std::path::{Path, PathBuf};

pub use advance::{AdvanceReport, Progress, advance, advance_underway, read_progress};
pub use archive::{
    ArchivedSession, ManifestEntry, TreeManifest, archived_open_span_sessions, closure_of,
};
pub use list::{EpochEntry, EpochSelector, ListedEpoch, archive_dirs, closures, epochs, select};
pub use status::{AdvanceMarker, EpochStatus, status};
pub use verify::{EpochCheck, EpochVerdict, verify};

use crate::finalize::FinalizeError;
use crate::ledger::LedgerError;

/// Why an advance (or an epoch read) stopped.
#[derive(Debug, thiserror::Error)]
pub enum EpochError {
    #[error(transparent)]
    Finalize(#[from] FinalizeError),
    #[error(transparent)]
    Ledger(#[from] LedgerError),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("quiesce refused: {0}")]
    Undrained(String),
    #[error("candidate gate refused the new epoch: {0}")]
    CandidateGate(String),
    #[error("activation gate refused: {0}")]
    ActivationGate(String),
    #[error(
        "{path} does not parse ({detail}); an advance was interrupted. Remove that file and rerun `harnery epoch advance`: it resumes from what is on disk"
    )]
    CorruptProgress { path: PathBuf, detail: String },
    #[error("{path}: the tree manifest does not parse: {detail}")]
    Manifest { path: PathBuf, detail: String },
    #[error("no epoch {wanted:?} in this home; the epochs are: {}", known.join(", "))]
    UnknownEpoch { wanted: String, known: Vec<String> },
}

/// A durable write's failure, worded as the ledger words it.
impl From<crate::durable::DurableError> for EpochError {
    fn from(e: crate::durable::DurableError) -> EpochError {
        EpochError::Ledger(e.into())
    }
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> EpochError + '_ {
    move |source| EpochError::Io {
        path: path.to_path_buf(),
        source,
    }
}
