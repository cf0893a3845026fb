//! The view: a session drawn as one self-contained HTML page (`harnery
//! view`), and an index of sessions linking to such pages.
//!
//! A page carries its style, its drawing and a small script inline and
//! fetches nothing, so it opens offline and can be mailed or archived as
//! one file. It shows only what the ledger holds: a recovered span has no
//! length (its upper bound is drawn as such, labelled as not a duration),
//! an open span runs to the session's last event with an open end, and a
//! turn shows tokens only where the ledger recorded them.
//!
//! - [`model`]: the picture as data, from a session's rows.
//! - [`page`]: one session's page; [`index`]: the index page.
//! - [`html`]: escaping (all ledger text goes through it) and the document.
//! - [`pages`]: the one part that reads: a session's rows across the
//!   selected epochs, and the index with every page written beside it.

pub mod html;
pub(crate) mod index;
pub(crate) mod model;
pub(crate) mod page;
pub mod pages;

pub(crate) use model::{PartRows, SessionView, build};

/// The characters of a session id kept in a file name as they are; any
/// other becomes `_`, so an id can never name a path elsewhere.
fn file_safe(id: &str) -> String {
    id.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// How many characters of a session id name its page by default.
pub(crate) const FILE_PREFIX_CHARS: usize = 8;

/// The default page file of a session: `<id prefix>.html`.
pub(crate) fn page_file(session_id: &str) -> String {
    let prefix: String = session_id.chars().take(FILE_PREFIX_CHARS).collect();
    format!("{}.html", file_safe(&prefix))
}

/// Page file names for the sessions of an index, one each: the default
/// name where it is unique among them, else one made from the adapter and
/// the whole id.
pub(crate) fn page_files(sessions: &[crate::contract::SessionRef]) -> Vec<String> {
    let defaults: Vec<String> = sessions.iter().map(|s| page_file(&s.session_id)).collect();
    let mut counts = std::collections::HashMap::new();
    for d in &defaults {
        *counts.entry(d.as_str()).or_insert(0) += 1;
    }
    sessions
        .iter()
        .zip(&defaults)
        .map(|(s, d)| match counts[d.as_str()] {
            1 => d.clone(),
            _ => format!("{}-{}.html", s.adapter.as_str(), file_safe(&s.session_id)),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::{AdapterId, SessionRef};

    fn s(adapter: AdapterId, id: &str) -> SessionRef {
        SessionRef {
            adapter,
            session_id: id.into(),
        }
    }

    #[test]
    fn page_files_are_short_unique_and_stay_in_their_directory() {
        assert_eq!(page_file("9c520b8b-ad43-42aa"), "9c520b8b.html");
        assert_eq!(page_file("../../x"), "______x.html");
        let files = page_files(&[
            s(AdapterId::ClaudeCode, "abcdefgh-1"),
            s(AdapterId::Copilot, "abcdefgh-2"),
            s(AdapterId::Copilot, "12345678-3"),
        ]);
        assert_eq!(
            files,
            [
                "claude-code-abcdefgh-1.html",
                "copilot-abcdefgh-2.html",
                "12345678.html"
            ]
        );
    }
}
