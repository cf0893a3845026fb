//! A damaged home is refused, never replaced.
//!
//! The live epoch (`ledgers/v2/`) is created exactly once, when the home is
//! **new**: that directory is absent or empty, no archived epoch exists and
//! no advance is underway. A new epoch is built whole in `ledgers/v2.new/`
//! (genesis, database, every migration, the database's binding to its
//! genesis) and renamed into place, so a crash leaves either no live epoch
//! or a complete one, and a live directory with anything in it always has
//! both files. From then on nothing but `harnery epoch advance` creates a
//! ledger, a genesis or an epoch.
//!
//! Everything else found there is checked before anything is written, and
//! what does not check out is [`LedgerError::Damaged`], naming the file,
//! what is wrong with it and how to recover:
//!
//! - `genesis.json` missing, unreadable, or not the bytes the ledger
//!   recorded when the epoch began (`meta.genesis_blake3`; a ledger from
//!   before that key records the bytes it finds on its first finalize);
//! - `ledger.sqlite` missing, empty, shorter than its header says, not an
//!   SQLite database, without harnery's tables, or bound to another genesis;
//! - a raw archive file the ledger recorded (`raw_members`) missing, of
//!   another size, or rewritten with bytes its rows' records do not match.
//!
//! `finalize` refuses (exit 2); `verify`, `validate`, `health` and `epoch
//! verify` report a finding (exit 1). Nothing is deleted and the hooks keep
//! spooling, so once the file is restored the next finalize drains all.

use std::path::{Path, PathBuf};

use rusqlite::{Connection, OptionalExtension, params};

use super::{DB_FILE, GENESIS_FILE, LedgerError, raw};

/// Where a new live epoch is built before it is renamed into place.
pub(crate) const NEW_EPOCH_DIR: &str = "v2.new";

/// The meta key holding the blake3 of `genesis.json`'s bytes.
pub(crate) const GENESIS_BLAKE3: &str = "genesis_blake3";

/// The meta key saying every raw archive file of the ledger is recorded.
pub(super) const RAW_MEMBERS_RECORDED: &str = "raw_members_recorded";

/// Whether the live epoch directory `dir` holds nothing (absent or empty).
pub(crate) fn is_new(dir: &Path) -> Result<bool, LedgerError> {
    match std::fs::read_dir(dir) {
        Ok(mut entries) => Ok(entries.next().is_none()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(true),
        Err(e) => Err(LedgerError::io(dir, e)),
    }
}

impl LedgerError {
    /// The file and what is wrong with it, when this is a damaged home.
    pub(crate) fn damage(&self) -> Option<RawFault> {
        match self {
            LedgerError::Damaged { path, what } => Some(RawFault {
                path: path.clone(),
                what: what.clone(),
            }),
            _ => None,
        }
    }
}

/// The refusal for `path`, with the way back.
pub(crate) fn damaged(path: &Path, what: impl Into<String>) -> LedgerError {
    LedgerError::Damaged {
        path: path.to_path_buf(),
        what: what.into(),
    }
}

/// What a user does about a damaged file (part of every refusal).
pub fn recovery(path: &Path) -> String {
    let in_archive = path
        .ancestors()
        .any(|p| p.file_name().is_some_and(|n| n == super::CANDIDATES_DIR));
    if in_archive {
        return format!(
            "restore {} from a backup: an archived epoch is never repaired or rebuilt, and the other epochs still read. See docs/ledger.md, \"A damaged home\"",
            path.display()
        );
    }
    let epoch = path
        .ancestors()
        .find(|p| p.file_name().is_some_and(|n| n == super::LIVE_DIR))
        .unwrap_or(path);
    format!(
        "restore {} from a backup and run `harnery finalize` again; with no backup, move {} aside (it is evidence: keep it) and the next `harnery finalize` starts a new ledger. See docs/ledger.md, \"A damaged home\"",
        path.display(),
        epoch.display()
    )
}

/// blake3 of a file's bytes, as hex.
pub(crate) fn digest_hex(bytes: &[u8]) -> String {
    blake3::hash(bytes).to_hex().to_string()
}

/// The database file at `db`, checked before SQLite opens it: SQLite takes
/// an empty file for a new database and would build a fresh ledger there.
pub(crate) fn check_db_file(db: &Path) -> Result<(), LedgerError> {
    let meta = match std::fs::symlink_metadata(db) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(damaged(
                db,
                "is missing, but genesis.json beside it says an epoch began here",
            ));
        }
        Err(e) => return Err(damaged(db, format!("cannot be read: {e}"))),
    };
    if !meta.is_file() {
        return Err(damaged(db, "is not a regular file"));
    }
    let len = meta.len();
    if len == 0 {
        return Err(damaged(db, "is empty (0 bytes)"));
    }
    let mut head = [0u8; 100];
    let got = read_head(db, &mut head)?;
    let magic = b"SQLite format 3\0";
    if got < magic.len() || &head[..magic.len()] != magic {
        let shown: String = head[..got.min(16)]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        return Err(damaged(
            db,
            format!("is not an SQLite database (it begins with bytes {shown})"),
        ));
    }
    if got < head.len() {
        return Err(damaged(
            db,
            format!("is truncated: {len} bytes, shorter than an SQLite header"),
        ));
    }
    check_pages(db, &head, len)
}

