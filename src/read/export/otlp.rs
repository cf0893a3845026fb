//! Export: the ledger's events as JSON lines, or as OTLP/JSON traces.
//!
//! OTLP mapping (one resource per session, one trace per session):
//! - the session is a root span, `invoke_agent <adapter>`;
//! - each turn is a child span covering the receipt's wall interval;
//! - each tool span is `execute_tool <name>` under its turn, with the
//!   OpenTelemetry GenAI attributes `gen_ai.operation.name = execute_tool`,
//!   `gen_ai.tool.name`, `gen_ai.tool.call.id`, `gen_ai.conversation.id`;
//! - each `harnery exec` command is `exec <argv0>` with `process.*` attributes.
//!
//! The trace id is derived from the session, span ids from event ids, so an
//! export is reproducible. A recovered span carries `harnery.recovery.reason`
//! and `harnery.outcome = unknown`, and its status stays unset: recovery never
//! invents a result. Its end is the sweep time, labelled as such; an open
//! span ends where it started, labelled `not_observed`.

use serde_json::{Value, json};

use super::receipts::session_receipts;
use super::spans::{Span, SpanKind, SpanState, pair_spans};
use crate::contract::{Event, Observation, Outcome, Payload, SessionRef};

/// OTLP span kind INTERNAL.
const KIND_INTERNAL: u8 = 1;
/// OTLP status code ERROR.
const STATUS_ERROR: u8 = 2;

/// One event as one JSON line (no trailing newline).
pub fn jsonl_line(event: &Event) -> serde_json::Result<String> {
    serde_json::to_string(event)
}

/// An OTLP/JSON `TracesData` document for `events` (any number of sessions).
pub fn otlp_traces(events: &[Event]) -> Value {
    let resources: Vec<Value> = super::by_session(events)
        .iter()
        .map(|(session, group)| resource_spans(session, group))
        .collect();
    json!({ "resourceSpans": resources })
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
    id_hex("harnery.otlp.span", &[key], 8)
}

fn id_hex(tag: &str, parts: &[&str], bytes: usize) -> String {
    let mut hasher = blake3::Hasher::new();
    for part in std::iter::once(&tag).chain(parts) {
        hasher.update(&(part.len() as u64).to_le_bytes());
        hasher.update(part.as_bytes());
    }
    hasher.finalize().to_hex()[..bytes * 2].to_string()
}

fn resource_spans(session: &SessionRef, events: &[&Event]) -> Value {
    let ctx = Ctx::new(session);
    let mut spans = vec![ctx.root(events)];
    let receipts = session_receipts(events);
    for turn in &receipts.turns {
        let attrs = vec![
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
        let (start, end) = (turn.started_unix_ns, turn.ended_unix_ns);
        let id = ctx.turn_span_id(&turn.turn_id);
        spans.push(ctx.span(&id, Some(&ctx.root_id), "turn", start, end, attrs));
    }
    for span in pair_spans(events) {
        spans.push(ctx.span_of(&span));
    }
    json!({
        "resource": { "attributes": [
            attr_str("service.name", "harnery"),
            attr_str("harnery.adapter", session.adapter.as_str()),
            attr_str("harnery.session.id", &session.session_id),
        ]},
        "scopeSpans": [{
            "scope": { "name": "harnery", "version": env!("CARGO_PKG_VERSION") },
            "spans": spans,
        }],
    })
}

struct Ctx<'s> {
    session: &'s SessionRef,
    trace_id: String,
    root_id: String,
}

