//! The fleet's roles against a real, throwaway PostgreSQL (see
//! `fleet_support`): a host role writes only its own rows, and a reader
//! only reads.

use crate::common;
use crate::fleet::security::local_rows;
use crate::fleet::support::{PgServer, fleet, host_id, ship, ship_ok};

use std::path::Path;

use common::*;

/// `fleet add-host|add-reader NAME`: the connection string printed.
fn add_role(target: &str, kind: &str, name: &str) -> String {
    let out = harnery(Path::new("/nonexistent-harnery-home"))
        .args(["fleet", kind, name, "--url", target])
        .output()
        .unwrap();
    assert!(out.status.success(), "{kind}: {}", stderr(&out));
    stdout(&out).trim().to_string()
}

fn denied(result: Result<u64, postgres::Error>, what: &str) {
    let err = result.expect_err(what);
    let code = err.code().map(|c| c.code().to_string());
    assert!(
        matches!(code.as_deref(), Some("42501")),
        "{what}: {err} ({code:?})"
    );
}

#[test]
fn host_roles_write_only_their_own_rows_and_readers_only_read() {
    let pg = PgServer::start();
    let admin = pg.database("fleet");
    for _ in 0..2 {
        let out = harnery(Path::new("/nonexistent-harnery-home"))
            .args(["fleet", "init", "--url", &admin])
            .output()
            .unwrap();
        assert!(out.status.success(), "init: {}", stderr(&out));
    }
    let a_url = add_role(&admin, "add-host", "laptop-a");
    let b_url = add_role(&admin, "add-host", "laptop-b");
    let r_url = add_role(&admin, "add-reader", "audit");
    assert!(a_url.contains("user='harnery_host_laptop_a'"), "{a_url}");

    let a = tempfile::tempdir().unwrap();
    feed_fixture(a.path(), "claude-code", "basic");
    assert!(run(a.path(), &["finalize"]).status.success());
    let b = tempfile::tempdir().unwrap();
    copy_tree(a.path(), b.path());
    std::fs::remove_file(b.path().join("host-id")).ok();
    ship_ok(a.path(), &a_url, &[]);
    ship_ok(b.path(), &b_url, &[]);
    ship_ok(a.path(), &a_url, &[]);
    let (ha, hb) = (host_id(a.path()), host_id(b.path()));
    // Host A's role cannot ship host B's home.
    let out = ship(b.path(), &a_url, &[]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("ships host"), "{}", stderr(&out));

    let mut ca = postgres::Client::connect(&a_url, postgres::NoTls).unwrap();
    denied(
        ca.execute("SELECT 1 FROM harnery.events LIMIT 1", &[]),
        "select events",
    );
    denied(
        ca.execute(
            "UPDATE harnery.events SET json = '' WHERE host_id = $1",
            &[&hb],
        ),
        "update events",
    );
    denied(
        ca.execute("DELETE FROM harnery.events WHERE host_id = $1", &[&hb]),
        "delete events",
    );
    denied(
        ca.execute("DELETE FROM harnery.sessions", &[]),
        "delete sessions",
    );
    let seen: i64 = ca
        .query_one(
            "SELECT count(*) FROM harnery.epochs WHERE host_id = $1",
            &[&hb],
        )
        .unwrap()
        .get(0);
    assert_eq!(seen, 0, "host A sees none of host B's epochs");
    let seen: i64 = ca
        .query_one("SELECT count(*) FROM harnery.hosts", &[])
        .unwrap()
        .get(0);
    assert_eq!(seen, 1, "host A sees only its own host row");
    let forged = ca.execute(
        "INSERT INTO harnery.events (host_id, genesis_id, seq, event_id, adapter, session_id, event_offset, type, time_unix_ns, content, masked, json, link, commit) \
         VALUES ($1, 'g', 999, 'e', 'a', 's', 0, 't', 0, 'full', '{}', '', '', '')",
        &[&hb],
    );
    denied(forged, "insert under another host id");
    let forged = ca.execute(
        "UPDATE harnery.epochs SET events = 0 WHERE host_id = $1",
        &[&hb],
    );
    assert_eq!(forged.unwrap_or(0), 0, "no epoch of B is touched");
    let rebind = ca.execute("UPDATE harnery.host_roles SET host_id = $1", &[&hb]);
    assert!(rebind.is_err(), "a host role cannot rebind itself");
    let taken = ca.execute(
        "UPDATE harnery.hosts SET sign_key = '\\x00' WHERE host_id = $1",
        &[&ha],
    );
    assert!(taken.is_err(), "a registered signing key stays");

    let mut cr = postgres::Client::connect(&r_url, postgres::NoTls).unwrap();
    let rows: i64 = cr
        .query_one("SELECT count(*) FROM harnery.events", &[])
        .unwrap()
        .get(0);
    assert_eq!(
        rows,
        2 * local_rows(a.path()),
        "the reader reads every host"
    );
    denied(
        cr.execute("DELETE FROM harnery.events", &[]),
        "reader delete",
    );
    denied(
        cr.execute("UPDATE harnery.hosts SET hostname = 'x'", &[]),
        "reader update",
    );
    denied(
        cr.execute(
            "INSERT INTO harnery.host_roles (role_name) VALUES ('x')",
            &[],
        ),
        "reader insert",
    );
    let out = fleet(None, &r_url, &["sessions", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains(&ha) && stdout(&out).contains(&hb));
    let out = fleet(None, &r_url, &["verify"]);
    assert!(out.status.success(), "{}", stdout(&out));
    let out = fleet(Some(a.path()), &a_url, &["verify", "--local"]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "a host role cannot read the rows"
    );
}
