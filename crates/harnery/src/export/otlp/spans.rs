//! What each span says: its name, ids, parent, times, status and
//! attributes (the OpenTelemetry GenAI conventions where they apply,
//! `harnery.*` for the rest), for the root, a turn, a tool or a command
//! span; and the resource that opens a session's spans.

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::HashMap;

use super::chat::ModelCall;
use super::content::messages;
use super::ids::{span_id_of, trace_id};
use super::json::{
    AnyValue, Attr, DecimalI64, ResourceOut, SpanEventOut, SpanId, SpanOut, StatusOut, attr_bool,
    attr_int, attr_str,
};
use super::side::{Side, TraceSpan};
use crate::contract::json::outcome_name;
use crate::contract::{Event, Observation, Outcome, Payload, SessionRef};
use crate::ledger::ChainMark;
use crate::report::receipts::TurnReceipt;
use crate::report::spans::{SpanKind, SpanSide, SpanState};
use crate::report::usage::TurnUsage;

/// OTLP span kind INTERNAL.
const KIND_INTERNAL: u8 = 1;
/// OTLP status code ERROR.
const STATUS_ERROR: u8 = 2;

/// The GenAI usage attributes of a turn, each only where reported.
fn usage_attributes(u: &TurnUsage) -> Vec<Attr<'_>> {
    let mut attrs = Vec::new();
    if let Some(model) = &u.model {
        attrs.push(attr_str("gen_ai.request.model", model));
    }
    // Input as the agent reported it (Claude Code's excludes the cache's
    // reads and writes, which follow under their own names).
    let counts = [
        ("gen_ai.usage.input_tokens", u.tokens.input),
        ("gen_ai.usage.output_tokens", u.tokens.output),
        ("gen_ai.usage.cache_read.input_tokens", u.tokens.cache_read),
        (
            "gen_ai.usage.cache_creation.input_tokens",
            u.tokens.cache_write,
        ),
    ];
    for (key, n) in counts {
        if let Some(n) = n {
            attrs.push(attr_int(key, i64::try_from(n).unwrap_or(i64::MAX)));
        }
    }
    attrs
}

/// The GenAI usage attributes of one model call, as the conventions
/// count them: `gen_ai.usage.input_tokens` is every input token, the
/// cache's reads and writes included (the agents' input, as harnery keeps
/// it, counts neither); the cache's writes under the current name and,
/// for receivers not yet updated, the older `cache_creation` one.
fn call_usage(call: &ModelCall) -> Vec<Attr<'static>> {
    let t = &call.tokens;
    let whole_input = match (t.input, t.cache_read, t.cache_write) {
        (None, None, None) => None,
        (i, r, w) => Some(
            i.unwrap_or(0)
                .saturating_add(r.unwrap_or(0))
                .saturating_add(w.unwrap_or(0)),
        ),
    };
    let counts = [
        ("gen_ai.usage.input_tokens", whole_input),
        ("gen_ai.usage.output_tokens", t.output),
        ("gen_ai.usage.cache_read.input_tokens", t.cache_read),
        ("gen_ai.usage.cache_write.input_tokens", t.cache_write),
        ("gen_ai.usage.cache_creation.input_tokens", t.cache_write),
        ("harnery.usage.uncached_input_tokens", t.input),
        ("harnery.usage.reasoning_tokens", t.reasoning),
    ];
    counts
        .into_iter()
        .filter_map(|(key, n)| Some(attr_int(key, i64::try_from(n?).unwrap_or(i64::MAX))))
        .collect()
}

/// Where a span's rows stand in the chain, and the words it carries.
#[derive(Default)]
pub(super) struct SpanExtras<'a> {
    pub request_mark: Option<ChainMark>,
    pub terminal_mark: Option<ChainMark>,
    /// The tool's input (`gen_ai.tool.call.arguments`).
    pub arguments: Option<&'a str>,
    /// The tool's result (`gen_ai.tool.call.result`).
    pub result: Option<&'a str>,
}

/// `harnery.<side>.seq` and `harnery.<side>.hash` of a row.
fn chain_attributes(
    mark: Option<ChainMark>,
    keys: (&'static str, &'static str),
    attrs: &mut Vec<Attr<'_>>,
) {
    if let Some(m) = mark {
        attrs.push(attr_int(keys.0, m.seq));
        let hash = crate::ledger::chain::hex(&m.hash);
        attrs.push(Attr {
            key: keys.1,
            value: AnyValue::String(Cow::Owned(hash)),
        });
    }
}

