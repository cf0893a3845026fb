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
pub(crate) fn sum_into(total: &mut Option<u64>, n: Option<u64>) {
    if let Some(n) = n {
        *total = Some(total.unwrap_or(0).saturating_add(n));
    }
}

/// One session's summaries of one model: (agent, session, model).
pub(crate) type Pair = (AdapterId, String, String);

/// The latest summary of each (agent, session, model), with the group it
/// falls in.
///
/// A session restored from another (`restore --apply`) holds a copy of its
/// parent's calls, and the client's totals restate every call its record
/// holds: the session's own totals are its latest less the calls it
/// inherited ([`LatestSummaries::inherit`]).
#[derive(Debug, Clone, Default)]
pub(crate) struct LatestSummaries {
    latest: BTreeMap<Pair, (String, UsageSummary)>,
    /// The calls each pair inherited from a parent, as a summary.
    inherited: BTreeMap<Pair, UsageSummary>,
}

impl LatestSummaries {
    /// Note `summary` of `session`, grouped under `key`; it replaces the
    /// pair's earlier one (rows arrive in chain order).
    pub(crate) fn note(
        &mut self,
        adapter: AdapterId,
        session: &str,
        key: String,
        summary: &UsageSummary,
    ) {
        let pair = (adapter, session.to_string(), summary.model.clone());
        self.latest.insert(pair, (key, summary.clone()));
    }

    /// Note an inherited call `u` of `pair` (a copy of a parent's call):
    /// left out of the pair's totals.
    pub(crate) fn inherit(&mut self, pair: Pair, u: &crate::contract::UsageReported) {
        let model = pair.2.clone();
        let s = self.inherited.entry(pair).or_insert_with(|| UsageSummary {
            record: u.record.clone(),
            model,
            requests: None,
            premium_requests: None,
            input_tokens: None,
            output_tokens: None,
            cache_read_tokens: None,
            cache_write_tokens: None,
            reasoning_tokens: None,
            credits_nano_aiu: None,
            raw: None,
        });
        sum_into(&mut s.requests, Some(1));
        sum_into(&mut s.input_tokens, u.input_tokens);
        sum_into(&mut s.output_tokens, u.output_tokens);
        sum_into(&mut s.cache_read_tokens, u.cache_read_tokens);
        sum_into(&mut s.cache_write_tokens, u.cache_write_tokens);
        sum_into(&mut s.reasoning_tokens, u.reasoning_tokens);
        let mut premium = number(&s.premium_requests).unwrap_or(0.0);
        if let Some(cost) = number(&u.cost) {
            premium += cost;
            s.premium_requests = json_number(premium);
        }
    }

    /// The totals per group key, and over all of them; `None` when no
    /// agent reported a summary.
    pub(crate) fn totals(&self) -> Option<(BTreeMap<String, AgentTotals>, AgentTotals)> {
        if self.latest.is_empty() {
            return None;
        }
        let mut groups: BTreeMap<String, AgentTotals> = BTreeMap::new();
        let mut all = AgentTotals::default();
        for (pair, (key, summary)) in &self.latest {
            let own = match self.inherited.get(pair) {
                Some(copy) => less(summary, copy),
                None => summary.clone(),
            };
            groups.entry(key.clone()).or_default().add(&own);
            all.add(&own);
        }
        Some((groups, all))
    }
}

fn number(j: &Option<crate::contract::Json>) -> Option<f64> {
    j.as_ref()
        .and_then(|j| j.as_str().parse::<f64>().ok())
        .filter(|n| n.is_finite())
}

/// `n` written as a JSON number, to ten decimal places at most.
fn json_number(n: f64) -> Option<crate::contract::Json> {
    let text = format!("{n:.10}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    crate::contract::Json::parse(text).ok()
}

/// `s` less `copy`, kind by kind (never below zero).
fn less(s: &UsageSummary, copy: &UsageSummary) -> UsageSummary {
    let n = |a: Option<u64>, b: Option<u64>| a.map(|a| a.saturating_sub(b.unwrap_or(0)));
    let f = |a: &Option<crate::contract::Json>, b: &Option<crate::contract::Json>| match number(a) {
        Some(a) => json_number((a - number(b).unwrap_or(0.0)).max(0.0)),
        None => a.clone(),
    };
    UsageSummary {
        requests: n(s.requests, copy.requests),
        premium_requests: f(&s.premium_requests, &copy.premium_requests),
        input_tokens: n(s.input_tokens, copy.input_tokens),
        output_tokens: n(s.output_tokens, copy.output_tokens),
        cache_read_tokens: n(s.cache_read_tokens, copy.cache_read_tokens),
        cache_write_tokens: n(s.cache_write_tokens, copy.cache_write_tokens),
        reasoning_tokens: n(s.reasoning_tokens, copy.reasoning_tokens),
        credits_nano_aiu: s.credits_nano_aiu.clone(),
        ..s.clone()
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

    #[test]
    fn a_restored_session_counts_its_totals_less_the_calls_it_inherited() {
        let mut latest = LatestSummaries::default();
        let copilot = AdapterId::Copilot;
        // Its record holds two of its parent's calls, then one of its own;
        // the client's totals restate all three.
        let call = |input: u64, cost: &str| crate::contract::UsageReported {
            record: RecordAt {
                path: "events.jsonl".into(),
                offset: 0,
            },
            message_id: None,
            model: Some("m".into()),
            input_tokens: Some(input),
            output_tokens: None,
            cache_read_tokens: None,
            cache_write_tokens: None,
            cost: Json::parse(cost).ok(),
            duration_ms: None,
            time_to_first_token_ms: None,
            reasoning_tokens: None,
            raw: None,
            copied_from_session: None,
        };
        let pair = (copilot, "c".to_string(), "m".to_string());
        latest.inherit(pair.clone(), &call(100, "1"));
        latest.inherit(pair, &call(101, "0.5"));
        latest.note(copilot, "c", "c".into(), &summary("m", 3, "2", 303));
        latest.note(copilot, "p", "p".into(), &summary("m", 2, "1.5", 201));
        let (groups, all) = latest.totals().unwrap();
        assert_eq!(groups["c"].requests, Some(1));
        assert_eq!(groups["c"].input, Some(102));
        assert_eq!(groups["c"].premium_requests, Some(0.5));
        assert_eq!(all.requests, Some(3), "the parent's 2, the child's own 1");
        assert_eq!(all.input, Some(303));
    }
}
