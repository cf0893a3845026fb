//! The hostile probes of `harnery serve`, against the real binary: each
//! gets its clear answer or is cut, and a normal request (with the cookie)
//! still answers while the hostile connections are held open.

use crate::serve::support::{Reply, Served, request, request_raw};

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use harnery::serve::http::{MAX_CONNECTIONS, MAX_HEAD, WRITE_STALL};

/// How long a test waits for an answer before it fails instead of hanging.
const HANG_GUARD: Duration = Duration::from_secs(20);

/// A request the server must still answer: a static file and the API (a
/// worker's read of the ledger), with the cookie, each within the guard.
fn still_answers(served: &Served) {
    for path in ["/static/app.js", "/api/last-seq"] {
        let r = guarded(served.port, path, &served.cookie());
        assert_eq!(r, 200, "GET {path} while the probes run");
    }
}

/// `GET path` with `cookie`: its status, read within [`HANG_GUARD`].
fn guarded(port: u16, path: &str, cookie: &str) -> u16 {
    let s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(HANG_GUARD)).unwrap();
    let head = format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nCookie: {cookie}\r\n\r\n");
    (&s).write_all(head.as_bytes()).unwrap();
    status_of(&s).unwrap_or_else(|| panic!("GET {path}: no answer within {HANG_GUARD:?}"))
}

