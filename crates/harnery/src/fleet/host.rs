//! This host's stable id: generated once, kept in `HARNERY_HOME/host-id`,
//! and the key of everything the host ships. Two runs racing to create it
//! agree on one id: it is written to a temporary file and hard-linked into
//! place, which fails when the name already exists.

use std::path::{Path, PathBuf};

use crate::durable::{Published, publish_once};

/// File name of the host id below the home.
pub(crate) const HOST_ID_FILE: &str = "host-id";

/// Why the host id could not be read or made.
#[derive(Debug, thiserror::Error)]
pub enum HostIdError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "{path} holds {found:?}, not a host id (host_ followed by 32 hex digits); restore it from a backup, or remove it to start this host afresh"
    )]
    Malformed { path: PathBuf, found: String },
}

/// A host's id, `host_<32 hex digits>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostId(String);

impl HostId {
    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }

    /// Read the id in `home_root`, or None when there is none yet.
    pub fn read(home_root: &Path) -> Result<Option<HostId>, HostIdError> {
        let path = home_root.join(HOST_ID_FILE);
        match std::fs::read_to_string(&path) {
            Ok(text) => HostId::parse(&path, &text).map(Some),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(HostIdError::Io { path, source }),
        }
    }

    /// The id in `home_root`, made now if there is none.
    pub fn load_or_create(home_root: &Path) -> Result<HostId, HostIdError> {
        if let Some(id) = HostId::read(home_root)? {
            return Ok(id);
        }
        let id = format!("host_{}", uuid::Uuid::new_v4().simple());
        match publish_once(home_root, HOST_ID_FILE, &id) {
            Ok(Published::Created) => Ok(HostId(id)),
            Ok(Published::Exists) => {
                let path = home_root.join(HOST_ID_FILE);
                HostId::read(home_root)?.ok_or_else(|| HostIdError::Io {
                    path,
                    source: std::io::ErrorKind::NotFound.into(),
                })
            }
            Err(e) => {
                let (path, source) = e.into_parts();
                Err(HostIdError::Io { path, source })
            }
        }
    }

    fn parse(path: &Path, text: &str) -> Result<HostId, HostIdError> {
        let id = text.trim();
        let ok = id
            .strip_prefix("host_")
            .is_some_and(|hex| hex.len() == 32 && hex.bytes().all(|b| b.is_ascii_hexdigit()));
        match ok {
            true => Ok(HostId(id.to_string())),
            false => Err(HostIdError::Malformed {
                path: path.to_path_buf(),
                found: id.chars().take(80).collect(),
            }),
        }
    }
}

/// The machine's name as the kernel has it (shown beside the id).
pub(crate) fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_id_is_made_once_and_kept() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(HostId::read(dir.path()).unwrap(), None);
        let a = HostId::load_or_create(dir.path()).unwrap();
        let b = HostId::load_or_create(dir.path()).unwrap();
        assert_eq!(a, b);
        assert!(a.as_str().starts_with("host_") && a.as_str().len() == 37);
        std::fs::write(dir.path().join(HOST_ID_FILE), "garbage\n").unwrap();
        assert!(matches!(
            HostId::load_or_create(dir.path()),
            Err(HostIdError::Malformed { .. })
        ));
    }
}
