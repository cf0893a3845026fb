//! `harnery usage`'s read: every selected epoch tallied into one
//! [`UsageTally`], oldest first, priced by the bundled, dated table unless
//! the user gives their own.
//!
//! Every epoch is read even for one session: a model call is counted where
//! it was first made, so a fork's copy of its parent's calls is inherited
//! however the rows are selected. Only where the live epoch alone is read
//! (the default selection) and the session's row says no other session's
//! rows bear on its usage document (no parent, no copied call, and no
//! session of the epoch reported a call id another reported first:
//! `ledger::write::session_usage`) are its own rows alone read, which
//! tally to the same document. With a selection other than the default,
//! an epoch that cannot be read is named on stderr and the others are
//! still tallied; a usage row that cannot be read is named on stderr too.

use std::path::Path;

use super::epochs::{Epochs, report_damaged, warn};
use super::prices::{Prices, PricesError};
use super::source::SourceError;
use super::usage::{GroupBy, UsageTally, tally_ledger, tally_ledger_within};
use crate::ledger::{LedgerError, LedgerReader, RowFilter};

/// Why usage could not be tallied.
#[derive(Debug, thiserror::Error)]
pub enum UsageError {
    #[error(transparent)]
    Prices(#[from] PricesError),
    #[error(transparent)]
    Source(#[from] SourceError),
    #[error(transparent)]
    Ledger(#[from] LedgerError),
}

/// What one usage report asks.
pub struct UsageAsk<'a> {
    /// Only this session (its id, a unique prefix, or adapter/id).
    pub session: Option<&'a str>,
    pub by: GroupBy,
    /// Only usage recorded at or after this time.
    pub since_unix_ns: Option<i64>,
    /// Only the usage of imported sessions (`Some(true)`), or only that
    /// of the others (`Some(false)`).
    pub imported: Option<bool>,
}

/// The prices a report applies: the user's file, else the bundled table.
pub fn prices(path: Option<&Path>) -> Result<Prices, PricesError> {
    match path {
        Some(path) => Prices::load(path),
        None => Ok(Prices::bundled()),
    }
}

/// The settled tally of every selected epoch, and whether a usage row
/// could not be read.
pub fn tally_epochs(
    epochs: &Epochs,
    ask: &UsageAsk,
    prices: Prices,
) -> Result<(UsageTally, bool), UsageError> {
    let mut tally = UsageTally::new(ask.by, Some(prices));
    if let Some(imported) = ask.imported {
        tally.only_imported(imported);
    }
    let session = match ask.session {
        Some(name) => Some(epochs.session("usage", name)?.session),
        None => None,
    };
    let filter = RowFilter {
        session,
        since_unix_ns: ask.since_unix_ns,
    };
    let selects_all = filter.session.is_none() && filter.since_unix_ns.is_none();
    let alone = stands_alone(epochs, &filter);
    let mut damaged = false;
    for epoch in &epochs.open {
        let read = match (selects_all, alone) {
            (true, _) => tally_ledger(&epoch.ledger, &filter, &mut tally),
            (false, true) => tally_session_rows(&epoch.ledger, &filter, &mut tally),
            (false, false) => tally_ledger_within(&epoch.ledger, &filter, &mut tally),
        };
        match read {
            Ok(()) => {}
            Err(e) if epochs.tagged => warn("usage", &epoch.label, &e.to_string()),
            Err(e) => return Err(e.into()),
        }
        let bad = std::mem::take(&mut tally.damaged);
        damaged |= report_damaged("usage", &epoch.label, &bad);
    }
    tally.settle();
    Ok((tally, damaged))
}

/// Whether the one session `filter` selects can be tallied from its own
/// rows: the live epoch read alone (the default selection; any other reads
/// every row, as it always has), whose row for it keeps its usage facts
/// and says no other session's rows bear on it. A row that cannot say is read as
/// tied: every row is then read, as before rows kept it.
fn stands_alone(epochs: &Epochs, filter: &RowFilter) -> bool {
    let (Some(session), [epoch], false) = (&filter.session, epochs.open.as_slice(), epochs.tagged)
    else {
        return false;
    };
    matches!(epoch.ledger.sessions().usage_tied(session), Ok(Some(false)))
}

/// Tally one session's rows (those before `filter`'s time only
/// remembered), reading no other session's.
fn tally_session_rows(
    ledger: &LedgerReader,
    filter: &RowFilter,
    tally: &mut UsageTally,
) -> Result<(), LedgerError> {
    let rows = RowFilter {
        session: filter.session.clone(),
        since_unix_ns: None,
    };
    let since = filter.since_unix_ns;
    ledger.events().for_each_stored_text(&rows, |row| {
        tally.add_row_if(row, |e| since.is_none_or(|t| e.time_unix_ns >= t));
        Ok::<(), LedgerError>(())
    })
}
