//! The dashboard's figures, drawn from the session rows and a running
//! usage tally, never from every session's events.
//!
//! The tally ([`GroupBy::HourModelSession`], the usage report's own
//! counting: each model call once, copies inherited) is kept between
//! requests and only the rows finalize appended since the last request
//! are read into it; the span failures and the health conditions are read
//! again only when the ledger's last row changed. A page then folds the
//! tally's groups (hour × model × session) into its cards, charts and top
//! sessions, in time proportional to the groups, not the events; a page
//! folded is kept until the ledger grows or the minute turns.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use crate::contract::SessionRef;
use crate::ledger::{LedgerError, LedgerReader, SessionSummary};
use crate::report::health::Condition;
use crate::report::usage::{GroupBy, Prices, UsageGroup, UsageTally};

const HOUR_NS: i64 = 3_600_000_000_000;
pub(crate) const DAY_NS: i64 = 24 * HOUR_NS;

/// The span of time the dashboard shows (`range=` in its address).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Range {
    Day,
    Week,
    Month,
    All,
}

impl Range {
    pub(crate) const ALL: [Range; 4] = [Range::Day, Range::Week, Range::Month, Range::All];

    pub(crate) fn parse(text: &str) -> Result<Range, String> {
        Range::ALL
            .into_iter()
            .find(|r| r.as_str() == text)
            .ok_or_else(|| format!("range={text:?} is not one of 24h, 7d, 30d, all"))
    }

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Range::Day => "24h",
            Range::Week => "7d",
            Range::Month => "30d",
            Range::All => "all",
        }
    }

    pub(crate) fn label(self) -> &'static str {
        match self {
            Range::Day => "last 24 hours",
            Range::Week => "last 7 days",
            Range::Month => "last 30 days",
            Range::All => "all time",
        }
    }

    /// When, in words: `in the last 7 days`, `at any time`.
    pub(crate) fn during(self) -> &'static str {
        match self {
            Range::Day => "in the last 24 hours",
            Range::Week => "in the last 7 days",
            Range::Month => "in the last 30 days",
            Range::All => "at any time",
        }
    }

    /// The first instant the range keeps, at `now`.
    pub(crate) fn since(self, now: i64) -> Option<i64> {
        match self {
            Range::Day => Some(now - DAY_NS),
            Range::Week => Some(now - 7 * DAY_NS),
            Range::Month => Some(now - 30 * DAY_NS),
            Range::All => None,
        }
    }
}

/// The dashboard's cards.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Cards {
    /// Sessions with an event in the range.
    pub sessions: u64,
    /// Their turns and tool calls (whole sessions), and spans that failed.
    pub turns: u64,
    pub tool_calls: u64,
    pub failures: u64,
    /// Input plus output tokens of the model calls made in the range.
    pub tokens: u64,
    pub cache_tokens: u64,
    pub reported_cost: Option<f64>,
    pub priced_cost: Option<f64>,
}

/// One stack of a chart: a bucket's start and each series' value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Chart {
    /// The series' names, largest first (the last may be `other`).
    pub series: Vec<String>,
    /// Per bucket: its start (Unix ns) and one value per series.
    pub buckets: Vec<(i64, Vec<f64>)>,
    /// The bucket's width.
    pub step_ns: i64,
}

/// A session the dashboard names, with what it is named for.
#[derive(Debug, Clone)]
pub(crate) struct Named {
    pub summary: SessionSummary,
    pub tokens: u64,
    pub priced_cost: Option<f64>,
    pub reported_cost: Option<f64>,
    /// Why it needs attention (empty in the top lists).
    pub reasons: Vec<String>,
}

/// Everything the home page shows.
#[derive(Debug, Clone)]
pub(crate) struct Dashboard {
    pub range: Range,
    pub now: i64,
    pub cards: Cards,
    /// Sessions started per UTC day (Unix day number), the last 26 weeks.
    pub started: BTreeMap<i64, u64>,
    /// Model calls per UTC day, the same days.
    pub calls: BTreeMap<i64, u64>,
    pub tokens_by: [Chart; 3],
    pub cost_by: [Chart; 3],
    pub top_cost: Vec<Named>,
    pub top_tokens: Vec<Named>,
    pub top_tools: Vec<Named>,
    pub attention: Vec<Named>,
    /// Sessions needing attention beyond those listed.
    pub attention_more: usize,
    pub prices: String,
}

/// How the charts are split: by model, by agent, by project.
pub(crate) const SPLITS: [&str; 3] = ["model", "agent", "project"];
/// Series a chart draws before the rest become `other`.
const SERIES: usize = 6;
/// Sessions in each top list and in the attention list.
const TOP: usize = 8;
const ATTENTION: usize = 12;
/// Weeks the activity heatmap covers.
pub(crate) const WEEKS: i64 = 26;

