//! What each event says about its session's evidence eligibility (ADR
//! 0078, "Evidence eligibility"): the audit reasons, and the bit each one
//! is stored as in a session's row, so that the ledger keeps every
//! session's reasons current as it appends and the read side answers from
//! one row per session.
//!
//! A reason is either carried by one event on its own ([`event_flags`]) or
//! a pairing gap (an open span, or a terminal whose request is not in the
//! epoch), which the ledger files from its span rows. The bits are a stored
//! format: a bit's meaning never changes; a new reason takes a new bit.

use super::{Event, Payload, RecoveryReason};

pub(crate) const TOOL_PAIRING_INCOMPLETE: &str = "tool_pairing_incomplete";
pub(crate) const COMMAND_PAIRING_INCOMPLETE: &str = "command_pairing_incomplete";
pub(crate) const LATE_EVIDENCE: &str = "late_evidence";
pub(crate) const UNRECOGNIZED_SIGNALS: &str = "unrecognized_signals";
pub(crate) const SPOOL_DAMAGE: &str = "spool_damage";
pub(crate) const END_REQUEST_SUPERSEDED: &str = "end_request_superseded";
/// The session was imported from the agent's record (`session.imported`):
/// no hook saw its start, so it is of class `imported`, never eligible.
pub(crate) const IMPORTED: &str = "imported";

/// A set of audit reasons, as stored in `sessions.audit_flags`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct AuditFlags(pub u32);

/// Bits 0–5: a recovery event of each reason, in [`RecoveryReason::ALL`]
/// order.
const fn recovery_bit(i: usize) -> u32 {
    1 << i
}
pub(crate) const LATE_EVIDENCE_BIT: u32 = 1 << 6;
pub(crate) const UNRECOGNIZED_BIT: u32 = 1 << 7;
pub(crate) const SPOOL_DAMAGE_BIT: u32 = 1 << 8;
/// A tool terminal whose request is not in the epoch.
pub(crate) const TOOL_UNPAIRED_BIT: u32 = 1 << 9;
/// A command terminal whose request is not in the epoch.
pub(crate) const COMMAND_UNPAIRED_BIT: u32 = 1 << 10;
/// A `session.imported` event (generation 10).
pub(crate) const IMPORTED_BIT: u32 = 1 << 11;

impl AuditFlags {
    /// The reasons these flags stand for, in a fixed order.
    pub(crate) fn reasons(self) -> Vec<String> {
        let mut out = Vec::new();
        for (i, reason) in RecoveryReason::ALL.iter().enumerate() {
            if self.0 & recovery_bit(i) != 0 {
                out.push(format!("recovery:{reason}"));
            }
        }
        for (bit, reason) in [
            (LATE_EVIDENCE_BIT, LATE_EVIDENCE),
            (UNRECOGNIZED_BIT, UNRECOGNIZED_SIGNALS),
            (SPOOL_DAMAGE_BIT, SPOOL_DAMAGE),
            (TOOL_UNPAIRED_BIT, TOOL_PAIRING_INCOMPLETE),
            (COMMAND_UNPAIRED_BIT, COMMAND_PAIRING_INCOMPLETE),
            (IMPORTED_BIT, IMPORTED),
        ] {
            if self.0 & bit != 0 && !out.iter().any(|r| r == reason) {
                out.push(reason.to_string());
            }
        }
        out
    }
}

/// The reasons `event` gives its session on its own.
pub fn event_flags(event: &Event) -> AuditFlags {
    let mut bits = 0;
    if let Some(recovery) = event.payload.recovery() {
        let i = RecoveryReason::ALL
            .iter()
            .position(|r| *r == recovery.reason)
            .expect("every reason is in ALL");
        bits |= recovery_bit(i);
    }
    bits |= match &event.payload {
        Payload::LateEvidence(_) => LATE_EVIDENCE_BIT,
        Payload::SignalUnrecognized(_) => UNRECOGNIZED_BIT,
        Payload::HealthCondition(h) if is_damage(&h.code) => SPOOL_DAMAGE_BIT,
        Payload::SessionImported(_) => IMPORTED_BIT,
        _ => 0,
    };
    AuditFlags(bits)
}

/// Whether a health condition's code reports damaged spool bytes.
pub(crate) fn is_damage(code: &str) -> bool {
    code.contains("damage")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bits are stored: pinned here, written out.
    #[test]
    fn the_stored_bits_are_pinned() {
        assert_eq!(
            AuditFlags(1).reasons(),
            vec!["recovery:request_not_observed"]
        );
        assert_eq!(
            AuditFlags(1 << 5).reasons(),
            vec!["recovery:command_completion_not_observed"]
        );
        assert_eq!(AuditFlags(64).reasons(), vec![LATE_EVIDENCE]);
        assert_eq!(AuditFlags(128).reasons(), vec![UNRECOGNIZED_SIGNALS]);
        assert_eq!(AuditFlags(256).reasons(), vec![SPOOL_DAMAGE]);
        assert_eq!(AuditFlags(512).reasons(), vec![TOOL_PAIRING_INCOMPLETE]);
        assert_eq!(AuditFlags(1024).reasons(), vec![COMMAND_PAIRING_INCOMPLETE]);
        assert_eq!(AuditFlags(2048).reasons(), vec![IMPORTED]);
        assert_eq!(AuditFlags(0).reasons(), Vec::<String>::new());
        assert_eq!(AuditFlags(2 | 8).reasons().len(), 2);
    }
}
