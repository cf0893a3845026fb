//! The web app's own pages against a real server: the dashboard and its
//! range, the session page as a conversation (windowed, text cut), the
//! sessions list, the search box, and hostile ledger text (prompts, tool
//! input and output, model names) escaped everywhere it is shown; in
//! Chromium, no page wider than a 1,280 or 1,400 px window, in both themes.

use crate::common::*;
use crate::serve::support::{Served, request};
use crate::view::browser::Browser;

use std::path::Path;
use std::time::Duration;

use harnery::contract::{
    Attestation, Confidence, Event, Json, MessageAssistant, Payload, PromptSubmitted, Provenance,
    RecordAt, UsageReported,
};

/// Text that would run or break out of its element if written raw.
const HOSTILE: &str = "<script>alert(1)</script></pre><img src=x onerror=alert(2)>";

fn finalize(home: &Path) {
    let out = run(home, &["finalize"]);
    assert!(out.status.success(), "{}", stderr(&out));
}

fn at() -> RecordAt {
    RecordAt {
        path: "transcript.jsonl".into(),
        offset: 0,
    }
}

/// An hour before the server's pinned now, so every range keeps it.
fn recent(mut e: Event) -> Event {
    let now = harnery::clock::parse_instant(NOW).unwrap();
    e.time_unix_ns = now - 3_600_000_000_000 + e.offset as i64 * 1_000_000;
    e
}

fn from_record(mut e: Event) -> Event {
    e.provenance = Provenance {
        attestation: Attestation::Record,
        confidence: Confidence::High,
    };
    e
}

/// A session whose prompt, messages, tool input and output, and model
/// name are all hostile, with a tool output far over a page's cut.
fn hostile_session(home: &Path) {
    let s = session("hostile-session");
    let mut events = vec![event(
        &s,
        0,
        Payload::PromptSubmitted(PromptSubmitted {
            prompt: Some(format!("please {HOSTILE} and search for zebrafish")),
            transformed: false,
        }),
    )];
    events.push(from_record(event(
        &s,
        1,
        Payload::MessageAssistant(MessageAssistant {
            record: at(),
            message_id: Some("m1".into()),
            model: Some(format!("model{HOSTILE}")),
            text: Some(format!("Here:\n```\n{HOSTILE}\n```\ndone")),
            tool_call_ids: vec!["c1".into()],
        }),
    )));
    let mut request = tool_request(&s, 2, "c1");
    if let Payload::ToolRequested(t) = &mut request.payload {
        t.input =
            Some(Json::parse(&serde_json::json!({ "command": HOSTILE }).to_string()).unwrap());
    }
    let mut done = tool_done(&s, 3, "c1", &request.id);
    if let Payload::ToolCompleted(t) = &mut done.payload {
        let long = format!("{HOSTILE}\n{}", "x".repeat(200_000));
        t.content = Some(Json::parse(&serde_json::Value::String(long).to_string()).unwrap());
    }
    events.push(request);
    events.push(done);
    events.push(from_record(event(
        &s,
        4,
        Payload::UsageReported(UsageReported {
            record: at(),
            message_id: Some("m1".into()),
            model: Some(format!("model{HOSTILE}")),
            input_tokens: Some(1_000),
            output_tokens: Some(234),
            cache_read_tokens: None,
            cache_write_tokens: None,
            cost: Some(Json::parse("0.5").unwrap()),
            duration_ms: None,
            time_to_first_token_ms: None,
            reasoning_tokens: None,
            raw: None,
            copied_from_session: None,
        }),
    )));
    inject(home, "hostile", events.into_iter().map(recent).collect());
}

/// A session of `n` tool calls (two events each).
fn long_session(home: &Path, id: &str, n: u64) {
    let s = session(id);
    let mut events = Vec::new();
    for i in 0..n {
        let call = format!("call-{i}");
        let r = tool_request(&s, 2 * i, &call);
        let d = tool_done(&s, 2 * i + 1, &call, &r.id);
        events.extend([r, d]);
    }
    inject(home, id, events.into_iter().map(recent).collect());
}

/// No raw hostile markup in `page`: each `<` of the text is escaped.
fn escaped(page: &str, what: &str) {
    for raw in ["<script>alert", "<img src=x", "</pre><img"] {
        assert!(!page.contains(raw), "{what} holds raw {raw:?}");
    }
    assert!(
        page.contains("&lt;img src=x onerror=alert(2)&gt;"),
        "{what}: {page}"
    );
}

