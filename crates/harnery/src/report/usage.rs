//! Model usage as the agents reported it (`usage.reported`, contract
//! generation 2): token counts by kind, and cost only where the agent wrote
//! one. Nothing here estimates. A count no record reported stays absent
//! rather than becoming zero, and the agent's own cost is summed apart from
//! any cost computed from a prices file the user supplies ([`Prices`]),
//! which is always labelled `priced_cost` and never mixed in.
//!
//! [`UsageTally`] aggregates as rows arrive, so a ledger of any size is read
//! in memory bounded by the number of groups; [`tally_ledger`] is the one
//! part that reads storage, one stored row at a time. [`turn_usage`] sums a
//! session's usage per turn for `show`, `receipts`, `export` and `view`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::agent_totals::{AgentTotals, LatestSummaries, sum_into};
use crate::contract::{AdapterId, Event, Payload, UsageReported, UsageSummary};
use crate::ledger::{DamagedRow, LedgerError, LedgerReader, RowFilter, StoredText};

/// The group name of usage whose record named no model.
pub const UNKNOWN_MODEL: &str = "(unknown)";

/// How `harnery usage` groups its rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GroupBy {
    Session,
    Day,
    Model,
}

impl std::str::FromStr for GroupBy {
    type Err = String;

    fn from_str(text: &str) -> Result<GroupBy, String> {
        match text {
            "session" => Ok(GroupBy::Session),
            "day" => Ok(GroupBy::Day),
            "model" => Ok(GroupBy::Model),
            other => Err(format!(
                "{other:?} is not a grouping: use session, day or model"
            )),
        }
    }
}

/// A user's prices: per model, a price per million tokens of each kind.
/// A kind left out has no price, and usage of that kind cannot be priced.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Prices {
    /// Where the prices come from, and as of when (the bundled table names
    /// both; a user's file may).
    #[serde(default)]
    pub source: Option<String>,
    #[serde(default)]
    pub date: Option<String>,
    #[serde(default)]
    pub models: BTreeMap<String, ModelPrices>,
}

/// The price table shipped with harnery (`prices/litellm.toml`, from
/// LiteLLM's model price list, MIT), used when no `--prices` is given.
const BUNDLED_PRICES: &str = include_str!("../../prices/litellm.toml");

/// One model's prices per million tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelPrices {
    pub input: Option<f64>,
    pub output: Option<f64>,
    pub cache_read: Option<f64>,
    pub cache_write: Option<f64>,
}

/// Why a prices file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum PricesError {
    #[error("cannot read prices file {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("prices file {path} is not valid: {detail}")]
    Malformed { path: PathBuf, detail: String },
}

impl Prices {
    /// The bundled price table, dated.
    pub fn bundled() -> Prices {
        Prices::parse(BUNDLED_PRICES).expect("the bundled price table parses")
    }

    /// `source, date` as a note, e.g. `LiteLLM 1.110.2 model price list of 2026-12-02`.
    pub fn label(&self) -> String {
        match (&self.source, &self.date) {
            (Some(s), Some(d)) => format!("{s} of {d}"),
            (Some(s), None) => s.clone(),
            (None, Some(d)) => format!("prices of {d}"),
            (None, None) => "the prices file given".into(),
        }
    }

