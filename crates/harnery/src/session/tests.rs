//! Unit tests of the producer's bookkeeping that the integration tests in
//! `tests/producer_*.rs` do not reach directly.

use super::authority::PROFILE_CHANGED_CONDITION;
use super::deliveries::DELIVERY_MEMORY;
use super::*;
use crate::contract::AdapterId;

fn signal<'a>(payload: &'a [u8], digest: &'a str, at: i64) -> RawSignal<'a> {
    RawSignal {
        adapter: AdapterId::ClaudeCode,
        event_name: None,
        session_id: "s",
        payload,
        received_unix_ns: at,
        clock: ClockSample {
            boot_id: Some("b".into()),
            boottime_ns: Some(1),
        },
        record_digest: digest,
        payload_blake3: None,
    }
}

fn producer(session: &str) -> SessionProducer {
    SessionProducer::new(SessionRef {
        adapter: AdapterId::ClaudeCode,
        session_id: session.into(),
    })
}

/// A Copilot session `s`, and one of its hook signals fed to it.
fn copilot_producer() -> SessionProducer {
    SessionProducer::new(SessionRef {
        adapter: AdapterId::Copilot,
        session_id: "s".into(),
    })
}

fn feed(p: &mut SessionProducer, event: &str, payload: &str, digest: &str) -> Ingested {
    let raw = RawSignal {
        adapter: AdapterId::Copilot,
        event_name: Some(event),
        ..signal(payload.as_bytes(), digest, 1)
    };
    p.ingest(&raw)
}

#[test]
fn ids_depend_on_the_session_and_the_record() {
    let payload = br#"{"hook_event_name":"Notification","message":"hi"}"#;
    let a = producer("a").ingest(&signal(payload, "r1", 1)).events;
    let b = producer("b").ingest(&signal(payload, "r1", 1)).events;
    let again = producer("a").ingest(&signal(payload, "r1", 1)).events;
    assert_ne!(a[0].id, b[0].id);
    assert_eq!(a, again);
}

