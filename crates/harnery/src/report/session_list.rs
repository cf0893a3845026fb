//! The sessions `harnery sessions` lists and `harnery serve` shows: newest
//! activity first, kept by time, agent, evidence class and project, classified as wholes,
//! each with the state of its agent's own record and the session it was
//! restored from; and each as the JSON line `sessions --json` prints (one
//! serializer for both). A resumed session's turns and spans leave out
//! what its resumes superseded.

use crate::contract::AdapterId;
use crate::home::Home;
use crate::ledger::SessionSummary;
use crate::report::audit::{AuditClass, Classification};
use crate::report::epochs::{Epochs, classify_whole};
use crate::report::record_state::record_problem;
use crate::report::source::{SourceError, closed_sessions};
use crate::report::superseded::{RestoredFrom, restored_from, superseded};

/// Which sessions a listing keeps, and which page of them.
#[derive(Debug, Clone, Default)]
pub struct SessionFilter {
    /// Only sessions with an event at or after this time (Unix ns).
    pub since: Option<i64>,
    /// Only sessions that started at or before this time (Unix ns).
    pub until: Option<i64>,
    pub adapter: Option<AdapterId>,
    pub class: Option<AuditClass>,
    /// Skip this many kept sessions (the newest) first.
    pub skip: usize,
    /// At most this many sessions after `skip`.
    pub limit: Option<usize>,
    /// Only sessions of this project: its root exactly, or a trailing
    /// part of it on a `/` boundary (`harnery`, `src/harnery`). See
    /// [`project_matches`].
    pub project: Option<String>,
}

impl SessionFilter {
    /// Whether a session's combined summary passes the time and adapter
    /// filters (decided before it is classified).
    fn keeps(&self, s: &SessionSummary) -> bool {
        self.since.is_none_or(|t| s.last_unix_ns >= t)
            && self.until.is_none_or(|t| s.first_unix_ns <= t)
            && self.adapter.is_none_or(|a| s.session.adapter == a)
            && self.project.as_deref().is_none_or(|want| {
                s.project
                    .as_deref()
                    .is_some_and(|p| project_matches(p, want))
            })
    }

    fn keeps_class(&self, c: &Classification) -> bool {
        self.class.is_none_or(|want| c.class == want)
    }
}

/// Whether a session's `project` is the one `want` names: the same root,
/// or `want` is a trailing part of it on a `/` boundary (`harnery` and
/// `src/harnery` both name `/home/u/src/harnery`; `arnery` does not).
/// Trailing slashes do not count.
pub fn project_matches(project: &str, want: &str) -> bool {
    let project = project.trim_end_matches('/');
    let want = want.trim_end_matches('/');
    if want.is_empty() {
        return project.is_empty();
    }
    project == want
        || project
            .strip_suffix(want)
            .is_some_and(|head| head.ends_with('/') && !want.starts_with('/'))
}

/// A project path's last two parts (`src/harnery`), as the pages name it.
pub fn short_project(path: &str) -> String {
    let parts: Vec<&str> = path.trim_end_matches('/').rsplit('/').take(2).collect();
    parts.into_iter().rev().collect::<Vec<_>>().join("/")
}

/// One listed session: its combined summary, class, and the epochs it spans.
#[derive(Debug, Clone)]
pub struct Listed {
    pub summary: SessionSummary,
    pub class: Classification,
    pub epochs: Vec<String>,
    /// The session's own record problem, where there is one (`removed`:
    /// the agent deleted it; harnery holds the only copy).
    pub record: Option<String>,
    /// The session and checkpoint `restore --apply` started it from.
    pub restored_from: Option<RestoredFrom>,
}

impl Listed {
    /// Whether the agent deleted the session's own record after harnery
    /// read it (harnery holds the only copy).
    pub fn record_removed(&self) -> bool {
        self.record.as_deref() == Some(super::record_state::REMOVED)
    }

    /// The line `harnery sessions --json` prints for this session.
    pub fn to_json(&self, tagged: bool) -> serde_json::Value {
        let mut v = serde_json::to_value(&self.summary).expect("a summary serializes");
        v["eligibility"] = serde_json::to_value(&self.class).expect("a class serializes");
        if tagged {
            v["epochs"] = serde_json::to_value(&self.epochs).expect("labels serialize");
        }
        if let Some(record) = &self.record {
            v["record"] = record.as_str().into();
        }
        if let Some(from) = &self.restored_from {
            v["restored_from"] = serde_json::to_value(from).expect("a link serializes");
        }
        v
    }
}

/// The sessions `filter` keeps, newest first, classified as wholes; a
/// session is classified only once the cheaper filters kept it, and the
/// listing stops at the filter's page. What could not be read is named on
/// stderr under `command` and passed over.
pub fn list(
    home: &Home,
    epochs: &Epochs,
    command: &str,
    filter: &SessionFilter,
) -> Result<Vec<Listed>, SourceError> {
    let closed = closed_sessions(home)?;
    let mut out = Vec::new();
    let mut skipped = 0;
    let mut failed = 0;
    let candidates = epochs.newest_first(command, &mut failed);
    for whole in candidates.into_iter().filter(|w| filter.keeps(&w.summary)) {
        if filter.limit.is_some_and(|n| out.len() >= n) {
            break;
        }
        let class = classify_whole(
            command,
            &whole.session,
            &whole.parts,
            closed.get(&whole.session),
            &mut failed,
        );
        if !filter.keeps_class(&class) {
            continue;
        }
        if skipped < filter.skip {
            skipped += 1;
            continue;
        }
        // The newest part holds the record cursor finalize left last.
        let record = match whole.parts.last() {
            Some(part) => record_problem(&part.ledger, &whole.session)?,
            None => None,
        };
        let mut summary = whole.summary;
        for part in &whole.parts {
            superseded(&part.ledger, &whole.session)?.leave_out(&mut summary);
        }
        // The link is the session's first checkpoint, in its first part.
        let restored_from = match whole.parts.first() {
            Some(part) => restored_from(&part.ledger, &whole.session)?,
            None => None,
        };
        out.push(Listed {
            summary,
            class,
            epochs: whole.parts.iter().map(|e| e.label.clone()).collect(),
            record,
            restored_from,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::{project_matches, short_project};

    #[test]
    fn a_project_is_named_by_its_last_two_parts() {
        assert_eq!(short_project("/home/u/src/harnery/"), "src/harnery");
        assert_eq!(short_project("/harnery"), "/harnery");
        assert_eq!(short_project("harnery"), "harnery");
    }

    #[test]
    fn a_project_matches_by_root_or_trailing_name() {
        let p = "/home/u/src/harnery";
        for want in [
            p,
            "/home/u/src/harnery/",
            "harnery",
            "src/harnery",
            "u/src/harnery",
        ] {
            assert!(project_matches(p, want), "{want}");
        }
        for want in [
            "arnery",
            "/src/harnery",
            "src",
            "/home/u/src",
            "",
            "harnery2",
        ] {
            assert!(!project_matches(p, want), "{want}");
        }
    }
}
