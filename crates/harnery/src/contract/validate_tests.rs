//! The validator, table by table: every recovery reason on every event type
//! that may carry it, under both attestations; every branch of rule 5; the
//! pinned confidence of every reason on every kind of turn (rule 6). Each
//! row writes out the rules it expects to break, by number, in the order
//! the validator reports them.

use serde_json::json;

use super::*;

use Confidence::{High, Low, Medium};
use RecoveryReason::*;

/// The ADR 0078 confidence table, written out (with the input for
/// `request_not_observed`, then without).
const PINNED: [(RecoveryReason, Confidence, Confidence); 6] = [
    (RequestNotObserved, High, Medium),
    (CompletionNotObservedBeforeTurnEnd, Medium, Medium),
    (CompletionNotObservedBeforeNextTurn, Low, Low),
    (SpanCapPressure, Low, Low),
    (ExplicitEndSalvage, Medium, Medium),
    (CommandCompletionNotObserved, Medium, Medium),
];

fn pinned(reason: RecoveryReason) -> Confidence {
    PINNED
        .iter()
        .find(|(r, ..)| *r == reason)
        .map(|(_, _, without_input)| *without_input)
        .expect("every reason is in the table")
}

fn block(reason: RecoveryReason) -> Recovery {
    Recovery {
        reason,
        // The request itself links to nothing (rule 4's second clause).
        requested_event_id: (reason != RequestNotObserved).then(|| EventId("ev_req".into())),
        elapsed_upper_bound_ms: None,
    }
}

/// The event types that carry a recovery block.
#[derive(Debug, Clone, Copy)]
enum On {
    ToolRequested,
    ToolCompleted,
    CommandCompleted,
}

/// A payload of `on` recovered for `reason`, well formed in every other way.
fn recovered(on: On, reason: RecoveryReason) -> Payload {
    let duration_ms = Observation::unknown(reason.as_str());
    match on {
        On::ToolRequested => Payload::ToolRequested(ToolRequested {
            tool_call_id: None,
            tool_name: "Bash".into(),
            input_digest: "d".into(),
            input: None,
            recovery: Some(block(reason)),
        }),
        On::ToolCompleted => Payload::ToolCompleted(ToolCompleted {
            tool_call_id: None,
            tool_name: "Bash".into(),
            requested_event_id: Some(EventId("ev_req".into())),
            outcome: Outcome::Unknown,
            duration_ms,
            exit_code: None,
            error: None,
            content: None,
            recovery: Some(block(reason)),
            paired_by: None,
        }),
        On::CommandCompleted => Payload::CommandCompleted(CommandCompleted {
            requested_event_id: Some(EventId("ev_req".into())),
            outcome: Outcome::Unknown,
            duration_ms,
            exit_code: None,
            signal: None,
            recovery: Some(block(reason)),
        }),
    }
}

fn event(payload: Payload, attestation: Attestation, confidence: Confidence) -> Event {
    Event {
        id: EventId("ev_x".into()),
        session: SessionRef {
            adapter: AdapterId::ClaudeCode,
            session_id: "s".into(),
        },
        offset: 0,
        time_unix_ns: 0,
        time_source: TimeSource::Finalizer,
        clock: None,
        agent_id: None,
        turn: TurnAttribution {
            source: TurnSource::Native,
            turn_id: Some("p1".into()),
        },
        provenance: Provenance {
            attestation,
            confidence,
        },
        raw: vec![],
        payload,
    }
}

fn broken(e: &Event) -> Vec<u8> {
    validate_event(e).iter().map(|v| v.rule.number()).collect()
}

/// reason → expected rules on (tool.requested, tool.completed,
/// command.completed), derived, then native.
type ReasonRow = (RecoveryReason, [&'static [u8]; 3], [&'static [u8]; 3]);