impl<'s> Ctx<'s> {
    fn new(session: &'s SessionRef) -> Ctx<'s> {
        let root_key = format!("session:{}:{}", session.adapter, session.session_id);
        Ctx {
            session,
            trace_id: trace_id(session),
            root_id: span_id(&root_key),
        }
    }

    fn turn_span_id(&self, turn_id: &str) -> String {
        span_id(&format!("turn:{}:{turn_id}", self.session.session_id))
    }

    fn root(&self, events: &[&Event]) -> Value {
        let start = events.iter().map(|e| e.time_unix_ns).min().unwrap_or(0);
        let end = events.iter().map(|e| e.time_unix_ns).max().unwrap_or(0);
        let adapter = self.session.adapter.as_str();
        let attrs = vec![
            attr_str("gen_ai.operation.name", "invoke_agent"),
            attr_str("gen_ai.agent.name", adapter),
        ];
        let name = format!("invoke_agent {adapter}");
        self.span(&self.root_id, None, &name, start, end, attrs)
    }

    fn span(
        &self,
        id: &str,
        parent: Option<&str>,
        name: &str,
        start: i64,
        end: i64,
        mut attributes: Vec<Value>,
    ) -> Value {
        attributes.push(attr_str("gen_ai.conversation.id", &self.session.session_id));
        let mut span = json!({
            "traceId": self.trace_id,
            "spanId": id,
            "name": name,
            "kind": KIND_INTERNAL,
            "startTimeUnixNano": start.max(0).to_string(),
            "endTimeUnixNano": end.max(start).max(0).to_string(),
            "attributes": attributes,
        });
        if let Some(parent) = parent {
            span["parentSpanId"] = json!(parent);
        }
        span
    }

    fn span_of(&self, span: &Span) -> Value {
        let anchor = span.anchor();
        let parent = match span.turn_id() {
            Some(turn) => self.turn_span_id(turn),
            None => self.root_id.clone(),
        };
        let (name, mut attrs) = match span.kind {
            SpanKind::Tool => tool_identity(span),
            SpanKind::Command => command_identity(span),
        };
        let (start, end, end_label) = span_times(span);
        attrs.extend(state_attributes(span, end_label));
        let id = span_id(anchor.id.as_str());
        let mut out = self.span(&id, Some(&parent), &name, start, end, attrs);
        if let Some(status) = status_of(span) {
            out["status"] = status;
        }
        if !span.late.is_empty() {
            out["events"] = Value::Array(span.late.iter().map(|e| late_event(e)).collect());
        }
        out
    }
}

fn tool_identity(span: &Span) -> (String, Vec<Value>) {
    let tool = span.tool_name().unwrap_or("unknown");
    let mut attrs = vec![
        attr_str("gen_ai.operation.name", "execute_tool"),
        attr_str("gen_ai.tool.name", tool),
    ];
    if let Some(call) = span.tool_call_id() {
        attrs.push(attr_str("gen_ai.tool.call.id", call));
    }
    (format!("execute_tool {tool}"), attrs)
}

fn command_identity(span: &Span) -> (String, Vec<Value>) {
    let argv: Vec<String> = match span.request.map(|r| &r.payload) {
        Some(Payload::CommandRequested(p)) => p.argv.clone(),
        _ => Vec::new(),
    };
    let program = argv.first().map_or("unknown", String::as_str);
    let values: Vec<Value> = argv.iter().map(|a| json!({ "stringValue": a })).collect();
    let mut attrs = vec![
        attr_str("harnery.span.kind", "command"),
        json!({ "key": "process.command_args", "value": { "arrayValue": { "values": values } } }),
    ];
    if let Some(Payload::CommandCompleted(p)) = span.terminal.map(|t| &t.payload)
        && let Some(code) = p.exit_code
    {
        attrs.push(attr_int("process.exit.code", code));
    }
    (format!("exec {program}"), attrs)
}

/// Start, end, and where the end came from.
fn span_times(span: &Span) -> (i64, i64, &'static str) {
    let start = span.anchor().time_unix_ns;
    match (span.state(), span.terminal) {
        (SpanState::Closed, Some(t)) => (start.min(t.time_unix_ns), t.time_unix_ns, "observed"),
        (SpanState::Recovered(_), Some(t)) => (start, t.time_unix_ns, "recovery_sweep"),
        _ => (start, start, "not_observed"),
    }
}

fn state_attributes(span: &Span, end_label: &'static str) -> Vec<Value> {
    let state = match span.state() {
        SpanState::Open => "open",
        SpanState::Closed => "closed",
        SpanState::Recovered(_) => "recovered",
    };
    let outcome = span.outcome().map_or("unknown", outcome_str);
    let mut attrs = vec![
        attr_str("harnery.span.state", state),
        attr_str("harnery.span.end", end_label),
        attr_str("harnery.outcome", outcome),
    ];
    if span.request_recovered() {
        attrs.push(attr_str(
            "harnery.request.recovery.reason",
            "request_not_observed",
        ));
    }
    if let Some(Observation::Observed(ms)) = span.reported_duration() {
        attrs.push(attr_int("harnery.duration_ms", *ms as i64));
    }
    if let Some(recovery) = span.terminal.and_then(|t| t.payload.recovery()) {
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
    }
    attrs
}

/// ERROR for an observed failure; otherwise unset (never an invented OK).
fn status_of(span: &Span) -> Option<Value> {
    if span.outcome() != Some(Outcome::Failure) {
        return None;
    }
    let message = match span.terminal.map(|t| &t.payload) {
        Some(Payload::ToolCompleted(p)) => p.error.clone().unwrap_or_default(),
        Some(Payload::CommandCompleted(p)) => {
            p.exit_code.map(|c| format!("exit {c}")).unwrap_or_default()
        }
        _ => String::new(),
    };
    let mut status = json!({ "code": STATUS_ERROR });
    if !message.is_empty() {
        status["message"] = json!(message);
    }
    Some(status)
}

fn late_event(event: &Event) -> Value {
    let outcome = match &event.payload {
        Payload::LateEvidence(p) => outcome_str(p.outcome),
        _ => "unknown",
    };
    json!({
        "timeUnixNano": event.time_unix_ns.max(0).to_string(),
        "name": "harnery.late_evidence",
        "attributes": [attr_str("harnery.outcome", outcome)],
    })
}

fn outcome_str(outcome: Outcome) -> &'static str {
    match outcome {
        Outcome::Success => "success",
        Outcome::Failure => "failure",
        Outcome::Interrupted => "interrupted",
        Outcome::Unknown => "unknown",
    }
}

