//! The hostile probes of `harnery serve`, against the real binary: each
//! gets its clear answer, and a normal request (with the cookie) still
//! answers while the hostile connections are held open.

use crate::serve::support::{Reply, Served, request, request_raw};

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::time::Duration;

/// A request the server must still answer: a static file, with the cookie.
fn still_answers(served: &Served) {
    let r = request(served.port, "GET", "/static/app.js", Some(&served.cookie()));
    assert_eq!(r.status, 200, "{}", r.body);
}

/// A connection that sent `head` and is held open; its status line, when
/// `answered`, read within a minute.
fn hold(port: u16, head: &str, answered: bool) -> (TcpStream, Option<u16>) {
    let s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    (&s).write_all(head.as_bytes()).unwrap();
    let status = answered.then(|| {
        let mut line = String::new();
        BufReader::new(&s).read_line(&mut line).unwrap();
        line.split(' ').nth(1).unwrap().parse().unwrap()
    });
    (s, status)
}

#[test]
fn a_body_announced_and_never_sent_is_refused_and_holds_no_worker() {
    let home = tempfile::tempdir().unwrap();
    let served = Served::start(home.path());
    let port = served.port;
    let cookie = served.cookie();
    let mut held = Vec::new();
    // Eight bodies that never come (twice the workers), with the cookie
    // and without: each answered 413 before any of it is read.
    for (i, method) in ["POST", "PUT", "GET", "POST"].iter().enumerate() {
        for with_cookie in [false, true] {
            let c = match with_cookie {
                true => format!("Cookie: {cookie}\r\n"),
                false => String::new(),
            };
            let head = format!(
                "{method} /api/sessions HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{c}\
                 Content-Length: {}\r\n\r\n",
                100_000 + i
            );
            let (s, status) = hold(port, &head, true);
            assert_eq!(status, Some(413), "{method} with a body");
            held.push(s);
        }
    }
    let chunked =
        format!("POST / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nTransfer-Encoding: chunked\r\n\r\n");
    let (s, status) = hold(port, &chunked, true);
    assert_eq!(status, Some(413), "a chunked body");
    held.push(s);
    // Small announced bodies `tiny_http` waits for before the request is
    // made: never a worker's wait either.
    for _ in 0..4 {
        let head =
            format!("POST / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: 10\r\n\r\n");
        held.push(hold(port, &head, false).0);
    }
    still_answers(&served);
    assert!(served.get_json("/api/last-seq").is_object());
    drop(held);
}

#[test]
fn only_the_bound_address_is_answered() {
    let home = tempfile::tempdir().unwrap();
    let served = Served::start(home.path());
    let port = served.port;
    let cookie = served.cookie();
    let get = |host: Option<&str>, origin: Option<&str>, path: &str| -> Reply {
        let mut head = format!("GET {path} HTTP/1.1\r\nConnection: close\r\nCookie: {cookie}\r\n");
        if let Some(h) = host {
            head.push_str(&format!("Host: {h}\r\n"));
        }
        if let Some(o) = origin {
            head.push_str(&format!("Origin: {o}\r\n"));
        }
        head.push_str("\r\n");
        request_raw(port, &head, false)
    };
    let app = "/static/app.js";
    for ok in [
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        format!("[::1]:{port}"),
    ] {
        assert_eq!(get(Some(&ok), None, app).status, 200, "Host {ok}");
    }
    // A DNS-rebinding page reaches the port under its own name.
    let rebound = get(Some(&format!("evil.example:{port}")), None, "/api/last-seq");
    assert_eq!(rebound.status, 403, "{}", rebound.body);
    assert!(rebound.body.contains("Host"), "{}", rebound.body);
    let other_port = format!("127.0.0.1:{}", port.wrapping_add(1));
    assert_eq!(get(Some(&other_port), None, app).status, 403);
    let no_host = get(None, None, app);
    assert_eq!(no_host.status, 400, "{}", no_host.body);
    let here = format!("127.0.0.1:{port}");
    let mine = format!("http://localhost:{port}");
    assert_eq!(get(Some(&here), Some(&mine), app).status, 200);
    let foreign = get(Some(&here), Some("http://evil.example"), "/api/last-seq");
    assert_eq!(foreign.status, 403, "{}", foreign.body);
    assert!(foreign.body.contains("Origin"), "{}", foreign.body);
    // The token in the URL under a foreign name sets no cookie.
    let path = format!("/?token={}", served.token);
    let bad = get(Some(&format!("evil.example:{port}")), None, &path);
    assert_eq!(bad.status, 403);
    assert_eq!(bad.header("set-cookie"), None);
    still_answers(&served);
}

