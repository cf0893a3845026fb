//! Every producer rule over built signal sequences: request_not_observed,
//! the sweeps, the span caps, late evidence, explicit ends (salvage before
//! expiry, expiry at 24 h, cancellation by native work and not by derived
//! events), command spans, closed-span memory and duplicate delivery.

use crate::session::support as producer_support;

use harnery::agents::RecoveryPolicy;
use harnery::contract::{
    AdapterId, Attestation, Confidence, Event, Observation, Outcome, Payload, RecoveryReason,
    SessionRef, TurnSource,
};
use harnery::session::{
    END_EXPIRY_NS, READ_SIDE_SPAN_CAP, SPAN_CAP_CONDITION, SPAN_WATERMARK, SessionProducer,
};
use producer_support::*;

const MS: i64 = 1_000_000;

/// A scripted session: builds records one after another, 1 ms apart.
struct Script {
    adapter: AdapterId,
    producer: SessionProducer,
    events: Vec<Event>,
    now: i64,
}

impl Script {
    fn claude_session() -> Script {
        Script::with(AdapterId::ClaudeCode, None)
    }

    fn copilot() -> Script {
        Script::with(AdapterId::Copilot, None)
    }

    fn with(adapter: AdapterId, policy: Option<RecoveryPolicy>) -> Script {
        let session = SessionRef {
            adapter,
            session_id: "s".into(),
        };
        let producer = match policy {
            Some(p) => SessionProducer::with_policy(session, p),
            None => SessionProducer::new(session),
        };
        Script {
            adapter,
            producer,
            events: Vec::new(),
            now: START_NS,
        }
    }

    /// Feed one payload; returns the events it produced.
    fn send(&mut self, event: Option<&str>, payload: &str) -> Vec<Event> {
        self.now += MS;
        let r = record(self.adapter, event, "s", payload, self.now);
        let ingested = self.producer.ingest(&r.signal());
        self.events.extend(ingested.events.clone());
        ingested.events
    }

    fn claude(&mut self, payload: &str) -> Vec<Event> {
        self.send(None, payload)
    }

    fn tick(&mut self, at: i64) -> Vec<Event> {
        let out = self.producer.tick(at, &clock_at(at));
        self.events.extend(out.clone());
        out
    }

    fn check(&self) {
        check_events(&self.events);
        check_span_states(&self.events, &self.producer);
    }

    fn recovered(&self, reason: RecoveryReason) -> Vec<&Event> {
        recoveries(&self.events)
            .into_iter()
            .filter(|e| e.payload.recovery().map(|r| r.reason) == Some(reason))
            .collect()
    }
}

fn prompt(id: &str) -> String {
    format!(r#"{{"hook_event_name":"UserPromptSubmit","prompt_id":"{id}","prompt":"go"}}"#)
}

fn pre(turn: &str, call: &str) -> String {
    format!(
        r#"{{"hook_event_name":"PreToolUse","prompt_id":"{turn}","tool_name":"Bash",
            "tool_input":{{"command":"{call}"}},"tool_use_id":"{call}"}}"#
    )
}

fn post(turn: &str, call: &str) -> String {
    format!(
        r#"{{"hook_event_name":"PostToolUse","prompt_id":"{turn}","tool_name":"Bash",
            "tool_input":{{"command":"{call}"}},"tool_use_id":"{call}",
            "tool_response":{{"stdout":"ok","interrupted":false}},"duration_ms":5}}"#
    )
}

fn stop(turn: &str) -> String {
    format!(r#"{{"hook_event_name":"Stop","prompt_id":"{turn}"}}"#)
}

const SESSION_END: &str = r#"{"hook_event_name":"SessionEnd","reason":"other"}"#;

fn cp_prompt(at: i64) -> String {
    format!(r#"{{"sessionId":"s","timestamp":{at},"prompt":"go"}}"#)
}

fn cp_tool(at: i64, n: usize) -> String {
    format!(
        r#"{{"sessionId":"s","timestamp":{at},"toolName":"bash","toolArgs":{{"command":"c{n}"}}}}"#
    )
}

fn cp_post(at: i64, n: usize) -> String {
    format!(
        r#"{{"sessionId":"s","timestamp":{at},"toolName":"bash","toolArgs":{{"command":"c{n}"}},
            "toolResult":{{"resultType":"success"}}}}"#
    )
}

