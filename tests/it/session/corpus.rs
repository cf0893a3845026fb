//! Every Claude Code and Copilot corpus scenario through `route` +
//! `SessionProducer::ingest`: spans paired by the right ids with the right
//! outcomes, turns, subagent mapping, duplicates, and the reason codes the
//! real interruptions produce.

use crate::session::support as producer_support;

use harnery::contract::{
    Attestation, Confidence, Observation, Outcome, Payload, RecoveryReason, TurnSource,
};
use producer_support::*;

const CLAUDE: &[&str] = &[
    "async-hooks",
    "basic",
    "compact",
    "file-tools",
    "hook-block",
    "hook-events",
    "hook-failures",
    "interactive",
    "kill",
    "parallel",
    "permission-denied",
    "resume",
    "sigint",
    "sigterm",
    "slow-hooks",
    "slow-sessionend-timeout",
    "subagent",
    "subagent-sync",
    "tool-failure",
];

const COPILOT: &[&str] = &[
    "basic-shell-anthropic",
    "basic-shell-openai",
    "basic-user-hooks-only",
    "compaction-precompact-hook",
    "hook-deny-json-preToolUse",
    "hook-exit1-nonblocking-events",
    "hook-exit1-postToolUse",
    "hook-exit1-preToolUse",
    "hook-exit2-preToolUse",
    "hook-noread-large-output",
    "hook-timeout-preToolUse",
    "interrupted-sigint",
    "interrupted-sigkill-1-killed",
    "interrupted-sigkill-2-resumed",
    "interrupted-sigterm",
    "model-error-400",
    "pascalcase-hooks",
    "probe-config-no-version",
    "probe-config-unknown-event",
    "probe-repo-hooks-no-optin",
    "probe-repo-hooks-trust-folder",
    "probe-settings-json-inline-hooks",
    "resume-1-first-run",
    "resume-2-resumed-run",
    "shell-nonzero-exit",
    "subagent-task",
    "tool-failure-view",
    "turn-row-lost-at-shutdown",
];

#[test]
fn every_scenario_normalizes_into_valid_events() {
    for scenario in CLAUDE {
        let run = finished(&claude_records(scenario));
        assert!(!run.events.is_empty(), "{scenario}");
        for events in run.events.values() {
            assert!(
                of_type(events, "signal.unrecognized").is_empty(),
                "{scenario}: {events:#?}"
            );
        }
    }
    for scenario in COPILOT {
        let run = finished(&copilot_records(scenario));
        for events in run.events.values() {
            assert!(
                of_type(events, "signal.unrecognized").is_empty(),
                "{scenario}"
            );
        }
    }
}

#[test]
fn claude_clean_scenarios_pair_natively_without_recovery() {
    for scenario in [
        "basic",
        "file-tools",
        "parallel",
        "tool-failure",
        "subagent-sync",
        "resume",
    ] {
        let run = finished(&claude_records(scenario));
        let (producer, events) = run.only();
        assert!(recoveries(events).is_empty(), "{scenario}");
        assert_eq!(producer.span_counts().open, 0, "{scenario}");
        for done in of_type(events, "tool.completed") {
            let Payload::ToolCompleted(c) = &done.payload else {
                unreachable!()
            };
            let request = events
                .iter()
                .find(|e| Some(&e.id) == c.requested_event_id.as_ref())
                .expect("linked request");
            let Payload::ToolRequested(r) = &request.payload else {
                panic!("not a request")
            };
            assert_eq!(
                r.tool_call_id, c.tool_call_id,
                "{scenario}: paired by tool_use_id"
            );
            assert_eq!(done.turn.source, TurnSource::Native);
            assert_eq!(done.turn.turn_id, request.turn.turn_id);
        }
    }
}

#[test]
fn claude_tool_failure_closes_as_failure() {
    let run = finished(&claude_records("tool-failure"));
    let (_, events) = run.only();
    let done = of_type(events, "tool.completed");
    let Payload::ToolCompleted(c) = &done[0].payload else {
        unreachable!()
    };
    assert_eq!(c.outcome, Outcome::Failure);
    assert!(c.error.is_some());
}

