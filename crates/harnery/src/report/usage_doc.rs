//! The document `harnery usage --json` prints (and `harnery serve`'s
//! `/api/usage` returns): the grouping, whether prices applied, the
//! groups in key order, the total, which prices were used, and the call
//! ids unrelated sessions shared.

use serde::Serialize;

use crate::report::usage::{GroupBy, UsageGroup, UsageTally};
use crate::report::usage_calls::SharedCalls;

/// The JSON document: groups in key order, then the total.
#[derive(Serialize)]
pub struct UsageDoc<'a> {
    by: GroupBy,
    priced: bool,
    groups: Vec<KeyedGroup<'a>>,
    total: &'a UsageGroup,
    /// Call ids unrelated sessions both reported (counted in each).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    shared_ids: Vec<SharedCalls>,
}

#[derive(Serialize)]
struct KeyedGroup<'a> {
    key: &'a str,
    #[serde(flatten)]
    usage: &'a UsageGroup,
}

impl<'a> UsageDoc<'a> {
    pub fn of(tally: &'a UsageTally) -> UsageDoc<'a> {
        UsageDoc {
            by: tally.by,
            priced: tally.priced(),
            groups: tally
                .groups
                .iter()
                .map(|(key, usage)| KeyedGroup { key, usage })
                .collect(),
            total: &tally.total,
            shared_ids: tally.shared_calls(),
        }
    }

    /// The document as `usage --json` prints it, `prices` naming the
    /// price table's label.
    pub fn to_json(&self, prices: &str) -> serde_json::Value {
        let mut doc = serde_json::to_value(self).expect("a usage document serializes");
        doc["prices"] = serde_json::Value::String(prices.to_string());
        doc
    }
}