/// The status of the reply on `s`, if one comes before its read timeout.
fn status_of(s: &TcpStream) -> Option<u16> {
    let mut line = String::new();
    BufReader::new(s).read_line(&mut line).ok()?;
    line.split(' ').nth(1)?.parse().ok()
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
    // Small announced bodies: refused as soon as the head is read, never
    // waited for.
    for _ in 0..4 {
        let head =
            format!("POST / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: 10\r\n\r\n");
        let (s, status) = hold(port, &head, true);
        assert_eq!(status, Some(413), "a small body");
        held.push(s);
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

#[test]
fn idle_and_half_sent_requests_are_answered_408_and_hold_nothing() {
    let home = tempfile::tempdir().unwrap();
    let served = Served::start(home.path());
    let port = served.port;
    let connect = || {
        let s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        s
    };
    // Many connections that send nothing, and some that send half a head
    // (a slow client): ten times the workers.
    let idle: Vec<TcpStream> = (0..32).map(|_| connect()).collect();
    let half: Vec<TcpStream> = (0..8)
        .map(|_| {
            let s = connect();
            (&s).write_all(format!("GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n").as_bytes())
                .unwrap();
            s
        })
        .collect();
    still_answers(&served);
    for s in idle.iter().chain(&half) {
        assert_eq!(status_of(s), Some(408), "a head that never came");
    }
    still_answers(&served);
}

#[test]
fn a_flood_beyond_the_cap_is_answered_503_and_a_real_request_still_gets_in() {
    let home = tempfile::tempdir().unwrap();
    let served = Served::start(home.path());
    let port = served.port;
    let flood: Vec<TcpStream> = (0..MAX_CONNECTIONS + 40)
        .map(|_| {
            let s = TcpStream::connect(("127.0.0.1", port)).unwrap();
            s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
            s
        })
        .collect();
    // The newest connection (a real request) makes room by closing the
    // oldest idle one; the flood cannot keep it out.
    still_answers(&served);
    // The oldest of the flood were turned away with 503 to make room.
    let mut turned_away = 0;
    for s in &flood[..40] {
        match status_of(s) {
            Some(503) => turned_away += 1,
            other => assert_eq!(other, Some(408), "an idle connection's answer"),
        }
    }
    assert!(
        turned_away > 0,
        "no connection beyond the cap was turned away"
    );
    let last = flood.last().unwrap();
    assert_eq!(
        status_of(last),
        Some(408),
        "the newest idle connection times out"
    );
}

#[test]
fn an_oversized_head_is_answered_431() {
    let home = tempfile::tempdir().unwrap();
    let served = Served::start(home.path());
    let port = served.port;
    let long = "a".repeat(MAX_HEAD);
    let head = format!(
        "GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nCookie: {}\r\nX-Long: {long}\r\n\r\n",
        served.cookie()
    );
    let (_s, status) = hold(port, &head, true);
    assert_eq!(status, Some(431));
    // A head that never ends: refused once it passes the cap.
    let s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    (&s).write_all(format!("GET / HTTP/1.1\r\nX-Long: {long}").as_bytes())
        .unwrap();
    assert_eq!(status_of(&s), Some(431));
    let r = request_raw(port, "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", false);
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(r.body.contains("more than one Host"), "{}", r.body);
    still_answers(&served);
}

/// A home whose one session holds a prompt of `bytes` bytes (`<` and `>`
/// in it, so its page is larger still): the event page's path.
fn home_with_a_large_prompt(home: &std::path::Path, bytes: usize) -> String {
    let lines = crate::common::basic_hook_lines();
    let sid = "0badc0de-0000-4000-8000-000000000001";
    let start = lines.iter().find(|(e, _)| e == "SessionStart").unwrap();
    let prompt = lines.iter().find(|(e, _)| e == "UserPromptSubmit").unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&prompt.1.replace("SESSION", sid)).unwrap();
    v["prompt"] = "x <y> ".repeat(bytes / 6).into();
    crate::common::deliver(home, "claude-code", &start.1.replace("SESSION", sid));
    crate::common::deliver(home, "claude-code", &v.to_string());
    crate::common::harnery(home)
        .arg("finalize")
        .assert()
        .success();
    format!("/sessions/{sid}/events/1")
}

#[test]
fn slow_readers_of_a_large_page_hold_no_worker_and_are_cut() {
    let home = tempfile::tempdir().unwrap();
    let path = home_with_a_large_prompt(home.path(), 9 << 20);
    let served = Served::start_with(home.path(), &["--no-drain"]);
    let port = served.port;
    let head = format!(
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nCookie: {}\r\n\r\n",
        served.cookie()
    );
    // Two readers take the reply's head and a little of its body, then
    // stop reading.
    let slow: Vec<(BufReader<TcpStream>, usize)> = (0..2)
        .map(|_| {
            let s = TcpStream::connect(("127.0.0.1", port)).unwrap();
            s.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
            (&s).write_all(head.as_bytes()).unwrap();
            let mut r = BufReader::new(s);
            let mut length = None;
            loop {
                let mut line = String::new();
                r.read_line(&mut line).unwrap();
                if line.trim().is_empty() {
                    break;
                }
                if let Some(n) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = Some(n.trim().parse().unwrap());
                }
            }
            let mut some = [0u8; 1024];
            r.read_exact(&mut some).unwrap();
            (r, length.expect("the reply has a Content-Length"))
        })
        .collect();
    assert!(slow[0].1 > 16 << 20, "the page is {} bytes", slow[0].1);
    still_answers(&served);
    // Past the stall the server allows, each slow reader is cut: what it
    // can still read is what the sockets held, short of the page.
    std::thread::sleep(WRITE_STALL + Duration::from_secs(5));
    for (mut r, length) in slow {
        let mut rest = Vec::new();
        let _ = r.read_to_end(&mut rest);
        assert!(
            1024 + rest.len() < length,
            "a stalled reader was sent the whole page ({length} bytes)"
        );
    }
    still_answers(&served);
}

#[test]
fn bound_to_every_address_any_ip_literal_and_the_allowed_names_are_answered() {
    let home = tempfile::tempdir().unwrap();
    let served = Served::start_at(home.path(), "0.0.0.0:0", &["--allow-host", "Box.LAN"]);
    let port = served.port;
    let cookie = served.cookie();
    let get = |host: &str| {
        let head =
            format!("GET /api/last-seq HTTP/1.1\r\nHost: {host}\r\nCookie: {cookie}\r\n\r\n");
        request_raw(port, &head, false)
    };
    // A LAN client names the machine by its address, or by an allowed name.
    for ok in [
        format!("192.0.2.7:{port}"),
        format!("[2001:db8::7]:{port}"),
        format!("box.lan:{port}"),
        format!("localhost:{port}"),
    ] {
        let r = get(&ok);
        assert_eq!(r.status, 200, "Host {ok}: {}", r.body);
    }
    for bad in [
        format!("evil.example:{port}"),
        format!("192.0.2.7:{}", port.wrapping_add(1)),
        format!("box.lan.evil.example:{port}"),
    ] {
        assert_eq!(get(&bad).status, 403, "Host {bad}");
    }
    assert!(
        served.base.starts_with("http://127.0.0.1:"),
        "{}",
        served.base
    );
}
