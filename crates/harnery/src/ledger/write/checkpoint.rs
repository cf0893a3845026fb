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
            wal: Self::wal_of(dir),
        })
    }

    /// The WAL file of the ledger database in `dir`.
    pub(crate) fn wal_of(dir: &Path) -> PathBuf {
        dir.join(format!("{DB_FILE}-wal"))
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
    /// writer is idle, waiting for it. Whether the WAL can start over:
    /// every frame is copied and (after a restart checkpoint) no reader is
    /// left in it, so the next transaction writes it from the start. A
    /// failure is a durability failure: the run stops.
    pub fn run(&self, restart: bool) -> Result<bool, LedgerError> {
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
                Ok(busy == 0 && copied == frames)
            })
            .map_err(LedgerError::CommitFailed)
    }

    /// Copy every frame into the database file and cut the WAL to nothing,
    /// once no reader is left in it (waiting up to the busy timeout);
    /// whether it was cut. Closing the last connection then deletes an
    /// empty file instead of one whose every page the kernel must free.
    pub(crate) fn truncate(&self) -> Result<bool, LedgerError> {
        self.conn
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| {
                r.get::<_, i64>(0)
            })
            .map(|busy| busy == 0)
            .map_err(LedgerError::CommitFailed)
    }
}

thread_local! {
    /// What the WAL hook last saw on this thread: a commit runs its hook on
    /// the thread that commits, which is the one that asks.
    static WAL_FRAMES: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// The WAL hook while background sync is on: note the frames the WAL
/// holds after a commit (nothing is checkpointed here).
fn note_wal_frames(_: &rusqlite::hooks::Wal, frames: std::ffi::c_int) -> rusqlite::Result<()> {
    WAL_FRAMES.set(u64::try_from(frames).unwrap_or(0));
    Ok(())
}

impl LedgerWriter {
    /// Hand checkpoints and WAL syncs to a [`Checkpointer`] on another
    /// thread (`true`): commits then neither checkpoint nor wait for their
    /// fsync, and the caller must not treat a commit as durable before the
    /// checkpointer's next [`Checkpointer::sync_wal`] returns. `false`
    /// restores the defaults: SQLite checkpoints inside commits, and each
    /// commit is durable when it returns (`synchronous=FULL`).
    ///
    /// While it is on, [`LedgerWriter::wal_frames`] says how many frames
    /// the WAL holds after each commit (SQLite's WAL hook, which the
    /// automatic checkpoints use otherwise: setting `wal_autocheckpoint`
    /// puts theirs back).
    pub(crate) fn set_background_sync(&self, on: bool) -> Result<(), LedgerError> {
        let pages = if on { 0 } else { AUTO_CHECKPOINT_PAGES };
        self.conn.pragma_update(None, "wal_autocheckpoint", pages)?;
        if on {
            WAL_FRAMES.set(0);
            self.conn.wal_hook(Some(note_wal_frames));
        }
        let sync = if on { "NORMAL" } else { "FULL" };
        self.conn.pragma_update(None, "synchronous", sync)?;
        Ok(())
    }

    /// Frames in the WAL after this thread's last commit with background
    /// sync on: how far into the file the WAL reaches (it starts over from
    /// the beginning only after a checkpoint that let it restart).
    pub(crate) fn wal_frames(&self) -> u64 {
        WAL_FRAMES.get()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A WAL-mode database in a fresh directory with `rows` rows still in
    /// its WAL (nothing checkpointed), and the connection that wrote them.
    fn with_wal(rows: usize) -> (tempfile::TempDir, Connection) {
        let dir = tempfile::tempdir().unwrap();
        let conn = Connection::open(dir.path().join(DB_FILE)).unwrap();
        conn.pragma_update(None, "journal_mode", "WAL").unwrap();
        conn.pragma_update(None, "wal_autocheckpoint", 0).unwrap();
        conn.execute_batch("CREATE TABLE t (x TEXT)").unwrap();
        for i in 0..rows {
            conn.execute("INSERT INTO t VALUES (?1)", [format!("{i:0>4000}")])
                .unwrap();
        }
        (dir, conn)
    }

    fn wal_len(dir: &Path) -> u64 {
        std::fs::metadata(Checkpointer::wal_of(dir)).unwrap().len()
    }

    #[test]
    fn truncating_copies_every_frame_and_leaves_an_empty_wal() {
        let (dir, writer) = with_wal(200);
        assert!(wal_len(dir.path()) > 0);
        assert!(Checkpointer::open(dir.path()).unwrap().truncate().unwrap());
        assert_eq!(wal_len(dir.path()), 0);
        let rows: i64 = writer
            .query_row("SELECT count(*) FROM t", [], |r| r.get(0))
            .unwrap();
        assert_eq!(rows, 200);
    }

    #[test]
    fn a_reader_in_the_wal_keeps_it_and_truncating_only_says_so() {
        let (dir, _writer) = with_wal(50);
        let reader = Connection::open(dir.path().join(DB_FILE)).unwrap();
        reader.execute_batch("BEGIN").unwrap();
        let _: i64 = reader
            .query_row("SELECT count(*) FROM t", [], |r| r.get(0))
            .unwrap();
        let before = wal_len(dir.path());
        assert!(!Checkpointer::open(dir.path()).unwrap().truncate().unwrap());
        assert_eq!(wal_len(dir.path()), before);
        reader.execute_batch("COMMIT").unwrap();
    }
}