#[test]
fn the_dashboard_the_conversation_and_search_escape_hostile_text_and_refuse_a_bad_range() {
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    hostile_session(home);
    long_session(home, "long-session", 300);
    let open = small_session("open-session")
        .into_iter()
        .map(recent)
        .collect();
    inject(home, "open", open);
    finalize(home);
    let served = Served::start(home);

    for range in ["", "?range=24h", "?range=7d", "?range=30d", "?range=all"] {
        let page = served.get(&format!("/{range}"));
        assert!(page.contains("section class=\"cards\""), "{range}: {page}");
        escaped(&page, &format!("/{range}"));
        // The hostile session's model call is in every range: its tokens
        // in the card, its model named in the chart's keys, escaped.
        assert!(page.contains(">1.2k<"), "{range}: the tokens card");
        assert!(page.contains("model&lt;script&gt;"), "{range}");
        assert!(page.contains("data-live=\"dash\""));
        // The session with a span left open needs attention.
        let attention = &page[page.find("Needs attention").unwrap()..];
        assert!(
            attention.contains("/sessions/open-session"),
            "{range}: {attention}"
        );
        assert!(attention.contains("1 open spans"), "{range}: {attention}");
        assert!(!attention.contains("/sessions/long-session"), "{range}");
    }
    let cookie = served.cookie();
    for bad in ["/?range=1y", "/?range=%3Cscript%3E", "/?range=24"] {
        let r = request(served.port, "GET", bad, Some(&cookie));
        assert_eq!(r.status, 400, "{bad}: {}", r.body);
        assert!(r.body.contains("24h, 7d, 30d, all"), "{bad}: {}", r.body);
        assert!(!r.body.contains("<script>"), "{bad}: {}", r.body);
    }
    // The list's filters on `/` still answer with the list.
    assert!(
        served
            .get("/?agent=claude-code")
            .contains("id=\"session-rows\"")
    );

    let list = served.get("/sessions");
    assert!(list.contains("/sessions/hostile-session") && list.contains("/sessions/long-session"));
    assert!(list.contains("<time datetime=\""), "relative times: {list}");
    // The first prompt is the session's title, escaped on the list.
    assert!(list.contains("please &lt;script&gt;"), "the title: {list}");
    escaped(&list, "the sessions list");
    assert!(
        served
            .get("/sessions?project=nowhere")
            .contains("No session matches.")
    );
    let rows = served.get("/sessions?fragment=rows");
    assert!(
        rows.starts_with("<tr ") && !rows.contains("<html"),
        "{rows}"
    );

    let page = served.get("/sessions/hostile-session");
    escaped(&page, "the session page");
    assert!(page.contains("please &lt;script&gt;"), "the prompt");
    assert!(
        page.contains("class=\"say assistant\""),
        "the assistant's message"
    );
    // The fenced block of the message is a code block.
    assert!(
        page.contains("<pre><code>&lt;script&gt;alert(1)&lt;/script&gt;&lt;/pre&gt;"),
        "{page}"
    );
    // The long output is cut and links to its event's whole text.
    assert!(page.contains("more bytes: <a href=\"/sessions/hostile-session/events/3\""));
    assert!(page.len() < 100_000, "{} bytes", page.len());
    let whole = served.get("/sessions/hostile-session/events/3");
    assert!(whole.len() > 200_000);

    // 600 events: two windows; the second holds what the first leaves out.
    let first = served.get("/sessions/long-session");
    // A call's completion shares its request's row: rows are even offsets.
    assert!(first.contains("id=\"e498\"") && !first.contains("id=\"e500\""));
    assert!(first.contains("href=\"/sessions/long-session?page=1\""));
    let second = served.get("/sessions/long-session?page=1");
    assert!(second.contains("id=\"e500\"") && second.contains("id=\"e598\""));
    for bad in [
        "/sessions/long-session?page=2",
        "/sessions/long-session?page=x",
    ] {
        assert_eq!(
            request(served.port, "GET", bad, Some(&cookie)).status,
            400,
            "{bad}"
        );
    }

    let counts = served.get_json("/api/last-seq?session=hostile-session");
    assert_eq!(counts["session"]["events"], 5, "{counts}");
    assert!(counts["seq"].as_i64() > Some(0));
    assert!(served.get_json("/api/last-seq").get("session").is_none());
    let none = request(
        served.port,
        "GET",
        "/api/last-seq?session=nope",
        Some(&cookie),
    );
    assert_eq!(none.status, 404, "{}", none.body);

    let hits = served.get("/search?q=zebrafish");
    assert!(hits.contains("<mark>zebrafish</mark>"), "{hits}");
    escaped(&hits, "the search page");
    // Every page's header has the search box, holding the query.
    assert!(hits.contains("id=\"find\"") && hits.contains("value=\"zebrafish\""));
    assert!(served.get("/health").contains("id=\"find\""));
}