/// The first day (Unix day number, a Monday) of the heatmap at `now`:
/// [`WEEKS`] columns of weeks, the last holding today.
pub(crate) fn heat_start(now: i64) -> i64 {
    let today = now.div_euclid(DAY_NS);
    // Day 0 (1970-01-01) was a Thursday.
    let weekday = (today + 3).rem_euclid(7);
    today - weekday - (WEEKS - 1) * 7
}

/// What the dashboard keeps between requests.
pub(crate) struct Kept {
    epoch: String,
    seq: i64,
    tally: UsageTally,
    failures: HashMap<SessionRef, u64>,
    conditions: Vec<Condition>,
    /// Dashboards already folded at this seq: by range and the minute of
    /// `now` they were folded in (their relative figures move with it).
    folded: Vec<(Range, i64, Dashboard)>,
}

/// The kept tally, shared by the server's workers.
pub(crate) type Cache = Arc<Mutex<Option<Kept>>>;

/// Bring the kept tally up to `ledger`'s last row (a new epoch starts it
/// again), and fold it with `sessions` into the dashboard for `range`.
/// A dashboard folded at the same seq, for the same range, in the same
/// minute is the same page: it is kept and given again.
pub(crate) fn dashboard(
    cache: &Cache,
    ledger: &LedgerReader,
    range: Range,
    now: i64,
) -> Result<Dashboard, LedgerError> {
    let mut kept = cache.lock().unwrap_or_else(|p| p.into_inner());
    catch_up(&mut kept, ledger, now)?;
    let kept = kept.as_mut().expect("caught up");
    let minute = now.div_euclid(60_000_000_000);
    if let Some((_, _, d)) = kept
        .folded
        .iter()
        .find(|(r, m, _)| *r == range && *m == minute)
    {
        return Ok(d.clone());
    }
    let folded = fold(kept, ledger.sessions().list()?, range, now);
    kept.folded.retain(|(_, m, _)| *m == minute);
    kept.folded.push((range, minute, folded.clone()));
    Ok(folded)
}

fn catch_up(kept: &mut Option<Kept>, ledger: &LedgerReader, now: i64) -> Result<(), LedgerError> {
    let epoch = &ledger.genesis().genesis_id;
    let last = ledger.rows().last_seq()?;
    if kept
        .as_ref()
        .is_some_and(|k| &k.epoch == epoch && k.seq == last)
    {
        return Ok(());
    }
    if kept
        .as_ref()
        .is_none_or(|k| &k.epoch != epoch || k.seq > last)
    {
        *kept = Some(Kept {
            epoch: epoch.clone(),
            seq: 0,
            tally: UsageTally::new(GroupBy::HourModelSession, Some(Prices::bundled())),
            failures: HashMap::new(),
            conditions: Vec::new(),
            folded: Vec::new(),
        });
    }
    let k = kept.as_mut().expect("set above");
    let mut seen = k.seq;
    ledger.events().for_each_stored_text_after(k.seq, |row| {
        seen = seen.max(row.seq);
        k.tally.add_row(row);
        Ok::<(), LedgerError>(())
    })?;
    k.seq = seen.max(last);
    k.folded.clear();
    k.failures = ledger.spans().failures_by_session()?.into_iter().collect();
    k.conditions = crate::report::session_rows::conditions(ledger, now)?;
    Ok(())
}

/// One group of the tally, its key split: hour start, model, session key.
struct Cell<'a> {
    hour: i64,
    model: &'a str,
    session: &'a str,
    usage: &'a UsageGroup,
}

fn cells(tally: &UsageTally) -> impl Iterator<Item = Cell<'_>> {
    tally.groups.iter().filter_map(|(key, usage)| {
        let mut parts = key.splitn(3, '\t');
        let hour = parts.next()?;
        let hour = crate::clock::parse_instant(&format!("{hour}:00:00Z"))?;
        Some(Cell {
            hour,
            model: parts.next()?,
            session: parts.next()?,
            usage,
        })
    })
}

fn in_out(u: &UsageGroup) -> u64 {
    u.tokens.in_out().unwrap_or(0)
}

fn add_cost(sum: &mut Option<f64>, cost: Option<f64>) {
    if let Some(c) = cost {
        *sum = Some(sum.unwrap_or(0.0) + c);
    }
}

/// The session key the tally uses: `adapter/id`.
fn key_of(s: &SessionRef) -> String {
    format!("{}/{}", s.adapter.as_str(), s.session_id)
}

