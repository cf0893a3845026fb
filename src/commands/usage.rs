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

use super::{CmdResult, EpochArg, Outcome};
use harnery::home::Home;
use harnery::report::epochs::Epochs;
use harnery::report::usage::GroupBy;
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
    /// Only sessions imported by `harnery import` (`only`), or leave them
    /// out (`exclude`); by default both count, the imported ones marked.
    #[arg(long, value_name = "only|exclude")]
    imported: Option<ImportedFilter>,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    epoch: EpochArg,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum ImportedFilter {
    Only,
    Exclude,
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
        imported: args.imported.map(|f| f == ImportedFilter::Only),
    };
    let (tally, damaged) = tally_epochs(&epochs, &ask, prices)?;
    let mut out = harnery::terminal::stdout(args.json);
    if args.json {
        let doc = UsageDoc::of(&tally).to_json(&label);
        writeln!(out, "{}", serde_json::to_string_pretty(&doc)?)?;
    } else {
        write!(out, "{}", tally.text())?;
        if tally.total.records > 0 {
            writeln!(out, "priced_cost at {label} (--prices FILE for your own)")?;
        }
    }
    out.flush()?;
    let set_aside = epochs.report_set_aside("usage");
    Ok(Outcome::problems_if(damaged || set_aside))
}
