//! Explicit ends and command spans.
//!
//! An end request (the agent's own session end, or `harnery end`) records
//! `end.requested` with the approved set: every span open at that moment,
//! by request event id. With nothing open it closes at once
//! (`end.salvaged` with zero spans); otherwise it stays pending until the
//! next [`tick`]:
//!
//! 1. Salvage is evaluated first. When the adapter's table enables
//!    explicit-end salvage, the approved spans still open are recovered
//!    (tool spans with `explicit_end_salvage`, command spans with
//!    `command_completion_not_observed`) and `end.salvaged` closes the
//!    request. Spans opened after the request are not in the set and never
//!    hold the end back.
//! 2. Otherwise a request pending for 24 hours expires (`end.expired`).
//!
//! New native work in the session cancels a pending end
//! (`end.cancelled`, cause `native_work`); harnery's own signals and the
//! producer's derived events never do. A second end request supersedes
//! the first (`end.cancelled`, cause `superseded`).
//!
//! [`tick`]: super::SessionProducer::tick

use serde::{Deserialize, Serialize};

use super::emit::derived_high;
use super::emit::{Draft, Trigger};
use super::emitter::Emitter;
use super::policy::end_has_expired;
use super::span_pairing::emit_late_evidence;
use super::spans::SpanPairer;
use super::spans::{OpenSpan, SpanKind};
use super::turns::Speaker;
use crate::agents::{CommandResult, RecoveryPolicy};
use crate::contract::{
    CommandCompleted, CommandRequested, EndCancelled, EndExpired, EndRequested, EndSalvaged, Event,
    EventId, LateEvidence, Observation, Outcome, Payload, Provenance, RecoveryReason,
    TurnAttribution,
};

/// Who asked for the end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EndOrigin {
    /// The agent's own session-end signal.
    Native,
    /// `harnery end`.
    Operator,
}

impl EndOrigin {
    fn as_str(self) -> &'static str {
        match self {
            EndOrigin::Native => "native",
            EndOrigin::Operator => "operator",
        }
    }
}

/// An end request that has neither been salvaged, cancelled nor expired.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingEnd {
    pub end_event_id: EventId,
    pub origin: EndOrigin,
    pub requested_unix_ns: i64,
    pub approved_spans: Vec<EventId>,
}

/// The session's end request, if one is pending, and the rules that
/// request, cancel, salvage or expire it. Salvage closes spans through the
/// span pairer it is handed.
#[derive(Debug, Clone, PartialEq, Default)]
pub(super) struct EndRequests {
    pub pending: Option<PendingEnd>,
}

impl EndRequests {
    pub(super) fn request(
        &mut self,
        em: &mut Emitter,
        pairer: &SpanPairer,
        origin: EndOrigin,
        reason: Option<String>,
        trigger: &mut Trigger,
        out: &mut Vec<Event>,
    ) {
        self.cancel(em, "superseded", trigger, out);
        let approved: Vec<EventId> = pairer
            .spans
            .open
            .iter()
            .map(|s| s.request_event_id.clone())
            .collect();
        let draft = Draft {
            payload: Payload::EndRequested(EndRequested {
                origin: origin.as_str().to_string(),
                reason,
                approved_spans: approved.clone(),
            }),
            provenance: match origin {
                EndOrigin::Native => Provenance::NATIVE,
                EndOrigin::Operator => derived_high(),
            },
            turn: TurnAttribution::none(),
            agent_id: None,
            tag: "end_requested".to_string(),
        };
        let id = em.emit(trigger, draft, out).clone();
        let pending = PendingEnd {
            end_event_id: id,
            origin,
            requested_unix_ns: trigger.time_unix_ns,
            approved_spans: approved,
        };
        if pending.approved_spans.is_empty() {
            // Nothing is open, so nothing can hold the end back: it closes
            // at once, at the time of the signal that asked for it.
            close_salvaged(em, pending.end_event_id, 0, trigger, out);
        } else {
            self.pending = Some(pending);
        }
    }

    pub(super) fn cancel(
        &mut self,
        em: &mut Emitter,
        cause: &str,
        trigger: &mut Trigger,
        out: &mut Vec<Event>,
    ) {
        let Some(pending) = self.pending.take() else {
            return;
        };
        let draft = end_outcome(
            Payload::EndCancelled(EndCancelled {
                end_event_id: pending.end_event_id,
                cause: cause.to_string(),
            }),
            "end_cancelled",
        );
        em.emit(trigger, draft, out);
    }

    /// Salvage first; expire only what salvage cannot take.
    pub(super) fn evaluate(
        &mut self,
        em: &mut Emitter,
        pairer: &mut SpanPairer,
        policy: RecoveryPolicy,
        now_unix_ns: i64,
        trigger: &mut Trigger,
        out: &mut Vec<Event>,
    ) {
        let Some(pending) = self.pending.take() else {
            return;
        };
        if policy.explicit_end_salvage {
            salvage(em, pairer, policy, pending, trigger, out);
            return;
        }
        if end_has_expired(pending.requested_unix_ns, now_unix_ns) {
            let draft = end_outcome(
                Payload::EndExpired(EndExpired {
                    end_event_id: pending.end_event_id,
                }),
                "end_expired",
            );
            em.emit(trigger, draft, out);
            return;
        }
        self.pending = Some(pending);
    }
}

