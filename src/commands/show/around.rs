//! `harnery show S --at OFFSET [--context N]`: the entries of a session's
//! timeline around one offset (a `harnery search` hit's), the entry that
//! holds it marked. A tool or command span is one entry, at its request:
//! an offset of its terminal (a tool's output) marks that entry.

use std::io::Write;

use serde::Serialize;

use super::{Part, header, line, shifted, whole};
use harnery::ledger::SessionSummary;
use harnery::report::timeline::TimelineEntry;

/// The entries shown, and which of them holds the offset.
pub(crate) struct Around {
    summary: SessionSummary,
    at: u64,
    entries: Vec<(String, TimelineEntry)>,
    hit: usize,
}

#[derive(Serialize)]
struct AroundJson<'a> {
    summary: &'a SessionSummary,
    at: u64,
    entries: Vec<EntryJson<'a>>,
}

#[derive(Serialize)]
struct EntryJson<'a> {
    epoch: &'a str,
    hit: bool,
    #[serde(flatten)]
    entry: &'a TimelineEntry,
}

impl Around {
    /// The `context` entries on each side of the one holding `at`: the
    /// last entry at or before it.
    pub(crate) fn of(parts: &[Part], at: u64, context: usize) -> Result<Around, String> {
        let summary = whole(parts);
        let all: Vec<(String, TimelineEntry)> = parts
            .iter()
            .flat_map(|p| shifted(p, summary.first_unix_ns).map(|e| (p.epoch.label.clone(), e)))
            .collect();
        let first = all.first().map_or(0, |(_, e)| e.offset);
        let last = summary
            .events
            .saturating_sub(1)
            .max(all.last().map_or(0, |(_, e)| e.offset));
        let holder = all.iter().rposition(|(_, e)| e.offset <= at);
        let Some(holder) = holder.filter(|_| at <= last) else {
            return Err(format!(
                "offset {at} is not in session {} (its offsets run {first}..={last})",
                summary.session.session_id
            ));
        };
        let from = holder.saturating_sub(context);
        let to = (holder + context + 1).min(all.len());
        Ok(Around {
            summary,
            at,
            entries: all[from..to].to_vec(),
            hit: holder - from,
        })
    }

    pub(crate) fn write(
        &self,
        out: &mut dyn Write,
        json: bool,
    ) -> Result<(), super::super::CmdError> {
        if json {
            let doc = AroundJson {
                summary: &self.summary,
                at: self.at,
                entries: self
                    .entries
                    .iter()
                    .enumerate()
                    .map(|(i, (epoch, entry))| EntryJson {
                        epoch,
                        hit: i == self.hit,
                        entry,
                    })
                    .collect(),
            };
            writeln!(out, "{}", serde_json::to_string_pretty(&doc)?)?;
            return Ok(());
        }
        write!(out, "{}", header(&self.summary))?;
        for (i, (_, e)) in self.entries.iter().enumerate() {
            let mark = if i == self.hit { ">>" } else { "  " };
            write!(out, "{mark}{}", line(e))?;
        }
        Ok(())
    }
}
