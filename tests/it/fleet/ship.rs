//! `harnery ship` and `harnery fleet …` against a real, throwaway
//! PostgreSQL (see `fleet_support`): every epoch arrives once, a kill or a
//! crash anywhere then a rerun equals one run, forks and replacements are
//! refused, twenty hosts at once lose and double nothing, secrets are
//! masked and still verify, a flipped byte is found, and bad input gets a
//! clear error.

use crate::common;
use crate::fleet::support as fleet_support;
use crate::fleet::support::{host_id, ship, ship_ok};
use crate::report::usage_support;

use std::path::{Path, PathBuf};
use std::process::Output;

use common::*;
use fleet_support::PgServer;
#[cfg(feature = "failpoints")]
use fleet_support::wait_for;

const SECRET_TOKEN: &str = "ghp_0123456789abcdefghijABCDEFGHIJ012345";
const SECRET_PASSWORD: &str = "hunter2-correct-horse";

fn gen1_fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/epoch/gen1/home")
}

/// A hook record whose tool input holds a token and a password.
fn secret_record() -> String {
    let line = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/claude-code/basic/hooks.jsonl"),
    )
    .unwrap()
    .lines()
    .find(|l| l.contains("\"hook_event_name\":\"PreToolUse\""))
    .expect("the fixture has a PreToolUse line")
    .to_string();
    let mut v: serde_json::Value = serde_json::from_str(&line).unwrap();
    v["session_id"] = "5ec2e7-0000-4000-8000-000000000001".into();
    v["tool_input"] = serde_json::json!({
        "command": format!("git push https://x:{SECRET_TOKEN}@github.com/o/r && mysql --password={SECRET_PASSWORD}"),
    });
    v.to_string()
}

/// A home with an archived epoch (the generation-1 fixture, advanced) and
/// a live one holding the basic session and a record with secrets.
fn fleet_home() -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    copy_tree(&gen1_fixture(), home.path());
    let out = next(home.path(), &["epoch", "advance"]);
    assert!(out.status.success(), "advance: {}", stderr(&out));
    feed_fixture(home.path(), "claude-code", "basic");
    assert_cmd::Command::cargo_bin("harnery-hook")
        .unwrap()
        .env("HARNERY_HOME", home.path())
        .arg("claude-code")
        .write_stdin(secret_record())
        .assert()
        .success();
    let out = next(home.path(), &["finalize"]);
    assert!(out.status.success(), "finalize: {}", stderr(&out));
    home
}

fn fleet(target: &str, args: &[&str]) -> Output {
    let mut cmd = harnery(Path::new("/nonexistent-harnery-home"));
    cmd.arg("fleet")
        .arg(args[0])
        .args(["--from", target])
        .args(&args[1..]);
    cmd.output().unwrap()
}

/// The harnery binary as a plain process (to run several at once).
fn std_harnery(home: &Path) -> std::process::Command {
    let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("harnery"));
    cmd.env("HARNERY_HOME", home)
        .env("HARNERY_NOW", NOW)
        .env_remove("HARNERY_FAILPOINTS")
        .env_remove("HARNERY_TEST_SCHEMA_SUFFIX");
    cmd
}

/// Rows per epoch in the local ledger (archive first, then live).
fn local_rows(home: &Path) -> Vec<usize> {
    let mut dbs: Vec<PathBuf> = std::fs::read_dir(home.join("ledgers/v2-candidates"))
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.path().join("ledger.sqlite"))
                .collect()
        })
        .unwrap_or_default();
    dbs.push(home.join("ledgers/v2/ledger.sqlite"));
    dbs.iter().map(|db| chain_rows(db).len()).collect()
}

/// What the home's ledgers hold: every epoch's genesis manifest and its
/// rows (id, hash), archive first. (SQLite may fold its WAL when a reader
/// closes, so file bytes are not the measure; the rows are.)
fn ledger_files(home: &Path) -> Vec<String> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(home.join("ledgers/v2-candidates"))
        .map(|d| d.filter_map(|e| e.ok()).map(|e| e.path()).collect())
        .unwrap_or_default();
    dirs.sort();
    dirs.push(home.join("ledgers/v2"));
    let mut out = Vec::new();
    for d in dirs {
        out.push(std::fs::read_to_string(d.join("genesis.json")).unwrap());
        for (id, hash) in chain_rows(&d.join("ledger.sqlite")) {
            out.push(format!("{id} {hash}"));
        }
    }
    out
}

