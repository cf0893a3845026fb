//! Unit tests of the producer's bookkeeping that the integration tests in
//! `tests/producer_*.rs` do not reach directly.

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
    }
}

fn producer(session: &str) -> SessionProducer {
    SessionProducer::new(SessionRef {
        adapter: AdapterId::ClaudeCode,
        session_id: session.into(),
    })
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
    let mut p = SessionProducer::new(SessionRef {
        adapter: AdapterId::Copilot,
        session_id: "s".into(),
    });
    let feed = |p: &mut SessionProducer, event: &str, payload: &str, digest: &str| {
        let raw = RawSignal {
            adapter: AdapterId::Copilot,
            event_name: Some(event),
            ..signal(payload.as_bytes(), digest, 1)
        };
        p.ingest(&raw)
    };
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
