//! Resume safety (ADR-0007): may `copilot --resume` load this session, or
//! does the legacy character ceiling apply?
//!
//! Native resume is allowed only when the selected Copilot version is at or
//! above a changelog entry that explicitly advertises reliable resume of very
//! large local sessions (the real entry, under 1.0.87: "Resume very large local
//! sessions and continue with new prompts reliably."). The version number alone
//! never decides. Missing, malformed, older or silent evidence keeps the legacy
//! ceiling, and the reason says which.

use std::fs;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::stream::LEGACY_CEILING_CHARS;
use crate::agents::copilot::package::{Installed, RunningCopilotHint};
use crate::agents::copilot::version::Version;

/// Largest changelog read.
const CHANGELOG_MAX_BYTES: u64 = 64 << 20;

/// The phrases an advertising entry must hold, after normalization
/// (lowercase, runs of non-alphanumerics to one space).
const ADVERTISING_PHRASES: [&str; 2] = [
    "resume very large local sessions",
    "continue with new prompts reliably",
];

/// The two policies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Policy {
    Native,
    LegacyCeiling,
}

impl Policy {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Policy::Native => "native",
            Policy::LegacyCeiling => "legacy-ceiling",
        }
    }
}

/// The changelog entry that decided.
#[derive(Debug, Clone, Serialize)]
pub struct DecidingEntry {
    pub version: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub description: String,
}

/// What a changelog says about large-session resume.
#[derive(Debug, Clone)]
pub(crate) enum ChangelogFinding {
    /// Every advertising entry, by version.
    Advertises(Vec<(Version, DecidingEntry)>),
    /// Valid, but no entry advertises it.
    Silent { versions: usize },
    /// Not readable as a changelog.
    Malformed(String),
}

/// Read and judge one `changelog.json`.
pub(crate) fn read_changelog(path: &Path) -> ChangelogFinding {
    let size = match fs::metadata(path) {
        Ok(m) => m.len(),
        Err(e) => return ChangelogFinding::Malformed(format!("cannot read: {e}")),
    };
    if size > CHANGELOG_MAX_BYTES {
        return ChangelogFinding::Malformed(format!(
            "{size} bytes is larger than the {CHANGELOG_MAX_BYTES}-byte bound"
        ));
    }
    match fs::read(path) {
        Ok(bytes) => judge_changelog(&bytes),
        Err(e) => ChangelogFinding::Malformed(format!("cannot read: {e}")),
    }
}

/// Judge changelog bytes: an object of `"<version>": [ {type, description}, ... ]`.
pub(crate) fn judge_changelog(bytes: &[u8]) -> ChangelogFinding {
    let json: serde_json::Value = match serde_json::from_slice(bytes) {
        Ok(v) => v,
        Err(e) => return ChangelogFinding::Malformed(format!("not valid JSON: {e}")),
    };
    let Some(map) = json.as_object() else {
        return ChangelogFinding::Malformed("not a JSON object of versions".into());
    };
    let mut versions = 0;
    let mut found = Vec::new();
    for (key, entries) in map {
        let (Some(version), Some(list)) = (Version::parse(key), entries.as_array()) else {
            continue;
        };
        versions += 1;
        found.extend(
            list.iter()
                .filter_map(|e| advertising(key, e))
                .map(|e| (version.clone(), e)),
        );
    }
    found.sort_by(|a, b| a.0.cmp(&b.0));
    match versions {
        0 => ChangelogFinding::Malformed("no version entries".into()),
        _ if found.is_empty() => ChangelogFinding::Silent { versions },
        _ => ChangelogFinding::Advertises(found),
    }
}

fn advertising(key: &str, entry: &serde_json::Value) -> Option<DecidingEntry> {
    let description = entry.get("description")?.as_str()?;
    let kind = entry.get("type").and_then(|t| t.as_str()).unwrap_or("");
    if kind.eq_ignore_ascii_case("removed") {
        return None;
    }
    let normalized = normalize(description);
    ADVERTISING_PHRASES
        .iter()
        .all(|p| normalized.contains(p))
        .then(|| DecidingEntry {
            version: key.to_string(),
            kind: kind.to_string(),
            description: description.to_string(),
        })
}

fn normalize(text: &str) -> String {
    let lowered: String = text
        .chars()
        .map(|c| {
            if c.is_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                ' '
            }
        })
        .collect();
    lowered.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Which Copilot would run, and why that one.
