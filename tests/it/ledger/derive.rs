//! The tables derived at append time do not depend on how events are cut
//! into batches: a span opened and closed within one batch is filed in
//! memory and written once, a span of an earlier batch is updated in
//! place, and both must leave exactly the rows (ids and row order included)
//! that filing one event at a time leaves. Regressions, if proptest finds
//! any, are committed under `tests/it/ledger/derive.proptest-regressions`.

use harnery::contract::{
    AdapterId, Attestation, CommandCompleted, CommandRequested, Confidence, EndCancelled,
    EndExpired, EndRequested, EndSalvaged, Event, EventId, HealthCondition, Observation, Outcome,
    Payload, PromptSubmitted, Provenance, Recovery, RecoveryReason, SessionRef, TimeSource,
    ToolCompleted, ToolRequested, TurnAttribution, TurnSource, TurnStarted,
};
use harnery::home::Home;
use harnery::ledger::{AppendBatch, LedgerWriter, ReadyEvent};
use proptest::prelude::*;

const CALLS: [Option<&str>; 4] = [Some("call-a"), Some("call-b"), Some("call-c"), None];

/// One generated step: which session speaks, what it says, and the picks
/// that fill in its call id, the event it names and whether it is recovered.
type Step = (u8, u8, u8, u16, bool);

fn session(i: u8) -> SessionRef {
    SessionRef {
        adapter: AdapterId::ClaudeCode,
        session_id: format!("sess-{i}"),
    }
}

/// An id the payload names: none, an earlier event of any session, or one
/// that is in no ledger.
fn named(pick: u16, earlier: &[EventId]) -> Option<EventId> {
    match pick % 4 {
        0 => None,
        1 => Some(EventId::derive("nowhere", &[&pick.to_le_bytes()])),
        _ if earlier.is_empty() => None,
        _ => Some(earlier[pick as usize % earlier.len()].clone()),
    }
}

fn recovery(reason: RecoveryReason) -> Option<Recovery> {
    Some(Recovery {
        reason,
        requested_event_id: None,
        elapsed_upper_bound_ms: None,
    })
}

fn tool_completed(call: Option<&str>, named: Option<EventId>, recovered: bool) -> Payload {
    let reason = RecoveryReason::CompletionNotObservedBeforeTurnEnd;
    Payload::ToolCompleted(ToolCompleted {
        tool_call_id: call.map(str::to_string),
        tool_name: "Bash".into(),
        requested_event_id: named,
        outcome: if recovered {
            Outcome::Unknown
        } else {
            Outcome::Success
        },
        duration_ms: if recovered {
            Observation::unknown(reason.as_str())
        } else {
            Observation::Observed(7)
        },
        exit_code: None,
        error: None,
        content: None,
        recovery: if recovered { recovery(reason) } else { None },
        paired_by: None,
    })
}

fn command_completed(named: Option<EventId>, recovered: bool) -> Payload {
    let reason = RecoveryReason::CommandCompletionNotObserved;
    Payload::CommandCompleted(CommandCompleted {
        requested_event_id: named,
        outcome: if recovered {
            Outcome::Unknown
        } else {
            Outcome::Failure
        },
        duration_ms: if recovered {
            Observation::unknown(reason.as_str())
        } else {
            Observation::Observed(3)
        },
        exit_code: None,
        signal: None,
        recovery: if recovered { recovery(reason) } else { None },
    })
}

fn payload(step: Step, earlier: &[EventId]) -> (Payload, bool) {
    let (_, what, call, pick, recovered) = step;
    let call = CALLS[call as usize % CALLS.len()];
    let end = || named(pick | 2, earlier).unwrap_or_else(|| EventId::derive("no-end", &[]));
    let payload = match what % 11 {
        0 | 1 => Payload::ToolRequested(ToolRequested {
            tool_call_id: call.map(str::to_string),
            tool_name: format!("tool-{pick}"),
            input_digest: "d".into(),
            input: None,
            recovery: if recovered {
                recovery(RecoveryReason::RequestNotObserved)
            } else {
                None
            },
        }),
        2 | 3 => {
            return (
                tool_completed(call, named(pick, earlier), recovered),
                recovered,
            );
        }
        4 => Payload::CommandRequested(CommandRequested {
            argv: vec!["cargo".into(), format!("step-{pick}")],
            cwd: None,
            pid: None,
        }),
        5 => {
            return (
                command_completed(named(pick, earlier), recovered),
                recovered,
            );
        }
        6 => Payload::EndRequested(EndRequested {
            origin: "operator".into(),
            reason: None,
            approved_spans: earlier.iter().take(pick as usize % 3).cloned().collect(),
        }),
        7 => match pick % 3 {
            0 => Payload::EndSalvaged(EndSalvaged {
                end_event_id: end(),
                salvaged_spans: 1,
            }),
            1 => Payload::EndCancelled(EndCancelled {
                end_event_id: end(),
                cause: "native_work".into(),
            }),
            _ => Payload::EndExpired(EndExpired {
                end_event_id: end(),
            }),
        },
        8 => Payload::HealthCondition(HealthCondition {
            code: format!("code-{}", pick % 3),
            detail: "detail".into(),
        }),
        9 => Payload::TurnStarted(TurnStarted {
            prompt_event_id: None,
        }),
        _ => Payload::PromptSubmitted(PromptSubmitted {
            prompt: None,
            transformed: false,
        }),
    };
    let derived = matches!(payload, Payload::ToolRequested(_)) && recovered;
    (payload, derived)
}

