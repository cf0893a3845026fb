//! A hit's snippet: a window of its text around the first match, on one
//! line, with the byte ranges of every match inside it. Matching here
//! only marks what FTS5 already found (case-insensitive; a word or a
//! prefix at a word boundary, a substring anywhere); a match the
//! tokenizer made that this cannot see (a letter without its accent) is
//! simply not marked, and the window then starts at the text's start.

use serde::{Deserialize, Serialize};

use super::query::Needle;

/// Characters kept before the first match.
const BEFORE: usize = 60;
/// Characters a snippet shows at most (ellipses aside).
const WIDTH: usize = 200;
const ELLIPSIS: &str = "…";

/// A snippet and where its matches are, as byte ranges `[start, end)`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Snippet {
    pub text: String,
    pub matches: Vec<[usize; 2]>,
}

/// The snippet of `text` for `needles`.
pub(crate) fn snippet(text: &str, needles: &[Needle]) -> Snippet {
    let found = all_matches(text, needles);
    let first = found.first().map_or(0, |m| m[0]);
    let start = back_chars(text, first, BEFORE);
    let end = forward_chars(text, start, WIDTH).max(found.first().map_or(0, |m| m[1]));
    let lead = if start > 0 { ELLIPSIS } else { "" };
    let mut out = String::with_capacity(end - start + 8);
    out.push_str(lead);
    // One byte for one byte, so the ranges stay where they were.
    out.extend(text[start..end].chars().map(|c| match c {
        '\n' | '\r' | '\t' => ' ',
        c => c,
    }));
    if end < text.len() {
        out.push_str(ELLIPSIS);
    }
    let matches = found
        .into_iter()
        .filter(|m| m[0] >= start && m[1] <= end)
        .map(|m| [m[0] - start + lead.len(), m[1] - start + lead.len()])
        .collect();
    Snippet { text: out, matches }
}

/// Whether `needle` occurs in `text` (as [`snippet`] marks it).
pub(crate) fn occurs(text: &str, needle: &Needle) -> bool {
    !find_all(text, needle).is_empty()
}

/// Every match of every needle in `text`, in order, overlaps merged.
fn all_matches(text: &str, needles: &[Needle]) -> Vec<[usize; 2]> {
    let mut found: Vec<[usize; 2]> = needles.iter().flat_map(|n| find_all(text, n)).collect();
    found.sort_unstable();
    let mut merged: Vec<[usize; 2]> = Vec::with_capacity(found.len());
    for m in found {
        match merged.last_mut() {
            Some(last) if m[0] <= last[1] => last[1] = last[1].max(m[1]),
            _ => merged.push(m),
        }
    }
    merged
}

/// Where `needle` occurs in `text`, case-insensitively, honouring its
/// word boundaries.
fn find_all(text: &str, needle: &Needle) -> Vec<[usize; 2]> {
    let want: Vec<char> = needle.text.chars().flat_map(char::to_lowercase).collect();
    let mut out = Vec::new();
    if want.is_empty() {
        return out;
    }
    let mut prev: Option<char> = None;
    for (i, c) in text.char_indices() {
        let at_start = !needle.word_start || !prev.is_some_and(char::is_alphanumeric);
        prev = Some(c);
        if !at_start {
            continue;
        }
        let Some(end) = match_at(text, i, &want) else {
            continue;
        };
        let next = text[end..].chars().next();
        if needle.word_end && next.is_some_and(char::is_alphanumeric) {
            continue;
        }
        out.push([
            i,
            if needle.word_start {
                word_end(text, end)
            } else {
                end
            },
        ]);
    }
    out
}

/// A prefix is marked to the end of the word it starts.
fn word_end(text: &str, from: usize) -> usize {
    text[from..]
        .char_indices()
        .find(|(_, c)| !c.is_alphanumeric())
        .map_or(text.len(), |(i, _)| from + i)
}

/// The end of `want` (lower-cased) read from byte `at` of `text`, if it
/// is there.
fn match_at(text: &str, at: usize, want: &[char]) -> Option<usize> {
    let mut wanted = want.iter();
    let mut next = wanted.next();
    for (i, c) in text[at..].char_indices() {
        for lower in c.to_lowercase() {
            match next {
                Some(&w) if w == lower => next = wanted.next(),
                _ => return None,
            }
        }
        if next.is_none() {
            return Some(at + i + c.len_utf8());
        }
    }
    None
}

/// The byte position `n` characters before `at` (or 0).
fn back_chars(text: &str, at: usize, n: usize) -> usize {
    text[..at]
        .char_indices()
        .rev()
        .nth(n.saturating_sub(1))
        .map_or(0, |(i, _)| i)
}

/// The byte position `n` characters after `at` (or the end).
fn forward_chars(text: &str, at: usize, n: usize) -> usize {
    text[at..]
        .char_indices()
        .nth(n)
        .map_or(text.len(), |(i, _)| at + i)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::query::{needles, parse};

    fn marked(s: &Snippet) -> Vec<&str> {
        s.matches.iter().map(|[a, b]| &s.text[*a..*b]).collect()
    }

    #[test]
    fn words_are_marked_whole_and_substrings_anywhere() {
        let s = snippet(
            "Run cargo test; reran the Runner\nthen rm -rf target",
            &needles(&parse("run \"rm -rf\"").unwrap()),
        );
        assert_eq!(marked(&s), vec!["Run", "rm -rf"]);
        assert_eq!(
            s.text,
            "Run cargo test; reran the Runner then rm -rf target"
        );
        let s = snippet("useEffect(() => {})", &needles(&parse("*effect").unwrap()));
        assert_eq!(marked(&s), vec!["Effect"]);
        let s = snippet("finalize finalized", &needles(&parse("finali*").unwrap()));
        assert_eq!(marked(&s), vec!["finalize", "finalized"]);
    }

    #[test]
    fn a_long_text_is_cut_around_the_first_match() {
        let text = format!("{}needle{}", "a ".repeat(500), " b".repeat(500));
        let s = snippet(&text, &needles(&parse("needle").unwrap()));
        assert!(s.text.starts_with(ELLIPSIS) && s.text.ends_with(ELLIPSIS));
        assert_eq!(marked(&s), vec!["needle"]);
        assert!(s.text.chars().count() <= WIDTH + 2);
    }

    #[test]
    fn no_visible_match_shows_the_start() {
        let s = snippet("café au lait", &needles(&parse("cafe").unwrap()));
        assert_eq!(s.text, "café au lait");
        assert!(s.matches.is_empty());
    }

    #[test]
    fn ranges_are_byte_ranges_of_the_snippet() {
        let s = snippet("ééé Straße straße", &needles(&parse("straße").unwrap()));
        assert_eq!(marked(&s), vec!["Straße", "straße"]);
    }
}
