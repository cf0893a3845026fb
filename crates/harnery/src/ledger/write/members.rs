//! The raw archive files a writer records in `raw_members` (see
//! [`crate::ledger::integrity`]): those of batches whose files were
//! touched but check out, and once per ledger every applied batch's files.

use super::LedgerWriter;
use crate::ledger::LedgerError;
use crate::ledger::integrity::{RAW_MEMBERS_RECORDED, record_members};

impl LedgerWriter {
    /// After a writer's checks: record the archive files of `touched`
    /// batches as they are now, and the first time, every applied
    /// batch's files as found.
    pub(super) fn record_raw_members(&mut self, touched: &[String]) -> Result<(), LedgerError> {
        self.record_existing_members()?;
        for batch in touched {
            let tx = self.read.conn.transaction()?;
            record_members(&tx, &self.read.dir, batch)?;
            tx.commit().map_err(LedgerError::CommitFailed)?;
        }
        Ok(())
    }

    /// Record the archive files of every applied batch, once per ledger
    /// (those written before the files were recorded at append time).
    fn record_existing_members(&mut self) -> Result<(), LedgerError> {
        let done: bool = self.conn.query_row(
            "SELECT EXISTS (SELECT 1 FROM meta WHERE key = ?1)",
            [RAW_MEMBERS_RECORDED],
            |r| r.get(0),
        )?;
        if done {
            return Ok(());
        }
        let batches: Vec<String> = {
            let mut stmt = self.conn.prepare("SELECT batch FROM applied_batches")?;
            stmt.query_map([], |r| r.get(0))?
                .collect::<Result<_, _>>()?
        };
        let tx = self.read.conn.transaction()?;
        for batch in &batches {
            let known: bool = tx.query_row(
                "SELECT EXISTS (SELECT 1 FROM raw_members WHERE batch = ?1)",
                [batch],
                |r| r.get(0),
            )?;
            if !known {
                record_members(&tx, &self.read.dir, batch)?;
            }
        }
        tx.execute(
            "INSERT INTO meta (key, value) VALUES (?1, '1')",
            [RAW_MEMBERS_RECORDED],
        )?;
        tx.commit().map_err(LedgerError::CommitFailed)
    }
}
