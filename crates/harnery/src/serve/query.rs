//! A request target split into its path segments and query parameters,
//! percent-decoded. Whatever a URL holds is only ever text to look up.

/// A parsed request target.
#[derive(Debug, Default)]
pub struct Target {
    pub segments: Vec<String>,
    pub params: Vec<(String, String)>,
}

impl Target {
    pub fn parse(url: &str) -> Target {
        let (path, query) = url.split_once('?').unwrap_or((url, ""));
        Target {
            segments: path
                .split('/')
                .filter(|s| !s.is_empty())
                .map(decode)
                .collect(),
            params: query
                .split('&')
                .filter(|p| !p.is_empty())
                .map(|p| {
                    let (k, v) = p.split_once('=').unwrap_or((p, ""));
                    (decode(k), decode(v))
                })
                .collect(),
        }
    }

    /// The first non-empty value of parameter `name`.
    pub fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(k, v)| k == name && !v.is_empty())
            .map(|(_, v)| v.as_str())
    }

    pub fn path(&self) -> Vec<&str> {
        self.segments.iter().map(String::as_str).collect()
    }
}

/// `%XX` and `+` decoded; a bad escape stays as it was.
fn decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b'+', _) => {
                out.push(b' ');
                i += 1;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `s` percent-encoded for a query value or a path segment.
pub fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            b => format!("%{b:02X}"),
        })
        .collect()
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
    }
}
