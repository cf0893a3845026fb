//! `harnery usage [--session S] [--by session|day|model] [--since T]
//! [--prices FILE] [--json] [--epoch E]`: model usage as the agents
//! reported it.
//!
//! Token counts by kind and the agent's own cost, summed per group; a kind
//! or a cost no record reported prints as `-`, never as zero. Beside the
//! agents' own `reported_cost`, a separate `priced_cost` column applies a
//! price table to the records it covers, naming the records it does not
//! cover as unpriced: the table shipped with harnery (dated, from LiteLLM's
//! model price list), or the user's with `--prices FILE`. The rows stream through [`harnery::report::usage_epochs::tally_epochs`];
//! a usage row that cannot be read is named on stderr and the exit is 1.

use std::io::Write;
use std::path::PathBuf;

use super::{CmdResult, EpochArg, Outcome, or_dash};
use harnery::home::Home;
use harnery::report::epochs::Epochs;
use harnery::report::usage::{GroupBy, UsageGroup, UsageTally};
use harnery::report::usage_doc::UsageDoc;
use harnery::report::usage_epochs::{UsageAsk, prices, tally_epochs};

#[derive(Debug, clap::Args)]
#[command(
    after_help = "The prices file is TOML, prices per million tokens, e.g.\n\
    [models.\"claude-sonnet-4-5\"]\n\
    input = 3.0\n\
    output = 15.0\n\
    cache_read = 0.30\n\
    cache_write = 3.75\n\
    A model not in the file, or a kind of token without a price, is unpriced."
)]
pub struct Args {
    /// Only this session (its id, a unique prefix, or adapter/id).
    #[arg(long)]
    session: Option<String>,
    /// Group by session, UTC day, or model.
    #[arg(long, value_name = "session|day|model", default_value = "session")]
    by: GroupBy,
    /// Only usage recorded at or after this RFC 3339 time.
    #[arg(long, value_name = "RFC3339", value_parser = super::parse_instant)]
    since: Option<i64>,
    /// Your own prices (TOML, per model, per million tokens of each kind):
    /// adds a separate `priced_cost`, never mixed with reported cost.
    #[arg(long, value_name = "FILE")]
    prices: Option<PathBuf>,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    epoch: EpochArg,
}

pub fn run(args: Args) -> CmdResult {
    let prices = prices(args.prices.as_deref())?;
    let label = prices.label();
    let home = Home::from_env()?;
    let epochs = Epochs::open(&home, &args.epoch.epoch)?;
    epochs.report_unreadable("usage")?;
    let ask = UsageAsk {
        session: args.session.as_deref(),
        by: args.by,
        since_unix_ns: args.since,
    };
    let (tally, damaged) = tally_epochs(&epochs, &ask, prices)?;
    let mut out = harnery::terminal::stdout(args.json);
    if args.json {
        let doc = UsageDoc::of(&tally).to_json(&label);
        writeln!(out, "{}", serde_json::to_string_pretty(&doc)?)?;
    } else {
        write_table(&mut out, &tally)?;
        if tally.total.records > 0 {
            writeln!(out, "priced_cost at {label} (--prices FILE for your own)")?;
        }
    }
    out.flush()?;
    let set_aside = epochs.report_set_aside("usage");
    Ok(Outcome::problems_if(damaged || set_aside))
}

fn write_table(out: &mut impl Write, tally: &UsageTally) -> std::io::Result<()> {
    if tally.total.records == 0 && tally.total.agent_totals.is_none() {
        return writeln!(out, "no usage recorded (no usage.reported events selected)");
    }
    let by = match tally.by {
        GroupBy::Session => "session",
        GroupBy::Day => "day",
        GroupBy::Model => "model",
    };
    let mut head = format!(
        "{by:<40} {:>7} {:>11} {:>11} {:>11} {:>11} {:>15}",
        "records", "input", "output", "cache_read", "cache_write", "reported_cost"
    );
    if tally.priced() {
        head.push_str(&format!(" {:>13}", "priced_cost"));
    }
    writeln!(out, "{}", head.trim_end())?;
    for (key, group) in &tally.groups {
        write_group(out, key, group, tally.priced())?;
    }
    write_group(out, "total", &tally.total, tally.priced())?;
    write_notes(out, &tally.total)?;
    write_agent_totals(out, by, tally)
}

/// The agents' own totals (Copilot's `session.shutdown`), a table of
/// their own: they restate the calls above, so they are never added in.
fn write_agent_totals(out: &mut impl Write, by: &str, tally: &UsageTally) -> std::io::Result<()> {
    let Some(all) = &tally.total.agent_totals else {
        return Ok(());
    };
    writeln!(
        out,
        "\nthe agents' own totals (latest per session and model, from {} summaries; \
         not added to the rows above)",
        all.summaries
    )?;
    writeln!(
        out,
        "{by:<40} {:>9} {:>16} {:>11} {:>11} {:>11}",
        "requests", "premium_requests", "input", "output", "cache_read"
    )?;
    let rows = tally.groups.iter().map(|(k, g)| (k.as_str(), g));
    for (key, g) in rows.chain([("total", &tally.total)]) {
        let Some(t) = &g.agent_totals else { continue };
        writeln!(
            out,
            "{key:<40} {:>9} {:>16} {:>11} {:>11} {:>11}",
            or_dash(t.requests),
            money(t.premium_requests),
            or_dash(t.input),
            or_dash(t.output),
            or_dash(t.cache_read),
        )?;
    }
    Ok(())
}

fn write_group(
    out: &mut impl Write,
    key: &str,
    g: &UsageGroup,
    priced: bool,
) -> std::io::Result<()> {
    let t = &g.tokens;
    let mut line = format!(
        "{key:<40} {:>7} {:>11} {:>11} {:>11} {:>11} {:>15}",
        g.records,
        or_dash(t.input),
        or_dash(t.output),
        or_dash(t.cache_read),
        or_dash(t.cache_write),
        money(g.reported_cost),
    );
    if priced {
        line.push_str(&format!(" {:>13}", money(g.priced_cost)));
    }
    writeln!(out, "{line}")
}

/// What the totals leave unsaid: how much of the cost was reported, and
/// what the prices could not price.
fn write_notes(out: &mut impl Write, total: &UsageGroup) -> std::io::Result<()> {
    writeln!(
        out,
        "reported_cost is the agents' own figure, from {} of {} records",
        total.records_with_reported_cost, total.records
    )?;
    if total.inherited_records > 0 {
        writeln!(
            out,
            "inherited: {} records of model calls already counted (a fork's or a restored \
             session's copy of its parent's messages, or a record read twice), not counted again",
            total.inherited_records
        )?;
    }
    if total.shared_id_records > 0 {
        writeln!(
            out,
            "shared ids: {} records of calls whose id an unrelated session reported too, \
             counted in each (`harnery health` names them)",
            total.shared_id_records
        )?;
    }
    if total.records_with_unreadable_cost > 0 {
        writeln!(
            out,
            "{} records carried a cost that is not a number (left out)",
            total.records_with_unreadable_cost
        )?;
    }
    if let Some(n) = total.unpriced_records.filter(|n| *n > 0) {
        let models: Vec<&str> = total.unpriced_models.iter().map(String::as_str).collect();
        writeln!(
            out,
            "unpriced: {n} records (models without a price for what they report: {})",
            models.join(", ")
        )?;
    }
    Ok(())
}

/// A cost, to six decimal places with trailing zeros dropped, or `-`.
fn money(cost: Option<f64>) -> String {
    let Some(c) = cost else {
        return "-".into();
    };
    let text = format!("{c:.6}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}
