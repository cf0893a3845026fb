//! Evidence eligibility (ADR 0078 "Evidence eligibility", DESIGN §10).
//!
//! A session is `eligible` only when its record is clean and native: every
//! span closed by the agent, every command paired, every signal understood.
//! Anything else is `audit_only`, with every reason that applies:
//!
//! - `recovery:<reason>`: the session holds a recovery event with that reason
//!   code (one entry per distinct code). Recovery exists for coordination
//!   honesty, not to launder incomplete telemetry into evidence.
//! - `tool_pairing_incomplete`: a tool span is still open, or a terminal
//!   matched no request. This is also how sessions left with open spans in an
//!   archived epoch are classified: their spans can never close there.
//! - `command_pairing_incomplete`: a `harnery exec` request without a
//!   completion, or a completion without its request.
//! - `late_evidence`: a native completion arrived after its span was
//!   recovered; the recovered terminal stays, so the record disagrees with
//!   what the agent later said.
//! - `unrecognized_signals`: the agent sent signals no normalizer understood;
//!   what they meant (possibly a tool event of a new client version) is not
//!   in the canonical record, so the record cannot vouch for completeness.
//! - `spool_damage`: the finalizer reported damaged spool bytes for the
//!   session (a `health.condition` whose code names damage), so signals may
//!   be missing.
//!
//! - `end_request_superseded`: an archived epoch ended with this session's
//!   end request still pending; the epoch advance superseded it.
//!
//! Sessions of archived epochs get the same classification, joined with
//! the reasons the advance's closure recorded against them
//! (`epoch::ArchivedSession`), which hold even when this build cannot
//! parse the archive's events.
//!
//! - `imported`: the session was read from the agent's own record by
//!   `harnery import` (a `session.imported` event): no hook saw it, so it
//!   is never eligible. Its class is `imported` rather than `audit_only`
//!   (its other reasons are listed beside), and it stays so when hooks
//!   later add to it (a resume): the start of its history has no hook
//!   evidence.
//!
//! Audit-only and imported are classifications, not errors: `harnery
//! audit` exits 0.

use std::collections::BTreeSet;

use serde::Serialize;

use super::spans::{SpanKind, SpanState, pair_spans};
use crate::contract::Event;
use crate::contract::eligibility::event_flags;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AuditClass {
    Eligible,
    AuditOnly,
    /// Read from the agent's record by `harnery import`, seen by no hook.
    Imported,
}

impl AuditClass {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            AuditClass::Eligible => "eligible",
            AuditClass::AuditOnly => "audit_only",
            AuditClass::Imported => "imported",
        }
    }
}

impl std::fmt::Display for AuditClass {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A session's class and every reason behind it (sorted, distinct).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Classification {
    pub class: AuditClass,
    pub reasons: Vec<String>,
}

pub(crate) use crate::contract::eligibility::{
    COMMAND_PAIRING_INCOMPLETE, IMPORTED, TOOL_PAIRING_INCOMPLETE,
};

impl Classification {
    /// A session with nothing against it.
    pub(crate) fn eligible() -> Classification {
        Classification {
            class: AuditClass::Eligible,
            reasons: Vec::new(),
        }
    }

    /// Add reasons (kept sorted and distinct): `imported` makes it
    /// imported, any other reason audit-only.
    pub(crate) fn add_reasons(&mut self, more: impl IntoIterator<Item = String>) {
        let mut all: BTreeSet<String> = self.reasons.drain(..).collect();
        all.extend(more);
        self.reasons = all.into_iter().collect();
        self.class = if self.reasons.iter().any(|r| r == IMPORTED) {
            AuditClass::Imported
        } else if self.reasons.is_empty() {
            AuditClass::Eligible
        } else {
            AuditClass::AuditOnly
        };
    }
}

/// [`classify_session`] over owned events (one session's, e.g. from
/// `LedgerReader::session_events`).
pub fn classify_events(events: &[Event]) -> Classification {
    let refs: Vec<&Event> = events.iter().collect();
    classify_session(&refs)
}

