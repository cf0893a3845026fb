//! The query language of `harnery search`, and its translation into the
//! two FTS5 tables' own syntax. The user's text is never handed to FTS5
//! as it is: it is split into terms here, each term is quoted as an FTS5
//! string, and only the operators written below reach SQLite, so no
//! query a user types can be an FTS5 syntax error or reach a column,
//! `NEAR` or `NOT` they did not ask for.
//!
//! | written            | means                                                   |
//! |--------------------|---------------------------------------------------------|
//! | `word`             | the whole word, any case (letters and digits only)      |
//! | `pre*`             | a word starting with `pre`                              |
//! | `"two words"`      | the words next to each other                            |
//! | `src/ledger`, `--force`, `my_var` | the text anywhere, also inside words (a term with punctuation) |
//! | `"rm -rf"`         | the quoted text anywhere (quotes around punctuation)    |
//! | `*Effect`          | the text anywhere, also inside words (`useEffect`)      |
//!
//! Terms separated by spaces must all match. A substring is at least 3
//! characters (the trigram table cannot look for less).

/// One term of a query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Term {
    /// A whole word (letters and digits only).
    Word(String),
    /// A word that starts with this.
    Prefix(String),
    /// Words next to each other, in order.
    Phrase(Vec<String>),
    /// Text anywhere, inside words too (the trigram table).
    Substring(String),
}

/// Why a query cannot be run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QueryError {
    #[error("the query is empty: give at least one word")]
    Empty,
    #[error("the query has a \" that is never closed")]
    UnclosedQuote,
    #[error("{0:?} is too short to look for inside words: a substring needs at least 3 characters")]
    TooShort(String),
    #[error("{0:?}: a prefix (word*) is letters and digits before the *")]
    BadPrefix(String),
}

/// The shortest substring the trigram tokenizer can find.
const MIN_SUBSTRING: usize = 3;

/// Split `text` into terms (see the module doc).
pub(crate) fn parse(text: &str) -> Result<Vec<Term>, QueryError> {
    let mut terms = Vec::new();
    for piece in split(text)? {
        if let Some(term) = classify(piece)? {
            terms.push(term);
        }
    }
    if terms.is_empty() {
        return Err(QueryError::Empty);
    }
    Ok(terms)
}

/// A piece of the query: a bare token or the text between two quotes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Piece<'a> {
    Bare(&'a str),
    Quoted(&'a str),
}

fn split(text: &str) -> Result<Vec<Piece<'_>>, QueryError> {
    let mut out = Vec::new();
    let mut rest = text.trim_start();
    while !rest.is_empty() {
        if let Some(inner) = rest.strip_prefix('"') {
            let end = inner.find('"').ok_or(QueryError::UnclosedQuote)?;
            out.push(Piece::Quoted(&inner[..end]));
            rest = inner[end + 1..].trim_start();
        } else {
            let end = rest
                .find(|c: char| c.is_whitespace() || c == '"')
                .unwrap_or(rest.len());
            out.push(Piece::Bare(&rest[..end]));
            rest = rest[end..].trim_start();
        }
    }
    Ok(out)
}

fn is_word(text: &str) -> bool {
    !text.is_empty() && text.chars().all(char::is_alphanumeric)
}

fn classify(piece: Piece<'_>) -> Result<Option<Term>, QueryError> {
    match piece {
        Piece::Bare(token) => classify_bare(token).map(Some),
        Piece::Quoted(inner) => classify_quoted(inner),
    }
}

fn classify_bare(token: &str) -> Result<Term, QueryError> {
    if let Some(inside) = token.strip_prefix('*') {
        return substring(inside.strip_suffix('*').unwrap_or(inside));
    }
    if let Some(stem) = token.strip_suffix('*') {
        return match is_word(stem) {
            true => Ok(Term::Prefix(stem.to_string())),
            false => Err(QueryError::BadPrefix(token.to_string())),
        };
    }
    match is_word(token) {
        true => Ok(Term::Word(token.to_string())),
        false => substring(token),
    }
}

