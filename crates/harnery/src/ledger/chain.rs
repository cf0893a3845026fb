//! The hash chain. Each event row's hash is
//!
//! ```text
//! blake3( "harnery.chain.v1" || prev_hash[32] || len(json) as u64 LE || json )
//! ```
//!
//! where `json` is the event's canonical text exactly as stored in the
//! `events.json` column, so `verify` recomputes the chain from stored bytes
//! and never from a re-serialisation. The first `prev_hash` of an epoch is
//! its seed: 32 zero bytes for a first epoch, else derived from the
//! archived epoch's chain head (the terminal-segment digest).

use crate::contract::DigestWriter;

/// Domain tag of a chain link.
const LINK_TAG: &[u8] = b"harnery.chain.v1";
/// Domain tag of an anchored epoch's seed.
const ANCHOR_TAG: &[u8] = b"harnery.chain.anchor.v1";

/// The hash of one event row given the previous row's hash.
pub(crate) fn link(prev: &[u8; 32], json: &[u8]) -> [u8; 32] {
    let hash = DigestWriter::new()
        .raw(LINK_TAG)
        .raw(prev)
        .field_u64(json)
        .finish();
    *hash.as_bytes()
}

/// The seed of an epoch that anchors to an archived chain head (hex). An
/// anchor that records the advance's administrative closure folds that
/// record's digest in after the head, so the closure is verified with the
/// chain; an anchor without one keeps the original seed.
pub(crate) fn anchored_seed(terminal_segment_digest: &str, closure: Option<[u8; 32]>) -> [u8; 32] {
    let mut w = DigestWriter::new();
    w.raw(ANCHOR_TAG)
        .field_u64(terminal_segment_digest.as_bytes());
    if let Some(c) = closure {
        w.raw(b"closure").raw(&c);
    }
    *w.finish().as_bytes()
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn link_is_pinned() {
        let h = link(&[0u8; 32], br#"{"a":1}"#);
        assert_eq!(
            hex(&h),
            "fcc4f808b92caf38aeee6aa88ad260d2fb9fc0adb09dc8bc9a43980063d08f89"
        );
        assert_ne!(h, link(&[1u8; 32], br#"{"a":1}"#));
        assert_ne!(h, link(&[0u8; 32], br#"{"a":2}"#));
    }

    #[test]
    fn anchored_seeds_are_pinned_with_and_without_a_closure() {
        let head = "ab".repeat(32);
        assert_eq!(
            hex(&anchored_seed(&head, None)),
            "ec4ca852387826bc2cd3b8ca81021fd9c11415dd1962b173f6ec4e326ade5245"
        );
        assert_eq!(
            hex(&anchored_seed(&head, Some([7u8; 32]))),
            "b021b35d5c15bb2fadb9140d924c310da2c0a64e94388b8b7d0efa24fa1cc4a7"
        );
    }
}
