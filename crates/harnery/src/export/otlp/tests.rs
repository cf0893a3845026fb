//! Tests of the OTLP mapping: spans, documents and ids, from scripted sessions.

use serde_json::Value;

use std::io;

use super::ids::id_hash;
use super::*;
use crate::contract::RecoveryReason::*;
use crate::contract::{Event, EventId, Payload, SessionRef};
use crate::report::testkit::Script;

/// One session's spans, each already serialized, and the opening of the
/// resource that holds them: a whole trace in memory, for tests and for
/// callers that hold the session's events anyway.
pub(crate) struct SessionTrace {
    resource_head: String,
    spans: String,
    starts: Vec<usize>,
}

impl SessionTrace {
    /// Each span's JSON text, in export order.
    pub(crate) fn spans(&self) -> impl Iterator<Item = &str> {
        let ends = self.starts.iter().skip(1).copied();
        let ends = ends.chain(std::iter::once(self.spans.len()));
        self.starts
            .iter()
            .zip(ends)
            .map(|(&a, b)| &self.spans[a..b])
    }
}

impl SpanSink for SessionTrace {
    fn next_span(&mut self) -> io::Result<&mut String> {
        self.starts.push(self.spans.len());
        Ok(&mut self.spans)
    }
}

/// One session's events (offset order, one epoch) as its trace, through
/// [`TraceStream`] as the export builds it.
pub(crate) fn session_trace(
    session: &SessionRef,
    events: &[&Event],
    part: Part<'_>,
) -> SessionTrace {
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

impl<W: std::io::Write> Documents<W> {
    /// A whole trace: its resource, its spans, and the resource closed.
    pub(crate) fn push(&mut self, trace: &SessionTrace) -> io::Result<()> {
        self.start_resource(&trace.resource_head);
        for span in trace.spans() {
            self.next_span()?.push_str(span);
        }
        self.end_resource();
        Ok(())
    }
}

/// Every session of `events`, as the documents `limit` allows.
fn documents(events: &[Event], part: Part<'_>, limit: usize) -> Vec<Value> {
    let mut docs = Documents::new(Vec::new(), limit);
    for (session, group) in crate::report::by_session(events) {
        docs.push(&session_trace(&session, &group, part)).unwrap();
    }
    let text = String::from_utf8(docs.finish().unwrap()).unwrap();
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn only_document(events: &[Event]) -> Value {
    let mut docs = documents(events, Part::default(), SPANS_PER_DOCUMENT);
    assert_eq!(docs.len(), 1);
    docs.remove(0)
}

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
fn tool_spans_follow_the_genai_conventions_and_recovery_has_no_duration() {
    let mut s = Script::new("s");
    s.turn("t1");
    s.start(0);
    let a = s.request("Bash", 10);
    s.complete(&a, 20, Some(9));
    let b = s.request("Read", 30);
    s.stop(50);
    s.recover(&b, 50, CompletionNotObservedBeforeTurnEnd, Some(20));
    let doc = only_document(&s.events());
    let tools = spans_named(&doc, "execute_tool");
    assert_eq!(tools.len(), 2);
    let native = tools[0];
    let value = |span, key| attr(span, key).unwrap()["stringValue"].clone();
    assert_eq!(value(native, "gen_ai.operation.name"), "execute_tool");
    assert_eq!(value(native, "gen_ai.tool.name"), "Bash");
    assert_eq!(value(native, "gen_ai.tool.call.id"), "call_1");
    assert_eq!(value(native, "harnery.span.end"), "observed");
    assert_eq!(value(native, "harnery.evidence"), "observed");
    assert_eq!(native["spanId"], span_id(a.as_str()));
    assert_eq!(native["traceId"].as_str().unwrap().len(), 32);
    let turn = &spans_named(&doc, "turn")[0];
    assert_eq!(native["parentSpanId"], turn["spanId"]);
    let recovered = tools[1];
    assert_eq!(
        value(recovered, "harnery.recovery.reason"),
        "completion_not_observed_before_turn_end"
    );
    assert_eq!(value(recovered, "harnery.outcome"), "unknown");
    assert_eq!(value(recovered, "harnery.evidence"), "derived");
    assert_eq!(value(recovered, "harnery.span.end"), "not_observed");
    assert_eq!(
        attr(recovered, "harnery.recovery.elapsed_upper_bound_ms").unwrap()["intValue"],
        "20"
    );
    assert_eq!(
        recovered["endTimeUnixNano"], recovered["startTimeUnixNano"],
        "request to sweep is never a duration"
    );
    let swept = crate::report::testkit::ms(50).to_string();
    assert_eq!(
        attr(recovered, "harnery.recovery.swept_unix_nano").unwrap()["intValue"],
        swept.as_str()
    );
    assert!(recovered.get("status").is_none());
}

#[test]
fn failures_get_error_status_and_ids_are_stable() {
    let mut s = Script::new("s");
    let c = s.command(0);
    s.command_done(&c, 5, 2);
    let events = s.events();
    let doc = only_document(&events);
    let exec = spans_named(&doc, "exec make")[0];
    assert_eq!(exec["status"]["code"], 2);
    assert_eq!(attr(exec, "process.exit.code").unwrap()["intValue"], "2");
    assert_eq!(doc, only_document(&events));
}

/// Sessions `a` and `b`, each a turn of three closed tool spans.
fn two_sessions_of_three_tools() -> Vec<Event> {
    let mut events = Vec::new();
    for id in ["a", "b"] {
        let mut s = Script::new(id);
        s.turn("t1");
        for i in 0..3 {
            let r = s.request("Bash", 10 * i);
            s.complete(&r, 10 * i + 5, Some(5));
        }
        events.extend(s.events());
    }
    events
}

#[test]
fn documents_hold_at_most_their_limit_and_repeat_a_spilled_resource() {
    let events = two_sessions_of_three_tools();
    // Each session: a root, a turn and three tool spans.
    let docs = documents(&events, Part::default(), 4);
    let per_doc: Vec<Vec<(String, usize)>> = docs
        .iter()
        .map(|d| {
            d["resourceSpans"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| {
                    let id = attr(&r["resource"], "harnery.session.id").unwrap();
                    let n = r["scopeSpans"][0]["spans"].as_array().unwrap().len();
                    (id["stringValue"].as_str().unwrap().to_string(), n)
                })
                .collect()
        })
        .collect();
    let owned = |v: &[(&str, usize)]| -> Vec<(String, usize)> {
        v.iter().map(|(s, n)| (s.to_string(), *n)).collect()
    };
    assert_eq!(
        per_doc,
        vec![
            owned(&[("a", 4)]),
            owned(&[("a", 1), ("b", 3)]),
            owned(&[("b", 2)]),
        ]
    );
    let one = documents(&events, Part::default(), SPANS_PER_DOCUMENT);
    assert_eq!(one.len(), 1);
    assert!(documents(&[], Part::default(), 4).is_empty());
}

#[test]
fn ids_are_blake3_hex() {
    let key = "turn:s:t1";
    let mut hasher = blake3::Hasher::new();
    for part in ["harnery.otlp.span", key] {
        hasher.update(&(part.len() as u64).to_le_bytes());
        hasher.update(part.as_bytes());
    }
    assert_eq!(span_id(key), &hasher.finalize().to_hex()[..16]);
}

#[test]
fn a_document_filled_at_a_session_boundary_is_closed_once() {
    let events = two_sessions_of_three_tools();
    // Five spans each: the first session fills the first document.
    let docs = documents(&events, Part::default(), 5);
    let sessions: Vec<usize> = docs
        .iter()
        .map(|d| d["resourceSpans"].as_array().unwrap().len())
        .collect();
    assert_eq!(sessions, [1, 1]);
}

#[test]
fn what_later_rows_say_reaches_a_span_written_at_its_terminal() {
    let mut s = Script::new("s");
    s.turn("t1");
    s.start(0);
    let hooked = s.push(
        10,
        Payload::ToolRequested(crate::contract::ToolRequested {
            tool_call_id: None,
            tool_name: "bash".into(),
            input_digest: "d".into(),
            input: None,
            recovery: None,
        }),
        crate::contract::Provenance::NATIVE,
    );
    s.complete(&hooked, 20, Some(10));
    let swept = s.request("Read", 30);
    s.stop(50);
    let recovery = s.recover(&swept, 50, CompletionNotObservedBeforeTurnEnd, Some(20));
    s.late(&swept, &recovery, 60);
    let recorded = crate::contract::ToolRecorded {
        record: crate::contract::RecordAt {
            path: "t.jsonl".into(),
            offset: 0,
        },
        span_request_event_id: Some(hooked.clone()),
        tool_call_id: "call_rec".into(),
        tool_name: "bash".into(),
        turn_id: Some("t1".into()),
        success: Some(true),
        exit_code: None,
        output: None,
        output_cut_bytes: None,
    };
    s.push(
        70,
        Payload::ToolRecorded(recorded),
        crate::contract::Provenance::NATIVE,
    );
    let doc = only_document(&s.events());
    let tools = spans_named(&doc, "execute_tool");
    let by_id = |id: &EventId| {
        let wanted = span_id(id.as_str());
        *tools
            .iter()
            .find(|t| t["spanId"] == wanted.as_str())
            .unwrap()
    };
    let call = attr(by_id(&hooked), "gen_ai.tool.call.id").unwrap();
    assert_eq!(call["stringValue"], "call_rec");
    let late = by_id(&swept)["events"].as_array().unwrap();
    assert_eq!(late.len(), 1);
    assert_eq!(late[0]["name"], "harnery.late_evidence");
    // Neither the late evidence nor the record is a span of its own.
    assert_eq!(tools.len(), 2);
}

#[test]
fn an_archived_part_has_its_own_root_and_turn_ids() {
    let mut s = Script::new("s");
    s.turn("t1");
    s.start(0);
    let events = s.events();
    let live = &only_document(&events);
    let archived = Part {
        epoch_tag: Some("gen_1"),
        archive: Some("gen_1"),
        ..Part::default()
    };
    let old = &documents(&events, archived, SPANS_PER_DOCUMENT)[0];
    for name in ["invoke_agent", "turn"] {
        let (a, b) = (spans_named(live, name)[0], spans_named(old, name)[0]);
        assert_ne!(a["spanId"], b["spanId"], "{name}");
        assert_eq!(a["traceId"], b["traceId"], "one trace per session");
    }
    let root = &spans_named(live, "invoke_agent")[0];
    let key = "session:claude-code:s";
    assert_eq!(root["spanId"], span_id(key), "the live ids are unchanged");
    let attrs = &old["resourceSpans"][0]["resource"]["attributes"];
    assert!(
        attrs.to_string().contains(r#""key":"harnery.epoch""#),
        "{attrs}"
    );
}

proptest::proptest! {
    #[test]
    fn an_id_is_blake3_over_its_length_prefixed_parts(
        tag in "[a-z.]{0,40}",
        parts in proptest::collection::vec(".{0,120}", 0..4),
    ) {
        let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
        let mut framed = Vec::new();
        for part in std::iter::once(tag.as_str()).chain(parts.iter().copied()) {
            framed.extend_from_slice(&(part.len() as u64).to_le_bytes());
            framed.extend_from_slice(part.as_bytes());
        }
        proptest::prop_assert_eq!(id_hash(&tag, &parts), blake3::hash(&framed));
    }
}
