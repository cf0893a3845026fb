//! Contract tests: the description matches the structs, the digest is
//! pinned, strict payloads reject strangers, and each validator rule fires.

use serde_json::{Value, json};

use super::*;

pub(super) use super::samples::samples;

/// The members the contract's shape gives the payload of `ty`.
fn shaped_members(ty: &str) -> Vec<String> {
    let Shape::Object(envelope) = contract_shape() else {
        panic!("the envelope is an object")
    };
    let payload = envelope
        .one_of
        .iter()
        .find_map(|a| match a {
            Shape::Object(a)
                if a.member("type").map(|m| &m.shape) == Some(&Shape::Enum(vec![ty.into()])) =>
            {
                a.member("payload")
            }
            _ => None,
        })
        .unwrap_or_else(|| panic!("{ty} is not in the contract's shape"));
    match &payload.shape {
        Shape::Object(p) => p.members.iter().map(|m| m.name.clone()).collect(),
        other => panic!("the payload of {ty} is {other:?}"),
    }
}

#[test]
fn every_event_type_has_a_sample_and_a_shape() {
    let samples = samples();
    assert_eq!(samples.len(), EventType::ALL.len());
    for (sample, ty) in samples.iter().zip(EventType::ALL) {
        assert_eq!(sample.event_type(), *ty);
        let value = serde_json::to_value(sample).expect("payloads serialize");
        let mut keys: Vec<String> = value["payload"]
            .as_object()
            .expect("payload is an object")
            .keys()
            .cloned()
            .collect();
        let mut shaped = shaped_members(ty.as_str());
        keys.sort();
        shaped.sort();
        assert_eq!(keys, shaped, "the shape of {ty} differs from its struct");
    }
}

#[test]
fn payloads_reject_unknown_fields() {
    let row = json!({"type": "session.ended", "payload": {"reason": "x", "surprise": 1}});
    assert!(serde_json::from_value::<Payload>(row).is_err());
    let row = json!({"type": "no.such.type", "payload": {}});
    assert!(serde_json::from_value::<Payload>(row).is_err());
}

/// An event of this payload whose confidence is the one its recovery block
/// (if any) pins, so a test names only the rules it means to break.
pub(super) fn event(payload: Payload, attestation: Attestation) -> Event {
    let confidence = match (&payload, payload.recovery()) {
        (Payload::ToolRequested(p), Some(r)) => r.reason.pinned_confidence(p.input.is_some()),
        (_, Some(r)) => r.reason.pinned_confidence(false),
        (_, None) => Confidence::Medium,
    };
    Event {
        id: EventId("ev_x".into()),
        session: SessionRef {
            adapter: AdapterId::ClaudeCode,
            session_id: "s".into(),
        },
        offset: 0,
        time_unix_ns: 0,
        time_source: TimeSource::Received,
        clock: None,
        agent_id: None,
        turn: TurnAttribution::none(),
        provenance: Provenance {
            attestation,
            confidence,
        },
        raw: vec![],
        payload,
    }
}

fn recovered_completion(reason: RecoveryReason) -> ToolCompleted {
    ToolCompleted {
        tool_call_id: None,
        tool_name: "Bash".into(),
        requested_event_id: Some(EventId("ev_req".into())),
        outcome: Outcome::Unknown,
        duration_ms: Observation::unknown(reason.as_str()),
        exit_code: None,
        error: None,
        content: None,
        recovery: Some(Recovery {
            reason,
            requested_event_id: Some(EventId("ev_req".into())),
            elapsed_upper_bound_ms: Some(Observation::Observed(10)),
        }),
        paired_by: None,
    }
}

fn rules(event: &Event) -> Vec<u8> {
    validate_event(event)
        .iter()
        .map(|v| v.rule.number())
        .collect()
}

