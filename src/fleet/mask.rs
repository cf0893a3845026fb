//! Secrets masked before a row leaves the machine. Tool inputs and
//! outputs can hold keys, tokens and passwords; the shipper runs every
//! event's stored text through these patterns and sends the masked text
//! in its place, never the original. The local ledger is not touched.
//!
//! Patterns run over the stored JSON text, so a secret inside a string
//! appears with JSON escapes (`\n`, `\"`); each replacement is plain
//! ASCII without quotes or backslashes, so the masked text stays JSON. A
//! pattern with a group named `secret` masks only that group (a
//! `password=` pair keeps its key); any other masks its whole match.

use std::borrow::Cow;

use regex::bytes::{Captures, Regex, RegexSet};

/// The built-in patterns: (name, regex).
pub const BUILT_IN: &[(&str, &str)] = &[
    (
        "private-key",
        r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----(?:(?:[^\x22\\]|\\.)*?-----END [A-Z0-9 ]*PRIVATE KEY-----|(?:[^\x22\\]|\\.)*)",
    ),
    ("aws-access-key-id", r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    ("github-token", r"\bgh[pousr]_[A-Za-z0-9]{36,}\b"),
    (
        "github-fine-grained-token",
        r"\bgithub_pat_[A-Za-z0-9_]{22,}",
    ),
    ("gitlab-token", r"\bglpat-[A-Za-z0-9_-]{20,}"),
    ("slack-token", r"\bxox[abposr]-[A-Za-z0-9-]{10,}"),
    ("api-secret-key", r"\bsk-[A-Za-z0-9_-]{20,}"),
    (
        "bearer",
        r"(?i)\bbearer\s+(?P<secret>[A-Za-z0-9._~+/-]{8,}=*)",
    ),
    (
        "password-pair",
        r#"(?i)\b(?:password|passwd|secret|client_secret|api[_-]?key|access[_-]?token|auth[_-]?token|aws_secret_access_key)(?:\\?")?\s*[=:]\s*(?:\\?")?(?P<secret>[^\s"\\&;,]{1,})"#,
    ),
];

/// A pattern that does not compile.
#[derive(Debug, thiserror::Error)]
#[error("mask pattern {name:?} does not compile: {source}")]
pub struct PatternError {
    pub name: String,
    source: regex::Error,
}

/// The patterns a host masks with, compiled once.
pub struct Masker {
    names: Vec<String>,
    set: RegexSet,
    each: Vec<Regex>,
}

/// One row's masked text and which patterns matched it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Masked<'a> {
    pub text: Cow<'a, [u8]>,
    pub patterns: Vec<String>,
}

impl Masker {
    /// The built-in patterns plus the user's (`mask = [...]` in the
    /// config, named `user-1`, `user-2`, ...).
    pub fn new(user: &[String]) -> Result<Masker, PatternError> {
        let mut pairs: Vec<(String, String)> = BUILT_IN
            .iter()
            .map(|(n, p)| (n.to_string(), p.to_string()))
            .collect();
        for (i, p) in user.iter().enumerate() {
            pairs.push((format!("user-{}", i + 1), p.clone()));
        }
        let mut each = Vec::new();
        for (name, pattern) in &pairs {
            each.push(Regex::new(pattern).map_err(|source| PatternError {
                name: name.clone(),
                source,
            })?);
        }
        let set = RegexSet::new(pairs.iter().map(|p| &p.1)).map_err(|source| PatternError {
            name: "(all)".into(),
            source,
        })?;
        Ok(Masker {
            names: pairs.into_iter().map(|p| p.0).collect(),
            set,
            each,
        })
    }

