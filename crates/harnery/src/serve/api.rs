//! The JSON API: the same fields as the command line's `--json`, from the
//! same serializers. `/api/sessions` is the array of the lines `harnery
//! sessions --json` prints; `/api/sessions/{id}` is `harnery show --json`;
//! `/api/usage?by=…` is `harnery usage --json --by …`; `/api/health` is the
//! array of the lines `harnery health --json` prints; `/api/search?q=…` is
//! the array of the lines `harnery search --json` prints; `/api/last-seq`
//! is the newest ledger row (what the pages poll).

use crate::report::session_list::SessionFilter;
use crate::report::usage::GroupBy;
use crate::report::usage_doc::UsageDoc;
use crate::search::Hit;

use super::data::{ReadError, Source};

pub(crate) fn sessions(
    source: &Source,
    filter: &SessionFilter,
) -> Result<serde_json::Value, ReadError> {
    let listed = source.sessions(filter)?;
    Ok(listed.iter().map(|l| l.to_json(false)).collect())
}

pub(crate) fn session(source: &Source, name: &str) -> Result<serde_json::Value, ReadError> {
    let detail = source.session(name, 0)?;
    Ok(serde_json::to_value(&detail.timeline).expect("a timeline serializes"))
}

/// Usage grouped by `by` (`session` when not given, as the command).
pub(crate) fn usage(source: &Source, by: GroupBy) -> Result<serde_json::Value, ReadError> {
    let (tally, prices) = source.usage_by(by)?;
    Ok(UsageDoc::of(&tally).to_json(&prices))
}

pub(crate) fn health(source: &Source) -> Result<serde_json::Value, ReadError> {
    let report = source.health()?;
    Ok(report
        .conditions
        .iter()
        .map(|c| report.condition_json(c))
        .collect())
}

/// Search hits, each as the serializer of `harnery search --json` writes it.
pub(crate) fn hits(hits: &[Hit]) -> serde_json::Value {
    serde_json::to_value(hits).expect("a hit serializes")
}

/// The newest row; with `session`, that session's event count and last
/// event time too (what a session page polls).
pub(crate) fn last_seq(
    source: &Source,
    session: Option<&str>,
) -> Result<serde_json::Value, ReadError> {
    Ok(serde_json::to_value(source.last_seq(session)?).expect("a seq serializes"))
}
