//! One session's trace as it streams: [`TraceStream`] takes the session's
//! rows in offset order and hands each span to a [`SpanSink`] as soon as
//! it ends (a tool or command span at its terminal; open spans, turns and
//! the root at the session's last row), holding only the open spans, the
//! session's [`SpanNotes`] and per-turn tallies, never the session.
//!
//! Pairing and mapping read a span's request and terminal through
//! [`SpanSide`], whichever kind of row ([`Traced`]) they came from; what a
//! span says is `spans`'s.

use std::collections::{BTreeMap, HashMap};
use std::io;

use super::chat::ModelCalls;
use super::documents::SpanSink;
use super::json::SpanOut;
use super::side::{Side, TraceSpan};
use super::spans::{Ctx, SpanExtras, resource_head};
use super::traced::{RunText, ToolRow, ToolView, Traced, Words};
use crate::contract::{Event, EventType, Payload, SessionRef};
use crate::ledger::ChainMark;
use crate::report::inherited::Inherited;
use crate::report::receipts::{TurnFold, TurnMark};
use crate::report::spans::{Span, SpanKind, SpanSide};
use crate::report::usage::{TurnUsage, add_turn_usage};

/// Which epoch a session's events come from, as its spans show it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Part<'a> {
    /// Added to the resource as `harnery.epoch` when rows carry their epoch.
    pub epoch_tag: Option<&'a str>,
    /// The genesis id of an archived epoch (`None` for the live one).
    pub archive: Option<&'a str>,
    /// The genesis id of the epoch the rows come from (on the resource,
    /// beside the seqs and hashes of the spans' rows).
    pub genesis: Option<&'a str>,
    /// Whether a command span shows its argv.
    pub argv: bool,
}

impl Default for Part<'_> {
    /// The live epoch, untagged, with command lines shown.
    fn default() -> Self {
        Part {
            epoch_tag: None,
            archive: None,
            genesis: None,
            argv: true,
        }
    }
}

/// Where a session's rows of one run stand in the chain, by offset.
pub(crate) struct RunMarks<'a>(pub &'a [ChainMark]);

impl RunMarks<'_> {
    fn at(&self, offset: u64) -> Option<ChainMark> {
        let i = self.0.binary_search_by_key(&offset, |m| m.offset).ok()?;
        Some(self.0[i])
    }
}

/// What a session's later rows say of its spans: the call id the agent's
/// record gave a span (`tool.recorded`) and the native completions that
/// came after it was recovered (`tool.late_evidence`). These may come
/// after a span's terminal, so an export reads them first (few rows, by
/// the ledger's type column) and can then write each span at its terminal.
#[derive(Default)]
pub(crate) struct SpanNotes {
    /// By the span's request event id; the last record's word wins.
    recorded_calls: HashMap<String, String>,
    /// By the span's request event id, in offset order.
    late: HashMap<String, Vec<Event>>,
    /// The result's words the agent's record gave a span (with content),
    /// at most [`RECORDED_RESULT_BYTES`] of them in all.
    recorded_results: HashMap<String, String>,
    recorded_bytes: usize,
}

/// The most bytes of the record's tool results a session's notes hold
/// (read before its spans, so held for the whole session): past it, a
/// span carries only its hook's result. A few hundred results at the cut
/// of one text, whatever the session's length.
const RECORDED_RESULT_BYTES: usize = 8 << 20;

impl SpanNotes {
    /// The event types whose rows [`SpanNotes::add_with`] takes.
    pub(crate) const TYPES: &[EventType] = &[EventType::ToolRecorded, EventType::LateEvidence];

    /// Take one event (offset order); events of other types are ignored.
    #[cfg(test)]
    pub(crate) fn add(&mut self, event: Event) {
        self.add_with(event, None);
    }