#[test]
fn the_cookie_is_named_for_the_port_and_two_servers_keep_theirs() {
    let (a_home, b_home) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (a, b) = (Served::start(a_home.path()), Served::start(b_home.path()));
    let introduce = |s: &Served| {
        let r = request(
            s.port,
            "GET",
            &format!("/static/app.js?token={}", s.token),
            None,
        );
        assert_eq!(r.status, 200);
        r.header("set-cookie").unwrap().to_string()
    };
    let a_cookie = introduce(&a);
    assert!(
        a_cookie.starts_with(&format!("harnery_token_{}={};", a.port, a.token)),
        "{a_cookie}"
    );
    assert!(introduce(&b).starts_with(&format!("harnery_token_{}=", b.port)));
    // A browser sends both cookies to both ports: each server reads its own.
    let both = format!("{}; {}", a.cookie(), b.cookie());
    for s in [&a, &b] {
        assert_eq!(
            request(s.port, "GET", "/static/app.js", Some(&both)).status,
            200
        );
    }
    // One server's cookie never admits to the other.
    let a_at_b = format!("harnery_token_{}={}", b.port, a.token);
    assert_eq!(
        request(b.port, "GET", "/static/app.js", Some(&a_at_b)).status,
        403
    );
    assert_eq!(
        request(b.port, "GET", "/static/app.js", Some(&a.cookie())).status,
        403
    );
    let unnamed = format!("harnery_token={}", a.token);
    assert_eq!(
        request(a.port, "GET", "/static/app.js", Some(&unnamed)).status,
        403
    );
    still_answers(&a);
    still_answers(&b);
}

#[test]
fn a_page_past_any_number_answers_400() {
    let home = tempfile::tempdir().unwrap();
    let served = Served::start(home.path());
    let cookie = served.cookie();
    for path in [
        format!("/?page={}", usize::MAX),
        format!("/?page={}", usize::MAX / 50 + 1),
        "/?page=-1".to_string(),
        "/?page=99999999999999999999999999".to_string(),
        format!("/api/sessions?limit=1000&page={}", usize::MAX / 999),
        "/api/sessions?page=x".to_string(),
    ] {
        let r = request(served.port, "GET", &path, Some(&cookie));
        assert_eq!(r.status, 400, "{path}: {}", r.body);
        assert!(r.body.contains("page="), "{path}: {}", r.body);
    }
    still_answers(&served);
}

#[test]
fn a_nul_or_bytes_not_utf8_in_a_parameter_answers_400_naming_it() {
    let home = tempfile::tempdir().unwrap();
    let served = Served::start(home.path());
    let cookie = served.cookie();
    for path in [
        "/search?q=a%00b",
        "/api/search?q=a%00b",
        "/api/search?q=%ff%fe",
        "/?agent=%00",
    ] {
        let r = request(served.port, "GET", path, Some(&cookie));
        assert_eq!(r.status, 400, "{path}: {}", r.body);
        let name = path.split('?').nth(1).unwrap().split('=').next().unwrap();
        assert!(
            r.body.contains(&format!("{name} holds a NUL")),
            "{path}: {}",
            r.body
        );
    }
    let r = request(served.port, "GET", "/api/sessions/a%00b", Some(&cookie));
    assert_eq!(r.status, 400, "{}", r.body);
    still_answers(&served);
}
