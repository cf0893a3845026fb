//! The reading side of the ledger: [`LedgerReader`], an epoch opened on a
//! read-only SQLite connection. It never writes: no migration, no write
//! lock, no file created. Every report, export, view, resume and fleet
//! read goes through it; the writer ([`super::LedgerWriter`]) offers the
//! same queries on its own connection.
//!
//! Its queries come in small types cut by what they answer, each borrowing
//! the reader's connection: [`Sessions`] (`sessions.rs`), [`Spans`],
//! [`Ends`] and [`Health`] (`spans.rs`), [`Events`] (`events.rs`,
//! `session_range.rs`, `record_bytes.rs`), [`Rows`] (`rows.rs`), [`Raw`]
//! (`raw_archive.rs`, `archive_faults.rs`), [`Verify`] (`verify.rs`,
//! `validate*.rs`), [`Bookkeeping`] (`bookkeeping.rs`, the finalizer's own
//! rows) and [`Trace`] (`trace_chunks.rs`): `reader.sessions().list()`.
//! The reader itself only opens an epoch, names it, and keeps the rows a
//! lenient read set aside. A session's timeline, and the words `show`
//! prints for it, are the read side's (`report::timeline`).

mod archive_faults;
mod bookkeeping;
mod chain_marks;
mod columns;
mod events;
mod finding;
mod raw_archive;
mod record_bytes;
mod rows;
mod session_range;
mod sessions;
mod sessions_imported;
mod spans;
mod trace_chunks;
pub(super) mod unreadable;
mod validate;
mod validate_shape;
mod validate_trace;
mod verify;

use std::path::{Path, PathBuf};

use rusqlite::{Connection, OpenFlags, OptionalExtension};

pub(crate) use bookkeeping::{Bookkeeping, StateVersion};
pub use chain_marks::{ChainMark, ChainMarks, MarkRange};
pub use events::{Events, RowFilter, StoredEvent, StoredText};
pub use finding::ValidationProblem;
pub use raw_archive::{ArchiveSize, Raw, RawProblem};
pub use rows::{ChainRow, Rows};
pub(crate) use sessions::{
    LIST_PENDING, ListFacts, NONZERO_SHIFT, RESTORED_FROM, StoredUsageSums, USAGE_PENDING,
    UsageSumRow,
};
pub use sessions::{SessionSummary, Sessions};
pub use spans::{
    DamagedRow, EndRequestRow, Ends, Health, HealthRow, SpanCounts, SpanRow, SpanState, Spans,
};
pub use trace_chunks::{ChunkRead, Trace};
pub use unreadable::UnreadableRow;
pub use verify::{ChainBreak, Verify};

pub(super) use columns::session_at;
pub(super) use events::each_stored_text;
pub(super) use spans::span_row;

use super::{
    DB_FILE, GENESIS_FILE, GenesisManifest, LIVE_DIR, LedgerError, binary_digest, chain, integrity,
};
use crate::home::Home;

/// An epoch open for reading: a read-only connection, the genesis it is
/// bound to, and the rows a lenient read passed over.
pub struct LedgerReader {
    /// Opened `SQLITE_OPEN_READ_ONLY` by [`LedgerReader::open_dir`]; inside
    /// a [`super::LedgerWriter`], the writer's connection (the reader's
    /// methods only read through it).
    pub(super) conn: Connection,
    pub(super) genesis: GenesisManifest,
    pub(super) dir: PathBuf,
    /// Rows a lenient read passed over (see [`unreadable`]), until a
    /// command takes them to report.
    set_aside: std::cell::RefCell<Vec<UnreadableRow>>,
}

impl LedgerReader {
    /// `HARNERY_HOME/ledgers/v2`.
    pub fn live_dir(home: &Home) -> PathBuf {
        home.ledgers_dir().join(LIVE_DIR)
    }

    /// Open the live epoch for reading; refuses a ledger whose genesis
    /// digest is not this build's. Reading never writes: no migration, no
    /// write lock, no file created. A ledger an older build wrote is read
    /// as it is (the queries that changed with the schema also read the
    /// older form); the next `harnery finalize` migrates it.
    pub fn open(home: &Home) -> Result<LedgerReader, LedgerError> {
        LedgerReader::open_dir(&LedgerReader::live_dir(home), Some(&binary_digest()))
    }

    /// Open any epoch directory read-only (also archives, whose files are
    /// read-only). With `expect_digest`, refuse a different genesis digest.
    /// A directory with files in it but no `genesis.json`, a database that
    /// is not one, or a database bound to another genesis is
    /// [`LedgerError::Damaged`].
    pub fn open_dir(dir: &Path, expect_digest: Option<&str>) -> Result<LedgerReader, LedgerError> {
        let (genesis, blake3) = read_genesis(dir)?;
        let db = dir.join(DB_FILE);
        integrity::check_db_file(&db)?;
        let conn = open_readonly(&db)?;
        integrity::check_binding(&conn, dir, binding(&genesis), &blake3)?;
        check_digest(dir, &genesis, expect_digest)?;
        Ok(LedgerReader::on(conn, genesis, dir))
    }

    /// A reader over `conn` (read-only here; the writer's own otherwise).
    pub(super) fn on(conn: Connection, genesis: GenesisManifest, dir: &Path) -> LedgerReader {
        LedgerReader {
            conn,
            genesis,
            dir: dir.to_path_buf(),
            set_aside: Default::default(),
        }
    }

