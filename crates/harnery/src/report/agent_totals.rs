//! The agents' own session totals (`usage.summary`, contract generation 5:
//! Copilot's `session.shutdown` `modelMetrics`), beside the calls' usage
//! and never added to it.
//!
//! A summary is cumulative over the session's resumes (the real client's
//! second shutdown restates the first's calls), so only the latest summary
//! of each session and model counts: [`LatestSummaries`] keeps one per
//! pair, in memory bounded by the number of sessions times models, and
//! sums them per group when asked.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::contract::{AdapterId, UsageSummary};

/// What the agents said their sessions used, summed over the latest
/// summary of each session and model in a group.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct AgentTotals {
    /// Session and model pairs summed.
    pub summaries: u64,
    pub requests: Option<u64>,
    /// Premium requests, in the agent's unit; absent when none was a number.
    pub premium_requests: Option<f64>,
    /// Credits in nano-AIU, as the agent counted them.
    pub credits_nano_aiu: Option<f64>,
    pub input: Option<u64>,
    pub output: Option<u64>,
    pub cache_read: Option<u64>,
    pub cache_write: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<u64>,
}

impl AgentTotals {
    fn add(&mut self, s: &UsageSummary) {
        self.summaries += 1;
        sum_into(&mut self.requests, s.requests);
        add_number(&mut self.premium_requests, s.premium_requests.as_ref());
        add_number(&mut self.credits_nano_aiu, s.credits_nano_aiu.as_ref());
        sum_into(&mut self.input, s.input_tokens);
        sum_into(&mut self.output, s.output_tokens);
        sum_into(&mut self.cache_read, s.cache_read_tokens);
        sum_into(&mut self.cache_write, s.cache_write_tokens);
        sum_into(&mut self.reasoning, s.reasoning_tokens);
    }
}

fn add_number(total: &mut Option<f64>, n: Option<&crate::contract::Json>) {
    if let Some(n) = n.and_then(|j| j.as_str().parse::<f64>().ok())
        && n.is_finite()
    {
        *total = Some(total.unwrap_or(0.0) + n);
    }
}

/// Add `n` to `total`, where `n` was reported: a count no record reported
/// stays absent.
pub fn sum_into(total: &mut Option<u64>, n: Option<u64>) {
    if let Some(n) = n {
        *total = Some(total.unwrap_or(0).saturating_add(n));
    }
}

/// The latest summary of each (agent, session, model), with the group it
/// falls in.
#[derive(Debug, Clone, Default)]
pub struct LatestSummaries {
    latest: BTreeMap<(AdapterId, String, String), (String, UsageSummary)>,
}

impl LatestSummaries {
    /// Note `summary` of `session`, grouped under `key`; it replaces the
    /// pair's earlier one (rows arrive in chain order).
    pub fn note(&mut self, adapter: AdapterId, session: &str, key: String, summary: &UsageSummary) {
        let pair = (adapter, session.to_string(), summary.model.clone());
        self.latest.insert(pair, (key, summary.clone()));
    }

    /// The totals per group key, and over all of them; `None` when no
    /// agent reported a summary.
    pub fn totals(&self) -> Option<(BTreeMap<String, AgentTotals>, AgentTotals)> {
        if self.latest.is_empty() {
            return None;
        }
        let mut groups: BTreeMap<String, AgentTotals> = BTreeMap::new();
        let mut all = AgentTotals::default();
        for (key, summary) in self.latest.values() {
            groups.entry(key.clone()).or_default().add(summary);
            all.add(summary);
        }
        Some((groups, all))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::{Json, RecordAt};

    fn summary(model: &str, requests: u64, premium: &str, input: u64) -> UsageSummary {
        UsageSummary {
            record: RecordAt {
                path: "events.jsonl".into(),
                offset: 0,
            },
            model: model.into(),
            requests: Some(requests),
            premium_requests: Json::parse(premium).ok(),
            input_tokens: Some(input),
            output_tokens: None,
            cache_read_tokens: None,
            cache_write_tokens: None,
            reasoning_tokens: None,
            credits_nano_aiu: None,
            raw: None,
        }
    }

    #[test]
    fn the_latest_summary_of_a_session_and_model_replaces_the_earlier() {
        let mut latest = LatestSummaries::default();
        assert_eq!(latest.totals(), None);
        let copilot = AdapterId::Copilot;
        latest.note(copilot, "s1", "k".into(), &summary("m", 2, "1", 200));
        // The resumed session's shutdown restates the first run's calls.
        latest.note(copilot, "s1", "k".into(), &summary("m", 4, "2.5", 400));
        latest.note(
            copilot,
            "s1",
            "k".into(),
            &summary("other", 1, "\"n/a\"", 10),
        );
        latest.note(copilot, "s2", "j".into(), &summary("m", 3, "0", 300));
        let (groups, all) = latest.totals().unwrap();
        assert_eq!(groups["k"].requests, Some(5));
        assert_eq!(
            groups["k"].premium_requests,
            Some(2.5),
            "a non-number is left out"
        );
        assert_eq!(groups["k"].input, Some(410));
        assert_eq!(groups["j"].summaries, 1);
        assert_eq!(all.requests, Some(8));
        assert_eq!(all.input, Some(710));
        assert_eq!(all.output, None, "no summary reported output");
    }
}
