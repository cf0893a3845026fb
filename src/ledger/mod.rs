//! The ledger: one epoch's append-only, hash-chained record of canonical
//! events, in `HARNERY_HOME/ledgers/v2/` (`genesis.json` + `ledger.sqlite`).
//!
//! Owns the SQLite schema and its migrations, the genesis manifest, the hash
//! chain, the fencing token that keeps a stale finalizer from writing, the
//! tables derived from events at append time (sessions, spans, end requests,
//! health), and the queries the read side uses. It never parses an agent
//! dialect and never decides what an event means beyond the contract.
//!
//! SQLite runs in WAL mode with `synchronous=FULL`: the finalizer deletes a
//! ready file right after the commit that applied it, so a commit must
//! survive power loss, which `NORMAL` does not promise in WAL mode.

mod append;
pub mod chain;
mod check;
mod checkpoint;
mod derive;
pub mod durable;
mod genesis;
mod query;
pub mod raw;
mod rows;
mod schema;
mod session_range;
mod timeline;
pub mod trace_rows;

use std::path::{Path, PathBuf};

use rusqlite::{Connection, OpenFlags, OptionalExtension};

pub use append::{AppendBatch, AppendOutcome, BatchSignal, BatchState, RawBytes, ReadyEvent};
pub use check::{ChainBreak, ValidationProblem};
pub use checkpoint::{Checkpointer, WalState};
pub use genesis::{
    Anchor, ClosedSession, Closure, GENESIS_FORMAT, GenesisManifest, binary_digest,
    capability_digests,
};
pub use query::{
    DamagedRow, EndRequestRow, HealthRow, RowFilter, SessionSummary, SpanCounts, SpanRow,
    SpanState, StoredEvent, StoredText,
};
pub use rows::ChainRow;
pub use timeline::{RecordJoin, Timeline, TimelineEntry};

use crate::home::Home;

/// Directory name of the live epoch below `ledgers/`.
pub const LIVE_DIR: &str = "v2";
/// Directory below `ledgers/` that holds archived epochs.
pub const CANDIDATES_DIR: &str = "v2-candidates";
pub const GENESIS_FILE: &str = "genesis.json";
pub const DB_FILE: &str = "ledger.sqlite";
/// The path fence of an archived epoch: a directory holding it is never
/// opened for writing.
pub const FENCE_FILE: &str = "ARCHIVED.json";
/// The durable record of an epoch advance in progress, below `ledgers/`.
pub const ADVANCE_FILE: &str = "epoch-advance.json";

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
    #[error("no ledger at {0}; run `harnery finalize` first")]
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
    #[error("{prefix:?} matches {count} sessions; give more of the id")]
    AmbiguousSession { prefix: String, count: usize },
}

impl LedgerError {
    pub fn io(path: &Path, source: std::io::Error) -> LedgerError {
        LedgerError::Io {
            path: path.to_path_buf(),
            source,
        }
    }

    pub fn durability(path: &Path, source: std::io::Error) -> LedgerError {
        LedgerError::Durability {
            path: path.to_path_buf(),
            source,
        }
    }
}

/// An open ledger epoch.
pub struct Ledger {
    conn: Connection,
    genesis: GenesisManifest,
    dir: PathBuf,
    poisoned: bool,
}

impl Ledger {
    /// `HARNERY_HOME/ledgers/v2`.
    pub fn live_dir(home: &Home) -> PathBuf {
        home.ledgers_dir().join(LIVE_DIR)
    }

    /// Open the live epoch for reading; refuses a ledger whose genesis
    /// digest is not this build's. A live ledger an older build wrote is
    /// first brought up to this build's schema, as the next finalize would
    /// (the read side queries the current tables). Where that cannot be
    /// written, it is read as it is: the queries that changed with the
    /// schema also read the older form.
    pub fn open_read(home: &Home) -> Result<Ledger, LedgerError> {
        let dir = Ledger::live_dir(home);
        let ledger = Ledger::open_dir_read(&dir, Some(&binary_digest()))?;
        if !schema::behind(&ledger.conn)? {
            return Ok(ledger);
        }
        match Ledger::open_dir_write(&dir, crate::clock::wall_now_ns(), true) {
            Ok(upgraded) => {
                drop((ledger, upgraded));
                Ledger::open_dir_read(&dir, Some(&binary_digest()))
            }
            Err(_) => Ok(ledger),
        }
    }