fn attr_str(key: &str, value: &str) -> Value {
    json!({ "key": key, "value": { "stringValue": value } })
}

/// OTLP/JSON carries 64-bit integers as decimal strings.
fn attr_int(key: &str, value: i64) -> Value {
    json!({ "key": key, "value": { "intValue": value.to_string() } })
}

fn attr_bool(key: &str, value: bool) -> Value {
    json!({ "key": key, "value": { "boolValue": value } })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::RecoveryReason::*;
    use crate::read::testkit::Script;

    fn attr<'v>(span: &'v Value, key: &str) -> Option<&'v Value> {
        span["attributes"]
            .as_array()?
            .iter()
            .find(|a| a["key"] == key)
            .map(|a| &a["value"])
    }

    fn spans_named<'v>(doc: &'v Value, prefix: &str) -> Vec<&'v Value> {
        doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s["name"].as_str().unwrap().starts_with(prefix))
            .collect()
    }

    #[test]
    fn tool_spans_follow_the_genai_conventions_and_recovery_stays_unknown() {
        let mut s = Script::new("s");
        s.turn("t1");
        s.start(0);
        let a = s.request("Bash", 10);
        s.complete(&a, 20, Some(9));
        let b = s.request("Read", 30);
        s.stop(50);
        s.recover(&b, 50, CompletionNotObservedBeforeTurnEnd, Some(20));
        let doc = otlp_traces(&s.events());
        let tools = spans_named(&doc, "execute_tool");
        assert_eq!(tools.len(), 2);
        let native = tools[0];
        assert_eq!(
            attr(native, "gen_ai.operation.name").unwrap()["stringValue"],
            "execute_tool"
        );
        assert_eq!(
            attr(native, "gen_ai.tool.name").unwrap()["stringValue"],
            "Bash"
        );
        assert_eq!(
            attr(native, "gen_ai.tool.call.id").unwrap()["stringValue"],
            "call_1"
        );
        assert_eq!(native["spanId"], span_id(a.as_str()));
        assert_eq!(native["traceId"].as_str().unwrap().len(), 32);
        let turn = &spans_named(&doc, "turn")[0];
        assert_eq!(native["parentSpanId"], turn["spanId"]);
        let recovered = tools[1];
        assert_eq!(
            attr(recovered, "harnery.recovery.reason").unwrap()["stringValue"],
            "completion_not_observed_before_turn_end"
        );
        assert_eq!(
            attr(recovered, "harnery.outcome").unwrap()["stringValue"],
            "unknown"
        );
        assert_eq!(
            attr(recovered, "harnery.recovery.elapsed_upper_bound_ms").unwrap()["intValue"],
            "20"
        );
        assert!(recovered.get("status").is_none());
    }

    #[test]
    fn failures_get_error_status_and_ids_are_stable() {
        let mut s = Script::new("s");
        let c = s.command(0);
        s.command_done(&c, 5, 2);
        let events = s.events();
        let doc = otlp_traces(&events);
        let exec = spans_named(&doc, "exec make")[0];
        assert_eq!(exec["status"]["code"], 2);
        assert_eq!(attr(exec, "process.exit.code").unwrap()["intValue"], "2");
        assert_eq!(doc, otlp_traces(&events));
        let line = jsonl_line(&events[0]).unwrap();
        let back: Event = serde_json::from_str(&line).unwrap();
        assert_eq!(back, events[0]);
    }
}