#[test]
fn a_well_formed_recovered_completion_is_valid() {
    let e = event(
        Payload::ToolCompleted(recovered_completion(
            RecoveryReason::CompletionNotObservedBeforeTurnEnd,
        )),
        Attestation::Derived,
    );
    assert_eq!(rules(&e), Vec::<u8>::new());
}

#[test]
fn rule_1_recovery_requires_derived() {
    let e = event(
        Payload::ToolCompleted(recovered_completion(RecoveryReason::SpanCapPressure)),
        Attestation::Native,
    );
    assert!(rules(&e).contains(&1));
}

#[test]
fn rule_2_recovered_outcome_unknown() {
    let mut p = recovered_completion(RecoveryReason::SpanCapPressure);
    p.outcome = Outcome::Failure;
    assert_eq!(
        rules(&event(Payload::ToolCompleted(p), Attestation::Derived)),
        vec![2]
    );
    let mut p = recovered_completion(RecoveryReason::SpanCapPressure);
    p.exit_code = Some(1);
    assert_eq!(
        rules(&event(Payload::ToolCompleted(p), Attestation::Derived)),
        vec![2]
    );
}

#[test]
fn rule_3_derived_tool_event_needs_recovery() {
    let mut p = recovered_completion(RecoveryReason::SpanCapPressure);
    p.recovery = None;
    p.duration_ms = Observation::unknown("whatever");
    assert_eq!(
        rules(&event(Payload::ToolCompleted(p), Attestation::Derived)),
        vec![3]
    );
    // Commands are exempt: derived command telemetry is normal.
    let c = CommandCompleted {
        requested_event_id: None,
        outcome: Outcome::Success,
        duration_ms: Observation::Observed(3),
        exit_code: Some(0),
        signal: None,
        recovery: None,
    };
    assert_eq!(
        rules(&event(Payload::CommandCompleted(c), Attestation::Derived)),
        Vec::<u8>::new()
    );
}

#[test]
fn rule_4_reason_binds_event_type() {
    for reason in RecoveryReason::ALL {
        if reason.event_type() == EventType::ToolCompleted {
            continue;
        }
        let e = event(
            Payload::ToolCompleted(recovered_completion(reason)),
            Attestation::Derived,
        );
        assert!(
            rules(&e).contains(&4),
            "{reason} accepted on tool.completed"
        );
    }
    let req = ToolRequested {
        tool_call_id: None,
        tool_name: "Bash".into(),
        input_digest: "d".into(),
        input: None,
        recovery: Some(Recovery {
            reason: RecoveryReason::RequestNotObserved,
            requested_event_id: Some(EventId("ev_r".into())),
            elapsed_upper_bound_ms: None,
        }),
    };
    assert_eq!(
        rules(&event(Payload::ToolRequested(req), Attestation::Derived)),
        vec![4]
    );
}

#[test]
fn rule_5_durations_and_bounds() {
    let mut p = recovered_completion(RecoveryReason::SpanCapPressure);
    p.duration_ms = Observation::Observed(12);
    assert_eq!(
        rules(&event(Payload::ToolCompleted(p), Attestation::Derived)),
        vec![5]
    );
    let c = CommandCompleted {
        requested_event_id: None,
        outcome: Outcome::Unknown,
        duration_ms: Observation::unknown("command_completion_not_observed"),
        exit_code: None,
        signal: None,
        recovery: Some(Recovery {
            reason: RecoveryReason::CommandCompletionNotObserved,
            requested_event_id: None,
            elapsed_upper_bound_ms: Some(Observation::Observed(4)),
        }),
    };
    assert_eq!(
        rules(&event(Payload::CommandCompleted(c), Attestation::Derived)),
        vec![5]
    );
}

#[test]
fn event_rows_round_trip_through_json() {
    for payload in samples() {
        let e = event(payload, Attestation::Native);
        let text = serde_json::to_string(&e).expect("serializes");
        let back: Event = serde_json::from_str(&text).expect("parses");
        assert_eq!(back, e);
        let v: Value = serde_json::from_str(&text).expect("json");
        assert!(v.get("type").is_some());
    }
}

