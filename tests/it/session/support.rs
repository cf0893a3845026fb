//! Shared helpers of the producer tests: feeding fixture records and built
//! signals through `route` + `SessionProducer::ingest`, and the invariants
//! every run must keep.
#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};

use harnery::agents::{RawSignal, route};
use harnery::clock::ClockSample;
use harnery::contract::{
    AdapterId, Event, EventId, Outcome, Payload, Recovery, SessionRef, validate_event,
};
use harnery::session::SessionProducer;

pub const BOOT: &str = "boot-test";

/// One raw record, owned.
#[derive(Debug, Clone)]
pub struct Record {
    pub adapter: AdapterId,
    pub event_name: Option<String>,
    pub session_id: String,
    pub payload: Vec<u8>,
    pub received_unix_ns: i64,
    pub clock: ClockSample,
    pub digest: String,
}

impl Record {
    pub fn signal(&self) -> RawSignal<'_> {
        RawSignal {
            adapter: self.adapter,
            event_name: self.event_name.as_deref(),
            session_id: &self.session_id,
            payload: &self.payload,
            received_unix_ns: self.received_unix_ns,
            clock: self.clock.clone(),
            record_digest: &self.digest,
            payload_blake3: None,
        }
    }
}

pub fn clock_at(ns: i64) -> ClockSample {
    ClockSample {
        boot_id: Some(BOOT.to_string()),
        boottime_ns: Some(u64::try_from(ns).expect("test times are positive")),
    }
}

/// Build a record; the clock runs with the receive time on one boot.
pub fn record(
    adapter: AdapterId,
    event: Option<&str>,
    session: &str,
    payload: &str,
    at_ns: i64,
) -> Record {
    Record {
        adapter,
        event_name: event.map(str::to_string),
        session_id: session.to_string(),
        payload: payload.as_bytes().to_vec(),
        received_unix_ns: at_ns,
        clock: clock_at(at_ns),
        digest: harnery::agents::record_digest(adapter, event, session, at_ns, payload.as_bytes()),
    }
}

fn fixture(path: &str) -> String {
    let full = format!("{}/tests/fixtures/{path}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{full}: {e}"))
}

pub const START_NS: i64 = 1_800_000_000_000_000_000;

/// Claude Code hooks.jsonl: one payload per line, received 10 ms apart.
pub fn claude_records(scenario: &str) -> Vec<Record> {
    fixture(&format!("claude-code/{scenario}/hooks.jsonl"))
        .lines()
        .filter(|l| !l.trim().is_empty())
        .enumerate()
        .map(|(i, line)| {
            let session = serde_json::from_str::<serde_json::Value>(line)
                .ok()
                .and_then(|v| v["session_id"].as_str().map(str::to_string))
                .unwrap_or_default();
            record(
                AdapterId::ClaudeCode,
                None,
                &session,
                line,
                START_NS + i as i64 * 10_000_000,
            )
        })
        .collect()
}

/// Copilot hook-capture.jsonl: `stdin_raw` under the argv `event`.
pub fn copilot_records(scenario: &str) -> Vec<Record> {
    fixture(&format!("copilot/{scenario}/hook-capture.jsonl"))
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|line| {
            let capture: serde_json::Value = serde_json::from_str(line).expect("capture line");
            let raw = capture["stdin_raw"].as_str().expect("stdin_raw");
            let payload: serde_json::Value = serde_json::from_str(raw).unwrap_or_default();
            let session = payload["sessionId"]
                .as_str()
                .or(payload["session_id"].as_str())
                .unwrap_or_default();
            let received = (capture["received_at"].as_f64().expect("received_at") * 1e9) as i64;
            record(
                AdapterId::Copilot,
                capture["event"].as_str(),
                session,
                raw,
                received,
            )
        })
        .collect()
}

/// The result of feeding records: every session's producer and events.
#[derive(Default)]
pub struct Run {
    pub producers: BTreeMap<SessionRef, SessionProducer>,
    pub events: BTreeMap<SessionRef, Vec<Event>>,
    pub duplicates: Vec<EventId>,
}

impl Run {
    pub fn feed(&mut self, records: &[Record]) {
        for r in records {
            let signal = r.signal();
            let session = route(&signal);
            let producer = self
                .producers
                .entry(session.clone())
                .or_insert_with(|| SessionProducer::new(session.clone()));
            let ingested = producer.ingest(&signal);
            if let Some(first) = ingested.duplicate_of {
                assert!(ingested.events.is_empty(), "a duplicate produced events");
                self.duplicates.push(first);
            }
            self.events
                .entry(session)
                .or_default()
                .extend(ingested.events);
        }
    }

    pub fn tick(&mut self, now: i64) {
        for (session, producer) in &mut self.producers {
            let events = producer.tick(now, &clock_at(now));
            self.events
                .entry(session.clone())
                .or_default()
                .extend(events);
        }
    }

