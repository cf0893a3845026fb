//! Export: the ledger's events as JSON lines, or as OTLP/JSON traces,
//! streamed. The command (`harnery export`) parses its arguments, opens
//! the epochs and calls [`jsonl::write`] or [`otlp::write`]; every rule of
//! the export is here.
//!
//! Every format streams: rows are read, written and dropped, so an export
//! holds a few batches of rows at a time, never the ledger nor a whole
//! session (OTLP keeps only the session's open spans and per-turn tallies,
//! `otlp`'s `TraceStream`). The thread that reads the ledger only reads;
//! checking and parsing run beside it ([`crate::ordered`]), and the writer
//! builds spans as they end.
//!
//! - [`source`]: which epochs and rows an export reads; how a row left out
//!   is named.
//! - [`rows`]: rows as the reading thread hands them on.
//! - [`crate::ordered`] (a leaf of its own, which `finalize` uses too): jobs
//!   worked on by a few threads, written in job order.
//! - [`jsonl`]: a row's stored text as its line (checked to be one JSON
//!   object on one line, never re-serialised), tagged with its epoch when
//!   asked.
//! - [`otlp`]: the OTLP writer: sessions as traces, in documents of at
//!   most [`SPANS_PER_DOCUMENT`] spans.
//!
//! A row that cannot be used (not JSON; for OTLP, not an event, or a trace
//! entry that does not decode) is named on stderr by its sequence number
//! (and event id, where known), and the export goes on to the end; the
//! writers return how many were left out.

pub mod jsonl;
pub mod otlp;
mod rows;
pub mod source;

use crate::ledger::LedgerError;

/// The most spans one OTLP document carries, so that a collector (or a
/// file read line by line) never has to take a ledger in one piece. A
/// session with more spans continues in the next document, its resource
/// repeated.
pub const SPANS_PER_DOCUMENT: usize = 1000;

/// Why an export stopped: the ledger could not be read, or the output
/// could not be written (a closed pipe among them).
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error(transparent)]
    Ledger(#[from] LedgerError),
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

impl ExportError {
    /// The error itself, as the command prints it (an I/O error stays
    /// one, so that a closed pipe is still known as such).
    pub fn into_inner(self) -> Box<dyn std::error::Error + Send + Sync> {
        match self {
            ExportError::Ledger(e) => Box::new(e),
            ExportError::Io(e) => Box::new(e),
        }
    }
}
