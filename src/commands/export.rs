//! `harnery export [--format jsonl|otlp] [--session S] [--since T] [--epoch E]`.
//!
//! Every format streams: rows are read, written and dropped, so an export
//! holds a few batches of rows at a time, never the ledger nor a whole
//! session (OTLP keeps only the session's open spans and per-turn tallies,
//! `harnery::export::otlp::TraceStream`). Every rule of the export is in
//! `harnery::export`; this file parses the arguments, opens the epochs,
//! calls the writer and maps what it found to the exit code.
//!
//! - JSON lines: each row's stored text, in chain order (in offset order
//!   with `--session`). With `--epoch` other than the default, each line
//!   ends with `"epoch":"<label>"`.
//! - OTLP: `ExportTraceServiceRequest` documents, one per line, each with
//!   at most `SPANS_PER_DOCUMENT` spans; a session's spans may go on in
//!   the next document under a repeat of its resource. A session's spans
//!   come as they end (tool and command spans at their terminal; open
//!   spans, turns and the root at its last row). With `--epoch`, each
//!   resource carries `harnery.epoch`.
//!
//! `--since T` keeps JSON lines at or after T, and OTLP sessions with any
//! event at or after T (whole sessions: a trace cut at T would misstate
//! its spans). A row that cannot be used (not JSON; for OTLP, not an event,
//! or a trace entry that does not decode) is named on stderr by its
//! sequence number (and event id, where known), and the export goes on to
//! the end, then exits 1.

use std::fs::File;
use std::io::BufWriter;
use std::os::fd::AsFd;

use super::{CmdResult, EpochArg, Outcome};
use harnery::export::{ExportError, SPANS_PER_DOCUMENT, jsonl, otlp, source};
use harnery::home::Home;
use harnery::report::epochs::Epochs;

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum Format {
    /// One canonical event per line: each row's stored text.
    Jsonl,
    /// OTLP/JSON ExportTraceServiceRequest documents, one per line, each
    /// with a bounded number of spans.
    Otlp,
}

#[derive(Debug, clap::Args)]
#[command(after_help = after_help())]
pub struct Args {
    #[arg(long, value_enum, default_value = "jsonl")]
    format: Format,
    /// Only this session (its id, or adapter/id).
    #[arg(long)]
    session: Option<String>,
    /// Only events at or after this RFC 3339 time (OTLP: sessions with an
    /// event at or after it, whole).
    #[arg(long, value_name = "RFC3339", value_parser = super::parse_instant)]
    since: Option<i64>,
    #[command(flatten)]
    epoch: EpochArg,
}

fn after_help() -> String {
    format!(
        "OTLP documents carry at most {SPANS_PER_DOCUMENT} spans each; a session with more \
         goes on in the next document under a repeat of its resource. A recovered span \
         ends at its request time; its recovery bound is an attribute, never a duration.\n\
         A row that cannot be exported is named on stderr by its seq and event id, and the \
         export goes on to the end; the exit code is then 1."
    )
}

/// Standard output as a plain file (`harnery::export::source::Out`).
fn stdout_file() -> std::io::Result<File> {
    Ok(File::from(std::io::stdout().as_fd().try_clone_to_owned()?))
}

pub fn run(args: Args) -> CmdResult {
    let since = args.since;
    let home = Home::from_env()?;
    let epochs = Epochs::open(&home, &args.epoch.epoch)?;
    epochs.report_unreadable("export")?;
    let sources = source::sources(&epochs, args.session.as_deref(), since)?;
    let out = BufWriter::with_capacity(1 << 16, stdout_file()?);
    let progress = super::progress::bar("rows", false);
    progress.stage("export");
    let damaged = match args.format {
        Format::Jsonl => jsonl::write(&epochs, &sources, out, &progress),
        Format::Otlp => otlp::write(&epochs, &sources, since, out, &progress),
    }
    .map_err(ExportError::into_inner)?;
    let set_aside = epochs.report_set_aside("export");
    Ok(Outcome::problems_if(damaged > 0 || set_aside))
}
