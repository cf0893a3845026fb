//! `HARNERY_HOME/config.toml`, the user's settings file: read once per
//! caller into the tables that caller owns (`[ship]` and `[mask]` for the
//! fleet, `[archive]` for compaction after `finalize`). A missing file is
//! every table's defaults; a file that cannot be read or parsed is an
//! error naming it. Tables a caller does not name are left to their owner.

use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;

/// The settings file's name inside a harnery home.
pub const CONFIG_FILE: &str = "config.toml";

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {detail}")]
    Parse { path: PathBuf, detail: String },
}

impl ConfigError {
    /// The file the error is about.
    pub(crate) fn path(&self) -> &Path {
        match self {
            ConfigError::Io { path, .. } | ConfigError::Parse { path, .. } => path,
        }
    }

    /// What went wrong, without the path.
    pub(crate) fn detail(&self) -> String {
        match self {
            ConfigError::Io { source, .. } => source.to_string(),
            ConfigError::Parse { detail, .. } => detail.clone(),
        }
    }
}

pub fn config_path(home_root: &Path) -> PathBuf {
    home_root.join(CONFIG_FILE)
}

/// The tables `T` declares, read from the config in `home_root`; `T`'s
/// defaults when there is no such file.
pub fn read<T: DeserializeOwned + Default>(home_root: &Path) -> Result<T, ConfigError> {
    let path = config_path(home_root);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(T::default()),
        Err(source) => return Err(ConfigError::Io { path, source }),
    };
    toml::from_str(&text).map_err(|e| ConfigError::Parse {
        path,
        detail: e.to_string(),
    })
}
