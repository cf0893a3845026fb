//! `harnery fleet search --from URL QUERY [--host H] [--session S]
//! [--kind K,…] [--tool T] [--failed] [--since T] [--until T] [--limit N]
//! [--json]`: local search's query over the text every host shipped.
//! Prints hits as `harnery search` does, each line led by its host (one
//! JSON object a line with `--json`: local search's fields plus `host`),
//! and names on stderr the hosts that shipped no text to search.

use std::io::{IsTerminal, Write};

use super::search::{head, marked};
use super::{CmdResult, Outcome};
use harnery::fleet::search::{FleetQuery, search};
use harnery::search::{DEFAULT_LIMIT, Kind};
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
    /// Only this session (its id, its first characters, or adapter/id).
    #[arg(long)]
    session: Option<String>,
    /// Only events at or after this RFC 3339 time.
    #[arg(long, value_name = "RFC3339", value_parser = super::parse_instant)]
    since: Option<i64>,
    /// Only events at or before this RFC 3339 time.
    #[arg(long, value_name = "RFC3339", value_parser = super::parse_instant)]
    until: Option<i64>,
    /// Only these kinds of text (repeat, or a comma list).
    #[arg(
        long,
        value_name = "prompt|message|reasoning|tool-input|tool-output|command",
        value_delimiter = ','
    )]
    kind: Vec<Kind>,
    /// Only this tool's inputs and outputs (any case).
    #[arg(long, value_name = "NAME")]
    tool: Option<String>,
    /// Only text of tool and command spans whose outcome was a failure.
    #[arg(long)]
    failed: bool,
    /// At most this many hits.
    #[arg(long, default_value_t = DEFAULT_LIMIT)]
    limit: usize,
}

/// Run the search over `client` (connected to `a.from`).
pub fn run(a: SearchArgs, client: &mut postgres::Client) -> CmdResult {
    let q = FleetQuery {
        text: a.query.join(" "),
        host: a.host.clone(),
        session: a.session.clone(),
        since_unix_ns: a.since,
        until_unix_ns: a.until,
        kinds: a.kind.clone(),
        tool: a.tool.clone(),
        failed: a.failed,
        limit: a.limit,
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
        let colour = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
        for h in &found.hits {
            writeln!(out, "{}  {}", escape(&h.host), head(&h.hit, true))?;
            writeln!(out, "    {}", marked(&h.hit, colour))?;
        }
    }
    out.flush()?;
    Ok(Outcome::Clean)
}