/// The encoding as first written: one hasher call per prefix and part.
fn digest_parts_one_call_each(first: &[u8], parts: &[&[u8]]) -> blake3::Hash {
    let mut hasher = blake3::Hasher::new();
    for part in std::iter::once(first).chain(parts.iter().copied()) {
        hasher.update(&(part.len() as u64).to_le_bytes());
        hasher.update(part);
    }
    hasher.finalize()
}

#[test]
fn gathered_part_digests_equal_one_call_per_part() {
    let sizes = [
        0, 1, 7, 8, 63, 64, 200, 495, 496, 497, 504, 511, 512, 513, 1024, 3000,
    ];
    let bytes: Vec<u8> = (0..7000u32).map(|n| (n * 31 % 251) as u8).collect();
    for &a in &sizes {
        for &b in &sizes {
            let parts: [&[u8]; 3] = [&bytes[..a], &bytes[a..a + b], b"tail"];
            assert_eq!(
                digest_parts(b"tag", &parts),
                digest_parts_one_call_each(b"tag", &parts),
                "parts of {a} and {b} bytes"
            );
            let first = &bytes[..a];
            assert_eq!(
                digest_parts(first, &parts[1..]),
                digest_parts_one_call_each(first, &parts[1..])
            );
        }
    }
}

#[test]
fn event_ids_keep_their_bytes() {
    let parts: [&[u8]; 3] = [b"s", b"r1", &0u32.to_le_bytes()];
    let id = EventId::derive("harnery.producer.event", &parts);
    assert_eq!(id.as_str(), "ev_f68ea71e70cc866882b9604e6ca30804");
    let reference = digest_parts_one_call_each(b"harnery.producer.event", &parts).to_hex();
    assert_eq!(id.as_str()[3..], reference[..32]);
}

#[test]
fn event_ids_are_deterministic_and_length_prefixed() {
    assert_eq!(
        EventId::derive("t", &[b"ab", b"c"]),
        EventId::derive("t", &[b"ab", b"c"])
    );
    assert_ne!(
        EventId::derive("t", &[b"ab", b"c"]),
        EventId::derive("t", &[b"a", b"bc"])
    );
}

/// Every kind of string a writer must treat alike: each ASCII character
/// alone and amid text, non-ASCII text, and lengths around a word.
fn awkward_strings() -> Vec<String> {
    let mut out: Vec<String> = (0u8..0x80)
        .map(|b| char::from(b).to_string())
        .chain((0u8..0x80).map(|b| format!("abcdefgh{}ijklmnop", char::from(b))))
        .collect();
    out.extend(
        [
            "",
            "é",
            "日本語のテキスト",
            "\u{2028}\u{2029}",
            "emoji 🦀 and \u{7f}",
            "ev_0123456789abcdef",
        ]
        .map(String::from),
    );
    out.extend((0..20).map(|n| "x".repeat(n) + "\""));
    out
}