#[test]
fn claude_turns_are_native_prompt_ids() {
    let run = finished(&claude_records("interactive"));
    for events in run.events.values() {
        let started = of_type(events, "turn.started");
        let completed = of_type(events, "turn.completed");
        assert!(!started.is_empty());
        assert_eq!(started.len(), completed.len());
        for e in started {
            assert_eq!(e.turn.source, TurnSource::Native);
            assert!(
                matches!(e.payload, Payload::TurnStarted(ref t) if t.prompt_event_id.is_some())
            );
        }
    }
}

#[test]
fn claude_subagent_spans_carry_the_agent_and_survive_the_parents_stop() {
    for scenario in ["subagent", "subagent-sync"] {
        let run = finished(&claude_records(scenario));
        let (_, events) = run.only();
        let inner: Vec<_> = of_type(events, "tool.completed")
            .into_iter()
            .filter(|e| e.agent_id.is_some())
            .collect();
        assert_eq!(inner.len(), 1, "{scenario}");
        assert!(matches!(&inner[0].payload, Payload::ToolCompleted(c) if c.recovery.is_none()));
        assert_eq!(of_type(events, "subagent.started").len(), 1);
        assert_eq!(of_type(events, "subagent.stopped").len(), 1);
        assert!(recoveries(events).is_empty(), "{scenario}");
    }
}

/// A recovered terminal: reason, confidence, attestation, linkage to an
/// open request, outcome unknown, duration unknown(reason), the bound.
fn assert_recovered(
    events: &[harnery::contract::Event],
    reason: RecoveryReason,
    confidence: Confidence,
) -> Observation<u64> {
    let found: Vec<_> = recoveries(events)
        .into_iter()
        .filter(|e| e.payload.recovery().map(|r| r.reason) == Some(reason))
        .collect();
    assert_eq!(found.len(), 1, "one {reason}: {events:#?}");
    let e = found[0];
    assert_eq!(e.provenance.attestation, Attestation::Derived);
    assert_eq!(e.provenance.confidence, confidence, "{reason}");
    let recovery = e.payload.recovery().expect("recovery");
    let Payload::ToolCompleted(c) = &e.payload else {
        panic!("{reason} on {}", e.event_type())
    };
    assert_eq!(c.outcome, Outcome::Unknown);
    assert_eq!(c.duration_ms, Observation::unknown(reason.as_str()));
    assert!(c.exit_code.is_none() && c.error.is_none() && c.content.is_none());
    let request = recovery.requested_event_id.as_ref().expect("linked");
    assert_eq!(c.requested_event_id.as_ref(), Some(request));
    let req = events
        .iter()
        .find(|r| &r.id == request)
        .expect("request exists");
    assert_eq!(req.turn, e.turn, "the terminal keeps the span's turn");
    recovery
        .elapsed_upper_bound_ms
        .clone()
        .expect("bound or its reason")
}

#[test]
fn claude_hook_block_and_permission_denied_recover_at_turn_end() {
    for scenario in ["hook-block", "permission-denied"] {
        let records = claude_records(scenario);
        let run = finished(&records);
        let (producer, events) = run.only();
        let bound = assert_recovered(
            events,
            RecoveryReason::CompletionNotObservedBeforeTurnEnd,
            Confidence::Medium,
        );
        // Pre at line 2, Stop at line 5 (permission-denied: pre 2, stop 6).
        let gap = if scenario == "hook-block" { 30 } else { 40 };
        assert_eq!(bound, Observation::Observed(gap), "{scenario}");
        assert_eq!(producer.span_counts().open, 0);
        // The session end afterwards finds nothing left to salvage.
        let salvaged = of_type(events, "end.salvaged");
        assert!(matches!(&salvaged[0].payload, Payload::EndSalvaged(s) if s.salvaged_spans == 0));
    }
}