fn fold(kept: &Kept, sessions: Vec<SessionSummary>, range: Range, now: i64) -> Dashboard {
    let since = range.since(now);
    let kept_range = |t: i64| since.is_none_or(|s| t >= s);
    // Usage in the range, per session.
    let mut usage: HashMap<&str, (u64, Option<f64>, Option<f64>)> = HashMap::new();
    let mut cards = Cards::default();
    let mut calls: BTreeMap<i64, u64> = BTreeMap::new();
    let first_day = heat_start(now);
    // The tally's keys are parsed once per page, not once per chart.
    let all: Vec<Cell> = cells(&kept.tally).collect();
    for c in &all {
        let day = c.hour.div_euclid(DAY_NS);
        if day >= first_day {
            *calls.entry(day).or_default() += c.usage.records;
        }
        if !kept_range(c.hour + HOUR_NS - 1) {
            continue;
        }
        let u = usage.entry(c.session).or_default();
        u.0 += in_out(c.usage);
        add_cost(&mut u.1, c.usage.priced_cost);
        add_cost(&mut u.2, c.usage.reported_cost);
        cards.tokens += in_out(c.usage);
        cards.cache_tokens +=
            c.usage.tokens.cache_read.unwrap_or(0) + c.usage.tokens.cache_write.unwrap_or(0);
        add_cost(&mut cards.priced_cost, c.usage.priced_cost);
        add_cost(&mut cards.reported_cost, c.usage.reported_cost);
    }
    let mut started: BTreeMap<i64, u64> = BTreeMap::new();
    let mut named: Vec<Named> = Vec::new();
    let mut project: HashMap<String, String> = HashMap::new();
    for s in sessions {
        let day = s.first_unix_ns.div_euclid(DAY_NS);
        if day >= first_day {
            *started.entry(day).or_default() += 1;
        }
        let key = key_of(&s.session);
        project.insert(key.clone(), project_of(&s));
        if !kept_range(s.last_unix_ns) {
            continue;
        }
        let failures = kept.failures.get(&s.session).copied().unwrap_or(0);
        cards.sessions += 1;
        cards.turns += s.turns;
        cards.tool_calls += s.spans.open + s.spans.closed_native + s.spans.recovered;
        cards.failures += failures;
        let (tokens, priced_cost, reported_cost) =
            usage.get(key.as_str()).copied().unwrap_or_default();
        named.push(Named {
            summary: s,
            tokens,
            priced_cost,
            reported_cost,
            reasons: Vec::new(),
        });
    }
    let step_ns = step(range, &all, now);
    let charts = SPLITS.map(|split| {
        let name = |c: &Cell| -> String {
            match split {
                "model" => c.model.to_string(),
                "agent" => c.session.split('/').next().unwrap_or("").to_string(),
                _ => project
                    .get(c.session)
                    .cloned()
                    .unwrap_or_else(|| NO_PROJECT.to_string()),
            }
        };
        let tokens = chart(&all, since, now, step_ns, &name, |u| in_out(u) as f64);
        let cost = chart(&all, since, now, step_ns, &name, |u| {
            u.priced_cost.unwrap_or(0.0)
        });
        (tokens, cost)
    });
    let [(t0, c0), (t1, c1), (t2, c2)] = charts;
    let top = |by: &dyn Fn(&Named) -> f64| {
        let mut all: Vec<&Named> = named.iter().filter(|n| by(n) > 0.0).collect();
        all.sort_by(|a, b| by(b).total_cmp(&by(a)));
        all.into_iter().take(TOP).cloned().collect::<Vec<Named>>()
    };
    let top_cost = top(&|n| n.priced_cost.or(n.reported_cost).unwrap_or(0.0));
    let top_tokens = top(&|n| n.tokens as f64);
    let top_tools = top(&|n| {
        let s = &n.summary.spans;
        (s.open + s.closed_native + s.recovered) as f64
    });
    let (attention, attention_more) = attention(kept, &named);
    Dashboard {
        range,
        now,
        cards,
        started,
        calls,
        tokens_by: [t0, t1, t2],
        cost_by: [c0, c1, c2],
        top_cost,
        top_tokens,
        top_tools,
        attention,
        attention_more,
        prices: Prices::bundled().label(),
    }
}

/// The project a chart files a session under when it names none.
pub(crate) const NO_PROJECT: &str = "(no project)";

/// A session's project as a chart names it: its last two path parts.
fn project_of(s: &SessionSummary) -> String {
    match s.project.as_deref() {
        None => NO_PROJECT.to_string(),
        Some(p) => crate::report::session_list::short_project(p),
    }
}

