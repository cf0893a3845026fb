//! A fast, non-cryptographic 64-bit hash for keys looked up per signal or
//! per event (delivery keys, record digests, event and tool call ids while
//! spans are derived). A fingerprint only picks where
//! to look: every match is confirmed by comparing the key itself, so a
//! collision costs a comparison and never decides anything.

use std::hash::{BuildHasherDefault, Hasher};

const MULTIPLIER: u64 = 0x9e37_79b9_7f4a_7c15;

/// Multiply into 128 bits and fold the halves together, so a change in
/// any input bit reaches every output bit. (A plain 64-bit multiply only
/// carries changes upward: keys differing in one high bit then collided.)
fn fold(x: u64) -> u64 {
    let p = u128::from(x) * u128::from(MULTIPLIER);
    (p as u64) ^ ((p >> 64) as u64)
}

/// The fingerprint of `bytes`, eight bytes at a time.
pub fn fingerprint(bytes: &[u8]) -> u64 {
    let mut hasher = Fingerprinter(bytes.len() as u64);
    hasher.write(bytes);
    hasher.0
}

/// A [`Hasher`] that folds what it is given into a fingerprint, for maps
/// keyed by strings that SipHash (the default) would hash far more slowly.
#[derive(Default)]
pub struct Fingerprinter(u64);

/// Builds [`Fingerprinter`]s for a `HashMap` or `HashSet`.
pub type FingerprintState = BuildHasherDefault<Fingerprinter>;

impl Hasher for Fingerprinter {
    fn write(&mut self, bytes: &[u8]) {
        let mut words = bytes.chunks_exact(8);
        for word in &mut words {
            let word = u64::from_le_bytes(word.try_into().expect("chunks of eight bytes"));
            self.0 = fold(self.0 ^ word);
        }
        let mut tail = [0u8; 8];
        tail[..words.remainder().len()].copy_from_slice(words.remainder());
        self.0 = fold(self.0 ^ u64::from_le_bytes(tail));
    }

    fn finish(&self) -> u64 {
        self.0
    }
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

    /// Keys that differ in a few bytes, in either word, do not collide
    /// (they did while the mixing only carried changes upward).
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