    pub fn genesis(&self) -> &GenesisManifest {
        &self.genesis
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The chain head (the terminal-segment digest once archived), as hex;
    /// the epoch's seed when no event was appended yet.
    pub(crate) fn chain_head(&self) -> Result<String, LedgerError> {
        Ok(chain::hex(&self.head_bytes()?))
    }

    fn head_bytes(&self) -> Result<[u8; 32], LedgerError> {
        let head: Option<Vec<u8>> = self
            .conn
            .query_row(
                "SELECT hash FROM events ORDER BY seq DESC LIMIT 1",
                [],
                |r| r.get(0),
            )
            .optional()?;
        match head {
            None => Ok(self.genesis.chain_seed()),
            Some(bytes) => bytes.try_into().map_err(|_| LedgerError::Corrupt {
                path: self.dir.clone(),
                detail: "the last event's hash is not 32 bytes".into(),
            }),
        }
    }

    /// The sessions: listed, counted, found.
    pub fn sessions(&self) -> Sessions<'_> {
        Sessions { r: self }
    }

    /// Tool and command spans.
    pub fn spans(&self) -> Spans<'_> {
        Spans { r: self }
    }

    /// Explicit-end requests.
    pub fn ends(&self) -> Ends<'_> {
        Ends { r: self }
    }

    /// Health conditions.
    pub fn health(&self) -> Health<'_> {
        Health { r: self }
    }

    /// The raw archive and its checks.
    pub fn raw(&self) -> Raw<'_> {
        Raw { r: self }
    }

    /// The chain and contract checks.
    pub fn verify(&self) -> Verify<'_> {
        Verify { r: self }
    }

    /// Canonical events: a session's, all, or their stored text.
    pub fn events(&self) -> Events<'_> {
        Events { r: self }
    }

    /// Stored rows streamed in sequence order.
    pub fn rows(&self) -> Rows<'_> {
        Rows { r: self }
    }

    /// The finalizer's bookkeeping beside the events.
    pub(crate) fn bookkeeping(&self) -> Bookkeeping<'_> {
        Bookkeeping { r: self }
    }

    /// Trace rows: span notes and chunks.
    pub fn trace(&self) -> Trace<'_> {
        Trace { r: self }
    }

    /// Where a session's rows stand in the chain (seq, stored hash).
    pub fn chain_marks(&self) -> ChainMarks<'_> {
        ChainMarks { r: self }
    }

    /// Whether this epoch's tables are older than this build's (a write
    /// open would migrate them).
    pub fn schema_behind(&self) -> Result<bool, LedgerError> {
        super::schema::behind(&self.conn)
    }
}

/// The genesis manifest of the epoch in `dir` and the blake3 of its bytes.
/// Missing from a directory that holds nothing is no ledger yet; missing
/// from one that holds files is damage.
pub(super) fn read_genesis(dir: &Path) -> Result<(GenesisManifest, String), LedgerError> {
    let path = dir.join(GENESIS_FILE);
    match std::fs::read(&path) {
        Ok(bytes) => Ok((
            GenesisManifest::parse(&path, &bytes)?,
            integrity::digest_hex(&bytes),
        )),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if integrity::is_new(dir)? {
                return Err(LedgerError::Missing(dir.to_path_buf()));
            }
            Err(integrity::damaged(
                &path,
                "is missing, but the epoch directory holds files (a ledger, its raw archive)",
            ))
        }
        Err(e) => Err(integrity::damaged(&path, format!("cannot be read: {e}"))),
    }
}

/// What `genesis` names that its database must name too.
pub(super) fn binding(genesis: &GenesisManifest) -> integrity::Binding<'_> {
    integrity::Binding {
        genesis_id: &genesis.genesis_id,
        schema_digest: &genesis.schema_digest,
    }
}

pub(super) fn check_digest(
    dir: &Path,
    g: &GenesisManifest,
    expect: Option<&str>,
) -> Result<(), LedgerError> {
    match expect {
        Some(want) if want != g.schema_digest => Err(LedgerError::ForeignDigest {
            path: dir.to_path_buf(),
            ledger: g.schema_digest.clone(),
            binary: want.to_string(),
        }),
        _ => Ok(()),
    }
}

fn open_readonly(db: &Path) -> Result<Connection, LedgerError> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
        | OpenFlags::SQLITE_OPEN_URI
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let writable = std::fs::metadata(db.parent().unwrap_or(Path::new(".")))
        .map(|m| !m.permissions().readonly())
        .unwrap_or(false);
    // An archived epoch is a read-only tree; opening it `immutable` keeps
    // SQLite from trying to create a -shm file next to it.
    let uri = if writable {
        format!("file:{}", db.display())
    } else {
        format!("file:{}?immutable=1", db.display())
    };
    let conn = Connection::open_with_flags(uri, flags)?;
    conn.busy_timeout(std::time::Duration::from_secs(10))?;
    // A full disk (or a file size limit) keeps SQLite from making the
    // WAL's shared memory beside the file, which even a read needs: such
    // a ledger is read `immutable`, as it stands, without it.
    let probe = conn.query_row("SELECT count(*) FROM sqlite_master", [], |r| {
        r.get::<_, i64>(0)
    });
    if writable
        && let Err(e) = probe
        && matches!(
            e.sqlite_error_code(),
            Some(rusqlite::ErrorCode::SystemIoFailure | rusqlite::ErrorCode::CannotOpen)
        )
    {
        let conn =
            Connection::open_with_flags(format!("file:{}?immutable=1", db.display()), flags)?;
        conn.busy_timeout(std::time::Duration::from_secs(10))?;
        super::eventz::register(&conn)?;
        return Ok(conn);
    }
    super::eventz::register(&conn)?;
    Ok(conn)
}
