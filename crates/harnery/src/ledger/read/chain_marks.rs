//! Where events stand in the chain, as an OTLP span names them: a
//! session's rows' offsets, seqs and stored hashes, a range at a time
//! (one trace chunk's offsets, or a run of rows' seqs), never the rows'
//! text. What is held is one range's marks, whatever the ledger's size.

use rusqlite::params;

use super::LedgerReader;
use crate::contract::SessionRef;
use crate::ledger::LedgerError;

/// One event's place in its epoch's chain: its offset in its session, its
/// seq, and the hash the ledger stores for it (`harnery verify` checks it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChainMark {
    pub offset: u64,
    pub seq: i64,
    pub hash: [u8; 32],
}

/// Which of a session's rows: offsets `first..first + count`, or seqs
/// `low..=high`.
#[derive(Debug, Clone, Copy)]
pub enum MarkRange {
    Offsets { first: u64, count: u64 },
    Seqs { low: i64, high: i64 },
}

/// The chain marks of a session's rows.
pub struct ChainMarks<'r> {
    pub(super) r: &'r LedgerReader,
}

impl ChainMarks<'_> {
    /// Each row of `session` in `range`, in offset order, to `f`. A row
    /// whose hash is not 32 bytes is passed over (`verify` names it).
    pub fn each(
        &self,
        session: &SessionRef,
        range: MarkRange,
        mut f: impl FnMut(ChainMark),
    ) -> Result<(), LedgerError> {
        let (sql, low, high) = match range {
            MarkRange::Offsets { first, count } => (
                "SELECT offset, seq, hash FROM events WHERE adapter = ?1 AND session_id = ?2 \
                 AND offset >= ?3 AND offset < ?4 ORDER BY offset",
                i64::try_from(first).unwrap_or(i64::MAX),
                i64::try_from(first.saturating_add(count)).unwrap_or(i64::MAX),
            ),
            MarkRange::Seqs { low, high } => (
                "SELECT offset, seq, hash FROM events WHERE seq >= ?3 AND seq <= ?4 \
                 AND adapter = ?1 AND session_id = ?2 ORDER BY offset",
                low,
                high,
            ),
        };
        let mut stmt = self.r.conn.prepare_cached(sql)?;
        let mut rows = stmt.query(params![
            session.adapter.as_str(),
            session.session_id,
            low,
            high
        ])?;
        while let Some(r) = rows.next()? {
            let hash = r.get_ref(2)?.as_blob().ok().and_then(|b| b.try_into().ok());
            let (Some(hash), Ok(offset)) = (hash, u64::try_from(r.get::<_, i64>(0)?)) else {
                continue;
            };
            f(ChainMark {
                offset,
                seq: r.get(1)?,
                hash,
            });
        }
        Ok(())
    }
}
