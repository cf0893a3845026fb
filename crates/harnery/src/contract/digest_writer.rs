//! The one writer of framed digests: every digest harnery pins (event ids,
//! record digests, the schema and capability digests, the chain links and
//! seeds, the closure digest, the fleet's keyed hashes and ship links)
//! feeds blake3 a defined byte encoding built here: raw tags, and fields
//! each prefixed with their length as a little-endian integer of a named
//! width. Two widths exist for history's sake and both are pinned by
//! golden tests: [`DigestWriter::field_u32`] (schema and capability
//! digests; from generation 8 the schema digest frames its whole shape
//! with a u64) and [`DigestWriter::field_u64`] (everything else).
//!
//! The bytes are gathered into a small buffer before they reach the
//! hasher: its fixed cost per call outweighs hashing a short part, and ids
//! are derived for every event. Buffering never changes the digest.

/// blake3 over framed fields, fed through a small buffer.
pub(crate) struct DigestWriter {
    hasher: blake3::Hasher,
    buf: [u8; 512],
    len: usize,
}

impl DigestWriter {
    /// A plain (unkeyed) blake3 digest.
    pub(crate) fn new() -> DigestWriter {
        DigestWriter::over(blake3::Hasher::new())
    }

    /// A keyed blake3 hash.
    pub(crate) fn keyed(key: &[u8; 32]) -> DigestWriter {
        DigestWriter::over(blake3::Hasher::new_keyed(key))
    }

    /// blake3 in key-derivation mode under `context`.
    pub(crate) fn derive_key(context: &str) -> DigestWriter {
        DigestWriter::over(blake3::Hasher::new_derive_key(context))
    }

    fn over(hasher: blake3::Hasher) -> DigestWriter {
        DigestWriter {
            hasher,
            buf: [0; 512],
            len: 0,
        }
    }

    /// Bytes as they are, without a prefix (domain tags, fixed-width
    /// integers, digests of a known length).
    pub(crate) fn raw(&mut self, bytes: &[u8]) -> &mut DigestWriter {
        if self.len + bytes.len() > self.buf.len() {
            self.flush();
            if bytes.len() > self.buf.len() {
                self.hasher.update(bytes);
                return self;
            }
        }
        self.buf[self.len..self.len + bytes.len()].copy_from_slice(bytes);
        self.len += bytes.len();
        self
    }

    /// `bytes` after its length as a little-endian u64.
    pub(crate) fn field_u64(&mut self, bytes: &[u8]) -> &mut DigestWriter {
        self.count_u64(bytes.len()).raw(bytes)
    }

    /// `bytes` after its length as a little-endian u32.
    pub(crate) fn field_u32(&mut self, bytes: &[u8]) -> &mut DigestWriter {
        self.count_u32(bytes.len()).raw(bytes)
    }

    /// A count (of list items, of bytes) as a little-endian u64.
    pub(crate) fn count_u64(&mut self, n: usize) -> &mut DigestWriter {
        self.raw(&(n as u64).to_le_bytes())
    }

    /// A count (of list items, of bytes) as a little-endian u32.
    pub(crate) fn count_u32(&mut self, n: usize) -> &mut DigestWriter {
        self.raw(&(n as u32).to_le_bytes())
    }

    /// The digest of everything written.
    pub(crate) fn finish(&mut self) -> blake3::Hash {
        self.flush();
        self.hasher.finalize()
    }

    fn flush(&mut self) {
        self.hasher.update(&self.buf[..self.len]);
        self.len = 0;
    }
}

/// The bytes [`DigestWriter::field_u64`] writes for `first` and then each
/// of `parts`, appended to `out`: what [`super::digest_parts`] hashes, laid
/// out for a caller that hashes many such messages at once
/// (`harnery_spool::hash_many`).
pub(crate) fn frame_parts_u64(first: &[u8], parts: &[&[u8]], out: &mut Vec<u8>) {
    for part in std::iter::once(first).chain(parts.iter().copied()) {
        out.extend_from_slice(&(part.len() as u64).to_le_bytes());
        out.extend_from_slice(part);
    }
}

impl Default for DigestWriter {
    fn default() -> DigestWriter {
        DigestWriter::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn by_hand(parts: &[&[u8]], wide: bool) -> blake3::Hash {
        let mut h = blake3::Hasher::new();
        for p in parts {
            if wide {
                h.update(&(p.len() as u64).to_le_bytes());
            } else {
                h.update(&(p.len() as u32).to_le_bytes());
            }
            h.update(p);
        }
        h.finalize()
    }

    #[test]
    fn framed_parts_hash_as_the_writer_hashes_them() {
        let long = vec![7u8; 2000];
        let parts: [&[u8]; 3] = [b"", &long, b"x"];
        let mut w = DigestWriter::new();
        for p in std::iter::once(&b"tag"[..]).chain(parts) {
            w.field_u64(p);
        }
        let mut framed = Vec::new();
        frame_parts_u64(b"tag", &parts, &mut framed);
        assert_eq!(blake3::hash(&framed), w.finish());
    }

    #[test]
    fn both_widths_frame_as_written_by_hand() {
        let long = vec![7u8; 2000];
        let mid = vec![3u8; 500];
        let parts: [&[u8]; 5] = [b"tag", b"", &long, &mid, b"x"];
        let (mut wide, mut narrow) = (DigestWriter::new(), DigestWriter::new());
        for p in parts {
            wide.field_u64(p);
            narrow.field_u32(p);
        }
        assert_eq!(wide.finish(), by_hand(&parts, true));
        assert_eq!(narrow.finish(), by_hand(&parts, false));
    }

    #[test]
    fn keyed_and_derived_writers_match_their_hashers() {
        let key = [9u8; 32];
        let mut h = blake3::Hasher::new_keyed(&key);
        h.update(&3u64.to_le_bytes()).update(b"abc");
        assert_eq!(
            DigestWriter::keyed(&key).field_u64(b"abc").finish(),
            h.finalize()
        );
        let mut h = blake3::Hasher::new_derive_key("ctx");
        h.update(b"raw");
        assert_eq!(
            DigestWriter::derive_key("ctx").raw(b"raw").finish(),
            h.finalize()
        );
    }
}
