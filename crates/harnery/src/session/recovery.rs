//! The recovery machinery of ADR 0078: derived terminals for spans whose
//! native completion never arrived, their pinned confidences, the
//! request-to-sweep upper bound, and the sweeps that mint them.
//!
//! A recovered terminal records only what harnery saw: outcome `unknown`,
//! duration unknown with the reason code, no exit code, error or content,
//! and `elapsed_upper_bound_ms` observed only when both clock samples share
//! a boot id and do not regress.

use super::emit::{Draft, Trigger, derived_high};
use super::emitter::Emitter;
use super::policy::{SPAN_CAP_CONDITION, over_span_cap, span_cap_detail, spans_over_watermark};
use super::spans::{OpenSpan, SpanKind, SpanPairer};
use super::turns::TurnBook;
use crate::agents::RecoveryPolicy;
use crate::clock::ClockSample;
use crate::contract::{
    Attestation, CommandCompleted, Event, EventId, HealthCondition, Observation, Outcome, Payload,
    Provenance, Recovery, RecoveryReason, ToolCompleted, TurnSource, recovered_confidence,
};

/// The provenance of a recovery event on a turn of this source: derived,
/// at the confidence the contract pins for the reason (one step lower when
/// the turn was stamped). The table itself lives in the contract, which
/// also validates it.
pub(crate) fn recovery_provenance(
    reason: RecoveryReason,
    had_input: bool,
    turn: TurnSource,
) -> Provenance {
    Provenance {
        attestation: Attestation::Derived,
        confidence: recovered_confidence(reason, had_input, turn),
    }
}

/// The request-to-sweep interval, or why it cannot be proven.
pub(crate) fn elapsed_upper_bound(
    requested: Option<&ClockSample>,
    swept: Option<&ClockSample>,
) -> Observation<u64> {
    let (Some(requested), Some(swept)) = (requested, swept) else {
        return Observation::unknown("clock_missing");
    };
    let (Some(req_boot), Some(req_ns), Some(sweep_boot), Some(sweep_ns)) = (
        requested.boot_id.as_deref(),
        requested.boottime_ns,
        swept.boot_id.as_deref(),
        swept.boottime_ns,
    ) else {
        return Observation::unknown("clock_missing");
    };
    if req_boot.trim().is_empty() || sweep_boot.trim().is_empty() {
        return Observation::unknown("clock_invalid");
    }
    if req_boot != sweep_boot {
        return Observation::unknown("cross_boot");
    }
    match sweep_ns.checked_sub(req_ns) {
        Some(elapsed) => Observation::Observed(elapsed / 1_000_000),
        None => Observation::unknown("clock_regressed"),
    }
}

impl SpanPairer {
    /// Mint the derived terminal of an open span and record it recovered.
    /// Tool spans get `tool.completed`; command spans `command.completed`.
    pub(super) fn recover_span(
        &mut self,
        em: &mut Emitter,
        span: OpenSpan,
        reason: RecoveryReason,
        trigger: &mut Trigger,
        out: &mut Vec<Event>,
    ) -> EventId {
        let recovery = Recovery {
            reason,
            requested_event_id: Some(span.request_event_id.clone()),
            elapsed_upper_bound_ms: Some(match span.kind {
                SpanKind::Tool => elapsed_upper_bound(span.requested_clock.as_ref(), trigger.clock),
                // Rule 5: an observed bound is forbidden on command.completed.
                SpanKind::Command => Observation::unknown("bound_not_recorded_for_commands"),
            }),
        };
        let payload = recovered_payload(&span, reason, recovery);
        let draft = Draft {
            payload,
            provenance: recovery_provenance(reason, true, span.turn.source),
            turn: span.turn.clone(),
            agent_id: span.agent_id.clone(),
            tag: format!("{}:{}", reason.as_str(), span.request_event_id),
        };
        let id = em.emit(trigger, draft, out).clone();
        self.spans.close_recovered(span, id.clone());
        id
    }

    /// Turn-end sweep: the ending turn's spans, except those of subagents
    /// still running (they may yet post).
    pub(super) fn sweep_turn(
        &mut self,
        em: &mut Emitter,
        turn_id: &str,
        reason: RecoveryReason,
        running: &[String],
        trigger: &mut Trigger,
        out: &mut Vec<Event>,
    ) {
        let swept: Vec<EventId> = self
            .spans
            .open
            .iter()
            .filter(|s| s.kind == SpanKind::Tool && s.turn.turn_id.as_deref() == Some(turn_id))
            .filter(|s| s.turn.source != TurnSource::None)
            .filter(|s| !self.is_running_agent(s.agent_id.as_deref(), running))
            .map(|s| s.request_event_id.clone())
            .collect();
        for request in swept {
            if let Some(span) = self.spans.take_by_request(&request) {
                self.recover_span(em, span, reason, trigger, out);
            }
        }
    }

    fn is_running_agent(&self, agent: Option<&str>, running: &[String]) -> bool {
        agent.is_some_and(|a| running.iter().any(|r| r == a) || self.running_agents.contains(a))
    }

