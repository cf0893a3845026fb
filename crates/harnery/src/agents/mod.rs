//! Agents: reading what each agent's hooks send and what its own record
//! says. One folder per agent holds both of its dialects (`<agent>/hooks.rs`,
//! `<agent>/record.rs`) and its `Adapter` (`adapter.rs`: where it keeps its
//! files, its hooks' place, its resume); [`agent`] is the registry;
//! `harnery/` reads harnery's own signals; `record/` is what the agents'
//! records share; `wire` is the bottom every dialect parses with (it
//! imports nothing else from here).
//!
//! This layer is stateless. It turns one raw spool record ([`RawSignal`])
//! into one adapter-neutral [`Normalized`] signal, decides which canonical
//! session the record belongs to ([`route`]), and states what each adapter
//! can deliver ([`CapabilityProfile`]) and which recovery rules run for it
//! ([`recovery_policy`]). Everything stateful (offsets, turns, pairing,
//! recovery) lives in `session`.
//!
//! Dialects: `claude_code` (snake_case, `tool_use_id`, `prompt_id`),
//! `copilot` (camelCase with the event name on argv, or snake_case with
//! `hook_event_name`), `codex`, `gemini`, `qwen`, `opencode` (each in its
//! folder, from the real client's captures), and `harnery` (harnery's own
//! end and command signals, valid under every adapter).
//!
//! Recovery enablement (ADR 0078: turn-boundary recovery needs native turn
//! ids and reliable boundary signals); each adapter's `recovery` says it,
//! and its docs page says why:
//!
//! | rule | Claude Code | Copilot | Codex | Gemini CLI | Qwen Code | OpenCode |
//! | --- | --- | --- | --- | --- | --- | --- |
//! | `request_not_observed` | on | on | on | on | on | on |
//! | turn-end sweep | on | off | on | off | on | on |
//! | next-turn sweep | on | off | on | off | on | off |
//! | `span_cap_pressure` | on | on | on | on | on | on |
//! | `explicit_end_salvage` | on | on | on | on | on | on |
//! | `command_completion_not_observed` | on | on | on | on | on | on |
//!
//! Why Copilot gets no turn-boundary sweep: it has no turn ids, so its turns
//! are *stamped* by producer state (`userPromptSubmitted` … `agentStop`),
//! and it has no call ids, so a post pairs with a pre only by tool name and
//! argument digest in arrival order. A sweep keyed on a stamped turn would
//! stack an inference (which turn) on an inference (which pre), and an
//! `agentStop` is not sent on interrupt, so the boundary is not reliable
//! either. The rules it keeps rest on direct evidence (a post with no pre:
//! `request_not_observed`), on an explicit approval (an end request:
//! `explicit_end_salvage`, the command closer), or only touch turns that
//! have already ended (`span_cap_pressure`). Every recovery event on a
//! stamped turn is one confidence step lower than its pinned value.

pub(crate) mod adapter;
pub(crate) mod capability;
pub mod claude_code;
pub(crate) mod codex;
pub mod copilot;
pub(crate) mod gemini;
pub mod harnery;
pub(crate) mod opencode;
pub(crate) mod qwen;
pub mod record;
pub(crate) mod result_text;
pub mod signal;
pub(crate) mod wire;

pub use capability::{CapabilityProfile, RecoveryPolicy, TimestampSource, recovery_policy};
pub(crate) use signal::{
    BatchedCall, CommandResult, Normalized, SignalKind, ToolCall, ToolResult, TurnEnd,
};

use crate::clock::ClockSample;
use crate::contract::{AdapterId, SessionRef, digest_parts, frame_parts_u64};

/// One raw spool record, as the producer needs it. Independent of the spool
/// format: the finalizer fills it from the envelope and the payload bytes.
#[derive(Debug, Clone, PartialEq)]
pub struct RawSignal<'a> {
    pub adapter: AdapterId,
    /// The event name from the envelope (Copilot's argv; harnery's own
    /// `harnery.*` names). Claude Code names the event in the payload.
    pub event_name: Option<&'a str>,
    /// The raw session id from the envelope (for a Copilot subagent hook,
    /// the agent id).
    pub session_id: &'a str,
    pub payload: &'a [u8],
    pub received_unix_ns: i64,
    pub clock: ClockSample,
    /// The record's identity in the ledger's raw-signal table.
    pub record_digest: &'a str,
    /// The payload's blake3 (hex) when it is already known, as the hook
    /// recorded it in the envelope for a whole payload; `None` means hash
    /// the payload.
    pub payload_blake3: Option<&'a str>,
}

