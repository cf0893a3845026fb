//! The fleet's part of `HARNERY_HOME/config.toml`: where `ship` sends
//! (`ship.to`) and the user's own masking (`[mask]`: more patterns, and
//! values never to mask; `ship.mask` is the older spelling of
//! `mask.patterns` and is still read). A missing file is an empty config;
//! a file that does not parse, or that names a key this build does not
//! know, is an error naming the file.
//!
//! ```toml
//! [ship]
//! to = "postgresql://harnery@fleet.example/harnery?sslmode=verify-full"
//!
//! [mask]
//! patterns = ['corp-[0-9]{6}', '(?i)x-internal-key:\s*(?P<secret>\S+)']
//! allow = ['test-password-[0-9]+']
//! ```

use std::path::Path;

use serde::Deserialize;

use super::mask::MaskRules;

pub use crate::config::{ConfigError, config_path};

/// The whole file; only `[ship]` is read here, other tables are left to
/// whoever owns them.
#[derive(Debug, Default, Deserialize)]
struct ConfigFile {
    #[serde(default)]
    ship: ShipConfig,
    #[serde(default)]
    mask: MaskConfig,
}

/// `[mask]`: the user's patterns and allow-list (Rust regex syntax).
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct MaskConfig {
    #[serde(default)]
    pub patterns: Vec<String>,
    #[serde(default)]
    pub allow: Vec<String>,
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShipConfig {
    /// The server target (a libpq URL or key=value string).
    pub to: Option<String>,
    /// The user's mask patterns (the older spelling of `mask.patterns`).
    #[serde(default)]
    pub mask: Vec<String>,
    /// `[mask]` of the same file.
    #[serde(skip)]
    pub rules: MaskRules,
}

impl ShipConfig {
    /// `[ship]` of the config in `home_root`.
    pub fn load(home_root: &Path) -> Result<ShipConfig, ConfigError> {
        let file: ConfigFile = crate::config::read(home_root)?;
        let mut ship = file.ship;
        ship.rules = MaskRules {
            patterns: ship
                .mask
                .iter()
                .chain(&file.mask.patterns)
                .cloned()
                .collect(),
            allow: file.mask.allow,
        };
        Ok(ship)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ship_settings_are_read_and_unknown_keys_refused() {
        let dir = tempfile::tempdir().unwrap();
        assert!(ShipConfig::load(dir.path()).unwrap().to.is_none());
        std::fs::write(
            config_path(dir.path()),
            "[ship]\nto = \"postgresql://h/db\"\nmask = ['a+b']\n",
        )
        .unwrap();
        let c = ShipConfig::load(dir.path()).unwrap();
        assert_eq!(c.to.as_deref(), Some("postgresql://h/db"));
        assert_eq!(c.mask, vec!["a+b".to_string()]);
        assert_eq!(c.rules.patterns, vec!["a+b".to_string()]);
        std::fs::write(
            config_path(dir.path()),
            "[ship]\nmask = ['a+b']\n[mask]\npatterns = ['c']\nallow = ['d']\n",
        )
        .unwrap();
        let c = ShipConfig::load(dir.path()).unwrap();
        assert_eq!(c.rules.patterns, vec!["a+b".to_string(), "c".to_string()]);
        assert_eq!(c.rules.allow, vec!["d".to_string()]);
        std::fs::write(config_path(dir.path()), "[mask]\nallows = []\n").unwrap();
        assert!(ShipConfig::load(dir.path()).is_err());
        std::fs::write(config_path(dir.path()), "[ship]\ntoo = 1\n").unwrap();
        let err = ShipConfig::load(dir.path()).unwrap_err().to_string();
        assert!(err.contains("config.toml") && err.contains("too"), "{err}");
    }
}
