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
pub mod compact;
mod derive;
pub mod durable;
mod genesis;
pub mod integrity;
mod query;
pub mod raw;
pub mod rawz;
mod rows;
mod schema;
mod session_range;
mod timeline;
pub mod trace_rows;
mod unreadable;

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
pub use unreadable::UnreadableRow;

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
    /// Rows a lenient read passed over (see [`unreadable`]), until a
    /// command takes them to report.
    set_aside: std::cell::RefCell<Vec<UnreadableRow>>,
}

impl Ledger {
    /// `HARNERY_HOME/ledgers/v2`.
    pub fn live_dir(home: &Home) -> PathBuf {
        home.ledgers_dir().join(LIVE_DIR)
    }

    /// Open the live epoch for reading; refuses a ledger whose genesis
    /// digest is not this build's. Reading never writes: no migration, no
    /// write lock, no file created. A ledger an older build wrote is read
    /// as it is (the queries that changed with the schema also read the
    /// older form); the next `harnery finalize` migrates it.
    pub fn open_read(home: &Home) -> Result<Ledger, LedgerError> {
        Ledger::open_dir_read(&Ledger::live_dir(home), Some(&binary_digest()))
    }

    /// Open any epoch directory read-only (also archives, whose files are
    /// read-only). With `expect_digest`, refuse a different genesis digest.
    /// A directory with files in it but no `genesis.json`, a database that
    /// is not one, or a database bound to another genesis is
    /// [`LedgerError::Damaged`].
    pub fn open_dir_read(dir: &Path, expect_digest: Option<&str>) -> Result<Ledger, LedgerError> {
        let (genesis, blake3) = read_genesis(dir)?;
        let db = dir.join(DB_FILE);
        integrity::check_db_file(&db)?;
        let conn = open_readonly(&db)?;
        integrity::check_binding(&conn, dir, &genesis, &blake3)?;
        check_digest(dir, &genesis, expect_digest)?;
        Ok(Ledger {
            conn,
            genesis,
            dir: dir.to_path_buf(),
            poisoned: false,
            set_aside: Default::default(),
        })
    }

    /// Open the live epoch for writing, creating the first epoch only when
    /// the home is new (see [`integrity`]). Refuses a foreign digest like
    /// the reader, and a damaged epoch. Never creates an epoch while an
    /// advance is in progress: that new epoch would not anchor to the
    /// archive and would take the rows the advance carries.
    pub fn open_write(home: &Home, now_unix_ns: i64) -> Result<Ledger, LedgerError> {
        let dir = Ledger::live_dir(home);
        if !dir.join(GENESIS_FILE).exists() && integrity::is_new(&dir)? {
            if let Some(why) = advance_underway(home) {
                return Err(LedgerError::AdvanceInProgress(why));
            }
            create_first_epoch(home, now_unix_ns)?;
        }
        Ledger::open_dir_write(&dir, now_unix_ns, true)
    }

    /// Open (and migrate) the existing epoch in `dir` for writing. Nothing
    /// is created: its genesis and database must be there and bound to
    /// each other, checked before any migration runs.
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
        // Everything is checked through a reader first: a refusal leaves
        // every file of the epoch as it was, the database's too.
        let touched = {
            let reader = Ledger::open_dir_read(dir, check.then(binary_digest).as_deref())?;
            reader.refuse_raw_faults()?
        };
        let (genesis, blake3) = read_genesis(dir)?;
        let db = dir.join(DB_FILE);
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let mut conn = Connection::open_with_flags(&db, flags)?;
        configure(&conn)?;
        integrity::check_binding(&conn, dir, &genesis, &blake3)?;
        schema::migrate(&mut conn, now_unix_ns).map_err(|e| match e {
            LedgerError::Sqlite(e) => integrity::sqlite_damage(&db, e),
            other => other,
        })?;
        // A ledger from before the genesis bytes were recorded records
        // them as its first finalize by this build finds them.
        conn.execute(
            "INSERT OR IGNORE INTO meta (key, value) VALUES (?1, ?2)",
            [integrity::GENESIS_BLAKE3, blake3.as_str()],
        )?;
        let mut ledger = Ledger {
            conn,
            genesis,
            dir: dir.to_path_buf(),
            poisoned: false,
            set_aside: Default::default(),
        };
        ledger.record_raw_members(&touched)?;
        Ok(ledger)
    }

    /// Build a new epoch's database in `dir`, beside its genesis manifest
    /// (already written there): every migration, and the binding to the
    /// genesis. Only for a directory that is not live yet (a first epoch
    /// being built, an advance's candidate); refuses one that holds a
    /// database already.
    pub fn create_epoch(dir: &Path, now_unix_ns: i64) -> Result<Ledger, LedgerError> {
        let (genesis, blake3) = read_genesis(dir)?;
        check_digest(dir, &genesis, Some(&binary_digest()))?;
        let db = dir.join(DB_FILE);
        if db.exists() {
            return Err(LedgerError::Corrupt {
                path: db,
                detail: "a new epoch was to be built here, but a database is already there".into(),
            });
        }
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let mut conn = Connection::open_with_flags(&db, flags)?;
        // SQLite gives its -wal and -shm files the database file's mode.
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o600))
                .map_err(|e| LedgerError::io(&db, e))?;
        }
        let built = build_epoch(&mut conn, &genesis, &blake3, now_unix_ns);
        built.map_err(|e| match e {
            LedgerError::Sqlite(e) => with_system_error(&conn, &db, e),
            other => other,
        })?;
        Ok(Ledger {
            conn,
            genesis,
            dir: dir.to_path_buf(),
            poisoned: false,
            set_aside: Default::default(),
        })
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
}