    /// Read and check the TOML prices file at `path`.
    pub fn load(path: &Path) -> Result<Prices, PricesError> {
        let text = std::fs::read_to_string(path).map_err(|source| PricesError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Prices::parse(&text).map_err(|detail| PricesError::Malformed {
            path: path.to_path_buf(),
            detail,
        })
    }

    /// Parse prices text; the error names the line and column.
    pub fn parse(text: &str) -> Result<Prices, String> {
        let prices: Prices = toml::from_str(text).map_err(|e| locate(text, &e))?;
        for (model, p) in &prices.models {
            let all = [p.input, p.output, p.cache_read, p.cache_write];
            if all.iter().flatten().any(|v| !v.is_finite() || *v < 0.0) {
                return Err(format!("model {model:?}: a price must be a number >= 0"));
            }
        }
        Ok(prices)
    }

    /// What one record costs at these prices, in millionths of the
    /// prices' unit (summed so, and divided once, to keep decimal prices
    /// from drifting); `None` when its model, or a kind of token it
    /// reports, has no price.
    fn price_millionths(&self, u: &UsageReported) -> Option<f64> {
        let p = self.models.get(u.model.as_deref()?)?;
        let kinds = [
            (u.input_tokens, p.input),
            (u.output_tokens, p.output),
            (u.cache_read_tokens, p.cache_read),
            (u.cache_write_tokens, p.cache_write),
        ];
        let mut total = 0.0;
        for (count, price) in kinds {
            match (count, price) {
                (None | Some(0), _) => {}
                (Some(n), Some(per_million)) => total += n as f64 * per_million,
                (Some(_), None) => return None,
            }
        }
        Some(total)
    }
}

/// A TOML error as "line L, column C: message".
fn locate(text: &str, e: &toml::de::Error) -> String {
    let message = e.message();
    let Some(span) = e.span() else {
        return message.to_string();
    };
    let Some(before) = text.get(..span.start) else {
        return message.to_string();
    };
    let line = before.matches('\n').count() + 1;
    let column = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
    format!("line {line}, column {column}: {message}")
}

/// Token counts by kind: each the sum of what records reported, absent
/// when no record reported that kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Tokens {
    pub input: Option<u64>,
    pub output: Option<u64>,
    pub cache_read: Option<u64>,
    pub cache_write: Option<u64>,
    /// Reasoning tokens, where the agent reports them apart from output.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<u64>,
}

impl Tokens {
    fn add(&mut self, u: &UsageReported) {
        sum_into(&mut self.input, u.input_tokens);
        sum_into(&mut self.output, u.output_tokens);
        sum_into(&mut self.cache_read, u.cache_read_tokens);
        sum_into(&mut self.cache_write, u.cache_write_tokens);
        sum_into(&mut self.reasoning, u.reasoning_tokens);
    }

    /// Input plus output, where either was reported: the one number
    /// `show`, `receipts`, `export` and `view` give a turn.
    pub fn in_out(&self) -> Option<u64> {
        match (self.input, self.output) {
            (None, None) => None,
            (i, o) => Some(i.unwrap_or(0).saturating_add(o.unwrap_or(0))),
        }
    }
}

/// One group's usage.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct UsageGroup {
    /// `usage.reported` records in the group.
    pub records: u64,
    pub tokens: Tokens,
    /// The sum of the costs the agent reported, in the agent's unit;
    /// absent when no record carried one.
    #[serde(serialize_with = "rounded")]
    pub reported_cost: Option<f64>,
    /// Records that carried a cost the agent reported as a number.
    pub records_with_reported_cost: u64,
    /// Records whose cost was not a number (left out of the sum).
    #[serde(skip_serializing_if = "is_zero")]
    pub records_with_unreadable_cost: u64,
    /// With `--prices` only: the cost of the priced records at the user's
    /// prices. Never added to `reported_cost`.
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "rounded")]
    pub priced_cost: Option<f64>,
    #[serde(skip)]
    priced_millionths: f64,
    /// With `--prices` only: records the prices could not price.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unpriced_records: Option<u64>,
    /// With `--prices` only: the models of those records.
    #[serde(skip_serializing_if = "BTreeSet::is_empty")]
    pub unpriced_models: BTreeSet<String>,
    /// Records of a model call already counted (same agent and call id)
    /// in an earlier session or epoch: a `--fork-session` copy of its
    /// parent's messages, or a record read again. Shown, never counted.
    #[serde(skip_serializing_if = "is_zero")]
    pub inherited_records: u64,
    /// The agents' own totals for the group (`usage.summary`), apart from
    /// the calls' counts above; absent when no agent reported one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_totals: Option<AgentTotals>,
}

