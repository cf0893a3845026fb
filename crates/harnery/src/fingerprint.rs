//! A fast, non-cryptographic 64-bit hash for keys looked up per signal or
//! per event (delivery keys, record digests, event and tool call ids while
//! spans are derived). A fingerprint only picks where
//! to look: every match is confirmed by comparing the key itself, so a
//! collision costs a comparison and never decides anything.

use std::hash::BuildHasher;

/// Builds the hashers of the maps keyed per signal or per event:
/// `foldhash`'s fast hash with its fixed seed, so a run's fingerprints are
/// the same on every run (SipHash, the default, is far slower on these keys).
pub(crate) type FingerprintState = foldhash::fast::FixedState;

/// The fingerprint of `bytes` (their length is part of it).
pub(crate) fn fingerprint(bytes: &[u8]) -> u64 {
    FingerprintState::default().hash_one(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_keys_agree_and_near_keys_differ() {
        assert_eq!(fingerprint(b"exact:Stop:00"), fingerprint(b"exact:Stop:00"));
        assert_ne!(fingerprint(b"exact:Stop:00"), fingerprint(b"exact:Stop:01"));
        // The length is part of it: a key and its zero-padded form differ.
        assert_ne!(fingerprint(b"ab"), fingerprint(b"ab\0"));
    }

    /// Keys that differ in a few bytes, in either word, do not collide.
    #[test]
    fn similar_keys_do_not_collide() {
        let mut seen = std::collections::HashMap::new();
        for n in 0..200_000u32 {
            for key in [format!("other-{n}"), format!("exact:Stop:{n:04}")] {
                if let Some(other) = seen.insert(fingerprint(key.as_bytes()), key.clone()) {
                    panic!("{key} and {other} share a fingerprint");
                }
            }
        }
    }
}