    /// Mask `text`; `None` when no pattern matches (the common case: one
    /// pass of the combined set, nothing copied).
    pub fn mask<'a>(&self, text: &'a [u8]) -> Option<Masked<'a>> {
        let hits = self.set.matches(text);
        if !hits.matched_any() {
            return None;
        }
        let mut out: Cow<'a, [u8]> = Cow::Borrowed(text);
        let mut patterns = Vec::new();
        for i in hits.iter() {
            let name = &self.names[i];
            let replaced = replace(&self.each[i], &out, name);
            if let Cow::Owned(o) = replaced {
                out = Cow::Owned(o);
                patterns.push(name.clone());
            }
        }
        Some(Masked {
            text: out,
            patterns,
        })
        .filter(|m| !m.patterns.is_empty())
    }
}

/// Replace every match of `re` in `text` (only its `secret` group when it
/// has one) by `[masked:NAME]`.
fn replace<'t>(re: &Regex, text: &'t [u8], name: &str) -> Cow<'t, [u8]> {
    let mark = format!("[masked:{name}]");
    let has_group = re.capture_names().any(|n| n == Some("secret"));
    re.replace_all(text, |c: &Captures<'_>| {
        let whole = c.get(0).expect("group 0 is the match");
        match c.name("secret").filter(|_| has_group) {
            Some(s) => {
                let mut v = text[whole.start()..s.start()].to_vec();
                v.extend_from_slice(mark.as_bytes());
                v.extend_from_slice(&text[s.end()..whole.end()]);
                v
            }
            None => mark.as_bytes().to_vec(),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn masked(text: &str) -> (String, Vec<String>) {
        let m = Masker::new(&[])
            .unwrap()
            .mask(text.as_bytes())
            .expect("a match");
        (String::from_utf8(m.text.into_owned()).unwrap(), m.patterns)
    }

    #[test]
    fn each_built_in_pattern_masks_its_secret_and_keeps_the_json() {
        let cases = [
            (
                r#"{"cmd":"export AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE"}"#,
                r#"{"cmd":"export AWS_ACCESS_KEY_ID=[masked:aws-access-key-id]"}"#,
            ),
            (
                r#"{"t":"ghp_abcdefghijklmnopqrstuvwxyz0123456789"}"#,
                r#"{"t":"[masked:github-token]"}"#,
            ),
            (
                r#"{"t":"github_pat_11ABCDEFG0123456789_abcdefghijklmnop"}"#,
                r#"{"t":"[masked:github-fine-grained-token]"}"#,
            ),
            (
                r#"{"k":"sk-proj-abcdefghijklmnopqrstuv"}"#,
                r#"{"k":"[masked:api-secret-key]"}"#,
            ),
            (
                r#"{"h":"Authorization: Bearer eyJhbGciOi.J9xyz"}"#,
                r#"{"h":"Authorization: Bearer [masked:bearer]"}"#,
            ),
            (
                r#"{"url":"db?user=a&password=hunter2&x=1"}"#,
                r#"{"url":"db?user=a&password=[masked:password-pair]&x=1"}"#,
            ),
            (
                r#"{"out":"{\"password\": \"hunter2\"}"}"#,
                r#"{"out":"{\"password\": \"[masked:password-pair]\"}"}"#,
            ),
            (
                r#"{"f":"-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----\nrest"}"#,
                r#"{"f":"[masked:private-key]\nrest"}"#,
            ),
            (
                r#"{"f":"-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbn (cut)","n":1}"#,
                r#"{"f":"[masked:private-key]","n":1}"#,
            ),
        ];
        for (input, want) in cases {
            let (got, _) = masked(input);
            assert_eq!(got, want, "{input}");
            serde_json::from_str::<serde_json::Value>(&got).expect("still JSON");
        }
    }

    #[test]
    fn clean_text_is_not_copied_and_user_patterns_are_named() {
        let m = Masker::new(&["internal-[0-9]{4}".into()]).unwrap();
        assert!(m.mask(br#"{"cmd":"ls -la","tokens":3}"#).is_none());
        let got = m.mask(br#"{"host":"internal-1234"}"#).unwrap();
        assert_eq!(&*got.text, br#"{"host":"[masked:user-1]"}"#);
        assert_eq!(got.patterns, vec!["user-1".to_string()]);
        assert!(Masker::new(&["(".into()]).is_err());
    }
}
