//! Secrets masked before a row leaves the machine. Tool inputs and
//! outputs, prompts and messages can hold keys, tokens and passwords; the
//! shipper sends every event with its secrets replaced, never the
//! original. The local ledger is not touched.
//!
//! Masks apply to the decoded text of every JSON string value (a newline
//! is a newline, a tab a tab), so a secret at the start of a line, after a
//! tab or after `_` is found like any other. A string value whose object
//! key names a secret (`"password": …`, `"GITHUB_TOKEN": …`) is masked
//! whole. Each secret is replaced by `[masked:CATEGORY:LABEL]`, the label
//! a keyed hash of the secret under this host's ship key: the same secret
//! gives the same label within a host, and the label tells the server
//! nothing it can test a guess against. Only the strings that changed are
//! re-encoded; the rest of the row keeps its bytes.
//!
//! A pattern with a group named `secret` (or `secret_dq`, `secret_sq`)
//! masks only that group (a `password=` pair keeps its key); any other
//! masks its whole match. The user's `[mask]` table adds patterns
//! (`user-1`, `user-2`, …) and allow-lists: a candidate secret that an
//! allow pattern matches whole is left as it is.
//!
//! The built-in patterns themselves are in `mask/patterns.rs`.

use std::borrow::Cow;

use regex::{Regex, RegexSet};

use super::ids;
use super::key::{HostKey, Purpose};
use patterns::{BUILT_IN_ALLOW, TRIGGERS, built_in, secret_key};

mod metadata;
mod patterns;

/// A pattern that does not compile.
#[derive(Debug, thiserror::Error)]
#[error("mask pattern {name:?} does not compile: {source}")]
pub struct PatternError {
    pub name: String,
    source: regex::Error,
}

/// The user's additions (`[mask]` in the config).
#[derive(Debug, Default, Clone)]
pub struct MaskRules {
    /// More patterns (Rust regex syntax; a `secret` group masks only it).
    pub patterns: Vec<String>,
    /// Values never masked (a candidate matched whole by one stays).
    pub allow: Vec<String>,
}

/// The patterns a host masks with, compiled once.
pub struct Masker {
    names: Vec<String>,
    entropy: Vec<bool>,
    set: RegexSet,
    each: Vec<Regex>,
    triggers: RegexSet,
    /// Only built-ins: the trigger scan decides which rows to decode.
    prefilter: bool,
    secret_key: Regex,
    allow: RegexSet,
    label_re: Regex,
    key: HostKey,
}

/// One row's masked text and which categories matched it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Masked<'a> {
    pub text: Cow<'a, [u8]>,
    pub patterns: Vec<String>,
}

fn compile(name: &str, pattern: &str) -> Result<Regex, PatternError> {
    Regex::new(pattern).map_err(|source| PatternError {
        name: name.to_string(),
        source,
    })
}

impl Masker {
    /// The built-in patterns plus the user's, labelling with `key`.
    pub fn new(rules: &MaskRules, key: HostKey) -> Result<Masker, PatternError> {
        let mut pairs: Vec<(String, String, bool)> = built_in()
            .into_iter()
            .map(|(n, p, e)| (n.to_string(), p, e))
            .collect();
        for (i, p) in rules.patterns.iter().enumerate() {
            pairs.push((format!("user-{}", i + 1), p.clone(), false));
        }
        let mut each = Vec::new();
        for (name, pattern, _) in &pairs {
            each.push(compile(name, pattern)?);
        }
        let set = RegexSet::new(pairs.iter().map(|p| &p.1)).map_err(|source| PatternError {
            name: "(all)".into(),
            source,
        })?;
        let allow_all: Vec<String> = BUILT_IN_ALLOW
            .iter()
            .map(|a| a.to_string())
            .chain(rules.allow.iter().cloned())
            .map(|a| format!("^(?:{a})$"))
            .collect();
        for (i, a) in rules.allow.iter().enumerate() {
            compile(&format!("allow-{}", i + 1), a)?;
        }
        let allow = RegexSet::new(&allow_all).map_err(|source| PatternError {
            name: "(allow)".into(),
            source,
        })?;
        let triggers = RegexSet::new(TRIGGERS.iter().map(|t| format!("(?i){}", regex::escape(t))))
            .expect("the trigger literals compile");
        Ok(Masker {
            names: pairs.iter().map(|p| p.0.clone()).collect(),
            entropy: pairs.iter().map(|p| p.2).collect(),
            set,
            each,
            triggers,
            prefilter: rules.patterns.is_empty(),
            secret_key: Regex::new(&secret_key()).expect("the secret key pattern compiles"),
            allow,
            label_re: Regex::new(r"\[masked:[a-z0-9-]+:[0-9a-f]+\]")
                .expect("the label pattern compiles"),
            key,
        })
    }

