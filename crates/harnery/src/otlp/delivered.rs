//! What each endpoint has taken: `HARNERY_HOME/otlp/delivered.sqlite`,
//! beside the ledger and never part of its chain. One row per span and
//! endpoint: the span's trace and span id, and a digest of the span as it
//! was sent. A push sends a span whose row is missing or whose digest
//! differs (a span that was open and has closed, a turn or root that
//! grew), and records spans only after the receiver took them, so a push
//! killed at any moment resends at most what was in flight; the ids being
//! derived from the ledger, a resend names the same spans again.
//!
//! Beside the spans, one row per endpoint and session: the session's head
//! (one past its last offset) in its epoch when a push that read it
//! ended with every span taken, and the shape the spans had then (the
//! build and the content mode). The ledger only grows, so a session whose
//! head and shape are the same has nothing new, and a push passes over it
//! without reading it; a session that grew is read and its spans checked
//! one by one as above.

use std::collections::HashMap;
use std::path::PathBuf;

use rusqlite::{Connection, params};

use crate::home::Home;

/// A span's place: its trace id (16 bytes) then its span id (8).
pub type SpanKey = [u8; 24];
/// The first 16 bytes of the BLAKE3 hash of the span's OTLP/JSON text.
pub type Digest = [u8; 16];

#[derive(Debug, thiserror::Error)]
pub enum DeliveredError {
    #[error("{path}: {source}")]
    Sqlite {
        path: PathBuf,
        source: rusqlite::Error,
    },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// The record of one endpoint's deliveries.
pub struct Delivered {
    conn: Connection,
    path: PathBuf,
    endpoint: i64,
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS endpoints (id INTEGER PRIMARY KEY, url TEXT NOT NULL UNIQUE);
CREATE TABLE IF NOT EXISTS spans (
    endpoint INTEGER NOT NULL,
    span BLOB NOT NULL,
    digest BLOB NOT NULL,
    PRIMARY KEY (endpoint, span)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS sessions (
    endpoint INTEGER NOT NULL,
    place TEXT NOT NULL,
    adapter TEXT NOT NULL,
    session_id TEXT NOT NULL,
    head INTEGER NOT NULL,
    shape TEXT NOT NULL,
    PRIMARY KEY (endpoint, place, adapter, session_id)
) WITHOUT ROWID;
";

/// A session as the gate names it: its place (epoch), adapter and id.
pub type SessionKey = (String, String, String);
/// What an endpoint took of a session: its head and the spans' shape.
pub type SessionMark = (u64, String);

impl Delivered {
    /// The file's path in `home`.
    pub fn path(home: &Home) -> PathBuf {
        home.root().join("otlp").join("delivered.sqlite")
    }

    /// Open (or make) the record, for `endpoint`.
    pub fn open(home: &Home, endpoint: &str) -> Result<Delivered, DeliveredError> {
        let dir = home
            .private_dir(&["otlp"])
            .map_err(|source| DeliveredError::Io {
                path: home.root().join("otlp"),
                source,
            })?;
        let path = dir.path().join("delivered.sqlite");
        let err = |source| DeliveredError::Sqlite {
            path: path.clone(),
            source,
        };
        let conn = Connection::open(&path).map_err(err)?;
        conn.busy_timeout(std::time::Duration::from_secs(30))
            .map_err(err)?;
        conn.pragma_update(None, "journal_mode", "wal")
            .map_err(err)?;
        conn.pragma_update(None, "synchronous", "normal")
            .map_err(err)?;
        conn.execute_batch(SCHEMA).map_err(err)?;
        conn.execute(
            "INSERT OR IGNORE INTO endpoints (url) VALUES (?1)",
            [endpoint],
        )
        .map_err(err)?;
        let id = conn
            .query_row("SELECT id FROM endpoints WHERE url = ?1", [endpoint], |r| {
                r.get(0)
            })
            .map_err(err)?;
        Ok(Delivered {
            conn,
            path,
            endpoint: id,
        })
    }

    fn err(&self, source: rusqlite::Error) -> DeliveredError {
        DeliveredError::Sqlite {
            path: self.path.clone(),
            source,
        }
    }

    /// The digests the endpoint took of the spans of `trace`, one range
    /// of the key read at once into `into`.
    pub fn trace_digests(
        &self,
        trace: &[u8; 16],
        into: &mut HashMap<SpanKey, Digest>,
    ) -> Result<(), DeliveredError> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT span, digest FROM spans WHERE endpoint = ?1 AND span >= ?2 AND span < ?3",
            )
            .map_err(|e| self.err(e))?;
        let mut low = [0u8; 24];
        low[..16].copy_from_slice(trace);
        let mut high = [0xffu8; 25];
        high[..16].copy_from_slice(trace);
        let mut rows = stmt
            .query(params![self.endpoint, &low[..], &high[..]])
            .map_err(|e| self.err(e))?;
        while let Some(row) = rows.next().map_err(|e| self.err(e))? {
            let span: Vec<u8> = row.get(0).map_err(|e| self.err(e))?;
            let digest: Vec<u8> = row.get(1).map_err(|e| self.err(e))?;
            if let (Ok(span), Ok(digest)) = (span.try_into(), digest.try_into()) {
                into.insert(span, digest);
            }
        }
        Ok(())
    }

