//! `harnery export [--format jsonl|otlp] [--session S] [--epoch E]`.
//!
//! With `--epoch all` (or a genesis id) every selected epoch is exported in
//! chain order: JSON lines gain `"epoch"`, and OTLP prints one TracesData
//! document per epoch, one per line (the OTLP file format), each resource
//! carrying `harnery.epoch`. Without `--session` the events are streamed,
//! never loaded whole, for JSON lines.

use std::io::Write;

use serde_json::Value;

use super::{CmdError, CmdResult, EpochArg, Outcome};
use crate::contract::Event;
use crate::home::Home;
use crate::read::epochs::{Epochs, OpenEpoch, warn};
use crate::read::export::{jsonl_line, otlp_traces};

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
    #[command(flatten)]
    epoch: EpochArg,
}

pub fn run(args: Args) -> CmdResult {
    let home = Home::from_env()?;
    let epochs = Epochs::open(&home, &args.epoch.epoch)?;
    epochs.report_unreadable("export")?;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    match &args.session {
        Some(name) => {
            let found = epochs.session("export", name)?;
            for (epoch, events) in found.read("export", &epochs, |l, s| l.session_events(s))? {
                write_epoch(&mut out, &epochs, epoch, args.format, &events)?;
            }
        }
        None => {
            for epoch in &epochs.open {
                match export_epoch(&mut out, &epochs, epoch, args.format) {
                    // A failed write (a closed pipe) is not the epoch's fault.
                    Err(e) if epochs.tagged && !e.is::<std::io::Error>() => {
                        warn("export", &epoch.label, &e.to_string())
                    }
                    done => done?,
                }
            }
        }
    }
    out.flush()?;
    Ok(Outcome::Clean)
}

/// Every event of one epoch: streamed as JSON lines, or one OTLP document.
fn export_epoch(
    out: &mut impl Write,
    epochs: &Epochs,
    epoch: &OpenEpoch,
    format: Format,
) -> Result<(), CmdError> {
    if let Format::Otlp = format {
        let events = epoch.ledger.events()?;
        return write_epoch(out, epochs, epoch, format, &events);
    }
    let tag = epochs.tagged.then_some(epoch.label.as_str());
    let mut failed: Option<CmdError> = None;
    epoch.ledger.for_each_event(|stored| {
        if failed.is_none()
            && let Err(e) = write_line(out, &stored.event, tag)
        {
            failed = Some(e);
        }
        Ok(())
    })?;
    failed.map_or(Ok(()), Err)
}

fn write_epoch(
    out: &mut impl Write,
    epochs: &Epochs,
    epoch: &OpenEpoch,
    format: Format,
    events: &[Event],
) -> Result<(), CmdError> {
    let tag = epochs.tagged.then_some(epoch.label.as_str());
    match format {
        Format::Jsonl => {
            for event in events {
                write_line(out, event, tag)?;
            }
        }
        Format::Otlp => {
            let mut doc = otlp_traces(events);
            if let Some(label) = tag {
                tag_resources(&mut doc, label);
            }
            writeln!(out, "{}", serde_json::to_string(&doc)?)?;
        }
    }
    Ok(())
}

fn write_line(out: &mut impl Write, event: &Event, epoch: Option<&str>) -> Result<(), CmdError> {
    match epoch {
        None => writeln!(out, "{}", jsonl_line(event)?)?,
        Some(label) => {
            let mut v = serde_json::to_value(event)?;
            v["epoch"] = label.into();
            writeln!(out, "{v}")?;
        }
    }
    Ok(())
}

/// Add `harnery.epoch` to every resource of an OTLP document.
fn tag_resources(doc: &mut Value, label: &str) {
    let Some(resources) = doc["resourceSpans"].as_array_mut() else {
        return;
    };
    for r in resources {
        if let Some(attrs) = r["resource"]["attributes"].as_array_mut() {
            attrs
                .push(serde_json::json!({"key": "harnery.epoch", "value": {"stringValue": label}}));
        }
    }
}
