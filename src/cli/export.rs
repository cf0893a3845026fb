//! `harnery export [--format jsonl|otlp] [--session S]`.

use std::io::Write;

use super::{CmdResult, Outcome};
use crate::home::Home;
use crate::read::export::{jsonl_line, otlp_traces};
use crate::read::source::load_events;

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum Format {
    /// One canonical event per line.
    Jsonl,
    /// One OTLP/JSON TracesData document.
    Otlp,
}

#[derive(Debug, clap::Args)]
pub struct Args {
    #[arg(long, value_enum, default_value = "jsonl")]
    format: Format,
    /// Only this session (its id, or adapter/id).
    #[arg(long)]
    session: Option<String>,
}

pub fn run(args: Args) -> CmdResult {
    let home = Home::from_env()?;
    let events = load_events(&home, args.session.as_deref())?;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    match args.format {
        Format::Jsonl => {
            for event in &events {
                writeln!(out, "{}", jsonl_line(event)?)?;
            }
        }
        Format::Otlp => writeln!(out, "{}", serde_json::to_string(&otlp_traces(&events))?)?,
    }
    out.flush()?;
    Ok(Outcome::Clean)
}
