//! The usage page: tokens and cost per day, per model and per session,
//! as inline SVG bar charts (drawn here, nothing fetched) over tables of
//! the figures. Reported cost (the agents' own) and priced cost (the
//! bundled price table) are always two series, never summed.

use maud::{Markup, html};

use super::{Nav, count, document, money, session_href};
use crate::report::usage::{UsageGroup, UsageTally};
use crate::serve::data::UsageViews;

/// Rows of a chart: a label and one value per series.
struct Bar<'a> {
    label: &'a str,
    values: [f64; 2],
}

const BAR_PX: usize = 18;
const LABEL_PX: usize = 260;
const PLOT_PX: usize = 480;
/// Sessions shown in the per-session chart (those with the most tokens).
const TOP_SESSIONS: usize = 20;

pub(crate) fn render(u: &UsageViews) -> String {
    let body = html! {
        h1 { "Usage" }
        p { "Tokens as the agents reported them. Reported cost is the agents' own figure; \
             priced cost applies " (u.prices) "; they are shown apart, never added." }
        (section("Per day", &u.by_day, None, false))
        (section("Per model", &u.by_model, None, false))
        (section("Per session", &u.by_session, Some(TOP_SESSIONS), true))
    };
    document("harnery: usage", Nav::Usage, false, body)
}

fn section(title: &str, tally: &UsageTally, top: Option<usize>, links: bool) -> Markup {
    let mut groups: Vec<(&String, &UsageGroup)> = tally.groups.iter().collect();
    if let Some(n) = top {
        groups.sort_by_key(|(_, g)| std::cmp::Reverse(tokens(g)));
        groups.truncate(n);
    }
    let token_bars: Vec<Bar> = groups
        .iter()
        .map(|(k, g)| Bar {
            label: k,
            values: [
                g.tokens.input.unwrap_or(0) as f64,
                g.tokens.output.unwrap_or(0) as f64,
            ],
        })
        .collect();
    let cost_bars: Vec<Bar> = groups
        .iter()
        .map(|(k, g)| Bar {
            label: k,
            values: [g.reported_cost.unwrap_or(0.0), g.priced_cost.unwrap_or(0.0)],
        })
        .collect();
    html! {
        section.usage aria-label=(title) {
            h2 { (title) @if let Some(n) = top { " (the " (n) " with the most tokens)" } }
            @if groups.is_empty() { p { "no usage recorded" } }
            @else {
                div.charts {
                    (chart(&format!("{title}: tokens"), &token_bars, ["input", "output"], true))
                    (chart(&format!("{title}: cost"), &cost_bars, ["reported cost", "priced cost"], false))
                }
                (table(&groups, links))
            }
        }
    }
}

fn tokens(g: &UsageGroup) -> u64 {
    g.tokens.input.unwrap_or(0) + g.tokens.output.unwrap_or(0)
}

/// A horizontal bar chart: per row, the first series stacked before the
/// second when `stacked` (tokens in, tokens out), else two thin bars.
fn chart(title: &str, bars: &[Bar], series: [&str; 2], stacked: bool) -> Markup {
    let max = bars
        .iter()
        .map(|b| {
            if stacked {
                b.values[0] + b.values[1]
            } else {
                b.values[0].max(b.values[1])
            }
        })
        .fold(0.0f64, f64::max)
        .max(f64::MIN_POSITIVE);
    let scale = |v: f64| v / max * PLOT_PX as f64;
    let height = (bars.len() + 2) * BAR_PX;
    let width = LABEL_PX + PLOT_PX + 90;
    html! {
        svg.chart role="img" aria-label=(title) width=(width) height=(height)
            viewBox={ "0 0 " (width) " " (height) } xmlns="http://www.w3.org/2000/svg" {
            title { (title) }
            @for (i, b) in bars.iter().enumerate() {
                @let y = i * BAR_PX;
                text.label x=(LABEL_PX - 6) y=(y + 13) text-anchor="end" { (clip(b.label)) }
                @if stacked {
                    rect.s0 x=(LABEL_PX) y=(y + 3) width=(format!("{:.1}", scale(b.values[0]))) height=(BAR_PX - 6) {}
                    rect.s1 x=(format!("{:.1}", LABEL_PX as f64 + scale(b.values[0]))) y=(y + 3)
                        width=(format!("{:.1}", scale(b.values[1]))) height=(BAR_PX - 6) {}
                    text.value x=(format!("{:.1}", LABEL_PX as f64 + scale(b.values[0] + b.values[1]) + 4.0)) y=(y + 13) {
                        (b.values[0] + b.values[1])
                    }
                } @else {
                    rect.s0 x=(LABEL_PX) y=(y + 2) width=(format!("{:.1}", scale(b.values[0]))) height=(BAR_PX / 2 - 2) {}
                    rect.s1 x=(LABEL_PX) y=(y + BAR_PX / 2) width=(format!("{:.1}", scale(b.values[1]))) height=(BAR_PX / 2 - 2) {}
                }
            }
            @let y = bars.len() * BAR_PX + 6;
            rect.s0 x=(LABEL_PX) y=(y) width="10" height="10" {}
            text.legend x=(LABEL_PX + 14) y=(y + 9) { (series[0]) }
            rect.s1 x=(LABEL_PX + 140) y=(y) width="10" height="10" {}
            text.legend x=(LABEL_PX + 154) y=(y + 9) { (series[1]) }
        }
    }
}

/// A label short enough for the chart's margin.
fn clip(label: &str) -> String {
    match label.char_indices().nth(36) {
        Some((at, _)) => format!("{}…", &label[..at]),
        None => label.to_string(),
    }
}

fn table(groups: &[(&String, &UsageGroup)], links: bool) -> Markup {
    html! {
        table.usage {
            thead { tr {
                th { "key" } th.n { "records" } th.n { "input" } th.n { "output" }
                th.n { "cache read" } th.n { "cache write" } th.n { "reported cost" } th.n { "priced cost" }
            } }
            tbody { @for (k, g) in groups { tr {
                td { @if links { a href=(session_href(k)) { code { (k) } } } @else { (k) } }
                td.n { (g.records) } td.n { (count(g.tokens.input)) } td.n { (count(g.tokens.output)) }
                td.n { (count(g.tokens.cache_read)) } td.n { (count(g.tokens.cache_write)) }
                td.n { (money(g.reported_cost)) } td.n { (money(g.priced_cost)) }
            } } }
        }
    }
}