/// How wide `path` lays out in a window `width` px wide, against it.
fn widths(d: &mut crate::view::browser::Devtools, served: &Served, path: &str) -> (u64, u64) {
    d.navigate(&format!("{}{path}", served.base));
    d.pump(Duration::from_millis(200));
    let w = d.eval("[document.documentElement.scrollWidth, window.innerWidth]");
    (w[0].as_u64().unwrap(), w[1].as_u64().unwrap())
}

#[test]
fn no_page_scrolls_sideways_at_1280_or_1400_px_in_either_theme() {
    let Some(browser) = Browser::find_or_skip() else {
        return;
    };
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    hostile_session(home);
    long_session(home, "long-session", 40);
    for scenario in ["parallel", "subagent", "tool-failure"] {
        feed_fixture(home, "claude-code", scenario);
    }
    feed_fixture(home, "copilot", "subagent-task");
    finalize(home);
    let served = Served::start(home);
    let mut d = browser.devtools();
    d.navigate(&served.url("/"));
    let pages = [
        "/",
        "/?range=all",
        "/sessions",
        "/sessions/hostile-session",
        "/sessions/long-session",
        "/sessions/hostile-session/events/3",
        "/usage",
        "/health",
        "/search?q=zebrafish",
        "/search?q=exit",
    ];
    for theme in ["light", "dark"] {
        d.eval(&format!("localStorage.setItem('harnery-theme', '{theme}')"));
        for width in [1280u32, 1400] {
            d.call(
                "Emulation.setDeviceMetricsOverride",
                serde_json::json!({ "width": width, "height": 900, "deviceScaleFactor": 1, "mobile": false }),
            );
            for path in pages {
                let (scroll, inner) = widths(&mut d, &served, path);
                assert_eq!(inner, width as u64, "{path}");
                assert!(
                    scroll <= inner,
                    "{path} at {width} px ({theme}) is {scroll} px wide"
                );
                let applied = d.eval("document.documentElement.getAttribute('data-theme')");
                assert_eq!(applied.as_str(), Some(theme), "{path}");
            }
        }
    }
    assert_eq!(d.errors(), Vec::<String>::new());
}

/// Not a test: with `HARNERY_SERVE_MANY_HOME=DIR`, writes a home of
/// 10,000 sessions over 60 days (a prompt, an assistant message, a tool
/// call and two model calls of three models each) for timing the
/// dashboard and the list by hand (`harnery serve` over it, then curl).
#[test]
#[ignore]
fn many_sessions_home() {
    let Some(dir) = std::env::var_os("HARNERY_SERVE_MANY_HOME") else {
        println!("skipped: set HARNERY_SERVE_MANY_HOME to a directory");
        return;
    };
    let home = Path::new(&dir);
    let now = harnery::clock::parse_instant(NOW).unwrap();
    let models = ["claude-sonnet-4-5", "claude-haiku-4-5", "claude-opus-4-1"];
    for batch in 0..10 {
        let mut events = Vec::new();
        for n in batch * 1000..(batch + 1) * 1000 {
            let s = session(&format!("many-{n:05}"));
            let start =
                now - (n as i64 % 60) * 86_400_000_000_000 - (n as i64 % 24) * 3_600_000_000_000;
            let call = |i: u64, model: &str| {
                from_record(event(
                    &s,
                    i,
                    Payload::UsageReported(UsageReported {
                        record: at(),
                        message_id: Some(format!("m{n}-{i}")),
                        model: Some(model.into()),
                        input_tokens: Some(1_000 + n as u64),
                        output_tokens: Some(200),
                        cache_read_tokens: Some(5_000),
                        cache_write_tokens: None,
                        cost: None,
                        duration_ms: None,
                        time_to_first_token_ms: None,
                        reasoning_tokens: None,
                        raw: None,
                        copied_from_session: None,
                    }),
                ))
            };
            let prompt = event(
                &s,
                0,
                Payload::PromptSubmitted(PromptSubmitted {
                    prompt: Some(format!("task number {n}: make the build pass")),
                    transformed: false,
                }),
            );
            let r = tool_request(&s, 1, "c1");
            let d = tool_done(&s, 2, "c1", &r.id);
            let mut one = vec![
                prompt,
                r,
                d,
                call(3, models[n % 3]),
                call(4, models[(n + 1) % 3]),
            ];
            for e in &mut one {
                e.time_unix_ns = start + e.offset as i64 * 1_000_000_000;
            }
            events.extend(one);
        }
        inject(home, &format!("many-{batch}"), events);
    }
    finalize(home);
}
