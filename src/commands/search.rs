//! `harnery search QUERY [--session S] [--adapter A] [--since T] [--until T]
//! [--kind K,…] [--tool NAME] [--failed] [--epoch E] [--limit N]
//! [--sort relevance|time] [--json] [--reindex]`: find what an agent said
//! or did. Parses, calls [`harnery::search`], prints: two lines a hit
//! (where, then the snippet with its matches marked, in colour only on a
//! terminal), or one JSON object a line with `--json`.

use std::io::{IsTerminal, Write};

use super::{CmdResult, EpochArg, Outcome, short};
use harnery::contract::AdapterId;
use harnery::home::Home;
use harnery::report::epochs::Epochs;
use harnery::search::{DEFAULT_LIMIT, Hit, Kind, Query, Sort};
use harnery::terminal::escape;

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Query syntax (all terms must match; case does not matter):\n  \
    word            the whole word\n  \
    pre*            a word starting with pre\n  \
    \"two words\"     the words next to each other\n  \
    src/ledger      text with punctuation: found anywhere, inside words too\n  \
    \"rm -rf\"        quoted text with punctuation: found anywhere\n  \
    *Effect         found anywhere, inside words too (useEffect)\n\
    A substring needs 3 characters or more. Put `--` before a query that starts with -\n\
    (harnery search -- --force). Exit 0 (also with no hits), 1 when a hit was left out because\n\
    its ledger row does not hold the text the index matched, 2 for a query that cannot run."
)]
pub struct Args {
    /// What to find (words, "phrases", pre*, substrings; see below).
    #[arg(required_unless_present = "reindex", num_args = 0..)]
    query: Vec<String>,
    /// Only sessions of this agent (claude-code, copilot, codex, gemini-cli, qwen-code or opencode).
    #[arg(long, value_parser = parse_adapter)]
    adapter: Option<AdapterId>,
    #[command(flatten)]
    filters: Filters,
    /// relevance (BM25, then newest) or time (newest first).
    #[arg(long, value_name = "relevance|time", default_value = "relevance")]
    sort: Sort,
    /// One JSON object per hit, per line (plain snippet and match byte ranges).
    #[arg(long)]
    json: bool,
    /// Make the index again from the selected epochs first.
    #[arg(long)]
    reindex: bool,
    #[command(flatten)]
    epoch: EpochArg,
}

/// The filters `search` and `fleet search` share.
#[derive(Debug, clap::Args)]
pub struct Filters {
    /// Only this session (its id, its first characters, or adapter/id).
    #[arg(long)]
    pub session: Option<String>,
    /// Only events at or after this RFC 3339 time.
    #[arg(long, value_name = "RFC3339", value_parser = super::parse_instant)]
    pub since: Option<i64>,
    /// Only events at or before this RFC 3339 time.
    #[arg(long, value_name = "RFC3339", value_parser = super::parse_instant)]
    pub until: Option<i64>,
    /// Only these kinds of text (repeat, or a comma list).
    #[arg(
        long,
        value_name = "prompt|message|reasoning|tool-input|tool-output|command",
        value_delimiter = ','
    )]
    pub kind: Vec<Kind>,
    /// Only this tool's inputs and outputs (any case).
    #[arg(long, value_name = "NAME")]
    pub tool: Option<String>,
    /// Only text of tool and command spans whose outcome was a failure.
    #[arg(long)]
    pub failed: bool,
    /// At most this many hits.
    #[arg(long, default_value_t = DEFAULT_LIMIT)]
    pub limit: usize,
}

fn parse_adapter(name: &str) -> Result<AdapterId, String> {
    AdapterId::parse(name)
        .ok_or_else(|| format!("{name:?} is not an adapter ({})", AdapterId::choices()))
}

