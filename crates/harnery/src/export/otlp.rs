//! OTLP/JSON traces: one session's events as spans (the bounded
//! `ExportTraceServiceRequest` documents that carry them are
//! `otlp_documents`'s [`Documents`]).
//!
//! Mapping (one resource and one trace per session):
//! - the session is a root span, `invoke_agent <adapter>`;
//! - each turn is a child span covering the receipt's wall interval; where
//!   the agent's record reported usage in the turn, it carries
//!   `gen_ai.request.model` (the turn's last named model) and the sums
//!   `gen_ai.usage.input_tokens` / `gen_ai.usage.output_tokens`, each only
//!   where reported, so a turn without usage is what it always was;
//! - each tool span is `execute_tool <name>` under its turn, with the
//!   OpenTelemetry GenAI attributes `gen_ai.operation.name = execute_tool`,
//!   `gen_ai.tool.name`, `gen_ai.tool.call.id`, `gen_ai.conversation.id`
//!   (the call id from the hook, else from the record's `tool.recorded`
//!   that matched the span, as for Copilot, whose hooks carry none);
//! - each `harnery exec` command is `exec <argv0>` with `process.*` attributes.
//!
//! The trace id is derived from the session, span ids from event ids, so an
//! export is reproducible. A session's part in an archived epoch derives
//! its root and turn span ids from the epoch's genesis id as well, so the
//! parts of one trace never share a span id; the live part keeps the ids
//! it always had.
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
//! through [`SpanSide`], whichever they are. Spans are written by hand
//! (`otlp_json`) as serde_json printed the sorted `serde_json::Value`
//! trees of earlier builds, so a span's text is unchanged wherever its
//! meaning is; only the order of a session's spans changed (earlier builds
//! wrote root, turns, then spans).

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::io;

pub use super::otlp_documents::{Documents, SpanSink};
use super::otlp_json::{
    AnyValue, Attr, DecimalI64, ResourceOut, SpanEventOut, SpanId, SpanOut, StatusOut, attr_bool,
    attr_int, attr_str,
};
pub use super::traced::{RunText, Traced};
use super::traced::{ToolRow, ToolView};
use crate::contract::json::outcome_name;
use crate::contract::{Event, EventType, Observation, Outcome, Payload, Recovery, SessionRef};
use crate::report::receipts::{TurnFold, TurnMark, TurnReceipt};
use crate::report::spans::{Span, SpanKind, SpanSide, SpanState};
use crate::report::usage::{TurnUsage, add_turn_usage};

/// OTLP span kind INTERNAL.
const KIND_INTERNAL: u8 = 1;
/// OTLP status code ERROR.
const STATUS_ERROR: u8 = 2;

/// Which epoch a session's events come from, as its spans show it.
#[derive(Debug, Clone, Copy, Default)]
pub struct Part<'a> {
    /// Added to the resource as `harnery.epoch` when rows carry their epoch.
    pub epoch_tag: Option<&'a str>,
    /// The genesis id of an archived epoch (`None` for the live one).
    pub archive: Option<&'a str>,
}

/// What a session's later rows say of its spans: the call id the agent's
/// record gave a span (`tool.recorded`) and the native completions that
/// came after it was recovered (`tool.late_evidence`). These may come
/// after a span's terminal, so an export reads them first (few rows, by
/// the ledger's type column) and can then write each span at its terminal.
#[derive(Default)]
pub struct SpanNotes {
    /// By the span's request event id; the last record's word wins.
    recorded_calls: HashMap<String, String>,
    /// By the span's request event id, in offset order.
    late: HashMap<String, Vec<Event>>,
}

impl SpanNotes {
    /// The event types whose rows [`SpanNotes::add`] takes.
    pub const TYPES: &[EventType] = &[EventType::ToolRecorded, EventType::LateEvidence];

