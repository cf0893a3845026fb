//! The confidence a recovery event must carry: the pinned value of its
//! reason (ADR 0078), stepped down once when its turn was stamped by
//! producer state. This is the one copy of that table; the producer reads
//! it to mint recovery events and the validator reads it to check them.

use super::event::{Confidence, TurnSource};
use super::payload::RecoveryReason;

impl RecoveryReason {
    /// The pinned confidence of this reason, before any stamped-turn step.
    /// Only `request_not_observed` depends on the evidence: high when the
    /// post carried the tool input, medium when it did not.
    pub fn pinned_confidence(self, input_present: bool) -> Confidence {
        match self {
            RecoveryReason::RequestNotObserved if input_present => Confidence::High,
            RecoveryReason::RequestNotObserved => Confidence::Medium,
            RecoveryReason::CompletionNotObservedBeforeTurnEnd => Confidence::Medium,
            RecoveryReason::CompletionNotObservedBeforeNextTurn => Confidence::Low,
            RecoveryReason::SpanCapPressure => Confidence::Low,
            RecoveryReason::ExplicitEndSalvage => Confidence::Medium,
            RecoveryReason::CommandCompletionNotObserved => Confidence::Medium,
        }
    }
}

/// The confidence a recovery event for `reason` carries on a turn of
/// `turn`: the pinned value, one step lower when the turn was stamped.
pub(crate) fn recovered_confidence(
    reason: RecoveryReason,
    input_present: bool,
    turn: TurnSource,
) -> Confidence {
    let pinned = reason.pinned_confidence(input_present);
    match turn {
        TurnSource::Stamped => pinned.downgraded(),
        TurnSource::Native | TurnSource::None => pinned,
    }
}
