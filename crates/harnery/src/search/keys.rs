//! The compact keys the index stores in place of text: a `said` entry as
//! one 16-byte digest of everything that names it, an event id as its 16
//! bytes, a kind of text as a small integer. Each is a cache key, never
//! shown: the index can be thrown away and made again with other keys
//! (a change here is a new [`super::store::FORMAT`]).

use rusqlite::types::Value;

use super::extract::Kind;
use crate::contract::{SessionRef, digest_parts};

/// Bytes of a `said` key: at 128 bits, two of a home's texts sharing one
/// (and one of them missing from search) is out of reach.
const SAID_KEY_BYTES: usize = 16;

/// The `said` key of the text whose blake3 is `digest`, said in `session`
/// under `scope` (a turn, `call:ID` or `span:ID`) as `kind`: the parts
/// length-prefixed (see [`digest_parts`]), so no two part lists share a
/// key by their bytes running together.
pub(super) fn said_key(session: &SessionRef, scope: &str, kind: &str, digest: &[u8]) -> Vec<u8> {
    let parts: [&[u8]; 5] = [
        session.adapter.as_str().as_bytes(),
        session.session_id.as_bytes(),
        scope.as_bytes(),
        kind.as_bytes(),
        digest,
    ];
    digest_parts(b"harnery-search-said", &parts).as_bytes()[..SAID_KEY_BYTES].to_vec()
}

/// How an event id is kept in `doc_events`: an id of the form every
/// event id has today (`ev_` and 32 lowercase hex digits) as its 16 bytes,
/// any other as its text. SQLite never finds a blob equal to a text, so
/// the two forms cannot meet.
pub(super) fn event_key(id: &str) -> Value {
    match packed_event_id(id) {
        Some(bytes) => Value::Blob(bytes.to_vec()),
        None => Value::Text(id.to_string()),
    }
}

/// The 16 bytes of `ev_` and 32 lowercase hex digits.
fn packed_event_id(id: &str) -> Option<[u8; 16]> {
    let hex = id.strip_prefix("ev_")?.as_bytes();
    if hex.len() != 32 {
        return None;
    }
    let digit = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    };
    let mut out = [0u8; 16];
    for (i, pair) in hex.chunks_exact(2).enumerate() {
        out[i] = (digit(pair[0])? << 4) | digit(pair[1])?;
    }
    Some(out)
}

/// A kind of text as `docs` keeps it: its place in [`Kind::ALL`].
pub(super) fn kind_code(kind: Kind) -> i64 {
    Kind::ALL
        .iter()
        .position(|k| *k == kind)
        .expect("every kind is in Kind::ALL") as i64
}

/// The kind `docs` keeps as `code`.
pub(super) fn kind_of_code(code: i64) -> Option<Kind> {
    usize::try_from(code)
        .ok()
        .and_then(|i| Kind::ALL.get(i).copied())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::{AdapterId, EventId};

    #[test]
    fn an_event_id_of_todays_form_packs_to_its_sixteen_bytes() {
        let id = EventId::derive("test", &[b"one"]);
        let Value::Blob(bytes) = event_key(id.as_str()) else {
            panic!("{id:?} is packed");
        };
        let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(format!("ev_{hex}"), id.as_str());
    }

    #[test]
    fn an_event_id_of_another_form_is_kept_as_its_text() {
        for id in [
            "ev_",
            "ev_0123456789abcdef0123456789abcdeF",
            "ev_0123456789abcdef0123456789abcde",
            "ev_0123456789abcdef0123456789abcdef0",
            "xx_0123456789abcdef0123456789abcdef",
            "e",
        ] {
            assert_eq!(event_key(id), Value::Text(id.to_string()), "{id}");
        }
    }

    #[test]
    fn every_kind_has_its_own_code() {
        for kind in Kind::ALL {
            assert_eq!(kind_of_code(kind_code(kind)), Some(kind));
        }
        assert_eq!(kind_of_code(-1), None);
        assert_eq!(kind_of_code(Kind::ALL.len() as i64), None);
    }

    #[test]
    fn a_said_key_differs_when_any_part_does() {
        let s = |id: &str| SessionRef {
            adapter: AdapterId::ClaudeCode,
            session_id: id.to_string(),
        };
        let base = said_key(&s("a"), "t", "prompt", b"d");
        assert_eq!(base.len(), SAID_KEY_BYTES);
        assert_eq!(said_key(&s("a"), "t", "prompt", b"d"), base);
        let others = [
            said_key(&s("b"), "t", "prompt", b"d"),
            said_key(&s("a"), "u", "prompt", b"d"),
            said_key(&s("a"), "t", "message", b"d"),
            said_key(&s("a"), "t", "prompt", b"e"),
            // The same bytes split otherwise between scope and kind.
            said_key(&s("a"), "tp", "rompt", b"d"),
        ];
        for other in others {
            assert_ne!(other, base);
        }
        let copilot = SessionRef {
            adapter: AdapterId::Copilot,
            session_id: "a".into(),
        };
        assert_ne!(said_key(&copilot, "t", "prompt", b"d"), base);
    }
}
