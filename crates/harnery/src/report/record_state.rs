//! Where a session's own record (the agent's transcript or events file)
//! stands, as the reports show it: the state finalize last left in the
//! session's record cursor. `removed` means the agent deleted its record
//! after harnery read it: the session's history now lives only in harnery.

use crate::contract::SessionRef;
use crate::ledger::{LedgerError, LedgerReader};
use crate::session::RecordCursor;

/// The state word of a record the agent deleted after harnery read it.
pub(crate) const REMOVED: &str = "removed";

/// The record problem last reported for `session` in `ledger` (`removed`,
/// `missing`, `refused`, ...), or `None` when its record reads cleanly or
/// was never followed.
pub(crate) fn record_problem(
    ledger: &LedgerReader,
    session: &SessionRef,
) -> Result<Option<String>, LedgerError> {
    let text = ledger.bookkeeping().producer_state(session)?;
    Ok(text
        .as_deref()
        .and_then(RecordCursor::of_state)
        .and_then(|c| c.problem))
}