impl RawSignal<'_> {
    #[cfg(test)]
    /// Read the record in its dialect.
    pub(crate) fn normalize(&self) -> Normalized {
        self.normalize_naming(false).0
    }

    /// `normalize`, and with `record` also the record
    /// file the payload names, where its dialect reads that with the rest
    /// (Claude Code's hooks); [`record::NamedRecord::Unread`] elsewhere.
    pub(crate) fn normalize_naming(&self, record: bool) -> (Normalized, record::NamedRecord) {
        if let Some(name) = self.event_name.filter(|n| harnery::is_harnery_event(n)) {
            let session = Some(self.session_id);
            let normalized = harnery::normalize_in(
                self.adapter,
                session,
                name,
                self.payload,
                self.received_unix_ns,
            );
            return (normalized, record::NamedRecord::Unread);
        }
        agent(self.adapter).normalize(self.event_name, self.payload, self.received_unix_ns, record)
    }
}

/// The adapter of `id`.
pub(crate) fn agent(id: AdapterId) -> &'static dyn adapter::Adapter {
    match id {
        AdapterId::ClaudeCode => &claude_code::ClaudeCode,
        AdapterId::Copilot => &copilot::Copilot,
        AdapterId::Codex => &codex::Codex,
        AdapterId::GeminiCli => &gemini::GeminiCli,
        AdapterId::QwenCode => &qwen::QwenCode,
        AdapterId::Opencode => &opencode::Opencode,
    }
}

/// The canonical session of a record: its own session id, except that a
/// Copilot subagent's hooks (which arrive under the agent id) belong to the
/// parent session. Nested subagents whose parent is itself an agent are
/// routed to that agent's id: a stateless reader cannot see further up.
pub fn route(signal: &RawSignal) -> SessionRef {
    let own = || signal.session_id.to_string();
    let session_id = match is_own(signal) {
        true => own(),
        false => agent(signal.adapter)
            .parent_session(signal.payload)
            .unwrap_or_else(own),
    };
    SessionRef {
        adapter: signal.adapter,
        session_id,
    }
}

fn is_own(signal: &RawSignal) -> bool {
    signal.event_name.is_some_and(harnery::is_harnery_event)
}

/// A record id for callers that have no digest of their own: blake3 over
/// the adapter, event name, raw session id, receive time and payload, each
/// length-prefixed. Two byte-identical payloads delivered twice (Copilot's
/// user and repo hooks) get two ids because their receive times differ.
pub fn record_digest(
    adapter: AdapterId,
    event_name: Option<&str>,
    session_id: &str,
    received_unix_ns: i64,
    payload: &[u8],
) -> String {
    let key = RecordKey {
        adapter,
        event_name,
        session_id,
        received_unix_ns,
        payload,
    };
    let ns = received_unix_ns.to_le_bytes();
    digest_parts(RECORD_TAG, &key.parts(&ns))
        .to_hex()
        .as_str()
        .to_owned()
}

/// The domain tag a record digest begins with.
const RECORD_TAG: &[u8] = b"harnery.record";

/// What a record digest covers ([`record_digest`]'s arguments).
pub struct RecordKey<'a> {
    pub adapter: AdapterId,
    pub event_name: Option<&'a str>,
    pub session_id: &'a str,
    pub received_unix_ns: i64,
    pub payload: &'a [u8],
}

impl RecordKey<'_> {
    /// The parts framed after [`RECORD_TAG`], in order (`ns`: the receive
    /// time's bytes).
    fn parts<'b>(&'b self, ns: &'b [u8; 8]) -> [&'b [u8]; 5] {
        [
            self.adapter.as_str().as_bytes(),
            self.event_name.unwrap_or("").as_bytes(),
            self.session_id.as_bytes(),
            ns,
            self.payload,
        ]
    }
}

