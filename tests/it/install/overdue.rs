//! `harnery health` says when no finalize ran for too long while signals
//! wait in the spool (`finalize_overdue`), from the time each finalize
//! run records (`ledgers/finalize.last`), and names the schedule found.

use std::path::Path;

use super::machine::{Machine, Manager, ok};

const MIN_NS: i64 = 60 * 1_000_000_000;

/// One Claude Code prompt through the real hook into `home`'s spool.
fn one_signal(home: &Path) {
    let line = r#"{"session_id":"s-overdue","hook_event_name":"UserPromptSubmit","prompt":"hi","cwd":"/tmp"}"#;
    crate::common::hook(home, &["claude-code"], line);
}

fn last_run_ns(home: &Path) -> i64 {
    let text = std::fs::read_to_string(home.join("ledgers/finalize.last")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["finished_unix_ns"].as_i64().unwrap()
}

/// `health --json --now <ns>`: the `finalize_overdue` line, if any.
fn overdue(m: &Machine, home: &Path, now_ns: i64) -> Option<serde_json::Value> {
    let now = now_ns.to_string();
    let out = m.harnery(
        &["health", "--json", "--now", &now],
        &[("HARNERY_HOME", home)],
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|v| v["code"] == "finalize_overdue")
}

#[test]
fn an_old_finalize_with_waiting_signals_is_overdue_and_a_fresh_one_is_not() {
    let m = Machine::new(Manager::Absent);
    let home = m.user.join("h");
    let vars: &[(&str, &Path)] = &[("HARNERY_HOME", &home)];
    ok(&m.harnery(&["finalize"], vars));
    let ran = last_run_ns(&home);
    one_signal(&home);

    // Five minutes on: a schedule would not have run yet twice over.
    assert_eq!(overdue(&m, &home, ran + 5 * MIN_NS), None);
    // Two hours on, the signal still waiting: overdue, no schedule found.
    let found = overdue(&m, &home, ran + 120 * MIN_NS).expect("finalize_overdue");
    assert_eq!(found["last_finalize_unix_ns"], ran);
    assert_eq!(found["at_unix_ns"], ran);
    assert_eq!(found["pending_signals"], 1);
    assert_eq!(found["schedule"], "none");
    let detail = found["detail"].as_str().unwrap();
    assert!(
        detail.starts_with("no finalize for 2h00m while the spool holds 1 signal(s)"),
        "{detail}"
    );
    assert!(detail.contains("`harnery install <agent>`"), "{detail}");
    let text = m.harnery(
        &["health", "--now", &(ran + 120 * MIN_NS).to_string()],
        vars,
    );
    assert_eq!(text.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&text.stdout).contains("finalize_overdue"));

    // A finalize drains it: nothing waits, nothing is overdue.
    ok(&m.harnery(&["finalize"], vars));
    let ran = last_run_ns(&home);
    assert_eq!(overdue(&m, &home, ran + 120 * MIN_NS), None);
    let text = ok(&m.harnery(
        &["health", "--now", &(ran + 60_000_000_000).to_string()],
        vars,
    ));
    assert!(text.contains("last finalize: "), "{text}");
    assert!(
        text.contains(" (1m00s ago)\nschedule: none found"),
        "{text}"
    );
}

#[test]
fn the_condition_names_the_schedule_that_did_not_run() {
    let m = Machine::new(Manager::Offline);
    let home = m.user.join("h");
    let vars: &[(&str, &Path)] = &[("HARNERY_HOME", &home)];
    ok(&m.harnery(&["install", "schedule"], vars));
    one_signal(&home);
    // No finalize ever recorded: judged by the signal's age alone.
    let later = harnery::clock::wall_now_ns() + 30 * MIN_NS;
    let found = overdue(&m, &home, later).expect("finalize_overdue");
    assert_eq!(found["schedule"], "cron");
    let text = m.harnery(&["health", "--now", &later.to_string()], vars);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("last finalize: none recorded\nschedule: harnery's crontab line\n"),
        "{text}"
    );
    assert!(found.get("last_finalize_unix_ns").is_none(), "{found}");
    let detail = found["detail"].as_str().unwrap();
    assert!(
        detail.starts_with("no finalize recorded while the spool holds 1 signal(s)")
            && detail.contains("harnery's crontab line is installed but did not run it"),
        "{detail}"
    );
}