#[test]
fn ship_sends_every_epoch_once_and_the_fleet_reads_it() {
    let pg = PgServer::start();
    let target = pg.database("fleet");
    let home = fleet_home();
    let before = ledger_files(home.path());
    let report: serde_json::Value = serde_json::from_str(&ship_ok(
        home.path(),
        &target,
        &["--json", "--batch-rows", "7"],
    ))
    .unwrap();
    assert_eq!(
        ledger_files(home.path()),
        before,
        "the local ledger is only read"
    );
    let epochs = report["epochs"].as_array().unwrap();
    assert_eq!(epochs.len(), 2, "{report}");
    let local = local_rows(home.path());
    assert_eq!(
        epochs[0]["epoch"], epochs[0]["genesis_id"],
        "the archive first"
    );
    assert_eq!(epochs[1]["epoch"], "live");
    for (e, n) in epochs.iter().zip(&local) {
        assert_eq!(e["rows_sent"].as_u64().unwrap() as usize, *n);
        assert_eq!(e["rows_total"].as_u64().unwrap() as usize, *n);
    }
    let host = host_id(home.path());
    let mut c = pg.client("fleet");
    let held: i64 = c
        .query_one(
            "SELECT count(*) FROM harnery.events WHERE host_id = $1",
            &[&host],
        )
        .unwrap()
        .get(0);
    assert_eq!(held as usize, local.iter().sum::<usize>());
    // The archive's epoch row carries its anchor-less genesis; the live one anchors to it.
    let anchor: Option<String> = c
        .query_one(
            "SELECT anchor_genesis_id FROM harnery.epochs WHERE host_id = $1 AND live",
            &[&host],
        )
        .unwrap()
        .get(0);
    assert_eq!(anchor.as_deref(), epochs[0]["genesis_id"].as_str());

    // A second run sends nothing and changes nothing.
    let dump = pg.dump("fleet");
    let again: serde_json::Value =
        serde_json::from_str(&ship_ok(home.path(), &target, &["--json"])).unwrap();
    for e in again["epochs"].as_array().unwrap() {
        assert_eq!(e["rows_sent"], 0);
        assert!(e["derived"].is_null());
    }
    assert_eq!(pg.dump("fleet"), dump);

    // The fleet reads: every session of every epoch, with its class.
    let out = fleet(&target, &["sessions", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let sessions: Vec<serde_json::Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let local_sessions: i64 = c
        .query_one("SELECT count(*) FROM harnery.sessions", &[])
        .unwrap()
        .get(0);
    assert_eq!(sessions.len() as i64, local_sessions);
    assert!(sessions.len() >= 6, "{sessions:?}");
    assert!(sessions.iter().all(|s| s["host_id"] == host.as_str()));
    let audit = fleet(&target, &["audit", "--json", "--host", &host]);
    assert!(audit.status.success(), "{}", stderr(&audit));
    let audit: serde_json::Value = serde_json::from_str(&stdout(&audit)).unwrap();
    let audit_only = audit["audit_only"].as_array().unwrap();
    assert!(
        audit_only
            .iter()
            .all(|s| !s["reasons"].as_array().unwrap().is_empty()),
        "{audit}"
    );
    let usage = fleet(&target, &["usage", "--json"]);
    assert!(usage.status.success(), "{}", stderr(&usage));
    assert_eq!(stdout(&usage), "", "no usage events, no invented usage");
    let receipts: i64 = c
        .query_one("SELECT count(*) FROM harnery.receipts", &[])
        .unwrap()
        .get(0);
    assert!(receipts > 0);

    let verify = fleet(&target, &["verify"]);
    assert!(
        verify.status.success(),
        "{}{}",
        stdout(&verify),
        stderr(&verify)
    );
    assert!(
        stdout(&verify).contains("2 epochs checked: ok"),
        "{}",
        stdout(&verify)
    );

    let status = next(home.path(), &["ship", "--status", "--to", &target]);
    assert!(status.status.success(), "{}", stderr(&status));
    assert!(stdout(&status).contains(&host), "{}", stdout(&status));
}

/// The reference: one uninterrupted run of a copy of `home` into `db`.
#[cfg(feature = "failpoints")]
fn reference(pg: &PgServer, home: &Path, db: &str) -> Vec<String> {
    let copy = tempfile::tempdir().unwrap();
    copy_tree(home, copy.path());
    ship_ok(copy.path(), &pg.database(db), &[]);
    pg.dump(db)
}

/// The kills come from failpoints (`HARNERY_FAILPOINTS`), armed only in a
/// failpoints build.
#[cfg(feature = "failpoints")]
#[test]
fn a_kill_at_any_ship_point_then_a_rerun_equals_one_run() {
    let pg = PgServer::start();
    let home = fleet_home();
    // The host id is made before the copies, so every copy is one host.
    assert!(next(home.path(), &["ship", "--status"]).status.success());
    let want = reference(&pg, home.path(), "reference");
    for (i, point) in harnery::failpoint::SHIP_POINTS.iter().enumerate() {
        let copy = tempfile::tempdir().unwrap();
        copy_tree(home.path(), copy.path());
        let target = pg.database(&format!("kill{i}"));
        let killed = harnery(copy.path())
            .env("HARNERY_TEST_SCHEMA_SUFFIX", NEXT_CONTRACT)
            .env("HARNERY_FAILPOINTS", point)
            .args(["ship", "--to", &target, "--batch-rows", "5"])
            .output()
            .unwrap();
        assert_eq!(
            killed.status.code(),
            None,
            "{point}: killed ({})",
            stderr(&killed)
        );
        ship_ok(copy.path(), &target, &["--batch-rows", "5"]);
        assert_eq!(pg.dump(&format!("kill{i}")), want, "{point}");
    }
}

/// Start a ship that pauses after its first batch; `interrupt` then
/// breaks the server side; the run must fail with exit 2. The pause is a
/// failpoint, so this runs in a failpoints build only.
#[cfg(feature = "failpoints")]
fn interrupted_ship(pg: &PgServer, home: &Path, target: &str, interrupt: impl FnOnce()) {
    let child = std_harnery(home)
        .env("HARNERY_TEST_SCHEMA_SUFFIX", NEXT_CONTRACT)
        .env("HARNERY_FAILPOINTS", "ship-pause")
        .args(["ship", "--to", target, "--batch-rows", "5"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let marker = home.join("ship-pause");
    wait_for(&marker);
    interrupt();
    std::fs::remove_file(&marker).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let _ = pg;
}

#[cfg(feature = "failpoints")]
#[test]
fn a_server_crash_or_a_cut_connection_mid_ship_then_a_rerun_equals_one_run() {
    let pg = PgServer::start();
    let home = fleet_home();
    assert!(next(home.path(), &["ship", "--status"]).status.success());
    let want = reference(&pg, home.path(), "reference");

    let crash = tempfile::tempdir().unwrap();
    copy_tree(home.path(), crash.path());
    let target = pg.database("crash");
    interrupted_ship(&pg, crash.path(), &target, || pg.stop_immediate());
    pg.ctl_start();
    ship_ok(crash.path(), &target, &["--batch-rows", "5"]);
    assert_eq!(pg.dump("crash"), want, "after pg_ctl stop -m immediate");

    let cut = tempfile::tempdir().unwrap();
    copy_tree(home.path(), cut.path());
    let target = pg.database("cut");
    interrupted_ship(&pg, cut.path(), &target, || {
        pg.client("postgres")
            .execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'harnery' AND datname = 'cut'",
                &[],
            )
            .unwrap();
    });
    let partial: i64 = pg
        .client("cut")
        .query_one("SELECT count(*) FROM harnery.events", &[])
        .unwrap()
        .get(0);
    assert_eq!(partial, 5, "whole batches only: the first one");
    ship_ok(cut.path(), &target, &["--batch-rows", "5"]);
    assert_eq!(pg.dump("cut"), want, "after a cut connection");
}

#[test]
fn a_forked_or_replaced_ledger_is_refused_naming_host_epoch_and_row() {
    let pg = PgServer::start();
    let target = pg.database("fleet");
    let a = fleet_home();
    assert!(next(a.path(), &["ship", "--status"]).status.success());
    let b = tempfile::tempdir().unwrap();
    copy_tree(a.path(), b.path());
    // The two copies diverge: each records a different session next.
    inject_live(a.path(), "fork-a");
    inject_live(b.path(), "fork-b");
    ship_ok(a.path(), &target, &[]);
    let dump = pg.dump("fleet");
    let host = host_id(a.path());
    let out = ship(b.path(), &target, &[]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    let live_genesis: String = pg
        .client("fleet")
        .query_one("SELECT genesis_id FROM harnery.epochs WHERE live", &[])
        .unwrap()
        .get(0);
    let last = local_rows(a.path())[1];
    assert!(
        err.contains(&host) && err.contains(&live_genesis) && err.contains(&format!("row {last}")),
        "{err}"
    );
    assert_eq!(pg.dump("fleet"), dump, "nothing of the fork arrives");

    // A home with this host's id but none of its epochs: replaced.
    let c = tempfile::tempdir().unwrap();
    std::fs::copy(a.path().join("host-id"), c.path().join("host-id")).unwrap();
    inject(c.path(), "batch-c", small_session("fresh"));
    assert!(run(c.path(), &["finalize"]).status.success());
    let out = run(c.path(), &["ship", "--to", &target]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("replaced") && stderr(&out).contains(&host),
        "{}",
        stderr(&out)
    );
    assert_eq!(pg.dump("fleet"), dump);
}

/// Append one more session to the live epoch (as the next build).
fn inject_live(home: &Path, id: &str) {
    let digest = {
        let g: serde_json::Value =
            serde_json::from_slice(&std::fs::read(home.join("ledgers/v2/genesis.json")).unwrap())
                .unwrap();
        g["schema_digest"].as_str().unwrap().to_string()
    };
    inject_with_digest(home, id, small_session(id), &digest);
    let out = next(home, &["finalize"]);
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn twenty_hosts_shipping_at_once_lose_and_double_nothing() {
    let pg = PgServer::start();
    let target = pg.database("fleet");
    let base = tempfile::tempdir().unwrap();
    inject(base.path(), "batch-1", small_session("s1"));
    inject(base.path(), "batch-2", small_session("s2"));
    assert!(run(base.path(), &["finalize"]).status.success());
    let homes: Vec<tempfile::TempDir> = (0..20)
        .map(|_| {
            let h = tempfile::tempdir().unwrap();
            copy_tree(base.path(), h.path());
            h
        })
        .collect();
    let children: Vec<std::process::Child> = homes
        .iter()
        .map(|h| {
            std_harnery(h.path())
                .args(["ship", "--to", &target, "--batch-rows", "3"])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let mut c = pg.client("fleet");
    let per_host: Vec<(String, i64, i64)> = c
        .query(
            "SELECT host_id, count(*), count(DISTINCT seq) FROM harnery.events GROUP BY host_id ORDER BY host_id",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect();
    assert_eq!(per_host.len(), 20);
    let local = local_rows(base.path())[0] as i64;
    for (host, rows, distinct) in &per_host {
        assert_eq!((*rows, *distinct), (local, local), "{host}");
    }
    let migrations: i64 = c
        .query_one("SELECT count(*) FROM harnery.schema_migrations", &[])
        .unwrap()
        .get(0);
    assert_eq!(
        migrations,
        i64::from(harnery::fleet::schema::known_version()),
        "migrated once"
    );
    let verify = fleet(&target, &["verify"]);
    assert!(verify.status.success(), "{}", stdout(&verify));
}

#[test]
fn secrets_are_masked_before_they_leave_and_masked_rows_still_verify() {
    let pg = PgServer::start();
    let target = pg.database("fleet");
    let home = fleet_home();
    std::fs::write(
        home.path().join("config.toml"),
        "[ship]\nmask = ['github\\.com/o/r']\n",
    )
    .unwrap();
    let before = ledger_files(home.path());
    let dry = next(home.path(), &["ship", "--dry-run", "--json"]);
    assert!(dry.status.success(), "{}", stderr(&dry));
    let lines: Vec<serde_json::Value> = stdout(&dry)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let secret_row = lines
        .iter()
        .find(|l| {
            l["patterns"]
                .as_array()
                .unwrap()
                .iter()
                .any(|p| p == "github-token")
        })
        .unwrap_or_else(|| panic!("the token row is listed: {}", stdout(&dry)));
    let patterns: Vec<&str> = secret_row["patterns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect();
    assert!(patterns.contains(&"password-pair"), "{patterns:?}");
    assert!(!stdout(&dry).contains(SECRET_TOKEN) && !stdout(&dry).contains(SECRET_PASSWORD));

    ship_ok(home.path(), &target, &[]);
    assert_eq!(
        ledger_files(home.path()),
        before,
        "the local ledger is untouched"
    );
    let mut c = pg.client("fleet");
    let leaked: i64 = c
        .query_one(
            "SELECT count(*) FROM harnery.events WHERE position($1::bytea in json) > 0 OR position($2::bytea in json) > 0",
            &[&SECRET_TOKEN.as_bytes(), &SECRET_PASSWORD.as_bytes()],
        )
        .unwrap()
        .get(0);
    assert_eq!(leaked, 0, "no secret reached the server");
    let masked: Vec<Vec<String>> = c
        .query(
            "SELECT masked FROM harnery.events WHERE masked IS NOT NULL",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert!(
        masked
            .iter()
            .any(|m| m.contains(&"github-token".to_string())),
        "{masked:?}"
    );
    assert!(
        masked.iter().any(|m| m.contains(&"user-1".to_string())),
        "the user's pattern: {masked:?}"
    );
    // No chain hash of the host's ledger is on the server: with one, a
    // masked row's original could be tested guess by guess.
    let dump = pg.pg_dump("fleet");
    for (_, h) in chain_rows(&home.path().join("ledgers/v2/ledger.sqlite")) {
        assert!(
            !dump.to_lowercase().contains(&h.to_lowercase()),
            "{h} is on the server"
        );
    }
    let verify = fleet(&target, &["verify", "--json"]);
    assert!(verify.status.success(), "{}", stdout(&verify));
    let v: serde_json::Value = serde_json::from_str(&stdout(&verify)).unwrap();
    let masked_rows: i64 = v["epochs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["masked_rows"].as_i64().unwrap())
        .sum();
    assert!(masked_rows >= 1, "{v}");
}

#[test]
fn fleet_verify_names_a_byte_flipped_on_the_server() {
    let pg = PgServer::start();
    let target = pg.database("fleet");
    let home = fleet_home();
    ship_ok(home.path(), &target, &[]);
    let host = host_id(home.path());
    let mut c = pg.client("fleet");
    let genesis: String = c
        .query_one("SELECT genesis_id FROM harnery.epochs WHERE NOT live", &[])
        .unwrap()
        .get(0);
    c.execute(
        "UPDATE harnery.events SET json = set_byte(json, 10, get_byte(json, 10) # 1) \
         WHERE host_id = $1 AND genesis_id = $2 AND seq = 7",
        &[&host, &genesis],
    )
    .unwrap();
    let out = fleet(&target, &["verify"]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let text = stdout(&out);
    assert!(
        text.contains(&format!(
            "BREAK host {host} epoch {genesis} row 7: its link is not the chain over its columns"
        )),
        "{text}"
    );
    assert_eq!(text.matches("BREAK").count(), 1, "only that row: {text}");
    // An anchor whose archive lost its last row is named too.
    c.execute(
        "DELETE FROM harnery.events WHERE host_id = $1 AND genesis_id = $2 AND seq = (SELECT max(seq) FROM harnery.events WHERE genesis_id = $2)",
        &[&host, &genesis],
    )
    .unwrap();
    let text = stdout(&fleet(&target, &["verify"]));
    assert!(
        text.contains(&format!("anchors to epoch {genesis}")),
        "{text}"
    );
}

#[test]
fn bad_input_gets_a_clear_error() {
    let pg = PgServer::start();
    let target = pg.database("fleet");
    let home = fleet_home();
    let before = ledger_files(home.path());

    // Unreachable: a socket directory no server listens in.
    let nowhere = tempfile::tempdir().unwrap();
    let unreachable = format!(
        "host={} user=harnery password=x dbname=fleet sslmode=disable",
        nowhere.path().display()
    );
    let out = ship(home.path(), &unreachable, &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("cannot reach the server"),
        "{}",
        stderr(&out)
    );
    assert!(
        !stderr(&out).contains("password=x"),
        "the password is never printed"
    );
    assert_eq!(
        ledger_files(home.path()),
        before,
        "the local ledger is unaffected"
    );
    // The next run, with the server there, catches up.
    let report: serde_json::Value =
        serde_json::from_str(&ship_ok(home.path(), &target, &["--json"])).unwrap();
    let sent: u64 = report["epochs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["rows_sent"].as_u64().unwrap())
        .sum();
    assert_eq!(sent as usize, local_rows(home.path()).iter().sum::<usize>());

    // Wrong credentials.
    let wrong = target.replace(fleet_support::PASSWORD, "not-the-password");
    let out = ship(home.path(), &wrong, &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("refused the credentials of user \"harnery\""),
        "{}",
        stderr(&out)
    );

    // Unknown host id.
    let out = fleet(&target, &["sessions", "--host", "host_nope"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("unknown host id \"host_nope\"")
            && stderr(&out).contains(&host_id(home.path())),
        "{}",
        stderr(&out)
    );

    // A server with a newer central schema than this build knows.
    pg.client("fleet")
        .execute(
            "INSERT INTO harnery.schema_migrations (version, name) VALUES (99, 'from_the_future')",
            &[],
        )
        .unwrap();
    let dump = pg.dump("fleet");
    let out = ship(home.path(), &target, &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains(&format!(
            "version 99, newer than this build knows ({})",
            harnery::fleet::schema::known_version()
        )),
        "{}",
        stderr(&out)
    );
    let out = fleet(&target, &["sessions"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("newer than this build knows"),
        "{}",
        stderr(&out)
    );
    assert_eq!(pg.dump("fleet"), dump);

    // No target anywhere.
    let out = harnery(home.path())
        .env_remove("PGHOST")
        .args(["ship"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("no server to ship to"),
        "{}",
        stderr(&out)
    );
}

/// `sslmode` asks and ship does: with `verify-full` and the server's CA it
/// ships over TLS; a CA that did not sign the server's certificate, or a
/// host name the certificate does not carry, is refused (exit 2) before a
/// row leaves; `verify-ca` checks the chain but not the name.
#[test]
fn tls_verifies_the_server_where_sslmode_asks() {
    let pg = PgServer::start_tls();
    pg.database("fleet");
    let tls = pg.tls().clone();
    let home = fleet_home();
    let root = |ca: &Path| format!("sslmode=verify-full sslrootcert={}", ca.display());

    let wrong_ca = pg.tls_target("fleet", "localhost", &root(&tls.other_ca));
    let out = ship(home.path(), &wrong_ca, &[]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).to_lowercase().contains("certificate"),
        "{}",
        stderr(&out)
    );

    let wrong_name = pg.tls_target("fleet", "127.0.0.1", &root(&tls.ca));
    let out = ship(home.path(), &wrong_name, &[]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(
        pg.client("fleet")
            .query("SELECT 1 FROM pg_namespace WHERE nspname = 'harnery'", &[])
            .unwrap()
            .len(),
        0,
        "nothing was sent to a server that did not prove itself"
    );

    let by_chain = pg.tls_target(
        "fleet",
        "127.0.0.1",
        &format!("sslmode=verify-ca sslrootcert={}", tls.ca.display()),
    );
    let out = ship(home.path(), &by_chain, &[]);
    assert!(out.status.success(), "verify-ca: {}", stderr(&out));

    let good = pg.tls_target("fleet", "localhost", &root(&tls.ca));
    let out = ship(home.path(), &good, &[]);
    assert!(out.status.success(), "verify-full: {}", stderr(&out));
    let shipped = pg
        .client("fleet")
        .query_one("SELECT count(*) FROM harnery.events", &[])
        .unwrap()
        .get::<_, i64>(0);
    assert!(shipped > 0, "rows arrived over TLS");
}

/// A `--fork-session` copy of a parent's messages counts each model call
/// once in the fleet's usage too, the same figures the record files give.
#[test]
fn fleet_usage_counts_a_forked_sessions_calls_once() {
    let pg = PgServer::start();
    let target = pg.database("forked");
    let home = tempfile::tempdir().unwrap();
    let finalize = |home: &Path| {
        let out = harnery(home)
            .env("HARNERY_RECORDS", "on")
            .arg("finalize")
            .output()
            .unwrap();
        assert!(out.status.success(), "finalize: {}", stderr(&out));
    };
    let (parent, fork) = usage_support::forked_claude_home(home.path(), finalize);
    let out = harnery(home.path())
        .args(["ship", "--to", &target])
        .output()
        .unwrap();
    assert!(out.status.success(), "ship: {}", stderr(&out));
    let want = usage_support::calls(&[&parent, &fork]);
    let usage = fleet(&target, &["usage", "--json"]);
    assert!(usage.status.success(), "{}", stderr(&usage));
    let (mut records, mut tokens) = (0, [0u64; 4]);
    for line in stdout(&usage).lines() {
        let row: serde_json::Value = serde_json::from_str(line).unwrap();
        records += row["records"].as_u64().unwrap();
        let keys = [
            "input_tokens",
            "output_tokens",
            "cache_read_tokens",
            "cache_write_tokens",
        ];
        for (t, k) in tokens.iter_mut().zip(keys) {
            *t += row[k].as_u64().unwrap_or(0);
        }
    }
    assert_eq!(records, want.len() as u64, "{}", stdout(&usage));
    assert_eq!(tokens, usage_support::total(&want), "{}", stdout(&usage));
}
