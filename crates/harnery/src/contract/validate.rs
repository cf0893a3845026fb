//! The five validator rules of ADR 0078, plus harnery's sixth (a recovery
//! event carries its reason's pinned confidence), applied to every row
//! before it enters the ledger and again by `harnery validate`.

use super::confidence::recovered_confidence;
use super::event::{Attestation, Event};
use super::payload::{EventType, Observation, Outcome, Payload, Recovery, RecoveryReason};

/// One of the six rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// 1. recovery present requires derived attestation.
    RecoveryRequiresDerived = 1,
    /// 2. a recovered terminal has outcome unknown (and no exit code, error or content).
    RecoveredOutcomeUnknown = 2,
    /// 3. derived tool events carry recovery; native ones must not.
    DerivedToolNeedsRecovery = 3,
    /// 4. reason codes bind to event types.
    ReasonBindsEventType = 4,
    /// 5. recovered durations stay unknown; an observed bound only where allowed.
    RecoveredDurationUnknown = 5,
    /// 6. a recovery event carries its reason's pinned confidence, one step
    ///    lower when its turn was stamped (the ADR's confidence table, made
    ///    a rule).
    RecoveredConfidencePinned = 6,
}

impl Rule {
    /// Every rule, in order: the rules of every contract generation so far.
    pub const ALL: [Rule; 6] = [
        Rule::RecoveryRequiresDerived,
        Rule::RecoveredOutcomeUnknown,
        Rule::DerivedToolNeedsRecovery,
        Rule::ReasonBindsEventType,
        Rule::RecoveredDurationUnknown,
        Rule::RecoveredConfidencePinned,
    ];

    pub(crate) fn number(self) -> u8 {
        self as u8
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Rule::RecoveryRequiresDerived => "recovery-requires-derived",
            Rule::RecoveredOutcomeUnknown => "recovered-outcome-unknown",
            Rule::DerivedToolNeedsRecovery => "derived-tool-needs-recovery",
            Rule::ReasonBindsEventType => "reason-binds-event-type",
            Rule::RecoveredDurationUnknown => "recovered-duration-unknown",
            Rule::RecoveredConfidencePinned => "recovered-confidence-pinned",
        }
    }
}

/// A rule an event breaks, with what exactly is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    pub rule: Rule,
    pub detail: String,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "rule {} ({}): {}",
            self.rule.number(),
            self.rule.name(),
            self.detail
        )
    }
}

/// Every rule this event breaks; empty when it is valid.
pub fn validate_event(event: &Event) -> Vec<Violation> {
    let mut found = Vec::new();
    let derived = event.provenance.attestation == Attestation::Derived;
    let ty = event.event_type();
    let recovery = event.payload.recovery();
    if recovery.is_some() && !derived {
        found.push(violation(
            Rule::RecoveryRequiresDerived,
            format!("{ty} carries recovery but is attested native"),
        ));
    }
    check_tool_attestation(ty, derived, recovery.is_some(), &mut found);
    if let Some(recovery) = recovery {
        check_reason_binding(ty, recovery, &mut found);
        check_recovered_terminal(&event.payload, recovery, &mut found);
        check_bound(ty, derived, recovery, &mut found);
        check_confidence(event, recovery, &mut found);
    }
    found
}

fn violation(rule: Rule, detail: String) -> Violation {
    Violation { rule, detail }
}

fn check_tool_attestation(
    ty: EventType,
    derived: bool,
    has_recovery: bool,
    out: &mut Vec<Violation>,
) {
    if !matches!(ty, EventType::ToolRequested | EventType::ToolCompleted) {
        return;
    }
    if derived && !has_recovery {
        out.push(violation(
            Rule::DerivedToolNeedsRecovery,
            format!("derived {ty} without a recovery block"),
        ));
    }
}

fn check_reason_binding(ty: EventType, recovery: &Recovery, out: &mut Vec<Violation>) {
    let allowed = recovery.reason.event_type();
    if allowed != ty {
        out.push(violation(
            Rule::ReasonBindsEventType,
            format!(
                "reason {} appears on {ty}; it belongs on {allowed}",
                recovery.reason
            ),
        ));
    }
    if recovery.reason == RecoveryReason::RequestNotObserved
        && recovery.requested_event_id.is_some()
    {
        out.push(violation(
            Rule::ReasonBindsEventType,
            "request_not_observed carries requested_event_id, but it is the request".into(),
        ));
    }
}

fn check_recovered_terminal(payload: &Payload, recovery: &Recovery, out: &mut Vec<Violation>) {
    let (outcome, duration, has_result) = match payload {
        Payload::ToolCompleted(p) => (
            p.outcome,
            &p.duration_ms,
            p.exit_code.is_some() || p.error.is_some() || p.content.is_some(),
        ),
        Payload::CommandCompleted(p) => (
            p.outcome,
            &p.duration_ms,
            p.exit_code.is_some() || p.signal.is_some(),
        ),
        _ => return,
    };
    if outcome != Outcome::Unknown {
        out.push(violation(
            Rule::RecoveredOutcomeUnknown,
            format!("recovered terminal has outcome {outcome:?}, must be unknown"),
        ));
    }
    if has_result {
        out.push(violation(
            Rule::RecoveredOutcomeUnknown,
            "recovered terminal carries an exit code, error or content".into(),
        ));
    }
    match duration {
        Observation::Unknown(reason) if reason == recovery.reason.as_str() => {}
        Observation::Unknown(reason) => out.push(violation(
            Rule::RecoveredDurationUnknown,
            format!(
                "duration unknown as {reason:?}, must match reason {}",
                recovery.reason
            ),
        )),
        Observation::Observed(ms) => out.push(violation(
            Rule::RecoveredDurationUnknown,
            format!("recovered terminal claims an observed duration of {ms} ms"),
        )),
    }
}

fn check_bound(ty: EventType, derived: bool, recovery: &Recovery, out: &mut Vec<Violation>) {
    let Some(Observation::Observed(_)) = &recovery.elapsed_upper_bound_ms else {
        return;
    };
    if matches!(ty, EventType::ToolRequested | EventType::CommandCompleted) {
        out.push(violation(
            Rule::RecoveredDurationUnknown,
            format!("an observed elapsed_upper_bound_ms is forbidden on {ty}"),
        ));
    }
    if !derived {
        out.push(violation(
            Rule::RecoveredDurationUnknown,
            "an observed elapsed_upper_bound_ms requires derived attestation".into(),
        ));
    }
}

fn check_confidence(event: &Event, recovery: &Recovery, out: &mut Vec<Violation>) {
    let input_present = match &event.payload {
        Payload::ToolRequested(p) => p.input.is_some(),
        _ => false,
    };
    let turn = event.turn.source;
    let want = recovered_confidence(recovery.reason, input_present, turn);
    let have = event.provenance.confidence;
    if have != want {
        out.push(violation(
            Rule::RecoveredConfidencePinned,
            format!(
                "{} on a {turn:?} turn carries confidence {have:?}, its pinned value is {want:?}",
                recovery.reason
            ),
        ));
    }
}