/// A sum of costs to ten decimal places: binary floats add decimal
/// figures with a tail (0.1 + 0.2), which is noise, not a cost.
fn rounded<S: serde::Serializer>(cost: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
    match cost {
        Some(c) => s.serialize_f64((c * 1e10).round() / 1e10),
        None => s.serialize_none(),
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl UsageGroup {
    fn add(&mut self, u: &UsageReported, prices: Option<&Prices>) {
        // A cost report without tokens (Claude Code's running cost, what it
        // grew by) is no model call of its own.
        let tokens = [
            u.input_tokens,
            u.output_tokens,
            u.cache_read_tokens,
            u.cache_write_tokens,
            u.reasoning_tokens,
        ];
        if tokens.iter().all(Option::is_none) && u.cost.is_some() {
            self.add_reported_cost(u);
            return;
        }
        self.records += 1;
        self.tokens.add(u);
        self.add_reported_cost(u);
        if let Some(prices) = prices {
            self.add_priced(u, prices);
        }
    }

    fn add_reported_cost(&mut self, u: &UsageReported) {
        match u.cost.as_ref().map(|c| c.as_str().parse::<f64>()) {
            Some(Ok(cost)) if cost.is_finite() => {
                self.reported_cost = Some(self.reported_cost.unwrap_or(0.0) + cost);
                self.records_with_reported_cost += 1;
            }
            Some(_) => self.records_with_unreadable_cost += 1,
            None => {}
        }
    }

    fn add_priced(&mut self, u: &UsageReported, prices: &Prices) {
        let unpriced = self.unpriced_records.get_or_insert(0);
        match prices.price_millionths(u) {
            Some(cost) => {
                self.priced_millionths += cost;
                self.priced_cost = Some(self.priced_millionths / 1e6);
            }
            None => {
                *unpriced += 1;
                let model = u.model.as_deref().unwrap_or(UNKNOWN_MODEL);
                self.unpriced_models.insert(model.to_string());
            }
        }
    }
}

/// Usage aggregated as events arrive.
#[derive(Debug, Clone, Serialize)]
pub struct UsageTally {
    pub by: GroupBy,
    /// Groups by key: `adapter/session`, a UTC day `YYYY-MM-DD`, or a model.
    pub groups: BTreeMap<String, UsageGroup>,
    pub total: UsageGroup,
    /// Rows that named `usage.reported` but could not be read.
    #[serde(skip)]
    pub damaged: Vec<DamagedRow>,
    #[serde(skip)]
    prices: Option<Prices>,
    /// The model calls counted so far (agent, call id): each is counted
    /// once across every session and epoch read.
    #[serde(skip)]
    counted: std::collections::HashSet<(crate::contract::AdapterId, String)>,
    /// The agents' own totals, latest per session and model, until
    /// [`UsageTally::settle`] adds them to the groups.
    #[serde(skip)]
    summaries: LatestSummaries,
}

/// The prefilter: a row whose text lacks this (the start of
/// `"usage.reported"` and `"usage.summary"`) is not usage, unparsed.
const USAGE_TYPE: &[u8] = b"\"usage.";

impl UsageTally {
    pub fn new(by: GroupBy, prices: Option<Prices>) -> UsageTally {
        UsageTally {
            by,
            groups: BTreeMap::new(),
            total: UsageGroup::default(),
            damaged: Vec::new(),
            prices,
            counted: std::collections::HashSet::new(),
            summaries: LatestSummaries::default(),
        }
    }

    /// Count `event` if it is a usage report (once per model call: a call
    /// seen before is counted as inherited in its group).
    pub fn add(&mut self, event: &Event) {
        let u = match &event.payload {
            Payload::UsageReported(u) => u,
            Payload::UsageSummary(s) => {
                let s = normalized_summary(event.session.adapter, s);
                let s = s.as_ref();
                let key = self.key_of(event, Some(&s.model));
                let session = &event.session;
                self.summaries
                    .note(session.adapter, &session.session_id, key, s);
                return;
            }
            _ => return,
        };
        let u = normalized(event.session.adapter, u);
        let u = u.as_ref();
        let key = self.key_of(event, u.model.as_deref());
        let copied = u.copied_from_session.is_some();
        if let Some(id) = &u.message_id
            && (!self.counted.insert((event.session.adapter, id.clone())) || copied)
        {
            self.groups.entry(key).or_default().inherited_records += 1;
            self.total.inherited_records += 1;
            return;
        }
        let prices = self.prices.as_ref();
        self.groups.entry(key).or_default().add(u, prices);
        self.total.add(u, prices);
    }

    /// Count one stored row: parsed only when it may be usage; a usage
    /// row that does not parse is kept in `damaged`.
    pub fn add_row(&mut self, row: StoredText<'_>) {
        self.add_row_if(row, |_| true);
    }

    /// [`UsageTally::add_row`] for a row `selected` keeps; a usage row it
    /// leaves out is only remembered, so that a later copy of the same
    /// model call (a fork of that session) counts as inherited.
    pub fn add_row_if(&mut self, row: StoredText<'_>, selected: impl Fn(&Event) -> bool) {
        if memchr::memmem::find(row.json, USAGE_TYPE).is_none() {
            return;
        }
        match serde_json::from_slice::<Event>(row.json) {
            Ok(event) if selected(&event) => self.add(&event),
            Ok(event) => self.remember(&event),
            Err(e) => self.damaged.push(DamagedRow {
                seq: row.seq,
                event_id: row.id.to_string(),
                detail: format!("the row's text does not parse as an event: {e}"),
            }),
        }
    }

    /// Note `event`'s model call as counted elsewhere, without counting it.
    fn remember(&mut self, event: &Event) {
        if let Payload::UsageReported(u) = &event.payload
            && let Some(id) = &u.message_id
        {
            self.counted.insert((event.session.adapter, id.clone()));
        }
    }

    fn key_of(&self, event: &Event, model: Option<&str>) -> String {
        match self.by {
            GroupBy::Session => format!("{}/{}", event.session.adapter, event.session.session_id),
            GroupBy::Day => day_of(event.time_unix_ns),
            GroupBy::Model => model.unwrap_or(UNKNOWN_MODEL).to_string(),
        }
    }

    /// Put the agents' own totals into their groups and the total; call
    /// once, after the last row.
    pub fn settle(&mut self) {
        let Some((groups, all)) = self.summaries.totals() else {
            return;
        };
        for (key, totals) in groups {
            self.groups.entry(key).or_default().agent_totals = Some(totals);
        }
        self.total.agent_totals = Some(all);
    }

    /// Whether prices were given (and so `priced_cost` is reported).
    pub fn priced(&self) -> bool {
        self.prices.is_some()
    }
}

/// The UTC day of a time, `YYYY-MM-DD`.
fn day_of(unix_ns: i64) -> String {
    let stamp = crate::ledger::format_time(unix_ns);
    stamp.get(..10).unwrap_or(&stamp).to_string()
}

/// Stream the rows `filter` keeps from `ledger` into `tally`.
pub fn tally_ledger(
    ledger: &LedgerReader,
    filter: &RowFilter,
    tally: &mut UsageTally,
) -> Result<(), LedgerError> {
    ledger.for_each_stored_text(filter, |row| {
        tally.add_row(row);
        Ok::<(), LedgerError>(())
    })
}

/// Tally the rows of `ledger` that `filter` selects, reading every usage
/// row: those it leaves out (other sessions, earlier times) are only
/// remembered, so a call one of them made first is inherited here, as it
/// is in the tally of the whole home.
pub fn tally_ledger_within(
    ledger: &LedgerReader,
    filter: &RowFilter,
    tally: &mut UsageTally,
) -> Result<(), LedgerError> {
    let selected = |e: &Event| {
        filter.session.as_ref().is_none_or(|s| *s == e.session)
            && filter.since_unix_ns.is_none_or(|t| e.time_unix_ns >= t)
    };
    ledger.for_each_stored_text(&RowFilter::default(), |row| {
        tally.add_row_if(row, selected);
        Ok::<(), LedgerError>(())
    })
}

/// One turn's usage: its records' tokens, and the model time they report.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TurnUsage {
    pub records: u64,
    pub tokens: Tokens,
    /// Sum of the records' `duration_ms`; absent when none reported one.
    pub model_ms: Option<u64>,
    /// The last model a record of the turn named.
    pub model: Option<String>,
}

/// Each turn's usage, by turn id, from one session's events. Usage
/// without a turn belongs to none.
pub fn turn_usage<'a>(events: impl IntoIterator<Item = &'a Event>) -> BTreeMap<String, TurnUsage> {
    let mut turns: BTreeMap<String, TurnUsage> = BTreeMap::new();
    for event in events {
        add_turn_usage(&mut turns, event);
    }
    turns
}

