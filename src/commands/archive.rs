//! `harnery archive compact`: store the live epoch's raw archive files
//! compressed, in place (docs/ledger.md, "A compressed raw archive");
//! `harnery archive compact-events`: convert a ledger an older build wrote
//! to compact event storage and pack its events in blocks (docs/ledger.md,
//! "Compact event storage").
//! Archived epochs are read-only and are never compacted.

use std::io::Write;

use super::{CmdResult, Outcome};
use harnery::finalize::compaction::{compact_events_now, compact_now};
use harnery::home::Home;
use harnery::ledger::rawz::DEFAULT_LEVEL;

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, clap::Subcommand)]
enum Command {
    /// Pack each batch of the live epoch's raw archive into one compressed
    /// file, verified byte for byte before the old files are removed.
    Compact(CompactArgs),
    /// Store the live epoch's event texts compressed and packed in blocks
    /// (a ledger an older build wrote; a new one is compact from its first
    /// row, and `finalize` packs what it writes), then shrink its file.
    /// Safe to kill and run again.
    CompactEvents(StatusArgs),
    /// The live epoch's raw archive: its size on disk and its original size.
    Status(StatusArgs),
}

#[derive(Debug, clap::Args)]
struct StatusArgs {
    /// Print the result as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, clap::Args)]
struct CompactArgs {
    /// The zstd level (1-19).
    #[arg(long, default_value_t = DEFAULT_LEVEL, value_parser = clap::value_parser!(i32).range(1..=19))]
    level: i32,
    /// Print the result as JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args) -> CmdResult {
    match args.command {
        Command::Compact(a) => compact(a),
        Command::CompactEvents(a) => compact_events(a),
        Command::Status(a) => status(a),
    }
}

fn status(args: StatusArgs) -> CmdResult {
    let home = Home::from_env()?;
    let size = harnery::report::source::live_archive_size(&home)?;
    let mut out = harnery::terminal::stdout(args.json);
    if args.json {
        writeln!(out, "{}", serde_json::to_string(&size)?)?;
    } else {
        write_size(&mut out, &size)?;
    }
    Ok(Outcome::Clean)
}

/// The archive's size line, shared with `harnery health`.
pub(super) fn write_size(
    out: &mut impl Write,
    size: &harnery::ledger::ArchiveSize,
) -> std::io::Result<()> {
    writeln!(
        out,
        "raw archive: {} bytes on disk, {} bytes original, {} of {} files compressed",
        size.bytes_on_disk, size.original_bytes, size.compressed_files, size.files
    )
}

fn compact(args: CompactArgs) -> CmdResult {
    let home = Home::from_env()?;
    let (done, size) = compact_now(&home, args.level)?;
    let mut out = harnery::terminal::stdout(args.json);
    if args.json {
        let v = serde_json::json!({ "compacted": done, "archive": size });
        writeln!(out, "{v}")?;
    } else {
        writeln!(
            out,
            "compacted {} raw archive files into {} (one a batch): {} bytes to {}",
            done.files, done.batches, done.bytes_before, done.bytes_after
        )?;
        write_size(&mut out, &size)?;
        for b in &done.skipped_batches {
            writeln!(
                out,
                "batch {b} left as it was: a record of it does not check out (see `harnery verify`)"
            )?;
        }
    }
    Ok(Outcome::problems_if(!done.skipped_batches.is_empty()))
}

fn compact_events(args: StatusArgs) -> CmdResult {
    let home = Home::from_env()?;
    let done = compact_events_now(&home)?;
    let mut out = harnery::terminal::stdout(args.json);
    if args.json {
        writeln!(out, "{}", serde_json::to_string(&done)?)?;
    } else {
        writeln!(
            out,
            "{} event rows and {} raw signal rows moved to compact storage, {} packed in blocks; ledger file {} bytes to {}",
            done.rows, done.signal_rows, done.packed, done.bytes_before, done.bytes_after
        )?;
    }
    Ok(Outcome::Clean)
}
