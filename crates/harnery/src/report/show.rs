//! What `harnery show` shows of a session: its timeline in each part the
//! selected epochs hold, in chain order, with superseded ranges and
//! inherited entries marked and each turn's tokens on its closing line.
//!
//! With several parts the session is one whole: one summary over all of
//! them ([`whole`]), every entry's time counted from the session's first
//! event in any part ([`shifted`]). `--at` picks the entries around one
//! offset ([`Around`]). The words of each line are the CLI's; which
//! entries, in what order and with which marks, are decided here.

use serde::Serialize;

use super::epochs::{Epochs, OpenEpoch, combine, newest_own_title, report_damaged};
use super::inherited::Inherited;
use super::source::SourceError;
use super::superseded::mark_timeline;
use super::timeline::{Timeline, TimelineEntry, with_events};
use super::usage::{mark_turn_tokens, turn_usage};
use crate::ledger::SessionSummary;
use crate::restore::log::SessionLog;

/// One part of a session: the epoch that holds it and its timeline there.
pub struct Part<'a> {
    pub epoch: &'a OpenEpoch,
    pub timeline: Timeline,
    /// Where its title came from (`record` or `prompt`), as its session
    /// row says.
    title_source: Option<String>,
}

/// Every part of the session `name` names, marked: superseded entries
/// (counted in the summary only with `include_superseded`), entries
/// inherited from a parent, and each turn's own tokens.
pub fn parts<'a>(
    epochs: &'a Epochs,
    name: &str,
    include_superseded: bool,
) -> Result<Vec<Part<'a>>, SourceError> {
    let found = epochs.session("show", name)?;
    let read = found.read("show", epochs, |l, s| {
        let (mut timeline, events) = with_events(l, s)?;
        let log = SessionLog::read_resumes(l, s)?;
        mark_timeline(l, &log, &mut timeline, include_superseded)?;
        let inherited = Inherited::of(l, s)?;
        inherited.mark(&mut timeline, &events);
        let title_source = l
            .sessions()
            .listed()?
            .into_iter()
            .find(|(summary, _)| &summary.session == s)
            .and_then(|(_, facts)| facts.title_source);
        Ok((timeline, events, inherited, title_source))
    })?;
    Ok(read
        .into_iter()
        .map(|(epoch, (mut timeline, events, inherited, title_source))| {
            mark_turn_tokens(&mut timeline, &turn_usage(inherited.own(&events)));
            Part {
                epoch,
                timeline,
                title_source,
            }
        })
        .collect())
}

/// Name on stderr each part's rows that could not be read; whether any.
pub fn report_damaged_parts(parts: &[Part]) -> bool {
    let mut damaged = false;
    for p in parts {
        damaged |= report_damaged("show", &p.epoch.label, &p.timeline.damaged_rows);
    }
    damaged
}

/// The summary of the whole session, over all its parts, titled as the
/// list titles it: the newest part's own title from the agent's record,
/// else the earliest prompt's.
pub fn whole(parts: &[Part]) -> SessionSummary {
    let summaries: Vec<SessionSummary> = parts.iter().map(|p| p.timeline.summary.clone()).collect();
    let mut whole = combine(&summaries).expect("a shown session has a part");
    let titled: Vec<(&SessionSummary, Option<&str>)> = parts
        .iter()
        .map(|p| (&p.timeline.summary, p.title_source.as_deref()))
        .collect();
    newest_own_title(&mut whole, &titled);
    whole
}

/// A part's entries with their times counted from `start`.
pub fn shifted(part: &Part, start: i64) -> impl Iterator<Item = TimelineEntry> {
    let shift = (part.timeline.summary.first_unix_ns - start) / 1_000_000;
    part.timeline.entries.iter().cloned().map(move |mut e| {
        e.at_ms += shift;
        e
    })
}

/// The JSON of a session shown across epochs: the one-epoch document's two
/// fields, each entry tagged with its epoch, and one summary per part.
#[derive(Serialize)]
pub struct WholeJson<'a> {
    summary: SessionSummary,
    entries: Vec<TaggedEntry<'a>>,
    parts: Vec<PartJson<'a>>,
}

#[derive(Serialize)]
struct TaggedEntry<'a> {
    epoch: &'a str,
    #[serde(flatten)]
    entry: TimelineEntry,
}

#[derive(Serialize)]
struct PartJson<'a> {
    epoch: &'a str,
    genesis_id: &'a str,
    summary: &'a SessionSummary,
}

impl<'a> WholeJson<'a> {
    /// The document for `parts`.
    pub fn of(parts: &'a [Part]) -> WholeJson<'a> {
        let summary = whole(parts);
        let entries = parts
            .iter()
            .flat_map(|p| {
                shifted(p, summary.first_unix_ns).map(|entry| TaggedEntry {
                    epoch: &p.epoch.label,
                    entry,
                })
            })
            .collect();
        let parts = parts
            .iter()
            .map(|p| PartJson {
                epoch: &p.epoch.label,
                genesis_id: &p.epoch.genesis_id,
                summary: &p.timeline.summary,
            })
            .collect();
        WholeJson {
            summary,
            entries,
            parts,
        }
    }
}

/// The entries around one offset (a `harnery search` hit's), and which of
/// them holds it. A tool or command span is one entry, at its request: an
/// offset of its terminal (a tool's output) marks that entry.
pub struct Around {
    pub summary: SessionSummary,
    pub at: u64,
    /// Each entry with the label of the epoch that holds it.
    pub entries: Vec<(String, TimelineEntry)>,
    /// The index in `entries` of the one that holds `at`.
    pub hit: usize,
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
    /// last entry at or before it; an offset outside the session is an
    /// error naming the session's range.
    pub fn of(parts: &[Part], at: u64, context: usize) -> Result<Around, String> {
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

    /// The JSON document: the summary, the offset, each entry tagged with
    /// its epoch and whether it is the hit.
    pub fn json(&self) -> impl Serialize + '_ {
        AroundJson {
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
        }
    }
}