/// A usage record with its token kinds as the contract means them: input
/// without the cached part. A Copilot row is read from the agent's own
/// numbers where it kept them (`raw`, generation 4 on), as the whole prompt
/// less the cache reads and the cache writes (earlier builds took out only
/// the reads, so a row written then reads right too); a generation-3 row
/// (no `raw`) still holds the whole prompt and is reduced by both. Every
/// other agent's row is already so.
pub fn normalized(adapter: AdapterId, u: &UsageReported) -> std::borrow::Cow<'_, UsageReported> {
    if adapter != AdapterId::Copilot {
        return std::borrow::Cow::Borrowed(u);
    }
    let whole = match &u.raw {
        Some(raw) => CopilotTokens::read(raw.as_str()),
        None => Some(CopilotTokens {
            input_tokens: u.input_tokens,
            cache_read_tokens: u.cache_read_tokens,
            cache_write_tokens: u.cache_write_tokens,
        }),
    };
    let input = whole.and_then(|w| w.uncached());
    if input.is_none() || input == u.input_tokens {
        return std::borrow::Cow::Borrowed(u);
    }
    let mut owned = u.clone();
    owned.input_tokens = input;
    std::borrow::Cow::Owned(owned)
}

/// A Copilot summary with its input as in [`normalized`], read from the
/// agent's own `modelMetrics` entry (`raw.usage`).
pub fn normalized_summary(
    adapter: AdapterId,
    s: &UsageSummary,
) -> std::borrow::Cow<'_, UsageSummary> {
    #[derive(Deserialize)]
    struct Entry {
        usage: Option<CopilotTokens>,
    }
    let entry = match (&s.raw, adapter) {
        (Some(raw), AdapterId::Copilot) => serde_json::from_str::<Entry>(raw.as_str()).ok(),
        _ => None,
    };
    let input = entry.and_then(|e| e.usage).and_then(|u| u.uncached());
    if input.is_none() || input == s.input_tokens {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut owned = s.clone();
    owned.input_tokens = input;
    std::borrow::Cow::Owned(owned)
}

