//! Who may read: a request carries the server's token (in the URL's
//! `token` parameter, once) or the cookie that first request was given;
//! anything else is refused. Only `GET` and `HEAD` are served: there is
//! no write endpoint of any kind. Every response carries the headers that
//! keep a browser from treating it as anything but what it says.

use std::io::Read;

/// The cookie that carries the token after the first request.
pub(crate) const COOKIE: &str = "harnery_token";

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
    url_token: Option<&str>,
    cookie_header: Option<&str>,
) -> Admission {
    let from_cookie = cookie_header.and_then(|h| cookie_value(h, COOKIE));
    if from_cookie.is_some_and(|t| same(t, token)) {
        return Admission::Known;
    }
    if url_token.is_some_and(|t| same(t, token)) {
        return Admission::Introduced;
    }
    Admission::Refused
}

/// The `Set-Cookie` value that admits later requests.
pub(crate) fn set_cookie(token: &str) -> String {
    format!("{COOKIE}={token}; Path=/; HttpOnly; SameSite=Strict")
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
        assert_eq!(admit(t, None, None), Admission::Refused);
        assert_eq!(admit(t, Some("00fe"), None), Admission::Refused);
        assert_eq!(admit(t, Some("00ff0"), None), Admission::Refused);
        assert_eq!(admit(t, Some("00ff"), None), Admission::Introduced);
        let cookie = format!("a=b; {COOKIE}=00ff");
        assert_eq!(admit(t, None, Some(&cookie)), Admission::Known);
        assert_eq!(
            admit(t, None, Some("harnery_token=00fe")),
            Admission::Refused
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