/// Recover the approved spans still open and close the request.
fn salvage(
    em: &mut Emitter,
    pairer: &mut SpanPairer,
    policy: RecoveryPolicy,
    pending: PendingEnd,
    trigger: &mut Trigger,
    out: &mut Vec<Event>,
) {
    let mut salvaged = 0u64;
    for request in &pending.approved_spans {
        let Some(span) = pairer.spans.take_by_request(request) else {
            continue;
        };
        let reason = match span.kind {
            SpanKind::Tool => RecoveryReason::ExplicitEndSalvage,
            SpanKind::Command if policy.command_closer => {
                RecoveryReason::CommandCompletionNotObserved
            }
            SpanKind::Command => {
                pairer.spans.push_open(span);
                continue;
            }
        };
        pairer.recover_span(em, span, reason, trigger, out);
        salvaged += 1;
    }
    close_salvaged(em, pending.end_event_id, salvaged, trigger, out);
}

/// `end.salvaged`: the request is closed, `salvaged` spans recovered.
fn close_salvaged(
    em: &mut Emitter,
    end_event_id: EventId,
    salvaged: u64,
    trigger: &mut Trigger,
    out: &mut Vec<Event>,
) {
    let draft = end_outcome(
        Payload::EndSalvaged(EndSalvaged {
            end_event_id,
            salvaged_spans: salvaged,
        }),
        "end_salvaged",
    );
    em.emit(trigger, draft, out);
}

/// Command spans: harnery's own `harnery run` telemetry, paired by
/// command id.
impl SpanPairer {
    pub(super) fn on_command_requested(
        &mut self,
        em: &mut Emitter,
        command_id: String,
        request: CommandRequested,
        trigger: &mut Trigger,
        out: &mut Vec<Event>,
    ) {
        if self.spans.knows_call_id(&command_id) {
            // A second request under one command id opens no second span.
            let payload = super::span_pairing::passed_over("request_for_tracked_command");
            em.emit(trigger, own_signal(payload, "command_requested"), out);
            return;
        }
        let name = request.argv.first().cloned().unwrap_or_default();
        let draft = own_signal(Payload::CommandRequested(request), "command_requested");
        let id = em.emit(trigger, draft, out).clone();
        self.spans.push_open(OpenSpan {
            kind: SpanKind::Command,
            request_event_id: id,
            name,
            pair_key: String::new(),
            call_id: Some(command_id),
            turn: TurnAttribution::none(),
            agent_id: None,
            requested_unix_ns: trigger.time_unix_ns,
            requested_clock: trigger.clock.cloned(),
        });
    }

    pub(super) fn on_command_completed(
        &mut self,
        em: &mut Emitter,
        done: CommandResult,
        trigger: &mut Trigger,
        out: &mut Vec<Event>,
    ) {
        let outcome = command_outcome(&done);
        if let Some(span) = self
            .spans
            .take_by_call_id(SpanKind::Command, &done.command_id)
        {
            let payload = command_completion(&done, Some(span.request_event_id.clone()), outcome);
            em.emit(trigger, own_signal(payload, "command_completed"), out);
            self.spans.close_native(span, Vec::new());
            return;
        }
        let claimed = self
            .spans
            .claim_recovered(SpanKind::Command, Some(&done.command_id), "");
        if let Some((request, recovered)) = claimed {
            let who = Speaker {
                turn: TurnAttribution::none(),
                agent_id: None,
            };
            let evidence = LateEvidence {
                span_request_event_id: request,
                recovered_event_id: recovered,
                outcome,
                error: None,
            };
            emit_late_evidence(em, evidence, &who, trigger, out);
            return;
        }
        let payload = command_completion(&done, None, outcome);
        em.emit(trigger, own_signal(payload, "command_completed"), out);
    }
}

fn end_outcome(payload: Payload, tag: &str) -> Draft {
    Draft {
        payload,
        provenance: derived_high(),
        turn: TurnAttribution::none(),
        agent_id: None,
        tag: tag.to_string(),
    }
}

/// harnery's own command telemetry is attested derived (ADR 0078 rule 3
/// exempts commands), at high confidence: harnery watched it happen.
fn own_signal(payload: Payload, tag: &str) -> Draft {
    end_outcome(payload, tag)
}

fn command_outcome(done: &CommandResult) -> Outcome {
    match (done.signal, done.exit_code) {
        (Some(_), _) => Outcome::Interrupted,
        (None, Some(0)) => Outcome::Success,
        (None, Some(_)) => Outcome::Failure,
        (None, None) => Outcome::Unknown,
    }
}

fn command_completion(
    done: &CommandResult,
    requested: Option<EventId>,
    outcome: Outcome,
) -> Payload {
    Payload::CommandCompleted(CommandCompleted {
        requested_event_id: requested,
        outcome,
        duration_ms: match done.duration_ms {
            Some(ms) => Observation::Observed(ms),
            None => Observation::unknown("not_reported"),
        },
        exit_code: done.exit_code,
        signal: done.signal,
        recovery: None,
    })
}
