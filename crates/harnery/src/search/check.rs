//! Every hit checked against its ledger row before it is shown: the index
//! is a file beside the ledger that anyone with the home's rights can
//! write, so a hit is shown only when the event at its row is of the
//! session and kind the index names and that event's searchable text,
//! read again from the ledger, is the text the index matched. The
//! snippet is cut from the ledger's text, and what the hit says of the
//! event (its id, type, offset, turn) is read from that row. A hit that fails is left out
//! and counted (`harnery search` says how many, and that `--reindex`
//! makes the index again).

use super::SearchError;
use super::extract::doc_of;
use super::find::Found;
use crate::contract::Event;
use crate::ledger::LedgerReader;

/// The event `found` names and its searchable text as the ledger holds
/// them, when that event is of the session and kind the index says and its
/// text is `indexed`.
pub(super) fn confirmed(
    ledger: &LedgerReader,
    found: &Found,
    indexed: &str,
) -> Result<Option<(Event, String)>, SearchError> {
    let Some(event) = ledger.rows().event_at(found.seq())? else {
        return Ok(None);
    };
    if event.session != found.session {
        return Ok(None);
    }
    let text = doc_of(&event)
        .filter(|doc| doc.kind == found.kind && doc.text == indexed)
        .map(|doc| doc.text);
    Ok(text.map(|text| (event, text)))
}
