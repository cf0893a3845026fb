//! Who may read: a request names this server in `Host` (and `Origin`, when
//! it has one), then carries the server's token (in the URL's `token`
//! parameter, once) or the cookie that first request was given, named for
//! the server's port; anything else is refused. Only `GET` and `HEAD` are served: there is
//! no write endpoint of any kind. Every response carries the headers that
//! keep a browser from treating it as anything but what it says.

use std::io::Read;

/// The cookie that carries the token after the first request, named for
/// the port: a browser sends a cookie to every port of a host, so another
/// local server never sees this one and a second `serve` does not
/// overwrite it.
pub(crate) fn cookie_name(port: u16) -> String {
    format!("harnery_token_{port}")
}

/// A fresh token: 128 bits from the kernel's random source, as hex.
pub(crate) fn new_token() -> std::io::Result<String> {
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// What the guard decided about a request.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Admission {
    /// The cookie was right.
    Known,
    /// The URL's token was right: the response sets the cookie.
    Introduced,
    Refused,
}

/// Whether a request with this URL `token` parameter and `Cookie` header
/// may read.
pub(crate) fn admit(
    token: &str,
    port: u16,
    url_token: Option<&str>,
    cookie_header: Option<&str>,
) -> Admission {
    let from_cookie = cookie_header.and_then(|h| cookie_value(h, &cookie_name(port)));
    if from_cookie.is_some_and(|t| same(t, token)) {
        return Admission::Known;
    }
    if url_token.is_some_and(|t| same(t, token)) {
        return Admission::Introduced;
    }
    Admission::Refused
}

/// The `Set-Cookie` value that admits later requests.
pub(crate) fn set_cookie(token: &str, port: u16) -> String {
    let name = cookie_name(port);
    format!("{name}={token}; Path=/; HttpOnly; SameSite=Strict")
}

/// Why a request's `Host` or `Origin` does not name this server, if it
/// does not: a page another site serves (DNS rebinding) reaches the port
/// under its own name, so only the names of the bound address are served:
/// `127.0.0.1`, `localhost` and `[::1]` with the port, or the address
/// `--addr` bound. The status (400 without a `Host`, else 403) and why.
pub(crate) fn misdirected(
    bound: std::net::SocketAddr,
    host: Option<&str>,
    origin: Option<&str>,
) -> Option<(u16, String)> {
    let port = bound.port();
    let names = [
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        format!("[::1]:{port}"),
        bound.to_string(),
    ];
    let known = |h: &str| names.iter().any(|n| n.eq_ignore_ascii_case(h));
    let Some(host) = host else {
        return Some((400, "the request has no Host header".to_string()));
    };
    if !known(host.trim()) {
        return Some((403, format!("Host {host:?} is not this server's address")));
    }
    match origin.map(str::trim) {
        None => None,
        Some(o) if o.strip_prefix("http://").is_some_and(known) => None,
        Some(o) => Some((403, format!("Origin {o:?} is not this server"))),
    }
}

fn cookie_value<'a>(header: &'a str, name: &str) -> Option<&'a str> {
    header
        .split(';')
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

/// Compare in time that does not depend on where the first difference is.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0, |acc, (x, y)| acc | (x ^ y))
            == 0
}

/// Whether a method is one the server answers (it only reads).
pub(crate) fn reads(method: &str) -> bool {
    matches!(method, "GET" | "HEAD")
}

/// The content security policy of every response: nothing from another
/// origin; scripts only the server's own files; styles its own sheet plus
/// inline `style` attributes (the timeline places each span with one, and
/// a style cannot run code); images only inline SVG data.
pub(crate) const POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; \
     img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; \
     frame-ancestors 'none'";

/// Headers every response carries.
pub(crate) fn headers() -> [(&'static str, &'static str); 5] {
    [
        ("Content-Security-Policy", POLICY),
        ("X-Content-Type-Options", "nosniff"),
        ("Referrer-Policy", "no-referrer"),
        ("X-Frame-Options", "DENY"),
        ("Cache-Control", "no-store"),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_token_or_its_cookie_admits() {
        let t = "00ff";
        assert_eq!(admit(t, 80, None, None), Admission::Refused);
        assert_eq!(admit(t, 80, Some("00fe"), None), Admission::Refused);
        assert_eq!(admit(t, 80, Some("00ff0"), None), Admission::Refused);
        assert_eq!(admit(t, 80, Some("00ff"), None), Admission::Introduced);
        let cookie = "a=b; harnery_token_80=00ff";
        assert_eq!(admit(t, 80, None, Some(cookie)), Admission::Known);
        assert_eq!(admit(t, 81, None, Some(cookie)), Admission::Refused);
        let old = "harnery_token=00ff; harnery_token_80=00fe";
        assert_eq!(admit(t, 80, None, Some(old)), Admission::Refused);
    }

    #[test]
    fn only_the_bound_address_is_served() {
        let bound = "127.0.0.1:8719".parse().unwrap();
        for ok in [
            "127.0.0.1:8719",
            "localhost:8719",
            "LOCALHOST:8719",
            "[::1]:8719",
        ] {
            assert_eq!(misdirected(bound, Some(ok), None), None, "{ok}");
        }
        let origin = Some("http://localhost:8719");
        assert_eq!(misdirected(bound, Some("127.0.0.1:8719"), origin), None);
        assert_eq!(misdirected(bound, None, None).unwrap().0, 400);
        for bad in [
            "evil.example:8719",
            "127.0.0.1:8720",
            "localhost",
            "127.0.0.1",
        ] {
            assert_eq!(misdirected(bound, Some(bad), None).unwrap().0, 403, "{bad}");
        }
        let evil = Some("http://evil.example:8719");
        assert_eq!(
            misdirected(bound, Some("localhost:8719"), evil).unwrap().0,
            403
        );
        assert_eq!(
            misdirected(bound, Some("localhost:8719"), Some("null"))
                .unwrap()
                .0,
            403
        );
    }

    #[test]
    fn tokens_are_128_bits_of_hex_and_differ() {
        let (a, b) = (new_token().unwrap(), new_token().unwrap());
        assert_eq!(a.len(), 32);
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
    }

    #[test]
    fn only_reads_are_served() {
        assert!(reads("GET") && reads("HEAD"));
        assert!(!reads("POST") && !reads("PUT") && !reads("DELETE") && !reads("OPTIONS"));
    }
}