    /// Take one event (offset order); events of other types are ignored.
    pub fn add(&mut self, mut event: Event) {
        match &event.payload {
            Payload::ToolRecorded(t) => {
                if let Some(request) = &t.span_request_event_id {
                    self.recorded_calls
                        .insert(request.to_string(), t.tool_call_id.clone());
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

    fn recorded_call(&self, request: Option<Side<'_>>) -> Option<&str> {
        if self.recorded_calls.is_empty() {
            return None;
        }
        let id = request?.event_id();
        self.recorded_calls.get(id).map(String::as_str)
    }
}

/// A span's request or terminal as the trace reads it: a tool row with
/// its run's text, or an event read whole.
#[derive(Clone, Copy)]
enum Side<'a> {
    Tool(ToolView<'a>),
    Event(&'a Event),
}

impl<'a> Side<'a> {
    /// The event, where the row was read whole: only then can it be a
    /// command, or carry an error or an exit code.
    fn event(self) -> Option<&'a Event> {
        match self {
            Side::Event(e) => Some(e),
            Side::Tool(_) => None,
        }
    }

    fn offset(self) -> u64 {
        match self {
            Side::Tool(t) => t.row.offset,
            Side::Event(e) => e.offset,
        }
    }
}

/// Each read of [`SpanSide`], from whichever row the side is.
macro_rules! either_side {
    ($($read:ident -> $ty:ty;)*) => {
        impl<'a> SpanSide<'a> for Side<'a> {
            $(fn $read(self) -> $ty {
                match self {
                    Side::Tool(t) => t.$read(),
                    Side::Event(e) => e.$read(),
                }
            })*
        }
    };
}

either_side! {
    event_id -> &'a str;
    time_unix_ns -> i64;
    turn_id -> Option<&'a str>;
    tool_name -> Option<&'a str>;
    tool_call_id -> Option<&'a str>;
    outcome -> Option<Outcome>;
    reported_duration -> Option<&'a Observation<u64>>;
    recovery -> Option<&'a Recovery>;
    link -> Option<&'a str>;
}

/// A span as the trace maps it.
type TraceSpan<'a> = Span<'a, Side<'a>>;

/// A span whose request has been read and whose terminal has not: its
/// request, held until then (a tool row with a copy of its strings).
enum OpenSpan {
    Tool(ToolRow, RunText),
    Event(SpanKind, Box<Event>),
}

impl OpenSpan {
    fn kind(&self) -> SpanKind {
        match self {
            OpenSpan::Tool(..) => SpanKind::Tool,
            OpenSpan::Event(kind, _) => *kind,
        }
    }

    fn request(&self) -> Side<'_> {
        match self {
            OpenSpan::Tool(row, text) => Side::Tool(ToolView { row, text }),
            OpenSpan::Event(_, event) => Side::Event(event),
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
pub struct TraceStream {
    ctx: Ctx,
    resource_head: String,
    notes: SpanNotes,
    open: Vec<OpenSpan>,
    turns: TurnFold,
    usage: BTreeMap<String, TurnUsage>,
    /// The earliest and latest event time: the root span's.
    times: Option<(i64, i64)>,
}

impl TraceStream {
    pub fn new(session: SessionRef, part: Part<'_>, notes: SpanNotes) -> TraceStream {
        TraceStream {
            resource_head: resource_head(&session, part.epoch_tag),
            ctx: Ctx::new(session, part.archive),
            notes,
            open: Vec::new(),
            turns: TurnFold::default(),
            usage: BTreeMap::new(),
            times: None,
        }
    }

    /// `{"resource":…,"spans":[`: what a document opens the session's
    /// spans with.
    pub fn resource_head(&self) -> &str {
        &self.resource_head
    }

    /// Take the session's next row (its strings in `text`, the text of its
    /// run); `sink` gets each span it ends.
    pub fn take(
        &mut self,
        traced: Traced,
        text: &RunText,
        sink: &mut impl SpanSink,
    ) -> io::Result<()> {
        match traced {
            Traced::Event(event) => self.feed(event, sink),
            Traced::Mark { turn_id, mark } => {
                self.mark(turn_id.map(|t| text.get(t)), mark);
                Ok(())
            }
            Traced::Tool(row) => {
                self.mark(row.turn_id.map(|t| text.get(t)), row.mark);
                if row.end.is_none() {
                    let (request, own) = row.owned(text);
                    self.open.push(OpenSpan::Tool(request, own));
                    return Ok(());
                }
                let terminal = Side::Tool(ToolView { row: &row, text });
                self.close_span(SpanKind::Tool, terminal, sink)
            }
        }
    }

    fn mark(&mut self, turn_id: Option<&str>, mark: TurnMark) {
        let t = mark.time_unix_ns;
        self.times = Some(self.times.map_or((t, t), |(a, b)| (a.min(t), b.max(t))));
        if let Some(turn) = turn_id {
            self.turns.add_mark(turn, mark);
        }
    }

    /// Take the session's next event; `sink` gets each span it ends.
    pub fn feed(&mut self, event: Box<Event>, sink: &mut impl SpanSink) -> io::Result<()> {
        self.mark(event.turn.turn_id.as_deref(), TurnMark::of(&event));
        add_turn_usage(&mut self.usage, &event);
        let (kind, opens) = match &event.payload {
            Payload::ToolRequested(_) => (SpanKind::Tool, true),
            Payload::CommandRequested(_) => (SpanKind::Command, true),
            Payload::ToolCompleted(_) => (SpanKind::Tool, false),
            Payload::CommandCompleted(_) => (SpanKind::Command, false),
            _ => return Ok(()),
        };
        if opens {
            self.open.push(OpenSpan::Event(kind, event));
            return Ok(());
        }
        self.close_span(kind, Side::Event(&event), sink)
    }

    /// The session has no more rows: its open spans, turns and root.
    pub fn finish(mut self, sink: &mut impl SpanSink) -> io::Result<()> {
        for open in std::mem::take(&mut self.open) {
            let mut span = open.as_span();
            span.late = self.notes.late_for(open.request());
            self.turns.add_span(&span);
            let out = self
                .ctx
                .span_of(&span, self.notes.recorded_call(span.request));
            emit(sink, &out)?;
        }
        let turns = std::mem::take(&mut self.turns).receipts(&self.usage);
        for turn in &turns {
            let out = self.ctx.turn(turn, self.usage.get(&turn.turn_id));
            emit(sink, &out)?;
        }
        let (start, end) = self.times.unwrap_or((0, 0));
        let root = self.ctx.root(start, end);
        emit(sink, &root)
    }

    fn close_span(
        &mut self,
        kind: SpanKind,
        terminal: Side<'_>,
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
        let out = self
            .ctx
            .span_of(&span, self.notes.recorded_call(span.request));
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

/// One session's spans, each already serialized, and the opening of the
/// resource that holds them: a whole trace in memory, for tests and for
/// callers that hold the session's events anyway.
#[cfg(test)]
pub struct SessionTrace {
    resource_head: String,
    spans: String,
    starts: Vec<usize>,
}

#[cfg(test)]
impl SessionTrace {
    /// Each span's JSON text, in export order.
    pub fn spans(&self) -> impl Iterator<Item = &str> {
        let ends = self.starts.iter().skip(1).copied();
        let ends = ends.chain(std::iter::once(self.spans.len()));
        self.starts
            .iter()
            .zip(ends)
            .map(|(&a, b)| &self.spans[a..b])
    }
}

#[cfg(test)]
impl SpanSink for SessionTrace {
    fn next_span(&mut self) -> io::Result<&mut String> {
        self.starts.push(self.spans.len());
        Ok(&mut self.spans)
    }
}

/// One session's events (offset order, one epoch) as its trace, through
/// [`TraceStream`] as the export builds it.
#[cfg(test)]
pub fn session_trace(session: &SessionRef, events: &[&Event], part: Part<'_>) -> SessionTrace {
    let mut notes = SpanNotes::default();
    for e in events {
        notes.add((*e).clone());
    }
    let mut stream = TraceStream::new(session.clone(), part, notes);
    let mut trace = SessionTrace {
        resource_head: stream.resource_head().to_string(),
        spans: String::new(),
        starts: Vec::new(),
    };
    for e in events {
        stream
            .feed(Box::new((*e).clone()), &mut trace)
            .expect("memory takes it");
    }
    stream.finish(&mut trace).expect("memory takes it");
    trace
}

#[cfg(test)]
impl<W: std::io::Write> Documents<W> {
    /// A whole trace: its resource, its spans, and the resource closed.
    pub fn push(&mut self, trace: &SessionTrace) -> io::Result<()> {
        self.start_resource(&trace.resource_head);
        for span in trace.spans() {
            self.next_span()?.push_str(span);
        }
        self.end_resource();
        Ok(())
    }
}

/// Drop from `event` what no span of its trace reads: tool inputs and
/// outputs, prompt, message and reasoning text, raw references. An export
/// holds an event read whole while the span it opened is open, and a
/// session's late evidence until its last row has been read (a later row
/// may still close or amend a span), so what it holds per event is the
/// envelope and the few payload fields the mapping above uses, whatever
/// the size of the stored row.
pub fn keep_traced_fields(event: &mut Event) {
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

/// The GenAI usage attributes of a turn, each only where reported.
fn usage_attributes(u: &TurnUsage) -> Vec<Attr<'_>> {
    let mut attrs = Vec::new();
    if let Some(model) = &u.model {
        attrs.push(attr_str("gen_ai.request.model", model));
    }
    let counts = [
        ("gen_ai.usage.input_tokens", u.tokens.input),
        ("gen_ai.usage.output_tokens", u.tokens.output),
    ];
    for (key, n) in counts {
        if let Some(n) = n {
            attrs.push(attr_int(key, i64::try_from(n).unwrap_or(i64::MAX)));
        }
    }
    attrs
}

/// `{"resource":…,"scopeSpans":[{"scope":…,"spans":[`, closed by
/// the resource tail [`Documents`] writes.
fn resource_head(session: &SessionRef, epoch_tag: Option<&str>) -> String {
    let mut attributes = vec![
        attr_str("service.name", "harnery"),
        attr_str("harnery.adapter", session.adapter.as_str()),
        attr_str("harnery.session.id", &session.session_id),
    ];
    if let Some(label) = epoch_tag {
        attributes.push(attr_str("harnery.epoch", label));
    }
    let mut resource = String::new();
    ResourceOut { attributes }.write(&mut resource);
    let version = env!("CARGO_PKG_VERSION");
    format!(
        "{{\"resource\":{resource},\"scopeSpans\":[{{\"scope\":{{\"name\":\"harnery\",\"version\":\"{version}\"}},\"spans\":["
    )
}

/// 32 hex digits derived from the session.
pub fn trace_id(session: &SessionRef) -> String {
    id_hex(
        "harnery.otlp.trace",
        &[session.adapter.as_str(), &session.session_id],
        16,
    )
}

/// 16 hex digits derived from a key (an event id, or a turn id).
pub fn span_id(key: &str) -> String {
    span_id_of(key).as_str().to_string()
}

fn span_id_of(key: &str) -> SpanId {
    let hash = id_hash("harnery.otlp.span", &[key]);
    let mut digits = [0u8; 16];
    hex_into(&hash.as_bytes()[..8], &mut digits);
    SpanId(digits)
}

fn id_hex(tag: &str, parts: &[&str], bytes: usize) -> String {
    let hash = id_hash(tag, parts);
    let mut digits = vec![0u8; bytes * 2];
    hex_into(&hash.as_bytes()[..bytes], &mut digits);
    String::from_utf8(digits).expect("hex digits")
}

/// The hash of `tag` and `parts`, each after its length (8 bytes, little
/// endian). Laid out in one buffer and hashed in one call: an id's input
/// is short, and a hasher fed piece by piece spent more on its pieces
/// than on the hash.
fn id_hash(tag: &str, parts: &[&str]) -> blake3::Hash {
    let mut input = [0u8; 256];
    let mut len = 0;
    for part in std::iter::once(&tag).chain(parts) {
        let size = (part.len() as u64).to_le_bytes();
        for piece in [&size[..], part.as_bytes()] {
            let Some(room) = input.get_mut(len..len + piece.len()) else {
                return id_hash_long(tag, parts);
            };
            room.copy_from_slice(piece);
            len += piece.len();
        }
    }
    blake3::hash(&input[..len])
}

/// [`id_hash`] of an input too long for its buffer.
fn id_hash_long(tag: &str, parts: &[&str]) -> blake3::Hash {
    let mut hasher = blake3::Hasher::new();
    for part in std::iter::once(&tag).chain(parts) {
        hasher.update(&(part.len() as u64).to_le_bytes());
        hasher.update(part.as_bytes());
    }
    hasher.finalize()
}

/// Lowercase hex digits of `bytes` into `out` (twice as long), as
/// `blake3::Hash::to_hex` writes them.
fn hex_into(bytes: &[u8], out: &mut [u8]) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    for (&b, pair) in bytes.iter().zip(out.chunks_exact_mut(2)) {
        pair[0] = DIGITS[usize::from(b >> 4)];
        pair[1] = DIGITS[usize::from(b & 0xf)];
    }
}

struct Ctx {
    session: SessionRef,
    trace_id: String,
    root_id: SpanId,
    /// The genesis id of an archived part, folded into root and turn ids.
    archive: Option<String>,
    /// Turn span ids by turn id (a session's turns, few).
    turn_ids: RefCell<HashMap<String, SpanId>>,
    /// The last turn asked for: a turn's spans mostly come together.
    last_turn: RefCell<Option<(String, SpanId)>>,
}

impl Ctx {
    fn new(session: SessionRef, archive: Option<&str>) -> Ctx {
        let mut root_key = format!("session:{}:{}", session.adapter, session.session_id);
        if let Some(genesis) = archive {
            root_key.push_str(&format!(":epoch:{genesis}"));
        }
        Ctx {
            trace_id: trace_id(&session),
            root_id: span_id_of(&root_key),
            session,
            archive: archive.map(str::to_string),
            turn_ids: RefCell::new(HashMap::new()),
            last_turn: RefCell::new(None),
        }
    }

    /// Every span of a turn names it as parent: derived once per turn.
    fn turn_span_id(&self, turn_id: &str) -> SpanId {
        if let Some((last, id)) = &*self.last_turn.borrow()
            && last == turn_id
        {
            return *id;
        }
        let known = self.turn_ids.borrow().get(turn_id).copied();
        let id = known.unwrap_or_else(|| {
            let mut key = format!("turn:{}:{turn_id}", self.session.session_id);
            if let Some(genesis) = &self.archive {
                key.push_str(&format!(":epoch:{genesis}"));
            }
            let id = span_id_of(&key);
            self.turn_ids.borrow_mut().insert(turn_id.to_string(), id);
            id
        });
        *self.last_turn.borrow_mut() = Some((turn_id.to_string(), id));
        id
    }

    fn root(&self, start: i64, end: i64) -> SpanOut<'_> {
        let adapter = self.session.adapter.as_str();
        let attrs = vec![
            attr_str("gen_ai.operation.name", "invoke_agent"),
            attr_str("gen_ai.agent.name", adapter),
        ];
        let name = format!("invoke_agent {adapter}");
        self.span(self.root_id, None, name, start, end, attrs)
    }

    /// A turn's span: the receipt's wall, its tool channel, and the GenAI
    /// usage the agent's record reported in it.
    fn turn<'a>(&'a self, turn: &'a TurnReceipt, usage: Option<&'a TurnUsage>) -> SpanOut<'a> {
        let mut attrs = vec![
            attr_str("harnery.turn.id", &turn.turn_id),
            attr_str("harnery.turn.source", turn.turn_source),
            attr_int("harnery.turn.tool_known_ms", turn.tools.known_ms as i64),
            attr_int(
                "harnery.turn.tool_upper_bound_ms",
                turn.tools.upper_bound_ms as i64,
            ),
            attr_bool(
                "harnery.turn.tool_eligible_for_ranking",
                turn.tools.eligible_for_ranking,
            ),
        ];
        if let Some(u) = usage {
            attrs.extend(usage_attributes(u));
        }
        let (start, end) = (turn.started_unix_ns, turn.ended_unix_ns);
        let id = self.turn_span_id(&turn.turn_id);
        let root = Some(self.root_id);
        self.span(id, root, "turn".into(), start, end, attrs)
    }

    fn span<'a>(
        &'a self,
        span_id: SpanId,
        parent_span_id: Option<SpanId>,
        name: String,
        start: i64,
        end: i64,
        mut attributes: Vec<Attr<'a>>,
    ) -> SpanOut<'a> {
        attributes.push(attr_str("gen_ai.conversation.id", &self.session.session_id));
        SpanOut {
            attributes,
            end_time_unix_nano: DecimalI64(end.max(start).max(0)),
            events: Vec::new(),
            kind: KIND_INTERNAL,
            name,
            parent_span_id,
            span_id,
            start_time_unix_nano: DecimalI64(start.max(0)),
            status: None,
            trace_id: &self.trace_id,
        }
    }

    /// `recorded_call`: the call id the agent's record gave the span, used
    /// when the hook carried none.
    fn span_of<'a>(&'a self, span: &TraceSpan<'a>, recorded_call: Option<&'a str>) -> SpanOut<'a> {
        let anchor = span.anchor();
        let parent = match span.turn_id() {
            Some(turn) => self.turn_span_id(turn),
            None => self.root_id,
        };
        // Room for every attribute a span can have: one allocation.
        let mut attrs = Vec::with_capacity(16);
        let name = match span.kind {
            SpanKind::Tool => tool_identity(span, recorded_call, &mut attrs),
            SpanKind::Command => command_identity(span, &mut attrs),
        };
        let (start, end, end_label) = span_times(span);
        state_attributes(span, end_label, &mut attrs);
        let id = span_id_of(anchor.event_id());
        let mut out = self.span(id, Some(parent), name, start, end, attrs);
        out.status = status_of(span);
        out.events = span.late.iter().map(|e| late_event(e)).collect();
        out
    }
}

