//! The writing side of the ledger: [`LedgerWriter`], an epoch opened on a
//! read-write connection. Opening it migrates the tables; it appends
//! batches (with the tables derived from them), takes the fencing token,
//! tunes checkpoints, records raw archive members and compacts the raw
//! archive. It builds new epochs and folds an epoch's WAL before archiving.
//! Used by finalize, epoch advance, archive compaction and the operator
//! commands that write; everything else reads through
//! [`super::LedgerReader`], whose queries the writer offers too (`Deref`).
//!
//! SQLite runs in WAL mode with `synchronous=FULL`: the finalizer deletes a
//! ready file right after the commit that applied it, so a commit must
//! survive power loss, which `NORMAL` does not promise in WAL mode.

mod ahead;
mod append;
mod batch;
mod checkpoint;
pub mod compact;
pub mod compact_events;
mod derive;
mod members;
mod orphans;
pub(super) mod session_list;
pub(super) mod session_usage;
pub(super) mod titles;
mod usage_sums;

use std::ops::Deref;
use std::path::Path;

use rusqlite::{Connection, OpenFlags};

pub(crate) use ahead::{MadeAhead, WorkAhead};
pub use batch::{AppendBatch, AppendOutcome, BatchSignal, BatchState, RawBytes, ReadyEvent};
pub use checkpoint::Checkpointer;
pub use orphans::remove_orphans;
pub(crate) use session_usage::check as check_session_usage;
pub use titles::{project_of, record_title};

use super::read::{binding, check_digest, read_genesis};
use super::system_error::with_system_error;
use super::{
    ADVANCE_FILE, CANDIDATES_DIR, DB_FILE, FENCE_FILE, GENESIS_FILE, GenesisManifest, LedgerError,
    LedgerReader, binary_digest, create_dir_private, eventz, integrity, schema, signalz,
};
use crate::durable;
use crate::home::Home;
#[cfg(test)]
pub(super) use derive::STORED_OPEN_SPAN_OF_CALL;

/// A failpoint build's test-only switch: new epochs keep their event texts
/// plain, as an older build wrote them.
pub const PLAIN_EVENTS_ENV: &str = "HARNERY_PLAIN_EVENTS";

/// A failpoint build's test-only switch: new epochs keep their raw signal
/// rows in the plain table, as the build before compact signal rows wrote
/// them (events compact, unless [`PLAIN_EVENTS_ENV`] asks otherwise).
pub const PLAIN_SIGNALS_ENV: &str = "HARNERY_PLAIN_SIGNALS";

/// An epoch open for writing. Its reads are the reader's, on the same
/// connection.
pub struct LedgerWriter {
    read: LedgerReader,
    poisoned: bool,
    /// The compressor of a compact ledger's event texts (`ledger::eventz`);
    /// `None` for a ledger that keeps them as plain text.
    encoder: Option<eventz::Encoder>,
}

impl Deref for LedgerWriter {
    type Target = LedgerReader;

    fn deref(&self) -> &LedgerReader {
        &self.read
    }
}

impl LedgerWriter {
    /// Open the live epoch for writing, creating the first epoch only when
    /// the home is new (see [`integrity`]). Refuses a foreign digest like
    /// the reader, and a damaged epoch. Never creates an epoch while an
    /// advance is in progress: that new epoch would not anchor to the
    /// archive and would take the rows the advance carries.
    pub fn open(home: &Home, now_unix_ns: i64) -> Result<LedgerWriter, LedgerError> {
        let dir = LedgerReader::live_dir(home);
        if !dir.join(GENESIS_FILE).exists() && integrity::is_new(&dir)? {
            if let Some(why) = advance_underway(home) {
                return Err(LedgerError::AdvanceInProgress(why));
            }
            create_first_epoch(home, now_unix_ns)?;
        }
        LedgerWriter::open_dir(&dir, now_unix_ns, true)
    }