fn owned<'a>(key: &'static str, value: String) -> Attr<'a> {
    Attr {
        key,
        value: AnyValue::String(Cow::Owned(value)),
    }
}

/// `{"resource":…,"scopeSpans":[{"scope":…,"spans":[`, closed by
/// the resource tail [`Documents`](super::documents::Documents) writes.
/// `genesis`: the genesis id of the epoch the spans' rows are in.
pub(super) fn resource_head(
    session: &SessionRef,
    epoch_tag: Option<&str>,
    genesis: Option<&str>,
) -> String {
    let mut attributes = vec![
        attr_str("service.name", "harnery"),
        attr_str("harnery.adapter", session.adapter.as_str()),
        attr_str("harnery.session.id", &session.session_id),
    ];
    if let Some(label) = epoch_tag {
        attributes.push(attr_str("harnery.epoch", label));
    }
    if let Some(genesis) = genesis {
        attributes.push(attr_str("harnery.ledger.genesis_id", genesis));
    }
    let mut resource = String::new();
    ResourceOut { attributes }.write(&mut resource);
    let version = env!("CARGO_PKG_VERSION");
    format!(
        "{{\"resource\":{resource},\"scopeSpans\":[{{\"scope\":{{\"name\":\"harnery\",\"version\":\"{version}\"}},\"spans\":["
    )
}

pub(super) struct Ctx {
    session: SessionRef,
    trace_id: String,
    root_id: SpanId,
    /// The genesis id of an archived part, folded into root and turn ids.
    archive: Option<String>,
    /// Turn span ids by turn id (a session's turns, few).
    turn_ids: RefCell<HashMap<String, SpanId>>,
    /// The last turn asked for: a turn's spans mostly come together.
    last_turn: RefCell<Option<(String, SpanId)>>,
    /// Whether a command span shows its argv.
    argv: bool,
}

