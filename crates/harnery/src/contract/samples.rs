//! Test samples of the contract: one fully populated payload of every
//! event type, shared by the contract's tests.

use serde_json::json;

use super::*;

/// One fully populated payload of every event type.
pub(super) fn samples() -> Vec<Payload> {
    let id = || EventId("ev_1".into());
    let recovery = || {
        Some(Recovery {
            reason: RecoveryReason::SpanCapPressure,
            requested_event_id: Some(id()),
            elapsed_upper_bound_ms: Some(Observation::Observed(5)),
        })
    };
    let s = || Some("x".to_string());
    vec![
        Payload::SessionStarted(SessionStarted {
            source: s(),
            cwd: s(),
            model: s(),
            transcript_path: s(),
        }),
        Payload::SessionEnded(SessionEnded { reason: s() }),
        Payload::PromptSubmitted(PromptSubmitted {
            prompt: s(),
            transformed: true,
        }),
        Payload::TurnStarted(TurnStarted {
            prompt_event_id: Some(id()),
        }),
        Payload::TurnCompleted(TurnCompleted { stop_reason: s() }),
        Payload::ToolRequested(ToolRequested {
            tool_call_id: s(),
            tool_name: "t".into(),
            input_digest: "d".into(),
            input: Some(Json::from_value(&json!({}))),
            recovery: recovery(),
        }),
        Payload::ToolCompleted(ToolCompleted {
            tool_call_id: s(),
            tool_name: "t".into(),
            requested_event_id: Some(id()),
            outcome: Outcome::Success,
            duration_ms: Observation::Observed(1),
            exit_code: Some(0),
            error: s(),
            content: Some(Json::from_value(&json!(1))),
            recovery: recovery(),
            paired_by: Some(PairedBy::Order),
        }),
        Payload::CommandRequested(CommandRequested {
            argv: vec![],
            cwd: s(),
            pid: Some(1),
        }),
        Payload::CommandCompleted(CommandCompleted {
            requested_event_id: Some(id()),
            outcome: Outcome::Success,
            duration_ms: Observation::Observed(1),
            exit_code: Some(0),
            signal: Some(9),
            recovery: recovery(),
        }),
        Payload::SubagentStarted(SubagentStarted {
            agent_id: "a".into(),
            agent_type: s(),
            agent_name: s(),
        }),
        Payload::SubagentStopped(SubagentStopped {
            agent_id: "a".into(),
            agent_type: s(),
            stop_reason: s(),
        }),
        Payload::CompactionStarted(CompactionStarted { trigger: s() }),
        Payload::CompactionCompleted(CompactionCompleted {
            trigger: s(),
            summary: s(),
        }),
        Payload::ErrorReported(ErrorReported {
            message: "m".into(),
            context: s(),
            recoverable: Some(true),
        }),
        Payload::PermissionRequested(PermissionRequested {
            tool_name: "t".into(),
            input: Some(Json::from_value(&json!(1))),
        }),
        Payload::Notification(Notification {
            kind: s(),
            message: s(),
        }),
        Payload::MessageDisplayed(MessageDisplayed {
            message_id: s(),
            text: s(),
            is_final: Some(true),
        }),
        Payload::ToolBatchCompleted(ToolBatchCompleted { calls: 2 }),
        Payload::LateEvidence(LateEvidence {
            span_request_event_id: id(),
            recovered_event_id: id(),
            outcome: Outcome::Failure,
            error: s(),
        }),
        Payload::EndRequested(EndRequested {
            origin: "operator".into(),
            reason: s(),
            approved_spans: vec![id()],
        }),
        Payload::EndSalvaged(EndSalvaged {
            end_event_id: id(),
            salvaged_spans: 1,
        }),
        Payload::EndCancelled(EndCancelled {
            end_event_id: id(),
            cause: "native_work".into(),
        }),
        Payload::EndExpired(EndExpired { end_event_id: id() }),
        Payload::HealthCondition(HealthCondition {
            code: "c".into(),
            detail: "d".into(),
        }),
        Payload::SignalUnrecognized(SignalUnrecognized {
            adapter_event: s(),
            reason: "r".into(),
            record: Some(at()),
        }),
        Payload::MessageUser(MessageUser {
            record: at(),
            message_id: s(),
            text: s(),
            source: s(),
        }),
        Payload::MessageAssistant(MessageAssistant {
            record: at(),
            message_id: s(),
            model: s(),
            text: s(),
            tool_call_ids: vec!["c".into()],
        }),
        Payload::ReasoningRecorded(ReasoningRecorded {
            record: at(),
            message_id: s(),
            text: s(),
            continuation: s(),
        }),
        Payload::UsageReported(UsageReported {
            record: at(),
            message_id: s(),
            model: s(),
            input_tokens: Some(1),
            output_tokens: Some(2),
            cache_read_tokens: Some(3),
            cache_write_tokens: Some(4),
            cost: Some(Json::from_value(&json!(0.25))),
            duration_ms: Some(5),
            time_to_first_token_ms: Some(6),
            reasoning_tokens: None,
            raw: None,
            copied_from_session: None,
        }),
        Payload::UsageSummary(UsageSummary {
            record: at(),
            model: "m".into(),
            requests: Some(2),
            premium_requests: Some(Json::from_value(&json!(1.5))),
            input_tokens: Some(1),
            output_tokens: Some(2),
            cache_read_tokens: None,
            cache_write_tokens: None,
            reasoning_tokens: Some(3),
            credits_nano_aiu: None,
            raw: Some(Json::from_value(&json!({"requests": {"count": 2}}))),
        }),
        Payload::SessionMetadata(SessionMetadata {
            record: at(),
            agent_version: s(),
            head_commit: s(),
            cwd: s(),
            model: s(),
        }),
        Payload::ToolRecorded(ToolRecorded {
            record: at(),
            span_request_event_id: Some(id()),
            tool_call_id: "c".into(),
            tool_name: "t".into(),
            turn_id: s(),
            success: Some(true),
            exit_code: Some(0),
            output: Some("File created successfully at: /p/note.txt".into()),
            output_cut_bytes: Some(12),
        }),
        Payload::RecordProblem(RecordProblem {
            path: "p".into(),
            kind: "rewritten".into(),
            detail: "d".into(),
        }),
        Payload::CheckpointRecorded(CheckpointRecorded {
            checkpoint_id: "cp".into(),
            origin: "operator".into(),
            offset: 3,
            commit: Observation::Observed("abc".into()),
            commit_source: s(),
            effects: vec![effect()],
            cwd: s(),
        }),
        Payload::CheckpointLocated(CheckpointLocated {
            checkpoint_id: "cp".into(),
            checkpoint_event_id: EventId("ev_cp".into()),
            path: "p".into(),
            end: 10,
            line_id: s(),
            line_offset: Some(4),
        }),
        Payload::RestoreRecorded(RestoreRecorded {
            checkpoint_id: "cp".into(),
            boundary_offset: 3,
        }),
        Payload::SessionResumed(SessionResumed {
            boundary_offset: 3,
            superseded: OffsetRange { from: 3, to: 9 },
            invalidated_checkpoints: vec!["cp2".into()],
            incarnation: 2,
            checkpoint_id: s(),
            evidence: "restore".into(),
        }),
        Payload::StaleSignal(StaleSignal {
            adapter_event: s(),
            reason: "r".into(),
            live_incarnation: 2,
        }),
        Payload::HookObserved(HookObserved {
            event: "BeforeModel".into(),
            model: s(),
            detail: s(),
        }),
        Payload::SessionImported(SessionImported {
            path: "/home/u/.claude/projects/-w/s.jsonl".into(),
            bytes: 1234,
            modified_unix_ns: 1_765_000_000_000_000_000,
        }),
        Payload::SessionTitled(SessionTitled {
            title: "Fix the flaky build".into(),
            field: "name".into(),
            user_named: Some(true),
            path: "/home/u/.copilot/session-state/s/workspace.yaml".into(),
            offset: None,
        }),
        Payload::ToolBatchResult(ToolBatchResult {
            tool_call_id: s(),
            tool_name: "Write".into(),
            requested_event_id: Some(id()),
            output: "File created successfully at: /p/note.txt".into(),
            output_cut_bytes: Some(3),
        }),
    ]
}

/// An effect with every field set (generation 3).
pub(super) fn effect() -> Effect {
    Effect {
        kind: "tool".into(),
        reference: "ev_1".into(),
        tool_name: Some("Bash".into()),
        tool_call_id: Some("c".into()),
        outcome: Some(Outcome::Success),
        paths: vec!["/a".into()],
        command: Some("ls".into()),
        exit_code: Some(0),
    }
}

pub(super) fn at() -> RecordAt {
    RecordAt {
        path: "/r.jsonl".into(),
        offset: 7,
    }
}
