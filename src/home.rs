//! `HARNERY_HOME`: where everything lives, and the permissions it keeps.
//!
//! Minimal stand-in until the spool branch lands its full version (same API).

use std::path::{Path, PathBuf};

/// Why the home directory could not be determined.
#[derive(Debug, thiserror::Error)]
pub enum HomeError {
    #[error("cannot find a home directory: HARNERY_HOME and HOME are unset")]
    NoHome,
    #[error("HARNERY_HOME must be an absolute path, got {0:?}")]
    Relative(PathBuf),
}

/// The root of harnery's on-disk state and the layout below it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Home {
    root: PathBuf,
}

impl Home {
    /// `$HARNERY_HOME`, else `$HOME/.harnery`.
    pub fn from_env() -> Result<Home, HomeError> {
        if let Some(h) = std::env::var_os("HARNERY_HOME").filter(|h| !h.is_empty()) {
            let root = PathBuf::from(h);
            if root.is_relative() {
                return Err(HomeError::Relative(root));
            }
            return Ok(Home { root });
        }
        let home = std::env::var_os("HOME").ok_or(HomeError::NoHome)?;
        Ok(Home {
            root: PathBuf::from(home).join(".harnery"),
        })
    }

    pub fn at(root: impl Into<PathBuf>) -> Home {
        Home { root: root.into() }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn spool_dir(&self) -> PathBuf {
        self.root.join("spool")
    }

    pub fn intake_dir(&self) -> PathBuf {
        self.spool_dir().join("intake")
    }

    pub fn ledgers_dir(&self) -> PathBuf {
        self.root.join("ledgers")
    }
}