/// [`record_digest`] of each record, in order: the same digests, their
/// hashes computed side by side (`harnery_spool::hash_many`), as a drain
/// needs one for every record of a chunk.
pub fn record_digests(keys: &[RecordKey]) -> Vec<String> {
    let mut framed = Vec::with_capacity(keys.iter().map(|k| k.payload.len() + 160).sum());
    let mut ends = Vec::with_capacity(keys.len());
    for k in keys {
        let ns = k.received_unix_ns.to_le_bytes();
        frame_parts_u64(RECORD_TAG, &k.parts(&ns), &mut framed);
        ends.push(framed.len());
    }
    let mut start = 0;
    let messages: Vec<&[u8]> = ends
        .iter()
        .map(|&end| {
            let m = &framed[start..end];
            start = end;
            m
        })
        .collect();
    let mut digests = Vec::with_capacity(messages.len());
    harnery_spool::hash_many::hash_each(&messages, &mut digests);
    digests
        .into_iter()
        .map(|d| blake3::Hash::from_bytes(d).to_hex().as_str().to_owned())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw<'a>(
        adapter: AdapterId,
        event: Option<&'a str>,
        session: &'a str,
        payload: &'a [u8],
    ) -> RawSignal<'a> {
        RawSignal {
            adapter,
            event_name: event,
            session_id: session,
            payload,
            received_unix_ns: 1,
            clock: ClockSample {
                boot_id: None,
                boottime_ns: None,
            },
            record_digest: "r",
            payload_blake3: None,
        }
    }

    #[test]
    fn copilot_subagent_signals_route_to_the_parent_session() {
        let payload = br#"{"sessionId":"agent","agentId":"agent","parentAgentId":"parent"}"#;
        let signal = raw(AdapterId::Copilot, Some("preToolUse"), "agent", payload);
        assert_eq!(route(&signal).session_id, "parent");
        let claude = raw(AdapterId::ClaudeCode, None, "s", payload);
        assert_eq!(route(&claude).session_id, "s");
    }

    #[test]
    fn every_adapter_answers_for_its_own_id() {
        for id in AdapterId::ALL {
            let a = agent(id);
            assert_eq!(a.capability().adapter, id);
            assert!(!a.name().is_empty());
        }
    }

    #[test]
    fn harnery_signals_are_read_under_either_adapter() {
        for adapter in AdapterId::ALL {
            let signal = raw(adapter, Some(harnery::END_REQUESTED), "s", b"{}");
            assert_eq!(
                signal.normalize().kind,
                SignalKind::EndRequested { reason: None }
            );
            assert_eq!(route(&signal).session_id, "s");
        }
    }

    #[test]
    fn record_digests_keep_their_bytes() {
        let digest = record_digest(AdapterId::ClaudeCode, Some("Stop"), "s", 7, b"{}");
        assert_eq!(
            digest,
            "3973b2ec87e32b1deda2d6d897581a1b54380cf78044fa97e0bad17f06f09ff0"
        );
    }

    #[test]
    fn many_record_digests_are_each_records_own() {
        let payload: Vec<u8> = (0..3000u32).map(|n| (n * 7 % 251) as u8).collect();
        let keys: Vec<RecordKey> = [0, 1, 700, 930, 1000, 1100, 1900, 2100, 3000]
            .iter()
            .enumerate()
            .map(|(i, &n)| RecordKey {
                adapter: if i % 2 == 0 {
                    AdapterId::ClaudeCode
                } else {
                    AdapterId::Copilot
                },
                event_name: (i % 3 != 0).then_some("PreToolUse"),
                session_id: "b5f1c3e2-0000-4000-8000-000000000000",
                received_unix_ns: 1_796_000_000_000_000_000 + i as i64,
                payload: &payload[..n],
            })
            .collect();
        let one_by_one: Vec<String> = keys
            .iter()
            .map(|k| {
                record_digest(
                    k.adapter,
                    k.event_name,
                    k.session_id,
                    k.received_unix_ns,
                    k.payload,
                )
            })
            .collect();
        assert_eq!(record_digests(&keys), one_by_one);
        assert!(record_digests(&[]).is_empty());
    }

    #[test]
    fn record_digests_differ_by_receive_time() {
        let a = record_digest(AdapterId::Copilot, Some("x"), "s", 1, b"{}");
        let b = record_digest(AdapterId::Copilot, Some("x"), "s", 2, b"{}");
        assert_ne!(a, b);
        assert_eq!(
            a,
            record_digest(AdapterId::Copilot, Some("x"), "s", 1, b"{}")
        );
    }
}
