//! Semantic versions as Copilot's packages and changelog keys spell them
//! (`1.0.87`, `1.0.87-0`, `1.0.100-1`), compared by semver precedence:
//! a prerelease sorts below its release, numeric identifiers compare as
//! numbers and below alphanumeric ones, build metadata is ignored.
//! Anything that is not a well-formed version is rejected, never guessed.

use std::cmp::Ordering;
use std::fmt;

/// One version: `major.minor.patch[-prerelease][+build]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Version {
    core: [u64; 3],
    pre: Vec<PreId>,
    text: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum PreId {
    Num(u64),
    Alpha(String),
}

impl Version {
    /// Parse a version, allowing one leading `v`. `None` when malformed.
    pub fn parse(text: &str) -> Option<Version> {
        let trimmed = text.trim();
        let body = trimmed.strip_prefix('v').unwrap_or(trimmed);
        let without_build = body.split_once('+').map_or(body, |(v, _)| v);
        let (core_text, pre_text) = match without_build.split_once('-') {
            Some((c, p)) => (c, Some(p)),
            None => (without_build, None),
        };
        let core = parse_core(core_text)?;
        let pre = match pre_text {
            Some(p) => parse_pre(p)?,
            None => Vec::new(),
        };
        Some(Version {
            core,
            pre,
            text: trimmed.to_string(),
        })
    }

    /// Whether this is a prerelease (`1.0.87-0`).
    pub fn is_prerelease(&self) -> bool {
        !self.pre.is_empty()
    }

    /// The text it was parsed from.
    pub fn as_str(&self) -> &str {
        &self.text
    }
}

fn parse_core(text: &str) -> Option<[u64; 3]> {
    let mut parts = text.split('.');
    let mut core = [0u64; 3];
    for slot in &mut core {
        *slot = parse_numeric(parts.next()?)?;
    }
    parts.next().is_none().then_some(core)
}

fn parse_numeric(text: &str) -> Option<u64> {
    let ok = !text.is_empty()
        && text.bytes().all(|b| b.is_ascii_digit())
        && (text == "0" || !text.starts_with('0'));
    if ok { text.parse().ok() } else { None }
}

fn parse_pre(text: &str) -> Option<Vec<PreId>> {
    text.split('.').map(parse_pre_id).collect()
}

fn parse_pre_id(id: &str) -> Option<PreId> {
    if id.is_empty() || !id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
        return None;
    }
    if id.bytes().all(|b| b.is_ascii_digit()) {
        return parse_numeric(id).map(PreId::Num);
    }
    Some(PreId::Alpha(id.to_string()))
}

impl Ord for Version {
    fn cmp(&self, other: &Self) -> Ordering {
        self.core
            .cmp(&other.core)
            .then_with(|| cmp_pre(&self.pre, &other.pre))
    }
}

impl PartialOrd for Version {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

fn cmp_pre(a: &[PreId], b: &[PreId]) -> Ordering {
    match (a.is_empty(), b.is_empty()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        (false, false) => cmp_pre_ids(a, b),
    }
}

fn cmp_pre_ids(a: &[PreId], b: &[PreId]) -> Ordering {
    for (x, y) in a.iter().zip(b) {
        let ord = match (x, y) {
            (PreId::Num(m), PreId::Num(n)) => m.cmp(n),
            (PreId::Num(_), PreId::Alpha(_)) => Ordering::Less,
            (PreId::Alpha(_), PreId::Num(_)) => Ordering::Greater,
            (PreId::Alpha(m), PreId::Alpha(n)) => m.cmp(n),
        };
        if ord != Ordering::Equal {
            return ord;
        }
    }
    a.len().cmp(&b.len())
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
            "latest",
        ] {
            assert!(Version::parse(bad).is_none(), "{bad:?}");
        }
    }
}
