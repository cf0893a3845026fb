//! `genesis.json`: the manifest that names an epoch and the contract it
//! speaks. A ledger is only ever read or written by a build whose schema
//! digest equals the one pinned here.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::LedgerError;
use crate::contract::{CONTRACT_GENERATION, SessionRef, schema_digest_hex};

/// Format tag written into every genesis manifest.
pub const GENESIS_FORMAT: &str = "harnery.genesis.v1";

/// What an epoch was founded on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GenesisManifest {
    pub format: String,
    pub genesis_id: String,
    pub contract_generation: u32,
    pub schema_digest: String,
    /// Capability-profile digest per adapter id.
    pub capability_profiles: BTreeMap<String, String>,
    pub created_unix_ns: i64,
    /// The archived epoch this one continues; `None` for a first epoch.
    pub anchor: Option<Anchor>,
}

/// The link from a new epoch back to the archived one it replaced.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Anchor {
    pub genesis_id: String,
    pub schema_digest: String,
    /// The archived ledger's chain head: the terminal-segment digest.
    pub terminal_segment_digest: String,
    pub events: u64,
    /// Where the archive lives, relative to `HARNERY_HOME`.
    pub archive: String,
    /// What the advance closed administratively in the archived epoch
    /// (ADR 0078, disposition of pre-advance epochs). Part of the new
    /// epoch's chain seed, so it is verified with the chain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub closure: Option<Closure>,
}

/// The sessions an advance left unfinished in the epoch it archived: their
/// open spans can never close there, and their pending end requests are
/// superseded. Each such session is audit-only, as a whole.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Closure {
    /// Sorted by session.
    pub sessions: Vec<ClosedSession>,
}

/// One session an advance closed administratively.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClosedSession {
    pub session: SessionRef,
    /// Request event ids of the tool spans left open.
    pub open_tool_spans: Vec<String>,
    /// Request event ids of the command spans left open.
    pub open_command_spans: Vec<String>,
    /// Event ids of the pending `end.requested` the advance superseded.
    pub superseded_end_requests: Vec<String>,
    /// `tool_pairing_incomplete`, `command_pairing_incomplete`,
    /// `end_request_superseded`: one for each kind of loose end.
    pub reasons: Vec<String>,
}

impl Closure {
    /// blake3 over a defined encoding: the tag `harnery.closure.v1`, then a
    /// u64 LE count of sessions, then per session its adapter, id, the
    /// three id lists and the reasons, every string and list length as a
    /// u64 LE prefix.
    pub(crate) fn digest(&self) -> [u8; 32] {
        let mut w = crate::contract::DigestWriter::new();
        w.raw(b"harnery.closure.v1").count_u64(self.sessions.len());
        for c in &self.sessions {
            w.field_u64(c.session.adapter.as_str().as_bytes())
                .field_u64(c.session.session_id.as_bytes());
            for list in [
                &c.open_tool_spans,
                &c.open_command_spans,
                &c.superseded_end_requests,
                &c.reasons,
            ] {
                w.count_u64(list.len());
                for item in list {
                    w.field_u64(item.as_bytes());
                }
            }
        }
        *w.finish().as_bytes()
    }
}

impl GenesisManifest {
    /// A fresh manifest for this build's contract.
    pub fn new(anchor: Option<Anchor>, now_unix_ns: i64) -> GenesisManifest {
        GenesisManifest {
            format: GENESIS_FORMAT.into(),
            genesis_id: format!("gen_{}", uuid::Uuid::now_v7().simple()),
            contract_generation: CONTRACT_GENERATION,
            schema_digest: binary_digest(),
            capability_profiles: capability_digests(),
            created_unix_ns: now_unix_ns,
            anchor,
        }
    }

    pub fn read(path: &Path) -> Result<GenesisManifest, LedgerError> {
        let bytes = std::fs::read(path).map_err(|e| LedgerError::io(path, e))?;
        GenesisManifest::parse(path, &bytes)
    }

    /// The manifest in `bytes`, read from `path`; one that does not parse
    /// is damage (a manifest is only ever written whole).
    pub fn parse(path: &Path, bytes: &[u8]) -> Result<GenesisManifest, LedgerError> {
        serde_json::from_slice(bytes).map_err(|e| {
            super::integrity::damaged(path, format!("does not parse as a genesis manifest: {e}"))
        })
    }