    /// Open (and migrate) the existing epoch in `dir` for writing. Nothing
    /// is created: its genesis and database must be there and bound to
    /// each other, checked before any migration runs.
    pub fn open_dir(
        dir: &Path,
        now_unix_ns: i64,
        check: bool,
    ) -> Result<LedgerWriter, LedgerError> {
        if dir.join(FENCE_FILE).exists() {
            return Err(LedgerError::Corrupt {
                path: dir.to_path_buf(),
                detail: "this epoch is archived (path fence); it is never written again".into(),
            });
        }
        // Everything is checked through a reader first: a refusal leaves
        // every file of the epoch as it was, the database's too.
        let touched = {
            let reader = LedgerReader::open_dir(dir, check.then(binary_digest).as_deref())?;
            reader.raw().refuse_faults()?
        };
        let (genesis, blake3) = read_genesis(dir)?;
        let db = dir.join(DB_FILE);
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let mut conn = Connection::open_with_flags(&db, flags)?;
        configure(&conn)?;
        eventz::register(&conn)?;
        integrity::check_binding(&conn, dir, binding(&genesis), &blake3)?;
        schema::migrate(&mut conn, now_unix_ns).map_err(|e| match e {
            LedgerError::Sqlite(e) => integrity::sqlite_damage(&db, e),
            other => other,
        })?;
        // Session rows from before titles get theirs from their events.
        titles::fill_pending(&conn)?;
        // A ledger from before the genesis bytes were recorded records
        // them as its first finalize by this build finds them.
        conn.execute(
            "INSERT OR IGNORE INTO meta (key, value) VALUES (?1, ?2)",
            [integrity::GENESIS_BLAKE3, blake3.as_str()],
        )?;
        let mut ledger = LedgerWriter::on(conn, genesis, dir)?;
        // Session rows from before their usage facts get them likewise.
        session_usage::fill_pending(&ledger.read)?;
        // And the facts the sessions list reads beside them.
        session_list::fill_pending(&ledger.read)?;
        ledger.record_raw_members(&touched)?;
        Ok(ledger)
    }

    /// Build a new epoch's database in `dir`, beside its genesis manifest
    /// (already written there): every migration, and the binding to the
    /// genesis. Only for a directory that is not live yet (a first epoch
    /// being built, an advance's candidate); refuses one that holds a
    /// database already.
    pub fn create_epoch(dir: &Path, now_unix_ns: i64) -> Result<LedgerWriter, LedgerError> {
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
        LedgerWriter::on(conn, genesis, dir)
    }

    fn on(
        conn: Connection,
        genesis: GenesisManifest,
        dir: &Path,
    ) -> Result<LedgerWriter, LedgerError> {
        let encoder = match eventz::is_compact(&conn)? {
            true => Some(eventz::Encoder::load(&conn)?),
            false => None,
        };
        Ok(LedgerWriter {
            read: LedgerReader::on(conn, genesis, dir),
            poisoned: false,
            encoder,
        })
    }

    /// The read-write connection, for a transaction.
    fn conn_mut(&mut self) -> &mut Connection {
        &mut self.read.conn
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
    eventz::register(conn)?;
    schema::migrate(conn, now_unix_ns)?;
    session_usage::none_pending(conn)?;
    session_list::none_pending(conn)?;
    // A new epoch stores its events and raw signal rows compactly from
    // its first row (a failpoint build's tests can ask for the plain forms
    // older builds wrote, `HARNERY_PLAIN_EVENTS` and
    // `HARNERY_PLAIN_SIGNALS`, to convert them).
    if crate::failpoint::tuning_text(PLAIN_EVENTS_ENV).is_none() {
        let tx = conn.transaction()?;
        eventz::make_compact(&tx)?;
        if crate::failpoint::tuning_text(PLAIN_SIGNALS_ENV).is_none() {
            signalz::make_compact(&tx)?;
        }
        tx.commit()?;
    }
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
    let ledger = LedgerWriter::create_epoch(&building, now_unix_ns)?;
    ledger
        .read
        .conn
        .close()
        .map_err(|(_, e)| LedgerError::Sqlite(e))?;
    durable::sync_dir(&building)?;
    let live = LedgerReader::live_dir(home);
    if live.exists() {
        // Empty (the caller checked): an older build's first run stopped
        // after making it.
        std::fs::remove_dir(&live).map_err(|e| LedgerError::io(&live, e))?;
    }
    std::fs::rename(&building, &live).map_err(|e| LedgerError::io(&live, e))?;
    Ok(durable::sync_dir(&ledgers)?)
}

#[cfg(test)]
mod reader_tests {
    use crate::home::Home;
    use crate::ledger::{LedgerReader, LedgerWriter};

    /// The reader's connection is read-only at the SQLite level: a write
    /// through it fails with SQLITE_READONLY and leaves the row count.
    #[test]
    fn the_readers_connection_refuses_a_write() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::at(dir.path());
        drop(LedgerWriter::open(&home, 1).unwrap());
        let reader = LedgerReader::open(&home).unwrap();
        assert!(reader.conn.is_readonly(rusqlite::MAIN_DB).unwrap());
        let err = reader
            .conn
            .execute("INSERT INTO meta (key, value) VALUES ('probe', '1')", [])
            .unwrap_err();
        assert_eq!(
            err.sqlite_error_code(),
            Some(rusqlite::ErrorCode::ReadOnly),
            "{err}"
        );
        let probes: i64 = reader
            .conn
            .query_row("SELECT count(*) FROM meta WHERE key = 'probe'", [], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(probes, 0);
    }
}