    /// Take one event with its words (a `tool.recorded`'s result).
    pub(crate) fn add_with(&mut self, mut event: Event, words: Words) {
        match &event.payload {
            Payload::ToolRecorded(t) => {
                if let Some(request) = &t.span_request_event_id {
                    self.recorded_calls
                        .insert(request.to_string(), t.tool_call_id.clone());
                    if let Some(words) = words
                        && self.recorded_bytes + words.len() <= RECORDED_RESULT_BYTES
                    {
                        self.recorded_bytes += words.len();
                        self.recorded_results
                            .insert(request.to_string(), words.into());
                    }
                }
            }
            Payload::LateEvidence(p) => {
                let request = p.span_request_event_id.to_string();
                keep_traced_fields(&mut event);
                self.late.entry(request).or_default().push(event);
            }
            _ => {}
        }
    }

    /// The late evidence of the span `request` opened: what came after it.
    fn late_for(&self, request: Side<'_>) -> Vec<&Event> {
        // Most sessions have none: no id to hash for them.
        if self.late.is_empty() {
            return Vec::new();
        }
        let Some(late) = self.late.get(request.event_id()) else {
            return Vec::new();
        };
        let offset = request.offset();
        late.iter().filter(|e| e.offset > offset).collect()
    }

    fn recorded_result(&self, request: Option<Side<'_>>) -> Option<&str> {
        if self.recorded_results.is_empty() {
            return None;
        }
        let id = request?.event_id();
        self.recorded_results.get(id).map(String::as_str)
    }

    fn recorded_call(&self, request: Option<Side<'_>>) -> Option<&str> {
        if self.recorded_calls.is_empty() {
            return None;
        }
        let id = request?.event_id();
        self.recorded_calls.get(id).map(String::as_str)
    }
}

/// A span whose request has been read and whose terminal has not: its
/// request, held until then (a tool row with a copy of its strings).
/// Its place in the chain and its words are kept with it.
enum OpenSpan {
    Tool(ToolRow, RunText, Option<ChainMark>),
    Event(SpanKind, Box<Event>, Words, Option<ChainMark>),
}

impl OpenSpan {
    fn kind(&self) -> SpanKind {
        match self {
            OpenSpan::Tool(..) => SpanKind::Tool,
            OpenSpan::Event(kind, ..) => *kind,
        }
    }

    fn request(&self) -> Side<'_> {
        match self {
            OpenSpan::Tool(row, text, _) => Side::Tool(ToolView { row, text }),
            OpenSpan::Event(_, event, ..) => Side::Event(event),
        }
    }

    fn mark(&self) -> Option<ChainMark> {
        match self {
            OpenSpan::Tool(.., mark) | OpenSpan::Event(.., mark) => *mark,
        }
    }

    fn words(&self) -> Option<&str> {
        match self {
            OpenSpan::Tool(..) => None,
            OpenSpan::Event(_, _, words, _) => words.as_deref(),
        }
    }

    fn as_span(&self) -> TraceSpan<'_> {
        Span::new(self.kind(), Some(self.request()))
    }
}

/// One session's trace, built as its rows are read (offset order, one
/// epoch) and handed out span by span: a tool or command span as soon as
/// its terminal is read, the spans still open, the turns and the root once
/// the session's last row has been. It holds the open spans, the
/// session's [`SpanNotes`], and per turn its marks and span tally (an
/// interval or a reason per span), never the session's rows: a few
/// bytes per span, not a row per event. Pairing is
/// [`crate::report::spans::pair_spans`]'s, one row at a time.
pub(crate) struct TraceStream {
    ctx: Ctx,
    resource_head: String,
    notes: SpanNotes,
    open: Vec<OpenSpan>,
    turns: TurnFold,
    usage: BTreeMap<String, TurnUsage>,
    /// The earliest and latest event time: the root span's.
    times: Option<(i64, i64)>,
    /// The latest time of an event the agent itself reported: where the
    /// root ends when there is one, so that what harnery derived later (a
    /// recovery sweep days on, an end it inferred) does not stretch a
    /// session to the time of a finalize or an export.
    last_native: Option<i64>,
    /// What the session copied from its parents (a restore's record): in
    /// the parent's trace, not again here.
    inherited: Inherited,
    /// The model calls of the turn at hand.
    calls: ModelCalls,
}

