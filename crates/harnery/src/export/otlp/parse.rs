//! The workers' side of OTLP: a run of rows as its trace takes them.
//! Events are parsed from their text and stripped to what the trace reads
//! ([`keep_traced_fields`]); tool rows and turn marks are decoded from
//! their trace entries. A row or chunk that cannot be used is left out and
//! named.

use super::super::source::{Label, damaged};
use super::content::SpanContent;
use super::read::{RunItem, SessionRun};
use super::{RunText, SpanNotes, Traced, keep_traced_fields};
use crate::contract::{Event, Payload, SessionRef};
use crate::ledger::ChainMark;
use crate::report::inherited::Inherited;

/// A run's rows as its trace takes them (events parsed and stripped to
/// what the trace reads, tool rows and marks decoded from their entries,
/// their strings in `text`), and the rows it had to leave out.
pub(super) struct ParsedRun {
    pub(super) session: SessionRef,
    pub(super) source: usize,
    pub(super) notes: Option<SpanNotes>,
    pub(super) inherited: Option<Inherited>,
    pub(super) rows: Vec<Traced>,
    /// The strings `rows` name.
    pub(super) text: RunText,
    /// Where the rows stand in the chain, in offset order.
    pub(super) marks: Vec<ChainMark>,
    pub(super) last: bool,
    pub(super) problems: Vec<String>,
}

/// Parse a stored text as an event. Checked once as a whole, the text is
/// parsed without a UTF-8 check per string.
fn parse_event(json: &[u8]) -> Result<Event, String> {
    let text = std::str::from_utf8(json).map_err(|e| e.to_string())?;
    serde_json::from_str::<Event>(text).map_err(|e| e.to_string())
}

/// An event as its trace keeps it: its words taken out (masked and cut)
/// where spans carry them, a command's argv as they show it, and the rest
/// stripped to what the trace reads.
fn kept(mut event: Event, content: SpanContent<'_>) -> (Event, Option<Box<str>>) {
    let words = content.words_of(&event).map(String::into_boxed_str);
    if let Payload::CommandRequested(p) = &mut event.payload {
        p.argv = content
            .argv(&p.argv)
            .map(|a| a.into_iter().map(|a| a.into_owned()).collect())
            .unwrap_or_default();
    }
    keep_traced_fields(&mut event);
    (event, words)
}

pub(super) fn parse_run(label: &Label, run: SessionRun, content: SpanContent<'_>) -> ParsedRun {
    // A note row that does not parse is named where the session's rows
    // meet it again, below, like any other.
    let notes = run.notes.map(|rows| {
        let mut notes = SpanNotes::default();
        for (_, _, json) in rows.each() {
            if let Ok(event) = parse_event(json) {
                let words = content.words_of(&event).map(String::into_boxed_str);
                notes.add_with(event, words);
            }
        }
        notes
    });
    let mut problems = Vec::new();
    let mut rows = Vec::with_capacity(run.events);
    let mut texts = run.rows.each();
    let mut chunks = 0..run.chunks.len();
    let parse = |(seq, id, json): (i64, &[u8], &[u8]),
                 rows: &mut Vec<Traced>,
                 problems: &mut Vec<String>| match parse_event(json) {
        Ok(event) => {
            let (event, words) = kept(event, content);
            rows.push(Traced::Event(Box::new(event), words));
        }
        Err(e) => {
            let id = String::from_utf8_lossy(id);
            let what = format!("does not parse as an event ({e}); left out of its session's trace");
            problems.push(damaged(label, seq, Some(&id), &what));
        }
    };
    let mut text = RunText::default();
    for item in run.items {
        match item {
            RunItem::Text => parse(
                texts.next().expect("a text item has its row"),
                &mut rows,
                &mut problems,
            ),
            RunItem::Chunk => {
                let at = chunks.next().expect("a chunk item has its chunk");
                // The texts the reader found for this chunk's whole entries.
                let mut found: Vec<_> = texts.by_ref().take(run.chunk_texts[at]).collect();
                // A chunk that does not decode is left out whole.
                let kept = (rows.len(), problems.len());
                let decoded = run.chunks.each_entry(at, |(seq, facts)| {
                    let facts = match facts {
                        Ok(facts) => facts,
                        Err(why) => {
                            let what = format!(
                                "has a trace entry that cannot be used ({why}); left out of its session's trace"
                            );
                            problems.push(damaged(label, seq, None, &what));
                            return;
                        }
                    };
                    if let Some(traced) = Traced::of_facts(facts, &mut text) {
                        rows.push(traced);
                        return;
                    }
                    // A whole entry: its text, unless its event row is gone.
                    match found.iter().position(|(s, _, _)| *s == seq) {
                        Some(i) => parse(found.remove(i), &mut rows, &mut problems),
                        None => problems.push(damaged(
                            label,
                            seq,
                            None,
                            "has a trace entry whose event row is not there; left out of its session's trace",
                        )),
                    }
                });
                if let Err(why) = decoded {
                    rows.truncate(kept.0);
                    problems.truncate(kept.1);
                    let session = &run.session;
                    problems.push(format!(
                        "harnery export: {}session {}/{} has a trace chunk that cannot be read ({why}); its events are left out of its trace",
                        label.epoch_prefix(), session.adapter, session.session_id
                    ));
                }
            }
        }
    }
    ParsedRun {
        session: run.session,
        source: run.rows.source,
        notes,
        inherited: run.inherited,
        rows,
        text,
        marks: run.marks,
        last: run.last,
        problems,
    }
}
