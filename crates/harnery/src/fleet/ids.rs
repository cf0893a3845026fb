//! Ids as they leave the host. The contract derives an event id from the
//! raw record's digest (blake3 over the adapter, the event name, the
//! session, the receive time and the hook's bytes), and a stamped turn id
//! (`stamped-N-…`) ends with the last twelve hex digits of that digest.
//! Everything else that goes into the digest is on the server, so an
//! unkeyed id would let anyone holding the rows test a guess of masked or
//! withheld text: rebuild the record with the guess, hash it, compare.
//!
//! So every such id is replaced, wherever it stands (the `event_id`
//! column, the envelope, a payload field pointing at another event, a
//! list of ids, the genesis manifest's closure, the derived span and
//! receipt rows), by a keyed hash under the host's ship key: `evk_` and
//! 32 hex digits for an event id, `stamped-N-k` and 12 hex digits for a
//! stamped turn id. The same id maps to the same shipped id everywhere,
//! so the server's rows still join on them; only the host can map them
//! back, by shipping its own rows again (`fleet verify --local` does).
//! Other ids (session ids, tool call ids, message ids, native turn ids)
//! are the agent's own random ones and leave as they are.

use std::borrow::Cow;
use std::sync::LazyLock;

use regex::Regex;

use super::key::{HostKey, Purpose};

/// Whether `s` is an event id as the contract derives it: `ev_` and 32
/// lowercase hex digits.
pub(crate) fn is_event_id(s: &str) -> bool {
    s.len() == 35
        && s.starts_with("ev_")
        && s.as_bytes()[3..]
            .iter()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b))
}

/// The counter of a stamped turn id (`stamped-N-SEED`, SEED the last
/// characters of what minted it), when `s` is one.
fn stamped_counter(s: &str) -> Option<&str> {
    let rest = s.strip_prefix("stamped-")?;
    let (n, seed) = rest.split_once('-')?;
    let counted = !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit());
    (counted && !seed.is_empty() && seed.chars().count() <= 12).then_some(n)
}

/// `s` as it leaves the host: a keyed id when it is an event id or a
/// stamped turn id, else unchanged.
pub fn shipped<'s>(key: &HostKey, s: &'s str) -> Cow<'s, str> {
    if is_event_id(s) {
        let h = key.hash(Purpose::ShippedId, &[b"event", s.as_bytes()]);
        return Cow::Owned(format!("evk_{}", hex(&h[..16])));
    }
    match stamped_counter(s) {
        Some(n) => {
            let h = key.hash(Purpose::ShippedId, &[b"turn", s.as_bytes()]);
            Cow::Owned(format!("stamped-{n}-k{}", hex(&h[..6])))
        }
        None => Cow::Borrowed(s),
    }
}

/// Ids standing inside a text: an agent that ran `harnery search` or
/// `harnery show` has the host's event ids in its tool output, each a
/// test of the masked text of the event it names.
static WITHIN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\bev_[0-9a-f]{32}\b|\bstamped-[0-9]+-[0-9a-f]{12}\b")
        .expect("the id pattern compiles")
});

/// `s` as it leaves the host: itself an id ([`shipped`]), or a text with
/// every event id and hex-seeded stamped turn id in it keyed the same way.
pub fn keyed_within<'s>(key: &HostKey, s: &'s str) -> Cow<'s, str> {
    match shipped(key, s) {
        Cow::Owned(id) => Cow::Owned(id),
        Cow::Borrowed(_) if !may_hold_id(s.as_bytes()) => Cow::Borrowed(s),
        Cow::Borrowed(_) => WITHIN.replace_all(s, |c: &regex::Captures<'_>| {
            shipped(key, &c[0]).into_owned()
        }),
    }
}

static EVENT: LazyLock<memchr::memmem::Finder<'static>> =
    LazyLock::new(|| memchr::memmem::Finder::new(b"ev_"));
static STAMPED: LazyLock<memchr::memmem::Finder<'static>> =
    LazyLock::new(|| memchr::memmem::Finder::new(b"stamped-"));

/// Whether bytes may hold an id [`keyed_within`] replaces: a cheap test
/// before decoding a JSON string.
pub(crate) fn may_hold_id(raw: &[u8]) -> bool {
    EVENT.find(raw).is_some() || STAMPED.find(raw).is_some()
}

/// Lower-case hex, without a string made per byte (this runs for every
/// id of every row shipped).
fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 15)]));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_and_stamped_turn_ids_are_keyed_and_nothing_else() {
        let key = HostKey::from_bytes([5; 32]);
        let other = HostKey::from_bytes([6; 32]);
        let id = "ev_0123456789abcdef0123456789abcdef";
        let shipped_id = shipped(&key, id);
        assert!(shipped_id.starts_with("evk_") && shipped_id.len() == 36);
        assert_eq!(
            shipped_id,
            shipped(&key, id),
            "the same id, the same keyed id"
        );
        assert_ne!(shipped_id, shipped(&other, id), "keyed per host");
        assert_eq!(
            hex(&[0, 9, 171, 255]),
            crate::ledger::chain::hex(&[0, 9, 171, 255])
        );
        let turn = shipped(&key, "stamped-3-9abcdef01234");
        assert!(
            turn.starts_with("stamped-3-k") && turn.len() == 23,
            "{turn}"
        );
        assert!(!turn.contains("9abcdef01234"));
        let text = format!("see {id} and stamped-2-0123456789ab; prev_{}", &id[3..]);
        let keyed = keyed_within(&key, &text);
        assert!(
            !keyed.contains(&format!("see {id}")) && !keyed.contains("0123456789ab;"),
            "{keyed}"
        );
        assert!(
            keyed.contains(&*shipped_id),
            "the same keyed id in a text: {keyed}"
        );
        assert!(
            keyed.contains(&format!("prev_{}", &id[3..])),
            "not an id: {keyed}"
        );
        for kept in [
            "ev_0123",
            "ev_0123456789ABCDEF0123456789abcdef",
            "toolu_01ABC",
            "stamped-x-abc",
            "stamped-3-",
            "82655d0f-45cd-404f-9e4e-e90fea255247",
        ] {
            assert_eq!(shipped(&key, kept), kept);
        }
    }
}