    /// Mask a row's JSON text; `None` when nothing changed. Every
    /// `*_digest` string (a digest of the raw record or of a tool's
    /// input, which could be used to test a guess of what was masked) is
    /// replaced by its keyed hash under this host's key, `keyed:HEX`, and
    /// every id derived from raw bytes by its keyed id ([`super::ids`]),
    /// neither counting as a mask.
    pub(crate) fn mask<'a>(&self, json: &'a [u8]) -> Option<Masked<'a>> {
        self.rewrite(json, true)
    }

    /// A row as `--content full` sends it: its text as recorded, its
    /// digests and ids keyed as [`Masker::mask`] keys them.
    pub(crate) fn keyed_only<'a>(&self, json: &'a [u8]) -> Option<Masked<'a>> {
        self.rewrite(json, false)
    }

    fn rewrite<'a>(&self, json: &'a [u8], mask: bool) -> Option<Masked<'a>> {
        let mut out: Vec<u8> = Vec::new();
        let mut copied = 0;
        let mut patterns: Vec<String> = Vec::new();
        let scan = mask
            && (!self.prefilter
                || self.triggers.is_match(&String::from_utf8_lossy(json))
                || memchr::memmem::find(json, b"\\u").is_some());
        walk_strings(json, |start, end, key, is_key| {
            if is_key {
                return;
            }
            let raw = json
                .get(start + 1..end.saturating_sub(1))
                .unwrap_or_default();
            let has_id = ids::may_hold_id(raw);
            let key_text = key.map(decode);
            let replacement = match key_text.as_deref() {
                Some(k) if k.ends_with("_digest") => {
                    Some(self.keyed_digest(&decode(&json[start..end])))
                }
                _ if !scan && !has_id => None,
                k => {
                    let text = decode(&json[start..end]);
                    // Ids first: a mask then sees the keyed ids, never the
                    // host's own.
                    let keyed = ids::keyed_within(&self.key, &text);
                    let masked = match scan {
                        true => {
                            let whole =
                                k.is_some_and(|k| self.secret_key.is_match(k) && !working_dir(k));
                            self.mask_text(&keyed, whole, &mut patterns)
                        }
                        false => Cow::Borrowed(&*keyed),
                    };
                    match (&keyed, masked) {
                        (_, Cow::Owned(m)) => Some(m),
                        (Cow::Owned(k), Cow::Borrowed(_)) => Some(k.clone()),
                        (Cow::Borrowed(_), Cow::Borrowed(_)) => None,
                    }
                }
            };
            if let Some(m) = replacement {
                out.extend_from_slice(&json[copied..start]);
                out.extend_from_slice(
                    serde_json::to_string(&m)
                        .expect("a string serialises")
                        .as_bytes(),
                );
                copied = end;
            }
        });
        if copied == 0 {
            return None;
        }
        out.extend_from_slice(&json[copied..]);
        patterns.sort();
        patterns.dedup();
        Some(Masked {
            text: Cow::Owned(out),
            patterns,
        })
    }

    /// An id as it leaves the host ([`super::ids::shipped`]).
    pub(crate) fn shipped_id<'s>(&self, id: &'s str) -> Cow<'s, str> {
        ids::shipped(&self.key, id)
    }

    /// A digest as it leaves the host: keyed, so it cannot test guesses.
    pub(crate) fn keyed_digest(&self, digest: &str) -> String {
        let h = self
            .key
            .hash(Purpose::MaskLabel, &[b"digest", digest.as_bytes()]);
        format!("keyed:{}", crate::ledger::chain::hex(&h))
    }

    /// Mask one decoded string (`whole`: its key names a secret).
    pub(crate) fn mask_text<'t>(
        &self,
        text: &'t str,
        whole: bool,
        patterns: &mut Vec<String>,
    ) -> Cow<'t, str> {
        if whole && !text.is_empty() && !self.allowed(text) {
            patterns.push("secret-value".into());
            return Cow::Owned(self.label("secret-value", text));
        }
        let hits = self.set.matches(text);
        if !hits.matched_any() {
            return Cow::Borrowed(text);
        }
        let mut out: Cow<'t, str> = Cow::Borrowed(text);
        for i in hits.iter() {
            let name = &self.names[i];
            if let Cow::Owned(o) = self.replace(i, &out) {
                out = Cow::Owned(o);
                patterns.push(name.clone());
            }
        }
        out
    }

    fn allowed(&self, value: &str) -> bool {
        self.allow.is_match(value.trim())
    }

    fn label(&self, category: &str, secret: &str) -> String {
        let h = self.key.hash(Purpose::MaskLabel, &[secret.as_bytes()]);
        format!("[masked:{category}:{}]", crate::ledger::chain::hex(&h[..6]))
    }

    /// Replace every match of pattern `i` in `text` (only its secret
    /// group when it has one), unless allowed.
    fn replace<'t>(&self, i: usize, text: &'t str) -> Cow<'t, str> {
        let re = &self.each[i];
        let name = &self.names[i];
        let mut changed = false;
        // Labels already put in are not read again as `key: value`.
        let labels: Vec<(usize, usize)> = match text.contains("[masked:") {
            true => self
                .label_re
                .find_iter(text)
                .map(|m| (m.start(), m.end()))
                .collect(),
            false => Vec::new(),
        };
        let mut out = String::new();
        let (mut last, mut pos) = (0, 0);
        while pos <= text.len() {
            let Some(c) = re.captures_at(text, pos) else {
                break;
            };
            let whole = c.get(0).expect("group 0 is the match");
            let step = |end: usize| match text[end..].chars().next() {
                Some(ch) if end == whole.start() => end + ch.len_utf8(),
                None if end == whole.start() => end + 1,
                _ => end,
            };
            if let Some((_, end)) = labels
                .iter()
                .find(|(a, b)| (*a..*b).contains(&whole.start()))
            {
                pos = *end;
                continue;
            }
            let secret = c
                .name("secret")
                .or_else(|| c.name("secret_dq"))
                .or_else(|| c.name("secret_sq"))
                .unwrap_or(whole);
            let value = secret.as_str();
            let keep = value.trim().is_empty()
                || self.allowed(value)
                || (self.entropy[i] && !high_entropy(value));
            pos = step(whole.end());
            if keep {
                continue;
            }
            changed = true;
            out.push_str(&text[last..secret.start()]);
            out.push_str(&self.label(name, value));
            last = secret.end();
        }
        match changed {
            true => {
                out.push_str(&text[last..]);
                Cow::Owned(out)
            }
            false => Cow::Borrowed(text),
        }
    }
}

