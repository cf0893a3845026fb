//! Copilot's indexed store, `session-store.db` (its "chronicle"): tables
//! `sessions` and `turns`, read without disturbing a running CLI.
//!
//! On a live home every committed page sits in `session-store.db-wal`, so the
//! store is opened read-only through a `mode=ro` URI, which reads the WAL
//! (SQLite may create `-shm` for that). `immutable=1` is never used: it would
//! ignore the WAL and see an empty database. When a read-only open is
//! impossible (a read-only folder without `-shm`, say), the db and its `-wal`
//! are copied into a private temporary folder and the copy is read instead.
//! The copy is retried while either file changes under it.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use rusqlite::{Connection, OpenFlags};
use serde::Serialize;

use super::stream::message_digest;

/// How many turns rows are read for matching (all of a normal session).
const TURNS_READ_CAP: usize = 100_000;

/// How the store was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum OpenedVia {
    /// `mode=ro` on the live files.
    ReadOnly,
    /// A private copy of db + `-wal` in a temporary folder.
    PrivateCopy,
}

/// Which way to open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenStrategy {
    /// Read-only first, the private copy when that fails.
    Auto,
    /// Only the private copy (tests, and a user who wants no side files).
    PrivateCopyOnly,
}

/// A `sessions` row.
#[derive(Debug, Clone, Serialize)]
pub struct SessionRow {
    pub summary: Option<String>,
    pub created_at: Option<String>,
    pub updated_at: Option<String>,
}

/// A `turns` row.
#[derive(Debug, Clone, Serialize)]
pub struct TurnRow {
    pub turn_index: i64,
    pub user_message: Option<String>,
    pub assistant_response: Option<String>,
    pub timestamp: Option<String>,
    #[serde(skip)]
    pub digest: Option<[u8; 32]>,
}

/// What the store holds for one session, newest turn first.
#[derive(Debug, Clone, Serialize)]
pub struct Chronicle {
    pub path: PathBuf,
    pub opened_via: OpenedVia,
    /// Why the read-only open was not used, when it was not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_only_error: Option<String>,
    pub session: Option<SessionRow>,
    pub turns: Vec<TurnRow>,
}

/// Reading the store failed.
#[derive(Debug, thiserror::Error)]
pub enum ChronicleError {
    #[error("{path}: {source}")]
    Sqlite {
        path: PathBuf,
        source: rusqlite::Error,
    },
    #[error("{path}: cannot make a private copy: {source}")]
    Copy {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: the store kept changing while it was copied")]
    Unstable { path: PathBuf },
}

/// Read `session_id`'s rows from the store at `db`.
pub fn read(
    db: &Path,
    session_id: &str,
    strategy: OpenStrategy,
) -> Result<Chronicle, ChronicleError> {
    let mut read_only_error = None;
    if strategy == OpenStrategy::Auto {
        match open_live(db).and_then(|c| query(&c, session_id)) {
            Ok((session, turns)) => {
                return Ok(Chronicle {
                    path: db.into(),
                    opened_via: OpenedVia::ReadOnly,
                    read_only_error,
                    session,
                    turns,
                });
            }
            Err(e) => read_only_error = Some(e.to_string()),
        }
    }
    let copy = PrivateCopy::make(db)?;
    let conn = open_read_only(&copy.db).map_err(|source| ChronicleError::Sqlite {
        path: db.into(),
        source,
    })?;
    let (session, turns) = query(&conn, session_id).map_err(|source| ChronicleError::Sqlite {
        path: db.into(),
        source,
    })?;
    Ok(Chronicle {
        path: db.into(),
        opened_via: OpenedVia::PrivateCopy,
        read_only_error,
        session,
        turns,
    })
}

/// The live-file open; the `failpoints` feature can make it fail.
fn open_live(db: &Path) -> rusqlite::Result<Connection> {
    if super::failpoints::read_only_open_fails(db) {
        let code = rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_CANTOPEN);
        return Err(rusqlite::Error::SqliteFailure(
            code,
            Some("failpoint: read-only open refused".into()),
        ));
    }
    open_read_only(db)
}

