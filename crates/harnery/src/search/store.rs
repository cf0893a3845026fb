//! The index file, `HARNERY_HOME/search/index.sqlite`: its schema, and
//! opening it so that it is always usable. The index is never the truth:
//! it is built from ledger rows and can be thrown away at any time, so a
//! file that is missing, is not a SQLite database, or holds another
//! schema is removed and made again, silently. It lives outside
//! `ledgers/` so that an epoch's tree (and an archive's manifest) never
//! holds it, and `verify` never sees it.
//!
//! Tables: `docs` (one row per searchable event: where it is, what it is,
//! its text), two FTS5 tables over `docs.text` with `docs` as their
//! external content (`words`: the unicode61 tokenizer, for words, phrases
//! and prefixes with BM25 rank; `grams`: the trigram tokenizer, for
//! substrings), and `ledgers`, how far each epoch (by genesis id) is
//! indexed and the hash of that row, so a ledger that is not the one the
//! index was built from is noticed.

use std::path::{Path, PathBuf};

use rusqlite::{Connection, OptionalExtension};

use super::SearchError;
use crate::home::Home;

/// The format this build writes; another value in `meta` means the file
/// is rebuilt.
pub const FORMAT: &str = "harnery-search-1";

const SCHEMA: &str = "
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE ledgers (
    genesis_id TEXT PRIMARY KEY,
    indexed_seq INTEGER NOT NULL,
    seq_hash BLOB
);
CREATE TABLE docs (
    id INTEGER PRIMARY KEY,
    genesis_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    adapter TEXT NOT NULL,
    session_id TEXT NOT NULL,
    offset INTEGER NOT NULL,
    event_id TEXT NOT NULL,
    event_type TEXT NOT NULL,
    time_unix_ns INTEGER NOT NULL,
    turn TEXT,
    kind TEXT NOT NULL,
    tool TEXT,
    span_state TEXT,
    outcome TEXT,
    text TEXT NOT NULL
);
CREATE INDEX docs_event ON docs (genesis_id, event_id);
CREATE VIRTUAL TABLE words USING fts5(text, content='docs', content_rowid='id',
    tokenize='unicode61 remove_diacritics 2');
CREATE VIRTUAL TABLE grams USING fts5(text, content='docs', content_rowid='id',
    tokenize='trigram');
";

/// `HARNERY_HOME/search/index.sqlite` (the directory made 0700).
pub fn index_path(home: &Home) -> Result<PathBuf, SearchError> {
    let dir = home
        .private_dir(&["search"])
        .map_err(|e| SearchError::io(&home.root().join("search"), e))?;
    Ok(dir.path().join("index.sqlite"))
}

/// Open the index, making it anew when it is missing or not one this
/// build can use.
pub fn open(home: &Home) -> Result<Connection, SearchError> {
    let path = index_path(home)?;
    match open_existing(&path) {
        Ok(Some(conn)) => Ok(conn),
        Ok(None) => create(&path),
        Err(e) if is_damage(&e) => create(&path),
        // Busy, or unreachable: never a reason to throw the index away.
        Err(e) => Err(e.into()),
    }
}

/// Throw the index away and make an empty one.
pub fn recreate(home: &Home) -> Result<Connection, SearchError> {
    create(&index_path(home)?)
}

/// The index at `path` if it exists and speaks [`FORMAT`].
fn open_existing(path: &Path) -> Result<Option<Connection>, rusqlite::Error> {
    if !path.exists() {
        return Ok(None);
    }
    let conn = connect(path)?;
    let format: Option<String> = conn
        .query_row("SELECT value FROM meta WHERE key = 'format'", [], |r| {
            r.get(0)
        })
        .optional()?;
    Ok((format.as_deref() == Some(FORMAT)).then_some(conn))
}

fn create(path: &Path) -> Result<Connection, SearchError> {
    remove(path)?;
    use std::os::unix::fs::OpenOptionsExt;
    // A file the user alone can read: the index holds prompts and outputs.
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| SearchError::io(path, e))?;
    let mut conn = connect(path)?;
    let tx = conn.transaction()?;
    tx.execute_batch(SCHEMA)?;
    tx.execute(
        "INSERT INTO meta (key, value) VALUES ('format', ?1)",
        [FORMAT],
    )?;
    tx.commit()?;
    Ok(conn)
}

/// Remove the index file and SQLite's files beside it.
fn remove(path: &Path) -> Result<(), SearchError> {
    for suffix in ["", "-wal", "-shm", "-journal"] {
        let mut name = path.as_os_str().to_owned();
        name.push(suffix);
        let file = PathBuf::from(name);
        match std::fs::remove_file(&file) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(SearchError::io(&file, e)),
        }
    }
    Ok(())
}

fn connect(path: &Path) -> Result<Connection, rusqlite::Error> {
    let conn = Connection::open(path)?;
    conn.busy_timeout(std::time::Duration::from_secs(10))?;
    // The index can always be made again from the ledger: no fsync per
    // commit, and a reader never waits for a writer.
    conn.pragma_update(None, "journal_mode", "wal")?;
    conn.pragma_update(None, "synchronous", "off")?;
    Ok(conn)
}

/// Whether an error means the file is damaged (to be made again) rather
/// than busy or unreachable.
pub fn is_damage(e: &rusqlite::Error) -> bool {
    use rusqlite::ErrorCode::{DatabaseCorrupt, NotADatabase};
    matches!(e.sqlite_error_code(), Some(DatabaseCorrupt | NotADatabase))
        || matches!(e, rusqlite::Error::SqliteFailure(_, Some(m)) if m.contains("no such table") || m.contains("no such column"))
}

/// Whether an error means another connection holds the index for writing
/// (past the busy timeout).
pub fn is_busy(e: &rusqlite::Error) -> bool {
    use rusqlite::ErrorCode::{DatabaseBusy, DatabaseLocked};
    matches!(e.sqlite_error_code(), Some(DatabaseBusy | DatabaseLocked))
}