/// A tool span's name, and its identity among `attrs`.
fn tool_identity<'a>(
    span: &TraceSpan<'a>,
    recorded_call: Option<&'a str>,
    attrs: &mut Vec<Attr<'a>>,
) -> String {
    let tool = span.tool_name().unwrap_or("unknown");
    attrs.push(attr_str("gen_ai.operation.name", "execute_tool"));
    attrs.push(attr_str("gen_ai.tool.name", tool));
    if let Some(call) = span.tool_call_id().or(recorded_call) {
        attrs.push(attr_str("gen_ai.tool.call.id", call));
    }
    format!("execute_tool {tool}")
}

/// A command span's name, and its identity among `attrs`.
fn command_identity<'a>(span: &TraceSpan<'a>, attrs: &mut Vec<Attr<'a>>) -> String {
    let argv: &'a [String] = match span.request.and_then(Side::event).map(|r| &r.payload) {
        Some(Payload::CommandRequested(p)) => &p.argv,
        _ => &[],
    };
    let program = argv.first().map_or("unknown", String::as_str);
    let values = argv
        .iter()
        .map(|a| AnyValue::String(Cow::Borrowed(a)))
        .collect();
    attrs.push(attr_str("harnery.span.kind", "command"));
    attrs.push(Attr {
        key: "process.command_args",
        value: AnyValue::Array { values },
    });
    if let Some(Payload::CommandCompleted(p)) =
        span.terminal.and_then(Side::event).map(|t| &t.payload)
        && let Some(code) = p.exit_code
    {
        attrs.push(attr_int("process.exit.code", code));
    }
    format!("exec {program}")
}