const REASONS_ON_TYPES: [ReasonRow; 6] = [
    (
        RequestNotObserved,
        [&[], &[4], &[4]],
        [&[1], &[1, 4], &[1, 4]],
    ),
    (
        CompletionNotObservedBeforeTurnEnd,
        [&[4], &[], &[4]],
        [&[1, 4], &[1], &[1, 4]],
    ),
    (
        CompletionNotObservedBeforeNextTurn,
        [&[4], &[], &[4]],
        [&[1, 4], &[1], &[1, 4]],
    ),
    (SpanCapPressure, [&[4], &[], &[4]], [&[1, 4], &[1], &[1, 4]]),
    (
        ExplicitEndSalvage,
        [&[4], &[], &[4]],
        [&[1, 4], &[1], &[1, 4]],
    ),
    (
        CommandCompletionNotObserved,
        [&[4], &[4], &[]],
        [&[1, 4], &[1, 4], &[1]],
    ),
];

#[test]
fn every_reason_on_every_event_type_under_both_attestations() {
    assert_eq!(REASONS_ON_TYPES.len(), RecoveryReason::ALL.len());
    let types = [On::ToolRequested, On::ToolCompleted, On::CommandCompleted];
    for (reason, derived, native) in REASONS_ON_TYPES {
        for (n, on) in types.into_iter().enumerate() {
            for (attestation, want) in [
                (Attestation::Derived, derived[n]),
                (Attestation::Native, native[n]),
            ] {
                let e = event(recovered(on, reason), attestation, pinned(reason));
                assert_eq!(broken(&e), want, "{reason} on {on:?}, {attestation:?}");
            }
        }
    }
}

#[test]
fn events_without_recovery_under_both_attestations() {
    let plain_request = Payload::ToolRequested(ToolRequested {
        tool_call_id: Some("t1".into()),
        tool_name: "Bash".into(),
        input_digest: "d".into(),
        input: Some(Json::from_value(&json!({"command": "ls"}))),
        recovery: None,
    });
    let plain_completion = Payload::ToolCompleted(ToolCompleted {
        tool_call_id: Some("t1".into()),
        tool_name: "Bash".into(),
        requested_event_id: None,
        outcome: Outcome::Success,
        duration_ms: Observation::Observed(3),
        exit_code: Some(0),
        error: None,
        content: None,
        recovery: None,
        paired_by: None,
    });
    let plain_command = Payload::CommandCompleted(CommandCompleted {
        requested_event_id: None,
        outcome: Outcome::Failure,
        duration_ms: Observation::Observed(3),
        exit_code: Some(1),
        signal: None,
        recovery: None,
    });
    let turn_end = Payload::TurnCompleted(TurnCompleted { stop_reason: None });
    // (payload, rules when derived, rules when native)
    let rows: [(Payload, &[u8], &[u8]); 4] = [
        (plain_request, &[3], &[]),
        (plain_completion, &[3], &[]),
        // Commands are exempt from rule 3: derived telemetry is normal.
        (plain_command, &[], &[]),
        // A type without a recovery block: no rule applies, and any
        // confidence goes.
        (turn_end, &[], &[]),
    ];
    for (payload, derived, native) in rows {
        for confidence in [Low, Medium, High] {
            let ty = payload.event_type();
            let d = event(payload.clone(), Attestation::Derived, confidence);
            assert_eq!(broken(&d), derived, "derived {ty} at {confidence:?}");
            let n = event(payload.clone(), Attestation::Native, confidence);
            assert_eq!(broken(&n), native, "native {ty} at {confidence:?}");
        }
    }
}

#[test]
fn a_recovery_block_on_a_type_without_one_does_not_parse() {
    let row = json!({
        "type": "turn.completed",
        "payload": {"stop_reason": null, "recovery": {"reason": "span_cap_pressure"}}
    });
    assert!(serde_json::from_value::<Payload>(row).is_err());
}

#[test]
fn request_not_observed_never_links_a_request() {
    let Payload::ToolRequested(mut p) = recovered(On::ToolRequested, RequestNotObserved) else {
        unreachable!()
    };
    p.recovery = Some(Recovery {
        requested_event_id: Some(EventId("ev_r".into())),
        ..block(RequestNotObserved)
    });
    let e = event(Payload::ToolRequested(p), Attestation::Derived, Medium);
    assert_eq!(broken(&e), [4]);
}

