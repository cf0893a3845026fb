//! Checkpoints off the append thread. In WAL mode every commit appends its
//! pages to the `-wal` file, and a checkpoint copies them into the database
//! file (and fsyncs it). Left to SQLite, that copy runs inside every few
//! commits, on the thread that appends; during a drain the finalizer runs
//! it on a thread of its own instead, over its own connection, while the
//! next batch is appended. A passive checkpoint never blocks the writer
//! and never changes what a committed transaction holds: durability rests
//! on the WAL's fsync at commit (`synchronous=FULL`) either way.

use std::path::Path;

use rusqlite::Connection;

use super::{DB_FILE, Ledger, LedgerError};

/// Pages in the WAL after which SQLite checkpoints on its own (64 MiB).
pub(super) const AUTO_CHECKPOINT_PAGES: i64 = 4096;

/// A connection that only checkpoints.
pub struct Checkpointer {
    conn: Connection,
}

impl Checkpointer {
    /// Open the epoch's database in `dir` for checkpointing.
    pub fn open(dir: &Path) -> Result<Checkpointer, LedgerError> {
        let conn = Connection::open(dir.join(DB_FILE))?;
        conn.pragma_update(None, "synchronous", "FULL")?;
        conn.busy_timeout(std::time::Duration::from_secs(10))?;
        Ok(Checkpointer { conn })
    }

    /// Copy what the WAL holds into the database file, without waiting for
    /// the writer. A failure is a durability failure: the run stops.
    pub fn run(&self) -> Result<(), LedgerError> {
        self.conn
            .query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()))
            .map_err(LedgerError::CommitFailed)
    }
}

impl Ledger {
    /// Let SQLite checkpoint inside commits (the default), or not, while a
    /// [`Checkpointer`] does it on another thread.
    pub fn set_auto_checkpoint(&self, on: bool) -> Result<(), LedgerError> {
        let pages = if on { AUTO_CHECKPOINT_PAGES } else { 0 };
        self.conn.pragma_update(None, "wal_autocheckpoint", pages)?;
        Ok(())
    }
}
