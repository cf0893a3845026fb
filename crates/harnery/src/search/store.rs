//! The index file, `HARNERY_HOME/search/index.sqlite`: its schema, and
//! opening it so that it is always usable. The index is never the truth:
//! it is built from ledger rows and can be thrown away at any time, so a
//! file that is missing, is not a SQLite database, or holds another
//! schema is removed and made again, silently. It lives outside
//! `ledgers/` so that an epoch's tree (and an archive's manifest) never
//! holds it, and `verify` never sees it.
//!
//! Tables: `epochs` (each epoch indexed, by genesis id, under a small
//! integer key: how far it is indexed, that row's hash so a ledger that is
//! not the one the index was built from is noticed, and the latest event
//! time indexed so far); `sessions` (each session, by adapter and id,
//! under a small integer key); `docs` (one row per searchable event: what
//! a query filters on, its session's key, time, kind, tool and span state,
//! but not its text), keyed by [`doc_id`] (the epoch's key and the row's
//! `seq`, so an epoch's docs are one rowid range in chain order; what the
//! event itself holds, its id, type, offset and turn, is read from its
//! ledger row when the hit is shown); `doc_events` (each doc's event id,
//! packed by [`super::keys::event_key`], so a span's state reaches the
//! docs of its request and terminal); `ranges` (each session's first and
//! last doc id per epoch, so a search of one session reads only that
//! range); `said` (one 16-byte key per text said in a session, per turn
//! or call, and kind: see [`super::keys::said_key`], so one said twice,
//! by a hook and by the agent's record, is one doc: see
//! [`super::update`]); `texts`
//! (each doc's text, read only for the hits shown
//! and to confirm a substring); `facts` (per run of doc ids, each doc's
//! length in words and a tag of its kind, tool and failure: see
//! [`super::facts`]); and two FTS5 tables over `texts`
//! (`words`: unicode61, for words, phrases and prefixes with BM25 rank;
//! `grams`: trigrams without positions or lengths, which find the docs
//! holding every trigram of a substring, confirmed against the text). A
//! doc's `time_bound` (no doc before it in its epoch is newer) is NULL
//! where it is the doc's own time. The file gives the pages FTS5's merges
//! free back to the file system (incremental auto-vacuum).

use std::path::{Path, PathBuf};

use rusqlite::{Connection, OptionalExtension};

use super::SearchError;
use crate::home::Home;

/// The format this build writes; another value in `meta` means the file
/// is rebuilt.
pub const FORMAT: &str = "harnery-search-6";

pub(super) const SCHEMA: &str = "
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE epochs (
    id INTEGER PRIMARY KEY,
    genesis_id TEXT NOT NULL UNIQUE,
    indexed_seq INTEGER NOT NULL,
    seq_hash BLOB,
    max_time INTEGER
);
CREATE TABLE sessions (
    id INTEGER PRIMARY KEY,
    adapter TEXT NOT NULL,
    session_id TEXT NOT NULL,
    UNIQUE (adapter, session_id)
);
CREATE TABLE docs (
    id INTEGER PRIMARY KEY,
    session INTEGER NOT NULL,
    time_unix_ns INTEGER NOT NULL,
    time_bound INTEGER,
    kind INTEGER NOT NULL,
    tool TEXT,
    span_state TEXT,
    outcome TEXT
);
CREATE TABLE doc_events (
    event BLOB NOT NULL,
    id INTEGER NOT NULL,
    PRIMARY KEY (event, id)
) WITHOUT ROWID;
CREATE TABLE ranges (
    epoch INTEGER NOT NULL,
    session INTEGER NOT NULL,
    first_id INTEGER NOT NULL,
    last_id INTEGER NOT NULL,
    PRIMARY KEY (epoch, session)
) WITHOUT ROWID;
CREATE TABLE said (key BLOB PRIMARY KEY) WITHOUT ROWID;
CREATE TABLE texts (id INTEGER PRIMARY KEY, text TEXT NOT NULL);
CREATE TABLE facts (id INTEGER PRIMARY KEY, lens BLOB NOT NULL, tags BLOB NOT NULL);
CREATE VIRTUAL TABLE words USING fts5(text, content='texts', content_rowid='id',
    tokenize='unicode61 remove_diacritics 2');
CREATE VIRTUAL TABLE grams USING fts5(text, content='texts', content_rowid='id',
    tokenize='trigram', detail='none', columnsize=0);
";

/// Bytes of new index data each FTS5 table holds in memory before it
/// writes a segment (FTS5's default is 1 MiB).
const HASH_SIZE: i64 = 8 << 20;

/// Bits of a doc id that hold the row's `seq`; the epoch's key is above.
const SEQ_BITS: u32 = 40;

/// The doc id of row `seq` of the epoch keyed `epoch`.
pub(crate) fn doc_id(epoch: i64, seq: i64) -> i64 {
    (epoch << SEQ_BITS) | seq
}

