//! Capability profiles (what each adapter's real client delivers) and the
//! recovery-enablement table (which ADR 0078 rules run for it).
//!
//! The two are deliberately separate. A profile is a fact sheet with a
//! blake3 digest over a fixed byte encoding; producer state records that
//! digest, so a profile change is noticed. The recovery table is plain code
//! keyed by adapter id and is *not* part of any digest (ADR 0078): enabling
//! or tuning recovery never changes a capability digest and never trips a
//! producer-state authority check.
//!
//! Profile encoding: the ASCII tag `harnery.capability`, then a u32 LE
//! count of items, then each item `name=value` as a u32 LE length prefix
//! plus UTF-8 bytes, in the order of [`CapabilityProfile::items`].

use crate::contract::AdapterId;

/// Where an adapter's signal timestamps come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimestampSource {
    /// The payload carries none: the hook's receive time is used.
    ReceiveTime,
    /// Epoch milliseconds (camelCase) or ISO strings (PascalCase payloads).
    AgentMillisOrIso,
}

/// What an adapter's hooks deliver, as observed with the real clients.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CapabilityProfile {
    pub adapter: AdapterId,
    /// Pre and post carry one call id (`tool_use_id`).
    pub tool_call_ids: bool,
    /// Signals carry the adapter's own turn id (`prompt_id`).
    pub native_turn_ids: bool,
    /// A turn-boundary signal exists (`Stop` / `agentStop`). Neither client
    /// sends it when the turn is interrupted.
    pub turn_end_signal: bool,
    /// A session-end signal exists; neither client sends it after SIGKILL.
    pub session_end_signal: bool,
    /// Subagent hooks arrive under the agent id and must be routed to the
    /// parent session (`parentAgentId`).
    pub subagent_routing: bool,
    /// The same hook can be delivered twice (Copilot user + repo hooks).
    pub duplicate_delivery: bool,
    pub timestamps: TimestampSource,
}

pub const CLAUDE_CODE: CapabilityProfile = CapabilityProfile {
    adapter: AdapterId::ClaudeCode,
    tool_call_ids: true,
    native_turn_ids: true,
    turn_end_signal: true,
    session_end_signal: true,
    subagent_routing: false,
    duplicate_delivery: false,
    timestamps: TimestampSource::ReceiveTime,
};

pub const COPILOT: CapabilityProfile = CapabilityProfile {
    adapter: AdapterId::Copilot,
    tool_call_ids: false,
    native_turn_ids: false,
    turn_end_signal: true,
    session_end_signal: true,
    subagent_routing: true,
    duplicate_delivery: true,
    timestamps: TimestampSource::AgentMillisOrIso,
};

impl CapabilityProfile {
    pub fn of(adapter: AdapterId) -> CapabilityProfile {
        crate::agents::agent(adapter).capability()
    }

    /// The profile as ordered `name=value` items: the digested encoding.
    pub(crate) fn items(&self) -> Vec<String> {
        let timestamps = match self.timestamps {
            TimestampSource::ReceiveTime => "receive_time",
            TimestampSource::AgentMillisOrIso => "agent_millis_or_iso",
        };
        vec![
            format!("adapter={}", self.adapter.as_str()),
            format!("tool_call_ids={}", self.tool_call_ids),
            format!("native_turn_ids={}", self.native_turn_ids),
            format!("turn_end_signal={}", self.turn_end_signal),
            format!("session_end_signal={}", self.session_end_signal),
            format!("subagent_routing={}", self.subagent_routing),
            format!("duplicate_delivery={}", self.duplicate_delivery),
            format!("timestamps={timestamps}"),
        ]
    }

    /// blake3 over the encoding described in the module doc, as hex.
    pub fn digest_hex(&self) -> String {
        let items = self.items();
        let mut w = crate::contract::DigestWriter::new();
        w.raw(b"harnery.capability").count_u32(items.len());
        for item in &items {
            w.field_u32(item.as_bytes());
        }
        w.finish().to_hex().to_string()
    }
}

/// Which ADR 0078 recovery rules run for an adapter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RecoveryPolicy {
    /// Mint a derived `tool.requested` for a post that matched no open span.
    pub request_not_observed: bool,
    /// Sweep the ending turn's open spans at its boundary signal.
    pub turn_end_sweep: bool,
    /// Sweep a turn's open spans when the next turn starts without its stop.
    pub next_turn_sweep: bool,
    /// Relieve the write-side watermark with spans of already-ended turns.
    pub span_cap_pressure: bool,
    /// Salvage the approved open-span set of an explicit end.
    pub explicit_end_salvage: bool,
    /// Close command spans still open when the session ends.
    pub command_closer: bool,
    /// Sweep, at a turn end the agent's own record shows, the record's
    /// calls of that turn that never finished (their joined hook spans).
    pub record_turn_end_sweep: bool,
}