/// Classify one session from its events (any order; offsets decide).
pub fn classify_session(events: &[&Event]) -> Classification {
    let mut sorted = events.to_vec();
    sorted.sort_by_key(|e| e.offset);
    let mut reasons = BTreeSet::new();
    for event in &sorted {
        event_reasons(event, &mut reasons);
    }
    for span in pair_spans(&sorted) {
        let gap = span.request.is_none() || span.state() == SpanState::Open;
        if gap {
            reasons.insert(match span.kind {
                SpanKind::Tool => TOOL_PAIRING_INCOMPLETE.to_string(),
                SpanKind::Command => COMMAND_PAIRING_INCOMPLETE.to_string(),
            });
        }
    }
    let mut classification = Classification::eligible();
    classification.add_reasons(reasons);
    classification
}

/// Reasons a single event contributes on its own (the rule the ledger
/// also files into each session's row).
fn event_reasons(event: &Event, reasons: &mut BTreeSet<String>) {
    reasons.extend(event_flags(event).reasons());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::RecoveryReason::*;
    use crate::report::testkit::Script;

    fn classify(s: &Script) -> Classification {
        let events = s.events();
        let refs: Vec<&Event> = events.iter().collect();
        classify_session(&refs)
    }

    #[test]
    fn a_clean_native_session_is_eligible() {
        let mut s = Script::new("s");
        s.turn("t1");
        s.start(0);
        let a = s.request("Bash", 1);
        s.complete(&a, 2, None);
        let c = s.command(3);
        s.command_done(&c, 4, 1);
        s.stop(5);
        let c = classify(&s);
        assert_eq!(c.class, AuditClass::Eligible);
        assert!(c.reasons.is_empty());
    }

    #[test]
    fn every_reason_is_listed_once() {
        let mut s = Script::new("s");
        s.turn("t1");
        let a = s.request("Bash", 1);
        let b = s.request("Read", 1);
        let ra = s.recover(&a, 2, CompletionNotObservedBeforeTurnEnd, None);
        s.recover(&b, 2, CompletionNotObservedBeforeTurnEnd, None);
        s.late(&a, &ra, 3);
        s.unmatched_post("Edit", 4, None);
        s.request("Grep", 5);
        s.command(6);
        s.health(7, "spool_damage");
        let c = classify(&s);
        assert_eq!(c.class, AuditClass::AuditOnly);
        assert_eq!(
            c.reasons,
            vec![
                "command_pairing_incomplete",
                "late_evidence",
                "recovery:completion_not_observed_before_turn_end",
                "recovery:request_not_observed",
                "spool_damage",
                "tool_pairing_incomplete",
            ]
        );
    }

    #[test]
    fn a_recovered_command_is_audit_only_by_its_reason() {
        let mut s = Script::new("s");
        let c = s.command(1);
        let ev = s.push(
            2,
            crate::contract::Payload::CommandCompleted(crate::contract::CommandCompleted {
                requested_event_id: Some(c),
                outcome: crate::contract::Outcome::Unknown,
                duration_ms: crate::contract::Observation::unknown(
                    "command_completion_not_observed",
                ),
                exit_code: None,
                signal: None,
                recovery: Some(crate::contract::Recovery {
                    reason: CommandCompletionNotObserved,
                    requested_event_id: None,
                    elapsed_upper_bound_ms: None,
                }),
            }),
            crate::report::testkit::derived(crate::contract::Confidence::Medium),
        );
        assert!(!ev.0.is_empty());
        let c = classify(&s);
        assert_eq!(c.reasons, vec!["recovery:command_completion_not_observed"]);
    }

    #[test]
    fn an_orphan_terminal_is_a_pairing_gap() {
        let mut s = Script::new("s");
        s.orphan_completion("Bash", 1);
        assert_eq!(classify(&s).reasons, vec![TOOL_PAIRING_INCOMPLETE]);
    }
}