/// `PWD` and `OLDPWD` name the working directory, not a password.
fn working_dir(key: &str) -> bool {
    key.eq_ignore_ascii_case("pwd") || key.eq_ignore_ascii_case("oldpwd")
}

/// A token that looks random: mixed classes and at least 3.5 bits of
/// Shannon entropy per character.
fn high_entropy(s: &str) -> bool {
    let s = s.trim_end_matches('=');
    if s.len() < 16 {
        return false;
    }
    let classes = [
        s.bytes().any(|b| b.is_ascii_lowercase()),
        s.bytes().any(|b| b.is_ascii_uppercase()),
        s.bytes().any(|b| b.is_ascii_digit()),
    ];
    if classes.iter().filter(|c| **c).count() < 2 {
        return false;
    }
    let mut counts = [0u32; 256];
    for b in s.bytes() {
        counts[b as usize] += 1;
    }
    let n = s.len() as f64;
    let bits: f64 = counts
        .iter()
        .filter(|c| **c > 0)
        .map(|c| {
            let p = f64::from(*c) / n;
            -p * p.log2()
        })
        .sum();
    bits >= 3.5
}

/// A JSON string token (quotes included) decoded; a token serde cannot
/// decode (a lone surrogate) is taken as its raw text.
fn decode(token: &[u8]) -> String {
    if !token.contains(&b'\\') {
        return String::from_utf8_lossy(&token[1..token.len() - 1]).into_owned();
    }
    serde_json::from_slice::<String>(token)
        .unwrap_or_else(|_| String::from_utf8_lossy(&token[1..token.len() - 1]).into_owned())
}

