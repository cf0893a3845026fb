//! A request's head (request line and header fields) read from raw bytes:
//! only what a read-only server needs, strictly. Anything ambiguous (a
//! folded line, a second `Host` or `Content-Length`, a target that is not a
//! path) is refused, so what the guard checks is what the client sent.

/// The most bytes a request head may take: beyond, 431.
pub const MAX_HEAD: usize = 16 * 1024;

/// A parsed request head.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Request {
    pub method: String,
    /// The request target as sent (`/path?query`).
    pub target: String,
    /// Header fields in order: name as sent, value trimmed.
    pub headers: Vec<(String, String)>,
}

impl Request {
    /// The value of the header `name` (any case), if the request has it.
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// Whether a body follows the head: a `Content-Length` above 0, or any
    /// `Transfer-Encoding`. The server only reads, so none ever should.
    pub(crate) fn announces_body(&self) -> bool {
        self.header("Transfer-Encoding").is_some()
            || self
                .header("Content-Length")
                .is_some_and(|n| !n.bytes().all(|b| b == b'0'))
    }

    pub(crate) fn is_head(&self) -> bool {
        self.method == "HEAD"
    }
}

/// Why a head cannot be served: the status and what to say.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Malformed {
    pub status: u16,
    pub detail: String,
}

fn bad(detail: impl Into<String>) -> Malformed {
    Malformed {
        status: 400,
        detail: detail.into(),
    }
}

/// Where the head in `buf` ends (the index just past its blank line), if
/// it is complete. Lines end in CRLF or a bare LF.
pub(crate) fn head_end(buf: &[u8]) -> Option<usize> {
    let mut from = 0;
    while let Some(i) = memchr::memchr(b'\n', &buf[from..]) {
        let next = from + i + 1;
        match &buf[next..] {
            [b'\n', ..] => return Some(next + 1),
            [b'\r', b'\n', ..] => return Some(next + 2),
            _ => from = next,
        }
    }
    None
}

/// Parse a complete head (the bytes up to and including its blank line).
pub(crate) fn parse(head: &[u8]) -> Result<Request, Malformed> {
    let text = std::str::from_utf8(head)
        .map_err(|_| bad("the request head holds bytes that are not UTF-8"))?;
    let mut lines = text.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l));
    let (method, target) = request_line(lines.next().unwrap_or(""))?;
    let mut headers: Vec<(String, String)> = Vec::new();
    for line in lines.take_while(|l| !l.is_empty()) {
        let field = header_line(line)?;
        let once = ["host", "content-length"];
        if once.contains(&field.0.to_ascii_lowercase().as_str())
            && headers
                .iter()
                .any(|(n, _)| n.eq_ignore_ascii_case(&field.0))
        {
            return Err(bad(format!("the request has more than one {}", field.0)));
        }
        headers.push(field);
    }
    let request = Request {
        method,
        target,
        headers,
    };
    if let Some(n) = request.header("Content-Length")
        && (n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()))
    {
        return Err(bad(format!("Content-Length {n:?} is not a number")));
    }
    Ok(request)
}

fn request_line(line: &str) -> Result<(String, String), Malformed> {
    let parts: Vec<&str> = line.split(' ').collect();
    let [method, target, version] = parts[..] else {
        return Err(bad(format!(
            "{:?} is not a request line (METHOD /path HTTP/1.1)",
            clip(line)
        )));
    };
    if method.is_empty() || !method.bytes().all(|b| b.is_ascii_uppercase()) {
        return Err(bad(format!("{:?} is not a method", clip(method))));
    }
    if !matches!(version, "HTTP/1.1" | "HTTP/1.0") {
        return Err(Malformed {
            status: 505,
            detail: format!("{:?} is not HTTP/1.1 or HTTP/1.0", clip(version)),
        });
    }
    if !target.starts_with('/') || !target.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(bad(format!(
            "the target {:?} is not a path: it starts with / and holds printable ASCII only",
            clip(target)
        )));
    }
    Ok((method.to_string(), target.to_string()))
}