fn read_head(db: &Path, head: &mut [u8; 100]) -> Result<usize, LedgerError> {
    use std::io::Read;
    let mut file =
        std::fs::File::open(db).map_err(|e| damaged(db, format!("cannot be read: {e}")))?;
    let mut got = 0;
    while got < head.len() {
        match file.read(&mut head[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(damaged(db, format!("cannot be read: {e}"))),
        }
    }
    Ok(got)
}

/// The file holds whole pages, at least as many as its header counts. The
/// count is skipped while a WAL is beside it: a checkpoint cut short may
/// have written page 1 before the pages it counts, and the WAL still holds
/// them.
fn check_pages(db: &Path, head: &[u8; 100], len: u64) -> Result<(), LedgerError> {
    let be32 = |at: usize| u32::from_be_bytes(head[at..at + 4].try_into().expect("4 bytes"));
    let page = match u16::from_be_bytes([head[16], head[17]]) {
        1 => 65536u64,
        n => u64::from(n),
    };
    if !(512..=65536).contains(&page) || !page.is_power_of_two() {
        return Err(damaged(
            db,
            format!("is not an SQLite database (page size {page})"),
        ));
    }
    if !len.is_multiple_of(page) {
        return Err(damaged(
            db,
            format!("is truncated: {len} bytes is not a whole number of {page}-byte pages"),
        ));
    }
    let pages = u64::from(be32(28));
    let counted = pages != 0 && be32(24) == be32(92);
    let wal = PathBuf::from(format!("{}-wal", db.display()));
    let wal_len = std::fs::metadata(&wal).map(|m| m.len()).unwrap_or(0);
    if counted && wal_len == 0 && len < pages * page {
        return Err(damaged(
            db,
            format!(
                "is truncated: {len} bytes, but its header counts {pages} pages of {page} bytes ({} bytes)",
                pages * page
            ),
        ));
    }
    Ok(())
}

/// An SQLite error that says the file is not (or no longer) a database;
/// any other keeps the operating system's reason (a full disk) when
/// `conn` has one.
pub(crate) fn sqlite_damage(db: &Path, e: rusqlite::Error) -> LedgerError {
    use rusqlite::ErrorCode::{DatabaseCorrupt, NotADatabase};
    match e.sqlite_error_code() {
        Some(DatabaseCorrupt | NotADatabase) => damaged(db, format!("is damaged: SQLite says {e}")),
        _ => LedgerError::Sqlite(e),
    }
}

fn query_damage(conn: &Connection, db: &Path, e: rusqlite::Error) -> LedgerError {
    match sqlite_damage(db, e) {
        LedgerError::Sqlite(e) => super::system_error::with_system_error(conn, db, e),
        other => other,
    }
}

/// What a genesis manifest names that its database must name too.
#[derive(Clone, Copy)]
pub(crate) struct Binding<'g> {
    pub genesis_id: &'g str,
    pub schema_digest: &'g str,
}

/// The binding between `genesis.json` (its manifest's epoch id and schema
/// digest, and the blake3 of its bytes) and the database: both name the
/// same epoch and digest, and the genesis bytes are those the ledger
/// recorded, when it recorded them.
pub(crate) fn check_binding(
    conn: &Connection,
    dir: &Path,
    genesis: Binding<'_>,
    genesis_blake3: &str,
) -> Result<(), LedgerError> {
    let db = dir.join(DB_FILE);
    let gpath = dir.join(GENESIS_FILE);
    let has_meta: bool = conn
        .query_row(
            "SELECT EXISTS (SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'meta')",
            [],
            |r| r.get(0),
        )
        .map_err(|e| query_damage(conn, &db, e))?;
    if !has_meta {
        return Err(damaged(
            &db,
            "holds no harnery ledger (it has no meta table)",
        ));
    }
    let get = |key: &str| -> Result<Option<String>, LedgerError> {
        conn.query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| r.get(0))
            .optional()
            .map_err(|e| query_damage(conn, &db, e))
    };
    let id = get("genesis_id")?;
    if id.as_deref() != Some(genesis.genesis_id) {
        return Err(damaged(
            &db,
            format!(
                "belongs to epoch {}, but {} names epoch {}: one of the two was replaced",
                id.as_deref().unwrap_or("(none)"),
                gpath.display(),
                genesis.genesis_id
            ),
        ));
    }
    let digest = get("schema_digest")?;
    if digest.as_deref() != Some(genesis.schema_digest) {
        return Err(damaged(
            &gpath,
            format!(
                "names schema digest {}, but the ledger was written under {}: it was edited",
                genesis.schema_digest,
                digest.as_deref().unwrap_or("(none)")
            ),
        ));
    }
    if let Some(recorded) = get(GENESIS_BLAKE3)?
        && recorded != genesis_blake3
    {
        return Err(damaged(
            &gpath,
            format!(
                "was edited: its bytes hash to {genesis_blake3}, the ledger recorded {recorded} when the epoch began"
            ),
        ));
    }
    Ok(())
}