/// Envelopes of every shape: each enum value, with and without each
/// optional member.
pub(super) fn envelopes(payload: &Payload) -> Vec<Event> {
    let mut out = Vec::new();
    let clocks = [
        None,
        Some(crate::clock::ClockSample::default()),
        Some(crate::clock::ClockSample {
            boot_id: Some("boot".into()),
            boottime_ns: Some(u64::MAX),
        }),
    ];
    let raws = [
        vec![],
        vec![RawRef {
            record_digest: "d1".into(),
            event_name: None,
        }],
        vec![
            RawRef {
                record_digest: "d1".into(),
                event_name: Some("PreToolUse".into()),
            },
            RawRef {
                record_digest: "d2".into(),
                event_name: Some("Stop".into()),
            },
        ],
    ];
    for (n, clock) in clocks.into_iter().enumerate() {
        for (source, turn_id) in [
            (TurnSource::Native, Some("p1")),
            (TurnSource::Stamped, Some("stamped-1")),
            (TurnSource::None, None),
        ] {
            let mut e = event(payload.clone(), Attestation::Native);
            e.session.adapter = AdapterId::ALL[n % 2];
            e.offset = n as u64 * 1_000_000_007;
            e.time_unix_ns = [i64::MIN, 0, i64::MAX][n];
            e.time_source = [
                TimeSource::Agent,
                TimeSource::Received,
                TimeSource::Finalizer,
            ][n];
            e.clock = clock.clone();
            e.agent_id = (n == 1).then(|| "agent-1".into());
            e.turn = TurnAttribution {
                source,
                turn_id: turn_id.map(String::from),
            };
            e.provenance = Provenance {
                attestation: [Attestation::Native, Attestation::Derived][n % 2],
                confidence: [Confidence::Low, Confidence::Medium, Confidence::High][n],
            };
            e.raw = raws[n].clone();
            out.push(e);
        }
    }
    out
}

#[test]
fn the_direct_writer_writes_what_serde_writes() {
    let mut payloads = samples();
    payloads.extend([
        Payload::ToolRequested(ToolRequested {
            tool_call_id: None,
            tool_name: "Bash".into(),
            input_digest: "d".into(),
            input: None,
            recovery: None,
        }),
        Payload::ToolCompleted(ToolCompleted {
            tool_call_id: None,
            tool_name: "Bash".into(),
            requested_event_id: None,
            outcome: Outcome::Interrupted,
            duration_ms: Observation::unknown("not_reported"),
            exit_code: Some(-1),
            error: None,
            content: Some(Json::from_value(&json!({
                "z": [1.5, -2, 1e300, null, true, -0.0, 0.1, 1e-7, 0, u64::MAX, i64::MIN],
                "a\"\n": {"ü": "\u{1}", "": [[], {}]}
            }))),
            recovery: None,
            paired_by: None,
        }),
        Payload::PromptSubmitted(PromptSubmitted {
            prompt: None,
            transformed: false,
        }),
        Payload::TurnStarted(TurnStarted {
            prompt_event_id: None,
        }),
        Payload::TurnCompleted(TurnCompleted { stop_reason: None }),
    ]);
    for outcome in [Outcome::Success, Outcome::Failure, Outcome::Unknown] {
        payloads.push(Payload::ToolCompleted(ToolCompleted {
            outcome,
            ..recovered_completion(RecoveryReason::SpanCapPressure)
        }));
    }
    for payload in &payloads {
        for e in envelopes(payload) {
            let serde = serde_json::to_string(&e).expect("serializes");
            assert_eq!(e.to_json(), serde);
        }
    }
}

#[test]
fn the_direct_writer_escapes_what_serde_escapes() {
    for text in awkward_strings() {
        let mut e = event(
            Payload::ToolCompleted(ToolCompleted {
                tool_call_id: Some(text.clone()),
                tool_name: text.clone(),
                requested_event_id: Some(EventId(text.clone())),
                outcome: Outcome::Success,
                duration_ms: Observation::Unknown(text.clone()),
                exit_code: None,
                error: Some(text.clone()),
                content: Some(Json::from_value(&Value::String(text.clone()))),
                recovery: None,
                paired_by: None,
            }),
            Attestation::Native,
        );
        e.id = EventId(text.clone());
        e.session.session_id = text.clone();
        e.agent_id = Some(text.clone());
        e.turn.turn_id = Some(text.clone());
        e.raw = vec![RawRef {
            record_digest: text.clone(),
            event_name: Some(text.clone()),
        }];
        assert_eq!(
            e.to_json(),
            serde_json::to_string(&e).expect("serializes"),
            "{text:?}"
        );
    }
}

