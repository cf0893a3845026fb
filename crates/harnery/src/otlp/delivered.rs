//! What each endpoint has taken: `HARNERY_HOME/otlp/delivered.sqlite`,
//! beside the ledger and never part of its chain. One row per span and
//! endpoint: the span's trace and span id, and a digest of the span as it
//! was sent. A push sends a span whose row is missing or whose digest
//! differs (a span that was open and has closed, a turn or root that
//! grew), and records spans only after the receiver took them, so a push
//! killed at any moment resends at most what was in flight; the ids being
//! derived from the ledger, a resend names the same spans again.

use std::path::PathBuf;

use rusqlite::{Connection, OptionalExtension, params};

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
";

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

    /// Whether the endpoint has taken this span as it is now.
    pub fn has(&self, key: &SpanKey, digest: &Digest) -> Result<bool, DeliveredError> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT digest FROM spans WHERE endpoint = ?1 AND span = ?2")
            .map_err(|e| self.err(e))?;
        let found: Option<Vec<u8>> = stmt
            .query_row(params![self.endpoint, &key[..]], |r| r.get(0))
            .optional()
            .map_err(|e| self.err(e))?;
        Ok(found.as_deref() == Some(&digest[..]))
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
        Ok(())
    }
}
