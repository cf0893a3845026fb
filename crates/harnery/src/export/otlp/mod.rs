//! The OTLP writer: the ledger's sessions as OTLP/JSON traces, one
//! resource and one trace per session, in `ExportTraceServiceRequest`
//! documents of at most [`SPANS_PER_DOCUMENT`] spans, one per line.
//!
//! Mapping (one resource and one trace per session):
//! - the session is a root span, `invoke_agent <adapter>`;
//! - each turn is a child span covering the receipt's wall interval; where
//!   the agent's record reported usage in the turn, it carries
//!   `gen_ai.request.model` (the turn's last named model) and the sums
//!   `gen_ai.usage.input_tokens` / `gen_ai.usage.output_tokens` and the
//!   cache's `gen_ai.usage.cache_read.input_tokens` /
//!   `gen_ai.usage.cache_creation.input_tokens`, each only where reported,
//!   so a turn without usage is what it always was;
//! - each model call the record reported usage for is `chat {model}` under
//!   its turn (`chat`), with the conventions' usage (input with the
//!   cache's tokens, `cache_write` and the older `cache_creation`);
//! - each tool span is `execute_tool <name>` under its turn, with the
//!   OpenTelemetry GenAI attributes `gen_ai.operation.name = execute_tool`,
//!   `gen_ai.tool.name`, `gen_ai.tool.call.id`, `gen_ai.conversation.id`
//!   (the call id from the hook, else from the record's `tool.recorded`
//!   that matched the span, as for Copilot, whose hooks carry none);
//! - each `harnery exec` command is `exec <argv0>` with `process.*` attributes.
//!
//! The root spans the session from its first event to the last one its
//! agent reported, so what harnery derived later (a recovery sweep days
//! after an open session's last event) does not stretch it to the sweep.
//!
//! The trace id is derived from the session, span ids from event ids, so an
//! export is reproducible. A session's part in an archived epoch derives
//! its root and turn span ids from the epoch's genesis id as well, so the
//! parts of one trace never share a span id; the live part keeps the ids
//! it always had.
//!
//! Each span names where its rows stand in the chain (`harnery.*.seq`,
//! `harnery.*.hash`, the epoch's genesis id on the resource) and its
//! evidence (`harnery.evidence`: observed, or derived by a recovery); what
//! of the words it carries is [`SpanContent`]'s.
//!
//! A recovered span carries `harnery.recovery.reason` and `harnery.outcome
//! = unknown`, and its status stays unset: recovery never invents a result.
//! Neither does it invent a duration: a recovered span, like an open one,
//! ends where it started (`harnery.span.end = not_observed`). The ADR 0078
//! upper bound is only an attribute (`harnery.recovery.elapsed_upper_bound_ms`),
//! and the sweep that closed the span is `harnery.recovery.swept_unix_nano`,
//! so a trace tool never draws request-to-sweep as time spent.
//!
//! A session streams through [`TraceStream`]: a span is written as soon as
//! it ends (at its terminal; open spans, turns and the root at the
//! session's end), so what is held is the open spans and per-turn tallies,
//! not the session. A session's rows come as [`Traced`]: events parsed
//! from their text, tool rows and turn marks decoded from the ledger's
//! trace entries. Pairing and mapping read a span's request and terminal
//! through [`SpanSide`](crate::report::spans::SpanSide), whichever they are. Spans are written by hand
//! (`json`) as serde_json printed the sorted `serde_json::Value`
//! trees of earlier builds, so a span's text is unchanged wherever its
//! meaning is; only the order of a session's spans changed (earlier builds
//! wrote root, turns, then spans).

//!
//! The files, in the order a row goes through them:
//! - `read`: the reading thread hands a session's rows on in runs;
//! - `traced`, `parse`: a worker turns a run into [`Traced`] rows;
//! - `content`: what of the words spans carry, masked and cut;
//! - `stream`: [`TraceStream`] pairs a session's spans as its rows come;
//!   `chat`: the model calls, a turn at a time;
//! - `spans`: what each span says; `ids`: its trace and span ids;
//! - `json`: a span's text; `documents`: the documents spans go out in.

use std::io::Write;

use super::source::{Label, Out, Source, each_source, finish_sink, report};
use super::{ExportError, SPANS_PER_DOCUMENT};
use crate::contract::SessionRef;
use crate::ordered::{Feed, run_ordered, workers};
use crate::progress::Progress;
use crate::report::epochs::Epochs;
use parse::{ParsedRun, parse_run};
use read::{SessionReader, SessionRun};

mod chat;
mod content;
mod documents;
mod ids;
mod json;
mod parse;
mod read;
mod side;
mod spans;
mod stream;
mod traced;

pub use content::{SpanContent, TEXT_BYTES};
use documents::Documents;
#[cfg(test)]
use documents::SpanSink;
#[cfg(test)]
use ids::span_id;
use stream::{Part, RunMarks, SpanNotes, TraceStream, keep_traced_fields};
use traced::{RunText, Traced};