impl TraceStream {
    pub(crate) fn new(session: SessionRef, part: Part<'_>, notes: SpanNotes) -> TraceStream {
        TraceStream {
            resource_head: resource_head(&session, part.epoch_tag, part.genesis),
            ctx: Ctx::new(session, part.archive, part.argv),
            notes,
            open: Vec::new(),
            turns: TurnFold::default(),
            usage: BTreeMap::new(),
            times: None,
            last_native: None,
            inherited: Inherited::default(),
            calls: ModelCalls::default(),
        }
    }

    /// Leave out the events `inherited` says are a parent's copies.
    pub(crate) fn inherit(&mut self, inherited: Inherited) {
        self.inherited = inherited;
    }

    /// `{"resource":…,"spans":[`: what a document opens the session's
    /// spans with.
    pub(crate) fn resource_head(&self) -> &str {
        &self.resource_head
    }

    /// Take the session's next row (its strings in `text`, the text of its
    /// run); `sink` gets each span it ends.
    pub(crate) fn take(
        &mut self,
        traced: Traced,
        text: &RunText,
        marks: &RunMarks<'_>,
        sink: &mut impl SpanSink,
    ) -> io::Result<()> {
        match traced {
            Traced::Event(event, words) => {
                let mark = marks.at(event.offset);
                self.feed_with(event, words, mark, sink)
            }
            Traced::Mark { turn_id, mark } => {
                self.mark(turn_id.map(|t| text.get(t)), mark);
                Ok(())
            }
            Traced::Tool(row) => {
                self.mark(row.turn_id.map(|t| text.get(t)), row.mark);
                let mark = marks.at(row.offset);
                if row.end.is_none() {
                    let (request, own) = row.owned(text);
                    self.open.push(OpenSpan::Tool(request, own, mark));
                    return Ok(());
                }
                let terminal = Side::Tool(ToolView { row: &row, text });
                self.close_span(SpanKind::Tool, terminal, (mark, None), sink)
            }
        }
    }

    fn mark(&mut self, turn_id: Option<&str>, mark: TurnMark) {
        let t = mark.time_unix_ns;
        self.times = Some(self.times.map_or((t, t), |(a, b)| (a.min(t), b.max(t))));
        if mark.native {
            self.last_native = Some(self.last_native.map_or(t, |l| l.max(t)));
        }
        if let Some(turn) = turn_id {
            self.turns.add_mark(turn, mark);
        }
    }

    /// Take the session's next event; `sink` gets each span it ends.
    #[cfg(test)]
    pub(crate) fn feed(&mut self, event: Box<Event>, sink: &mut impl SpanSink) -> io::Result<()> {
        self.feed_with(event, None, None, sink)
    }

    /// Take the session's next event, with its words and place in the
    /// chain; `sink` gets each span it ends.
    fn feed_with(
        &mut self,
        event: Box<Event>,
        words: Words,
        mark: Option<ChainMark>,
        sink: &mut impl SpanSink,
    ) -> io::Result<()> {
        if self.inherited.is_copy(&event) {
            return Ok(());
        }
        self.mark(event.turn.turn_id.as_deref(), TurnMark::of(&event));
        add_turn_usage(&mut self.usage, &event);
        let mut done = Vec::new();
        self.calls.take(&event, words.as_deref(), mark, &mut done);
        for call in &done {
            emit(sink, &self.ctx.chat(call))?;
        }
        let (kind, opens) = match &event.payload {
            Payload::ToolRequested(_) => (SpanKind::Tool, true),
            Payload::CommandRequested(_) => (SpanKind::Command, true),
            Payload::ToolCompleted(_) => (SpanKind::Tool, false),
            Payload::CommandCompleted(_) => (SpanKind::Command, false),
            _ => return Ok(()),
        };
        if opens {
            self.open.push(OpenSpan::Event(kind, event, words, mark));
            return Ok(());
        }
        let words = words.as_deref();
        self.close_span(kind, Side::Event(&event), (mark, words), sink)
    }

