//! An event's id and the length-prefixed blake3 encoding it is derived
//! from. Both the envelope (`event.rs`) and payloads that point at other
//! events (`payload.rs`) hold ids, so the id lives below both.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A stable event id: deterministic from what produced the event, so that
/// normalizing the same raw records twice yields the same ids.
#[derive(
    Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(transparent)]
pub struct EventId(pub String);

impl EventId {
    /// Derive an id from a domain tag and any number of byte parts, each
    /// length-prefixed so that no two part lists collide.
    pub fn derive(tag: &str, parts: &[&[u8]]) -> EventId {
        let hex = digest_parts(tag.as_bytes(), parts).to_hex();
        let mut id = String::with_capacity(3 + 32);
        id.push_str("ev_");
        id.push_str(&hex[..32]);
        EventId(id)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// blake3 over `first` and then each of `parts`, every one prefixed with
/// its length as a little-endian u64: the encoding behind event ids and
/// record digests.
///
/// Written by the one [`DigestWriter`](super::DigestWriter).
pub fn digest_parts(first: &[u8], parts: &[&[u8]]) -> blake3::Hash {
    let mut w = super::DigestWriter::new();
    for part in std::iter::once(first).chain(parts.iter().copied()) {
        w.field_u64(part);
    }
    w.finish()
}

impl std::fmt::Display for EventId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