/// Start, end, and where the end came from. Only an observed terminal
/// ends a span later than it started: a recovery sweep is not one.
fn span_times(span: &TraceSpan<'_>) -> (i64, i64, &'static str) {
    let start = span.anchor().time_unix_ns();
    match (span.state(), span.terminal) {
        (SpanState::Closed, Some(t)) => {
            let end = t.time_unix_ns();
            (start.min(end), end, "observed")
        }
        _ => (start, start, "not_observed"),
    }
}

fn state_attributes<'a>(span: &TraceSpan<'a>, end_label: &'static str, attrs: &mut Vec<Attr<'a>>) {
    let state = match span.state() {
        SpanState::Open => "open",
        SpanState::Closed => "closed",
        SpanState::Recovered(_) => "recovered",
    };
    let outcome = span.outcome().map_or("unknown", outcome_name);
    attrs.push(attr_str("harnery.span.state", state));
    attrs.push(attr_str("harnery.span.end", end_label));
    attrs.push(attr_str("harnery.outcome", outcome));
    if span.request_recovered() {
        attrs.push(attr_str(
            "harnery.request.recovery.reason",
            "request_not_observed",
        ));
    }
    if let Some(Observation::Observed(ms)) = span.reported_duration() {
        attrs.push(attr_int("harnery.duration_ms", *ms as i64));
    }
    if let Some(terminal) = span.terminal
        && let Some(recovery) = terminal.recovery()
    {
        attrs.push(attr_str(
            "harnery.recovery.reason",
            recovery.reason.as_str(),
        ));
        match &recovery.elapsed_upper_bound_ms {
            Some(Observation::Observed(ms)) => attrs.push(attr_int(
                "harnery.recovery.elapsed_upper_bound_ms",
                *ms as i64,
            )),
            Some(Observation::Unknown(why)) => attrs.push(attr_str(
                "harnery.recovery.elapsed_upper_bound_unknown",
                why,
            )),
            None => {}
        }
        attrs.push(attr_int(
            "harnery.recovery.swept_unix_nano",
            terminal.time_unix_ns().max(0),
        ));
    }
}

/// ERROR for an observed failure; otherwise unset (never an invented OK).
fn status_of(span: &TraceSpan<'_>) -> Option<StatusOut> {
    if span.outcome() != Some(Outcome::Failure) {
        return None;
    }
    let message = match span.terminal.and_then(Side::event).map(|t| &t.payload) {
        Some(Payload::ToolCompleted(p)) => p.error.clone().unwrap_or_default(),
        Some(Payload::CommandCompleted(p)) => {
            p.exit_code.map(|c| format!("exit {c}")).unwrap_or_default()
        }
        _ => String::new(),
    };
    Some(StatusOut {
        code: STATUS_ERROR,
        message,
    })
}

fn late_event<'a>(event: &'a Event) -> SpanEventOut<'a> {
    let outcome = match &event.payload {
        Payload::LateEvidence(p) => outcome_name(p.outcome),
        _ => "unknown",
    };
    SpanEventOut {
        attributes: vec![attr_str("harnery.outcome", outcome)],
        name: "harnery.late_evidence",
        time_unix_nano: DecimalI64(event.time_unix_ns.max(0)),
    }
}

#[cfg(test)]
#[path = "otlp_tests.rs"]
mod tests;
