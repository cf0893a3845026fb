//! Who may read: a request names this server in `Host` (and `Origin`, when
//! it has one), then carries the server's token (in the URL's `token`
//! parameter, once) or the cookie that first request was given, named for
//! the server's port; anything else is refused. Only `GET` and `HEAD` are served: there is
//! no write endpoint of any kind. Every response carries the headers that
//! keep a browser from treating it as anything but what it says.

use std::io::Read;
use std::net::{IpAddr, SocketAddr};

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

/// The names a request may give this server in `Host` and `Origin`: a
/// page another site serves (DNS rebinding) reaches the port under its own
/// name, so only these are served, with the bound port: `127.0.0.1`,
/// `localhost`, `[::1]`, the address `--addr` bound, any IP literal when
/// that address is unspecified (`0.0.0.0`, `[::]`: the machine's LAN
/// addresses; a literal address cannot be rebound), and the names
/// `--allow-host` gives.
pub(crate) struct Names {
    bound: SocketAddr,
    allowed: Vec<String>,
}

impl Names {
    pub(crate) fn new(bound: SocketAddr, allowed: Vec<String>) -> Names {
        Names { bound, allowed }
    }

    /// Why a request's `Host` or `Origin` does not name this server, if it
    /// does not: the status (400 without a `Host`, else 403) and why.
    pub(crate) fn misdirected(
        &self,
        host: Option<&str>,
        origin: Option<&str>,
    ) -> Option<(u16, String)> {
        let Some(host) = host else {
            return Some((400, "the request has no Host header".to_string()));
        };
        if !self.known(host.trim()) {
            return Some((403, format!("Host {host:?} is not this server's address")));
        }
        match origin.map(str::trim) {
            None => None,
            Some(o) if o.strip_prefix("http://").is_some_and(|h| self.known(h)) => None,
            Some(o) => Some((403, format!("Origin {o:?} is not this server"))),
        }
    }

    /// Whether `host` (`name:port`, `[v6]:port`, or a name alone for port
    /// 80) is one of this server's names.
    fn known(&self, host: &str) -> bool {
        let Some((name, port)) = split_host(host) else {
            return false;
        };
        let ip = self.bound.ip();
        let fixed = ["127.0.0.1", "localhost", "::1"];
        port == self.bound.port()
            && (fixed.iter().any(|n| n.eq_ignore_ascii_case(name))
                || name
                    .parse::<IpAddr>()
                    .is_ok_and(|n| n == ip || ip.is_unspecified())
                || self.allowed.iter().any(|n| n.eq_ignore_ascii_case(name)))
    }
}

/// `host` as its name (an IPv6 literal without its brackets) and port.
fn split_host(host: &str) -> Option<(&str, u16)> {
    let (name, port) = match host.strip_prefix('[') {
        Some(rest) => {
            let (v6, after) = rest.split_once(']')?;
            v6.parse::<std::net::Ipv6Addr>().ok()?;
            (v6, after)
        }
        None => {
            let name = host.split(':').next().unwrap_or(host);
            (name, &host[name.len()..])
        }
    };
    let port = match port {
        "" => 80,
        p => p.strip_prefix(':')?.parse().ok()?,
    };
    (!name.is_empty()).then_some((name, port))
}

/// A name for `--allow-host`: a DNS name (letters, digits, `-` and `.`),
/// no port, no pattern.
pub fn host_name(text: &str) -> Result<String, String> {
    let ok = !text.is_empty()
        && text.len() <= 253
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.');
    match ok {
        true => Ok(text.to_ascii_lowercase()),
        false => Err(format!(
            "{text:?} is not a host name (letters, digits, - and .; the port is the bound one)"
        )),
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

/// Headers every response carries, the server's own refusals included.
pub(crate) const HEADERS: &[(&str, &str)] = &[
    ("Content-Security-Policy", POLICY),
    ("X-Content-Type-Options", "nosniff"),
    ("Referrer-Policy", "no-referrer"),
    ("X-Frame-Options", "DENY"),
    ("Cache-Control", "no-store"),
];

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
        let names = Names::new("127.0.0.1:8719".parse().unwrap(), vec![]);
        let check = |host: Option<&str>, origin: Option<&str>| names.misdirected(host, origin);
        for ok in [
            "127.0.0.1:8719",
            "localhost:8719",
            "LOCALHOST:8719",
            "[::1]:8719",
        ] {
            assert_eq!(check(Some(ok), None), None, "{ok}");
        }
        let origin = Some("http://localhost:8719");
        assert_eq!(check(Some("127.0.0.1:8719"), origin), None);
        assert_eq!(check(None, None).unwrap().0, 400);
        for bad in [
            "evil.example:8719",
            "127.0.0.1:8720",
            "localhost",
            "127.0.0.1",
            "192.168.1.5:8719",
            "[::1]",
            "::1:8719",
            "127.0.0.1:8719:8719",
            ":8719",
            "[::1]x:8719",
        ] {
            assert_eq!(check(Some(bad), None).unwrap().0, 403, "{bad}");
        }
        let evil = Some("http://evil.example:8719");
        assert_eq!(check(Some("localhost:8719"), evil).unwrap().0, 403);
        assert_eq!(check(Some("localhost:8719"), Some("null")).unwrap().0, 403);
    }

    #[test]
    fn bound_to_every_address_any_ip_literal_is_served_and_names_only_when_allowed() {
        let names = Names::new("0.0.0.0:8719".parse().unwrap(), vec!["box.lan".into()]);
        let check = |host: &str| names.misdirected(Some(host), None).map(|m| m.0);
        for ok in [
            "192.168.1.5:8719",
            "10.0.0.7:8719",
            "[fe80::1]:8719",
            "box.lan:8719",
            "BOX.LAN:8719",
            "localhost:8719",
        ] {
            assert_eq!(check(ok), None, "{ok}");
        }
        for bad in [
            "192.168.1.5:8720",
            "evil.example:8719",
            "box.lan.evil:8719",
            "192.168.1.5",
        ] {
            assert_eq!(check(bad), Some(403), "{bad}");
        }
        let lan = Some("http://192.168.1.5:8719");
        assert_eq!(names.misdirected(Some("192.168.1.5:8719"), lan), None);
        // Bound to one address, another address's literal is not this server.
        let one = Names::new("192.168.1.5:8719".parse().unwrap(), vec![]);
        assert_eq!(one.misdirected(Some("192.168.1.5:8719"), None), None);
        assert_eq!(one.misdirected(Some("10.0.0.7:8719"), None).unwrap().0, 403);
        let on_80 = Names::new("127.0.0.1:80".parse().unwrap(), vec![]);
        assert_eq!(on_80.misdirected(Some("localhost"), None), None);
    }

    #[test]
    fn allowed_host_names_are_plain_dns_names() {
        assert_eq!(host_name("Box.LAN").unwrap(), "box.lan");
        for bad in ["", "box.lan:80", "*.lan", "a b", "box/lan"] {
            assert!(host_name(bad).is_err(), "{bad}");
        }
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
