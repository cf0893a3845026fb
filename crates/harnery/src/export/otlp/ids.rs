//! The trace and span ids: derived from the session and from event and
//! turn ids (blake3 over length-prefixed parts), so an export is
//! reproducible; written as the lowercase hex OTLP/JSON carries.

use super::json::SpanId;
use crate::contract::{DigestWriter, SessionRef};

/// 32 hex digits derived from the session.
pub(super) fn trace_id(session: &SessionRef) -> String {
    id_hex(
        "harnery.otlp.trace",
        &[session.adapter.as_str(), &session.session_id],
        16,
    )
}

/// 16 hex digits derived from a key (an event id, or a turn id).
#[cfg(test)]
pub(super) fn span_id(key: &str) -> String {
    span_id_of(key).as_str().to_string()
}

pub(super) fn span_id_of(key: &str) -> SpanId {
    let hash = id_hash("harnery.otlp.span", &[key]);
    let mut digits = [0u8; 16];
    hex_into(&hash.as_bytes()[..8], &mut digits);
    SpanId(digits)
}

fn id_hex(tag: &str, parts: &[&str], bytes: usize) -> String {
    let hash = id_hash(tag, parts);
    let mut digits = vec![0u8; bytes * 2];
    hex_into(&hash.as_bytes()[..bytes], &mut digits);
    String::from_utf8(digits).expect("hex digits")
}

/// The hash of `tag` and `parts`, each after its length (8 bytes, little
/// endian), written by the one [`DigestWriter`].
pub(super) fn id_hash(tag: &str, parts: &[&str]) -> blake3::Hash {
    let mut w = DigestWriter::new();
    for part in std::iter::once(&tag).chain(parts) {
        w.field_u64(part.as_bytes());
    }
    w.finish()
}

/// Lowercase hex digits of `bytes` into `out` (twice as long), as
/// `blake3::Hash::to_hex` writes them.
fn hex_into(bytes: &[u8], out: &mut [u8]) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    for (&b, pair) in bytes.iter().zip(out.chunks_exact_mut(2)) {
        pair[0] = DIGITS[usize::from(b >> 4)];
        pair[1] = DIGITS[usize::from(b & 0xf)];
    }
}
