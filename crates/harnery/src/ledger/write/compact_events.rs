//! `harnery archive compact-events`: a ledger an older build wrote, its
//! event texts kept as plain text, converted to compact storage
//! (`ledger::eventz`), then its file shrunk. Never done silently: only this
//! command converts an existing ledger; a new epoch is compact from its
//! first row.
//!
//! Two steps, each one SQLite transaction, so that a kill at any moment
//! leaves a ledger that reads (and verifies) as before, and a rerun
//! finishes the job:
//!
//! 1. every row moved into `event_store` compressed and `events` made a view
//!    over it (`eventz::make_compact`): before the commit the ledger is the
//!    old one, after it the converted one;
//! 2. `VACUUM`, which gives back to the file system the pages the old
//!    table held (SQLite's own atomic rewrite), run whenever the file has
//!    free pages.

use rusqlite::TransactionBehavior;

use super::LedgerWriter;
use crate::ledger::{LedgerError, eventz};

/// What a conversion did.
#[derive(Debug, Default, Clone, serde::Serialize)]
pub struct EventsCompacted {
    /// Rows moved to compact storage by this run (0: already compact).
    pub rows: u64,
    /// The database file's size before and after (pages × page size).
    pub bytes_before: u64,
    pub bytes_after: u64,
}

impl LedgerWriter {
    /// Convert this (live, write-opened) ledger to compact event storage
    /// and shrink its file.
    pub(crate) fn compact_events(&mut self) -> Result<EventsCompacted, LedgerError> {
        let bytes_before = self.file_bytes()?;
        let tx = self
            .conn_mut()
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let rows = eventz::make_compact(&tx)?;
        tx.commit().map_err(LedgerError::CommitFailed)?;
        self.encoder = Some(eventz::Encoder::load(&self.read.conn)?);
        let free: i64 = self
            .read
            .conn
            .query_row("PRAGMA freelist_count", [], |r| r.get(0))?;
        if free > 0 {
            self.read.conn.execute_batch("VACUUM")?;
            // Fold the rewrite into the file now, so that its size is the
            // one reported.
            self.read
                .conn
                .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
        }
        Ok(EventsCompacted {
            rows,
            bytes_before,
            bytes_after: self.file_bytes()?,
        })
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