/// A file of the live epoch that is not what the ledger recorded: a raw
/// archive file, or (from [`LedgerError::damage`]) the genesis or database.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct RawFault {
    pub path: PathBuf,
    pub what: String,
}

/// One archive file as recorded: its name below `raw/`, length, mtime.
pub(super) struct Member {
    pub(super) name: String,
    pub(super) len: u64,
    pub(super) mtime_ns: i64,
}

pub(super) fn stat(path: &Path) -> std::io::Result<(u64, i64)> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::symlink_metadata(path)?;
    Ok((m.len(), m.mtime() * 1_000_000_000 + m.mtime_nsec()))
}

/// A file's length and mtime as `raw_members` records them.
pub(super) fn stat_of(path: &Path) -> Result<(u64, i64), LedgerError> {
    stat(path).map_err(|e| LedgerError::io(path, e))
}

/// The files of `batch`'s archive as they are now (none when it has none).
pub(super) fn members_of(
    ledger_dir: &Path,
    batch: &str,
) -> Result<Vec<(String, u64, i64)>, LedgerError> {
    let raw_dir = ledger_dir.join(raw::RAW_DIR);
    let mut names = Vec::new();
    for single in [format!("{batch}.seg"), format!("{batch}.segz")] {
        if raw_dir.join(&single).is_file() {
            names.push(single);
        }
    }
    let dir = raw::archive_path(ledger_dir, batch);
    match std::fs::read_dir(&dir) {
        Ok(entries) => {
            for e in entries {
                let e = e.map_err(|e| LedgerError::io(&dir, e))?;
                if e.file_name().to_string_lossy().starts_with('.') {
                    // A compaction's file not yet renamed into place.
                    continue;
                }
                names.push(format!("{batch}/{}", e.file_name().to_string_lossy()));
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(LedgerError::io(&dir, e)),
    }
    names.sort();
    names
        .into_iter()
        .map(|name| {
            let path = raw_dir.join(&name);
            let (len, mtime) = stat(&path).map_err(|e| LedgerError::io(&path, e))?;
            Ok((name, len, mtime))
        })
        .collect()
}

/// Record `batch`'s archive files in the append transaction `tx`.
pub(super) fn record_members(
    tx: &rusqlite::Transaction,
    ledger_dir: &Path,
    batch: &str,
) -> Result<(), LedgerError> {
    let mut stmt = tx.prepare_cached(
        "INSERT OR REPLACE INTO raw_members (batch, name, len, mtime_ns) VALUES (?1, ?2, ?3, ?4)",
    )?;
    for (name, len, mtime) in members_of(ledger_dir, batch)? {
        stmt.execute(params![batch, name, len as i64, mtime])?;
    }
    Ok(())
}

/// Mark a new ledger as recording every archive file from its start.
pub(super) fn mark_new(conn: &Connection, genesis_blake3: &str) -> Result<(), LedgerError> {
    conn.execute(
        "INSERT OR IGNORE INTO meta (key, value) VALUES (?1, ?2), (?3, '1')",
        params![GENESIS_BLAKE3, genesis_blake3, RAW_MEMBERS_RECORDED],
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_home_is_an_absent_or_empty_live_directory() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("v2");
        assert!(is_new(&dir).unwrap());
        std::fs::create_dir(&dir).unwrap();
        assert!(is_new(&dir).unwrap());
        std::fs::write(dir.join("ledger.sqlite"), b"").unwrap();
        assert!(!is_new(&dir).unwrap());
    }

    #[test]
    fn a_database_file_is_checked_before_sqlite_sees_it() {
        let t = tempfile::tempdir().unwrap();
        let db = t.path().join("ledger.sqlite");
        let err = |db: &Path| check_db_file(db).unwrap_err().to_string();
        assert!(err(&db).contains("is missing"));
        std::fs::write(&db, b"").unwrap();
        assert!(err(&db).contains("is empty (0 bytes)"), "{}", err(&db));
        std::fs::write(&db, [7u8; 4096]).unwrap();
        assert!(
            err(&db).contains("is not an SQLite database"),
            "{}",
            err(&db)
        );
        let conn = Connection::open(db.with_extension("real")).unwrap();
        conn.execute_batch("CREATE TABLE t (x); INSERT INTO t VALUES (randomblob(40000));")
            .unwrap();
        drop(conn);
        let bytes = std::fs::read(db.with_extension("real")).unwrap();
        std::fs::write(&db, &bytes).unwrap();
        check_db_file(&db).unwrap();
        std::fs::write(&db, &bytes[..bytes.len() - 4096]).unwrap();
        assert!(err(&db).contains("is truncated"), "{}", err(&db));
        std::fs::write(&db, &bytes[..bytes.len() - 10]).unwrap();
        assert!(err(&db).contains("whole number"), "{}", err(&db));
        std::fs::write(&db, &bytes[..50]).unwrap();
        assert!(
            err(&db).contains("shorter than an SQLite header"),
            "{}",
            err(&db)
        );
    }
}
