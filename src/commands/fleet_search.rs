//! `harnery fleet search --from URL QUERY [--host H] [--session S]
//! [--kind K,…] [--tool T] [--failed] [--since T] [--until T] [--limit N]
//! [--json]`: local search's query over the text every host shipped.
//! Prints hits as `harnery search` does, each line led by its host (one
//! JSON object a line with `--json`: local search's fields plus `host`),
//! and names on stderr the hosts that shipped no text to search.

use std::io::Write;

use super::search::{Filters, colour, head, marked};
use super::{CmdResult, Outcome};
use harnery::fleet::search::{FleetQuery, search};
use harnery::terminal::escape;

#[derive(Debug, clap::Args)]
#[command(
    after_help = "The query syntax is `harnery search`'s (see harnery search --help).\n\
    Exit 0 (also with no hits), 2 for a query that cannot run."
)]
pub struct SearchArgs {
    /// What to find (words, "phrases", pre*, substrings).
    #[arg(required = true, num_args = 1..)]
    query: Vec<String>,
    /// The server: a libpq URL or key=value string (else ship.to, else PG*).
    #[arg(long, value_name = "URL")]
    pub from: Option<String>,
    /// Only this host (its id, as `harnery ship --status` shows it).
    #[arg(long, value_name = "HOST_ID")]
    host: Option<String>,
    /// One JSON object per hit, per line.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    filters: Filters,
}

/// Run the search over `client` (connected to `a.from`).
pub fn run(a: SearchArgs, client: &mut postgres::Client) -> CmdResult {
    let q = FleetQuery {
        text: a.query.join(" "),
        host: a.host.clone(),
        session: a.filters.session.clone(),
        since_unix_ns: a.filters.since,
        until_unix_ns: a.filters.until,
        kinds: a.filters.kind.clone(),
        tool: a.filters.tool.clone(),
        failed: a.filters.failed,
        limit: a.filters.limit,
    };
    let found = search(client, &q)?;
    if !found.not_searchable.is_empty() {
        harnery::terminal::warn(&format!(
            "harnery fleet search: not searchable (shipped with --content none): {}",
            found.not_searchable.join(", ")
        ));
    }
    let mut out = harnery::terminal::stdout(a.json);
    if a.json {
        for hit in &found.hits {
            writeln!(out, "{}", serde_json::to_string(hit)?)?;
        }
    } else if found.hits.is_empty() {
        writeln!(out, "no hits")?;
    } else {
        let colour = colour();
        for h in &found.hits {
            writeln!(out, "{}  {}", escape(&h.host), head(&h.hit, true))?;
            writeln!(out, "    {}", marked(&h.hit, colour))?;
        }
    }
    out.flush()?;
    Ok(Outcome::Clean)
}