    /// Write atomically: temporary file, fsync, rename, fsync the directory.
    pub(crate) fn write(&self, path: &Path) -> Result<(), LedgerError> {
        let mut text = serde_json::to_string_pretty(self).expect("a manifest always serializes");
        text.push('\n');
        Ok(crate::durable::write_atomic(
            path,
            text.as_bytes(),
            crate::durable::Mode::Private,
        )?)
    }

    /// The first hash of this epoch's chain: zero for a first epoch, else
    /// derived from the anchor's terminal-segment digest.
    pub(crate) fn chain_seed(&self) -> [u8; 32] {
        match &self.anchor {
            None => [0u8; 32],
            Some(a) => super::chain::anchored_seed(
                &a.terminal_segment_digest,
                a.closure.as_ref().map(Closure::digest),
            ),
        }
    }
}

/// The schema digest this binary speaks. Test builds (feature `failpoints`)
/// may perturb it with `HARNERY_TEST_SCHEMA_SUFFIX` to exercise an epoch
/// advance without a real contract change.
pub fn binary_digest() -> String {
    let real = schema_digest_hex();
    if let Some(suffix) = crate::failpoint::tuning_text(crate::failpoint::TEST_SCHEMA_SUFFIX_ENV) {
        let mut h = blake3::Hasher::new();
        h.update(real.as_bytes());
        h.update(suffix.as_encoded_bytes());
        return h.finalize().to_hex().to_string();
    }
    real
}

/// Capability-profile digests of every adapter this build knows.
pub fn capability_digests() -> BTreeMap<String, String> {
    crate::contract::AdapterId::ALL
        .into_iter()
        .map(|a| {
            (
                a.as_str().to_string(),
                crate::agents::CapabilityProfile::of(a).digest_hex(),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::AdapterId;

    fn closed(id: &str, tools: &[&str], ends: &[&str], reasons: &[&str]) -> ClosedSession {
        let strings = |v: &[&str]| v.iter().map(|s| s.to_string()).collect();
        ClosedSession {
            session: SessionRef {
                adapter: AdapterId::ClaudeCode,
                session_id: id.into(),
            },
            open_tool_spans: strings(tools),
            open_command_spans: Vec::new(),
            superseded_end_requests: strings(ends),
            reasons: strings(reasons),
        }
    }

    #[test]
    fn the_closure_digest_is_pinned_and_covers_every_field() {
        let c = Closure {
            sessions: vec![closed(
                "s1",
                &["ev_a"],
                &["ev_e"],
                &["tool_pairing_incomplete"],
            )],
        };
        assert_eq!(
            super::super::chain::hex(&c.digest()),
            "ba5cf10949ed24547cb768ae00d1a7fbbadc038e44e892a156cad458d9e459ee"
        );
        let variants = [
            closed("s2", &["ev_a"], &["ev_e"], &["tool_pairing_incomplete"]),
            closed("s1", &["ev_b"], &["ev_e"], &["tool_pairing_incomplete"]),
            closed("s1", &["ev_a"], &[], &["tool_pairing_incomplete"]),
            closed("s1", &["ev_a"], &["ev_e"], &[]),
        ];
        for v in variants {
            let other = Closure { sessions: vec![v] };
            assert_ne!(other.digest(), c.digest(), "{other:?}");
        }
        // Moving an id from one list to the next is a different record.
        let mut moved = c.clone();
        let id = moved.sessions[0].open_tool_spans.pop().unwrap();
        moved.sessions[0].open_command_spans.push(id);
        assert_ne!(moved.digest(), c.digest());
    }

    #[test]
    fn an_anchor_without_a_closure_keeps_the_original_seed() {
        let mut g = GenesisManifest::new(None, 0);
        g.anchor = Some(Anchor {
            genesis_id: "gen_x".into(),
            schema_digest: "d".into(),
            terminal_segment_digest: "ab".repeat(32),
            events: 3,
            archive: "ledgers/v2-candidates/gen_x".into(),
            closure: None,
        });
        let plain = g.chain_seed();
        // The seed every anchor had before closures were recorded.
        assert_eq!(
            super::super::chain::hex(&plain),
            "ec4ca852387826bc2cd3b8ca81021fd9c11415dd1962b173f6ec4e326ade5245"
        );
        g.anchor.as_mut().unwrap().closure = Some(Closure::default());
        assert_ne!(g.chain_seed(), plain, "a recorded closure is in the seed");
    }
}
