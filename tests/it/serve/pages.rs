//! `harnery serve` for real: the binary serving a finalized corpus home on
//! a free port, asked with a bare HTTP client and driven in headless
//! Chromium over the devtools protocol. A request needs the printed
//! token; only reads are answered; the API says what the commands' `--json`
//! says; every page loads with no error and no request to another host;
//! Tab reaches every session link; a signal finalized while a session page
//! is open appears on it, and the sessions page marks new and changed
//! sessions; a search finds what `harnery search` finds and its hits lead
//! to their events.

use crate::common::*;
use crate::serve::support::{Served, request};
use crate::view::browser::{Browser, Devtools, span_marks};

use std::path::Path;
use std::time::{Duration, Instant};

use harnery::contract::{
    Attestation, Confidence, Json, Payload, Provenance, RecordAt, TurnCompleted, TurnStarted,
    UsageReported,
};

fn finalize(home: &Path) {
    let out = run(home, &["finalize"]);
    assert!(out.status.success(), "{}", stderr(&out));
}

/// A model call's usage, as the agent's record reports it.
fn usage(model: &str, input: u64, output: u64) -> Payload {
    Payload::UsageReported(UsageReported {
        record: RecordAt {
            path: "transcript.jsonl".into(),
            offset: 0,
        },
        message_id: None,
        model: Some(model.into()),
        input_tokens: Some(input),
        output_tokens: Some(output),
        cache_read_tokens: None,
        cache_write_tokens: None,
        cost: Some(Json::parse("0.25").unwrap()),
        duration_ms: None,
        time_to_first_token_ms: None,
        reasoning_tokens: None,
        raw: None,
        copied_from_session: None,
    })
}

/// A session with two turns and three model calls (two models).
fn usage_session(home: &Path) {
    let s = session("usage-session");
    let payloads = vec![
        Payload::TurnStarted(TurnStarted {
            prompt_event_id: None,
        }),
        usage("claude-sonnet-4-5", 1200, 300),
        usage("claude-haiku-4-5", 800, 90),
        Payload::TurnCompleted(TurnCompleted {
            stop_reason: Some("end_turn".into()),
        }),
    ];
    let events = payloads
        .into_iter()
        .enumerate()
        .map(|(i, p)| {
            let record = matches!(p, Payload::UsageReported(_));
            let mut e = event(&s, i as u64, p);
            if record {
                e.provenance = Provenance {
                    attestation: Attestation::Record,
                    confidence: Confidence::High,
                };
            }
            e
        })
        .collect();
    inject(home, "usage-batch", events);
}

/// Corpus sessions of both agents through the real hook, one with usage.
fn corpus_home(home: &Path) {
    for scenario in ["parallel", "subagent", "tool-failure"] {
        feed_fixture(home, "claude-code", scenario);
    }
    feed_fixture(home, "copilot", "subagent-task");
    usage_session(home);
    finalize(home);
}