/// The `hook-block` records with `prompt_id` removed from the events named.
fn hook_block_without_prompt_id(events: &[&str]) -> Vec<Record> {
    let mut records = claude_records("hook-block");
    for r in &mut records {
        let mut v: serde_json::Value = serde_json::from_slice(&r.payload).expect("corpus json");
        let name = v["hook_event_name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        if events.contains(&name.as_str()) {
            v.as_object_mut().expect("object").remove("prompt_id");
            let text = serde_json::to_string(&v).expect("json");
            *r = record(r.adapter, None, &r.session_id, &text, r.received_unix_ns);
        }
    }
    records
}

#[test]
fn claude_events_without_prompt_id_are_stamped_and_recover_one_step_lower() {
    let run = finished(&hook_block_without_prompt_id(&["PreToolUse"]));
    let (_, events) = run.only();
    let request = &of_type(events, "tool.requested")[0];
    assert_eq!(request.turn.source, TurnSource::Stamped);
    let native = &of_type(events, "turn.started")[0].turn;
    assert_eq!(native.source, TurnSource::Native);
    assert_eq!(request.turn.turn_id, native.turn_id, "the state's turn");
    // The span is swept at the Stop like the native one, one step lower.
    let terminal = &recoveries(events)[0];
    assert_eq!(terminal.turn.source, TurnSource::Stamped);
    assert_recovered(
        events,
        RecoveryReason::CompletionNotObservedBeforeTurnEnd,
        Confidence::Low,
    );
    // A Stop without prompt_id ends the state's turn, stamped.
    let run = finished(&hook_block_without_prompt_id(&["Stop", "PostToolBatch"]));
    let (_, events) = run.only();
    for ty in ["turn.completed", "tool.batch_completed"] {
        assert_eq!(
            of_type(events, ty)[0].turn.source,
            TurnSource::Stamped,
            "{ty}"
        );
    }
    assert_recovered(
        events,
        RecoveryReason::CompletionNotObservedBeforeTurnEnd,
        Confidence::Medium,
    );
}

#[test]
fn claude_kill_leaves_the_span_open_and_mints_the_lost_request() {
    let run = finished(&claude_records("kill"));
    let (producer, events) = run.only();
    // The batch reports a call whose pre and post never ran.
    let minted: Vec<_> = recoveries(events);
    assert_eq!(minted.len(), 1);
    let Payload::ToolRequested(r) = &minted[0].payload else {
        panic!("not a request")
    };
    let recovery = r.recovery.as_ref().expect("recovery");
    assert_eq!(recovery.reason, RecoveryReason::RequestNotObserved);
    assert!(recovery.requested_event_id.is_none());
    assert_eq!(
        minted[0].provenance.confidence,
        Confidence::High,
        "the batch carried the input"
    );
    let done = of_type(events, "tool.completed");
    let Payload::ToolCompleted(c) = &done[0].payload else {
        unreachable!()
    };
    assert_eq!(done[0].provenance.attestation, Attestation::Native);
    assert_eq!(c.requested_event_id.as_ref(), Some(&minted[0].id));
    assert_eq!(c.outcome, Outcome::Failure, "a <tool_use_error> response");
    // SIGKILL: no Stop, no SessionEnd; the pre stays open awaiting salvage.
    assert_eq!(producer.span_counts().open, 1);
    assert_eq!(producer.open_spans()[0].turn.source, TurnSource::Native);
}

#[test]
fn claude_sigint_and_sigterm_salvage_at_the_native_session_end() {
    for scenario in ["sigint", "sigterm"] {
        let run = finished(&claude_records(scenario));
        let (producer, events) = run.only();
        let requested = of_type(events, "end.requested");
        let Payload::EndRequested(end) = &requested[0].payload else {
            unreachable!()
        };
        assert_eq!(end.origin, "native");
        assert_eq!(end.approved_spans.len(), 1, "{scenario}");
        let bound = assert_recovered(
            events,
            RecoveryReason::ExplicitEndSalvage,
            Confidence::Medium,
        );
        assert!(
            matches!(bound, Observation::Observed(_)),
            "{scenario}: same boot"
        );
        let salvaged = of_type(events, "end.salvaged");
        assert!(matches!(&salvaged[0].payload, Payload::EndSalvaged(s) if s.salvaged_spans == 1));
        assert_eq!(producer.span_counts().open, 0);
        assert!(producer.pending_end().is_none());
    }
}

