//! A session's usage summed as `usage --session` counts it, kept as usage
//! reports are appended, in the same transaction (table `usage_sums` and
//! the cost columns of the session row; migration `session_usage_sums`):
//! per model, per set of token kinds reported and per copy or own call,
//! the records and their token sums; per session, the costs the agent
//! reported, summed in the events' order. Never a price: the sessions page
//! prices the sums at read with whatever table it is given
//! (`report::usage_sums`).
//!
//! Only an untied session's sums are read (`session_usage`): no parent,
//! no call another session reported. For such a session a report is a
//! copy only when the session reported its call id before (a record read
//! twice), and its cost is its own, as the tally over events judges it.

use std::collections::HashMap;

use rusqlite::{Connection, OptionalExtension, params};

use super::LedgerError;
use crate::contract::{SessionRef, UsageReported};
use crate::ledger::NONZERO_SHIFT;

const LOAD_COST: &str = "SELECT reported_cost, cost_records, cost_unreadable FROM sessions \
                         WHERE adapter = ?1 AND session_id = ?2";
const STORE_COST: &str = "UPDATE sessions SET reported_cost = ?3, cost_records = ?4, \
                          cost_unreadable = ?5 WHERE adapter = ?1 AND session_id = ?2";
const ADD: &str = "INSERT INTO usage_sums (adapter, session_id, named, model, kinds, inherited, \
                   records, input, output, cache_read, cache_write, reasoning) \
                   VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12) \
                   ON CONFLICT DO UPDATE SET records = records + excluded.records, \
                   input = min(input + excluded.input, 9223372036854775807), \
                   output = min(output + excluded.output, 9223372036854775807), \
                   cache_read = min(cache_read + excluded.cache_read, 9223372036854775807), \
                   cache_write = min(cache_write + excluded.cache_write, 9223372036854775807), \
                   reasoning = min(reasoning + excluded.reasoning, 9223372036854775807)";

/// One row's key: model (`None`: none named), kinds, copy.
type Key = (SessionRef, Option<String>, i64, bool);

/// Records and their token sums (input, output, cache read, cache write,
/// reasoning), saturating.
#[derive(Debug, Clone, Copy, Default)]
struct Sums {
    records: u64,
    tokens: [u64; 5],
}

/// The reported costs of a session: the sum, readable and unreadable.
#[derive(Debug, Clone, Copy, Default)]
struct Costs {
    sum: Option<f64>,
    with: i64,
    unreadable: i64,
}

/// A batch's additions to the sums.
#[derive(Default)]
pub(super) struct UsageSums {
    rows: HashMap<Key, Sums>,
    costs: HashMap<SessionRef, Costs>,
}

impl UsageSums {
    /// Add report `u` (normalized as the tally reads it) of `session`: a
    /// copy (`inherited`) counts apart, a cost alone only adds its cost.
    pub(super) fn add(
        &mut self,
        conn: Option<&Connection>,
        session: &SessionRef,
        u: &UsageReported,
        inherited: bool,
    ) -> Result<(), LedgerError> {
        let counts = [
            u.input_tokens,
            u.output_tokens,
            u.cache_read_tokens,
            u.cache_write_tokens,
            u.reasoning_tokens,
        ];
        let cost_only = counts.iter().all(Option::is_none) && u.cost.is_some();
        if !inherited {
            self.add_cost(conn, session, u)?;
            if cost_only {
                return Ok(());
            }
        }
        let mut kinds = 0i64;
        for (i, n) in counts.iter().enumerate() {
            if n.is_some() {
                kinds |= 1 << i;
            }
            if i < 4 && n.is_some_and(|n| n != 0) {
                kinds |= 1 << (NONZERO_SHIFT as usize + i);
            }
        }
        let key = (session.clone(), u.model.clone(), kinds, inherited);
        let sums = self.rows.entry(key).or_default();
        sums.records += 1;
        for (total, n) in sums.tokens.iter_mut().zip(counts) {
            *total = total.saturating_add(n.unwrap_or(0));
        }
        Ok(())
    }

    fn add_cost(
        &mut self,
        conn: Option<&Connection>,
        session: &SessionRef,
        u: &UsageReported,
    ) -> Result<(), LedgerError> {
        if !self.costs.contains_key(session) {
            let stored = match conn {
                None => None,
                Some(conn) => conn
                    .prepare_cached(LOAD_COST)?
                    .query_row(params![session.adapter.as_str(), session.session_id], |r| {
                        Ok(Costs {
                            sum: r.get(0)?,
                            with: r.get(1)?,
                            unreadable: r.get(2)?,
                        })
                    })
                    .optional()?,
            };
            self.costs
                .insert(session.clone(), stored.unwrap_or_default());
        }
        let costs = self
            .costs
            .get_mut(session)
            .expect("the session was just inserted");
        // As the tally reads a cost: a finite number, else unreadable.
        match u.cost.as_ref().map(|c| c.as_str().parse::<f64>()) {
            Some(Ok(cost)) if cost.is_finite() => {
                costs.sum = Some(costs.sum.unwrap_or(0.0) + cost);
                costs.with += 1;
            }
            Some(_) => costs.unreadable += 1,
            None => {}
        }
        Ok(())
    }

    /// Add the batch's sums to the stored ones (session rows written).
    pub(super) fn store(self, conn: &Connection) -> Result<(), LedgerError> {
        let mut add = conn.prepare_cached(ADD)?;
        let stored = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
        for ((session, model, kinds, inherited), s) in &self.rows {
            add.execute(params![
                session.adapter.as_str(),
                session.session_id,
                model.is_some(),
                model.as_deref().unwrap_or(""),
                kinds,
                inherited,
                stored(s.records),
                stored(s.tokens[0]),
                stored(s.tokens[1]),
                stored(s.tokens[2]),
                stored(s.tokens[3]),
                stored(s.tokens[4]),
            ])?;
        }
        let mut cost = conn.prepare_cached(STORE_COST)?;
        for (session, c) in &self.costs {
            cost.execute(params![
                session.adapter.as_str(),
                session.session_id,
                c.sum,
                c.with,
                c.unreadable
            ])?;
        }
        Ok(())
    }
}

#[cfg(test)]
impl UsageSums {
    /// What storing the sums would keep for `session` (from nothing), as
    /// the reader gives it back.
    pub(super) fn stored(&self, session: &SessionRef) -> crate::ledger::StoredUsageSums {
        let costs = self.costs.get(session).copied().unwrap_or_default();
        let mut rows: Vec<crate::ledger::UsageSumRow> = self
            .rows
            .iter()
            .filter(|((s, ..), _)| s == session)
            .map(
                |((_, model, kinds, inherited), s)| crate::ledger::UsageSumRow {
                    model: model.clone(),
                    kinds: *kinds,
                    inherited: *inherited,
                    records: s.records,
                    tokens: s.tokens,
                },
            )
            .collect();
        rows.sort_by(|a, b| {
            let key = |r: &crate::ledger::UsageSumRow| {
                (
                    r.model.is_some(),
                    r.model.clone().unwrap_or_default(),
                    r.kinds,
                    r.inherited,
                )
            };
            key(a).cmp(&key(b))
        });
        crate::ledger::StoredUsageSums {
            reported_cost: costs.sum,
            records_with_reported_cost: costs.with as u64,
            records_with_unreadable_cost: costs.unreadable as u64,
            rows,
        }
    }
}