    /// What the endpoint took of each session, as the last push that read
    /// it left it.
    pub fn sessions(&self) -> Result<HashMap<SessionKey, SessionMark>, DeliveredError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT place, adapter, session_id, head, shape FROM sessions WHERE endpoint = ?1",
            )
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([self.endpoint], |r| {
                Ok((
                    (r.get(0)?, r.get(1)?, r.get(2)?),
                    (r.get::<_, i64>(3)? as u64, r.get(4)?),
                ))
            })
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.err(e))
    }

    /// The endpoint took every span of these sessions, as they were at
    /// these heads.
    pub fn record_sessions(
        &mut self,
        sessions: &[(SessionKey, SessionMark)],
    ) -> Result<(), DeliveredError> {
        let endpoint = self.endpoint;
        let path = self.path.clone();
        let err = |source| DeliveredError::Sqlite {
            path: path.clone(),
            source,
        };
        let tx = self.conn.transaction().map_err(err)?;
        {
            let mut stmt = tx
                .prepare_cached(
                    "INSERT OR REPLACE INTO sessions (endpoint, place, adapter, session_id, head, shape) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                )
                .map_err(err)?;
            for ((place, adapter, id), (head, shape)) in sessions {
                stmt.execute(params![endpoint, place, adapter, id, *head as i64, shape])
                    .map_err(err)?;
            }
        }
        tx.commit().map_err(err)
    }

    /// The endpoint took these spans.
    pub fn record(&mut self, spans: &[(SpanKey, Digest)]) -> Result<(), DeliveredError> {
        let endpoint = self.endpoint;
        let tx = self
            .conn
            .transaction()
            .map_err(|e| DeliveredError::Sqlite {
                path: self.path.clone(),
                source: e,
            })?;
        {
            let mut stmt = tx
                .prepare_cached(
                    "INSERT OR REPLACE INTO spans (endpoint, span, digest) VALUES (?1, ?2, ?3)",
                )
                .map_err(|e| DeliveredError::Sqlite {
                    path: self.path.clone(),
                    source: e,
                })?;
            for (key, digest) in spans {
                stmt.execute(params![endpoint, &key[..], &digest[..]])
                    .map_err(|e| DeliveredError::Sqlite {
                        path: self.path.clone(),
                        source: e,
                    })?;
            }
        }
        tx.commit().map_err(|e| DeliveredError::Sqlite {
            path: self.path.clone(),
            source: e,
        })
    }

    /// Forget what the endpoint took (`--resend`): the next push sends all.
    pub fn forget(&mut self) -> Result<(), DeliveredError> {
        self.conn
            .execute("DELETE FROM spans WHERE endpoint = ?1", [self.endpoint])
            .map_err(|e| self.err(e))?;
        self.conn
            .execute("DELETE FROM sessions WHERE endpoint = ?1", [self.endpoint])
            .map_err(|e| self.err(e))?;
        Ok(())
    }
}