/// Copilot's own token counts, as its record writes them.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "camelCase")]
struct CopilotTokens {
    input_tokens: Option<u64>,
    cache_read_tokens: Option<u64>,
    cache_write_tokens: Option<u64>,
}

impl CopilotTokens {
    fn read(raw: &str) -> Option<CopilotTokens> {
        serde_json::from_str(raw).ok()
    }

    fn uncached(self) -> Option<u64> {
        crate::agents::copilot::record::uncached_input(
            self.input_tokens,
            self.cache_read_tokens,
            self.cache_write_tokens,
        )
    }
}

/// [`turn_usage`] one event at a time, for a caller that streams a
/// session rather than holding its events.
pub fn add_turn_usage(turns: &mut BTreeMap<String, TurnUsage>, event: &Event) {
    let (Payload::UsageReported(u), Some(turn)) = (&event.payload, &event.turn.turn_id) else {
        return;
    };
    // Another session's call, copied here: that session's turn has it.
    if u.copied_from_session.is_some() {
        return;
    }
    let u = normalized(event.session.adapter, u);
    let u = u.as_ref();
    let t = turns.entry(turn.clone()).or_default();
    t.records += 1;
    t.tokens.add(u);
    sum_into(&mut t.model_ms, u.duration_ms);
    if u.model.is_some() {
        t.model.clone_from(&u.model);
    }
}

