//! A session's usage from the sums its rows keep
//! (`ledger::write::usage_sums`) rather than from its events: the group
//! `harnery usage --session` gives an untied session, priced at read from
//! the token sums by model exactly as the tally prices (the same float
//! bytes), so the sessions page costs a few rows per session.

use super::usage::{Prices, Tokens, UNKNOWN_MODEL, UsageGroup};
use crate::contract::SessionRef;
use crate::ledger::{LedgerError, LedgerReader, NONZERO_SHIFT, StoredUsageSums, UsageSumRow};

/// Sessions' usage from their kept sums, for many sessions of one epoch
/// (whether the epoch keeps sums, and whether any session is tied by a
/// call, asked once).
pub(crate) struct KeptUsage<'l> {
    ledger: &'l LedgerReader,
    /// Whether an untied session's sums stand for its events.
    usable: bool,
}

impl<'l> KeptUsage<'l> {
    pub(crate) fn of(ledger: &'l LedgerReader) -> Result<KeptUsage<'l>, LedgerError> {
        let sessions = ledger.sessions();
        let usable = sessions.keeps_usage_sums()? && !sessions.any_tied_by_call()?;
        Ok(KeptUsage { ledger, usable })
    }

    /// `session`'s usage from its kept sums, priced with `prices`; `None`
    /// when they cannot stand for its events (its usage is tied to another
    /// session's, or the epoch does not keep them).
    pub(crate) fn of_session(
        &self,
        session: &SessionRef,
        prices: Option<&Prices>,
    ) -> Result<Option<UsageGroup>, LedgerError> {
        if !self.usable {
            return Ok(None);
        }
        Ok(self
            .ledger
            .sessions()
            .untied_usage_sums(session)?
            .map(|sums| group_of(&sums, prices)))
    }
}

/// The group the kept sums give.
pub(crate) fn group_of(sums: &StoredUsageSums, prices: Option<&Prices>) -> UsageGroup {
    let mut g = UsageGroup {
        reported_cost: sums.reported_cost,
        records_with_reported_cost: sums.records_with_reported_cost,
        records_with_unreadable_cost: sums.records_with_unreadable_cost,
        ..UsageGroup::default()
    };
    for row in &sums.rows {
        add_tokens(&mut g.tokens, row, !row.inherited);
        if row.inherited {
            g.inherited_records += row.records;
            add_tokens(
                g.inherited_tokens.get_or_insert_with(Tokens::default),
                row,
                true,
            );
            continue;
        }
        g.records += row.records;
        if let Some(prices) = prices {
            price(&mut g, row, prices);
        }
    }
    if let Some(prices) = prices
        && !g.priced_tokens.is_empty()
    {
        g.priced_cost = Some(prices.sums_millionths(&g.priced_tokens) / 1e6);
    }
    g
}

/// Add a row's token kinds: each reported kind its sum, or zero for
/// copies (`counted` false), as the tally shows them.
fn add_tokens(t: &mut Tokens, row: &UsageSumRow, counted: bool) {
    let kinds = [
        &mut t.input,
        &mut t.output,
        &mut t.cache_read,
        &mut t.cache_write,
        &mut t.reasoning,
    ];
    for (i, (total, n)) in kinds.into_iter().zip(row.tokens).enumerate() {
        if row.kinds & (1 << i) != 0 {
            let n = if counted { n } else { 0 };
            *total = Some(total.unwrap_or(0).saturating_add(n));
        }
    }
}

/// Price a row of own records: all of them when its model has a price
/// for every kind they report not zero, else none.
fn price(g: &mut UsageGroup, row: &UsageSumRow, prices: &Prices) {
    let unpriced = g.unpriced_records.get_or_insert(0);
    let model = row
        .model
        .as_deref()
        .and_then(|m| Some((m, prices.models.get(m)?)));
    let priced = model.filter(|(_, p)| {
        let have = [p.input, p.output, p.cache_read, p.cache_write];
        have.iter().enumerate().all(|(i, price)| {
            row.kinds & (1 << (NONZERO_SHIFT as usize + i)) == 0 || price.is_some()
        })
    });
    match priced {
        Some((model, _)) => {
            let sums = g.priced_tokens.entry(model.to_string()).or_default();
            for (total, n) in sums.iter_mut().zip(row.tokens) {
                *total = total.saturating_add(n);
            }
        }
        None => {
            *unpriced += row.records;
            let model = row.model.as_deref().unwrap_or(UNKNOWN_MODEL);
            g.unpriced_models.insert(model.to_string());
        }
    }
}
