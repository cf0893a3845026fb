//! What a usage record's token kinds mean, whichever build wrote it: the
//! contract's input is the uncached part for every agent. Copilot's own
//! `inputTokens` are the whole prompt (cache reads and writes included),
//! so its rows are read from the agent's own figure where they kept it.

use std::borrow::Cow;

use serde::Deserialize;

use crate::contract::{AdapterId, UsageReported, UsageSummary};

/// A report of cost alone (Claude Code's running total, what it grew by):
/// its model and cost.
pub(super) fn cost_only(u: &UsageReported) -> Option<(String, f64)> {
    if !reports_no_tokens(u) {
        return None;
    }
    let cost = u.cost.as_ref()?.as_str().parse::<f64>().ok()?;
    Some((u.model.clone()?, cost)).filter(|_| cost.is_finite())
}

/// Whether a usage report counts no token of any kind (a cost line alone).
pub(crate) fn reports_no_tokens(u: &UsageReported) -> bool {
    [
        u.input_tokens,
        u.output_tokens,
        u.cache_read_tokens,
        u.cache_write_tokens,
        u.reasoning_tokens,
    ]
    .iter()
    .all(Option::is_none)
}

/// A usage record with its token kinds as the contract means them: input
/// without the cached part. A Copilot row is read from the agent's own
/// numbers where it kept them (`raw`, generation 4 on), as the whole prompt
/// less the cache reads and the cache writes (earlier builds took out only
/// the reads, so a row written then reads right too); a generation-3 row
/// (no `raw`) still holds the whole prompt and is reduced by both. Every
/// other agent's row is already so.
pub(crate) fn normalized(adapter: AdapterId, u: &UsageReported) -> Cow<'_, UsageReported> {
    if adapter != AdapterId::Copilot {
        return Cow::Borrowed(u);
    }
    // The cache kinds are stored as the agent wrote them; only the input
    // was ever changed, so the whole prompt is the agent's own figure.
    let whole = match &u.raw {
        Some(raw) => CopilotTokens::read(raw.as_str()).and_then(|t| t.input_tokens),
        None => u.input_tokens,
    };
    let input = crate::agents::copilot::record::uncached_input(
        whole,
        u.cache_read_tokens,
        u.cache_write_tokens,
    );
    if input.is_none() || input == u.input_tokens {
        return Cow::Borrowed(u);
    }
    let mut owned = u.clone();
    owned.input_tokens = input;
    Cow::Owned(owned)
}

/// A Copilot summary with its input as in [`normalized`], the whole
/// prompt read from the agent's own `modelMetrics` entry (`raw.usage`).
pub(crate) fn normalized_summary(adapter: AdapterId, s: &UsageSummary) -> Cow<'_, UsageSummary> {
    #[derive(Deserialize)]
    struct Entry {
        usage: Option<CopilotTokens>,
    }
    let whole = match (&s.raw, adapter) {
        (Some(raw), AdapterId::Copilot) => serde_json::from_str::<Entry>(raw.as_str())
            .ok()
            .and_then(|e| e.usage?.input_tokens),
        _ => None,
    };
    let input = crate::agents::copilot::record::uncached_input(
        whole,
        s.cache_read_tokens,
        s.cache_write_tokens,
    );
    if input.is_none() || input == s.input_tokens {
        return Cow::Borrowed(s);
    }
    let mut owned = s.clone();
    owned.input_tokens = input;
    Cow::Owned(owned)
}

/// Copilot's whole prompt, as its record writes it.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "camelCase")]
struct CopilotTokens {
    input_tokens: Option<u64>,
}

impl CopilotTokens {
    fn read(raw: &str) -> Option<CopilotTokens> {
        serde_json::from_str(raw).ok()
    }
}