/// The doc ids of the epoch keyed `epoch`: `[first, last]`.
pub(crate) fn doc_range(epoch: i64) -> (i64, i64) {
    (doc_id(epoch, 0), doc_id(epoch + 1, 0) - 1)
}

/// The epoch key of a doc id.
pub(crate) fn epoch_of(id: i64) -> i64 {
    id >> SEQ_BITS
}

/// `HARNERY_HOME/search/index.sqlite` (the directory made 0700).
pub fn index_path(home: &Home) -> Result<PathBuf, SearchError> {
    let dir = home
        .private_dir(&["search"])
        .map_err(|e| SearchError::io(&home.root().join("search"), e))?;
    Ok(dir.path().join("index.sqlite"))
}

/// Open the index, making it anew when it is missing or not one this
/// build can use.
pub(crate) fn open(home: &Home) -> Result<Connection, SearchError> {
    let path = index_path(home)?;
    match open_existing(&path) {
        Ok(Some(conn)) => Ok(conn),
        Ok(None) => create(&path),
        Err(e) if is_damage(&e) => create(&path),
        // Busy, or unreachable: never a reason to throw the index away.
        Err(e) => Err(e.into()),
    }
}

/// How a search holds the index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Held {
    /// The file, open for writing: a search may bring it up to date.
    Writable,
    /// The file, open only for reading (a read-only home or index): it is
    /// searched as it stands.
    ReadOnly,
    /// No usable file and none can be made (a read-only or full home): an
    /// index in memory, made from the ledger for this search alone.
    Memory,
}

/// How long a search waits for a lock it cannot go without (reading the
/// file's format while a writer finishes a checkpoint): not long, as a
/// search answers from the index as it stands.
pub(crate) const READ_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// Open the index for a search, writing nothing that is not needed: the
/// file as it is when it speaks [`FORMAT`] (for writing where the home
/// allows it, else read-only, else `immutable`: what its main file holds,
/// when SQLite cannot even make the WAL's shared memory beside it); made
/// anew when it is missing, or damaged or foreign as a writable file, and
/// the home can hold it; else an empty index in memory. A file that
/// cannot be read here is never thrown away.
pub(crate) fn open_for_search(home: &Home) -> Result<(Connection, Held), SearchError> {
    let path = home.root().join("search").join("index.sqlite");
    if !path.exists() {
        return made_or_memory(home);
    }
    match usable(connect_writable(&path)) {
        Ok(Some(conn)) => return Ok((conn, Held::Writable)),
        Ok(None) => return made_or_memory(home),
        // Unreachable for writing: read it as it stands.
        Err(_) => {}
    }
    for immutable in [false, true] {
        if let Ok(Some(conn)) = usable(connect_read_only(&path, immutable)) {
            return Ok((conn, Held::ReadOnly));
        }
    }
    Ok((in_memory()?, Held::Memory))
}

/// A connection whose file speaks [`FORMAT`], `None` for a damaged or
/// foreign file (to be made again), or why it cannot be read.
fn usable(
    conn: Result<Connection, rusqlite::Error>,
) -> Result<Option<Connection>, rusqlite::Error> {
    let conn = conn?;
    match format_of(&conn) {
        Ok(f) => Ok((f.as_deref() == Some(FORMAT)).then_some(conn)),
        Err(e) if is_damage(&e) => Ok(None),
        Err(e) => Err(e),
    }
}

/// The index made anew in the home, or one in memory where the home
/// cannot hold it.
fn made_or_memory(home: &Home) -> Result<(Connection, Held), SearchError> {
    match recreate(home) {
        Ok(conn) => Ok((conn, Held::Writable)),
        Err(_) => Ok((in_memory()?, Held::Memory)),
    }
}

/// An empty index in memory.
pub(crate) fn in_memory() -> Result<Connection, SearchError> {
    let mut conn = Connection::open_in_memory()?;
    init(&mut conn)?;
    Ok(conn)
}

/// An existing file opened for writing without changing it (its journal
/// mode is already WAL, kept in the file): no lock is taken to open it.
fn connect_writable(path: &Path) -> Result<Connection, rusqlite::Error> {
    use rusqlite::OpenFlags;
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_URI
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags)?;
    conn.busy_timeout(READ_WAIT)?;
    conn.pragma_update(None, "synchronous", "off")?;
    Ok(conn)
}

/// The file opened read-only; `immutable`, SQLite reads its main file
/// alone and makes nothing beside it.
fn connect_read_only(path: &Path, immutable: bool) -> Result<Connection, rusqlite::Error> {
    use rusqlite::OpenFlags;
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
        | OpenFlags::SQLITE_OPEN_URI
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let uri = match immutable {
        false => format!("file:{}", uri_path(path)),
        true => format!("file:{}?immutable=1", uri_path(path)),
    };
    let conn = Connection::open_with_flags(uri, flags)?;
    conn.busy_timeout(READ_WAIT)?;
    Ok(conn)
}

