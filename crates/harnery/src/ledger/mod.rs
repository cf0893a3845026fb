//! The ledger: one epoch's append-only, hash-chained record of canonical
//! events, in `HARNERY_HOME/ledgers/v2/` (`genesis.json` + `ledger.sqlite`).
//!
//! Owns the SQLite schema and its migrations, the genesis manifest, the hash
//! chain, the fencing token that keeps a stale finalizer from writing, the
//! tables derived from events at append time (sessions, spans, end requests,
//! health), and the queries the read side uses. It never parses an agent
//! dialect and never decides what an event means beyond the contract.
//!
//! Two types open an epoch: [`LedgerReader`] (`read/`), on a read-only
//! connection, never writes or migrates; every report, export, view,
//! resume and fleet read uses it. [`LedgerWriter`] (`write/`) migrates on
//! open, appends, derives, checkpoints and compacts; it offers the
//! reader's queries on its own connection. The modules beside them hold
//! what both sides share: the file formats (genesis, chain, raw archive,
//! trace chunks), the schema, and the integrity checks.

pub(crate) mod chain;
pub mod eventz;
mod genesis;
pub mod integrity;
pub mod raw;
pub mod rawz;
mod read;
mod schema;
pub(crate) mod signalz;
mod system_error;
pub(crate) mod trace_rows;
mod write;

use std::path::{Path, PathBuf};

pub use genesis::{
    Anchor, ClosedSession, Closure, GENESIS_FORMAT, GenesisManifest, binary_digest,
    capability_digests,
};
pub use read::{
    ArchiveSize, ChainBreak, ChainMark, ChainRow, ChunkRead, DamagedRow, EndRequestRow, HealthRow,
    LedgerReader, MarkRange, RawProblem, RowFilter, SessionSummary, SpanCounts, SpanRow, SpanState,
    StoredEvent, StoredText, UnreadableRow, ValidationProblem,
};
pub(crate) use read::{
    ListFacts, NONZERO_SHIFT, RESTORED_FROM, StateVersion, StoredUsageSums, UsageSumRow,
};
pub(crate) use write::{MadeAhead, WorkAhead, check_session_usage};
// The reader's query types, one per seam (`reader.sessions()` and the like).
pub use write::{
    AppendBatch, AppendOutcome, BatchSignal, BatchState, Checkpointer, LedgerWriter,
    PLAIN_EVENTS_ENV, PLAIN_SIGNALS_ENV, RawBytes, ReadyEvent, compact, compact_events, fold_wal,
    project_of, record_title, remove_orphans,
};

/// Directory name of the live epoch below `ledgers/`.
pub(crate) const LIVE_DIR: &str = "v2";
/// Directory below `ledgers/` that holds archived epochs.
pub(crate) const CANDIDATES_DIR: &str = "v2-candidates";
pub(crate) const GENESIS_FILE: &str = "genesis.json";
pub(crate) const DB_FILE: &str = "ledger.sqlite";
/// The path fence of an archived epoch: a directory holding it is never
/// opened for writing.
pub(crate) const FENCE_FILE: &str = "ARCHIVED.json";
/// The durable record of an epoch advance in progress, below `ledgers/`.
pub(crate) const ADVANCE_FILE: &str = "epoch-advance.json";

/// Anything that can go wrong opening, reading or writing a ledger.
#[derive(Debug, thiserror::Error)]
pub enum LedgerError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "durability failure at {path}: {source}; the run stops here and the next run starts clean"
    )]
    Durability {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("sqlite: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("commit failed: {0}; the run stops here and the next run starts clean")]
    CommitFailed(rusqlite::Error),
    #[error("{path}: {detail}")]
    Corrupt { path: PathBuf, detail: String },
    #[error(
        "no ledger at {0} yet: nothing was finalized. `harnery finalize` makes it now; the schedule `harnery install` sets up runs it every minute (`harnery health` says whether it ran)"
    )]
    Missing(PathBuf),
    #[error(
        "the ledger at {path} was written under schema digest {ledger}, but this build speaks {binary}; run `harnery epoch advance`"
    )]
    ForeignDigest {
        path: PathBuf,
        ledger: String,
        binary: String,
    },
    #[error(
        "fenced: this finalizer holds incarnation {mine}, but incarnation {current} has taken over; nothing was written"
    )]
    Stale { mine: u64, current: u64 },
    #[error("the ledger writer is poisoned by an earlier durability failure")]
    Poisoned,
    #[error("refused event {event_id}: {reason}")]
    Refused { event_id: String, reason: String },
    #[error("no session matches {0:?}")]
    UnknownSession(String),
    #[error(
        "an epoch advance is in progress ({0}); no new epoch is started meanwhile: `harnery finalize` completes the advance, as does `harnery epoch advance`"
    )]
    AdvanceInProgress(String),
    /// A file of the live epoch is not what the ledger recorded (see
    /// [`integrity`]): nothing was written, nothing deleted.
    #[error(
        "{path} {what}. Refused: nothing was written or deleted, and the hooks keep spooling. To recover, {}",
        integrity::recovery(path)
    )]
    Damaged { path: PathBuf, what: String },
    #[error("{0}")]
    Unreadable(Box<UnreadableRow>),
    #[error(transparent)]
    SessionName(#[from] crate::contract::session_name::NameError),
}

impl LedgerError {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> LedgerError {
        LedgerError::Io {
            path: path.to_path_buf(),
            source,
        }
    }

    pub(crate) fn durability(path: &Path, source: std::io::Error) -> LedgerError {
        LedgerError::Durability {
            path: path.to_path_buf(),
            source,
        }
    }
}

impl From<crate::durable::DurableError> for LedgerError {
    fn from(e: crate::durable::DurableError) -> LedgerError {
        match e {
            crate::durable::DurableError::Io { path, source } => LedgerError::Io { path, source },
            crate::durable::DurableError::Sync { path, source } => {
                LedgerError::Durability { path, source }
            }
        }
    }
}

/// Create `dir` and its parents with mode 0700.
pub fn create_dir_private(dir: &Path) -> Result<(), LedgerError> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| LedgerError::io(dir, e))
}