#[test]
fn claude_async_hooks_pair_without_a_stop() {
    let run = finished(&claude_records("async-hooks"));
    let (producer, events) = run.only();
    assert!(recoveries(events).is_empty());
    assert_eq!(producer.span_counts().closed_native, 1);
    // No Stop arrived: the turn was started but never completed.
    assert_eq!(of_type(events, "turn.started").len(), 1);
    assert!(of_type(events, "turn.completed").is_empty());
}

#[test]
fn copilot_duplicates_produce_no_events_and_point_at_the_first() {
    let records = copilot_records("subagent-task");
    let run = finished(&records);
    let (_, events) = run.only();
    assert_eq!(run.duplicates.len(), records.len() / 2, "user + repo hooks");
    for first in &run.duplicates {
        assert!(events.iter().any(|e| &e.id == first));
    }
}

#[test]
fn copilot_subagent_hooks_map_to_the_parent_session() {
    let run = finished(&copilot_records("subagent-task"));
    let (producer, events) = run.only();
    assert_eq!(
        producer.session().session_id,
        "3390a855-a71e-4e90-937d-c5e1dcb418a6"
    );
    let agent = "b81820f7-2048-41cd-986d-b31105a1596f";
    let inner: Vec<_> = of_type(events, "tool.completed")
        .into_iter()
        .filter(|e| e.agent_id.as_deref() == Some(agent))
        .collect();
    assert_eq!(inner.len(), 1, "the subagent's bash call");
    // The subagent's prompt … agentStop is its own stamped turn, nested in
    // the parent's: its stop does not end the parent's turn, so the parent's
    // `task` span pairs natively and nothing is recovered.
    assert_eq!(inner[0].turn.source, TurnSource::Stamped);
    let task = of_type(events, "tool.completed")
        .into_iter()
        .find(|e| e.agent_id.is_none())
        .expect("the task call");
    assert_ne!(task.turn.turn_id, inner[0].turn.turn_id);
    assert!(recoveries(events).is_empty());
    assert_eq!(of_type(events, "turn.started").len(), 2);
    assert_eq!(of_type(events, "turn.completed").len(), 2);
    assert_eq!(producer.span_counts().open, 0);
}

#[test]
fn copilot_sigterm_and_sigint_salvage_one_step_lower() {
    for scenario in ["interrupted-sigterm", "interrupted-sigint"] {
        let run = finished(&copilot_records(scenario));
        let (producer, events) = run.only();
        let bound = assert_recovered(events, RecoveryReason::ExplicitEndSalvage, Confidence::Low);
        assert!(matches!(bound, Observation::Observed(_)), "{scenario}");
        assert_eq!(producer.span_counts().open, 0);
    }
}

#[test]
fn copilot_sigkill_leaves_the_span_open_until_an_operator_end() {
    let records = copilot_records("interrupted-sigkill-1-killed");
    let mut run = run_records(&records);
    let (producer, events) = run.only();
    assert_eq!(producer.span_counts().open, 1);
    assert!(recoveries(events).is_empty());
    assert!(of_type(events, "end.requested").is_empty());
    // The next boot: `harnery end` on another boot id.
    let session = producer.session().session_id.clone();
    let last = records.last().expect("records").received_unix_ns;
    let mut end = record(
        harnery::contract::AdapterId::Copilot,
        Some("harnery.end_requested"),
        &session,
        r#"{"reason":"agent was killed"}"#,
        last + 5_000_000_000,
    );
    end.clock.boot_id = Some("another-boot".into());
    run.feed(&[end]);
    let tick_at = last + 6_000_000_000;
    let session_ref = run.producers.keys().next().expect("session").clone();
    let producer = run.producers.get_mut(&session_ref).expect("producer");
    let mut other_boot = clock_at(tick_at);
    other_boot.boot_id = Some("another-boot".into());
    let swept = producer.tick(tick_at, &other_boot);
    run.events
        .get_mut(&session_ref)
        .expect("events")
        .extend(swept);
    run.check();
    let (_, events) = run.only();
    let bound = assert_recovered(events, RecoveryReason::ExplicitEndSalvage, Confidence::Low);
    assert_eq!(bound, Observation::unknown("cross_boot"));
    let requested = of_type(events, "end.requested");
    assert_eq!(requested[0].provenance.attestation, Attestation::Derived);
}