/// `path` as a URI's path: `%`, `?` and `#` escaped.
fn uri_path(path: &Path) -> String {
    let mut out = String::new();
    for c in path.display().to_string().chars() {
        match c {
            '%' => out.push_str("%25"),
            '?' => out.push_str("%3f"),
            '#' => out.push_str("%23"),
            c => out.push(c),
        }
    }
    out
}

/// The `format` the file's `meta` names.
fn format_of(conn: &Connection) -> Result<Option<String>, rusqlite::Error> {
    conn.query_row("SELECT value FROM meta WHERE key = 'format'", [], |r| {
        r.get(0)
    })
    .optional()
}

/// Whether an error means the index cannot be written here (a read-only
/// file or home, a full disk, a failing device), which a search passes
/// over: it answers from the index as it stands.
pub(crate) fn is_unwritable(e: &rusqlite::Error) -> bool {
    use rusqlite::ErrorCode::{CannotOpen, DiskFull, PermissionDenied, ReadOnly, SystemIoFailure};
    matches!(
        e.sqlite_error_code(),
        Some(CannotOpen | DiskFull | PermissionDenied | ReadOnly | SystemIoFailure)
    )
}

/// Throw the index away and make an empty one.
pub(crate) fn recreate(home: &Home) -> Result<Connection, SearchError> {
    create(&index_path(home)?)
}

/// The index at `path` if it exists and speaks [`FORMAT`].
fn open_existing(path: &Path) -> Result<Option<Connection>, rusqlite::Error> {
    if !path.exists() {
        return Ok(None);
    }
    let conn = connect(path)?;
    let format = format_of(&conn)?;
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
    init(&mut conn)?;
    Ok(conn)
}

/// The schema and the format, in an empty index.
fn init(conn: &mut Connection) -> Result<(), SearchError> {
    let tx = conn.transaction()?;
    tx.execute_batch(SCHEMA)?;
    // Fewer, larger segments for FTS5 to merge while the index is built.
    for table in ["words", "grams"] {
        tx.execute(
            &format!("INSERT INTO {table} ({table}, rank) VALUES ('hashsize', ?1)"),
            [HASH_SIZE],
        )?;
    }
    tx.execute(
        "INSERT INTO meta (key, value) VALUES ('format', ?1)",
        [FORMAT],
    )?;
    tx.commit()?;
    Ok(())
}

/// Give the file's free pages back to the file system (FTS5 frees the
/// pages of the segments it merges while rows are indexed: about a tenth
/// of the file). Nothing is lost when another run holds the index: the
/// pages stay free, to be reused or given back by the next catch-up.
pub(crate) fn give_back_free_pages(conn: &Connection) -> Result<(), rusqlite::Error> {
    match step_to_the_end(conn, "PRAGMA incremental_vacuum") {
        Err(e) if is_busy(&e) => Ok(()),
        done => done,
    }
}

/// Run `sql` to its end: `incremental_vacuum` gives back one page per step.
fn step_to_the_end(conn: &Connection, sql: &str) -> Result<(), rusqlite::Error> {
    let mut stmt = conn.prepare(sql)?;
    let mut rows = stmt.query([])?;
    while rows.next()?.is_some() {}
    Ok(())
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
    // Takes only in a file that is still empty (before WAL's header is
    // written), as one being made is: the pages FTS5's merges free can
    // then be given back to the file system (see [`give_back_free_pages`]).
    conn.pragma_update(None, "auto_vacuum", "incremental")?;
    // The index can always be made again from the ledger: no fsync per
    // commit, and a reader never waits for a writer.
    conn.pragma_update(None, "journal_mode", "wal")?;
    conn.pragma_update(None, "synchronous", "off")?;
    Ok(conn)
}

/// A page cache of `kib` KiB (a larger one than SQLite's 2 MiB while
/// rows are indexed; the default again for a query, whose peak memory
/// stays small).
pub(crate) fn cache_kib(conn: &Connection, kib: i64) -> Result<(), rusqlite::Error> {
    conn.pragma_update(None, "cache_size", -kib)
}

/// SQLite's own page cache size, in KiB.
pub(crate) const DEFAULT_CACHE_KIB: i64 = 2_000;

/// The page cache while rows are indexed, in KiB.
pub(crate) const INDEXING_CACHE_KIB: i64 = 16_384;

/// Whether an error means the file is damaged (to be made again) rather
/// than busy or unreachable.
pub(crate) fn is_damage(e: &rusqlite::Error) -> bool {
    use rusqlite::ErrorCode::{DatabaseCorrupt, NotADatabase};
    matches!(e.sqlite_error_code(), Some(DatabaseCorrupt | NotADatabase))
        || matches!(e, rusqlite::Error::SqliteFailure(_, Some(m)) if m.contains("no such table") || m.contains("no such column"))
}

/// Whether an error means another connection holds the index for writing
/// (past the busy timeout).
pub(crate) fn is_busy(e: &rusqlite::Error) -> bool {
    use rusqlite::ErrorCode::{DatabaseBusy, DatabaseLocked};
    matches!(e.sqlite_error_code(), Some(DatabaseBusy | DatabaseLocked))
}
