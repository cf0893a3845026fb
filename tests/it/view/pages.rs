//! `harnery view` in a real browser: corpus sessions fed through the real
//! hook and finalizer, drawn, then loaded in headless Chromium (no
//! network). The DOM must hold one mark per span row of the ledger with
//! its state, the screenshot must not be blank, ledger text must stay
//! text, and a session of 2,000 spans must stay one small file; its render
//! time is printed, not asserted.

use crate::common;
use crate::view::browser;

use std::collections::BTreeMap;
use std::path::Path;

use assert_cmd::cargo::CommandCargoExt;
use browser::{Browser, colours, root_attr, span_marks};
use common::*;
use harnery::contract::{Event, Outcome, Payload, TurnCompleted, TurnStarted};

/// (request event id, state) of every span row of `session`, sorted.
fn ledger_spans(home: &Path, session: &str) -> Vec<(String, String)> {
    let db = home.join("ledgers/v2/ledger.sqlite");
    let conn =
        rusqlite::Connection::open_with_flags(&db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .expect("the ledger opens");
    let mut stmt = conn
        .prepare("SELECT request_event_id, state FROM spans WHERE session_id = ?1 ORDER BY 1")
        .unwrap();
    stmt.query_map([session], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

/// How many agents (the session's own, plus subagents) speak in `session`.
fn agents(home: &Path, session: &str) -> usize {
    let db = home.join("ledgers/v2/ledger.sqlite");
    let conn = rusqlite::Connection::open(&db).unwrap();
    harnery::ledger::eventz::register(&conn).unwrap();
    let sub: i64 = conn
        .query_row(
            "SELECT count(DISTINCT json_extract(json, '$.agent_id')) FROM events WHERE session_id = ?1",
            [session],
            |r| r.get(0),
        )
        .unwrap();
    sub as usize + 1
}

fn sorted(mut marks: Vec<(String, String)>) -> Vec<(String, String)> {
    marks.sort();
    marks
}

fn ids(home: &Path) -> Vec<String> {
    sessions_json(home)
        .iter()
        .map(|s| s["session"]["session_id"].as_str().unwrap().to_string())
        .collect()
}

fn finalize(home: &Path) {
    let out = run(home, &["finalize"]);
    assert!(out.status.success(), "{}", stderr(&out));
}

/// `harnery view args…` run in `dir`.
fn view(home: &Path, dir: &Path, args: &[&str]) -> std::process::Output {
    harnery(home)
        .arg("view")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("harnery view runs")
}

/// The corpus sessions the view must draw: parallel tools, subagents (both
/// agents), a killed agent salvaged by an explicit end, a tool failure,
/// and a Copilot run killed mid-tool.
fn corpus_home(home: &Path) {
    for scenario in ["parallel", "subagent", "kill", "tool-failure"] {
        feed_fixture(home, "claude-code", scenario);
    }
    for scenario in ["subagent-task", "interrupted-sigkill-1-killed"] {
        feed_fixture(home, "copilot", scenario);
    }
    finalize(home);
    let killed = sessions_json(home)
        .into_iter()
        .find(|s| s["spans"]["open"].as_u64() > Some(0))
        .expect("the killed session has an open span");
    let id = killed["session"]["session_id"].as_str().unwrap();
    let out = run(home, &["end", id, "--reason", "agent was killed"]);
    assert!(out.status.success(), "{}", stderr(&out));
    finalize(home);
}

#[test]
fn every_corpus_session_draws_one_mark_per_span_with_its_state() {
    let browser = Browser::find();
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    corpus_home(home);
    let out_dir = tempfile::tempdir().unwrap();
    let out = view(home, out_dir.path(), &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("index.html"), "{}", stdout(&out));

    let (index, _) = browser.dump_dom(&out_dir.path().join("index.html"));
    let sessions = ids(home);
    assert_eq!(sessions.len(), 6);
    let mut states: BTreeMap<String, usize> = BTreeMap::new();
    let mut with_subagents = 0;
    for id in &sessions {
        let file = format!("{}.html", &id[..8]);
        assert!(
            index.contains(&format!("href=\"{file}\"")),
            "the index links {file}"
        );
        let (dom, _) = browser.dump_dom(&out_dir.path().join(&file));
        let want = ledger_spans(home, id);
        let marks = span_marks(&dom);
        assert_eq!(sorted(marks.clone()), want, "session {id}");
        assert_eq!(
            root_attr(&dom, "data-view-spans"),
            Some(want.len().to_string()),
            "the page's script ran over every mark"
        );
        let lanes = dom.matches("<section class=\"lane\"").count();
        assert_eq!(lanes, agents(home, id), "one lane per agent in {id}");
        with_subagents += usize::from(lanes > 1);
        for (_, state) in marks {
            *states.entry(state).or_default() += 1;
        }
    }
    assert_eq!(with_subagents, 2, "both agents' subagent sessions");
    for state in ["closed_native", "recovered", "open"] {
        assert!(states.contains_key(state), "{state} drawn: {states:?}");
    }
}

#[test]
fn the_screenshot_is_not_blank() {
    let browser = Browser::find();
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    corpus_home(home);
    let dir = tempfile::tempdir().unwrap();
    let sub = sessions_json(home)
        .into_iter()
        .find(|s| {
            s["session"]["adapter"] == "copilot" && s["spans"]["closed_native"].as_u64() > Some(1)
        })
        .expect("the Copilot subagent session");
    let id = sub["session"]["session_id"].as_str().unwrap();
    let page = dir.path().join("page.html");
    let out = view(home, dir.path(), &[id, "-o", page.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // `HARNERY_VIEW_SCREENSHOT=docs/guide/view.png` keeps the README's picture.
    let png = std::env::var_os("HARNERY_VIEW_SCREENSHOT")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| dir.path().join("shot.png"));
    browser.screenshot(&page, &png, 1200, 640);
    let n = colours(&png);
    assert!(n > 16, "a drawn page has many colours, this one {n}");
}

/// A Claude Code session whose prompt and tool input are markup.
const HOSTILE: &str = "</script><script>document.title='pwned'</script><img src=x onerror=\"document.title='pwned'\">";

#[test]
fn markup_in_prompts_and_tool_inputs_stays_text() {
    let browser = Browser::find();
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/claude-code/tool-failure/hooks.jsonl");
    for line in std::fs::read_to_string(fixture).unwrap().lines() {
        let mut v: serde_json::Value = serde_json::from_str(line).unwrap();
        v["session_id"] = "hostile-session".into();
        if v.get("prompt").is_some() {
            v["prompt"] = HOSTILE.into();
        }
        if let Some(input) = v.get_mut("tool_input") {
            input["command"] = HOSTILE.into();
        }
        std::process::Command::cargo_bin("harnery-hook")
            .unwrap()
            .env("HARNERY_HOME", home)
            .arg("claude-code")
            .stdin(std::process::Stdio::piped())
            .spawn()
            .and_then(|mut c| {
                use std::io::Write;
                c.stdin
                    .take()
                    .unwrap()
                    .write_all(v.to_string().as_bytes())?;
                c.wait()
            })
            .unwrap();
    }
    finalize(home);
    let dir = tempfile::tempdir().unwrap();
    let out = view(home, dir.path(), &["hostile"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let page = dir.path().join("hostile-.html");
    let html = std::fs::read_to_string(&page).unwrap();
    assert_eq!(
        html.matches("<script").count(),
        1,
        "only the page's own script"
    );
    assert!(!html.contains("<img"));
    assert!(html.contains("&lt;/script&gt;&lt;script&gt;"));
    let (dom, _) = browser.dump_dom(&page);
    assert!(dom.contains("<title>harnery view: claude-code hostile-session</title>"));
    assert!(!dom.contains("pwned</title>"));
    assert_eq!(dom.matches("<img").count(), 0);
    assert_eq!(span_marks(&dom).len(), 1);

    let out = view(home, dir.path(), &["hostile", "-o", "-"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), html, "`-o -` prints the same page");
    let out = view(home, dir.path(), &["-o", "-"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("needs a file"), "{}", stderr(&out));
}

/// The demo's sessions: the page holds every line `show` prints, and one
/// mark per span.
#[test]
fn the_demo_sessions_show_what_show_shows() {
    let browser = Browser::find();
    let scratch = tempfile::tempdir().unwrap();
    let out = run(scratch.path(), &["demo", "--keep"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let kept = text
        .lines()
        .find_map(|l| l.strip_prefix("the demo home is kept at "))
        .expect("the demo says where it kept its home")
        .to_string();
    let home = Path::new(&kept);
    let out = view(home, scratch.path(), &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let sessions = ids(home);
    assert_eq!(sessions.len(), 2);
    for id in &sessions {
        let page = scratch.path().join(format!("{}.html", &id[..8]));
        let html = std::fs::read_to_string(&page).unwrap();
        let shown: serde_json::Value =
            serde_json::from_slice(&run(home, &["show", id, "--json"]).stdout).unwrap();
        for entry in shown["entries"].as_array().unwrap() {
            let line = harnery::view::html::text(entry["text"].as_str().unwrap());
            assert!(html.contains(&line), "{id}: the page shows {line:?}");
        }
        let (dom, _) = browser.dump_dom(&page);
        assert_eq!(sorted(span_marks(&dom)), ledger_spans(home, id));
    }
    std::fs::remove_dir_all(home).unwrap();
}

/// 2,000 spans in one session: 1,960 closed natively (one in ten failed),
/// 30 recovered, 10 open, several at a time.
fn big_session(id: &str) -> Vec<Event> {
    let s = session(id);
    let mut events = vec![event(
        &s,
        0,
        Payload::TurnStarted(TurnStarted {
            prompt_event_id: None,
        }),
    )];
    let mut pending: Vec<(u64, Event)> = Vec::new();
    let mut offset = 1;
    for i in 0..2000u64 {
        let req = tool_request(&s, offset, &format!("c{i}"));
        offset += 1;
        pending.push((i, req.clone()));
        events.push(req);
        // Four calls run at once; the oldest finishes as the next starts.
        if pending.len() == 4 || i == 1999 {
            for (n, req) in pending.drain(..) {
                let done = if n % 200 == 0 {
                    continue;
                } else if n % 67 == 5 {
                    recovered_done(&s, offset, &req.id)
                } else {
                    let mut d = tool_done(&s, offset, &format!("c{n}"), &req.id);
                    if let (true, Payload::ToolCompleted(p)) = (n % 10 == 3, &mut d.payload) {
                        p.outcome = Outcome::Failure;
                        p.exit_code = Some(1);
                    }
                    d
                };
                events.push(done);
                offset += 1;
            }
        }
    }
    events.push(event(
        &s,
        offset,
        Payload::TurnCompleted(TurnCompleted {
            stop_reason: Some("stop".into()),
        }),
    ));
    events
}

#[test]
fn two_thousand_spans_stay_one_small_page_and_render_quickly_enough_to_read() {
    let browser = Browser::find();
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    inject(home, "big-batch", big_session("big-session"));
    finalize(home);
    let want = ledger_spans(home, "big-session");
    assert_eq!(want.len(), 2000);
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("big.html");
    let out = view(home, dir.path(), &["big-session", "-o", "big.html"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let bytes = std::fs::metadata(&page).unwrap().len();
    assert!(bytes < 4 << 20, "a 2,000-span page is {bytes} bytes");
    let (dom, wall) = browser.dump_dom(&page);
    assert_eq!(sorted(span_marks(&dom)), want);
    let laid_out = root_attr(&dom, "data-view-laid-out-ms").expect("the script ran");
    let shot = std::env::var_os("HARNERY_VIEW_BIG_SHOT")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| dir.path().join("big.png"));
    let shot_wall = browser.screenshot(&page, &shot, 1200, 800);
    assert!(colours(&shot) > 16);
    println!(
        "2,000-span page: {bytes} bytes; laid out {laid_out} ms after navigation began \
         (performance.now() after a forced layout); chromium --dump-dom ran {} ms, \
         --screenshot {} ms, browser start included",
        wall.as_millis(),
        shot_wall.as_millis()
    );
}