#[test]
fn copilot_failures_and_outcomes() {
    let run = finished(&copilot_records("tool-failure-view"));
    let (_, events) = run.only();
    let done = of_type(events, "tool.completed");
    assert!(matches!(&done[0].payload, Payload::ToolCompleted(c) if c.outcome == Outcome::Failure));
    let run = finished(&copilot_records("shell-nonzero-exit"));
    let (_, events) = run.only();
    let done = of_type(events, "tool.completed");
    let Payload::ToolCompleted(c) = &done[0].payload else {
        unreachable!()
    };
    assert_eq!(
        (c.outcome, c.exit_code),
        (Outcome::Success, None),
        "the real client says success"
    );
    let run = finished(&copilot_records("model-error-400"));
    let (_, events) = run.only();
    assert!(!of_type(events, "error.reported").is_empty());
}

#[test]
fn copilot_pascalcase_repeats_are_one_delivery() {
    let run = finished(&copilot_records("pascalcase-hooks"));
    let (producer, events) = run.only();
    assert_eq!(of_type(events, "tool.requested").len(), 1);
    assert_eq!(of_type(events, "tool.completed").len(), 1);
    assert_eq!(of_type(events, "turn.completed").len(), 1);
    assert_eq!(producer.span_counts().open, 0);
    assert!(recoveries(events).is_empty());
}

#[test]
fn copilot_denied_tools_stay_open_until_the_session_end_salvages_them() {
    for scenario in [
        "hook-deny-json-preToolUse",
        "hook-exit2-preToolUse",
        "hook-exit1-preToolUse",
    ] {
        let run = finished(&copilot_records(scenario));
        for (session, events) in &run.events {
            let producer = &run.producers[session];
            assert_eq!(producer.span_counts().open, 0, "{scenario}");
            for e in recoveries(events) {
                assert_eq!(e.turn.source, TurnSource::Stamped);
                assert!(e.provenance.confidence <= Confidence::Medium);
            }
        }
    }
}

#[test]
fn renormalizing_the_same_records_gives_identical_events() {
    for scenario in ["subagent", "sigterm"] {
        let records = claude_records(scenario);
        assert_eq!(finished(&records).events, finished(&records).events);
    }
    let records = copilot_records("subagent-task");
    assert_eq!(finished(&records).events, finished(&records).events);
}

#[test]
fn copilot_turns_are_stamped_from_prompt_to_agent_stop() {
    for scenario in [
        "basic-shell-openai",
        "basic-user-hooks-only",
        "resume-2-resumed-run",
    ] {
        let run = finished(&copilot_records(scenario));
        let (producer, events) = run.only();
        let started = of_type(events, "turn.started");
        assert_eq!(started.len(), 1, "{scenario}");
        assert_eq!(started[0].turn.source, TurnSource::Stamped);
        let completed = of_type(events, "turn.completed");
        assert_eq!(completed.len(), 1, "{scenario}");
        assert_eq!(completed[0].turn, started[0].turn);
        for e in of_type(events, "tool.requested")
            .into_iter()
            .chain(of_type(events, "tool.completed"))
        {
            assert_eq!(
                e.turn, started[0].turn,
                "{scenario}: tool events carry the stamp"
            );
        }
        assert_eq!(producer.span_counts().open, 0);
        assert!(recoveries(events).is_empty(), "{scenario}");
        // The agent's own timestamps are used.
        assert!(
            events
                .iter()
                .all(|e| e.time_source != harnery::contract::TimeSource::Received)
        );
    }
}
