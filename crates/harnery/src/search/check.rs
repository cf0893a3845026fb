//! Every hit checked against its ledger row before it is shown: the index
//! is a file beside the ledger that anyone with the home's rights can
//! write, so a hit is shown only when the event at its row is the one the
//! index names (id, session, offset) and that event's searchable text,
//! read again from the ledger, is the text the index matched. The
//! snippet is cut from the ledger's text. A hit that fails is left out
//! and counted (`harnery search` says how many, and that `--reindex`
//! makes the index again).

use super::SearchError;
use super::extract::doc_of;
use super::find::Found;
use crate::ledger::LedgerReader;

/// The ledger's searchable text of the event `found` names, when it is
/// the event the index says and its text is `indexed`.
pub(super) fn confirmed(
    ledger: &LedgerReader,
    found: &Found,
    indexed: &str,
) -> Result<Option<String>, SearchError> {
    let Some(event) = ledger.rows().event_at(found.seq())? else {
        return Ok(None);
    };
    let same_event = event.id.as_str() == found.event_id
        && event.session == found.session
        && event.offset == found.offset;
    if !same_event {
        return Ok(None);
    }
    Ok(doc_of(&event)
        .filter(|doc| doc.kind.as_str() == found.kind && doc.text == indexed)
        .map(|doc| doc.text))
}
