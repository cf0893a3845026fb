//! Session keys: the directory name a session is spooled under.
//!
//! A session id becomes its own directory name only when that is plainly
//! safe: 1 to 128 bytes of `[A-Za-z0-9._-]`, starting with an ASCII letter or
//! digit. Anything else (`../x`, `/`, `.`, control bytes, a 10 KB id) is
//! replaced by `_` followed by the lowercase hex blake3 of the id's bytes. A
//! safe key never starts with `_`, so the two forms cannot collide. A payload
//! without a session id is spooled under [`NO_SESSION_KEY`].

/// Key for payloads that carry no session id.
pub const NO_SESSION_KEY: &str = "_nosession";
/// Longest id used verbatim.
pub const MAX_PLAIN_KEY: usize = 128;

/// The directory name for `session_id` (see the module doc).
pub fn session_key(session_id: Option<&str>) -> String {
    match session_id {
        None => NO_SESSION_KEY.to_owned(),
        Some(id) if is_plain(id) => id.to_owned(),
        Some(id) => hashed(id),
    }
}

/// The directory name for an adapter name, by the same rule.
pub fn adapter_key(adapter: &str) -> String {
    session_key(Some(adapter))
}

/// Whether `name` is used verbatim as a directory name.
pub fn is_plain(name: &str) -> bool {
    let b = name.as_bytes();
    !b.is_empty()
        && b.len() <= MAX_PLAIN_KEY
        && b[0].is_ascii_alphanumeric()
        && b.iter()
            .all(|&c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'-'))
}

fn hashed(id: &str) -> String {
    format!("_{}", blake3::hash(id.as_bytes()).to_hex())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unsafe_ids_are_hashed() {
        assert_eq!(
            session_key(Some("82655d0f-45cd-404f-9e4e-e90fea255247")),
            "82655d0f-45cd-404f-9e4e-e90fea255247"
        );
        for id in [
            "../../etc",
            "/",
            ".",
            "..",
            "",
            "a/b",
            "a\u{1}b",
            "-x",
            "_x",
        ] {
            let k = session_key(Some(id));
            assert!(k.starts_with('_') && k.len() == 65, "{id:?} -> {k}");
        }
        assert_eq!(session_key(Some(&"a".repeat(128))).len(), 128);
        assert!(session_key(Some(&"a".repeat(129))).starts_with('_'));
        assert_eq!(session_key(None), NO_SESSION_KEY);
    }
}
