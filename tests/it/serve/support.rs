//! A running `harnery serve` for the tests, and a bare HTTP/1.1 client
//! (one request per connection) to talk to it and to Chromium's devtools.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Stdio};

/// A `harnery serve --addr 127.0.0.1:0` over a home, ended on drop.
pub struct Served {
    child: Child,
    /// `http://127.0.0.1:PORT`
    pub base: String,
    pub port: u16,
    pub token: String,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Served {
    pub fn start(home: &Path) -> Served {
        Served::start_with(home, &[])
    }

    /// `harnery serve --addr 127.0.0.1:0 extra…`.
    pub fn start_with(home: &Path, extra: &[&str]) -> Served {
        Served::start_at(home, "127.0.0.1:0", extra)
    }

    /// `harnery serve --addr addr extra…`; the URL it prints names
    /// 127.0.0.1 (the loopback address when `addr` is every address).
    pub fn start_at(home: &Path, addr: &str, extra: &[&str]) -> Served {
        Served::spawn(home, addr, extra, Stdio::inherit())
    }

    /// `harnery serve --addr 127.0.0.1:0` with its stderr written to `log`.
    pub fn start_logging(home: &Path, log: &Path) -> Served {
        let file = std::fs::File::create(log).expect("the log file is made");
        Served::spawn(home, "127.0.0.1:0", &[], Stdio::from(file))
    }

    fn spawn(home: &Path, addr: &str, extra: &[&str], stderr: Stdio) -> Served {
        let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("harnery"))
            .env("HARNERY_HOME", home)
            .env("HARNERY_NOW", crate::common::NOW)
            .env("HARNERY_RECORDS", "off")
            .args(["serve", "--addr", addr])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .expect("harnery serve starts");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .expect("serve prints its URL");
        let url = line
            .trim()
            .strip_prefix("harnery serve: ")
            .unwrap_or_else(|| panic!("serve printed {line:?}"));
        let (base, token) = url.split_once("/?token=").expect("the URL holds the token");
        assert!(base.starts_with("http://127.0.0.1:"), "{base}");
        let port = base.rsplit(':').next().unwrap().parse().unwrap();
        Served {
            child,
            base: base.to_string(),
            port,
            token: token.to_string(),
        }
    }

    /// The URL that admits a browser.
    pub fn url(&self, path: &str) -> String {
        let sep = if path.contains('?') { '&' } else { '?' };
        format!("{}{path}{sep}token={}", self.base, self.token)
    }

    pub fn cookie(&self) -> String {
        format!("harnery_token_{}={}", self.port, self.token)
    }

    /// `GET path` with the cookie; the body, asserting 200.
    pub fn get(&self, path: &str) -> String {
        let r = request(self.port, "GET", path, Some(&self.cookie()));
        assert_eq!(r.status, 200, "GET {path}: {}", r.body);
        r.body
    }

    pub fn get_json(&self, path: &str) -> serde_json::Value {
        serde_json::from_str(&self.get(path)).expect("the API answers JSON")
    }
}

pub struct Reply {
    pub status: u16,
    /// Header lines, names lowercased: `name: value`.
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// One request to 127.0.0.1:`port`.
pub fn request(port: u16, method: &str, path: &str, cookie: Option<&str>) -> Reply {
    let mut head =
        format!("{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n");
    if let Some(c) = cookie {
        head.push_str(&format!("Cookie: {c}\r\n"));
    }
    if method == "POST" {
        head.push_str("Content-Length: 0\r\n");
    }
    head.push_str("\r\n");
    request_raw(port, &head, method == "HEAD")
}

/// Send `head` as it is to 127.0.0.1:`port` and read the reply; a reply
/// that does not come within a minute fails the test instead of hanging it.
pub fn request_raw(port: u16, head: &str, head_only: bool) -> Reply {
    let s = TcpStream::connect(("127.0.0.1", port)).expect("the server accepts");
    s.set_read_timeout(Some(std::time::Duration::from_secs(60)))
        .unwrap();
    (&s).write_all(head.as_bytes()).unwrap();
    read_reply(BufReader::new(s), head_only)
}

/// A response: its head, then the body its `Content-Length` gives (a
/// server may keep the connection open), chunks, or all until closed.
fn read_reply(mut r: BufReader<TcpStream>, head_only: bool) -> Reply {
    let mut status_line = String::new();
    r.read_line(&mut status_line).expect("a status line");
    let status = status_line.split(' ').nth(1).unwrap().parse().unwrap();
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        r.read_line(&mut line).unwrap();
        let Some((n, v)) = line.trim_end().split_once(':') else {
            break;
        };
        headers.push((n.trim().to_ascii_lowercase(), v.trim().to_string()));
    }
    let mut reply = Reply {
        status,
        headers,
        body: String::new(),
    };
    if head_only {
        return reply;
    }
    let mut raw = Vec::new();
    match reply
        .header("content-length")
        .map(|n| n.parse::<usize>().unwrap())
    {
        Some(n) => {
            raw.resize(n, 0);
            r.read_exact(&mut raw).unwrap();
        }
        None => {
            r.read_to_end(&mut raw).unwrap();
        }
    }
    let body = String::from_utf8_lossy(&raw).into_owned();
    let chunked = reply
        .header("transfer-encoding")
        .is_some_and(|v| v.contains("chunked"));
    reply.body = if chunked { dechunk(&body) } else { body };
    reply
}

fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 {
            break;
        }
        out.push_str(&rest[..n]);
        body = &rest[n + 2..];
    }
    out
}

/// A GET without a cookie (Chromium's devtools list).
pub fn get_plain(port: u16, path: &str) -> String {
    let r = request(port, "GET", path, None);
    assert_eq!(r.status, 200, "GET {path}");
    r.body
}
