//! The table `harnery usage` prints for a person: one row per group and
//! the total, the notes on what the totals leave unsaid, and the agents'
//! own totals beside them. A kind or a cost no record reported prints as
//! `-`, never as zero. (The JSON form is [`super::usage_doc`].)

use std::fmt::Write;

use super::timeline::count;
use super::usage::{GroupBy, UsageGroup, UsageTally};

impl UsageTally {
    /// The usage table, in lines.
    pub fn text(&self) -> String {
        let mut out = String::new();
        if self.total.records == 0 && self.total.agent_totals.is_none() {
            out.push_str("no usage recorded (no usage.reported events selected)\n");
            return out;
        }
        let by = match self.by {
            GroupBy::Session => "session",
            GroupBy::Day => "day",
            GroupBy::Model => "model",
            GroupBy::HourModelSession => "hour, model, session",
        };
        let mut head = format!(
            "{by:<40} {:>7} {:>11} {:>11} {:>11} {:>11} {:>15}",
            "records", "input", "output", "cache_read", "cache_write", "reported_cost"
        );
        if self.priced() {
            head.push_str(&format!(" {:>13}", "priced_cost"));
        }
        let _ = writeln!(out, "{}", head.trim_end());
        for (key, group) in &self.groups {
            group_line(&mut out, key, group, self.priced());
        }
        group_line(&mut out, "total", &self.total, self.priced());
        notes(&mut out, &self.total);
        agent_totals(&mut out, by, self);
        out
    }
}

/// The agents' own totals (Copilot's `session.shutdown`), a table of
/// their own: they restate the calls above, so they are never added in.
fn agent_totals(out: &mut String, by: &str, tally: &UsageTally) {
    let Some(all) = &tally.total.agent_totals else {
        return;
    };
    let _ = writeln!(
        out,
        "\nthe agents' own totals (latest per session and model, from {} summaries; \
         not added to the rows above)",
        all.summaries
    );
    let _ = writeln!(
        out,
        "{by:<40} {:>9} {:>16} {:>11} {:>11} {:>11}",
        "requests", "premium_requests", "input", "output", "cache_read"
    );
    let rows = tally.groups.iter().map(|(k, g)| (k.as_str(), g));
    for (key, g) in rows.chain([("total", &tally.total)]) {
        let Some(t) = &g.agent_totals else { continue };
        let _ = writeln!(
            out,
            "{key:<40} {:>9} {:>16} {:>11} {:>11} {:>11}",
            count(t.requests),
            money(t.premium_requests),
            count(t.input),
            count(t.output),
            count(t.cache_read),
        );
    }
}

/// One group's row.
fn group_line(out: &mut String, key: &str, g: &UsageGroup, priced: bool) {
    let t = &g.tokens;
    let _ = write!(
        out,
        "{key:<40} {:>7} {:>11} {:>11} {:>11} {:>11} {:>15}",
        g.records,
        count(t.input),
        count(t.output),
        count(t.cache_read),
        count(t.cache_write),
        money(g.reported_cost),
    );
    if priced {
        let _ = write!(out, " {:>13}", money(g.priced_cost));
    }
    out.push('\n');
}

/// What the totals leave unsaid: how much of the cost was reported, and
/// what the prices could not price.
fn notes(out: &mut String, total: &UsageGroup) {
    let _ = writeln!(
        out,
        "reported_cost is the agents' own figure, from {} of {} records",
        total.records_with_reported_cost, total.records
    );
    if total.inherited_records > 0 {
        let _ = writeln!(
            out,
            "inherited: {} records of model calls already counted (a fork's or a restored \
             session's copy of its parent's messages, or a record read twice), not counted again",
            total.inherited_records
        );
    }
    if total.shared_id_records > 0 {
        let _ = writeln!(
            out,
            "shared ids: {} records of calls whose id an unrelated session reported too, \
             counted in each (`harnery health` names them)",
            total.shared_id_records
        );
    }
    if total.imported_records > 0 {
        let _ = writeln!(
            out,
            "imported: {} records of sessions read by `harnery import` from the agents' own \
             records (class imported: no hook saw them), counted above",
            total.imported_records
        );
    }
    if total.records_with_unreadable_cost > 0 {
        let _ = writeln!(
            out,
            "{} records carried a cost that is not a number (left out)",
            total.records_with_unreadable_cost
        );
    }
    if let Some(n) = total.unpriced_records.filter(|n| *n > 0) {
        let models: Vec<&str> = total.unpriced_models.iter().map(String::as_str).collect();
        let _ = writeln!(
            out,
            "unpriced: {n} records (models without a price for what they report: {})",
            models.join(", ")
        );
    }
}

/// A cost, to six decimal places with trailing zeros dropped, or `-`.
pub(crate) fn money(cost: Option<f64>) -> String {
    let Some(c) = cost else {
        return "-".into();
    };
    let text = format!("{c:.6}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}