fn header_line(line: &str) -> Result<(String, String), Malformed> {
    if line.starts_with([' ', '\t']) {
        return Err(bad("a header line is folded (starts with a space)"));
    }
    let Some((name, value)) = line.split_once(':') else {
        return Err(bad(format!("{:?} is not a header line", clip(line))));
    };
    let token = |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
    if name.is_empty() || !name.bytes().all(token) {
        return Err(bad(format!("{:?} is not a header name", clip(name))));
    }
    Ok((
        name.to_string(),
        value.trim_matches([' ', '\t']).to_string(),
    ))
}

/// The first 80 characters of what a client sent, for a message.
fn clip(s: &str) -> String {
    s.chars().take(80).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(text: &str) -> Request {
        parse(text.as_bytes()).unwrap()
    }

    fn refused(text: &str) -> u16 {
        parse(text.as_bytes()).unwrap_err().status
    }

    #[test]
    fn the_head_ends_at_the_first_blank_line() {
        assert_eq!(head_end(b"GET / HTTP/1.1\r\nHost: a\r\n\r\nrest"), Some(27));
        assert_eq!(head_end(b"GET / HTTP/1.1\nHost: a\n\nrest"), Some(24));
        assert_eq!(head_end(b"GET / HTTP/1.1\r\nHost: a\r\n"), None);
        assert_eq!(head_end(b""), None);
    }

    #[test]
    fn a_plain_get_is_read_with_its_headers() {
        let r =
            ok("GET /api/sessions?limit=1 HTTP/1.1\r\nHost:  127.0.0.1:80 \r\nCookie: a=b\r\n\r\n");
        assert_eq!(r.method, "GET");
        assert_eq!(r.target, "/api/sessions?limit=1");
        assert_eq!(r.header("host"), Some("127.0.0.1:80"));
        assert_eq!(r.header("COOKIE"), Some("a=b"));
        assert!(!r.announces_body() && !r.is_head());
    }

    #[test]
    fn a_body_is_announced_by_a_length_above_zero_or_any_transfer_encoding() {
        let with = |h: &str| ok(&format!("POST / HTTP/1.1\r\n{h}\r\n\r\n")).announces_body();
        assert!(!with("Content-Length: 0"));
        assert!(!with("Content-Length: 000"));
        assert!(with("Content-Length: 1"));
        assert!(with("Content-Length: 100000"));
        assert!(with("Transfer-Encoding: chunked"));
        assert!(with("transfer-encoding: identity"));
    }

    #[test]
    fn anything_ambiguous_is_refused() {
        assert_eq!(refused("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"), 400);
        assert_eq!(
            refused("POST / HTTP/1.1\r\nContent-Length: 1\r\ncontent-length: 0\r\n\r\n"),
            400
        );
        assert_eq!(
            refused("POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n"),
            400
        );
        assert_eq!(
            refused("POST / HTTP/1.1\r\nContent-Length: 1 2\r\n\r\n"),
            400
        );
        assert_eq!(refused("GET / HTTP/1.1\r\nX-A: 1\r\n  folded\r\n\r\n"), 400);
        assert_eq!(refused("GET / HTTP/1.1\r\nNo colon here\r\n\r\n"), 400);
        assert_eq!(refused("GET / HTTP/1.1\r\nBad Name: 1\r\n\r\n"), 400);
        assert_eq!(refused("GET  / HTTP/1.1\r\n\r\n"), 400);
        assert_eq!(refused("get / HTTP/1.1\r\n\r\n"), 400);
        assert_eq!(refused("GET http://a/ HTTP/1.1\r\n\r\n"), 400);
        assert_eq!(refused("GET * HTTP/1.1\r\n\r\n"), 400);
        assert_eq!(refused("GET /\u{e9} HTTP/1.1\r\n\r\n"), 400);
        assert_eq!(refused("GET / HTTP/2.0\r\n\r\n"), 505);
        assert_eq!(
            parse(b"GET /\xff HTTP/1.1\r\n\r\n").unwrap_err().status,
            400
        );
    }
}
