//! The intake spool: framed, checksummed records of raw agent signals.
//!
//! Layout (normative text in `spool-format/README.md`):
//!
//! ```text
//! <HARNERY_HOME>/spool/intake/<adapter>/<session-key>/
//!     lease                              flock'd by writers and the sealer
//!     active.seg                         appended to under the lease
//!     sealed-<ns>-<pid>.seg              renamed by the sealer, read by the finalizer
//!     sealed-<ns>-<pid>-<seq>.seg        a batch written whole, then renamed (see batch)
//!     .tmp-…                             being written; never read
//!     fallback-<ns>-<pid>-<seq>.rec      one record, written when the lease/append failed
//! <HARNERY_HOME>/spool/dead-letter/dl-<ns>-<pid>-<seq>.rec
//! ```
//!
//! Writers ([`SpoolWriter`], the `harnery-hook` binary via [`hook`]) and
//! readers ([`IntakeSpool`], [`read_segment`], [`SegmentReader`]) share the
//! framing in [`frame`]. This module never opens SQLite or parses config.

pub mod batch;
pub mod envelope;
pub mod frame;
pub mod hook;
pub mod intake;
pub mod key;
pub mod reader;
pub mod scan;
pub mod writer;

pub use batch::SealedBatch;
pub use envelope::{CAPTURED_ENV, Envelope, SPOOL_FORMAT_VERSION, WritePath};
pub use intake::{IntakeSpool, SealedSegment, SegmentKind, SessionSpool, remove_segment};
pub use key::session_key;
pub use reader::{
    Damage, DamageKind, RecordAt, SegmentItem, SegmentRead, SegmentReader, SpoolRecord, read_bytes,
    read_first_view, read_segment, read_segment_whole,
};
pub use writer::{AppendReceipt, Signal, SpoolWriter, WriterOptions};

use std::path::PathBuf;
use std::time::Duration;

/// File the session lease is taken on.
pub const LEASE_FILE: &str = "lease";
/// The segment writers append to.
pub const ACTIVE_SEGMENT: &str = "active.seg";
/// Prefix of sealed segment names.
pub const SEALED_PREFIX: &str = "sealed-";
/// Prefix of fallback file names (in the session directory).
pub const FALLBACK_PREFIX: &str = "fallback-";
/// Prefix of dead-letter file names (in `spool/dead-letter/`).
pub const DEAD_LETTER_PREFIX: &str = "dl-";
/// Prefix of files still being written (never read; safe to delete when old).
pub const TMP_PREFIX: &str = ".tmp-";

/// Errors of spool operations.
#[derive(Debug, thiserror::Error)]
pub enum SpoolError {
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
    #[error("session lease not acquired within {waited:?}")]
    LeaseTimeout { waited: Duration },
    #[error("record lost: every write path failed: {reason}")]
    Lost { reason: String },
    #[error("{0} is not inside a spool layout")]
    Layout(PathBuf),
}