/// Write every session of `sources` as OTLP documents to `out`; a
/// session with an event at or after `since` is written whole. Returns
/// how many rows were left out.
pub fn write(
    epochs: &Epochs,
    sources: &[Source<'_>],
    since: Option<i64>,
    out: Out,
    progress: &Progress,
) -> Result<usize, ExportError> {
    let (damaged, mut out) = write_to(
        epochs,
        sources,
        since,
        out,
        SPANS_PER_DOCUMENT,
        progress,
        None,
        SpanContent::Export,
    )?;
    out.flush()?;
    Ok(damaged)
}

/// What [`write()`] does, into any writer: the documents go to `out` one
/// line each, as they fill (`harnery otlp push` reads them as they come),
/// each with at most `spans_per_document` spans (at least one), carrying
/// what `content` lets out. Returns how many rows were left out, and the
/// writer.
#[allow(clippy::too_many_arguments)]
pub fn write_to<W: Write + Send>(
    epochs: &Epochs,
    sources: &[Source<'_>],
    since: Option<i64>,
    out: W,
    spans_per_document: usize,
    progress: &Progress,
    mut gate: Option<&mut SessionGate<'_>>,
    content: SpanContent<'_>,
) -> Result<(usize, W), ExportError> {
    let labels: Vec<Label> = sources.iter().map(|s| Label::of(epochs, s)).collect();
    let genesis: Vec<&str> = sources
        .iter()
        .map(|s| s.epoch.genesis_id.as_str())
        .collect();
    let produce = |feed: &mut Feed<SessionRun>| {
        each_source(epochs, sources, |i, source| {
            let ledger = &source.epoch.ledger;
            let place = format!(
                "{}|{}|{}",
                source.epoch.genesis_id,
                labels[i].tag.as_deref().unwrap_or(""),
                labels[i].archive.is_some()
            );
            // Trace chunks hold no words: spans that carry them read
            // every row whole.
            let traced = ledger.trace().keeps_trace_rows()? && !content.carries_words();
            let (sessions, noted) = match &source.filter.session {
                Some(s) => {
                    let sessions = ledger.sessions().refs(since)?.into_iter();
                    (sessions.filter(|r| r == s).collect(), None)
                }
                // Few sessions have notes: the index of note rows (or one
                // pass over the type column) finds them, and spares every
                // other session a read of all its rows for none.
                None if traced => (
                    ledger.sessions().refs(since)?,
                    Some(ledger.trace().sessions_with_notes()?),
                ),
                None => (
                    ledger.sessions().refs(since)?,
                    Some(ledger.sessions().with_types(SpanNotes::TYPES)?),
                ),
            };
            for session in sessions {
                if let Some(gate) = gate.as_deref_mut() {
                    // The head is read before the rows: rows added
                    // meanwhile make the next push read the session again.
                    let head = ledger.events().session_head(&session)?;
                    if !gate(&place, &session, Some(head)) {
                        continue;
                    }
                }
                let notes = noted.as_ref().is_none_or(|n| n.contains(&session));
                let reader = SessionReader {
                    ledger,
                    source: i,
                    traced,
                };
                let sent = reader.send_runs(session.clone(), notes, feed, progress);
                if sent.is_err()
                    && let Some(gate) = gate.as_deref_mut()
                {
                    gate(&place, &session, None);
                }
                if !sent? {
                    return Ok(false);
                }
            }
            Ok(true)
        })
    };
    let work = |run: SessionRun| parse_run(&labels[run.rows.source], run, content);
    let sink = TraceSink {
        docs: Documents::new(out, spans_per_document.max(1)),
        damaged: 0,
        stream: None,
        argv: !matches!(content, SpanContent::None),
    };
    let consume = |sink: &mut TraceSink<W>, run: ParsedRun| sink.take(&labels, &genesis, run);
    let (made, written) = run_ordered(workers(), 8, produce, work, sink, consume);
    let sink = finish_sink(made, written)?;
    let damaged = sink.damaged;
    Ok((damaged, sink.docs.finish()?))
}

/// Asked before a session is read, with the place its rows come from (the
/// epoch), the session and its head (one past its last offset): whether
/// to read it. A push passes over the sessions an endpoint already took
/// as they are. Told `None` (the answer unused) where a session it let
/// through could not be read (an epoch set aside mid-read): it was not
/// written whole.
pub type SessionGate<'g> = dyn FnMut(&str, &SessionRef, Option<u64>) -> bool + 'g;

/// The writer's side of OTLP: the documents, the rows left out so far,
/// and the trace of the session being read.
struct TraceSink<W: Write> {
    docs: Documents<W>,
    damaged: usize,
    stream: Option<TraceStream>,
    /// Whether command spans show their argv.
    argv: bool,
}

impl<W: Write> TraceSink<W> {
    /// Take one run: its session's spans as they end, and at the
    /// session's last run the rest of its trace.
    fn take(&mut self, labels: &[Label], genesis: &[&str], run: ParsedRun) -> std::io::Result<()> {
        report(&mut self.damaged, &run.problems);
        let docs = &mut self.docs;
        if let Some(notes) = run.notes {
            let label = &labels[run.source];
            let part = Part {
                epoch_tag: label.tag.as_deref(),
                archive: label.archive.as_deref(),
                genesis: Some(genesis[run.source]),
                argv: self.argv,
            };
            let mut stream = TraceStream::new(run.session, part, notes);
            stream.inherit(run.inherited.unwrap_or_default());
            docs.start_resource(stream.resource_head());
            self.stream = Some(stream);
        }
        let stream = self
            .stream
            .as_mut()
            .expect("a session's first run carries its notes");
        let marks = RunMarks(&run.marks);
        for row in run.rows {
            stream.take(row, &run.text, &marks, docs)?;
        }
        if run.last {
            let stream = self.stream.take().expect("the session is open");
            stream.finish(docs)?;
            docs.end_resource();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
