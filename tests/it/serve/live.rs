//! `harnery serve` keeps the ledger current: hook events written by the
//! real `harnery-hook` show in `/api/sessions` with no `finalize` run, the
//! drain waits its turn behind finalize's lease, and a `finalize` run
//! beside it never writes at the same time.

use crate::common::{basic_hook_lines, deliver, harnery, sessions_json};
use crate::serve::support::Served;

use std::path::Path;
use std::time::{Duration, Instant};

/// How long a test waits for a drained event before it fails.
const HANG_GUARD: Duration = Duration::from_secs(30);

/// A session id of the tests, numbered.
fn sid(n: usize) -> String {
    format!("11ec0000-{n:04}-4000-8000-000000000000")
}

/// Deliver the `basic` capture's first `count` hook payloads as session `id`.
fn deliver_basic(home: &Path, id: &str, count: usize) {
    for (_, line) in basic_hook_lines().iter().take(count) {
        deliver(home, "claude-code", &line.replace("SESSION", id));
    }
}

/// `/api/sessions`'s line for `id`, once `ready` holds for it.
fn wait_for(
    served: &Served,
    id: &str,
    ready: impl Fn(&serde_json::Value) -> bool,
) -> serde_json::Value {
    let start = Instant::now();
    loop {
        let list = served.get_json("/api/sessions");
        let found = list
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["session"]["session_id"] == id);
        if let Some(s) = found.filter(|s| ready(s)) {
            return s.clone();
        }
        assert!(
            start.elapsed() < HANG_GUARD,
            "session {id} not in /api/sessions as wanted after {HANG_GUARD:?}: {list}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_hook_event_shows_in_the_api_with_only_serve_running() {
    let home = tempfile::tempdir().unwrap();
    let served = Served::start(home.path());
    let id = sid(1);
    deliver_basic(home.path(), &id, 2);
    let first = wait_for(&served, &id, |_| true);
    let events = first["events"].as_u64().unwrap();
    // A later event of the same session is drained too.
    deliver_basic(home.path(), &id, 4);
    wait_for(&served, &id, |s| s["events"].as_u64().unwrap() > events);
}

#[test]
fn the_drain_waits_while_another_finalizer_holds_the_lease() {
    let home = tempfile::tempdir().unwrap();
    deliver_basic(home.path(), &sid(1), 2);
    harnery(home.path()).arg("finalize").assert().success();
    let served = Served::start(home.path());
    wait_for(&served, &sid(1), |_| true);
    // The test is the other finalizer: it holds the lease.
    let lock = std::fs::File::options()
        .write(true)
        .open(home.path().join("ledgers/finalize.lock"))
        .unwrap();
    lock.lock().unwrap();
    let id = sid(2);
    deliver_basic(home.path(), &id, 2);
    // Several of the drain's looks go by: none writes.
    std::thread::sleep(Duration::from_secs(3));
    let list = served.get_json("/api/sessions");
    assert!(
        !list
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["session"]["session_id"] == id),
        "the drain wrote while the lease was held: {list}"
    );
    drop(lock);
    wait_for(&served, &id, |_| true);
}

#[test]
fn serve_and_finalize_draining_together_write_each_event_once() {
    let (home, reference) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let served = Served::start(home.path());
    let lines = basic_hook_lines();
    for n in 0..6 {
        for (_, line) in &lines {
            let line = line.replace("SESSION", &sid(n));
            deliver(home.path(), "claude-code", &line);
            deliver(reference.path(), "claude-code", &line);
        }
        // A scheduled finalize lands while serve drains.
        harnery(home.path()).arg("finalize").assert().success();
    }
    for n in 0..6 {
        wait_for(&served, &sid(n), |_| true);
    }
    harnery(home.path()).arg("finalize").assert().success();
    harnery(reference.path()).arg("finalize").assert().success();
    harnery(home.path()).arg("verify").assert().success();
    let counts = |home: &Path| -> Vec<(String, u64)> {
        let mut out: Vec<_> = sessions_json(home)
            .iter()
            .map(|s| {
                let id = s["session"]["session_id"].as_str().unwrap().to_string();
                (id, s["events"].as_u64().unwrap())
            })
            .collect();
        out.sort();
        out
    };
    assert_eq!(counts(home.path()), counts(reference.path()));
}

#[test]
fn with_no_drain_only_finalize_writes() {
    let home = tempfile::tempdir().unwrap();
    deliver_basic(home.path(), &sid(1), 2);
    harnery(home.path()).arg("finalize").assert().success();
    let served = Served::start_with(home.path(), &["--no-drain"]);
    let id = sid(2);
    deliver_basic(home.path(), &id, 2);
    // Several looks of a drain would go by: none runs.
    std::thread::sleep(Duration::from_secs(3));
    let list = served.get_json("/api/sessions");
    assert!(
        !list
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["session"]["session_id"] == id),
        "serve --no-drain wrote: {list}"
    );
    harnery(home.path()).arg("finalize").assert().success();
    wait_for(&served, &id, |_| true);
}

#[test]
fn a_failing_drain_is_said_once_and_the_server_goes_on() {
    let home = tempfile::tempdir().unwrap();
    let log = home.path().join("serve.log");
    // A ready file from another contract: every drain refuses it first.
    crate::common::inject_with_digest(
        home.path(),
        "0001",
        crate::common::small_session("gamma"),
        &"ab".repeat(32),
    );
    let served = Served::start_logging(home.path(), &log);
    let said = || {
        std::fs::read_to_string(&log)
            .unwrap()
            .matches("the spool was not drained")
            .count()
    };
    deliver_basic(home.path(), &sid(1), 2);
    let start = Instant::now();
    while said() == 0 {
        assert!(start.elapsed() < HANG_GUARD, "no drain error said");
        std::thread::sleep(Duration::from_millis(50));
    }
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("stamped with contract digest"), "{text}");
    // The spool changes again: the drain fails again, and says nothing new.
    deliver_basic(home.path(), &sid(1), 4);
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(said(), 1, "{}", std::fs::read_to_string(&log).unwrap());
    assert!(served.get_json("/api/last-seq").is_object());
}