#[test]
fn rule_2_recovered_terminals_claim_no_result() {
    let tool = |f: fn(&mut ToolCompleted)| {
        let Payload::ToolCompleted(mut p) = recovered(On::ToolCompleted, SpanCapPressure) else {
            unreachable!()
        };
        f(&mut p);
        event(Payload::ToolCompleted(p), Attestation::Derived, Low)
    };
    let command = |f: fn(&mut CommandCompleted)| {
        let reason = CommandCompletionNotObserved;
        let Payload::CommandCompleted(mut p) = recovered(On::CommandCompleted, reason) else {
            unreachable!()
        };
        f(&mut p);
        event(Payload::CommandCompleted(p), Attestation::Derived, Medium)
    };
    let rows: [(&str, Event, &[u8]); 8] = [
        ("tool success", tool(|p| p.outcome = Outcome::Success), &[2]),
        ("tool failure", tool(|p| p.outcome = Outcome::Failure), &[2]),
        (
            "tool interrupted",
            tool(|p| p.outcome = Outcome::Interrupted),
            &[2],
        ),
        ("tool exit code", tool(|p| p.exit_code = Some(0)), &[2]),
        ("tool error", tool(|p| p.error = Some("e".into())), &[2]),
        (
            "tool content",
            tool(|p| p.content = Some(Json::from_value(&json!("out")))),
            &[2],
        ),
        (
            "command success",
            command(|p| p.outcome = Outcome::Success),
            &[2],
        ),
        ("command signal", command(|p| p.signal = Some(9)), &[2]),
    ];
    for (name, e, want) in rows {
        assert_eq!(broken(&e), want, "{name}");
    }
}

#[test]
fn every_branch_of_rule_5() {
    let bound = |on: On, reason, attestation, value: Observation<u64>| {
        let mut payload = recovered(on, reason);
        let block = match &mut payload {
            Payload::ToolRequested(p) => p.recovery.as_mut(),
            Payload::ToolCompleted(p) => p.recovery.as_mut(),
            Payload::CommandCompleted(p) => p.recovery.as_mut(),
            _ => None,
        };
        block.expect("recovered").elapsed_upper_bound_ms = Some(value);
        event(payload, attestation, pinned(reason))
    };
    let duration = |on: On, reason, value: Observation<u64>| {
        let mut payload = recovered(on, reason);
        match &mut payload {
            Payload::ToolCompleted(p) => p.duration_ms = value,
            Payload::CommandCompleted(p) => p.duration_ms = value,
            _ => unreachable!("only terminals have a duration"),
        }
        event(payload, Attestation::Derived, pinned(reason))
    };
    let (derived, native) = (Attestation::Derived, Attestation::Native);
    let observed = Observation::Observed;
    let unknown = Observation::unknown;
    let (tr, tc, cc) = (On::ToolRequested, On::ToolCompleted, On::CommandCompleted);
    let salvage = ExplicitEndSalvage;
    let closer = CommandCompletionNotObserved;
    let rows: [(&str, Event, &[u8]); 11] = [
        (
            "observed bound, derived tool.completed",
            bound(tc, salvage, derived, observed(40)),
            &[],
        ),
        (
            "observed bound, native tool.completed",
            bound(tc, salvage, native, observed(40)),
            &[1, 5],
        ),
        (
            "observed bound on tool.requested",
            bound(tr, RequestNotObserved, derived, observed(40)),
            &[5],
        ),
        (
            "observed bound on command.completed",
            bound(cc, closer, derived, observed(40)),
            &[5],
        ),
        (
            "unknown bound on tool.requested",
            bound(tr, RequestNotObserved, derived, unknown("cross_boot")),
            &[],
        ),
        (
            "unknown bound on command.completed",
            bound(
                cc,
                closer,
                derived,
                unknown("bound_not_recorded_for_commands"),
            ),
            &[],
        ),
        (
            "unknown bound on tool.completed",
            bound(tc, salvage, derived, unknown("clock_regressed")),
            &[],
        ),
        (
            "observed duration on tool.completed",
            duration(tc, salvage, observed(12)),
            &[5],
        ),
        (
            "observed duration on command.completed",
            duration(cc, closer, observed(12)),
            &[5],
        ),
        (
            "duration unknown under another reason, tool.completed",
            duration(tc, salvage, unknown("span_cap_pressure")),
            &[5],
        ),
        (
            "duration unknown under another reason, command.completed",
            duration(cc, closer, unknown("not_reported")),
            &[5],
        ),
    ];
    for (name, e, want) in rows {
        assert_eq!(broken(&e), want, "{name}");
    }
}