    /// The single session of a run.
    pub fn only(&self) -> (&SessionProducer, &[Event]) {
        assert_eq!(
            self.producers.len(),
            1,
            "sessions: {:?}",
            self.producers.keys()
        );
        let (session, producer) = self.producers.iter().next().expect("one session");
        (producer, &self.events[session])
    }
}

pub fn run_records(records: &[Record]) -> Run {
    let mut run = Run::default();
    run.feed(records);
    run.check();
    run
}

/// Records of a scenario, normalized and ticked one second after the last
/// (so pending ends are evaluated as a finalize run would), then checked.
pub fn finished(records: &[Record]) -> Run {
    let mut run = run_records(records);
    let last = records
        .iter()
        .map(|r| r.received_unix_ns)
        .max()
        .unwrap_or(0);
    run.tick(last + 1_000_000_000);
    run.check();
    run
}

impl Run {
    /// Invariants of every run: valid events, gapless offsets, unique
    /// ids, and every span in exactly one of the three end states.
    pub fn check(&self) {
        for (session, events) in &self.events {
            check_events(events);
            check_span_states(events, &self.producers[session]);
        }
    }
}

pub fn check_events(events: &[Event]) {
    let mut ids = BTreeSet::new();
    for (i, e) in events.iter().enumerate() {
        let violations = validate_event(e);
        assert!(violations.is_empty(), "event {e:?} breaks {violations:?}");
        assert_eq!(e.offset, i as u64, "offsets are gapless from 0");
        assert!(ids.insert(e.id.clone()), "duplicate id {}", e.id);
        let json = serde_json::to_string(e).expect("serializable");
        assert_eq!(e.to_json(), json, "the direct writer agrees with serde");
        let back: Event = serde_json::from_str(&json).expect("round trip");
        assert_eq!(&back, e);
    }
}

/// How a span ended.
#[derive(Debug, Clone, PartialEq)]
pub enum SpanState {
    Native(Outcome),
    Recovered(Recovery),
    Open,
}

/// Every request's end state; panics if one has two terminals or none
/// while not open.
pub fn span_states(events: &[Event], producer: &SessionProducer) -> BTreeMap<EventId, SpanState> {
    let open: BTreeSet<EventId> = producer
        .open_spans()
        .iter()
        .map(|s| s.request_event_id.clone())
        .collect();
    let mut states = BTreeMap::new();
    for e in events {
        if matches!(
            e.payload,
            Payload::ToolRequested(_) | Payload::CommandRequested(_)
        ) {
            states.insert(e.id.clone(), None);
        }
    }
    for e in events {
        let (requested, state) = match &e.payload {
            Payload::ToolCompleted(c) => (
                c.requested_event_id.clone(),
                terminal(c.outcome, &c.recovery),
            ),
            Payload::CommandCompleted(c) => (
                c.requested_event_id.clone(),
                terminal(c.outcome, &c.recovery),
            ),
            _ => continue,
        };
        let Some(requested) = requested else { continue };
        let slot = states
            .get_mut(&requested)
            .expect("terminal links a known request");
        assert!(slot.is_none(), "second terminal for {requested}");
        *slot = Some(state);
    }
    states
        .into_iter()
        .map(|(id, state)| {
            let state = match state {
                Some(s) => {
                    assert!(!open.contains(&id), "{id} closed but still open");
                    s
                }
                None => {
                    // A request that repeats a tracked call id opens no span.
                    SpanState::Open
                }
            };
            (id, state)
        })
        .collect()
}

fn terminal(outcome: Outcome, recovery: &Option<Recovery>) -> SpanState {
    match recovery {
        Some(r) => SpanState::Recovered(r.clone()),
        None => SpanState::Native(outcome),
    }
}

pub fn check_span_states(events: &[Event], producer: &SessionProducer) {
    let states = span_states(events, producer);
    let open_in_events = states.values().filter(|s| **s == SpanState::Open).count();
    assert_eq!(
        open_in_events,
        producer.open_spans().len(),
        "open spans agree"
    );
    let counts = producer.span_counts();
    let recovered = states
        .values()
        .filter(|s| matches!(s, SpanState::Recovered(_)))
        .count();
    assert_eq!(
        counts.recovered as usize, recovered,
        "recovered count agrees"
    );
    let native = states
        .values()
        .filter(|s| matches!(s, SpanState::Native(_)))
        .count();
    assert_eq!(counts.closed_native as usize, native, "native count agrees");
    for open in producer.open_spans() {
        assert_eq!(
            states.get(&open.request_event_id),
            Some(&SpanState::Open),
            "an open span has a request event and no terminal"
        );
    }
}

/// Events of one type.
pub fn of_type<'a>(events: &'a [Event], ty: &str) -> Vec<&'a Event> {
    events
        .iter()
        .filter(|e| e.event_type().as_str() == ty)
        .collect()
}

/// Recovery events, in order.
pub fn recoveries(events: &[Event]) -> Vec<&Event> {
    events
        .iter()
        .filter(|e| e.payload.recovery().is_some())
        .collect()
}