#[derive(Debug, Clone, Serialize)]
pub struct Selection {
    pub version: Option<String>,
    /// `hint` (what hooks saw running), `dist-dir`, `newest-installed`, or `none`.
    pub chosen_by: String,
}

/// The full answer `--preview` and `resume-policy` print.
#[derive(Debug, Clone, Serialize)]
pub struct ResumeAssessment {
    pub agent: String,
    pub selected: Selection,
    pub hint: RunningCopilotHint,
    pub installed: Vec<Installed>,
    pub changelog: Option<PathBuf>,
    pub deciding_entry: Option<DecidingEntry>,
    pub policy: Policy,
    pub reason: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream: Option<StreamSize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Whether the command resumes natively (false: start fresh with the packet).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resume_is_safe: Option<bool>,
}

/// The session's stream against the legacy ceiling.
#[derive(Debug, Clone, Serialize)]
pub struct StreamSize {
    pub bytes: u64,
    /// UTF-16 code units (what a JavaScript string of the file holds).
    pub chars: u64,
    /// `exact` when counted, `upper-bound` when the byte count was used
    /// (a UTF-8 file never has more UTF-16 units than bytes).
    pub chars_counted: String,
    pub ceiling: u64,
    pub over_ceiling: bool,
}

impl StreamSize {
    pub fn new(bytes: u64, exact_units: Option<u64>) -> StreamSize {
        let (chars, how) = match exact_units {
            Some(u) => (u, "exact"),
            None => (bytes, "upper-bound"),
        };
        StreamSize {
            bytes,
            chars,
            chars_counted: how.into(),
            ceiling: LEGACY_CEILING_CHARS,
            over_ceiling: chars > LEGACY_CEILING_CHARS,
        }
    }
}

/// Choose the version that would run and judge it.
pub(crate) fn assess(hint: RunningCopilotHint, installed: Vec<Installed>) -> ResumeAssessment {
    let selected = select(&hint, &installed);
    let (changelog, finding) = pick_changelog(&selected, &installed);
    let (policy, reason, deciding_entry) = decide(&selected, changelog.as_deref(), finding);
    ResumeAssessment {
        agent: "copilot".into(),
        selected,
        hint,
        installed,
        changelog,
        deciding_entry,
        policy,
        reason,
        stream: None,
        command: None,
        resume_is_safe: None,
    }
}

fn select(hint: &RunningCopilotHint, installed: &[Installed]) -> Selection {
    if let Some(v) = &hint.binary_version {
        return Selection {
            version: Some(v.clone()),
            chosen_by: "hint".into(),
        };
    }
    if let Some(dist) = installed
        .iter()
        .find(|i| i.place == crate::agents::copilot::package::Place::DistDir && i.version.is_some())
    {
        return Selection {
            version: dist.version.clone(),
            chosen_by: "dist-dir".into(),
        };
    }
    let newest = installed.iter().filter_map(|i| i.parsed_version()).max();
    match newest {
        Some(v) => Selection {
            version: Some(v.to_string()),
            chosen_by: "newest-installed".into(),
        },
        None => Selection {
            version: None,
            chosen_by: "none".into(),
        },
    }
}

/// The selected version's own changelog when installed; else the changelog of
/// the newest package that has one (its history covers older versions too).
fn pick_changelog(
    selected: &Selection,
    installed: &[Installed],
) -> (Option<PathBuf>, Option<ChangelogFinding>) {
    let wanted = selected.version.as_deref().and_then(Version::parse);
    let with_log = || installed.iter().filter(|i| i.changelog.is_some());
    let exact = wanted
        .as_ref()
        .and_then(|w| with_log().find(|i| i.parsed_version().as_ref() == Some(w)));
    let chosen =
        exact.or_else(|| with_log().max_by(|a, b| a.parsed_version().cmp(&b.parsed_version())));
    match chosen.and_then(|i| i.changelog.clone()) {
        Some(path) => {
            let finding = read_changelog(&path);
            (Some(path), Some(finding))
        }
        None => (None, None),
    }
}

type Decision = (Policy, String, Option<DecidingEntry>);