    /// Write-side watermark relief, then the read-side health condition.
    pub(super) fn enforce_span_caps(
        &mut self,
        em: &mut Emitter,
        policy: RecoveryPolicy,
        turns: &TurnBook,
        trigger: &mut Trigger,
        out: &mut Vec<Event>,
    ) {
        if policy.span_cap_pressure {
            self.relieve_span_pressure(em, turns, trigger, out);
        }
        let open = self.spans.open_count();
        if over_span_cap(open) && !self.span_cap_raised {
            self.span_cap_raised = true;
            let draft = Draft {
                payload: Payload::HealthCondition(HealthCondition {
                    code: SPAN_CAP_CONDITION.to_string(),
                    detail: format!(
                        "{}; only explicit-end salvage can close spans without a finished turn",
                        span_cap_detail(open)
                    ),
                }),
                provenance: derived_high(),
                turn: crate::contract::TurnAttribution::none(),
                agent_id: None,
                tag: "span_cap".to_string(),
            };
            em.emit(trigger, draft, out);
        } else if !over_span_cap(open) {
            self.span_cap_raised = false;
        }
    }

    /// Recover the oldest spans of already-ended turns until the open count
    /// is back at the watermark. Spans of a current turn, or without a turn,
    /// are never touched.
    fn relieve_span_pressure(
        &mut self,
        em: &mut Emitter,
        turns: &TurnBook,
        trigger: &mut Trigger,
        out: &mut Vec<Event>,
    ) {
        let excess = spans_over_watermark(self.spans.open_count());
        if excess == 0 {
            return;
        }
        let victims: Vec<EventId> = self
            .spans
            .open
            .iter()
            .filter(|s| s.kind == SpanKind::Tool && s.turn.source != TurnSource::None)
            .filter(|s| {
                s.turn
                    .turn_id
                    .as_deref()
                    .is_some_and(|t| !turns.is_active(t))
            })
            .take(excess)
            .map(|s| s.request_event_id.clone())
            .collect();
        for request in victims {
            if let Some(span) = self.spans.take_by_request(&request) {
                self.recover_span(em, span, RecoveryReason::SpanCapPressure, trigger, out);
            }
        }
    }
}

fn recovered_payload(span: &OpenSpan, reason: RecoveryReason, recovery: Recovery) -> Payload {
    let duration_ms = Observation::unknown(reason.as_str());
    match span.kind {
        SpanKind::Tool => Payload::ToolCompleted(ToolCompleted {
            tool_call_id: span.call_id.clone(),
            tool_name: span.name.clone(),
            requested_event_id: Some(span.request_event_id.clone()),
            outcome: Outcome::Unknown,
            duration_ms,
            exit_code: None,
            error: None,
            content: None,
            recovery: Some(recovery),
            paired_by: None,
        }),
        SpanKind::Command => Payload::CommandCompleted(CommandCompleted {
            requested_event_id: Some(span.request_event_id.clone()),
            outcome: Outcome::Unknown,
            duration_ms,
            exit_code: None,
            signal: None,
            recovery: Some(recovery),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::Confidence;

    fn sample(boot: Option<&str>, ns: Option<u64>) -> ClockSample {
        ClockSample {
            boot_id: boot.map(str::to_string),
            boottime_ns: ns,
        }
    }

    #[test]
    fn the_bound_needs_one_boot_and_no_regression() {
        let a = sample(Some("b1"), Some(1_000_000_000));
        let later = sample(Some("b1"), Some(3_500_000_000));
        assert_eq!(
            elapsed_upper_bound(Some(&a), Some(&later)),
            Observation::Observed(2500)
        );
        let cases = [
            (sample(Some("b2"), Some(5_000_000_000)), "cross_boot"),
            (sample(Some("b1"), Some(10)), "clock_regressed"),
            (sample(None, Some(10)), "clock_missing"),
            (sample(Some(" "), Some(10)), "clock_invalid"),
        ];
        for (swept, reason) in cases {
            assert_eq!(
                elapsed_upper_bound(Some(&a), Some(&swept)),
                Observation::unknown(reason)
            );
        }
        assert_eq!(
            elapsed_upper_bound(None, Some(&a)),
            Observation::unknown("clock_missing")
        );
    }

    #[test]
    fn stamped_turns_lose_one_confidence_step() {
        let stamped = recovery_provenance(
            RecoveryReason::RequestNotObserved,
            true,
            TurnSource::Stamped,
        );
        assert_eq!(stamped.confidence, Confidence::Medium);
        let native =
            recovery_provenance(RecoveryReason::ExplicitEndSalvage, true, TurnSource::Native);
        assert_eq!(native.confidence, Confidence::Medium);
        let low = recovery_provenance(RecoveryReason::SpanCapPressure, true, TurnSource::Stamped);
        assert_eq!(low.confidence, Confidence::Low);
        let no_input =
            recovery_provenance(RecoveryReason::RequestNotObserved, false, TurnSource::None);
        assert_eq!(no_input.confidence, Confidence::Medium);
    }
}
