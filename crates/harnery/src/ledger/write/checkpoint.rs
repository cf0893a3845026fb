//! Checkpoints and WAL syncs off the append thread. In WAL mode every
//! commit appends its pages to the `-wal` file, and a checkpoint copies them
//! into the database file (and fsyncs it). Left to SQLite, that copy runs
//! inside every few commits, on the thread that appends, and with
//! `synchronous=FULL` every commit also waits for the WAL's fsync. During a
//! drain the finalizer does both on a thread of its own instead, over its
//! own connection, while the next batch is appended: the appending
//! connection commits with `synchronous=NORMAL` (the WAL is written, not
//! yet synced), and this thread syncs the WAL and only then lets the
//! committed batches' intake files go ([`Checkpointer::sync_wal`]). A
//! commit that a power cut takes away therefore still has the intake files
//! it came from, and the next run drains them again. A passive checkpoint
//! never blocks the writer and never changes what a committed transaction
//! holds.

use std::path::{Path, PathBuf};

use rusqlite::Connection;

use super::LedgerWriter;
use crate::ledger::{DB_FILE, LedgerError};

/// Pages in the WAL after which SQLite checkpoints on its own (64 MiB).
pub(super) const AUTO_CHECKPOINT_PAGES: i64 = 4096;

/// The WAL after a checkpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WalState {
    /// Frames in the WAL.
    pub frames: u64,
    /// Every frame is copied and (after a restart checkpoint) no reader is
    /// left in the WAL: the next transaction writes it from the start.
    pub restartable: bool,
}

/// A connection that only checkpoints, and the WAL it syncs.
pub struct Checkpointer {
    conn: Connection,
    wal: PathBuf,
}

impl Checkpointer {
    /// Open the epoch's database in `dir` for checkpointing.
    pub fn open(dir: &Path) -> Result<Checkpointer, LedgerError> {
        let conn = Connection::open(dir.join(DB_FILE))?;
        conn.pragma_update(None, "synchronous", "FULL")?;
        // Only a restart checkpoint waits, and only for readers (the
        // writer is waiting for it; harnery's own readers take
        // milliseconds): one that holds on longer keeps the WAL as it is,
        // and the restart is tried again later.
        conn.busy_timeout(std::time::Duration::from_millis(250))?;
        Ok(Checkpointer {
            conn,
            wal: dir.join(format!("{DB_FILE}-wal")),
        })
    }

    /// fsync the WAL: every transaction committed before this call is
    /// durable once it returns. (An fsync covers the file, whichever
    /// descriptor asks.) No WAL file means nothing is waiting in one.
    pub(crate) fn sync_wal(&self) -> Result<(), LedgerError> {
        match std::fs::File::open(&self.wal) {
            Ok(file) => file
                .sync_data()
                .map_err(|e| LedgerError::durability(&self.wal, e)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(LedgerError::io(&self.wal, e)),
        }
    }

    /// Copy what the WAL holds into the database file. Without `restart`
    /// this never waits, and frames a reader may still need stay in the
    /// WAL. With it, it waits (up to the busy timeout) until every frame is
    /// copied and no reader is left in the WAL, so that the next
    /// transaction writes the WAL from its start again; meant for when the
    /// writer is idle, waiting for it. A failure is a durability failure:
    /// the run stops.
    pub fn run(&self, restart: bool) -> Result<WalState, LedgerError> {
        let sql = if restart {
            "PRAGMA wal_checkpoint(RESTART)"
        } else {
            "PRAGMA wal_checkpoint(PASSIVE)"
        };
        self.conn
            .query_row(sql, [], |r| {
                let (busy, frames, copied) = (
                    r.get::<_, i64>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, i64>(2)?,
                );
                Ok(WalState {
                    frames: frames.max(0) as u64,
                    restartable: busy == 0 && copied == frames,
                })
            })
            .map_err(LedgerError::CommitFailed)
    }
}

impl LedgerWriter {
    /// Hand checkpoints and WAL syncs to a [`Checkpointer`] on another
    /// thread (`true`): commits then neither checkpoint nor wait for their
    /// fsync, and the caller must not treat a commit as durable before the
    /// checkpointer's next [`Checkpointer::sync_wal`] returns. `false`
    /// restores the defaults: SQLite checkpoints inside commits, and each
    /// commit is durable when it returns (`synchronous=FULL`).
    pub(crate) fn set_background_sync(&self, on: bool) -> Result<(), LedgerError> {
        let pages = if on { 0 } else { AUTO_CHECKPOINT_PAGES };
        self.conn.pragma_update(None, "wal_autocheckpoint", pages)?;
        let sync = if on { "NORMAL" } else { "FULL" };
        self.conn.pragma_update(None, "synchronous", sync)?;
        Ok(())
    }
}