pub fn run(args: Args) -> CmdResult {
    let home = Home::from_env()?;
    let epochs = Epochs::open(&home, &args.epoch.epoch)?;
    epochs.report_unreadable("search")?;
    if args.reindex {
        let rows = harnery::search::reindex(&home, &epochs)?;
        harnery::terminal::warn(&format!(
            "harnery search: indexed {rows} ledger rows of {} epoch(s)",
            epochs.open.len()
        ));
        if args.query.is_empty() {
            return Ok(Outcome::Clean);
        }
    }
    let answer = harnery::search::answer(&home, &epochs, &query(&args))?;
    let hits = &answer.hits;
    let mut out = harnery::terminal::stdout(true);
    if args.json {
        for hit in hits {
            writeln!(out, "{}", serde_json::to_string(hit)?)?;
        }
    } else {
        write_hits(&mut out, hits, epochs.tagged, colour())?;
    }
    out.flush()?;
    if answer.behind > 0 {
        harnery::terminal::warn(&format!(
            "harnery search: the index is {} ledger row(s) behind; the next finalize or search \
             catches up (index_behind in --json)",
            answer.behind
        ));
    }
    if answer.dropped > 0 {
        harnery::terminal::warn(&format!(
            "harnery search: {} hit(s) left out: the index's text is not in their ledger rows \
             (the index was altered or damaged; `harnery search --reindex` makes it again)",
            answer.dropped
        ));
    }
    let set_aside = epochs.report_set_aside("search");
    Ok(Outcome::problems_if(set_aside || answer.dropped > 0))
}

fn query(args: &Args) -> Query {
    Query {
        text: args.query.join(" "),
        session: args.filters.session.clone(),
        adapter: args.adapter,
        since_unix_ns: args.filters.since,
        until_unix_ns: args.filters.until,
        kinds: args.filters.kind.clone(),
        tool: args.filters.tool.clone(),
        failed: args.filters.failed,
        epoch: args.epoch.epoch.clone(),
        limit: args.filters.limit,
        sort: args.sort,
    }
}

fn write_hits(
    out: &mut dyn Write,
    hits: &[Hit],
    tagged: bool,
    colour: bool,
) -> std::io::Result<()> {
    if hits.is_empty() {
        return writeln!(out, "no hits");
    }
    for hit in hits {
        writeln!(out, "{}", head(hit, tagged))?;
        writeln!(out, "    {}", marked(hit, colour))?;
    }
    Ok(())
}

/// Where a hit is: session and offset, time, kind, tool and span, turn.
pub(super) fn head(hit: &Hit, tagged: bool) -> String {
    let mut line = String::new();
    if tagged {
        line.push_str(&format!("[{}] ", short(&hit.epoch)));
    }
    line.push_str(&format!(
        "{} @{}  {}  {}",
        escape(&hit.session_prefix),
        hit.offset,
        hit.time,
        hit.kind
    ));
    if let Some(tool) = &hit.tool {
        line.push_str(&format!(" {}", escape(tool)));
    }
    if let Some(state) = &hit.span_state {
        let outcome = hit.outcome.as_deref().unwrap_or("-");
        line.push_str(&format!(" [{state}, {}]", escape(outcome)));
    }
    if let Some(turn) = &hit.turn {
        line.push_str(&format!("  turn {}", escape(short(turn))));
    }
    if let Some(title) = &hit.title {
        line.push_str(&format!("  — {}", escape(&cut(title, TITLE_CHARS))));
    }
    line
}

/// The characters of a session's title a hit's head line shows.
const TITLE_CHARS: usize = 60;

/// `text` in at most `max` characters, `…` at its end when cut.
fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

/// Matches are marked in colour only on a terminal, and never with
/// `NO_COLOR` set.
pub(super) fn colour() -> bool {
    std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none()
}

/// The snippet, every piece escaped for a terminal; the matches in bold
/// red on a terminal, between `[` `]` elsewhere.
pub(super) fn marked(hit: &Hit, colour: bool) -> String {
    let (open, close) = match colour {
        true => ("\x1b[1;31m", "\x1b[0m"),
        false => ("[", "]"),
    };
    let text = &hit.snippet;
    let mut out = String::with_capacity(text.len() + 16);
    let mut at = 0;
    for &[start, end] in &hit.matches {
        let (Some(before), Some(inside)) = (text.get(at..start), text.get(start..end)) else {
            continue;
        };
        out.push_str(&escape(before));
        out.push_str(open);
        out.push_str(&escape(inside));
        out.push_str(close);
        at = end;
    }
    out.push_str(&escape(text.get(at..).unwrap_or("")));
    out
}