fn cp_stop(at: i64) -> String {
    format!(r#"{{"sessionId":"s","timestamp":{at},"stopReason":"end_turn"}}"#)
}

#[test]
fn a_post_without_its_pre_mints_the_request_and_closes_it_natively() {
    let mut s = Script::claude_session();
    s.claude(&prompt("p"));
    let out = s.claude(&post("p", "t1"));
    assert_eq!(out.len(), 2);
    let Payload::ToolRequested(req) = &out[0].payload else {
        panic!("request first")
    };
    let recovery = req.recovery.as_ref().expect("derived request");
    assert_eq!(recovery.reason, RecoveryReason::RequestNotObserved);
    assert!(recovery.requested_event_id.is_none());
    assert!(recovery.elapsed_upper_bound_ms.is_none());
    assert_eq!(out[0].provenance.confidence, Confidence::High);
    assert_eq!(out[0].provenance.attestation, Attestation::Derived);
    let Payload::ToolCompleted(done) = &out[1].payload else {
        panic!("completion second")
    };
    assert_eq!(out[1].provenance.attestation, Attestation::Native);
    assert_eq!(done.requested_event_id.as_ref(), Some(&out[0].id));
    assert_eq!(
        (done.outcome, done.duration_ms.clone()),
        (Outcome::Success, Observation::Observed(5))
    );
    assert!(done.recovery.is_none());
    // Without the input the evidence is weaker.
    s.claude(r#"{"hook_event_name":"PostToolUse","prompt_id":"p","tool_name":"Read","tool_use_id":"t2"}"#);
    let minted = s.recovered(RecoveryReason::RequestNotObserved);
    assert_eq!(minted[1].provenance.confidence, Confidence::Medium);
    assert_eq!(s.producer.span_counts().closed_native, 2);
    s.check();
}

#[test]
fn on_a_stamped_turn_request_not_observed_is_one_step_lower() {
    let mut s = Script::copilot();
    s.send(Some("userPromptSubmitted"), &cp_prompt(1));
    s.send(Some("postToolUse"), &cp_post(2, 1));
    let minted = s.recovered(RecoveryReason::RequestNotObserved);
    assert_eq!(minted[0].turn.source, TurnSource::Stamped);
    assert_eq!(minted[0].provenance.confidence, Confidence::Medium);
    s.check();
}

#[test]
fn copilot_pairs_in_order_per_tool_and_arguments() {
    let mut s = Script::copilot();
    s.send(Some("userPromptSubmitted"), &cp_prompt(1));
    let a = s.send(Some("preToolUse"), &cp_tool(2, 1));
    let b = s.send(Some("preToolUse"), &cp_tool(3, 1));
    s.send(Some("preToolUse"), &cp_tool(4, 2));
    let first = s.send(Some("postToolUse"), &cp_post(5, 1));
    let second = s.send(Some("postToolUse"), &cp_post(6, 1));
    let link = |e: &Event| match &e.payload {
        Payload::ToolCompleted(c) => c.requested_event_id.clone(),
        _ => None,
    };
    assert_eq!(link(&first[0]), Some(a[0].id.clone()));
    assert_eq!(link(&second[0]), Some(b[0].id.clone()));
    assert_eq!(s.producer.span_counts().open, 1);
    s.check();
}

#[test]
fn a_lost_stop_is_swept_when_the_next_turn_starts() {
    let mut s = Script::claude_session();
    s.claude(&prompt("p1"));
    let request = s.claude(&pre("p1", "t1"));
    let out = s.claude(&prompt("p2"));
    let swept = s.recovered(RecoveryReason::CompletionNotObservedBeforeNextTurn);
    assert_eq!(swept.len(), 1);
    assert_eq!(swept[0].provenance.confidence, Confidence::Low);
    assert_eq!(swept[0].turn.turn_id.as_deref(), Some("p1"));
    let recovery = swept[0].payload.recovery().expect("recovery");
    assert_eq!(recovery.requested_event_id.as_ref(), Some(&request[0].id));
    assert_eq!(
        recovery.elapsed_upper_bound_ms,
        Some(Observation::Observed(1))
    );
    // The sweep comes before the new turn starts.
    assert!(matches!(
        out.last().map(|e| &e.payload),
        Some(Payload::TurnStarted(_))
    ));
    s.check();
}

#[test]
fn the_turn_end_sweep_spares_running_subagents() {
    let mut s = Script::claude_session();
    s.claude(&prompt("p"));
    s.claude(
        r#"{"hook_event_name":"SubagentStart","prompt_id":"p","agent_id":"a1","agent_type":"x"}"#,
    );
    s.claude(r#"{"hook_event_name":"PreToolUse","prompt_id":"p","agent_id":"a1","tool_name":"Bash","tool_use_id":"inner","tool_input":{}}"#);
    s.claude(&pre("p", "outer"));
    s.claude(&stop("p"));
    let swept = s.recovered(RecoveryReason::CompletionNotObservedBeforeTurnEnd);
    assert_eq!(swept.len(), 1, "only the main agent's span");
    assert!(swept[0].agent_id.is_none());
    s.claude(r#"{"hook_event_name":"PostToolUse","prompt_id":"p","agent_id":"a1","tool_name":"Bash","tool_use_id":"inner","tool_input":{}}"#);
    assert_eq!(s.producer.span_counts().open, 0);
    s.check();
}

#[test]
fn a_completion_after_recovery_is_late_evidence_not_a_second_terminal() {
    let mut s = Script::claude_session();
    s.claude(&prompt("p"));
    let request = s.claude(&pre("p", "t1"));
    s.claude(&stop("p"));
    let recovered = s.recovered(RecoveryReason::CompletionNotObservedBeforeTurnEnd)[0]
        .id
        .clone();
    let late = s.claude(&post("p", "t1"));
    assert_eq!(late.len(), 1);
    let Payload::LateEvidence(evidence) = &late[0].payload else {
        panic!("{:?}", late[0])
    };
    assert_eq!(evidence.span_request_event_id, request[0].id);
    assert_eq!(evidence.recovered_event_id, recovered);
    assert_eq!(evidence.outcome, Outcome::Success);
    assert_eq!(of_type(&s.events, "tool.completed").len(), 1);
    s.check();
}

#[test]
fn span_cap_pressure_only_takes_spans_of_ended_turns() {
    let mut s = Script::copilot();
    s.send(Some("userPromptSubmitted"), &cp_prompt(1));
    for n in 0..100 {
        s.send(Some("preToolUse"), &cp_tool(10 + n as i64, n));
    }
    s.send(Some("agentStop"), &cp_stop(200));
    s.send(Some("userPromptSubmitted"), &cp_prompt(201));
    for n in 100..140 {
        s.send(Some("preToolUse"), &cp_tool(300 + n as i64, n));
    }
    let relieved = s.recovered(RecoveryReason::SpanCapPressure);
    assert_eq!(relieved.len(), 140 - SPAN_WATERMARK);
    assert_eq!(s.producer.span_counts().open, SPAN_WATERMARK as u64);
    for e in &relieved {
        assert_eq!(e.provenance.confidence, Confidence::Low);
        assert_ne!(
            e.turn.turn_id,
            s.producer
                .open_spans()
                .last()
                .and_then(|o| o.turn.turn_id.clone())
        );
    }
    s.check();
}

#[test]
fn spans_of_a_current_turn_or_without_a_turn_are_never_relieved() {
    let mut s = Script::copilot();
    // No prompt yet: these spans have no trustworthy turn.
    for n in 0..(READ_SIDE_SPAN_CAP + 2) {
        s.send(Some("preToolUse"), &cp_tool(n as i64, n));
    }
    assert!(s.recovered(RecoveryReason::SpanCapPressure).is_empty());
    let health = of_type(&s.events, "health.condition");
    assert_eq!(health.len(), 1, "loud once, never a failure");
    assert!(
        matches!(&health[0].payload, Payload::HealthCondition(h) if h.code == SPAN_CAP_CONDITION)
    );
    assert!(
        s.producer
            .open_spans()
            .iter()
            .all(|o| o.turn.source == TurnSource::None)
    );
    // Turn sweeps never reach them either; only explicit-end salvage does.
    s.send(Some("userPromptSubmitted"), &cp_prompt(10_000));
    s.send(Some("agentStop"), &cp_stop(10_001));
    assert_eq!(
        s.producer.span_counts().open,
        (READ_SIDE_SPAN_CAP + 2) as u64
    );
    s.send(
        Some("sessionEnd"),
        r#"{"sessionId":"s","timestamp":10002,"reason":"complete"}"#,
    );
    s.tick(s.now);
    let salvaged = s.recovered(RecoveryReason::ExplicitEndSalvage);
    assert_eq!(salvaged.len(), READ_SIDE_SPAN_CAP + 2);
    assert_eq!(
        salvaged[0].provenance.confidence,
        Confidence::Medium,
        "no stamped turn: no downgrade"
    );
    s.check();
}

#[test]
fn salvage_covers_exactly_the_approved_set() {
    let mut s = Script::claude_session();
    s.claude(&prompt("p"));
    s.claude(&pre("p", "a"));
    s.claude(&pre("p", "b"));
    let end = s.send(Some("harnery.end_requested"), r#"{"reason":"operator"}"#);
    let Payload::EndRequested(req) = &end[0].payload else {
        panic!("end")
    };
    assert_eq!(
        (req.origin.as_str(), req.approved_spans.len()),
        ("operator", 2)
    );
    // harnery's own signals are not native work: the end stays pending.
    s.send(
        Some("harnery.command_requested"),
        r#"{"command_id":"c1","argv":["make"]}"#,
    );
    assert!(s.producer.pending_end().is_some());
    let out = s.tick(s.now + MS);
    assert_eq!(s.recovered(RecoveryReason::ExplicitEndSalvage).len(), 2);
    assert!(
        matches!(&out.last().expect("outcome").payload, Payload::EndSalvaged(e) if e.salvaged_spans == 2 && e.end_event_id == end[0].id)
    );
    // The command span opened after the request is not in the set.
    assert_eq!(s.producer.span_counts().open, 1);
    s.check();
}

#[test]
fn native_work_cancels_a_pending_end_and_derived_events_do_not() {
    let mut s = Script::claude_session();
    s.claude(&prompt("p"));
    s.claude(&pre("p", "a"));
    let end = s.claude(SESSION_END);
    assert_eq!(end.len(), 2, "session.ended then end.requested");
    // A duplicate of the end request is not work.
    s.claude(SESSION_END);
    assert!(s.producer.pending_end().is_some());
    let out = s.claude(&post("p", "a"));
    let Payload::EndCancelled(cancel) = &out[0].payload else {
        panic!("{:?}", out[0])
    };
    assert_eq!(
        (cancel.cause.as_str(), &cancel.end_event_id),
        ("native_work", &end[1].id)
    );
    assert!(s.producer.pending_end().is_none());
    assert!(s.tick(s.now + END_EXPIRY_NS).is_empty());
    s.check();
}

#[test]
fn salvage_is_evaluated_before_expiry() {
    let mut s = Script::claude_session();
    s.claude(&prompt("p"));
    s.claude(&pre("p", "a"));
    s.claude(SESSION_END);
    let out = s.tick(s.now + END_EXPIRY_NS + MS);
    assert!(of_type(&out, "end.expired").is_empty());
    assert_eq!(of_type(&out, "end.salvaged").len(), 1);
    s.check();
}

#[test]
fn an_end_that_cannot_salvage_expires_after_24_hours() {
    let policy = RecoveryPolicy {
        explicit_end_salvage: false,
        ..RecoveryPolicy::FULL
    };
    let mut s = Script::with(AdapterId::ClaudeCode, Some(policy));
    s.claude(&prompt("p"));
    s.claude(&pre("p", "a"));
    let end = s.claude(SESSION_END);
    let requested_at = s.now;
    assert!(s.tick(requested_at + END_EXPIRY_NS - 1).is_empty());
    assert!(s.producer.pending_end().is_some());
    let out = s.tick(requested_at + END_EXPIRY_NS);
    let Payload::EndExpired(expired) = &out[0].payload else {
        panic!("{out:?}")
    };
    assert_eq!(expired.end_event_id, end[1].id);
    // It never blocked: the span is simply still open.
    assert_eq!(s.producer.span_counts().open, 1);
    s.check();
}

#[test]
fn an_end_with_nothing_open_closes_at_once() {
    let mut s = Script::claude_session();
    s.claude(&prompt("p"));
    let out = s.claude(SESSION_END);
    let types: Vec<&str> = out.iter().map(|e| e.event_type().as_str()).collect();
    assert_eq!(types, ["session.ended", "end.requested", "end.salvaged"]);
    assert!(out.iter().all(|e| e.time_unix_ns == out[0].time_unix_ns));
    assert!(s.producer.pending_end().is_none());
    assert!(s.tick(s.now + END_EXPIRY_NS).is_empty());
    s.check();
}

#[test]
fn a_second_end_supersedes_the_first() {
    let mut s = Script::claude_session();
    s.claude(&prompt("p"));
    s.claude(&pre("p", "a"));
    let first = s.send(Some("harnery.end_requested"), "{}");
    let second = s.send(Some("harnery.end_requested"), r#"{"reason":"again"}"#);
    let Payload::EndCancelled(c) = &second[0].payload else {
        panic!("{second:?}")
    };
    assert_eq!(
        (c.cause.as_str(), &c.end_event_id),
        ("superseded", &first[0].id)
    );
    s.check();
}

#[test]
fn command_spans_pair_by_id_and_are_closed_at_session_end() {
    let mut s = Script::copilot();
    let req = s.send(
        Some("harnery.command_requested"),
        r#"{"command_id":"c1","argv":["make","test"],"pid":7}"#,
    );
    assert_eq!(req[0].provenance.attestation, Attestation::Derived);
    let done = s.send(
        Some("harnery.command_completed"),
        r#"{"command_id":"c1","exit_code":2,"duration_ms":40}"#,
    );
    let Payload::CommandCompleted(c) = &done[0].payload else {
        panic!("{done:?}")
    };
    assert_eq!(c.requested_event_id.as_ref(), Some(&req[0].id));
    assert_eq!((c.outcome, c.exit_code), (Outcome::Failure, Some(2)));
    // A killed exec: the request survives, the session end closes it.
    let killed = s.send(
        Some("harnery.command_requested"),
        r#"{"command_id":"c2","argv":["sleep","9"]}"#,
    );
    s.send(
        Some("sessionEnd"),
        r#"{"sessionId":"s","timestamp":5,"reason":"complete"}"#,
    );
    s.tick(s.now);
    let closed = s.recovered(RecoveryReason::CommandCompletionNotObserved);
    assert_eq!(closed.len(), 1);
    assert_eq!(closed[0].provenance.confidence, Confidence::Medium);
    let Payload::CommandCompleted(c) = &closed[0].payload else {
        panic!("command terminal")
    };
    assert_eq!(c.requested_event_id.as_ref(), Some(&killed[0].id));
    assert_eq!(c.outcome, Outcome::Unknown);
    assert!(matches!(
        closed[0]
            .payload
            .recovery()
            .and_then(|r| r.elapsed_upper_bound_ms.clone()),
        Some(Observation::Unknown(_))
    ));
    // Its completion after all: late evidence.
    let late = s.send(
        Some("harnery.command_completed"),
        r#"{"command_id":"c2","signal":9}"#,
    );
    assert!(
        matches!(&late[0].payload, Payload::LateEvidence(l) if l.outcome == Outcome::Interrupted)
    );
    s.check();
}

#[test]
fn closed_span_memory_is_bounded_to_three_turns() {
    let mut s = Script::claude_session();
    for t in 0..10 {
        let turn = format!("p{t}");
        s.claude(&prompt(&turn));
        for c in 0..5 {
            let call = format!("t{t}-{c}");
            s.claude(&pre(&turn, &call));
            s.claude(&post(&turn, &call));
        }
        s.claude(&stop(&turn));
    }
    let state = serde_json::to_value(&s.producer).expect("state serializes");
    let closed = state["spans"]["closed"]
        .as_array()
        .expect("closed list")
        .len();
    assert_eq!(closed, 15, "current + two most recent turns, 5 spans each");
    s.check();
}

#[test]
fn state_survives_a_serde_round_trip_mid_session() {
    let records = claude_records("sigterm");
    let (head, tail) = records.split_at(3);
    let mut whole = Run::default();
    whole.feed(&records);
    let mut split = Run::default();
    split.feed(head);
    for producer in split.producers.values_mut() {
        let json = serde_json::to_string(producer).expect("serialize");
        *producer = serde_json::from_str(&json).expect("deserialize");
    }
    split.feed(tail);
    assert_eq!(whole.events, split.events);
}

#[test]
fn unknown_and_malformed_signals_are_kept() {
    let mut s = Script::claude_session();
    let out = s.claude(r#"{"hook_event_name":"BrandNewHook","x":1}"#);
    assert!(
        matches!(&out[0].payload, Payload::SignalUnrecognized(u) if u.adapter_event.as_deref() == Some("BrandNewHook"))
    );
    let out = s.claude("{torn");
    assert_eq!(out[0].raw.len(), 1, "the raw pointer is kept");
    s.check();
}

#[test]
fn byte_identical_deliveries_are_one() {
    let mut s = Script::claude_session();
    s.claude(&prompt("p"));
    let first = s.claude(&pre("p", "a"));
    s.now += MS;
    let r = record(AdapterId::ClaudeCode, None, "s", &pre("p", "a"), s.now);
    let again = s.producer.ingest(&r.signal());
    assert!(again.events.is_empty());
    assert_eq!(again.duplicate_of, Some(first[0].id.clone()));
}

#[test]
fn work_after_a_blocked_stop_resumes_the_turn() {
    let mut s = Script::claude_session();
    s.claude(&prompt("p"));
    s.claude(&stop("p"));
    // A Stop hook blocked the stop: the agent goes on in the same turn.
    s.claude(&pre("p", "b"));
    s.claude(r#"{"hook_event_name":"Stop","prompt_id":"p","stop_hook_active":true}"#);
    let swept = s.recovered(RecoveryReason::CompletionNotObservedBeforeTurnEnd);
    assert_eq!(swept.len(), 1);
    assert_eq!(
        of_type(&s.events, "turn.started").len(),
        1,
        "no second start"
    );
    assert_eq!(s.producer.span_counts().open, 0);
    s.check();
}
