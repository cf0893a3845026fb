//! Copilot's steering messages (a `user.message` with a `data.source`) kept
//! apart from the user's own words (ADR-0007, contract generation 6) in
//! every reader: `show` (text and JSON), `view`, `serve`'s session page and
//! the restore seed, over a real finalized home of the captured
//! `subagent-task` session (its record read by the real `finalize`).

use serde_json::Value;

use crate::restore::apply_more::copilot_world_of;
use crate::serve::support::Served;

const SESSION: &str = "3390a855-a71e-4e90-937d-c5e1dcb418a6";

#[test]
fn steering_is_shown_apart_from_the_users_own_words() {
    let w = copilot_world_of(SESSION, "subagent-task", &["subagent-task"]);

    let shown = w.json(&["show", SESSION, "--json"]);
    let users: Vec<&Value> = shown["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "message.user")
        .collect();
    let (steering, own): (Vec<&Value>, Vec<&Value>) =
        users.iter().partition(|e| e.get("steering").is_some());
    assert_eq!(steering.len(), 1, "{users:#?}");
    assert!(!own.is_empty(), "the user's own message is there too");
    let from = steering[0]["steering"].as_str().unwrap();
    assert!(from.starts_with("agent-"), "{from}");
    assert!(
        steering[0]["text"]
            .as_str()
            .unwrap()
            .starts_with(&format!("steering from {from}: "))
    );
    assert!(
        own.iter()
            .all(|e| e["text"].as_str().unwrap().starts_with("user: "))
    );

    let text = w.ok(&["show", SESSION]);
    let apart: Vec<&str> = text
        .lines()
        .filter(|l| l.contains(&format!("steering from {from}: ")))
        .collect();
    assert_eq!(apart.len(), 1, "{text}");

    let page = w.ok(&["view", SESSION, "-o", "-"]);
    let marker = "data-event-type=\"message.user\"";
    assert_eq!(
        page.matches("class=\"marker mk-steering\"").count(),
        1,
        "one steering marker"
    );
    assert!(page.contains(marker));
    let row = format!("data-steering=\"{from}\"");
    assert_eq!(page.matches(&row).count(), 1, "its line in the table");

    let served = Served::start(w.home.path());
    let session_page = served.get(&format!("/sessions/{SESSION}"));
    assert!(
        session_page.contains("class=\"marker mk-steering\""),
        "the drawing"
    );
    assert!(session_page.contains(&row), "the event list");

    // The restore seed reads the stored sender.
    let seed = w.json(&["restore", SESSION, "--json"]);
    let listed = seed["apply"]["steering"].as_array().unwrap();
    assert_eq!(listed.len(), 1, "{listed:#?}");
    assert_eq!(listed[0]["source"], from);
}
