//! How a restore fails: one error for the planner and the steps it
//! takes (`plan`, `apply`, `look`, `run`, `epochs`), each reading as the
//! error it carries, so a refusal's words are the same wherever it
//! comes from.

use super::copilot_sdk::SdkWordsError;
use super::materialize::MaterializeError;
use super::record_cut::CutError;
use super::seed;
use crate::ledger::LedgerError;
use crate::now::BadNow;
use crate::report::source::SourceError;
use crate::spool::SpoolError;

/// A restore that could not be planned or done. Each error reads as the
/// one it carries.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// A refusal, in words.
    #[error("{0}")]
    Refused(String),
    #[error(transparent)]
    Ledger(#[from] LedgerError),
    #[error(transparent)]
    Seed(#[from] seed::RestoreError),
    #[error(transparent)]
    Cut(#[from] CutError),
    #[error(transparent)]
    Materialize(#[from] MaterializeError),
    #[error(transparent)]
    SdkWords(#[from] SdkWordsError),
    #[error(transparent)]
    Source(#[from] SourceError),
    #[error(transparent)]
    Spool(#[from] SpoolError),
    #[error(transparent)]
    Now(#[from] BadNow),
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

impl From<String> for PlanError {
    fn from(words: String) -> PlanError {
        PlanError::Refused(words)
    }
}

impl From<&str> for PlanError {
    fn from(words: &str) -> PlanError {
        PlanError::Refused(words.to_string())
    }
}