/// Put each turn's reported tokens on the line that closes it: its last
/// `turn.completed`, else its `turn.started`.
pub fn mark_turn_tokens(
    timeline: &mut crate::ledger::Timeline,
    usage: &BTreeMap<String, TurnUsage>,
) {
    for (turn, u) in usage {
        let Some(tokens) = u.tokens.in_out() else {
            continue;
        };
        let of_turn = |e: &crate::ledger::TimelineEntry, kind: &str| {
            e.kind == kind && e.turn.as_deref() == Some(turn.as_str())
        };
        let entries = &mut timeline.entries;
        let closing = match entries.iter().rposition(|e| of_turn(e, "turn.completed")) {
            Some(i) => Some(i),
            None => entries.iter().position(|e| of_turn(e, "turn.started")),
        };
        if let Some(i) = closing {
            entries[i].turn_tokens = Some(tokens);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::{Json, Provenance, RecordAt};
    use crate::report::testkit::Script;

    fn usage(model: Option<&str>, input: u64, output: u64, cost: Option<&str>) -> Payload {
        Payload::UsageReported(UsageReported {
            record: RecordAt {
                path: "t.jsonl".into(),
                offset: 0,
            },
            message_id: None,
            model: model.map(String::from),
            input_tokens: Some(input),
            output_tokens: Some(output),
            cache_read_tokens: None,
            cache_write_tokens: Some(7),
            cost: cost.map(|c| Json::parse(c).expect("test JSON")),
            duration_ms: Some(100),
            time_to_first_token_ms: None,
            reasoning_tokens: None,
            raw: None,
            copied_from_session: None,
        })
    }

    fn tally(by: GroupBy, prices: Option<Prices>) -> UsageTally {
        let mut s = Script::new("s1");
        s.turn("t1");
        s.push(0, usage(Some("m1"), 10, 5, None), Provenance::NATIVE);
        s.push(1, usage(Some("m2"), 20, 1, Some("0.5")), Provenance::NATIVE);
        s.turn("t2");
        s.push(2, usage(None, 1, 1, Some("\"free\"")), Provenance::NATIVE);
        let mut t = UsageTally::new(by, prices);
        for e in s.events() {
            t.add(&e);
        }
        t
    }

    /// Copilot's input is the whole prompt: a generation-3 row kept it so,
    /// a row of an earlier build took out only the cache reads, a row of
    /// this one takes out the reads and the writes (7 here); all three read
    /// as the uncached part. Another agent's input is read as stored.
    #[test]
    fn copilot_input_excludes_cache_reads_and_writes_in_every_generation() {
        let raw = r#"{"inputTokens":100,"cacheReadTokens":60,"cacheWriteTokens":7}"#;
        let row = |raw: Option<&str>, input: u64| {
            let Payload::UsageReported(mut u) = usage(Some("gpt-4.1"), input, 10, None) else {
                unreachable!()
            };
            u.cache_read_tokens = Some(60);
            u.raw = raw.map(|r| Json::parse(r).unwrap());
            Payload::UsageReported(u)
        };
        let rows = || [row(None, 100), row(Some(raw), 40), row(Some(raw), 33)];
        for (adapter, want) in [(AdapterId::Copilot, 3 * 33), (AdapterId::ClaudeCode, 173)] {
            let mut t = UsageTally::new(GroupBy::Model, None);
            let mut turns = BTreeMap::new();
            for payload in rows() {
                let mut s = Script::new("s1");
                s.turn("t1");
                s.push(0, payload, Provenance::NATIVE);
                for mut e in s.events() {
                    e.session.adapter = adapter;
                    t.add(&e);
                    add_turn_usage(&mut turns, &e);
                }
            }
            assert_eq!(t.total.tokens.input, Some(want), "{adapter:?}");
            assert_eq!(turns["t1"].tokens.input, Some(want));
            assert_eq!(t.total.tokens.cache_read, Some(180));
            assert_eq!(t.total.tokens.cache_write, Some(21));
        }
    }

    #[test]
    fn counts_absent_kinds_stay_absent_and_cost_is_only_what_was_reported() {
        let t = tally(GroupBy::Model, None);
        assert_eq!(t.total.records, 3);
        assert_eq!(t.total.tokens.input, Some(31));
        assert_eq!(t.total.tokens.cache_read, None);
        assert_eq!(t.total.tokens.cache_write, Some(21));
        assert_eq!(t.groups["m1"].reported_cost, None);
        assert_eq!(t.groups["m2"].reported_cost, Some(0.5));
        assert_eq!(t.groups[UNKNOWN_MODEL].records_with_unreadable_cost, 1);
        assert_eq!(t.total.priced_cost, None);
    }

    #[test]
    fn prices_price_known_models_and_name_the_rest() {
        let prices = Prices::parse(
            "[models.m1]\ninput = 1.0\noutput = 2.0\ncache_write = 0.0\n[models.m2]\ninput = 1.0\n",
        )
        .expect("valid prices");
        let t = tally(GroupBy::Session, Some(prices));
        let g = &t.groups["claude-code/s1"];
        // m1: 10 * 1 + 5 * 2 per million; m2 has no output price.
        assert_eq!(g.priced_cost, Some(20.0 / 1e6));
        assert_eq!(g.unpriced_records, Some(2));
        let models: Vec<&str> = g.unpriced_models.iter().map(String::as_str).collect();
        assert_eq!(models, ["(unknown)", "m2"]);
        assert_eq!(g.reported_cost, Some(0.5));
    }

    #[test]
    fn a_malformed_prices_file_names_the_line() {
        let err = Prices::parse("[models.m1]\ninput = \"x\"\n").unwrap_err();
        assert!(err.starts_with("line 2, column 9:"), "{err}");
        let err = Prices::parse("[models.m1]\nsnacks = 1.0\n").unwrap_err();
        assert!(err.starts_with("line 2,"), "{err}");
    }

    #[test]
    fn unknown_grouping_is_refused() {
        assert!("week".parse::<GroupBy>().is_err());
        assert_eq!("day".parse::<GroupBy>(), Ok(GroupBy::Day));
    }

    #[test]
    fn turn_usage_sums_tokens_and_model_time_per_turn() {
        let mut s = Script::new("s1");
        s.turn("t1");
        s.push(0, usage(Some("m1"), 10, 5, None), Provenance::NATIVE);
        s.push(1, usage(Some("m2"), 20, 1, None), Provenance::NATIVE);
        s.no_turn();
        s.push(2, usage(None, 1, 1, None), Provenance::NATIVE);
        let events = s.events();
        let turns = turn_usage(&events);
        assert_eq!(turns.len(), 1);
        assert_eq!(turns["t1"].tokens.in_out(), Some(36));
        assert_eq!(turns["t1"].model_ms, Some(200));
        assert_eq!(turns["t1"].model.as_deref(), Some("m2"));
    }
}
