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

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

pub use super::prices::{ModelPrices, Prices, PricesError};
use super::usage_kinds::{cost_only, reports_no_tokens};
pub(crate) use super::usage_kinds::{normalized, normalized_summary};

use super::agent_totals::{AgentTotals, LatestSummaries, sum_into};
use super::usage_calls::{CallOwners, SharedCalls, Verdict};
use crate::contract::{Event, Payload, UsageReported};
use crate::ledger::{DamagedRow, LedgerError, LedgerReader, RowFilter, StoredText};

/// The group name of usage whose record named no model.
pub(crate) const UNKNOWN_MODEL: &str = "(unknown)";

/// How `harnery usage` groups its rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GroupBy {
    Session,
    Day,
    Model,
    /// The UTC hour, the model and the session at once, tab-separated
    /// (`YYYY-MM-DDTHH\tmodel\tadapter/session`): the finest grouping,
    /// which `serve`'s dashboard folds into its cards and charts. No flag
    /// names it.
    HourModelSession,
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
    pub(crate) fn add(&mut self, u: &UsageReported) {
        sum_into(&mut self.input, u.input_tokens);
        sum_into(&mut self.output, u.output_tokens);
        sum_into(&mut self.cache_read, u.cache_read_tokens);
        sum_into(&mut self.cache_write, u.cache_write_tokens);
        sum_into(&mut self.reasoning, u.reasoning_tokens);
    }

    /// Input plus output, where either was reported: the one number
    /// `show`, `receipts`, `export` and `view` give a turn.
    pub(crate) fn in_out(&self) -> Option<u64> {
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
    /// The priced records' token sums by model, priced at once: both the
    /// tally and the sessions' kept sums ([`super::usage_sums`]) price so.
    #[serde(skip)]
    pub(crate) priced_tokens: BTreeMap<String, [u64; 4]>,
    /// With `--prices` only: records the prices could not price.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unpriced_records: Option<u64>,
    /// With `--prices` only: the models of those records.
    #[serde(skip_serializing_if = "BTreeSet::is_empty")]
    pub unpriced_models: BTreeSet<String>,
    /// Records of a model call counted elsewhere: a copy of a parent's
    /// call (a `--fork-session` copy, a `restore --apply` session's copied
    /// lines) or a record read again ([`super::usage_calls`]). Shown,
    /// never counted: their token kinds count as zero in `tokens`.
    #[serde(skip_serializing_if = "is_zero")]
    pub inherited_records: u64,
    /// What those inherited records reported, apart.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inherited_tokens: Option<Tokens>,
    /// Records of a call another, unrelated, session reported too (the
    /// same call id): counted here as well, and reported by `health`.
    #[serde(skip_serializing_if = "is_zero")]
    pub shared_id_records: u64,
    /// Records of sessions `harnery import` read from the agents' records
    /// (class `imported`: no hook saw them), counted in `tokens` too.
    #[serde(skip_serializing_if = "is_zero")]
    pub imported_records: u64,
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
    /// Show `u` as inherited: its kinds count zero here, never absent.
    fn add_inherited(&mut self, u: &UsageReported) {
        self.inherited_records += 1;
        self.inherited_tokens
            .get_or_insert_with(Tokens::default)
            .add(u);
        let zero = |n: Option<u64>| n.map(|_| 0);
        let none = UsageReported {
            input_tokens: zero(u.input_tokens),
            output_tokens: zero(u.output_tokens),
            cache_read_tokens: zero(u.cache_read_tokens),
            cache_write_tokens: zero(u.cache_write_tokens),
            reasoning_tokens: zero(u.reasoning_tokens),
            ..u.clone()
        };
        self.tokens.add(&none);
    }

    fn add(&mut self, u: &UsageReported, prices: Option<&Prices>) {
        // A cost report without tokens (Claude Code's running cost, what it
        // grew by) is no model call of its own.
        if reports_no_tokens(u) && u.cost.is_some() {
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
        match (prices.price_millionths(u), &u.model) {
            (Some(_), Some(model)) => {
                let sums = self.priced_tokens.entry(model.clone()).or_default();
                let counts = [
                    u.input_tokens,
                    u.output_tokens,
                    u.cache_read_tokens,
                    u.cache_write_tokens,
                ];
                for (total, n) in sums.iter_mut().zip(counts) {
                    *total = total.saturating_add(n.unwrap_or(0));
                }
                self.priced_cost = Some(prices.sums_millionths(&self.priced_tokens) / 1e6);
            }
            _ => {
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
    /// Whose each model call is: counted once, in the session that made
    /// it, across every session and epoch read.
    #[serde(skip)]
    owners: CallOwners,
    /// The agents' own totals, latest per session and model, until
    /// [`UsageTally::settle`] adds them to the groups.
    #[serde(skip)]
    summaries: LatestSummaries,
    /// Sessions whose `session.imported` was read, and which of them count
    /// ([`UsageTally::only_imported`]).
    #[serde(skip)]
    imported: ImportedSessions,
}

/// The imported sessions a tally met, and whether it counts only them
/// (`Some(true)`), only the others (`Some(false)`) or both.
#[derive(Debug, Clone, Default)]
struct ImportedSessions {
    seen: std::collections::HashSet<crate::contract::SessionRef>,
    only: Option<bool>,
}

/// The prefilter: a row whose text lacks this (the start of
/// `"usage.reported"` and `"usage.summary"`) is not usage, unparsed...
const USAGE_TYPE: &[u8] = b"\"usage.";
/// ...unless it links a session to its parent (`restore --apply`).
const LINK: &[u8] = b"\"restored_from\"";
/// ...or marks a session imported.
const IMPORTED: &[u8] = b"\"session.imported\"";

impl UsageTally {
    pub(crate) fn new(by: GroupBy, prices: Option<Prices>) -> UsageTally {
        UsageTally {
            by,
            groups: BTreeMap::new(),
            total: UsageGroup::default(),
            damaged: Vec::new(),
            prices,
            owners: CallOwners::default(),
            summaries: LatestSummaries::default(),
            imported: ImportedSessions::default(),
        }
    }

    /// Count only the usage of imported sessions (`true`) or only that of
    /// the others (`false`).
    pub fn only_imported(&mut self, imported: bool) {
        self.imported.only = Some(imported);
    }

    /// Whether `event`'s session counts under the imported filter.
    fn counts(&self, event: &Event) -> bool {
        self.imported
            .only
            .is_none_or(|only| only == self.imported.seen.contains(&event.session))
    }

    /// Count `event` if it is a usage report (once per model call: a copy
    /// of a call counted elsewhere is inherited in its group, see
    /// [`super::usage_calls`]); a `restore --apply` link is noted.
    pub(crate) fn add(&mut self, event: &Event) {
        if let Payload::UsageSummary(s) = &event.payload {
            let s = normalized_summary(event.session.adapter, s);
            let s = s.as_ref();
            let key = self.key_of(event, Some(&s.model));
            let session = &event.session;
            self.summaries
                .note(session.adapter, &session.session_id, key, s);
            return;
        }
        let Some((u, verdict)) = self.judge(event) else {
            return;
        };
        let u = u.as_ref();
        let key = self.key_of(event, u.model.as_deref());
        let group = self.groups.entry(key).or_default();
        if verdict == Verdict::Inherited {
            group.add_inherited(u);
            self.total.add_inherited(u);
            self.inherit_from_totals(event, u);
            return;
        }
        let prices = self.prices.as_ref();
        group.add(u, prices);
        self.total.add(u, prices);
        if self.imported.seen.contains(&event.session)
            && !(reports_no_tokens(u) && u.cost.is_some())
        {
            group.imported_records += 1;
            self.total.imported_records += 1;
        }
        if verdict == Verdict::Shared {
            group.shared_id_records += 1;
            self.total.shared_id_records += 1;
        }
    }

    /// Note what `event` says of calls and links, and judge a usage
    /// report: its normalized form (a cost report reduced to the
    /// session's own part) and whose call it is.
    fn judge<'e>(&mut self, event: &'e Event) -> Option<(Cow<'e, UsageReported>, Verdict)> {
        let u = match &event.payload {
            Payload::UsageReported(u) => u,
            Payload::CheckpointRecorded(_) => {
                self.owners.note_link(event);
                return None;
            }
            _ => return None,
        };
        let mut u = normalized(event.session.adapter, u);
        if let Some((model, cost)) = cost_only(&u) {
            let own = self.owners.own_cost(event, &model, cost);
            if own != cost {
                let text = format!("{own:.10}");
                let text = text.trim_end_matches('0').trim_end_matches('.');
                u.to_mut().cost = crate::contract::Json::parse(text).ok();
            }
        }
        let verdict = self.owners.judge(event, &u);
        Some((u, verdict))
    }

    /// Leave a copied call `u` out of its session's own totals (the agent
    /// restates every call its record holds, a parent's copies included).
    fn inherit_from_totals(&mut self, event: &Event, u: &UsageReported) {
        let session = &event.session;
        if self
            .owners
            .parent(session.adapter, &session.session_id)
            .is_none()
        {
            return;
        }
        let model = u.model.clone().unwrap_or_else(|| UNKNOWN_MODEL.to_string());
        let pair = (session.adapter, session.session_id.clone(), model);
        self.summaries.inherit(pair, u);
    }

    /// The model calls unrelated sessions both reported (counted in each).
    pub(crate) fn shared_calls(&self) -> Vec<SharedCalls> {
        self.owners.shared()
    }

    /// Count one stored row: parsed only when it may be usage; a usage
    /// row that does not parse is kept in `damaged`.
    pub(crate) fn add_row(&mut self, row: StoredText<'_>) {
        self.add_row_if(row, |_| true);
    }

    /// [`UsageTally::add_row`] for a row `selected` keeps; a usage row it
    /// leaves out is only remembered, so that a later copy of the same
    /// model call (a fork of that session) counts as inherited.
    pub(crate) fn add_row_if(&mut self, row: StoredText<'_>, selected: impl Fn(&Event) -> bool) {
        let finder = |needle| memchr::memmem::find(row.json, needle).is_some();
        if !finder(USAGE_TYPE) && !finder(LINK) && !finder(IMPORTED) {
            return;
        }
        match serde_json::from_slice::<Event>(row.json) {
            Ok(event) if matches!(event.payload, Payload::SessionImported(_)) => {
                self.imported.seen.insert(event.session);
            }
            Ok(event) if selected(&event) && self.counts(&event) => self.add(&event),
            Ok(event) => self.observe(&event),
            Err(e) => self.damaged.push(DamagedRow {
                seq: row.seq,
                event_id: row.id.to_string(),
                detail: format!("the row's text does not parse as an event: {e}"),
            }),
        }
    }

    /// Note `event`'s model call (and links) as seen elsewhere, without
    /// counting it: a later copy of it is inherited.
    pub(crate) fn observe(&mut self, event: &Event) {
        let _ = self.judge(event);
    }

    fn key_of(&self, event: &Event, model: Option<&str>) -> String {
        match self.by {
            GroupBy::Session => format!("{}/{}", event.session.adapter, event.session.session_id),
            GroupBy::Day => day_of(event.time_unix_ns),
            GroupBy::Model => model.unwrap_or(UNKNOWN_MODEL).to_string(),
            GroupBy::HourModelSession => {
                let stamp = crate::clock::format_time(event.time_unix_ns);
                format!(
                    "{}\t{}\t{}/{}",
                    stamp.get(..13).unwrap_or(&stamp),
                    model.unwrap_or(UNKNOWN_MODEL),
                    event.session.adapter,
                    event.session.session_id
                )
            }
        }
    }

    /// Put the agents' own totals into their groups and the total; call
    /// once, after the last row.
    pub(crate) fn settle(&mut self) {
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
    let stamp = crate::clock::format_time(unix_ns);
    stamp.get(..10).unwrap_or(&stamp).to_string()
}

/// Stream the rows `filter` keeps from `ledger` into `tally`.
pub(crate) fn tally_ledger(
    ledger: &LedgerReader,
    filter: &RowFilter,
    tally: &mut UsageTally,
) -> Result<(), LedgerError> {
    ledger.events().for_each_stored_text(filter, |row| {
        tally.add_row(row);
        Ok::<(), LedgerError>(())
    })
}

/// Tally the rows of `ledger` that `filter` selects, reading every usage
/// row: those it leaves out (other sessions, earlier times) are only
/// remembered, so a call one of them made first is inherited here, as it
/// is in the tally of the whole home.
pub(crate) fn tally_ledger_within(
    ledger: &LedgerReader,
    filter: &RowFilter,
    tally: &mut UsageTally,
) -> Result<(), LedgerError> {
    let selected = |e: &Event| {
        filter.session.as_ref().is_none_or(|s| *s == e.session)
            && filter.since_unix_ns.is_none_or(|t| e.time_unix_ns >= t)
    };
    ledger
        .events()
        .for_each_stored_text(&RowFilter::default(), |row| {
            tally.add_row_if(row, selected);
            Ok::<(), LedgerError>(())
        })
}

/// One turn's usage: its records' tokens, and the model time they report.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct TurnUsage {
    pub records: u64,
    pub tokens: Tokens,
    /// Sum of the records' `duration_ms`; absent when none reported one.
    pub model_ms: Option<u64>,
    /// The last model a record of the turn named.
    pub model: Option<String>,
}

/// Each turn's usage, by turn id, from one session's events. Usage
/// without a turn belongs to none.
pub(crate) fn turn_usage<'a>(
    events: impl IntoIterator<Item = &'a Event>,
) -> BTreeMap<String, TurnUsage> {
    let mut turns: BTreeMap<String, TurnUsage> = BTreeMap::new();
    for event in events {
        add_turn_usage(&mut turns, event);
    }
    turns
}

/// [`turn_usage`] one event at a time, for a caller that streams a
/// session rather than holding its events.
pub(crate) fn add_turn_usage(turns: &mut BTreeMap<String, TurnUsage>, event: &Event) {
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
pub(crate) fn mark_turn_tokens(
    timeline: &mut super::timeline::Timeline,
    usage: &BTreeMap<String, TurnUsage>,
) {
    for (turn, u) in usage {
        let Some(tokens) = u.tokens.in_out() else {
            continue;
        };
        let of_turn = |e: &super::timeline::TimelineEntry, kind: &str| {
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
    use crate::contract::{AdapterId, Json, Provenance, RecordAt};
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