fn classify_quoted(inner: &str) -> Result<Option<Term>, QueryError> {
    let words: Vec<&str> = inner.split_whitespace().collect();
    if words.is_empty() {
        return Ok(None);
    }
    if !words.iter().all(|w| is_word(w)) {
        return substring(inner).map(Some);
    }
    Ok(Some(match words.as_slice() {
        [one] => Term::Word(one.to_string()),
        _ => Term::Phrase(words.iter().map(|w| w.to_string()).collect()),
    }))
}

fn substring(text: &str) -> Result<Term, QueryError> {
    if text.chars().count() < MIN_SUBSTRING {
        return Err(QueryError::TooShort(text.to_string()));
    }
    Ok(Term::Substring(text.to_string()))
}

/// The two FTS5 `MATCH` expressions a query's terms make: one for the
/// word table (unicode61), one for the trigram table (every trigram of
/// every substring: the trigram table keeps no positions, so it finds the
/// docs that hold them all, and each doc's text is then read to confirm
/// the substring); `None` where the query has no term for that table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Translated {
    pub words: Option<String>,
    pub grams: Option<String>,
}

/// Translate terms into FTS5 syntax: every term one FTS5 string, joined
/// with `AND`.
pub(crate) fn translate(terms: &[Term]) -> Translated {
    let mut words = Vec::new();
    let mut grams = Vec::new();
    for term in terms {
        match term {
            Term::Word(w) => words.push(fts_string(w)),
            Term::Prefix(p) => words.push(format!("{}*", fts_string(p))),
            Term::Phrase(ws) => words.push(fts_string(&ws.join(" "))),
            Term::Substring(s) => {
                for gram in trigrams(s) {
                    if !grams.contains(&gram) {
                        grams.push(gram);
                    }
                }
            }
        }
    }
    let join = |v: Vec<String>| (!v.is_empty()).then(|| v.join(" AND "));
    Translated {
        words: join(words),
        grams: join(grams),
    }
}

/// Each run of three characters of `text`, as an FTS5 string.
fn trigrams(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars
        .windows(MIN_SUBSTRING)
        .map(|w| fts_string(&w.iter().collect::<String>()))
        .collect()
}

/// `text` as an FTS5 string: in double quotes, each quote doubled.
fn fts_string(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        if c == '"' {
            out.push('"');
        }
        out.push(c);
    }
    out.push('"');
    out
}

/// What the snippet marks for a term: the text to find and whether it
/// must start (and, for a whole word, end) at a word boundary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Needle {
    pub text: String,
    pub word_start: bool,
    pub word_end: bool,
}

/// The needles the snippet marks for `terms`.
pub(crate) fn needles(terms: &[Term]) -> Vec<Needle> {
    let mut out = Vec::new();
    for term in terms {
        let (texts, start, end): (Vec<&str>, bool, bool) = match term {
            Term::Word(w) => (vec![w], true, true),
            Term::Prefix(p) => (vec![p], true, false),
            Term::Phrase(ws) => (ws.iter().map(String::as_str).collect(), true, true),
            Term::Substring(s) => (vec![s], false, false),
        };
        for text in texts {
            out.push(Needle {
                text: text.to_string(),
                word_start: start,
                word_end: end,
            });
        }
    }
    out
}

