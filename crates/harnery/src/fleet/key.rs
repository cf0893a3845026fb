//! This host's ship key: 32 random bytes kept in `HARNERY_HOME/ship-key`
//! (mode 0600), made once like the host id and never sent anywhere. What
//! leaves the host about an original it does not send is keyed by it: a
//! mask's label (the same secret gives the same label within a host), the
//! ids derived from raw bytes (`fleet::ids`), and the row commitment that
//! binds each shipped row to the ledger's row.
//! Without the key the server cannot test a guess against either.

use std::path::{Path, PathBuf};

use crate::contract::DigestWriter;
use crate::durable::{Published, publish_once};

/// File name of the ship key below the home.
pub(crate) const SHIP_KEY_FILE: &str = "ship-key";

/// Why the key could not be read or made.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "{path} is not a ship key (64 hex digits); restore it from a backup (without it, `fleet verify --local` cannot check what this host shipped)"
    )]
    Malformed { path: PathBuf },
}

/// The key, and the purposes it is split into.
#[derive(Clone)]
pub struct HostKey {
    secret: [u8; 32],
}

impl std::fmt::Debug for HostKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("HostKey(..)")
    }
}

/// What a keyed hash is for (each gets its own derived key).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Purpose {
    /// The label a masked secret is replaced by.
    MaskLabel,
    /// The commitment of a shipped row to the ledger's row.
    RowCommit,
    /// The commitment of a shipped genesis manifest to the original.
    Genesis,
    /// The seed of the host's head-signing key pair.
    Signing,
    /// An id the contract derives from raw bytes (event ids, stamped
    /// turn ids), as it leaves the host.
    ShippedId,
}

impl Purpose {
    fn context(self) -> &'static str {
        match self {
            Purpose::MaskLabel => "harnery ship mask label v1",
            Purpose::RowCommit => "harnery ship row commitment v1",
            Purpose::Genesis => "harnery ship genesis commitment v1",
            Purpose::Signing => "harnery ship signing key v1",
            Purpose::ShippedId => "harnery ship id v1",
        }
    }
}

impl HostKey {
    /// A key from its bytes (tests; the shipper reads it from the home).
    pub fn from_bytes(secret: [u8; 32]) -> HostKey {
        HostKey { secret }
    }

    /// A keyed hash for `purpose` over `parts`, each length-prefixed.
    pub(crate) fn hash(&self, purpose: Purpose, parts: &[&[u8]]) -> [u8; 32] {
        let mut material = Vec::with_capacity(64);
        material.extend_from_slice(purpose.context().as_bytes());
        material.extend_from_slice(&self.secret);
        let key = blake3::derive_key("harnery ship key split v1", &material);
        let mut w = DigestWriter::keyed(&key);
        for p in parts {
            w.field_u64(p);
        }
        *w.finish().as_bytes()
    }

    /// Read the key in `home_root`, making it when there is none.
    pub fn load_or_create(home_root: &Path) -> Result<HostKey, KeyError> {
        let path = home_root.join(SHIP_KEY_FILE);
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| KeyError::Io { path, source }
        };
        match std::fs::read_to_string(&path) {
            Ok(text) => return parse(&path, &text),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => return Err(KeyError::Io { path, source }),
        }
        let mut secret = [0u8; 32];
        secret[..16].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
        secret[16..].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
        // Two v4 uuids carry 244 random bits; hash them into a full key.
        let secret = *blake3::hash(&secret).as_bytes();
        let line = crate::ledger::chain::hex(&secret);
        match publish_once(home_root, SHIP_KEY_FILE, &line) {
            Ok(Published::Created) => Ok(HostKey { secret }),
            // Another run made it first: use theirs.
            Ok(Published::Exists) => {
                let text = std::fs::read_to_string(&path).map_err(io(&path))?;
                parse(&path, &text)
            }
            Err(e) => {
                let (path, source) = e.into_parts();
                Err(KeyError::Io { path, source })
            }
        }
    }
}

fn parse(path: &Path, text: &str) -> Result<HostKey, KeyError> {
    let hex = text.trim();
    let malformed = || KeyError::Malformed {
        path: path.to_path_buf(),
    };
    if hex.len() != 64 {
        return Err(malformed());
    }
    let mut secret = [0u8; 32];
    for (i, b) in secret.iter_mut().enumerate() {
        *b = u8::from_str_radix(hex.get(2 * i..2 * i + 2).ok_or_else(malformed)?, 16)
            .map_err(|_| malformed())?;
    }
    Ok(HostKey { secret })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_is_made_once_kept_private_and_split_by_purpose() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let a = HostKey::load_or_create(dir.path()).unwrap();
        let b = HostKey::load_or_create(dir.path()).unwrap();
        assert_eq!(a.secret, b.secret);
        let mode = std::fs::metadata(dir.path().join(SHIP_KEY_FILE))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        let x = a.hash(Purpose::MaskLabel, &[b"hunter2"]);
        assert_eq!(x, b.hash(Purpose::MaskLabel, &[b"hunter2"]));
        assert_ne!(x, a.hash(Purpose::RowCommit, &[b"hunter2"]));
        assert_ne!(
            x,
            HostKey::from_bytes([7; 32]).hash(Purpose::MaskLabel, &[b"hunter2"])
        );
        std::fs::write(dir.path().join(SHIP_KEY_FILE), "nope\n").unwrap();
        assert!(matches!(
            HostKey::load_or_create(dir.path()),
            Err(KeyError::Malformed { .. })
        ));
    }
}
