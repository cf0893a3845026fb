//! The capability-profile authority check: producer state remembers the
//! digest of the capability profile it was built under, and state loaded
//! under another digest is never silently reused.
//!
//! A changed profile means this build reads the adapter's signals under
//! different facts (say, whether they carry native turn ids), so what the
//! old state inferred about turns can no longer be trusted. What must stay
//! continuous is kept: offsets, event ids, the delivery memory, the closed
//! span memory (late evidence still links), the pending end and every open
//! span (nothing is closed or dropped). What the state inferred is
//! dropped: each open span loses its turn attribution and the current turns
//! are forgotten. A span without a turn is never swept and never relieved
//! by the watermark, so those spans fail closed (ADR 0078) and only an
//! explicit end's salvage may close them. The producer then adopts this
//! build's digest and records one `health.condition`
//! ([`PROFILE_CHANGED_CONDITION`]) naming both digests, so the change is
//! loud in `harnery finalize`, `harnery health` and the session itself.

use super::SessionProducer;
use crate::agents::CapabilityProfile;
use crate::contract::Event;

/// The `health.condition` code of state built under another profile.
pub(crate) const PROFILE_CHANGED_CONDITION: &str = "capability_profile_changed";

impl SessionProducer {
    /// Check state loaded from storage against this build's capability
    /// profile. When the digests differ, distrust the state's turn
    /// inferences (see the module doc), adopt this build's digest and
    /// return the `health.condition` event to append before anything else
    /// this producer emits. `None` when the state was built under this
    /// profile.
    pub(crate) fn check_capability_profile(&mut self, at_unix_ns: i64) -> Option<Event> {
        let current = CapabilityProfile::of(self.stamp.session.adapter).digest_hex();
        if self.stamp.capability_digest == current {
            return None;
        }
        let stored = std::mem::replace(&mut self.stamp.capability_digest, current.clone());
        // Every turn the state inferred is dropped, the open spans' too.
        self.turns.forget_current();
        let distrusted = self.pairer.spans.forget_turns();
        let detail = format!(
            "producer state of this session was built under {} capability profile {stored}, \
             this build's is {current}; {distrusted} open span(s) lost their turn attribution \
             and stay open until an explicit end salvages them",
            self.stamp.session.adapter
        );
        let key = format!("{PROFILE_CHANGED_CONDITION}:{stored}:{current}");
        Some(self.record_health(&key, PROFILE_CHANGED_CONDITION, detail, at_unix_ns))
    }
}
