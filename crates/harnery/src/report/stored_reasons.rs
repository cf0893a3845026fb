//! A session's audit reasons as one ledger (one epoch's part of it) holds
//! them: from the session's row where the epoch keeps them, else from its
//! events, with the ranges a resume superseded left out. Both the live
//! ledger's listing ([`super::source`]) and the reads across epochs
//! ([`super::epochs`]) ask here; it reads storage and never writes.

use crate::contract::SessionRef;
use crate::ledger::{LedgerError, LedgerReader, SessionSummary};

use super::audit::{Classification, classify_events};

/// The reasons one epoch's part of a session gives: from the session's
/// row where the epoch keeps them, else from its events (an archive an
/// older build wrote). Ranges a resume superseded are left out.
pub fn part_reasons(
    ledger: &LedgerReader,
    session: &SessionRef,
) -> Result<Vec<String>, LedgerError> {
    part_reasons_with(ledger, session, false)
}

/// [`part_reasons`]; with `include_superseded`, superseded ranges count.
pub(crate) fn part_reasons_with(
    ledger: &LedgerReader,
    session: &SessionRef,
    include_superseded: bool,
) -> Result<Vec<String>, LedgerError> {
    // A session whose row counts no resume has no superseded range.
    if !include_superseded && ledger.sessions().resumes(session)? != Some(0) {
        let log = crate::restore::log::SessionLog::read_resumes(ledger, session)?;
        if !log.superseded().is_empty() {
            let mut live = ledger.events().session_events(session)?;
            live.retain(|e| !log.is_superseded(e.offset));
            return Ok(classify_events(&live).reasons);
        }
    }
    match ledger.sessions().audit_reasons(session)? {
        Some(reasons) => Ok(reasons),
        None => Ok(classify_events(&ledger.events().session_events(session)?).reasons),
    }
}

/// The audit classification of each listed session of the live ledger, in
/// the order given (for `harnery sessions`).
pub fn classify_summaries(
    ledger: &LedgerReader,
    sessions: &[SessionSummary],
) -> Result<Vec<Classification>, LedgerError> {
    sessions
        .iter()
        .map(|s| {
            let mut c = Classification::eligible();
            c.add_reasons(part_reasons(ledger, &s.session)?);
            Ok(c)
        })
        .collect()
}