impl RecoveryPolicy {
    /// Every rule on.
    pub const FULL: RecoveryPolicy = RecoveryPolicy {
        request_not_observed: true,
        turn_end_sweep: true,
        next_turn_sweep: true,
        span_cap_pressure: true,
        explicit_end_salvage: true,
        command_closer: true,
        record_turn_end_sweep: true,
    };

    /// Nothing is minted; spans close natively or stay open.
    pub const OBSERVATION_ONLY: RecoveryPolicy = RecoveryPolicy {
        request_not_observed: false,
        turn_end_sweep: false,
        next_turn_sweep: false,
        span_cap_pressure: false,
        explicit_end_salvage: false,
        command_closer: false,
        record_turn_end_sweep: false,
    };
}

/// The recovery-enablement table. See `docs/design/session.md` for the reasoning;
/// in short: turn-boundary sweeps need a native turn id and a reliable
/// boundary signal, so the hook-driven ones run for Claude Code only.
/// Copilot keeps the rules that rest on direct evidence or on an explicit
/// approval, and the one sweep its own record proves: a `turn_end` that
/// names the turn of calls it never finished.
pub fn recovery_policy(adapter: AdapterId) -> RecoveryPolicy {
    #[cfg(test)]
    if let Some(changed) = tests::changed_entry(adapter) {
        return changed;
    }
    crate::agents::agent(adapter).recovery()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capability_digests_are_pinned() {
        assert_eq!(
            CLAUDE_CODE.digest_hex(),
            "e38b0209f381be34eded3d034a1ddf389ccee2ecd6240275b3e87f7ee1620626",
            "Claude Code profile changed"
        );
        assert_eq!(
            COPILOT.digest_hex(),
            "befa778c2f384067f3339af8efda40b75a494b5993ae770741df8fe0407552e2",
            "Copilot profile changed"
        );
    }

    use std::cell::Cell;

    thread_local! {
        /// A changed recovery-table entry for this test thread only.
        static CHANGED: Cell<Option<(AdapterId, RecoveryPolicy)>> = const { Cell::new(None) };
    }

    /// The entry a test put in place of the table's, if any.
    pub(super) fn changed_entry(adapter: AdapterId) -> Option<RecoveryPolicy> {
        CHANGED
            .get()
            .and_then(|(a, policy)| (a == adapter).then_some(policy))
    }

    /// The policy with its `n`th rule flipped.
    fn flipped(policy: RecoveryPolicy, n: usize) -> RecoveryPolicy {
        let mut p = policy;
        let rules = [
            &mut p.request_not_observed,
            &mut p.turn_end_sweep,
            &mut p.next_turn_sweep,
            &mut p.span_cap_pressure,
            &mut p.explicit_end_salvage,
            &mut p.command_closer,
            &mut p.record_turn_end_sweep,
        ];
        let rule = rules.into_iter().nth(n).expect("seven rules");
        *rule = !*rule;
        p
    }

    /// Every profile digest, as the code that stores them computes it.
    fn digests() -> Vec<String> {
        AdapterId::ALL
            .into_iter()
            .map(|a| CapabilityProfile::of(a).digest_hex())
            .collect()
    }

    #[test]
    fn the_recovery_table_is_outside_the_digest() {
        // The values before any entry changed: a table entry that reached
        // the profile would move one of them.
        let pinned = digests();
        for adapter in AdapterId::ALL {
            let table = recovery_policy(adapter);
            for n in 0..7 {
                let changed = flipped(table, n);
                CHANGED.set(Some((adapter, changed)));
                assert_eq!(recovery_policy(adapter), changed, "the entry changed");
                assert_ne!(recovery_policy(adapter), table);
                assert_eq!(digests(), pinned, "{adapter} rule {n} moved a digest");
            }
            CHANGED.set(None);
            assert_eq!(recovery_policy(adapter), table);
        }
        assert!(!recovery_policy(AdapterId::Copilot).turn_end_sweep);
        assert!(recovery_policy(AdapterId::ClaudeCode).turn_end_sweep);
        assert!(recovery_policy(AdapterId::Copilot).record_turn_end_sweep);
    }
}