fn decide(
    selected: &Selection,
    changelog: Option<&Path>,
    finding: Option<ChangelogFinding>,
) -> Decision {
    let legacy = |reason: String| (Policy::LegacyCeiling, reason, None);
    let Some(text) = selected.version.as_deref() else {
        return legacy("no installed Copilot package or running-version hint was found".into());
    };
    let Some(version) = Version::parse(text) else {
        return legacy(format!(
            "the selected version {text:?} is not a valid version"
        ));
    };
    let Some(path) = changelog else {
        return legacy(format!(
            "no changelog.json was found for Copilot {text} or any installed package"
        ));
    };
    match finding {
        None => legacy(format!("{} could not be read", path.display())),
        Some(ChangelogFinding::Malformed(why)) => {
            legacy(format!("{} is malformed: {why}", path.display()))
        }
        Some(ChangelogFinding::Silent { versions }) => legacy(format!(
            "{} ({versions} versions) has no entry advertising reliable very-large-session resume",
            path.display()
        )),
        Some(ChangelogFinding::Advertises(entries)) => judge_version(&version, &entries),
    }
}

/// The deciding entry is the first release at or below `version` that
/// advertises the capability (a prerelease entry decides only for prereleases
/// below every advertising release).
fn judge_version(version: &Version, entries: &[(Version, DecidingEntry)]) -> Decision {
    let at_or_below = || entries.iter().filter(|(v, _)| v <= version);
    let deciding = at_or_below()
        .find(|(v, _)| !v.is_prerelease())
        .or_else(|| at_or_below().next());
    if let Some((needed, entry)) = deciding {
        let reason = format!(
            "Copilot {version} is at or above {needed}, whose changelog entry advertises reliable very-large-session resume"
        );
        return (Policy::Native, reason, Some(entry.clone()));
    }
    let (first, entry) = entries
        .iter()
        .find(|(v, _)| !v.is_prerelease())
        .or(entries.first())
        .expect("an advertising finding holds at least one entry");
    let reason = format!(
        "Copilot {version} is older than {first}, the first version whose changelog advertises reliable very-large-session resume"
    );
    (Policy::LegacyCeiling, reason, Some(entry.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const ADVERT: &str = "Resume very large local sessions and continue with new prompts reliably.";

    fn log(entries: &[(&str, &str)]) -> Vec<u8> {
        let mut map = serde_json::Map::new();
        for (v, d) in entries {
            map.insert(
                v.to_string(),
                serde_json::json!([{ "type": "fixed", "description": d }]),
            );
        }
        serde_json::to_vec(&map).expect("a map serializes")
    }

    #[test]
    fn earliest_advertising_version_decides() {
        let bytes = log(&[
            ("1.0.88", ADVERT),
            ("1.0.87-0", ADVERT),
            ("1.0.87", ADVERT),
            ("1.0.86", "other"),
        ]);
        let ChangelogFinding::Advertises(entries) = judge_changelog(&bytes) else {
            panic!("should advertise")
        };
        let at = |v: &str| judge_version(&Version::parse(v).expect("valid"), &entries);
        assert_eq!(at("1.0.102").2.expect("entry").version, "1.0.87");
        assert_eq!(at("1.0.87-1").2.expect("entry").version, "1.0.87-0");
        assert_eq!(at("1.0.87-1").0, Policy::Native);
        assert_eq!(at("1.0.86").0, Policy::LegacyCeiling);
        assert_eq!(at("1.0.87-0").0, Policy::Native);
    }

    #[test]
    fn wording_is_matched_loosely_but_explicitly() {
        let bytes = log(&[(
            "1.0.87",
            "resume  VERY large local sessions, and continue with new prompts reliably",
        )]);
        assert!(matches!(
            judge_changelog(&bytes),
            ChangelogFinding::Advertises(_)
        ));
        let bytes = log(&[(
            "1.0.88",
            "Resuming large local sessions keeps transcript memory bounded.",
        )]);
        assert!(matches!(
            judge_changelog(&bytes),
            ChangelogFinding::Silent { .. }
        ));
    }

    #[test]
    fn malformed_is_reported() {
        assert!(matches!(
            judge_changelog(b"{not json"),
            ChangelogFinding::Malformed(_)
        ));
        assert!(matches!(
            judge_changelog(b"[1,2]"),
            ChangelogFinding::Malformed(_)
        ));
    }

    #[test]
    fn prerelease_below_a_release_only_entry_stays_legacy() {
        let entry = DecidingEntry {
            version: "1.0.87".into(),
            kind: "fixed".into(),
            description: ADVERT.into(),
        };
        let entries = [(Version::parse("1.0.87").expect("valid"), entry)];
        let v = Version::parse("1.0.87-3").expect("valid");
        assert_eq!(judge_version(&v, &entries).0, Policy::LegacyCeiling);
        let v = Version::parse("1.0.87").expect("valid");
        assert_eq!(judge_version(&v, &entries).0, Policy::Native);
    }
}
