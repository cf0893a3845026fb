//! A request target split into its path segments and query parameters,
//! percent-decoded. Whatever a URL holds is only ever text to look up.

/// A parsed request target.
#[derive(Debug, Default)]
pub(crate) struct Target {
    pub segments: Vec<String>,
    pub params: Vec<(String, String)>,
    /// Path segments (as `path`) and parameters whose text holds a NUL or
    /// bytes that are not UTF-8: the request is refused, naming them.
    pub invalid: Vec<String>,
}

impl Target {
    pub(crate) fn parse(url: &str) -> Target {
        let (path, query) = url.split_once('?').unwrap_or((url, ""));
        let mut invalid = Vec::new();
        let segments = path
            .split('/')
            .filter(|s| !s.is_empty())
            .map(|s| {
                if !clean(s) {
                    invalid.push("path".to_string());
                }
                decode(s)
            })
            .collect();
        let params = query
            .split('&')
            .filter(|p| !p.is_empty())
            .map(|p| {
                let (k, v) = p.split_once('=').unwrap_or((p, ""));
                if !clean(k) || !clean(v) {
                    invalid.push(decode(k));
                }
                (decode(k), decode(v))
            })
            .collect();
        invalid.dedup();
        Target {
            segments,
            params,
            invalid,
        }
    }

    /// The first non-empty value of parameter `name`.
    pub(crate) fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(k, v)| k == name && !v.is_empty())
            .map(|(_, v)| v.as_str())
    }

    pub(crate) fn path(&self) -> Vec<&str> {
        self.segments.iter().map(String::as_str).collect()
    }
}

/// A form value: `+` is a space, then `%XX` decoded (so `%2B` stays `+`);
/// a bad escape stays as it was.
fn decode(s: &str) -> String {
    crate::fleet::target::percent_decode(&s.replace('+', " "))
}

/// Whether `s` decodes to UTF-8 text without a NUL.
fn clean(s: &str) -> bool {
    let bytes: Vec<u8> = percent_encoding::percent_decode_str(s).collect();
    !bytes.contains(&0) && std::str::from_utf8(&bytes).is_ok()
}

/// What [`encode`] leaves as it is: letters, digits and `-_.~` (RFC 3986's
/// unreserved characters); every other byte becomes `%XX`.
const ESCAPED: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

/// `s` percent-encoded for a query value or a path segment.
pub(crate) fn encode(s: &str) -> String {
    percent_encoding::utf8_percent_encode(s, ESCAPED).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_decode_and_round_trip() {
        let t = Target::parse("/sessions/a%2Fb/events/3?agent=claude-code&since=&x=1+2");
        assert_eq!(t.path(), ["sessions", "a/b", "events", "3"]);
        assert_eq!(t.param("agent"), Some("claude-code"));
        assert_eq!(t.param("since"), None);
        assert_eq!(t.param("x"), Some("1 2"));
        assert_eq!(encode("a/b c"), "a%2Fb%20c");
        assert_eq!(
            Target::parse(&format!("/s/{}", encode("é/?"))).path(),
            ["s", "é/?"]
        );
        assert_eq!(Target::parse("/%zz").path(), ["%zz"]);
        assert_eq!(Target::parse("/%4").path(), ["%4"]);
        assert!(t.invalid.is_empty());
        assert_eq!(Target::parse("/search?q=a%00b").invalid, ["q"]);
        assert_eq!(Target::parse("/search?x=1&q=%ff").invalid, ["q"]);
        assert_eq!(Target::parse("/sessions/%00").invalid, ["path"]);
    }
}