fn open_read_only(db: &Path) -> rusqlite::Result<Connection> {
    let uri = format!("file:{}?mode=ro", uri_path(db));
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
        | OpenFlags::SQLITE_OPEN_URI
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(uri, flags)?;
    conn.busy_timeout(Duration::from_secs(2))?;
    Ok(conn)
}

/// Percent-encode what a URI path may not hold literally.
fn uri_path(path: &Path) -> String {
    let mut out = String::new();
    for b in path.as_os_str().as_encoded_bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'/' | b'-' | b'_' | b'.' | b'~' => {
                out.push(*b as char)
            }
            other => out.push_str(&format!("%{other:02X}")),
        }
    }
    out
}

type Rows = (Option<SessionRow>, Vec<TurnRow>);

fn query(conn: &Connection, session_id: &str) -> rusqlite::Result<Rows> {
    let session = conn
        .prepare("SELECT summary, created_at, updated_at FROM sessions WHERE id = ?1")?
        .query_map([session_id], |r| {
            Ok(SessionRow {
                summary: r.get(0)?,
                created_at: r.get(1)?,
                updated_at: r.get(2)?,
            })
        })?
        .next()
        .transpose()?;
    let mut stmt = conn.prepare(
        "SELECT turn_index, user_message, assistant_response, timestamp FROM turns \
         WHERE session_id = ?1 ORDER BY timestamp DESC, id DESC LIMIT ?2",
    )?;
    let turns = stmt
        .query_map(rusqlite::params![session_id, TURNS_READ_CAP as i64], |r| {
            let user_message: Option<String> = r.get(1)?;
            let digest = user_message.as_deref().map(message_digest);
            Ok(TurnRow {
                turn_index: r.get(0)?,
                user_message,
                assistant_response: r.get(2)?,
                timestamp: r.get(3)?,
                digest,
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok((session, turns))
}

/// db + `-wal` copied into a folder only this process uses; removed on drop.
struct PrivateCopy {
    dir: PathBuf,
    db: PathBuf,
}

impl PrivateCopy {
    fn make(db: &Path) -> Result<PrivateCopy, ChronicleError> {
        let copy_err = |source| ChronicleError::Copy {
            path: db.into(),
            source,
        };
        let dir = private_dir().map_err(copy_err)?;
        let copy = PrivateCopy {
            db: dir.join("session-store.db"),
            dir,
        };
        let wal = sidecar(db, "-wal");
        for _ in 0..5 {
            let before = (stamp(db), stamp(&wal));
            // The WAL first: a checkpoint between the two copies then only
            // repeats pages the db copy already has.
            copy_if_present(&wal, &sidecar(&copy.db, "-wal")).map_err(copy_err)?;
            fs::copy(db, &copy.db).map_err(copy_err)?;
            if before == (stamp(db), stamp(&wal)) {
                return Ok(copy);
            }
        }
        Err(ChronicleError::Unstable { path: db.into() })
    }
}

impl Drop for PrivateCopy {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.dir);
    }
}

fn private_dir() -> std::io::Result<PathBuf> {
    use std::os::unix::fs::DirBuilderExt;
    let nonce = uuid::Uuid::new_v4().simple().to_string();
    let dir = std::env::temp_dir().join(format!("harnery-recover-{}-{nonce}", std::process::id()));
    fs::DirBuilder::new().mode(0o700).create(&dir)?;
    Ok(dir)
}

fn sidecar(db: &Path, suffix: &str) -> PathBuf {
    let mut name = db.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

fn stamp(path: &Path) -> Option<(u64, SystemTime)> {
    let meta = fs::metadata(path).ok()?;
    Some((meta.len(), meta.modified().ok()?))
}

fn copy_if_present(from: &Path, to: &Path) -> std::io::Result<()> {
    match fs::copy(from, to) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        other => other.map(|_| ()),
    }
}
