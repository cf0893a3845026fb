//! Whether a ledger holds sessions `harnery import` read from the agents'
//! records (class `imported`), as the session rows keep it.

use super::sessions::Sessions;
use crate::contract::eligibility::IMPORTED_BIT;
use crate::ledger::LedgerError;

impl Sessions<'_> {
    /// Whether any session's row carries the `imported` reason (an epoch
    /// whose tables predate the kept reasons holds none: generation 10
    /// brought the reason).
    pub fn any_imported(&self) -> Result<bool, LedgerError> {
        if !self.keeps_audit_flags()? {
            return Ok(false);
        }
        Ok(self.r.conn.query_row(
            "SELECT EXISTS (SELECT 1 FROM sessions WHERE audit_flags & ?1 != 0)",
            [IMPORTED_BIT],
            |r| r.get(0),
        )?)
    }
}
