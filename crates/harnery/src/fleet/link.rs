//! What binds the shipped rows: a chain anyone can recompute from the
//! rows the server holds, a keyed commitment only the host can check, and
//! a signed head.
//!
//! - **link**: each shipped row's link is a hash of the link before it
//!   and every column the row carries (the first row's "link before" is a
//!   seed made of the host id and the epoch). Changing, inserting,
//!   deleting or moving a row breaks the links from there on; `fleet
//!   verify` recomputes them without any secret.
//! - **commit**: the host's keyed hash (its ship key) of its own ledger's
//!   chain hash at that row and the row's link. It ties what was shipped
//!   to the original bytes without revealing anything the server could
//!   test a guess against; `ship` checks it where it resumes and `fleet
//!   verify --local` for every row.
//! - **head signature**: after every batch the host signs (Ed25519, a key
//!   derived from its ship key) the epoch's last seq and link; the public
//!   key is registered with the host on its first ship. Recomputing the
//!   whole chain after a change then still fails at the head.
//!
//! Text columns go to PostgreSQL escaped where they must be ([`pg_text`]):
//! PostgreSQL text holds neither NUL nor bytes that are not UTF-8.

use std::borrow::Cow;

use super::key::{HostKey, Purpose};
use crate::contract::DigestWriter;

/// The shipped columns of one event row (text already escaped).
pub struct ShippedRow<'a> {
    pub seq: i64,
    pub event_id: &'a str,
    pub adapter: &'a str,
    pub session_id: &'a str,
    pub offset: i64,
    pub ty: &'a str,
    pub time_unix_ns: i64,
    pub content: &'a str,
    pub masked: &'a [String],
    pub json: &'a [u8],
}

/// The link before an epoch's first row.
pub(crate) fn seed(host: &str, genesis: &str) -> [u8; 32] {
    let hash = DigestWriter::derive_key("harnery ship chain seed v1")
        .field_u64(host.as_bytes())
        .field_u64(genesis.as_bytes())
        .finish();
    *hash.as_bytes()
}

/// A row's link over the link before it and its columns.
pub fn link(prev: &[u8], row: &ShippedRow<'_>) -> [u8; 32] {
    let mut w = DigestWriter::derive_key("harnery ship chain link v1");
    w.field_u64(prev)
        .field_u64(&row.seq.to_le_bytes())
        .field_u64(row.event_id.as_bytes())
        .field_u64(row.adapter.as_bytes())
        .field_u64(row.session_id.as_bytes())
        .field_u64(&row.offset.to_le_bytes())
        .field_u64(row.ty.as_bytes())
        .field_u64(&row.time_unix_ns.to_le_bytes())
        .field_u64(row.content.as_bytes())
        .count_u64(row.masked.len());
    for m in row.masked {
        w.field_u64(m.as_bytes());
    }
    *w.field_u64(row.json).finish().as_bytes()
}

/// The host's commitment of a shipped row to its ledger row.
pub fn commit(key: &HostKey, local_hash: &[u8], link: &[u8]) -> [u8; 32] {
    key.hash(Purpose::RowCommit, &[local_hash, link])
}

/// What the head signature signs.
pub(crate) fn head_message(host: &str, genesis: &str, seq: i64, link: &[u8]) -> Vec<u8> {
    let mut m = b"harnery ship head v1\0".to_vec();
    for part in [
        host.as_bytes(),
        genesis.as_bytes(),
        &seq.to_le_bytes(),
        link,
    ] {
        m.extend_from_slice(&(part.len() as u64).to_le_bytes());
        m.extend_from_slice(part);
    }
    m
}

/// The host's signing key pair, derived from its ship key.
pub(crate) struct Signer(ring::signature::Ed25519KeyPair);

impl Signer {
    pub fn new(key: &HostKey) -> Signer {
        let seed = key.hash(Purpose::Signing, &[]);
        Signer(
            ring::signature::Ed25519KeyPair::from_seed_unchecked(&seed)
                .expect("any 32 bytes are an Ed25519 seed"),
        )
    }

    pub(crate) fn public_key(&self) -> Vec<u8> {
        use ring::signature::KeyPair;
        self.0.public_key().as_ref().to_vec()
    }

    pub(crate) fn sign(&self, message: &[u8]) -> Vec<u8> {
        self.0.sign(message).as_ref().to_vec()
    }
}

/// Whether `sig` is the signature of `message` under `public_key`.
pub(crate) fn signature_holds(public_key: &[u8], message: &[u8], sig: &[u8]) -> bool {
    ring::signature::UnparsedPublicKey::new(&ring::signature::ED25519, public_key)
        .verify(message, sig)
        .is_ok()
}

/// A text column as PostgreSQL can hold it, losslessly: unchanged unless
/// it holds a NUL, a backslash or a byte that is not UTF-8; then a
/// backslash is written `\\`, a NUL `\x00` and each stray byte `\xNN`.
pub(crate) fn pg_text(bytes: &[u8]) -> Cow<'_, str> {
    match std::str::from_utf8(bytes) {
        Ok(s) if !s.contains(['\0', '\\']) => Cow::Borrowed(s),
        _ => Cow::Owned(escape(bytes)),
    }
}

fn escape(mut bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() + 8);
    while !bytes.is_empty() {
        let (valid, rest) = match std::str::from_utf8(bytes) {
            Ok(s) => (s, &b""[..]),
            Err(e) => {
                let (ok, bad) = bytes.split_at(e.valid_up_to());
                (std::str::from_utf8(ok).expect("valid up to here"), bad)
            }
        };
        for c in valid.chars() {
            match c {
                '\\' => out.push_str("\\\\"),
                '\0' => out.push_str("\\x00"),
                c => out.push(c),
            }
        }
        if let Some((&b, tail)) = rest.split_first() {
            out.push_str(&format!("\\x{b:02x}"));
            bytes = tail;
        } else {
            bytes = rest;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped_only_where_it_must_be_and_stays_distinct() {
        assert!(matches!(pg_text(b"plain id"), Cow::Borrowed("plain id")));
        assert_eq!(pg_text(b"a\0b"), "a\\x00b");
        assert_eq!(pg_text(b"a\\x00b"), "a\\\\x00b");
        assert_eq!(pg_text(b"caf\xc3\xa9 \xff!"), "caf\u{e9} \\xff!");
        assert_ne!(pg_text(b"a\0"), pg_text(b"a\\x00"));
    }

    #[test]
    fn links_bind_every_column_and_the_head_signature_checks() {
        let masked = vec!["github-token".to_string()];
        let row = ShippedRow {
            seq: 1,
            event_id: "e",
            adapter: "a",
            session_id: "s",
            offset: 0,
            ty: "t",
            time_unix_ns: 5,
            content: "masked",
            masked: &masked,
            json: b"{}",
        };
        let s = seed("host_a", "g");
        assert_ne!(s, seed("host_b", "g"));
        let l = link(&s, &row);
        let other = ShippedRow {
            json: b"{ }",
            ..row
        };
        assert_ne!(l, link(&s, &other));
        let key = HostKey::from_bytes([3; 32]);
        let signer = Signer::new(&key);
        let msg = head_message("host_a", "g", 1, &l);
        let sig = signer.sign(&msg);
        assert!(signature_holds(&signer.public_key(), &msg, &sig));
        assert!(!signature_holds(
            &signer.public_key(),
            &head_message("host_a", "g", 2, &l),
            &sig
        ));
    }
}
