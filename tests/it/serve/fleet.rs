//! `harnery serve --from postgresql://…`: two hosts ship to a throwaway
//! PostgreSQL; the server, with the reader role, lists both hosts'
//! sessions with a host column, and its `/api/sessions` is what `harnery
//! fleet sessions --json` prints.

use crate::common::*;
use crate::fleet::support::PgServer;
use crate::serve::support::{Served, request};

use std::path::Path;

fn ok(out: std::process::Output, what: &str) -> String {
    assert!(out.status.success(), "{what}: {}", stderr(&out));
    stdout(&out)
}

fn fleet_cmd(args: &[&str]) -> std::process::Output {
    harnery(Path::new("/nonexistent-harnery-home"))
        .args(args)
        .output()
        .unwrap()
}

/// A home with one corpus session, finalized and shipped to `url`; its host id.
fn host(home: &Path, scenario: &str, url: &str) -> String {
    feed_fixture(home, "claude-code", scenario);
    ok(run(home, &["finalize"]), "finalize");
    ok(run(home, &["ship", "--to", url]), "ship");
    std::fs::read_to_string(home.join("host-id"))
        .unwrap()
        .trim()
        .to_string()
}

#[test]
fn the_fleet_mode_lists_every_hosts_sessions_with_a_host_column() {
    let pg = PgServer::start();
    let admin = pg.database("fleet");
    ok(fleet_cmd(&["fleet", "init", "--url", &admin]), "init");
    let a_url = ok(
        fleet_cmd(&["fleet", "add-host", "laptop-a", "--url", &admin]),
        "add-host",
    );
    let b_url = ok(
        fleet_cmd(&["fleet", "add-host", "laptop-b", "--url", &admin]),
        "add-host",
    );
    let reader = ok(
        fleet_cmd(&["fleet", "add-reader", "audit", "--url", &admin]),
        "add-reader",
    );
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let host_a = host(a.path(), "basic", a_url.trim());
    let host_b = host(b.path(), "parallel", b_url.trim());

    let served = Served::start_with(
        Path::new("/nonexistent-harnery-home"),
        &["--from", reader.trim()],
    );
    let api = served.get_json("/api/sessions");
    let cli: Vec<serde_json::Value> = ok(
        fleet_cmd(&["fleet", "sessions", "--from", reader.trim(), "--json"]),
        "fleet sessions",
    )
    .lines()
    .map(|l| serde_json::from_str(l).unwrap())
    .collect();
    assert_eq!(api, serde_json::Value::Array(cli));
    let hosts: std::collections::BTreeSet<&str> = api
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["host_id"].as_str().unwrap())
        .collect();
    assert_eq!(
        hosts,
        [host_a.as_str(), host_b.as_str()].into_iter().collect()
    );
    let page = served.get("/");
    assert!(page.contains("<th>host</th>"), "{page}");
    assert!(page.contains(&host_a) && page.contains(&host_b), "{page}");
    let one = served.get_json(&format!("/api/sessions?host={host_a}"));
    assert!(
        one.as_array()
            .unwrap()
            .iter()
            .all(|s| s["host_id"] == host_a.as_str())
    );
    assert_eq!(
        request(served.port, "GET", "/usage", Some(&served.cookie())).status,
        404
    );
    assert_eq!(request(served.port, "GET", "/", None).status, 403);
}