fn ids(home: &Path) -> Vec<String> {
    sessions_json(home)
        .iter()
        .map(|s| s["session"]["session_id"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_request_needs_the_token_and_only_reads_are_answered() {
    let home = tempfile::tempdir().unwrap();
    corpus_home(home.path());
    let served = Served::start(home.path());
    let port = served.port;
    let refused = request(port, "GET", "/", None);
    assert_eq!(refused.status, 403, "{}", refused.body);
    assert_eq!(request(port, "GET", "/api/sessions", None).status, 403);
    let wrong = format!("/?token={}0", &served.token[1..]);
    assert_eq!(request(port, "GET", &wrong, None).status, 403);
    assert_eq!(
        request(port, "GET", "/", Some("harnery_token=0000")).status,
        403
    );

    let first = request(port, "GET", &format!("/?token={}", served.token), None);
    assert_eq!(first.status, 200, "{}", first.body);
    let cookie = first
        .header("set-cookie")
        .expect("the first request sets a cookie");
    assert!(
        cookie.contains(&served.token) && cookie.contains("HttpOnly"),
        "{cookie}"
    );
    assert!(cookie.contains("SameSite=Strict"), "{cookie}");
    let csp = first.header("content-security-policy").expect("a CSP");
    assert!(
        csp.starts_with("default-src 'none'; script-src 'self';"),
        "{csp}"
    );
    assert_eq!(first.header("x-content-type-options"), Some("nosniff"));
    assert_eq!(first.header("referrer-policy"), Some("no-referrer"));

    let again = request(port, "GET", "/usage", Some(&served.cookie()));
    assert_eq!(again.status, 200);
    assert!(again.header("set-cookie").is_none());
    for method in ["POST", "PUT", "DELETE"] {
        let r = request(port, method, "/api/sessions", Some(&served.cookie()));
        assert_eq!(r.status, 405, "{method}");
        assert_eq!(r.header("allow"), Some("GET, HEAD"));
    }
    let head = request(port, "HEAD", "/", Some(&served.cookie()));
    assert_eq!((head.status, head.body.as_str()), (200, ""));
    assert_eq!(
        request(port, "GET", "/no/such/page", Some(&served.cookie())).status,
        404
    );
    assert_eq!(
        request(port, "GET", "/sessions/nope", Some(&served.cookie())).status,
        404
    );
    assert_eq!(
        request(port, "GET", "/?since=yesterday", Some(&served.cookie())).status,
        400
    );
}

/// Each line of `harnery args… --json`, parsed.
fn json_lines(home: &Path, args: &[&str]) -> Vec<serde_json::Value> {
    let out = run(home, args);
    stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn json_doc(home: &Path, args: &[&str]) -> serde_json::Value {
    serde_json::from_slice(&run(home, args).stdout).unwrap()
}

#[test]
fn the_api_says_what_the_commands_json_says() {
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    corpus_home(home);
    let served = Served::start(home);
    let api: Vec<serde_json::Value> =
        serde_json::from_value(served.get_json("/api/sessions")).unwrap();
    assert_eq!(api, sessions_json(home));
    assert!(api.len() >= 4, "{api:?}");
    let filtered = served.get_json("/api/sessions?agent=copilot&class=eligible&limit=1");
    let cli = json_lines(
        home,
        &[
            "sessions",
            "--json",
            "--adapter",
            "copilot",
            "--class",
            "eligible",
            "--limit",
            "1",
        ],
    );
    assert_eq!(filtered, serde_json::Value::Array(cli));
    for by in ["session", "day", "model"] {
        let api = served.get_json(&format!("/api/usage?by={by}"));
        assert_eq!(
            api,
            json_doc(home, &["usage", "--json", "--by", by]),
            "by {by}"
        );
    }
    assert_eq!(
        served.get_json("/api/usage")["total"]["tokens"]["input"],
        2000
    );
    for id in ids(home) {
        let api = served.get_json(&format!("/api/sessions/{id}"));
        assert_eq!(api, json_doc(home, &["show", &id, "--json"]), "{id}");
    }
    let health = served.get_json("/api/health");
    assert_eq!(
        health,
        serde_json::Value::Array(json_lines(home, &["health", "--json"]))
    );
    let last = served.get_json("/api/last-seq");
    assert!(last["seq"].as_i64() > Some(0), "{last}");
}

/// Load `path` (admitted by its cookie) and check it loaded cleanly.
fn load(d: &mut Devtools, served: &Served, path: &str) {
    d.navigate(&format!("{}{path}", served.base));
    let title: String = serde_json::from_value(d.eval("document.title")).unwrap();
    assert!(title.starts_with("harnery"), "{path}: {title}");
}

/// Where `HARNERY_SERVE_SCREENSHOTS` names a directory, write `name` there.
fn keep_shot(d: &mut Devtools, name: &str) {
    let png = d.screenshot(1280, 860);
    assert!(
        png.len() > 10_000,
        "{name} is not blank: {} bytes",
        png.len()
    );
    if let Some(dir) = std::env::var_os("HARNERY_SERVE_SCREENSHOTS") {
        std::fs::write(Path::new(&dir).join(name), png).unwrap();
    }
}

#[test]
fn every_page_loads_in_chromium_cleanly_and_the_keyboard_reaches_every_session_and_span() {
    let browser = Browser::find();
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    corpus_home(home);
    let served = Served::start(home);
    let mut d = browser.devtools();
    d.navigate(&served.url("/"));
    let cards = d.eval("document.querySelectorAll('section.cards .card').length");
    assert_eq!(cards.as_u64(), Some(6), "the dashboard's cards");
    load(&mut d, &served, "/?range=all");
    let bars = d.eval("document.querySelectorAll('svg.bars rect').length");
    assert!(
        bars.as_u64() > Some(0),
        "the charts draw the usage session: {bars}"
    );
    keep_shot(&mut d, "serve-home.png");
    // The theme switch goes auto → dark, and is remembered.
    d.eval("document.getElementById('theme').click()");
    load(&mut d, &served, "/?range=all");
    let theme = d.eval("document.documentElement.getAttribute('data-theme')");
    assert_eq!(theme.as_str(), Some("dark"));
    keep_shot(&mut d, "serve-home-dark.png");
    d.eval("localStorage.removeItem('harnery-theme')");
    // "/" anywhere but in a field focuses the search box.
    d.call(
        "Input.dispatchKeyEvent",
        serde_json::json!({ "type": "keyDown", "key": "/", "code": "Slash", "text": "/" }),
    );
    let focused = d.eval("document.activeElement && document.activeElement.id");
    assert_eq!(focused.as_str(), Some("find"));
    load(&mut d, &served, "/sessions");
    keep_shot(&mut d, "serve-sessions.png");
    let ids = ids(home);
    let links: Vec<String> = serde_json::from_value(d.eval(
        "Array.from(document.querySelectorAll('#session-rows td.title a')).map(a => a.getAttribute('href'))",
    ))
    .unwrap();
    assert_eq!(links.len(), ids.len());
    // Tab from the top reaches every session link.
    let mut reached = std::collections::BTreeSet::new();
    for _ in 0..60 {
        d.tab();
        let at = d.eval("document.activeElement && document.activeElement.getAttribute('href')");
        if let Some(href) = at.as_str() {
            reached.insert(href.to_string());
        }
    }
    for link in &links {
        assert!(
            reached.contains(link),
            "Tab never reaches {link}: {reached:?}"
        );
    }

    // The session with the most spans makes the picture.
    let busiest = sessions_json(home)
        .into_iter()
        .max_by_key(|s| s["spans"]["closed_native"].as_u64())
        .unwrap();
    let claude = &busiest["session"]["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    load(&mut d, &served, &format!("/sessions/{claude}"));
    keep_shot(&mut d, "serve-session.png");
    let dom: String = serde_json::from_value(d.eval("document.documentElement.outerHTML")).unwrap();
    let want = json_doc(home, &["show", claude, "--json"])["summary"]["spans"].clone();
    let total: u64 = ["closed_native", "recovered", "open"]
        .iter()
        .map(|k| want[k].as_u64().unwrap())
        .sum();
    assert_eq!(span_marks(&dom).len() as u64, total);
    assert!(dom.contains(&format!("/sessions/{claude}/events/0")));
    // Tab reaches every span of the drawing too.
    let mut spans = std::collections::BTreeSet::new();
    for _ in 0..60 {
        d.tab();
        let at = d.eval("document.activeElement.getAttribute('data-span-id')");
        if let Some(id) = at.as_str() {
            spans.insert(id.to_string());
        }
    }
    assert_eq!(spans.len() as u64, total, "{spans:?}");
    load(&mut d, &served, &format!("/sessions/{claude}/events/0"));
    load(&mut d, &served, "/usage");
    let bars = d.eval("document.querySelectorAll('svg.chart rect').length");
    assert!(bars.as_u64() > Some(4), "{bars}");
    keep_shot(&mut d, "serve-usage.png");
    load(&mut d, &served, "/health");
    search_in_chromium(&mut d, &served, home);
    d.pump(Duration::from_millis(2500));

    assert_eq!(d.errors(), Vec::<String>::new());
    let requests = d.requests();
    assert!(
        requests.iter().any(|r| r.ends_with("/api/last-seq")),
        "{requests:?}"
    );
    for r in &requests {
        assert!(
            r.starts_with(&format!("{}/", served.base)),
            "a request left the server: {r}"
        );
    }
}

/// The command the tool-failure scenario runs, as a phrase query.
const KNOWN: &str = "\"exit 3\"";

/// `/search` for a known command lists what `harnery search` lists; its
/// first hit leads to the event's row, and the row's span is marked.
fn search_in_chromium(d: &mut Devtools, served: &Served, home: &Path) {
    let cli = json_lines(home, &["search", "--json", KNOWN]);
    assert!(!cli.is_empty(), "the corpus has {KNOWN}");
    load(d, served, &format!("/search?q={}", encode(KNOWN)));
    keep_shot(d, "serve-search.png");
    let shown = d.eval("document.querySelectorAll('table.hits tbody tr').length");
    assert_eq!(shown.as_u64(), Some(cli.len() as u64));
    // The first hit's matches are what the command says they are.
    let first = &cli[0];
    let snippet = first["snippet"].as_str().unwrap();
    let want: Vec<&str> = first["matches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| &snippet[m[0].as_u64().unwrap() as usize..m[1].as_u64().unwrap() as usize])
        .collect();
    let marks: Vec<String> = serde_json::from_value(d.eval(
        "Array.from(document.querySelectorAll('table.hits tbody tr')[0].querySelectorAll('mark'))\
         .map(m => m.textContent)",
    ))
    .unwrap();
    assert_eq!(marks, want);
    assert!(!want.is_empty());
    let href: String =
        serde_json::from_value(d.eval("document.querySelector('a.hit').getAttribute('href')"))
            .unwrap();
    let session = first["session"]["session_id"].as_str().unwrap();
    let offset = first["offset"].as_u64().unwrap();
    assert_eq!(href, format!("/sessions/{session}#e{offset}"));
    d.eval("document.querySelector('a.hit').click()");
    let until = Instant::now() + Duration::from_secs(30);
    let target = "(document.querySelector('tr:target') || {}).id || ''";
    let mut at = String::new();
    while at.is_empty() && Instant::now() < until {
        d.pump(Duration::from_millis(100));
        at = serde_json::from_value(d.eval(target)).unwrap_or_default();
    }
    assert_eq!(at, format!("e{offset}"));
    let text: String =
        serde_json::from_value(d.eval("document.querySelector('tr:target').textContent")).unwrap();
    assert!(text.contains(&offset.to_string()), "{text}");
    // The command is a tool call's input: its span is marked in the drawing.
    assert!(first["span_state"].is_string(), "{first}");
    let marked = d.eval("document.querySelectorAll('.span.hit').length");
    assert_eq!(marked.as_u64(), Some(1), "the hit's span is marked");
}

/// A value for a URL's query.
fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            b => format!("%{b:02X}"),
        })
        .collect()
}

#[test]
fn the_search_api_says_what_harnery_search_json_says_and_bad_queries_are_400() {
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    corpus_home(home);
    let served = Served::start(home);
    let cases: [(&str, &[&str]); 4] = [
        ("", &[]),
        (
            "&kind=tool-input&failed=1",
            &["--kind", "tool-input", "--failed"],
        ),
        (
            "&agent=claude-code&sort=time&limit=2",
            &["--adapter", "claude-code", "--sort", "time", "--limit", "2"],
        ),
        (
            "&kind=prompt,message&tool=Bash",
            &["--kind", "prompt,message", "--tool", "Bash"],
        ),
    ];
    for (params, flags) in cases {
        let api = served.get_json(&format!("/api/search?q={}{params}", encode(KNOWN)));
        let mut args = vec!["search", "--json", KNOWN];
        args.extend_from_slice(flags);
        assert_eq!(
            api,
            serde_json::Value::Array(json_lines(home, &args)),
            "{params}"
        );
    }
    let found = served.get_json(&format!("/api/search?q={}", encode("echo")));
    assert!(found.as_array().unwrap().len() > 1, "{found}");

    let cookie = Some(served.cookie());
    let bad = request(
        served.port,
        "GET",
        "/api/search?q=%22open",
        cookie.as_deref(),
    );
    assert_eq!(bad.status, 400, "{}", bad.body);
    let says: serde_json::Value = serde_json::from_str(&bad.body).unwrap();
    let detail = says["detail"].as_str().unwrap();
    assert!(detail.contains("never closed"), "{detail}");
    let cli = run(home, &["search", "\"open"]);
    assert_eq!(cli.status.code(), Some(2));
    assert!(stderr(&cli).contains("never closed"), "{}", stderr(&cli));
    for (path, says) in [
        ("/search?q=%22open", "never closed"),
        ("/search?q=%2Aab", "at least 3 characters"),
        ("/search?q=exit&kind=poem", "is not a kind"),
        ("/search?q=exit&since=yesterday", "RFC 3339"),
        ("/api/search?q=exit&limit=all", "not a number"),
        ("/api/search", "q="),
    ] {
        let r = request(served.port, "GET", path, cookie.as_deref());
        assert_eq!(r.status, 400, "{path}: {}", r.body);
        assert!(r.body.contains(says), "{path}: {}", r.body);
    }
    let blank = served.get("/search");
    assert!(
        blank.contains("name=\"q\"") && !blank.contains("No hits"),
        "{blank}"
    );
    let page = served.get(&format!("/search?q={}&kind=tool-input", encode(KNOWN)));
    let json = format!("/api/search?q={}&amp;kind=tool-input", encode(KNOWN));
    assert!(page.contains(&json), "the page links to its JSON: {page}");
    let none = served.get("/search?q=zzzqqqxxx");
    assert!(none.contains("No hits."), "{none}");
    for path in ["/search?q=exit", "/api/search?q=exit"] {
        assert_eq!(
            request(served.port, "GET", path, None).status,
            403,
            "{path}"
        );
    }
}

/// A prompt for `session` through the real `harnery-hook`.
fn prompt(home: &Path, session: &str, text: &str) {
    let line = serde_json::json!({
        "hook_event_name": "UserPromptSubmit",
        "session_id": session,
        "prompt": text,
        "cwd": "/tmp",
    });
    deliver(home, "claude-code", &line.to_string());
}

#[test]
fn signals_finalized_while_pages_are_open_appear_on_them() {
    let browser = Browser::find();
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    start_session(home, "claude-code", "live-session");
    finalize(home);
    let served = Served::start(home);
    let mut d = browser.devtools();
    d.navigate(&served.url("/sessions/live-session"));
    let rows = "document.querySelectorAll('#events tr').length";
    let before = d.eval(rows).as_u64().unwrap();
    assert!(before > 0);
    let marks = "document.querySelectorAll('#track .marker').length";
    let marks_before = d.eval(marks).as_u64().unwrap();
    // The page has polled once, so the next change is news to it.
    d.pump(Duration::from_millis(2500));
    prompt(
        home,
        "live-session",
        "a prompt sent while the page was open",
    );
    finalize(home);
    let until = Instant::now() + Duration::from_secs(30);
    let mut now = before;
    while now == before && Instant::now() < until {
        d.pump(Duration::from_millis(250));
        now = d.eval(rows).as_u64().unwrap();
    }
    assert!(
        now > before,
        "no event appeared: {before} rows before, {now} after"
    );
    let text: String =
        serde_json::from_value(d.eval("document.getElementById('events').textContent")).unwrap();
    assert!(text.contains("prompt"), "{text}");
    // The header's counts and the conversation are current too.
    let header: String =
        serde_json::from_value(d.eval("document.querySelector('main header').textContent"))
            .unwrap();
    let events = sessions_json(home)
        .into_iter()
        .find(|s| s["session"]["session_id"] == "live-session")
        .unwrap()["events"]
        .as_u64()
        .unwrap();
    assert!(header.contains(&format!(" {events} events")), "{header}");
    let talk: String =
        serde_json::from_value(d.eval("document.getElementById('conversation').textContent"))
            .unwrap();
    assert!(
        talk.contains("a prompt sent while the page was open"),
        "{talk}"
    );
    // The drawing has the prompt's marker.
    assert!(d.eval(marks).as_u64().unwrap() > marks_before);
    assert_eq!(d.errors(), Vec::<String>::new());

    // The sessions page marks a new session and a changed one.
    d.navigate(&format!("{}/sessions", served.base));
    d.pump(Duration::from_millis(2500));
    start_session(home, "claude-code", "second-session");
    prompt(
        home,
        "live-session",
        "another prompt, sent while the list was open",
    );
    finalize(home);
    let marked = "Array.from(document.querySelectorAll('#session-rows tr.new, #session-rows tr.changed'))\
                  .map(tr => tr.className + ' ' + tr.getAttribute('data-session')).sort().join(',')";
    let until = Instant::now() + Duration::from_secs(30);
    let mut seen = String::new();
    while seen.is_empty() && Instant::now() < until {
        d.pump(Duration::from_millis(250));
        seen = serde_json::from_value(d.eval(marked)).unwrap();
    }
    assert_eq!(seen, "changed live-session,new second-session");
    assert_eq!(d.errors(), Vec::<String>::new());

    // The dashboard's cards count a new session without a reload.
    d.navigate(&format!("{}/?range=all", served.base));
    d.pump(Duration::from_millis(2500));
    let card = "document.querySelector('section.cards .card .value').textContent";
    let before: String = serde_json::from_value(d.eval(card)).unwrap();
    start_session(home, "claude-code", "third-session");
    finalize(home);
    let until = Instant::now() + Duration::from_secs(30);
    let mut now = before.clone();
    while now == before && Instant::now() < until {
        d.pump(Duration::from_millis(250));
        now = serde_json::from_value(d.eval(card)).unwrap();
    }
    assert_eq!((before.as_str(), now.as_str()), ("2", "3"));
    assert_eq!(d.errors(), Vec::<String>::new());
}