impl Ctx {
    pub(super) fn new(session: SessionRef, archive: Option<&str>, argv: bool) -> Ctx {
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
            argv,
        }
    }

    /// A model call's span, `chat {model}`, under its turn: its model,
    /// response id and usage, the words of its prompt and its answer
    /// where spans carry words, and the first row it came from.
    pub(super) fn chat<'a>(&'a self, call: &'a ModelCall) -> SpanOut<'a> {
        let mut attrs = vec![attr_str("gen_ai.operation.name", "chat")];
        if let Some(model) = &call.model {
            attrs.push(attr_str("gen_ai.request.model", model));
            attrs.push(attr_str("gen_ai.response.model", model));
        }
        if let Some(id) = &call.message_id {
            attrs.push(attr_str("gen_ai.response.id", id));
        }
        attrs.extend(call_usage(call));
        if let Some(input) = &call.input {
            attrs.push(owned("gen_ai.input.messages", messages("user", input)));
        }
        if let Some(output) = &call.output {
            attrs.push(owned(
                "gen_ai.output.messages",
                messages("assistant", output),
            ));
        }
        attrs.push(attr_str("harnery.evidence", "observed"));
        attrs.push(attr_str("harnery.event_id", &call.event_id));
        chain_attributes(call.mark, ("harnery.seq", "harnery.hash"), &mut attrs);
        let mut key = match &call.message_id {
            Some(id) => format!(
                "chat:{}:{}:{id}",
                self.session.adapter, self.session.session_id
            ),
            None => format!("chat:{}", call.event_id),
        };
        if let Some(genesis) = &self.archive {
            key.push_str(&format!(":epoch:{genesis}"));
        }
        let parent = match &call.turn_id {
            Some(turn) => self.turn_span_id(turn),
            None => self.root_id,
        };
        let name = match &call.model {
            Some(model) => format!("chat {model}"),
            None => "chat".to_string(),
        };
        let (start, end) = (call.start_unix_ns, call.end_unix_ns);
        self.span(span_id_of(&key), Some(parent), name, start, end, attrs)
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

    pub(super) fn root(&self, start: i64, end: i64) -> SpanOut<'_> {
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
    pub(super) fn turn<'a>(
        &'a self,
        turn: &'a TurnReceipt,
        usage: Option<&'a TurnUsage>,
    ) -> SpanOut<'a> {
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
    pub(super) fn span_of<'a>(
        &'a self,
        span: &TraceSpan<'a>,
        recorded_call: Option<&'a str>,
        extras: &SpanExtras<'a>,
    ) -> SpanOut<'a> {
        let anchor = span.anchor();
        let parent = match span.turn_id() {
            Some(turn) => self.turn_span_id(turn),
            None => self.root_id,
        };
        // Room for every attribute a span can have: one allocation.
        let mut attrs = Vec::with_capacity(24);
        let name = match span.kind {
            SpanKind::Tool => tool_identity(span, recorded_call, &mut attrs),
            SpanKind::Command => command_identity(span, self.argv, &mut attrs),
        };
        if let Some(arguments) = extras.arguments {
            attrs.push(attr_str("gen_ai.tool.call.arguments", arguments));
        }
        if let Some(result) = extras.result {
            attrs.push(attr_str("gen_ai.tool.call.result", result));
        }
        let (start, end, end_label) = span_times(span);
        state_attributes(span, end_label, &mut attrs);
        // Where the span's rows are in the ledger: anyone can look them up
        // (`harnery show`, `replay`) and check them against the chain.
        if let Some(request) = span.request {
            attrs.push(attr_str("harnery.request.event_id", request.event_id()));
        }
        if let Some(terminal) = span.terminal {
            attrs.push(attr_str("harnery.terminal.event_id", terminal.event_id()));
        }
        let request = ("harnery.request.seq", "harnery.request.hash");
        chain_attributes(extras.request_mark, request, &mut attrs);
        let terminal = ("harnery.terminal.seq", "harnery.terminal.hash");
        chain_attributes(extras.terminal_mark, terminal, &mut attrs);
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
/// `shown`: whether its argv is shown (else the span is `exec`).
fn command_identity<'a>(span: &TraceSpan<'a>, shown: bool, attrs: &mut Vec<Attr<'a>>) -> String {
    let argv: &'a [String] = match span.request.and_then(Side::event).map(|r| &r.payload) {
        Some(Payload::CommandRequested(p)) => &p.argv,
        _ => &[],
    };
    let program = argv.first().map_or("unknown", String::as_str);
    attrs.push(attr_str("harnery.span.kind", "command"));
    if shown {
        let values = argv
            .iter()
            .map(|a| AnyValue::String(Cow::Borrowed(a)))
            .collect();
        attrs.push(Attr {
            key: "process.command_args",
            value: AnyValue::Array { values },
        });
    }
    if let Some(Payload::CommandCompleted(p)) =
        span.terminal.and_then(Side::event).map(|t| &t.payload)
        && let Some(code) = p.exit_code
    {
        attrs.push(attr_int("process.exit.code", code));
    }
    match shown {
        true => format!("exec {program}"),
        false => "exec".to_string(),
    }
}

/// Start, end, and where the end came from. Only an observed terminal
/// ends a span later than it started: a recovery sweep is not one.
fn span_times(span: &TraceSpan<'_>) -> (i64, i64, &'static str) {
    let start = span.anchor().time_unix_ns();
    match (span.state(), span.terminal) {
        (SpanState::ClosedNative, Some(t)) => {
            let end = t.time_unix_ns();
            (start.min(end), end, "observed")
        }
        _ => (start, start, "not_observed"),
    }
}

fn state_attributes<'a>(span: &TraceSpan<'a>, end_label: &'static str, attrs: &mut Vec<Attr<'a>>) {
    let state = match span.state() {
        SpanState::Open => "open",
        SpanState::ClosedNative => "closed",
        SpanState::Recovered => "recovered",
    };
    let outcome = span.outcome().map_or("unknown", outcome_name);
    attrs.push(attr_str("harnery.span.state", state));
    // Observed: every row of the span the agent reported (a hook or its
    // record); derived: harnery made one (a recovery), and says why.
    let derived = span.state() == SpanState::Recovered || span.request_recovered();
    let evidence = if derived { "derived" } else { "observed" };
    attrs.push(attr_str("harnery.evidence", evidence));
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