    /// The session has no more rows: its open spans, turns and root.
    pub(crate) fn finish(mut self, sink: &mut impl SpanSink) -> io::Result<()> {
        for call in std::mem::take(&mut self.calls).finish() {
            emit(sink, &self.ctx.chat(&call))?;
        }
        for open in std::mem::take(&mut self.open) {
            let mut span = open.as_span();
            span.late = self.notes.late_for(open.request());
            self.turns.add_span(&span);
            let extras = SpanExtras {
                request_mark: open.mark(),
                arguments: open.words(),
                ..SpanExtras::default()
            };
            let out = self
                .ctx
                .span_of(&span, self.notes.recorded_call(span.request), &extras);
            emit(sink, &out)?;
        }
        let turns = std::mem::take(&mut self.turns).receipts(&self.usage);
        for turn in &turns {
            let out = self.ctx.turn(turn, self.usage.get(&turn.turn_id));
            emit(sink, &out)?;
        }
        let (start, last) = self.times.unwrap_or((0, 0));
        let end = self.last_native.unwrap_or(last);
        let root = self.ctx.root(start, end);
        emit(sink, &root)
    }

    /// `terminal`: the terminal's side, with its place in the chain and
    /// its words.
    fn close_span(
        &mut self,
        kind: SpanKind,
        terminal: Side<'_>,
        (mark, words): (Option<ChainMark>, Option<&str>),
        sink: &mut impl SpanSink,
    ) -> io::Result<()> {
        let request = self
            .match_terminal(kind, terminal)
            .map(|i| self.open.remove(i));
        let mut span = match &request {
            Some(open) => open.as_span(),
            None => Span::new(kind, None),
        };
        span.terminal = Some(terminal);
        if let Some(open) = &request {
            span.late = self.notes.late_for(open.request());
        }
        self.turns.add_span(&span);
        let extras = SpanExtras {
            request_mark: request.as_ref().and_then(OpenSpan::mark),
            terminal_mark: mark,
            arguments: request.as_ref().and_then(OpenSpan::words),
            result: words.or_else(|| self.notes.recorded_result(span.request)),
        };
        let out = self
            .ctx
            .span_of(&span, self.notes.recorded_call(span.request), &extras);
        emit(sink, &out)
    }

    /// The open span `terminal` closes, as `pair_spans` finds it: the
    /// request it links to, else the oldest open span with its call id
    /// (or, without one, its tool name).
    fn match_terminal(&self, kind: SpanKind, terminal: Side<'_>) -> Option<usize> {
        let mut candidates = self
            .open
            .iter()
            .enumerate()
            .filter(|(_, o)| o.kind() == kind);
        let found = match terminal.link() {
            Some(link) => candidates.find(|(_, o)| o.request().event_id() == link),
            None => candidates.find(|(_, o)| o.as_span().takes_unlinked(terminal)),
        };
        found.map(|(i, _)| i)
    }
}

fn emit(sink: &mut impl SpanSink, span: &SpanOut<'_>) -> io::Result<()> {
    span.write(sink.next_span()?);
    Ok(())
}

/// Drop from `event` what no span of its trace reads: tool inputs and
/// outputs, prompt, message and reasoning text, raw references. An export
/// holds an event read whole while the span it opened is open, and a
/// session's late evidence until its last row has been read (a later row
/// may still close or amend a span), so what it holds per event is the
/// envelope and the few payload fields the mapping above uses, whatever
/// the size of the stored row.
pub(crate) fn keep_traced_fields(event: &mut Event) {
    event.raw = Vec::new();
    event.clock = None;
    event.agent_id = None;
    match &mut event.payload {
        Payload::ToolRequested(p) => {
            p.input = None;
            p.input_digest = String::new();
        }
        Payload::ToolCompleted(p) => p.content = None,
        Payload::CommandRequested(p) => p.cwd = None,
        Payload::PromptSubmitted(p) => p.prompt = None,
        Payload::MessageUser(p) => p.text = None,
        Payload::MessageAssistant(p) => {
            p.text = None;
            p.tool_call_ids = Vec::new();
        }
        Payload::ReasoningRecorded(p) => {
            p.text = None;
            p.continuation = None;
        }
        Payload::MessageDisplayed(p) => p.text = None,
        Payload::UsageReported(p) => p.cost = None,
        Payload::SessionStarted(p) => {
            p.cwd = None;
            p.transcript_path = None;
        }
        Payload::CompactionCompleted(p) => p.summary = None,
        Payload::PermissionRequested(p) => p.input = None,
        Payload::LateEvidence(p) => p.error = None,
        _ => {}
    }
}
