//! The sessions `harnery sessions` lists and `harnery serve` shows: newest
//! activity first, kept by time, agent, evidence class and project, classified as wholes,
//! each with the state of its agent's own record and the session it was
//! restored from; and each as the JSON line `sessions --json` prints (one
//! serializer for both). A resumed session's turns and spans leave out
//! what its resumes superseded.

use crate::contract::AdapterId;
use crate::home::Home;
use crate::ledger::{ListFacts, SessionSummary};
use crate::report::audit::{AuditClass, Classification};
use crate::report::epochs::{Epochs, WholeSession, warn};
use crate::report::record_state::record_problem;
use crate::report::source::{Closed, SourceError, closed_sessions};
use crate::report::stored_reasons::part_reasons;
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
    /// Where its title came from: `record` (the agent's own title) or
    /// `prompt` (its first prompt); `None` with no title.
    pub title_source: Option<String>,
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
        v["title_source"] = self.title_source.as_deref().into();
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
        let class = classify(command, &whole, closed.get(&whole.session), &mut failed);
        if !filter.keeps_class(&class) {
            continue;
        }
        if skipped < filter.skip {
            skipped += 1;
            continue;
        }
        out.push(listed(whole, class)?);
    }
    Ok(out)
}

/// A session kept by the filters, as the list shows it: each part's
/// superseded ranges left out of its counts, its record's state and the
/// session it was restored from, from what its rows keep where they keep
/// it, else from its events and producer state.
fn listed(whole: WholeSession, class: Classification) -> Result<Listed, SourceError> {
    let parts = || whole.parts.iter().zip(&whole.kept);
    // The newest part holds the record cursor finalize left last.
    let record = match parts().next_back() {
        Some((
            _,
            ListFacts {
                record: Some(kept), ..
            },
        )) => kept.clone(),
        Some((part, _)) => record_problem(&part.ledger, &whole.session)?,
        None => None,
    };
    let mut summary = whole.summary.clone();
    for (part, kept) in parts() {
        // No resume of this part supersedes a range.
        if kept.superseding == Some(0) {
            continue;
        }
        superseded(&part.ledger, &whole.session)?.leave_out(&mut summary);
    }
    // The link is the session's first checkpoint, in its first part.
    let restored_from = match parts().next() {
        Some((
            _,
            ListFacts {
                restored_from: Some(kept),
                ..
            },
        )) => kept.as_deref().and_then(RestoredFrom::parse),
        Some((part, _)) => restored_from(&part.ledger, &whole.session)?,
        None => None,
    };
    Ok(Listed {
        summary,
        class,
        epochs: whole.parts.iter().map(|e| e.label.clone()).collect(),
        record,
        restored_from,
        title_source: whole.title_source,
    })
}

/// A session's classification as a whole (as `epochs::classify_whole`
/// gives it): each part's reasons from its row where no resume of it
/// supersedes a range, else from its events; and every reason an
/// advance's closure recorded against it. A part that cannot be read is
/// reported (as `command`) and counted in `failed`.
fn classify(
    command: &str,
    whole: &WholeSession,
    closed: Option<&Closed>,
    failed: &mut usize,
) -> Classification {
    let mut c = Classification::eligible();
    for (part, kept) in whole.parts.iter().zip(&whole.kept) {
        let sessions = part.ledger.sessions();
        let reasons = match (kept.superseding, kept.audit_flags) {
            (Some(0), Some(flags)) => {
                let any_open = kept.open_spans != Some(0);
                sessions.reasons_with(&whole.session, flags, any_open)
            }
            _ => part_reasons(&part.ledger, &whole.session),
        };
        match reasons {
            Ok(reasons) => c.add_reasons(reasons),
            Err(e) => {
                warn(command, &part.label, &e.to_string());
                *failed += 1;
            }
        }
    }
    if let Some(closed) = closed {
        c.add_reasons(closed.reasons.clone());
    }
    c
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