/// Fold the WAL of the epoch database in `dir` into its main file and
/// change nothing else: no migration, no writing pragma, no journal-mode
/// change. What stays is the epoch's own bytes, ready to be archived. A
/// checkpoint that a reader keeps from finishing is an error (retry later).
pub fn fold_wal(dir: &Path) -> Result<(), LedgerError> {
    let db = dir.join(DB_FILE);
    integrity::check_db_file(&db)?;
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
    let mut errno = unsafe { rusqlite::ffi::sqlite3_system_errno(conn.handle()) };
    if errno == 0 && e.sqlite_error_code() == Some(rusqlite::ErrorCode::SystemIoFailure) {
        // Some I/O paths (growing the WAL index) keep no errno: a full
        // disk is the one reason worth naming, and statvfs tells it.
        errno = if disk_full(path) { libc::ENOSPC } else { 0 };
    }
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

/// Whether the filesystem holding `path` has no block left for us.
fn disk_full(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let dir = path.parent().unwrap_or(path);
    let Ok(c) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: valid C string and an out-parameter of the right type.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::statvfs(c.as_ptr(), &mut st) };
    rc == 0 && st.f_bavail == 0
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

/// The genesis manifest of the epoch in `dir` and the blake3 of its bytes.
/// Missing from a directory that holds nothing is no ledger yet; missing
/// from one that holds files is damage.
fn read_genesis(dir: &Path) -> Result<(GenesisManifest, String), LedgerError> {
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

/// A new epoch's tables and its binding to `genesis` (whose bytes hash to
/// `blake3`), on a connection to a database file just created.
fn build_epoch(
    conn: &mut Connection,
    genesis: &GenesisManifest,
    blake3: &str,
    now_unix_ns: i64,
) -> Result<(), LedgerError> {
    // Event rows carry tool inputs and outputs (about 1 KiB each, often
    // more); 16 KiB pages cut the page (and syscall) count per row.
    // Only takes effect while the file is new.
    conn.pragma_update(None, "page_size", 16384)?;
    configure(conn)?;
    schema::migrate(conn, now_unix_ns)?;
    conn.execute(
        "INSERT INTO meta (key, value) VALUES ('genesis_id', ?1), ('schema_digest', ?2)",
        [&genesis.genesis_id, &genesis.schema_digest],
    )?;
    integrity::mark_new(conn, blake3)
}

/// The pragmas every writing connection runs under.
fn configure(conn: &Connection) -> Result<(), LedgerError> {
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
    Ok(())
}

/// Build the first epoch of a new home in `ledgers/v2.new/` and rename it
/// into place: a crash leaves no live epoch (the next run starts over) or
/// a whole one, never a genesis without its database.
fn create_first_epoch(home: &Home, now_unix_ns: i64) -> Result<(), LedgerError> {
    let ledgers = home.ledgers_dir();
    let building = ledgers.join(integrity::NEW_EPOCH_DIR);
    if building.exists() {
        // A killed run's leftover: never live, so no row was ever in it.
        std::fs::remove_dir_all(&building).map_err(|e| LedgerError::io(&building, e))?;
    }
    create_dir_private(&building)?;
    GenesisManifest::new(None, now_unix_ns).write(&building.join(GENESIS_FILE))?;
    let ledger = Ledger::create_epoch(&building, now_unix_ns)?;
    ledger
        .conn
        .close()
        .map_err(|(_, e)| LedgerError::Sqlite(e))?;
    durable::sync_dir(&building)?;
    let live = Ledger::live_dir(home);
    if live.exists() {
        // Empty (the caller checked): an older build's first run stopped
        // after making it.
        std::fs::remove_dir(&live).map_err(|e| LedgerError::io(&live, e))?;
    }
    std::fs::rename(&building, &live).map_err(|e| LedgerError::io(&live, e))?;
    durable::sync_dir(&ledgers)
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
