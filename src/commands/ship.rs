//! `harnery ship [--to URL] [--json]`: send this host's ledger (every
//! epoch, masked) to the central PostgreSQL; `--status` shows the host id
//! and what the server holds; `--dry-run` shows what would be masked and
//! sends nothing. From cron after `finalize`. The target is `--to`, else
//! `ship.to` in `HARNERY_HOME/config.toml`, else the `PG*` environment.

use std::io::Write;

use serde::Serialize;

use super::{CmdResult, Outcome};
use harnery::fleet::server::{ShipStatus, ship_status, ship_target};
use harnery::fleet::ship::{Content, DEFAULT_BATCH_ROWS, dry_run};
use harnery::fleet::{HostId, HostKey, Masker, ShipConfig, ShipError, Shipper};
use harnery::home::Home;

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Exit codes: 0 shipped (or nothing to ship); 1 an epoch this build cannot read was \
    left out; 2 the server is unreachable, refused, or this ledger forked (nothing local changes; \
    the next run catches up)."
)]
pub struct Args {
    /// The server: a libpq URL or key=value string (else ship.to, else PG* variables).
    #[arg(long, value_name = "URL")]
    pub to: Option<String>,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
    /// Show this host's id and what the server holds for it; send nothing.
    #[arg(long, conflicts_with = "dry_run")]
    pub status: bool,
    /// Show which rows would be masked, and how; connect to nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// What of each row leaves this host: every row as recorded, masked
    /// (secrets replaced), or metadata only (no prompts, messages, tool
    /// inputs or outputs, paths or commands). Rows already shipped stay as
    /// they were sent.
    #[arg(long, value_enum, default_value_t = ContentArg::Masked)]
    pub content: ContentArg,
    /// Event rows per server transaction.
    #[arg(long, default_value_t = DEFAULT_BATCH_ROWS, value_parser = clap::value_parser!(u64).range(1..))]
    pub batch_rows: u64,
}

pub fn run(args: Args) -> CmdResult {
    let home = Home::from_env()?;
    let config = ShipConfig::load(home.root())?;
    let key = HostKey::load_or_create(home.root())?;
    let masker = Masker::new(&config.rules, key.clone())?;
    if args.dry_run {
        return run_dry(&home, &masker, args.json);
    }
    let host = HostId::load_or_create(home.root())?;
    let text = args.to.as_deref().or(config.to.as_deref());
    if args.status {
        return print_status(&ship_status(&host, text)?, args.json);
    }
    let target = ship_target(&home, text)?;
    let shipper = Shipper {
        home: &home,
        host,
        key: &key,
        masker: &masker,
        content: args.content.into(),
        batch_rows: args.batch_rows,
    };
    let report = shipper.run(&target)?;
    let mut out = std::io::stdout().lock();
    if args.json {
        writeln!(out, "{}", serde_json::to_string(&report)?)?;
    } else {
        write!(out, "{}", report.text())?;
    }
    for (label, why) in &report.unreadable {
        eprintln!("harnery ship: epoch {label} left out: {why}");
    }
    Ok(Outcome::problems_if(!report.unreadable.is_empty()))
}

fn print_status(status: &ShipStatus, json: bool) -> CmdResult {
    let mut out = std::io::stdout().lock();
    if json {
        writeln!(out, "{}", serde_json::to_string(&status)?)?;
    } else {
        write!(out, "{}", status.text())?;
    }
    Ok(Outcome::problems_if(status.server_error.is_some()))
}

#[derive(Serialize)]
struct MaskedRow<'a> {
    epoch: &'a str,
    seq: i64,
    event_id: String,
    patterns: &'a [String],
    masked: String,
}

fn run_dry(home: &Home, masker: &Masker, json: bool) -> CmdResult {
    let mut out = std::io::stdout().lock();
    let mut failed: Option<std::io::Error> = None;
    let mut masked = 0u64;
    let totals = dry_run(home, masker, |epoch, row, patterns, text| {
        masked += 1;
        let line = MaskedRow {
            epoch,
            seq: row.seq,
            event_id: String::from_utf8_lossy(row.id).into_owned(),
            patterns,
            masked: String::from_utf8_lossy(text).into_owned(),
        };
        let written = match json {
            true => serde_json::to_string(&line)
                .map_err(std::io::Error::other)
                .and_then(|l| writeln!(out, "{l}")),
            false => writeln!(
                out,
                "epoch {} row {} (event {}): {}",
                line.epoch,
                line.seq,
                line.event_id,
                line.patterns.join(", ")
            ),
        };
        if let Err(e) = written {
            failed.get_or_insert(e);
        }
    })
    .map_err(|e: ShipError| Box::new(e) as super::CmdError)?;
    if let Some(e) = failed {
        return Err(e.into());
    }
    let rows: u64 = totals.iter().map(|t| t.1).sum();
    eprintln!("harnery ship --dry-run: {masked} of {rows} rows would be masked; nothing was sent");
    Ok(Outcome::Clean)
}

/// `--content`, as clap reads it; the library's `Content` knows no clap.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ContentArg {
    /// Every row as recorded.
    Full,
    /// Every row with its secrets masked (the default).
    Masked,
    /// Metadata only: no prompts, messages, tool inputs or outputs, paths
    /// or commands.
    None,
}

impl From<ContentArg> for Content {
    fn from(arg: ContentArg) -> Content {
        match arg {
            ContentArg::Full => Content::Full,
            ContentArg::Masked => Content::Masked,
            ContentArg::None => Content::None,
        }
    }
}
