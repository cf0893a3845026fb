//! Semantic versions as Copilot's packages and changelog keys spell them
//! (`1.0.87`, `1.0.87-0`, `1.0.100-1`), read by the `semver` crate and
//! compared by semver precedence: a prerelease sorts below its release,
//! numeric identifiers compare as numbers and below alphanumeric ones.
//! One leading `v` and surrounding blanks are allowed, and build metadata
//! (anything after `+`) is ignored. Anything else that is not a
//! well-formed version is rejected, never guessed.

use std::cmp::Ordering;
use std::fmt;

/// One version: `major.minor.patch[-prerelease][+build]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Version {
    /// The version without its build metadata (which never orders).
    parsed: semver::Version,
    text: String,
}

impl Version {
    /// Parse a version, allowing one leading `v`. `None` when malformed.
    pub(crate) fn parse(text: &str) -> Option<Version> {
        let trimmed = text.trim();
        let body = trimmed.strip_prefix('v').unwrap_or(trimmed);
        let without_build = body.split_once('+').map_or(body, |(v, _)| v);
        let parsed = semver::Version::parse(without_build).ok()?;
        // Every number is a u64, a prerelease's numeric identifiers too
        // (the crate takes any length there).
        let numbers_fit = parsed.pre.is_empty()
            || parsed
                .pre
                .split('.')
                .all(|id| !id.bytes().all(|b| b.is_ascii_digit()) || id.parse::<u64>().is_ok());
        if !numbers_fit {
            return None;
        }
        Some(Version {
            parsed,
            text: trimmed.to_string(),
        })
    }

    /// Whether this is a prerelease (`1.0.87-0`).
    pub(crate) fn is_prerelease(&self) -> bool {
        !self.parsed.pre.is_empty()
    }

    #[cfg(test)]
    /// The text it was parsed from.
    pub(crate) fn as_str(&self) -> &str {
        &self.text
    }
}

impl Ord for Version {
    fn cmp(&self, other: &Self) -> Ordering {
        self.parsed.cmp(&other.parsed)
    }
}

impl PartialOrd for Version {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

#[cfg(test)]
mod tests {
    use super::Version;

    fn v(text: &str) -> Version {
        Version::parse(text).expect("test versions are well formed")
    }

    #[test]
    fn semver_precedence_with_prereleases() {
        let ordered = [
            "1.0.0-alpha",
            "1.0.0-alpha.1",
            "1.0.0-alpha.beta",
            "1.0.0-beta",
            "1.0.0-beta.2",
            "1.0.0-beta.11",
            "1.0.0-rc.1",
            "1.0.0",
            "1.0.9",
            "1.0.63",
            "1.0.87-0",
            "1.0.87-1",
            "1.0.87",
            "1.0.100-1",
            "1.0.100",
        ];
        for pair in ordered.windows(2) {
            assert!(v(pair[0]) < v(pair[1]), "{} < {}", pair[0], pair[1]);
        }
    }

    #[test]
    fn numeric_not_lexical() {
        assert!(v("1.0.102") > v("1.0.87"));
        assert!(v("1.0.87-10") > v("1.0.87-9"));
    }

    #[test]
    fn build_metadata_ignored_and_v_prefix_allowed() {
        assert_eq!(
            v("v1.0.87+abc").cmp(&v("1.0.87")),
            std::cmp::Ordering::Equal
        );
    }

    #[test]
    fn blanks_and_any_build_text_are_ignored() {
        for same in [" v1.0.87 ", "1.0.87+", "1.0.87+not.semver!", "1.0.87"] {
            let parsed = v(same);
            assert_eq!(
                parsed.cmp(&v("1.0.87")),
                std::cmp::Ordering::Equal,
                "{same:?}"
            );
            assert!(!parsed.is_prerelease());
            assert_eq!(parsed.as_str(), same.trim());
        }
        assert!(v("1.0.0-0a").is_prerelease());
        assert!(v("1.0.0-a-b") < v("1.0.0-a-c"));
    }

    #[test]
    fn malformed_rejected() {
        for bad in [
            "",
            "1",
            "1.0",
            "1.0.x",
            "01.0.0",
            "1.0.0-",
            "1.0.0-a..b",
            "1.0.0.0",
            "1.0.0-01",
            "1.0.0-99999999999999999999",
            "1.0.99999999999999999999",
            "V1.0.0",
            "1.0.0-a_b",
            "latest",
        ] {
            assert!(Version::parse(bad).is_none(), "{bad:?}");
        }
    }
}
