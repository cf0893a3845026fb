//! `harnery archive compact-events`: a ledger an older build wrote, its
//! event texts kept as plain text, converted to compact storage
//! (`ledger::eventz`), its events packed in blocks (`ledger::eventz_pack`),
//! then its file shrunk. Never done silently: only this command converts
//! an existing ledger; a new epoch is compact and packable from its first
//! row, and the compaction pass after each `finalize` packs what the run
//! wrote ([`LedgerWriter::pack_events_within`]).
//!
//! Steps, each one SQLite transaction or more, so that a kill at any moment
//! leaves a ledger that reads (and verifies) as before, and a rerun
//! finishes the job:
//!
//! 1. every row moved into `event_store` compressed and `events` made a view
//!    over it (`eventz::make_compact`), and every raw signal row into
//!    `raw_signal_store` with `raw_signals` made a view over it
//!    (`signalz::make_compact`), in one transaction: before the commit the
//!    ledger is the old one, after it the converted one;
//! 2. the blocks' table made, if the ledger has none (a ledger made compact
//!    by the build before blocks), and every row packed, a transaction a
//!    step;
//! 3. `VACUUM`, which gives back to the file system the pages the old
//!    table and bodies held (SQLite's own atomic rewrite), run whenever
//!    the file has free pages or the packing freed bytes.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use rusqlite::TransactionBehavior;

use super::LedgerWriter;
use crate::ledger::LedgerError;
use crate::ledger::eventz::{self, pack as eventz_pack};
use crate::ledger::signalz;

/// What a conversion did.
#[derive(Debug, Default, Clone, serde::Serialize)]
pub struct EventsCompacted {
    /// Rows moved to compact storage by this run (0: already compact).
    pub rows: u64,
    /// Raw signal rows moved to compact storage (`ledger::signalz`) by
    /// this run (0: already compact).
    pub signal_rows: u64,
    /// Rows packed in blocks by this run.
    pub packed: u64,
    /// The database file's size before and after (pages × page size).
    pub bytes_before: u64,
    pub bytes_after: u64,
}

/// What the compaction pass after a run did to the events.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct EventsPacked {
    /// The file was rewritten (`VACUUM`) to give the bytes back.
    pub vacuumed: bool,
    /// Stopped (a finalizer waits) with rows, or the rewrite, left.
    pub unfinished: bool,
}

impl LedgerWriter {
    /// Convert this (live, write-opened) ledger to compact event storage,
    /// pack its events and shrink its file.
    pub(crate) fn compact_events(&mut self) -> Result<EventsCompacted, LedgerError> {
        let bytes_before = self.file_bytes()?;
        let tx = self
            .conn_mut()
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let rows = eventz::make_compact(&tx)?;
        let signal_rows = signalz::make_compact(&tx)?;
        if !eventz_pack::has_blocks(&tx)? {
            tx.execute_batch(eventz_pack::SCHEMA)?;
        }
        tx.commit().map_err(LedgerError::CommitFailed)?;
        self.encoder = Some(eventz::Encoder::load(&self.read.conn)?);
        let packed = eventz_pack::pack(self.conn_mut(), &|| false)?;
        let free: i64 = self
            .read
            .conn
            .query_row("PRAGMA freelist_count", [], |r| r.get(0))?;
        if free > 0 || packed.freed > 0 {
            self.vacuum(&|| false)?;
        }
        Ok(EventsCompacted {
            rows,
            signal_rows,
            packed: packed.events,
            bytes_before,
            bytes_after: self.file_bytes()?,
        })
    }

    /// The compaction pass's part for the events: pack the rows written
    /// since the last pass (a ledger with blocks only), then rewrite the
    /// file once packing (this pass's and earlier ones') has freed an
    /// eighth of it, stopping between steps, or interrupting the rewrite,
    /// once `stop` says so.
    pub(crate) fn pack_events_within(
        &mut self,
        stop: &(dyn Fn() -> bool + Sync),
    ) -> Result<EventsPacked, LedgerError> {
        let packed = eventz_pack::pack(self.conn_mut(), stop)?;
        let mut done = EventsPacked {
            vacuumed: false,
            unfinished: packed.unfinished,
        };
        if !packed.unfinished && packed.freed > 0 && packed.freed as u64 >= self.file_bytes()? / 8 {
            done.vacuumed = self.vacuum(stop)?;
            done.unfinished |= !done.vacuumed;
        }
        Ok(done)
    }

    /// `VACUUM`, then the rewrite folded into the file; false when `stop`
    /// said so before it finished (SQLite rolls the rewrite back whole).
    fn vacuum(&mut self, stop: &(dyn Fn() -> bool + Sync)) -> Result<bool, LedgerError> {
        let conn = &self.read.conn;
        let interrupt = conn.get_interrupt_handle();
        let finished = AtomicBool::new(false);
        let watch = Arc::new(Watch::default());
        pause_mid_vacuum(conn, &self.read.dir, &watch)?;
        let done = std::thread::scope(|s| {
            s.spawn(|| {
                while !finished.load(Ordering::Relaxed) {
                    let stopping = stop();
                    if stopping {
                        interrupt.interrupt();
                        watch.interrupted.store(true, Ordering::SeqCst);
                    }
                    watch.looks.fetch_add(1, Ordering::SeqCst);
                    if stopping {
                        return;
                    }
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
            });
            let done = conn.execute_batch("VACUUM");
            finished.store(true, Ordering::Relaxed);
            done
        });
        conn.progress_handler(0, None::<fn() -> bool>)?;
        match done {
            Ok(()) => {}
            Err(rusqlite::Error::SqliteFailure(e, _))
                if e.code == rusqlite::ErrorCode::OperationInterrupted =>
            {
                return Ok(false);
            }
            Err(e) => return Err(e.into()),
        }
        // Fold the rewrite into the file now, so that its size is the one
        // reported (a reader holding the WAL only delays that).
        conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
        eventz_pack::rewritten(conn)?;
        Ok(true)
    }

    fn file_bytes(&self) -> Result<u64, LedgerError> {
        let (pages, size): (i64, i64) = self.read.conn.query_row(
            "SELECT page_count, page_size FROM pragma_page_count(), pragma_page_size()",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        Ok((pages * size) as u64)
    }
}

/// What the watcher of a `VACUUM`'s `stop` did: how many times it looked,
/// and whether it interrupted the rewrite.
#[derive(Default)]
struct Watch {
    looks: AtomicU64,
    interrupted: AtomicBool,
}

/// With the failpoint `vacuum-running` armed (tests only): the `VACUUM`
/// pauses once mid-rewrite (`failpoint::pause`, its marker in `dir`), and
/// once the test lets it go on, waits until the watcher has looked again
/// or interrupted it, so that a finalizer the test started meanwhile is
/// seen while the rewrite still runs.
fn pause_mid_vacuum(
    conn: &rusqlite::Connection,
    dir: &Path,
    watch: &Arc<Watch>,
) -> Result<(), LedgerError> {
    if !crate::failpoint::armed("vacuum-running") {
        return Ok(());
    }
    let (dir, watch) = (dir.to_path_buf(), watch.clone());
    let mut paused = false;
    conn.progress_handler(
        1000,
        Some(move || {
            if !paused {
                paused = true;
                crate::failpoint::pause("vacuum-running", &dir);
                // A look that began before the pause ended may have missed
                // the finalizer: the second one after it did not.
                let seen = watch.looks.load(Ordering::SeqCst);
                while watch.looks.load(Ordering::SeqCst) < seen + 2
                    && !watch.interrupted.load(Ordering::SeqCst)
                {
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }
            }
            false
        }),
    )?;
    Ok(())
}
