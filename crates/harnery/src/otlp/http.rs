//! A small HTTP/1.1 client for one POST at a time: plain TCP or TLS
//! (rustls, the system's roots), a timeout on connect, write and read,
//! and the response's status, `Retry-After` and body. Each request has
//! its own connection (`Connection: close`): a push sends documents of a
//! thousand spans, so a connection's cost is small beside its body.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::time::Duration;

/// An `http://` or `https://` URL, taken apart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Url {
    pub tls: bool,
    pub host: String,
    pub port: u16,
    /// The path and query, from the first `/`.
    pub path: String,
}

impl Url {
    pub fn parse(text: &str) -> Result<Url, String> {
        let (tls, rest) = if let Some(r) = text.strip_prefix("https://") {
            (true, r)
        } else if let Some(r) = text.strip_prefix("http://") {
            (false, r)
        } else {
            return Err(format!("{text:?} is not an http:// or https:// URL"));
        };
        let (authority, path) = match rest.find(['/', '?']) {
            Some(i) if rest.as_bytes()[i] == b'/' => (&rest[..i], rest[i..].to_string()),
            Some(i) => (&rest[..i], format!("/{}", &rest[i..])),
            None => (rest, "/".to_string()),
        };
        if authority.contains('@') {
            return Err(format!(
                "{text:?}: credentials in the URL are not taken; use a header"
            ));
        }
        let (host, port) = match authority.rsplit_once(':') {
            Some((h, p)) if !p.contains(']') => {
                let port = p
                    .parse()
                    .map_err(|_| format!("{text:?}: port {p:?} is not a number"))?;
                (h, port)
            }
            _ => (authority, if tls { 443 } else { 80 }),
        };
        let host = host.trim_start_matches('[').trim_end_matches(']');
        if host.is_empty() {
            return Err(format!("{text:?} has no host"));
        }
        Ok(Url {
            tls,
            host: host.to_string(),
            port,
            path,
        })
    }
}

/// What came back.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    /// `Retry-After` in seconds, where the receiver gave one as a number.
    pub retry_after: Option<u64>,
    pub body: Vec<u8>,
}

/// The TLS settings every request shares: the system's roots.
pub fn tls_config() -> Arc<rustls::ClientConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls_native_certs::load_native_certs().certs {
        let _ = roots.add(cert);
    }
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("the ring provider supports the default protocol versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    Arc::new(config)
}

/// The most of a response body kept (a receiver's error text, a partial
/// success): enough to report, never a flood.
const BODY_LIMIT: u64 = 1 << 20;

/// POST `body` to `url` with `headers`; an I/O error is a connection that
/// failed (refused, reset, timed out, TLS).
pub fn post(
    url: &Url,
    tls: &Arc<rustls::ClientConfig>,
    headers: &[(String, String)],
    content_type: &str,
    body: &[u8],
    timeout: Duration,
) -> io::Result<Response> {
    let addrs = (url.host.as_str(), url.port).to_socket_addrs()?;
    let mut last = io::Error::new(io::ErrorKind::NotFound, "the host has no address");
    let mut tcp = None;
    for addr in addrs {
        match TcpStream::connect_timeout(&addr, timeout) {
            Ok(s) => {
                tcp = Some(s);
                break;
            }
            Err(e) => last = e,
        }
    }
    let tcp = tcp.ok_or(last)?;
    tcp.set_read_timeout(Some(timeout))?;
    tcp.set_write_timeout(Some(timeout))?;
    tcp.set_nodelay(true)?;
    let host_header = if (url.tls && url.port == 443) || (!url.tls && url.port == 80) {
        url.host.clone()
    } else if url.host.contains(':') {
        format!("[{}]:{}", url.host, url.port)
    } else {
        format!("{}:{}", url.host, url.port)
    };
    let mut head = format!(
        "POST {} HTTP/1.1\r\nHost: {host_header}\r\nUser-Agent: harnery/{}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n",
        url.path,
        env!("CARGO_PKG_VERSION"),
        body.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    if url.tls {
        let name = rustls::pki_types::ServerName::try_from(url.host.clone())
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        let conn = rustls::ClientConnection::new(tls.clone(), name).map_err(io::Error::other)?;
        exchange(rustls::StreamOwned::new(conn, tcp), &head, body)
    } else {
        exchange(tcp, &head, body)
    }
}

fn exchange(mut stream: impl Read + Write, head: &str, body: &[u8]) -> io::Result<Response> {
    stream.write_all(head.as_bytes())?;
    stream.write_all(body)?;
    stream.flush()?;
    read_response(BufReader::new(stream))
}

fn invalid(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("the response {what}"))
}

