//! The home page, a dashboard over a chosen range (`?range=24h|7d|30d|all`):
//! stat cards, an activity heatmap, tokens and cost over time split by
//! model, agent and project (inline SVG, drawn here), the top sessions
//! and the sessions that need attention. Its body is marked `data-live`,
//! so the live script swaps in a fresh copy when the ledger grows.

use maud::{Markup, html};

use super::sessions::{label, project_cell};
use super::{Nav, document, dollars, session_href, short_count, when};
use crate::clock::format_time;
use crate::serve::data::dashboard::{
    Chart, DAY_NS, Dashboard, Named, Range, SPLITS, WEEKS, heat_start,
};

pub(crate) fn render(d: Option<&Dashboard>, range: Range) -> String {
    let body = html! {
        div.dash-head {
            h1 { "Dashboard" }
            nav.range aria-label="range" {
                @for r in Range::ALL {
                    a href={ "/?range=" (r.as_str()) } aria-current=[(r == range).then_some("page")] {
                        (r.as_str())
                    }
                }
            }
        }
        div #dash data-live="dash" {
            @match d {
                None => p { "No ledger yet: run " code { "harnery finalize" } " (or leave "
                    code { "harnery serve" } " running) once an agent has run with the hooks." },
                Some(d) => (dashboard(d)),
            }
        }
    };
    document("harnery: dashboard", Nav::Home, false, body)
}

fn dashboard(d: &Dashboard) -> Markup {
    html! {
        (cards(d))
        div.pair {
            section.panel aria-label="activity" {
                h2 { "Activity" }
                (heatmap(d))
            }
            section.panel aria-label="top sessions" {
                h2 { "Top sessions " small { "(" (d.range.label()) ")" } }
                div.tops {
                    (top("by cost", &d.top_cost, cost_of))
                    (top("by tokens", &d.top_tokens, |n| short_count(n.tokens)))
                    (top("by tool calls", &d.top_tools, |n| tools(n).to_string()))
                }
            }
        }
        section aria-label="over time" {
            h2 { "Over time " small { "(" (d.range.label()) "; cost priced with " (d.prices) ")" } }
            div.charts-grid {
                @for (i, split) in SPLITS.iter().enumerate() {
                    (chart(&format!("tokens by {split}"), &d.tokens_by[i], false))
                    (chart(&format!("cost by {split}"), &d.cost_by[i], true))
                }
            }
        }
        (attention(d))
    }
}

fn cards(d: &Dashboard) -> Markup {
    let c = &d.cards;
    let card = |label: &str, value: String, note: String| {
        html! { div.card { span.value { (value) } span.label { (label) } @if !note.is_empty() { span.note { (note) } } } }
    };
    html! {
        section.cards aria-label={ "figures, " (d.range.label()) } {
            (card("sessions", short_count(c.sessions), format!("active {}", d.range.during())))
            (card("turns", short_count(c.turns), String::new()))
            (card("tool calls", short_count(c.tool_calls), String::new()))
            (card("failures", short_count(c.failures), "tool calls that failed".into()))
            (card("tokens", short_count(c.tokens), format!("in + out; {} cache", short_count(c.cache_tokens))))
            (card("cost", dollars(c.priced_cost), match c.reported_cost {
                Some(r) => format!("priced; the agents reported {}", dollars(Some(r))),
                None => "priced with the bundled table".into(),
            }))
        }
    }
}

fn tools(n: &Named) -> u64 {
    let s = &n.summary.spans;
    s.open + s.closed_native + s.recovered
}

fn cost_of(n: &Named) -> String {
    match (n.priced_cost, n.reported_cost) {
        (Some(p), _) => dollars(Some(p)),
        (None, r) => dollars(r),
    }
}

fn top(title: &str, rows: &[Named], value: impl Fn(&Named) -> String) -> Markup {
    html! {
        div.top {
            h3 { (title) }
            @if rows.is_empty() { p.muted { "none in this range" } }
            @else {
                ol { @for n in rows { li {
                    a href=(session_href(&n.summary.session.session_id)) { (label(&n.summary)) }
                    span.fig { (value(n)) }
                } } }
            }
        }
    }
}

/// Weeks as columns (Monday at the top), a cell a day, shaded by the
/// sessions that started that day.
fn heatmap(d: &Dashboard) -> Markup {
    const CELL: i64 = 13;
    let start = heat_start(d.now);
    let today = d.now.div_euclid(DAY_NS);
    let max = d.started.values().copied().max().unwrap_or(0).max(1);
    let width = WEEKS * CELL + 30;
    let height = 7 * CELL + 18;
    let days = (start..=today).map(|day| {
        let n = d.started.get(&day).copied().unwrap_or(0);
        let calls = d.calls.get(&day).copied().unwrap_or(0);
        let level = if n == 0 {
            0
        } else {
            1 + (n * 3).div_ceil(max).min(3)
        };
        (day, n, calls, level)
    });
    html! {
        svg.heat role="img" aria-label="sessions started per day, the last 26 weeks"
            viewBox={ "0 0 " (width) " " (height) } width=(width) height=(height)
            xmlns="http://www.w3.org/2000/svg" {
            @for (i, name) in ["Mon", "Wed", "Fri"].iter().enumerate() {
                text.axis x="0" y=((i as i64 * 2 + 1) * CELL + 10) { (name) }
            }
            @for (day, n, calls, level) in days {
                @let col = (day - start) / 7;
                @let row = (day - start) % 7;
                rect class={ "h" (level) } x=(30 + col * CELL) y=(row * CELL) width=(CELL - 2) height=(CELL - 2) rx="2" {
                    title { (date(day)) ": " (n) " sessions started, " (calls) " model calls" }
                }
            }
            text.axis x="30" y=(7 * CELL + 14) { (date(start)) }
            text.axis x=(width) y=(7 * CELL + 14) text-anchor="end" { "today" }
        }
        p.muted.small { "a square a day, darker for more sessions started; hover for the figures" }
    }
}

