//! A session's parts in the home's other epochs, for a restore that
//! needs what an earlier epoch holds of it (its record's first bytes, its
//! directory) or a later one.

use crate::epoch::EpochSelector;
use crate::home::Home;
use crate::ledger::LedgerReader;
use crate::report::epochs::Epochs;
use crate::report::source::SourceError;

/// Every epoch of the home but `read`'s, opened: those before it (oldest
/// first) and those after it. An epoch that cannot be opened is left out:
/// what it held is then missing, and the restore says what.
pub fn around(
    home: &Home,
    read: &LedgerReader,
) -> Result<(Vec<LedgerReader>, Vec<LedgerReader>), SourceError> {
    let epochs = Epochs::open(home, &EpochSelector::All)?;
    let this = read.genesis().genesis_id.clone();
    let (mut earlier, mut later) = (Vec::new(), Vec::new());
    let mut past = false;
    for epoch in epochs.open {
        if epoch.genesis_id == this {
            past = true;
        } else if past {
            later.push(epoch.ledger);
        } else {
            earlier.push(epoch.ledger);
        }
    }
    Ok((earlier, later))
}