/// The events of a run, each session's offsets from 0 without gaps.
fn events(steps: &[Step]) -> Vec<Event> {
    let mut next = [0u64; 3];
    let mut ids = Vec::new();
    let mut out = Vec::new();
    for (i, step) in steps.iter().enumerate() {
        let s = step.0 % 3;
        let offset = next[s as usize];
        next[s as usize] += 1;
        let (payload, derived) = payload(*step, &ids);
        let id = EventId::derive("derive-prop", &[&[s], &offset.to_le_bytes()]);
        ids.push(id.clone());
        out.push(Event {
            id,
            session: session(s),
            offset,
            time_unix_ns: 1_700_000_000_000_000_000 + i as i64 * 1_000,
            time_source: TimeSource::Received,
            clock: None,
            agent_id: (step.3 % 5 == 0).then(|| "agent-1".to_string()),
            turn: TurnAttribution {
                source: TurnSource::Native,
                turn_id: Some(format!("turn-{}", step.3 % 2)),
            },
            provenance: if derived {
                Provenance {
                    attestation: Attestation::Derived,
                    confidence: Confidence::Medium,
                }
            } else {
                Provenance::NATIVE
            },
            raw: vec![],
            payload,
        });
    }
    out
}

/// Append `events` cut before every index in `cuts`, and dump every
/// derived table with its rows in stored order.
fn derived_tables(events: &[Event], cuts: &[usize]) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let home = Home::at(dir.path());
    let mut ledger = LedgerWriter::open(&home, 1).expect("ledger opens");
    let inc = ledger.take_incarnation().unwrap();
    let mut bounds: Vec<usize> = cuts.iter().map(|c| c % (events.len() + 1)).collect();
    bounds.extend([0, events.len()]);
    bounds.sort_unstable();
    bounds.dedup();
    for (n, w) in bounds.windows(2).enumerate() {
        let batch = AppendBatch {
            id: format!("batch-{n}"),
            contract_digest: ledger.genesis().schema_digest.clone(),
            sources: vec![],
            signals: vec![],
            events: events[w[0]..w[1]]
                .iter()
                .cloned()
                .map(ReadyEvent::new)
                .collect(),
            states: vec![],
        };
        ledger
            .append(&batch, inc, 1, &|| {})
            .expect("the batch appends");
    }
    // The span counts kept on each session row are those of its span rows,
    // however the spans were opened and closed across batches.
    let (_, problems) = ledger.verify().validate().unwrap();
    let counts: Vec<_> = problems
        .iter()
        .filter(|p| p.rule == "span-counts")
        .collect();
    assert!(counts.is_empty(), "{counts:?}");
    let conn = rusqlite::Connection::open(ledger.dir().join("ledger.sqlite")).unwrap();
    harnery::ledger::eventz::register(&conn).unwrap();
    let mut out = Vec::new();
    for sql in [
        "SELECT * FROM spans ORDER BY seq",
        "SELECT * FROM sessions ORDER BY adapter, session_id",
        "SELECT * FROM end_requests ORDER BY rowid",
        "SELECT * FROM health ORDER BY rowid",
    ] {
        let mut stmt = conn.prepare(sql).unwrap();
        let width = stmt.column_count();
        let rows = stmt
            .query_map([], |r| {
                let cells: Vec<rusqlite::types::Value> =
                    (0..width).map(|i| r.get(i)).collect::<Result<_, _>>()?;
                Ok(format!("{cells:?}"))
            })
            .unwrap();
        out.push(sql.to_string());
        out.extend(rows.map(Result::unwrap));
    }
    out
}

fn step() -> impl Strategy<Value = Step> {
    (0u8..3, 0u8..11, 0u8..4, any::<u16>(), any::<bool>())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn derived_tables_do_not_depend_on_batch_cuts(
        steps in proptest::collection::vec(step(), 1..48),
        cuts in proptest::collection::vec(any::<usize>(), 0..5),
    ) {
        let events = events(&steps);
        let one_at_a_time: Vec<usize> = (0..events.len()).collect();
        let expected = derived_tables(&events, &one_at_a_time);
        prop_assert_eq!(&derived_tables(&events, &[]), &expected);
        prop_assert_eq!(&derived_tables(&events, &cuts), &expected);
    }
}

/// The common shape, a request and its terminal in one batch, next to a
/// terminal that names a request of an earlier batch, and one whose request
/// was never seen.
#[test]
fn spans_within_and_across_batches_keep_their_rows() {
    let steps: Vec<Step> = vec![
        (0, 0, 0, 4, false),
        (0, 0, 1, 4, false),
        (0, 2, 0, 2, false),
        (1, 4, 3, 0, false),
        (1, 5, 3, 3, true),
        (0, 2, 3, 0, false),
        (0, 2, 1, 0, true),
    ];
    let events = events(&steps);
    let whole = derived_tables(&events, &[]);
    let spans: Vec<&String> = whole
        .iter()
        .skip(1)
        .take_while(|l| !l.starts_with("SELECT"))
        .collect();
    assert_eq!(spans.len(), 4, "{whole:#?}");
    for cut in 0..=events.len() {
        assert_eq!(derived_tables(&events, &[cut]), whole, "cut at {cut}");
    }
}