/// Call `f(start, end, key, is_key)` for every string token of a JSON
/// text: its byte range (quotes included), the token of the object key it
/// is the value of, and whether it is itself a key.
fn walk_strings<'a>(json: &'a [u8], mut f: impl FnMut(usize, usize, Option<&'a [u8]>, bool)) {
    // Per open container: is it an object, and its current key.
    let mut stack: Vec<(bool, Option<&'a [u8]>)> = Vec::new();
    let mut expect_key = false;
    let mut i = 0;
    while i < json.len() {
        match json[i] {
            b'"' => {
                let mut j = i + 1;
                while j < json.len() && json[j] != b'"' {
                    j += if json[j] == b'\\' { 2 } else { 1 };
                }
                let end = (j + 1).min(json.len());
                let in_object = stack.last().is_some_and(|s| s.0);
                if in_object && expect_key {
                    f(i, end, None, true);
                    if let Some(top) = stack.last_mut() {
                        top.1 = Some(&json[i..end]);
                    }
                    expect_key = false;
                } else {
                    let key = stack.last().filter(|s| s.0).and_then(|s| s.1);
                    f(i, end, key, false);
                }
                i = end;
                continue;
            }
            b'{' => {
                stack.push((true, None));
                expect_key = true;
            }
            b'[' => stack.push((false, None)),
            b'}' | b']' => {
                stack.pop();
            }
            b',' => expect_key = stack.last().is_some_and(|s| s.0),
            _ => {}
        }
        i += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn masker(rules: &MaskRules) -> Masker {
        Masker::new(rules, HostKey::from_bytes([1; 32])).unwrap()
    }

    fn masked(text: &str) -> String {
        let m = masker(&MaskRules::default());
        match m.mask(text.as_bytes()) {
            Some(got) => String::from_utf8(got.text.into_owned()).unwrap(),
            None => text.to_string(),
        }
    }

    #[test]
    fn secrets_at_line_starts_after_tabs_and_underscores_are_masked() {
        let cases = [
            "[default]\naws_access_key_id = AKIAIOSFODNN7EXAMPLE\naws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n",
            "GITHUB_TOKEN=ghp_0123456789abcdefghijABCDEFGHIJ012345\n",
            "x\tghp_0123456789abcdefghijABCDEFGHIJ012345",
            "KEY_sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123",
            "DB_PASSWORD=correct horse battery staple\nPORT=5432",
            "PGPASSWORD='two words' psql",
            "OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuv",
            "{\"SecretAccessKey\": \"wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\", \"SessionToken\": \"FQoGZXIvYXdzEBYaDAbc\"}",
            "git clone https://user:pa55word@example.com/r.git",
            "Authorization: Basic dXNlcjpwYXNzd29yZA==",
            "curl -H 'Authorization: Bearer abc.def.ghi'",
            "token eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
            "stripe sk_live_4eC39HqLyjWDarjtT1zdp7dc",
            "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQdGBF\n-----END PGP PRIVATE KEY BLOCK-----",
        ];
        let secrets = [
            "wJalrXUtnFEMI",
            "AKIAIOSFODNN7EXAMPLE",
            "ghp_0123456789",
            "sk-ant-api03",
            "horse",
            "battery",
            "two words",
            "sk-proj",
            "FQoGZXIvYXdzEBYaDAbc",
            "pa55word",
            "dXNlcjpwYXNzd29yZA",
            "abc.def.ghi",
            "dozjgNryP4J3",
            "sk_live",
            "lQdGBF",
        ];
        for case in cases {
            let json = serde_json::json!({"out": case}).to_string();
            let got = masked(&json);
            serde_json::from_str::<serde_json::Value>(&got).expect("still JSON");
            for s in secrets {
                assert!(!got.contains(s), "{s} in {got}");
            }
            assert!(got.contains("[masked:"), "{got}");
        }
    }

    #[test]
    fn the_same_secret_gets_the_same_label_and_keys_name_secrets() {
        let a = masked(r#"{"a":"password=hunter2","b":{"password":"hunter2"}}"#);
        let v: serde_json::Value = serde_json::from_str(&a).unwrap();
        let label = v["b"]["password"].as_str().unwrap();
        assert!(label.starts_with("[masked:secret-value:"), "{a}");
        let other = masker(&MaskRules::default());
        let b = other.mask(br#"{"x":"PASSWORD=hunter2"}"#).unwrap();
        let b = String::from_utf8(b.text.into_owned()).unwrap();
        let tail = |s: &str| {
            s.rsplit(':')
                .next()
                .unwrap()
                .trim_end_matches(['"', '}', ']'])
                .to_string()
        };
        assert_eq!(tail(v["a"].as_str().unwrap()), tail(&b), "{a} {b}");
        // Numbers and ordinary words stay.
        assert_eq!(
            masked(r#"{"input_tokens":12,"max_tokens":"4096","author":"me"}"#),
            r#"{"input_tokens":12,"max_tokens":"4096","author":"me"}"#
        );
    }

    #[test]
    fn labels_are_not_masked_again() {
        let m = masker(&MaskRules {
            patterns: vec!["github\\.com/o/r".into()],
            allow: vec![],
        });
        let j = serde_json::json!({"c": "git push https://x:ghp_0123456789abcdefghijABCDEFGHIJ012345@github.com/o/r && mysql --password=hunter2"}).to_string();
        let got = m.mask(j.as_bytes()).unwrap();
        let text = String::from_utf8_lossy(&got.text);
        assert!(
            text.contains("&& mysql --password=[masked:password-pair:"),
            "{text}"
        );
        assert_eq!(got.patterns, ["github-token", "password-pair", "user-1"]);
    }

    #[test]
    fn placeholders_and_user_allow_lists_stay_and_user_patterns_are_named() {
        assert_eq!(
            masked(r#"{"c":"password=${DB_PASSWORD}"}"#),
            r#"{"c":"password=${DB_PASSWORD}"}"#
        );
        let m = masker(&MaskRules {
            patterns: vec!["internal-[0-9]{4}".into()],
            allow: vec!["dev-only-pw".into()],
        });
        assert!(m.mask(br#"{"cmd":"ls -la","tokens":3}"#).is_none());
        assert!(m.mask(br#"{"c":"password=dev-only-pw"}"#).is_none());
        let got = m.mask(br#"{"host":"internal-1234"}"#).unwrap();
        assert!(
            String::from_utf8_lossy(&got.text).starts_with(r#"{"host":"[masked:user-1:"#),
            "{:?}",
            got
        );
        assert_eq!(got.patterns, vec!["user-1".to_string()]);
        assert!(
            Masker::new(
                &MaskRules {
                    patterns: vec!["(".into()],
                    allow: vec![]
                },
                HostKey::from_bytes([0; 32])
            )
            .is_err()
        );
    }

    /// Every string of a JSON text, in order.
    fn strings(v: &serde_json::Value, out: &mut Vec<String>) {
        match v {
            serde_json::Value::String(s) => out.push(s.clone()),
            serde_json::Value::Array(a) => a.iter().for_each(|x| strings(x, out)),
            serde_json::Value::Object(m) => m.values().for_each(|x| strings(x, out)),
            _ => {}
        }
    }

    /// The recorded agent sessions of the test corpus hold no secrets:
    /// masking them keeps at least 99% of their text.
    #[test]
    fn the_normal_corpus_keeps_its_text() {
        let m = masker(&MaskRules::default());
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures");
        let mut files = Vec::new();
        for agent in ["claude-code", "copilot"] {
            for d in std::fs::read_dir(root.join(agent)).unwrap().flatten() {
                for name in ["hooks.jsonl", "hook-capture.jsonl"] {
                    let f = d.path().join(name);
                    if f.is_file() {
                        files.push(f);
                    }
                }
            }
        }
        assert!(files.len() >= 10, "{files:?}");
        let (mut total, mut lost) = (0usize, 0usize);
        let mut examples = Vec::new();
        for f in files {
            for line in std::fs::read_to_string(&f).unwrap().lines() {
                let Ok(before) = serde_json::from_str::<serde_json::Value>(line) else {
                    continue;
                };
                let after = match m.mask(line.as_bytes()) {
                    Some(x) => serde_json::from_slice(&x.text).unwrap(),
                    None => before.clone(),
                };
                let (mut a, mut b) = (Vec::new(), Vec::new());
                strings(&before, &mut a);
                strings(&after, &mut b);
                for (x, y) in a.iter().zip(&b) {
                    total += x.len();
                    if x != y {
                        let prefix = x.bytes().zip(y.bytes()).take_while(|(p, q)| p == q).count();
                        let suffix = x
                            .bytes()
                            .rev()
                            .zip(y.bytes().rev())
                            .take_while(|(p, q)| p == q)
                            .count();
                        lost += x.len().saturating_sub(prefix + suffix);
                        if examples.len() < 20 {
                            examples.push(
                                y.chars()
                                    .skip(prefix.saturating_sub(20))
                                    .take(80)
                                    .collect::<String>(),
                            );
                        }
                    }
                }
            }
        }
        let kept = 1.0 - lost as f64 / total as f64;
        eprintln!("the normal corpus: kept {kept:.5} of {total} bytes of text");
        assert!(
            kept >= 0.99,
            "kept {kept:.4} of {total} bytes; e.g. {examples:#?}"
        );
    }
}