fn read_response(mut r: impl BufRead) -> io::Result<Response> {
    let mut line = String::new();
    loop {
        line.clear();
        if r.read_line(&mut line)? == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the connection closed before a response",
            ));
        }
        // An interim 1xx answer is followed by the real one.
        let status: u16 = line
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| invalid("has no status line"))?;
        let (mut length, mut chunked, mut retry_after) = (None, false, None);
        loop {
            line.clear();
            if r.read_line(&mut line)? == 0 {
                return Err(invalid("ends in its headers"));
            }
            let l = line.trim_end();
            if l.is_empty() {
                break;
            }
            let Some((name, value)) = l.split_once(':') else {
                continue;
            };
            let value = value.trim();
            match name.trim().to_ascii_lowercase().as_str() {
                "content-length" => length = value.parse::<u64>().ok(),
                "transfer-encoding" => chunked = value.to_ascii_lowercase().contains("chunked"),
                "retry-after" => retry_after = value.parse().ok(),
                _ => {}
            }
        }
        if (100..200).contains(&status) {
            continue;
        }
        let body = if chunked {
            read_chunked(&mut r)?
        } else {
            let mut body = Vec::new();
            let limit = length.unwrap_or(BODY_LIMIT).min(BODY_LIMIT);
            (&mut r).take(limit).read_to_end(&mut body)?;
            body
        };
        return Ok(Response {
            status,
            retry_after,
            body,
        });
    }
}

fn read_chunked(r: &mut impl BufRead) -> io::Result<Vec<u8>> {
    let mut body = Vec::new();
    let mut line = String::new();
    loop {
        line.clear();
        r.read_line(&mut line)?;
        let size = line.trim().split(';').next().unwrap_or("");
        let size = u64::from_str_radix(size, 16).map_err(|_| invalid("has a bad chunk size"))?;
        if size == 0 {
            return Ok(body);
        }
        let keep = size.min(BODY_LIMIT.saturating_sub(body.len() as u64));
        r.take(keep).read_to_end(&mut body)?;
        io::copy(&mut r.take(size - keep), &mut io::sink())?;
        line.clear();
        r.read_line(&mut line)?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_come_apart() {
        let u = Url::parse("http://localhost:4318/v1/traces").unwrap();
        assert_eq!(
            (u.tls, u.host.as_str(), u.port, u.path.as_str()),
            (false, "localhost", 4318, "/v1/traces")
        );
        let u = Url::parse("https://otel.example.com").unwrap();
        assert_eq!((u.tls, u.port, u.path.as_str()), (true, 443, "/"));
        let u = Url::parse("http://[::1]:9/x?y=1").unwrap();
        assert_eq!(
            (u.host.as_str(), u.port, u.path.as_str()),
            ("::1", 9, "/x?y=1")
        );
        assert!(Url::parse("ftp://x").is_err());
        assert!(Url::parse("http://u:p@x/").is_err());
        assert!(Url::parse("http://x:port/").is_err());
    }

    #[test]
    fn responses_read_with_length_chunks_and_interim_answers() {
        let r = read_response(&b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 429 Too Many\r\nRetry-After: 3\r\nContent-Length: 2\r\n\r\nokEXTRA"[..]).unwrap();
        assert_eq!(
            (r.status, r.retry_after, r.body.as_slice()),
            (429, Some(3), &b"ok"[..])
        );
        let r = read_response(&b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n"[..]).unwrap();
        assert_eq!(r.body, b"abcde");
        assert!(read_response(&b""[..]).is_err());
    }
}