fn date(day: i64) -> String {
    let stamp = format_time(day * DAY_NS);
    stamp.get(..10).unwrap_or(&stamp).to_string()
}

/// Stacked bars over time, one colour per series, the legend below.
fn chart(title: &str, c: &Chart, money: bool) -> Markup {
    const W: f64 = 560.0;
    const H: f64 = 150.0;
    const LEFT: f64 = 52.0;
    const TOP: f64 = 8.0;
    const PLOT_H: f64 = 118.0;
    let show = |v: f64| match money {
        true => dollars(Some(v)),
        false => short_count(v.round() as u64),
    };
    let max = c
        .buckets
        .iter()
        .map(|(_, v)| v.iter().sum::<f64>())
        .fold(0.0f64, f64::max);
    let n = c.buckets.len().max(1) as f64;
    let slot = (W - LEFT - 4.0) / n;
    let bar = (slot * 0.8).max(1.0);
    let hour = c.step_ns < DAY_NS;
    let at = |t: i64| {
        let stamp = format_time(t);
        match hour {
            true => stamp.get(11..16).unwrap_or("").to_string(),
            false => stamp.get(5..10).unwrap_or("").to_string(),
        }
    };
    html! {
        figure.chart {
            figcaption { (title) }
            @if max <= 0.0 { p.muted { "nothing in this range" } }
            @else {
                svg.bars role="img" aria-label=(title) viewBox={ "0 0 " (W) " " (H) }
                    xmlns="http://www.w3.org/2000/svg" {
                    line.grid x1=(LEFT) x2=(W) y1=(TOP) y2=(TOP) {}
                    line.grid x1=(LEFT) x2=(W) y1=(TOP + PLOT_H) y2=(TOP + PLOT_H) {}
                    text.axis x=(LEFT - 4.0) y=(TOP + 8.0) text-anchor="end" { (show(max)) }
                    text.axis x=(LEFT - 4.0) y=(TOP + PLOT_H) text-anchor="end" { "0" }
                    @for (i, (t, values)) in c.buckets.iter().enumerate() {
                        @let x = LEFT + i as f64 * slot + (slot - bar) / 2.0;
                        g {
                            title { (at(*t)) ": " @for (k, v) in values.iter().enumerate() {
                                @if *v > 0.0 { (c.series[k]) " " (show(*v)) "; " }
                            } }
                            @for (k, y, h) in stack(values, max, TOP + PLOT_H, PLOT_H) {
                                rect class={ "c" (k) } x=(format!("{x:.1}")) y=(format!("{y:.1}"))
                                    width=(format!("{bar:.1}")) height=(format!("{h:.1}")) {}
                            }
                        }
                    }
                    @if let Some((first, _)) = c.buckets.first() {
                        text.axis x=(LEFT) y=(H - 6.0) { (at(*first)) }
                    }
                    @if let Some((last, _)) = c.buckets.last() {
                        text.axis x=(W) y=(H - 6.0) text-anchor="end" { (at(*last)) }
                    }
                }
                ul.keys {
                    @for (k, name) in c.series.iter().enumerate() {
                        li { span class={ "sw c" (k) } {} (name) }
                    }
                }
            }
        }
    }
}

/// A bar's pieces, bottom up: series, top and height of each non-zero value.
fn stack(values: &[f64], max: f64, base: f64, height: f64) -> Vec<(usize, f64, f64)> {
    let mut y = base;
    let mut out = Vec::new();
    for (k, v) in values.iter().enumerate().filter(|(_, v)| **v > 0.0) {
        let h = v / max * height;
        y -= h;
        out.push((k, y, h));
    }
    out
}

fn attention(d: &Dashboard) -> Markup {
    html! {
        section aria-label="needs attention" {
            h2 { "Needs attention " small { "(" (d.range.label()) ")" } }
            @if d.attention.is_empty() { p.muted { "Nothing: no open or recovered span, no health condition." } }
            @else {
                table.list.attention {
                    colgroup { col; col.c-project; col.c-agent; col.c-when; col.c-why; }
                    thead { tr { th { "session" } th { "project" } th { "agent" } th { "last active" } th { "why" } } }
                    tbody { @for n in &d.attention { tr {
                        td.title { a href=(session_href(&n.summary.session.session_id)) { (label(&n.summary)) } }
                        td { (project_cell(n.summary.project.as_deref())) }
                        td { (n.summary.session.adapter.as_str()) }
                        td { (when(n.summary.last_unix_ns, d.now)) }
                        td { @for (i, r) in n.reasons.iter().enumerate() {
                            @if i > 0 { ", " } code { (r) }
                        } }
                    } } }
                }
                @if d.attention_more > 0 {
                    p { "and " (d.attention_more) " more: see " a href="/health" { "Health" } }
                }
            }
        }
    }
}