#[test]
fn delivery_memory_is_bounded() {
    let mut p = producer("s");
    for n in 0..(DELIVERY_MEMORY + 50) {
        let payload = format!(r#"{{"hook_event_name":"Notification","message":"{n}"}}"#);
        let digest = format!("r{n}");
        p.ingest(&signal(payload.as_bytes(), &digest, n as i64));
    }
    assert!(p.deliveries.len() <= DELIVERY_MEMORY);
    assert_eq!(p.next_offset(), (DELIVERY_MEMORY + 50) as u64);
}

#[test]
fn a_stopped_subagent_ends_its_stamped_turn() {
    let mut p = copilot_producer();
    feed(
        &mut p,
        "userPromptSubmitted",
        r#"{"sessionId":"a","agentId":"a","parentAgentId":"s","timestamp":1}"#,
        "r1",
    );
    assert!(p.turns.own_current(Some("a")).is_some());
    feed(
        &mut p,
        "subagentStop",
        r#"{"sessionId":"s","agentId":"a","parentAgentId":"s","timestamp":2}"#,
        "r2",
    );
    assert!(p.turns.own_current(Some("a")).is_none());
}

/// A state written by the build before the delivery memory kept
/// fingerprints: a prompt, a request and its completion in session `s`.
const STATE_BEFORE_FINGERPRINTS: &str = concat!(
    r#"{"session":{"adapter":"claude-code","session_id":"s"},"capability_digest":"e38b0209f381be3"#,
    r#"4eded3d034a1ddf389ccee2ecd6240275b3e87f7ee1620626","next_offset":4,"turns":{"current":{"":"#,
    r#"{"source":"native","turn_id":"p1"}},"recent":["p1"],"stamped":0},"spans":{"open":[],"close"#,
    r#"d":[{"span":{"kind":"tool","request_event_id":"ev_6c59ca99eaf224f27a0ed535717c84fb","name""#,
    r#":"Bash","call_id":"t1","pair_key":"Bash\u00008434380aa5d41e754df454b3fb00c99b3beed4ecc122a"#,
    r#"ad8fcc788858b72fa88","turn":{"source":"native","turn_id":"p1"},"agent_id":null,"requested_"#,
    r#"unix_ns":1,"requested_clock":{"boot_id":"b","boottime_ns":1}},"closure":"native"}],"closed"#,
    r#"_native":1,"recovered":0},"deliveries":[["exact::cfedaee4ee958834205dc2523fc62471f0e98463a"#,
    r#"972beb317a384267d339754","ev_95ce25b3e3565c68199c92e51d3284b9"],["exact::5b58485c6afdf5c37"#,
    r#"00e85600be9dba868c3cdc647365df4a769326c34835d83","ev_6c59ca99eaf224f27a0ed535717c84fb"],[""#,
    r#"exact::a40fbda7ad0ea865ba85ef541ec892d63cda439960e06bc60a37eeee950acb21","ev_3bdb4dae13bd3"#,
    r#"d7da2df0265b006b3de"]],"pending_end":null,"running_agents":[],"span_cap_raised":false}"#,
);

#[test]
fn a_stored_state_loads_and_writes_back_byte_for_byte() {
    let mut p: SessionProducer =
        serde_json::from_str(STATE_BEFORE_FINGERPRINTS).expect("the stored state loads");
    let again = serde_json::to_string(&p).expect("state serializes");
    assert_eq!(again, STATE_BEFORE_FINGERPRINTS);
    // The loaded memory still recognises the request as delivered.
    let pre = br#"{"hook_event_name":"PreToolUse","prompt_id":"p1","tool_name":"Bash","tool_input":{"command":"ls"},"tool_use_id":"t1"}"#;
    let ingested = p.ingest(&signal(pre, "r2-again", 9));
    assert!(ingested.events.is_empty());
    assert_eq!(
        ingested.duplicate_of.map(|id| id.0),
        Some("ev_6c59ca99eaf224f27a0ed535717c84fb".to_string())
    );
}

#[test]
fn a_changed_recovery_table_trips_no_authority_check() {
    let session = SessionRef {
        adapter: AdapterId::ClaudeCode,
        session_id: "s".into(),
    };
    let tables = [RecoveryPolicy::FULL, RecoveryPolicy::OBSERVATION_ONLY];
    for policy in tables {
        let mut p = SessionProducer::with_policy(session.clone(), policy);
        assert_eq!(p.policy(), policy);
        assert_eq!(
            p.capability_digest(),
            "e38b0209f381be34eded3d034a1ddf389ccee2ecd6240275b3e87f7ee1620626"
        );
        assert_eq!(p.check_capability_profile(1), None);
    }
}

#[test]
fn state_of_another_profile_keeps_its_spans_open_without_a_turn() {
    let mut p = producer("s");
    let prompt = br#"{"hook_event_name":"UserPromptSubmit","prompt_id":"p1","prompt":"go"}"#;
    let pre = br#"{"hook_event_name":"PreToolUse","prompt_id":"p1","tool_name":"Bash","tool_input":{"command":"ls"},"tool_use_id":"t1"}"#;
    p.ingest(&signal(prompt, "r1", 1));
    p.ingest(&signal(pre, "r2", 2));
    let mut stored: serde_json::Value = serde_json::to_value(&p).expect("state serializes");
    stored["capability_digest"] = "old-digest".into();
    let mut loaded: SessionProducer = serde_json::from_value(stored).expect("state loads");
    let next = loaded.next_offset();

    let event = loaded.check_capability_profile(5).expect("a condition");
    let Payload::HealthCondition(h) = &event.payload else {
        panic!("{event:?}")
    };
    assert_eq!(h.code, PROFILE_CHANGED_CONDITION);
    assert!(h.detail.contains("old-digest") && h.detail.contains(p.capability_digest()));
    assert_eq!(event.offset, next, "offsets go on");
    assert_eq!(loaded.capability_digest(), p.capability_digest());
    assert_eq!(loaded.open_spans().len(), 1);
    assert_eq!(loaded.open_spans()[0].turn, TurnAttribution::none());
    assert_eq!(loaded.check_capability_profile(6), None, "adopted once");

    // The turn's Stop sweeps nothing: the span fails closed.
    let stop = br#"{"hook_event_name":"Stop","prompt_id":"p1"}"#;
    let events = loaded.ingest(&signal(stop, "r3", 7)).events;
    assert!(events.iter().all(|e| e.payload.recovery().is_none()));
    assert_eq!(loaded.open_spans().len(), 1);
}

/// Producer state as main's binary stored it in real ledgers (the demo's
/// two sessions; Claude Code's `kill` with a span left open, and after an
/// operator end salvaged it; a killed Copilot session ended the same way):
/// it loads, and saving it again gives the very same bytes, so the ledger's
/// `producer_state` rows keep their shape whatever the struct's own layout.
#[test]
fn stored_state_round_trips_to_the_same_bytes() {
    let stored = [
        include_str!("../../../../tests/fixtures/producer-state/demo-claude-code.json"),
        include_str!("../../../../tests/fixtures/producer-state/demo-copilot.json"),
        include_str!("../../../../tests/fixtures/producer-state/claude-kill-open-span.json"),
        include_str!("../../../../tests/fixtures/producer-state/claude-kill-salvaged.json"),
        include_str!("../../../../tests/fixtures/producer-state/copilot-sigkill-salvaged.json"),
    ];
    for text in stored {
        let producer: SessionProducer = serde_json::from_str(text).expect("stored state loads");
        assert_eq!(serde_json::to_string(&producer).unwrap(), text);
    }
    let open: SessionProducer = serde_json::from_str(stored[2]).unwrap();
    assert_eq!(open.open_spans().len(), 1);
    assert_eq!(open.next_offset(), 7);
}

/// A state this build saves after a pending end, open spans and a running
/// subagent loads back to the same producer and the same bytes.
#[test]
fn a_busy_state_round_trips() {
    let mut p = copilot_producer();
    feed(
        &mut p,
        "userPromptSubmitted",
        r#"{"sessionId":"s","timestamp":1,"prompt":"go"}"#,
        "r1",
    );
    feed(
        &mut p,
        "subagentStart",
        r#"{"sessionId":"s","agentId":"a","parentAgentId":"s","timestamp":2}"#,
        "r2",
    );
    feed(
        &mut p,
        "preToolUse",
        r#"{"sessionId":"s","timestamp":3,"toolName":"bash","toolArgs":"{}"}"#,
        "r3",
    );
    let text = serde_json::to_string(&p).unwrap();
    let back: SessionProducer = serde_json::from_str(&text).unwrap();
    assert_eq!(back, p);
    assert_eq!(serde_json::to_string(&back).unwrap(), text);
    assert_eq!(back.open_spans().len(), 1);
    assert!(text.contains(r#""running_agents":["a"]"#), "{text}");
}

/// A stored state that does not load is refused in the words (and at the
/// place) main's binary gave, which `finalize` prints after "producer
/// state of … does not load: ": the type expected, the field, the column.
#[test]
fn a_state_that_does_not_load_says_so_as_before() {
    let stored =
        include_str!("../../../../tests/fixtures/producer-state/claude-kill-open-span.json");
    let refused = |text: &str| {
        serde_json::from_str::<SessionProducer>(text)
            .unwrap_err()
            .to_string()
    };
    assert_eq!(
        refused(r#""x""#),
        r#"invalid type: string "x", expected struct SessionProducer at line 1 column 3"#
    );
    let offset_as_text = stored.replace(r#""next_offset":7"#, r#""next_offset":"7""#);
    assert_eq!(
        refused(&offset_as_text),
        r#"invalid type: string "7", expected u64 at line 1 column 193"#
    );
    let without_deliveries = stored.replace(r#""deliveries""#, r#""deliverie""#);
    assert_eq!(
        refused(&without_deliveries),
        "missing field `deliveries` at line 1 column 2927"
    );
}