    /// Open any epoch directory read-only (also archives, whose files are
    /// read-only). With `expect_digest`, refuse a different genesis digest.
    pub fn open_dir_read(dir: &Path, expect_digest: Option<&str>) -> Result<Ledger, LedgerError> {
        let genesis = read_genesis(dir)?;
        check_digest(dir, &genesis, expect_digest)?;
        let db = dir.join(DB_FILE);
        if !db.exists() {
            return Err(LedgerError::Missing(dir.to_path_buf()));
        }
        let conn = open_readonly(&db)?;
        let ledger = Ledger {
            conn,
            genesis,
            dir: dir.to_path_buf(),
            poisoned: false,
        };
        ledger.check_meta()?;
        Ok(ledger)
    }

    /// Open the live epoch for writing, creating a first epoch if none
    /// exists. Refuses a foreign digest like the reader. Never creates an
    /// epoch while an advance is in progress: that new epoch would not
    /// anchor to the archive and would take the rows the advance carries.
    pub fn open_write(home: &Home, now_unix_ns: i64) -> Result<Ledger, LedgerError> {
        let dir = Ledger::live_dir(home);
        if !dir.join(GENESIS_FILE).exists() {
            if let Some(why) = advance_underway(home) {
                return Err(LedgerError::AdvanceInProgress(why));
            }
            create_dir_private(&dir)?;
            GenesisManifest::new(None, now_unix_ns).write(&dir.join(GENESIS_FILE))?;
        }
        Ledger::open_dir_write(&dir, now_unix_ns, true)
    }

    /// Open (and migrate) the epoch in `dir` for writing; its genesis must
    /// already be installed.
    pub fn open_dir_write(
        dir: &Path,
        now_unix_ns: i64,
        check: bool,
    ) -> Result<Ledger, LedgerError> {
        if dir.join(FENCE_FILE).exists() {
            return Err(LedgerError::Corrupt {
                path: dir.to_path_buf(),
                detail: "this epoch is archived (path fence); it is never written again".into(),
            });
        }
        let genesis = read_genesis(dir)?;
        if check {
            check_digest(dir, &genesis, Some(&binary_digest()))?;
        }
        let db = dir.join(DB_FILE);
        let mut conn = Connection::open(&db)?;
        // SQLite gives its -wal and -shm files the database file's mode.
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o600))
                .map_err(|e| LedgerError::io(&db, e))?;
        }
        // Event rows carry tool inputs and outputs (about 1 KiB each, often
        // more); 16 KiB pages cut the page (and syscall) count per row.
        // Only takes effect when the file is new.
        conn.pragma_update(None, "page_size", 16384)?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "FULL")?;
        // No index is keyed by a hash alone (see the `local_keys`
        // migration), so inserts touch the pages of the sessions and the
        // receive times being drained: 16 MiB of page cache holds those.
        conn.pragma_update(None, "cache_size", -16384)?;
        conn.pragma_update(
            None,
            "wal_autocheckpoint",
            checkpoint::AUTO_CHECKPOINT_PAGES,
        )?;
        conn.busy_timeout(std::time::Duration::from_secs(10))?;
        // An append uses about twenty distinct statements; the default
        // cache of sixteen would prepare some of them again every batch.
        conn.set_prepared_statement_cache_capacity(64);
        schema::migrate(&mut conn, now_unix_ns)?;
        conn.execute(
            "INSERT OR IGNORE INTO meta (key, value) VALUES ('genesis_id', ?1), ('schema_digest', ?2)",
            [&genesis.genesis_id, &genesis.schema_digest],
        )?;
        let ledger = Ledger {
            conn,
            genesis,
            dir: dir.to_path_buf(),
            poisoned: false,
        };
        ledger.check_meta()?;
        Ok(ledger)
    }

    pub fn genesis(&self) -> &GenesisManifest {
        &self.genesis
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The chain head (the terminal-segment digest once archived), as hex;
    /// the epoch's seed when no event was appended yet.
    pub fn chain_head(&self) -> Result<String, LedgerError> {
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

    /// Whether this epoch's tables are older than this build's (a write
    /// open would migrate them).
    pub fn schema_behind(&self) -> Result<bool, LedgerError> {
        schema::behind(&self.conn)
    }

    /// The binding between `genesis.json` and the database: both must name
    /// the same genesis id and digest.
    fn check_meta(&self) -> Result<(), LedgerError> {
        for (key, want) in [
            ("genesis_id", &self.genesis.genesis_id),
            ("schema_digest", &self.genesis.schema_digest),
        ] {
            let got: Option<String> = self
                .conn
                .query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| r.get(0))
                .optional()?;
            if got.as_ref() != Some(want) {
                return Err(LedgerError::Corrupt {
                    path: self.dir.join(DB_FILE),
                    detail: format!("database {key} {got:?} does not match genesis.json {want:?}"),
                });
            }
        }
        Ok(())
    }
}