/// The chart's bucket: an hour for a day, a day for a week or a month,
/// and for all time a whole number of days that makes at most 60 bars.
fn step(range: Range, cells: &[Cell], now: i64) -> i64 {
    match range {
        Range::Day => HOUR_NS,
        Range::Week | Range::Month => DAY_NS,
        Range::All => {
            let first = cells.iter().map(|c| c.hour).min().unwrap_or(now);
            let days = (now - first).div_euclid(DAY_NS) + 1;
            DAY_NS * ((days + 59) / 60).max(1)
        }
    }
}

fn chart(
    cells: &[Cell],
    since: Option<i64>,
    now: i64,
    step: i64,
    name: &dyn Fn(&Cell) -> String,
    value: impl Fn(&UsageGroup) -> f64,
) -> Chart {
    let start = match since {
        Some(s) => s.div_euclid(step) * step,
        None => {
            cells
                .iter()
                .map(|c| c.hour)
                .min()
                .unwrap_or(now)
                .div_euclid(step)
                * step
        }
    };
    let n = ((now - start).div_euclid(step) + 1).max(1) as usize;
    let mut per: HashMap<String, Vec<f64>> = HashMap::new();
    for c in cells {
        if c.hour + HOUR_NS <= start {
            continue;
        }
        let at = ((c.hour.max(start) - start) / step) as usize;
        if at >= n {
            continue;
        }
        per.entry(name(c)).or_insert_with(|| vec![0.0; n])[at] += value(c.usage);
    }
    let mut named: Vec<(String, Vec<f64>)> = per
        .into_iter()
        .filter(|(_, v)| v.iter().any(|x| *x > 0.0))
        .collect();
    named.sort_by(|a, b| {
        let sum = |v: &[f64]| v.iter().sum::<f64>();
        sum(&b.1).total_cmp(&sum(&a.1)).then(a.0.cmp(&b.0))
    });
    if named.len() > SERIES {
        let rest: Vec<(String, Vec<f64>)> = named.split_off(SERIES - 1);
        let mut other = vec![0.0; n];
        for (_, v) in rest {
            for (o, x) in other.iter_mut().zip(v) {
                *o += x;
            }
        }
        named.push(("other".to_string(), other));
    }
    let series = named.iter().map(|(k, _)| k.clone()).collect();
    let buckets = (0..n)
        .map(|i| {
            let at = start + i as i64 * step;
            (at, named.iter().map(|(_, v)| v[i]).collect())
        })
        .collect();
    Chart {
        series,
        buckets,
        step_ns: step,
    }
}

/// Sessions with open or recovered spans, or a health condition, newest
/// activity first: the first [`ATTENTION`] and how many more.
fn attention(kept: &Kept, named: &[Named]) -> (Vec<Named>, usize) {
    let mut said: HashMap<&SessionRef, Vec<String>> = HashMap::new();
    for c in &kept.conditions {
        if let Some(s) = &c.session {
            let code = c.code.strip_prefix("reported:").unwrap_or(&c.code);
            let reasons = said.entry(s).or_default();
            if !reasons.iter().any(|r| r == code) {
                reasons.push(code.to_string());
            }
        }
    }
    let mut out: Vec<Named> = named
        .iter()
        .filter_map(|n| {
            let s = &n.summary;
            let mut reasons = Vec::new();
            if s.spans.open > 0 {
                reasons.push(format!("{} open spans", s.spans.open));
            }
            if s.spans.recovered > 0 {
                reasons.push(format!("{} recovered spans", s.spans.recovered));
            }
            reasons.extend(said.get(&s.session).cloned().unwrap_or_default());
            (!reasons.is_empty()).then(|| Named {
                reasons,
                ..n.clone()
            })
        })
        .collect();
    out.sort_by_key(|n| std::cmp::Reverse(n.summary.last_unix_ns));
    let more = out.len().saturating_sub(ATTENTION);
    out.truncate(ATTENTION);
    (out, more)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_are_named_and_bad_ones_refused() {
        for r in Range::ALL {
            assert_eq!(Range::parse(r.as_str()), Ok(r));
        }
        let bad = Range::parse("1y").unwrap_err();
        assert!(
            bad.contains("\"1y\"") && bad.contains("24h, 7d, 30d, all"),
            "{bad}"
        );
        assert_eq!(Range::Day.since(2 * DAY_NS), Some(DAY_NS));
        assert_eq!(Range::All.since(DAY_NS), None);
        // 2026-12-06 is a Sunday: its week began on Monday 2026-11-30.
        let now = crate::clock::parse_instant("2026-12-06T13:00:00Z").unwrap();
        let monday = crate::clock::parse_instant("2026-11-30T00:00:00Z").unwrap() / DAY_NS;
        assert_eq!(heat_start(now), monday - (WEEKS - 1) * 7);
    }
}