/// The needles of the substrings alone: what a hit's text must hold.
pub(crate) fn substrings(terms: &[Term]) -> Vec<Needle> {
    let subs: Vec<Term> = terms
        .iter()
        .filter(|t| matches!(t, Term::Substring(_)))
        .cloned()
        .collect();
    needles(&subs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn plain_words_are_words_and_all_must_match() {
        let terms = parse("  failing  command ").unwrap();
        assert_eq!(
            terms,
            vec![Term::Word("failing".into()), Term::Word("command".into())]
        );
        let t = translate(&terms);
        assert_eq!(t.words.as_deref(), Some("\"failing\" AND \"command\""));
        assert_eq!(t.grams, None);
    }

    #[test]
    fn a_star_after_a_word_is_a_prefix() {
        let terms = parse("finali*").unwrap();
        assert_eq!(terms, vec![Term::Prefix("finali".into())]);
        assert_eq!(translate(&terms).words.as_deref(), Some("\"finali\"*"));
    }

    #[test]
    fn quoted_words_are_a_phrase_and_one_quoted_word_a_word() {
        assert_eq!(
            parse("\"run a failing\"").unwrap(),
            vec![Term::Phrase(words(&["run", "a", "failing"]))]
        );
        assert_eq!(
            parse("\"ledger\"").unwrap(),
            vec![Term::Word("ledger".into())]
        );
        let t = translate(&parse("\"run a\" x").unwrap());
        assert_eq!(t.words.as_deref(), Some("\"run a\" AND \"x\""));
    }

    #[test]
    fn punctuation_makes_a_substring_quoted_or_not() {
        let terms = parse("src/ledger --force \"rm -rf\" my_var").unwrap();
        assert_eq!(
            terms,
            vec![
                Term::Substring("src/ledger".into()),
                Term::Substring("--force".into()),
                Term::Substring("rm -rf".into()),
                Term::Substring("my_var".into()),
            ]
        );
        let t = translate(&parse("src/ledger \"rm -rf\" *ledg").unwrap());
        assert_eq!(t.words, None);
        assert_eq!(
            t.grams.as_deref(),
            Some(
                "\"src\" AND \"rc/\" AND \"c/l\" AND \"/le\" AND \"led\" AND \"edg\" AND \"dge\" \
                 AND \"ger\" AND \"rm \" AND \"m -\" AND \" -r\" AND \"-rf\""
            )
        );
    }

    #[test]
    fn a_leading_star_looks_inside_words() {
        assert_eq!(
            parse("*Effect").unwrap(),
            vec![Term::Substring("Effect".into())]
        );
        assert_eq!(
            parse("*Effect*").unwrap(),
            vec![Term::Substring("Effect".into())]
        );
    }

    #[test]
    fn fts_syntax_typed_by_the_user_is_only_text() {
        // FTS5 operators and column filters are searched for as text.
        let t = translate(&parse("NEAR(alpha beta) text:foo \"a\"\"b\"").unwrap());
        assert_eq!(t.words.as_deref(), Some("\"a\" AND \"b\""));
        assert_eq!(
            parse("NEAR(alpha beta) text:foo").unwrap(),
            vec![
                Term::Substring("NEAR(alpha".into()),
                Term::Substring("beta)".into()),
                Term::Substring("text:foo".into()),
            ]
        );
        assert!(
            t.grams
                .as_deref()
                .unwrap()
                .starts_with("\"NEA\" AND \"EAR\" AND \"AR(\"")
        );
        // A quote inside a substring is doubled, never closes the string.
        assert_eq!(fts_string("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(trigrams("a\"b"), vec!["\"a\"\"b\""]);
        assert_eq!(
            parse("AND OR NOT").unwrap(),
            vec![
                Term::Word("AND".into()),
                Term::Word("OR".into()),
                Term::Word("NOT".into())
            ]
        );
        assert_eq!(
            translate(&parse("AND").unwrap()).words.as_deref(),
            Some("\"AND\"")
        );
    }

    #[test]
    fn queries_that_cannot_run_say_why() {
        assert_eq!(parse(""), Err(QueryError::Empty));
        assert_eq!(parse("  \"\"  "), Err(QueryError::Empty));
        assert_eq!(parse("\"open"), Err(QueryError::UnclosedQuote));
        assert_eq!(parse("-f"), Err(QueryError::TooShort("-f".into())));
        assert_eq!(parse("*ab"), Err(QueryError::TooShort("ab".into())));
        assert_eq!(parse("a/b*"), Err(QueryError::BadPrefix("a/b*".into())));
        assert_eq!(parse("*"), Err(QueryError::TooShort("".into())));
    }

    #[test]
    fn needles_mark_each_word_of_a_phrase() {
        let n = needles(&parse("\"two words\" pre* a.b").unwrap());
        let texts: Vec<(&str, bool, bool)> = n
            .iter()
            .map(|n| (n.text.as_str(), n.word_start, n.word_end))
            .collect();
        assert_eq!(
            texts,
            vec![
                ("two", true, true),
                ("words", true, true),
                ("pre", true, false),
                ("a.b", false, false)
            ]
        );
    }
}