/// The contract's table is the ADR's table.
#[test]
fn the_pinned_table_is_the_adr_table() {
    for (reason, with_input, without_input) in PINNED {
        assert_eq!(reason.pinned_confidence(true), with_input, "{reason}");
        assert_eq!(reason.pinned_confidence(false), without_input, "{reason}");
    }
}

/// Rule 6: on a native or no turn, exactly the pinned value; on a stamped
/// turn, exactly one step lower (low stays low).
#[test]
fn every_reason_at_every_confidence_on_every_kind_of_turn() {
    // (reason, on, confidence accepted on native/none turns, on stamped)
    let rows: [(RecoveryReason, On, Confidence, Confidence); 6] = [
        (RequestNotObserved, On::ToolRequested, Medium, Low),
        (
            CompletionNotObservedBeforeTurnEnd,
            On::ToolCompleted,
            Medium,
            Low,
        ),
        (
            CompletionNotObservedBeforeNextTurn,
            On::ToolCompleted,
            Low,
            Low,
        ),
        (SpanCapPressure, On::ToolCompleted, Low, Low),
        (ExplicitEndSalvage, On::ToolCompleted, Medium, Low),
        (
            CommandCompletionNotObserved,
            On::CommandCompleted,
            Medium,
            Low,
        ),
    ];
    for (reason, on, unstamped, stamped) in rows {
        for (source, accepted) in [
            (TurnSource::Native, unstamped),
            (TurnSource::None, unstamped),
            (TurnSource::Stamped, stamped),
        ] {
            for confidence in [Low, Medium, High] {
                let mut e = event(recovered(on, reason), Attestation::Derived, confidence);
                e.turn.source = source;
                let want: &[u8] = if confidence == accepted { &[] } else { &[6] };
                assert_eq!(broken(&e), want, "{reason} on {source:?} at {confidence:?}");
            }
        }
    }
}

#[test]
fn request_not_observed_with_its_input_is_high_or_one_lower_when_stamped() {
    let Payload::ToolRequested(mut p) = recovered(On::ToolRequested, RequestNotObserved) else {
        unreachable!()
    };
    p.input = Some(Json::from_value(&json!({"command": "ls"})));
    for (source, accepted) in [
        (TurnSource::Native, High),
        (TurnSource::None, High),
        (TurnSource::Stamped, Medium),
    ] {
        for confidence in [Low, Medium, High] {
            let payload = Payload::ToolRequested(p.clone());
            let mut e = event(payload, Attestation::Derived, confidence);
            e.turn.source = source;
            let want: &[u8] = if confidence == accepted { &[] } else { &[6] };
            assert_eq!(broken(&e), want, "{source:?} at {confidence:?}");
        }
    }
}

#[test]
fn violations_name_their_rule() {
    let mut e = event(
        recovered(On::ToolCompleted, SpanCapPressure),
        Attestation::Derived,
        High,
    );
    e.turn.source = TurnSource::Stamped;
    let found = validate_event(&e);
    assert_eq!(found.len(), 1);
    let text = found[0].to_string();
    assert!(
        text.starts_with("rule 6 (recovered-confidence-pinned): span_cap_pressure"),
        "{text}"
    );
}
