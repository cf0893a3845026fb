//! `genesis.json`: the manifest that names an epoch and the contract it
//! speaks. A ledger is only ever read or written by a build whose schema
//! digest equals the one pinned here.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::LedgerError;
use crate::contract::{CONTRACT_GENERATION, schema_digest_hex};

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
        serde_json::from_slice(&bytes).map_err(|e| LedgerError::Corrupt {
            path: path.to_path_buf(),
            detail: format!("genesis manifest does not parse: {e}"),
        })
    }

    /// Write atomically: temporary file, fsync, rename, fsync the directory.
    pub fn write(&self, path: &Path) -> Result<(), LedgerError> {
        let mut text = serde_json::to_string_pretty(self).expect("a manifest always serializes");
        text.push('\n');
        crate::ledger::durable::write_atomic(path, text.as_bytes())
    }

    /// The first hash of this epoch's chain: zero for a first epoch, else
    /// derived from the anchor's terminal-segment digest.
    pub fn chain_seed(&self) -> [u8; 32] {
        match &self.anchor {
            None => [0u8; 32],
            Some(a) => super::chain::anchored_seed(&a.terminal_segment_digest),
        }
    }
}

/// The schema digest this binary speaks. Test builds (feature `failpoints`)
/// may perturb it with `HARNERY_TEST_SCHEMA_SUFFIX` to exercise an epoch
/// advance without a real contract change.
pub fn binary_digest() -> String {
    let real = schema_digest_hex();
    #[cfg(feature = "failpoints")]
    if let Some(suffix) = std::env::var_os("HARNERY_TEST_SCHEMA_SUFFIX").filter(|s| !s.is_empty()) {
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
                crate::adapter::CapabilityProfile::of(a).digest_hex(),
            )
        })
        .collect()
}
