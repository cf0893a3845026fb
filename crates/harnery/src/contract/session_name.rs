//! How a session is named on the command line: its full id, a unique
//! prefix of it, or `adapter/id` (also with a prefix) when one id exists
//! under both agents; `--adapter` narrows the same way. This is the one
//! rule every command that takes a session uses; each command only says
//! which sessions it can see (the ledger's, the intake spool's, an
//! agent's own records) and hands them to [`pick`].
//!
//! A name never invents a session: no match is [`NameError::Unknown`],
//! several are [`NameError::Ambiguous`] with the candidates listed.

use super::{AdapterId, SessionRef};

/// How many candidates an ambiguous name lists before it says "and N more".
const LISTED: usize = 12;

/// Why a name did not pick exactly one session.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    #[error("no session matches {name:?}{}", where_looked(looked))]
    Unknown { name: String, looked: String },
    #[error(
        "{name:?} matches {} sessions: {}; give more of the id, or adapter/id (--adapter)",
        candidates.len(),
        listing(candidates)
    )]
    Ambiguous {
        name: String,
        candidates: Vec<SessionRef>,
    },
}

fn where_looked(looked: &str) -> String {
    match looked {
        "" => String::new(),
        l => format!(" ({l})"),
    }
}

fn listing(candidates: &[SessionRef]) -> String {
    let mut shown: Vec<String> = candidates
        .iter()
        .take(LISTED)
        .map(|s| format!("{}/{}", s.adapter, s.session_id))
        .collect();
    if candidates.len() > LISTED {
        shown.push(format!("and {} more", candidates.len() - LISTED));
    }
    shown.join(", ")
}

/// The ids a name may be a prefix of: the name itself, and the id part of
/// `adapter/id` (for a store that looks candidates up by prefix).
pub(crate) fn id_parts(name: &str) -> Vec<&str> {
    let mut parts = vec![name];
    if let Some((_, id)) = split_adapter(name) {
        parts.push(id);
    }
    parts
}

fn split_adapter(name: &str) -> Option<(AdapterId, &str)> {
    let (adapter, id) = name.split_once('/')?;
    Some((AdapterId::parse(adapter)?, id))
}

/// The one session `name` picks among `candidates`, under `adapter` when
/// given. An exact id wins over a prefix; an id that is exact under two
/// adapters is ambiguous (name one with `adapter/id` or `--adapter`).
/// `looked` says where the candidates came from, for the error.
pub(crate) fn pick(
    name: &str,
    adapter: Option<AdapterId>,
    candidates: impl IntoIterator<Item = SessionRef>,
    looked: &str,
) -> Result<SessionRef, NameError> {
    let mut all: Vec<SessionRef> = candidates
        .into_iter()
        .filter(|s| adapter.is_none_or(|a| s.adapter == a))
        .collect();
    all.sort();
    all.dedup();
    let mut tries = vec![(None, name)];
    if let Some((a, id)) = split_adapter(name)
        && adapter.is_none_or(|flag| flag == a)
    {
        tries.push((Some(a), id));
    }
    for (under, id) in tries {
        if let Some(found) = pick_id(&all, under, id, name)? {
            return Ok(found);
        }
    }
    Err(NameError::Unknown {
        name: name.into(),
        looked: looked.into(),
    })
}

/// The session `id` names under `under`: exact first, then by prefix.
fn pick_id(
    all: &[SessionRef],
    under: Option<AdapterId>,
    id: &str,
    name: &str,
) -> Result<Option<SessionRef>, NameError> {
    if id.is_empty() {
        return Ok(None);
    }
    let of = |s: &&SessionRef| under.is_none_or(|a| s.adapter == a);
    let exact: Vec<SessionRef> = all
        .iter()
        .filter(of)
        .filter(|s| s.session_id == id)
        .cloned()
        .collect();
    let matched = match exact.len() {
        0 => all
            .iter()
            .filter(of)
            .filter(|s| s.session_id.starts_with(id))
            .cloned()
            .collect(),
        _ => exact,
    };
    match matched.len() {
        0 => Ok(None),
        1 => Ok(matched.into_iter().next()),
        _ => Err(NameError::Ambiguous {
            name: name.into(),
            candidates: matched,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use AdapterId::*;

    fn s(adapter: AdapterId, id: &str) -> SessionRef {
        SessionRef {
            adapter,
            session_id: id.into(),
        }
    }

    fn known() -> Vec<SessionRef> {
        vec![
            s(ClaudeCode, "abc-1"),
            s(ClaudeCode, "abd-2"),
            s(Copilot, "abd-2"),
            s(Copilot, "xyz"),
            s(Copilot, "xy"),
        ]
    }

    #[test]
    fn a_unique_prefix_or_an_exact_id_picks_one() {
        assert_eq!(
            pick("abc", None, known(), "").unwrap(),
            s(ClaudeCode, "abc-1")
        );
        // An exact id wins over the longer id it is a prefix of.
        assert_eq!(pick("xy", None, known(), "").unwrap(), s(Copilot, "xy"));
        assert_eq!(
            pick("copilot/abd", None, known(), "").unwrap(),
            s(Copilot, "abd-2")
        );
        assert_eq!(
            pick("abd", Some(ClaudeCode), known(), "").unwrap(),
            s(ClaudeCode, "abd-2")
        );
    }

    #[test]
    fn an_ambiguous_name_lists_its_candidates() {
        let err = pick("ab", None, known(), "").unwrap_err();
        assert_eq!(
            err.to_string(),
            "\"ab\" matches 3 sessions: claude-code/abc-1, claude-code/abd-2, copilot/abd-2; \
             give more of the id, or adapter/id (--adapter)"
        );
        let NameError::Ambiguous { candidates, .. } = pick("abd-2", None, known(), "").unwrap_err()
        else {
            panic!("one id under two adapters is ambiguous");
        };
        assert_eq!(candidates.len(), 2);
    }

    #[test]
    fn no_match_is_unknown_and_an_adapter_never_widens() {
        let err = pick("q", None, known(), "ledger and spool").unwrap_err();
        assert_eq!(
            err.to_string(),
            "no session matches \"q\" (ledger and spool)"
        );
        assert!(pick("abc", Some(Copilot), known(), "").is_err());
        assert!(pick("", None, known(), "").is_err());
        assert!(pick("claude-code/xyz", None, known(), "").is_err());
    }
}