/// Fold the WAL of the epoch database in `dir` into its main file and
/// change nothing else: no migration, no writing pragma, no journal-mode
/// change. What stays is the epoch's own bytes, ready to be archived. A
/// checkpoint that a reader keeps from finishing is an error (retry later).
pub fn fold_wal(dir: &Path) -> Result<(), LedgerError> {
    let db = dir.join(DB_FILE);
    if !db.exists() {
        return Err(LedgerError::Missing(dir.to_path_buf()));
    }
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(&db, flags)?;
    conn.busy_timeout(std::time::Duration::from_secs(10))?;
    let (busy, log, folded): (i64, i64, i64) = conn
        .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })
        .map_err(|e| with_system_error(&conn, &db, e))?;
    if busy != 0 || log != folded {
        return Err(LedgerError::Corrupt {
            path: db,
            detail: format!(
                "its WAL could not be folded in ({folded} of {log} frames; a reader holds it); try again when no read command runs"
            ),
        });
    }
    conn.close().map_err(|(_, e)| LedgerError::Sqlite(e))
}

/// An SQLite I/O error with the operating system's reason (a full disk, a
/// read-only file system), which SQLite's own message leaves out.
fn with_system_error(conn: &Connection, path: &Path, e: rusqlite::Error) -> LedgerError {
    // SAFETY: the handle is live for as long as `conn` is borrowed, and
    // sqlite3_system_errno only reads the connection's last error.
    let errno = unsafe { rusqlite::ffi::sqlite3_system_errno(conn.handle()) };
    if errno == 0 {
        return LedgerError::Sqlite(e);
    }
    LedgerError::Io {
        path: path.to_path_buf(),
        source: std::io::Error::new(
            std::io::Error::from_raw_os_error(errno).kind(),
            format!("{} ({e})", std::io::Error::from_raw_os_error(errno)),
        ),
    }
}

/// Why an epoch advance looks underway with no live epoch: its progress
/// record exists, or an archived epoch does (which no live epoch anchors
/// to, since there is none).
fn advance_underway(home: &Home) -> Option<String> {
    let ledgers = home.ledgers_dir();
    let progress = ledgers.join(ADVANCE_FILE);
    if progress.exists() {
        return Some(format!("{} exists", progress.display()));
    }
    let archived = std::fs::read_dir(ledgers.join(CANDIDATES_DIR))
        .ok()?
        .filter_map(Result::ok)
        .find(|e| e.path().join(FENCE_FILE).exists())?;
    Some(format!(
        "the archived epoch {} has no live epoch anchored to it",
        archived.path().display()
    ))
}

fn read_genesis(dir: &Path) -> Result<GenesisManifest, LedgerError> {
    let path = dir.join(GENESIS_FILE);
    if !path.exists() {
        return Err(LedgerError::Missing(dir.to_path_buf()));
    }
    GenesisManifest::read(&path)
}

fn check_digest(dir: &Path, g: &GenesisManifest, expect: Option<&str>) -> Result<(), LedgerError> {
    match expect {
        Some(want) if want != g.schema_digest => Err(LedgerError::ForeignDigest {
            path: dir.to_path_buf(),
            ledger: g.schema_digest.clone(),
            binary: want.to_string(),
        }),
        _ => Ok(()),
    }
}

pub(crate) fn open_readonly(db: &Path) -> Result<Connection, LedgerError> {
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
    Ok(conn)
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

/// UTC time of a nanosecond timestamp as RFC 3339 with milliseconds.
pub fn format_time(unix_ns: i64) -> String {
    let Ok(t) = time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(unix_ns)) else {
        return unix_ns.to_string();
    };
    let fmt = time::macros::format_description!(
        "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z"
    );
    t.format(&fmt).unwrap_or_else(|_| unix_ns.to_string())
}

/// Parse an RFC 3339 time into Unix nanoseconds.
pub fn parse_time(text: &str) -> Option<i64> {
    crate::clock::parse_rfc3339_ns(text)
}