/// The payloads of a record's lines, every member absent, and every text
/// in them awkward: what the direct writer writes is what serde writes.
#[test]
fn the_direct_writer_writes_record_payloads_as_serde_does() {
    let at = |path: &str| RecordAt {
        path: path.into(),
        offset: u64::MAX,
    };
    let mut payloads = vec![
        Payload::MessageUser(MessageUser {
            record: at(""),
            message_id: None,
            text: None,
            source: None,
        }),
        Payload::MessageAssistant(MessageAssistant {
            record: at("p"),
            message_id: None,
            model: None,
            text: None,
            tool_call_ids: Vec::new(),
        }),
        Payload::ReasoningRecorded(ReasoningRecorded {
            record: at("p"),
            message_id: None,
            text: None,
            continuation: None,
        }),
        Payload::SessionMetadata(SessionMetadata {
            record: at("p"),
            agent_version: None,
            head_commit: None,
            cwd: None,
            model: None,
        }),
    ];
    for (success, exit_code, output, output_cut_bytes) in [
        (None, None, None, None),
        (Some(false), Some(i64::MIN), Some(String::new()), None),
        (
            Some(true),
            Some(-1),
            Some("é\n\"\u{0}\u{1f}</x>".into()),
            Some(u64::MAX),
        ),
        (None, None, None, Some(0)),
    ] {
        payloads.push(Payload::ToolRecorded(ToolRecorded {
            record: at("p"),
            span_request_event_id: None,
            tool_call_id: String::new(),
            tool_name: String::new(),
            turn_id: None,
            success,
            exit_code,
            output,
            output_cut_bytes,
        }));
    }
    let raw = Json::from_value(&json!({"input_tokens": 1, "z": [1.5, null, "ü\n"]}));
    for n in [None, Some(0), Some(u64::MAX)] {
        payloads.push(Payload::UsageReported(UsageReported {
            record: at("p"),
            message_id: None,
            model: None,
            input_tokens: n,
            output_tokens: n,
            cache_read_tokens: n,
            cache_write_tokens: n,
            cost: n.map(|_| Json::from_value(&json!(1e-7))),
            duration_ms: n,
            time_to_first_token_ms: n,
            reasoning_tokens: n,
            raw: n.map(|_| raw.clone()),
            copied_from_session: None,
        }));
    }
    for text in awkward_strings() {
        let t = || Some(text.clone());
        payloads.extend([
            Payload::MessageUser(MessageUser {
                record: at(&text),
                message_id: t(),
                text: t(),
                source: t(),
            }),
            Payload::MessageAssistant(MessageAssistant {
                record: at(&text),
                message_id: t(),
                model: t(),
                text: t(),
                tool_call_ids: vec![text.clone(), text.clone()],
            }),
            Payload::ReasoningRecorded(ReasoningRecorded {
                record: at(&text),
                message_id: t(),
                text: t(),
                continuation: t(),
            }),
            Payload::SessionMetadata(SessionMetadata {
                record: at(&text),
                agent_version: t(),
                head_commit: t(),
                cwd: t(),
                model: t(),
            }),
            Payload::ToolRecorded(ToolRecorded {
                record: at(&text),
                span_request_event_id: Some(EventId(text.clone())),
                tool_call_id: text.clone(),
                tool_name: text.clone(),
                turn_id: t(),
                success: Some(true),
                exit_code: Some(0),
                output: Some(text.clone()),
                output_cut_bytes: Some(1),
            }),
            Payload::UsageReported(UsageReported {
                record: at(&text),
                message_id: t(),
                model: t(),
                input_tokens: None,
                output_tokens: None,
                cache_read_tokens: None,
                cache_write_tokens: None,
                cost: None,
                duration_ms: None,
                time_to_first_token_ms: None,
                reasoning_tokens: None,
                raw: Some(Json::from_value(&Value::String(text.clone()))),
                copied_from_session: t(),
            }),
        ]);
    }
    for payload in payloads {
        let e = event(payload, Attestation::Record);
        let serde = serde_json::to_string(&e).expect("serializes");
        assert_eq!(e.to_json(), serde);
    }
}
