//! Record framing, byte for byte as `spool-format/README.md` specifies.
//!
//! ```text
//! offset size field
//!      0    8 magic            89 48 52 59 53 50 0D 0A  ("\x89HRYSP\r\n")
//!      8    2 format version   u16 LE (1)
//!     10    2 flags            u16 LE (0; reserved)
//!     12    4 envelope length  u32 LE
//!     16    8 payload length   u64 LE (bytes stored)
//!     24    4 header check     first 4 bytes of blake3(bytes 0..24)
//!     28    E envelope         compact JSON, UTF-8
//!   28+E    P payload          raw bytes as received
//! 28+E+P   32 record digest    blake3(bytes 0..28 ‖ envelope ‖ payload)
//! ```

/// The 8-byte marker every record starts with.
pub const MAGIC: [u8; 8] = *b"\x89HRYSP\r\n";
/// Fixed header length.
pub const HEADER_LEN: usize = 28;
/// Trailing digest length.
pub const DIGEST_LEN: usize = 32;
/// Largest envelope a reader accepts (anything larger is damage).
pub const MAX_ENVELOPE_LEN: u32 = 1 << 20;
/// Largest stored payload a reader accepts (anything larger is damage).
pub const MAX_PAYLOAD_LEN: u64 = 1 << 30;

/// The parsed fixed header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub version: u16,
    pub flags: u16,
    pub envelope_len: u32,
    pub payload_len: u64,
}

impl Header {
    /// Total record length including header and digest.
    pub fn record_len(&self) -> u64 {
        HEADER_LEN as u64 + u64::from(self.envelope_len) + self.payload_len + DIGEST_LEN as u64
    }
}

/// Why 28 bytes are not a usable header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeaderFault {
    NoMagic,
    BadCheck,
    TooLarge,
}

/// Encode the header for an envelope and payload of the given lengths.
pub fn encode_header(version: u16, envelope_len: u32, payload_len: u64) -> [u8; HEADER_LEN] {
    let mut h = [0u8; HEADER_LEN];
    h[0..8].copy_from_slice(&MAGIC);
    h[8..10].copy_from_slice(&version.to_le_bytes());
    h[10..12].copy_from_slice(&0u16.to_le_bytes());
    h[12..16].copy_from_slice(&envelope_len.to_le_bytes());
    h[16..24].copy_from_slice(&payload_len.to_le_bytes());
    let check = header_check(&h[0..24]);
    h[24..28].copy_from_slice(&check);
    h
}

fn header_check(first24: &[u8]) -> [u8; 4] {
    let d = blake3::hash(first24);
    let mut out = [0u8; 4];
    out.copy_from_slice(&d.as_bytes()[0..4]);
    out
}

/// Parse and verify a header (magic, header check, sane lengths).
pub fn decode_header(h: &[u8; HEADER_LEN]) -> Result<Header, HeaderFault> {
    if h[0..8] != MAGIC {
        return Err(HeaderFault::NoMagic);
    }
    if h[24..28] != header_check(&h[0..24]) {
        return Err(HeaderFault::BadCheck);
    }
    let header = Header {
        version: u16::from_le_bytes([h[8], h[9]]),
        flags: u16::from_le_bytes([h[10], h[11]]),
        envelope_len: u32::from_le_bytes([h[12], h[13], h[14], h[15]]),
        payload_len: u64::from_le_bytes(h[16..24].try_into().expect("8-byte slice")),
    };
    if header.envelope_len > MAX_ENVELOPE_LEN || header.payload_len > MAX_PAYLOAD_LEN {
        return Err(HeaderFault::TooLarge);
    }
    Ok(header)
}

/// The record digest over header, envelope and payload.
pub fn record_digest(
    header: &[u8; HEADER_LEN],
    envelope: &[u8],
    payload: &[u8],
) -> [u8; DIGEST_LEN] {
    let mut h = blake3::Hasher::new();
    h.update(header);
    h.update(envelope);
    h.update(payload);
    *h.finalize().as_bytes()
}

/// A whole record split into the bytes its digest covers (header,
/// envelope and payload, one after another: [`record_digest`] is their
/// blake3) and the digest it carries; a caller that hashes many records
/// at once hashes the first part. `None` for fewer bytes than a digest.
pub fn digest_split(record: &[u8]) -> Option<(&[u8], &[u8])> {
    record.split_at_checked(record.len().checked_sub(DIGEST_LEN)?)
}

/// A whole record as one buffer (header, envelope, payload, digest).
pub fn encode_record(version: u16, envelope: &[u8], payload: &[u8]) -> Vec<u8> {
    let header = encode_header(version, envelope.len() as u32, payload.len() as u64);
    let digest = record_digest(&header, envelope, payload);
    let mut out = Vec::with_capacity(HEADER_LEN + envelope.len() + payload.len() + DIGEST_LEN);
    out.extend_from_slice(&header);
    out.extend_from_slice(envelope);
    out.extend_from_slice(payload);
    out.extend_from_slice(&digest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_digest_is_the_blake3_of_what_comes_before_it() {
        let (envelope, payload) = (&b"{\"adapter\":\"x\"}"[..], &b"payload bytes"[..]);
        let record = encode_record(1, envelope, payload);
        let (covered, digest) = digest_split(&record).unwrap();
        assert_eq!(covered.len(), HEADER_LEN + envelope.len() + payload.len());
        let header: [u8; HEADER_LEN] = record[..HEADER_LEN].try_into().unwrap();
        assert_eq!(record_digest(&header, envelope, payload)[..], digest[..]);
        assert_eq!(blake3::hash(covered).as_bytes()[..], digest[..]);
        assert!(digest_split(&[0u8; DIGEST_LEN - 1]).is_none());
    }
}
