#![cfg(feature = "failpoints")]
//! The epoch lifecycle from a home that contract generation 1 wrote
//! (`tests/fixtures/epoch/gen1/home`), advanced by a build whose digest is
//! perturbed with `HARNERY_TEST_SCHEMA_SUFFIX`:
//!
//! - the archive holds the old epoch's bytes, not a migrated copy;
//! - a kill at every epoch failpoint, followed by cron (`finalize`, more
//!   hook records, `finalize` again) and a rerun of the advance, ends where
//!   an uninterrupted advance ends;
//! - `finalize` never starts an advance and drains nothing under another
//!   digest; it completes one that is underway;
//! - `epoch status|list|verify` see and check every epoch; verify finds an
//!   altered, added or missing archive file and a broken anchor link;
//! - bad input: an unknown genesis id, a damaged progress record, a
//!   read-only `ledgers/`, a full disk during the archive step.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Output;

use common::*;

/// The schema digest of contract generation 1, as its fixture pins it.
const GEN1_DIGEST: &str = "1256ec3093dd7e2056634101779618c6a94c7ae34a1b5e4010dd47febaaedcec";

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/epoch/gen1/home")
}

/// A fresh copy of the generation-1 home.
fn gen1_home() -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    copy_tree(&fixture(), home.path());
    home
}

fn next_ok(home: &Path, args: &[&str]) -> String {
    let out = next(home, args);
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    stdout(&out)
}

fn killed_at(home: &Path, point: &str) {
    let out = harnery(home)
        .env("HARNERY_TEST_SCHEMA_SUFFIX", NEXT_CONTRACT)
        .env("HARNERY_FAILPOINTS", point)
        .args(["epoch", "advance"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        None,
        "{point}: killed ({})",
        stderr(&out)
    );
}

fn open_ro(db: &Path) -> rusqlite::Connection {
    let conn = rusqlite::Connection::open_with_flags(
        format!("file:{}?immutable=1", db.display()),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_URI,
    )
    .unwrap();
    harnery::ledger::eventz::register(&conn).unwrap();
    conn
}

/// The schema and every row of every table, as text.
fn dump(db: &Path) -> Vec<String> {
    let conn = open_ro(db);
    let mut out = Vec::new();
    let tables: Vec<(String, String)> = conn
        .prepare("SELECT name, sql FROM sqlite_schema WHERE type = 'table' ORDER BY name")
        .unwrap()
        .query_map([], |r| {
            Ok((
                r.get(0)?,
                r.get::<_, Option<String>>(1)?.unwrap_or_default(),
            ))
        })
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    for (name, sql) in tables {
        out.push(sql);
        let mut stmt = conn.prepare(&format!("SELECT * FROM \"{name}\"")).unwrap();
        let cols = stmt.column_count();
        let rows = stmt
            .query_map([], |r| {
                let cells: Vec<String> = (0..cols)
                    .map(|i| format!("{:?}", r.get_ref(i).unwrap()))
                    .collect();
                Ok(format!("{name}: {}", cells.join(" | ")))
            })
            .unwrap();
        for row in rows {
            out.push(row.unwrap());
        }
    }
    out
}

fn blake3_of(path: &Path) -> String {
    blake3::hash(&std::fs::read(path).unwrap())
        .to_hex()
        .to_string()
}

fn genesis(dir: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(dir.join("genesis.json")).unwrap()).unwrap()
}

/// Hook records written once into a staging home, so every home they are
/// copied into drains the very same bytes (Claude Code payloads carry no
/// time; the hook stamps its own).
fn later_hook_records() -> tempfile::TempDir {
    let staging = tempfile::tempdir().unwrap();
    feed_fixture(staging.path(), "claude-code", "parallel");
    staging
}

fn append_records(home: &Path, staging: &Path) {
    copy_tree(&staging.join("spool"), &home.join("spool"));
}

fn undrained_intake(home: &Path) -> usize {
    walk_files(&home.join("spool/intake"))
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "seg"))
        .count()
}

fn walk_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk_files(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[test]
fn the_fixture_is_what_generation_one_wrote() {
    let g = genesis(&fixture().join("ledgers/v2"));
    assert_eq!(g["contract_generation"], 1);
    assert_eq!(g["schema_digest"], GEN1_DIGEST);
    assert!(g["anchor"].is_null());
    let home = gen1_home();
    let out = run(home.path(), &["verify"]);
    assert!(out.status.success(), "{}", stdout(&out));
}

#[test]
fn an_advance_from_generation_one_archives_its_bytes_anchors_and_carries() {
    let home = gen1_home();
    let old_db = fixture().join("ledgers/v2/ledger.sqlite");
    let report: serde_json::Value =
        serde_json::from_str(&next_ok(home.path(), &["epoch", "advance", "--json"])).unwrap();
    let archive = the_archive(home.path());
    let archived_db = archive.join("ledger.sqlite");

    // The archive is the old epoch as it was: same schema, same rows, and
    // here (the fixture's WAL was already folded) the very same file.
    assert_eq!(dump(&archived_db), dump(&old_db));
    assert_eq!(blake3_of(&archived_db), blake3_of(&old_db));
    assert!(!archive.join("ledger.sqlite-wal").exists());
    assert_eq!(genesis(&archive), genesis(&fixture().join("ledgers/v2")));

    // The new epoch anchors to the archive's chain head and records what
    // the advance closed there: the killed Claude Code session's open span.
    let live = genesis(&home.path().join("ledgers/v2"));
    let head = chain_rows(&archived_db).last().unwrap().1.to_lowercase();
    assert_eq!(live["anchor"]["terminal_segment_digest"], head.as_str());
    assert_eq!(report["terminal_segment_digest"], head.as_str());
    assert_eq!(
        live["anchor"]["genesis_id"],
        genesis(&archive)["genesis_id"]
    );
    let closed = live["anchor"]["closure"]["sessions"].as_array().unwrap();
    assert_eq!(closed.len(), 1, "{closed:?}");
    assert_eq!(
        closed[0]["session"]["session_id"],
        "5c0c90c9-7ca4-40b0-bbc8-834cd151f0ac"
    );
    assert_eq!(
        closed[0]["reasons"],
        serde_json::json!(["tool_pairing_incomplete"])
    );
    assert_eq!(closed[0]["open_tool_spans"].as_array().unwrap().len(), 1);
    assert_eq!(report["audit_only_sessions"], 1);

    // The undrained intake was carried into the new epoch.
    assert_eq!(undrained_intake(home.path()), 0);
    let sessions = next_ok(home.path(), &["sessions", "--json"]);
    assert!(
        sessions.contains("8d31d374-43c7-42c3-aadb-185a6df76fcf"),
        "{sessions}"
    );
    assert!(
        !sessions.contains("82655d0f"),
        "old sessions stay in the archive"
    );
    next_ok(home.path(), &["verify"]);
    next_ok(home.path(), &["validate"]);
    let verdict: serde_json::Value =
        serde_json::from_str(&next_ok(home.path(), &["epoch", "verify", "--json"])).unwrap();
    assert_eq!(verdict["ok"], true, "{verdict}");
    assert_eq!(verdict["epochs"].as_array().unwrap().len(), 2);

    let again: serde_json::Value =
        serde_json::from_str(&next_ok(home.path(), &["epoch", "advance", "--json"])).unwrap();
    assert_eq!(again["already_current"], true);
}

/// The end state of an uninterrupted advance from the fixture, followed by
/// the later hook records and a finalize.
fn reference(staging: &Path) -> (ChainRows, ChainRows) {
    let home = gen1_home();
    next_ok(home.path(), &["epoch", "advance"]);
    append_records(home.path(), staging);
    next_ok(home.path(), &["finalize"]);
    (
        chain_rows(&the_archive(home.path()).join("ledger.sqlite")),
        chain_rows(&home.path().join("ledgers/v2/ledger.sqlite")),
    )
}

#[test]
fn a_kill_at_any_epoch_step_then_cron_then_a_rerun_ends_as_one_advance() {
    let staging = later_hook_records();
    let (want_archive, want_live) = reference(staging.path());
    assert!(
        want_live.len() > 10,
        "the carry and the later records landed"
    );
    for point in harnery::failpoint::EPOCH_POINTS {
        let home = gen1_home();
        killed_at(home.path(), point);
        // cron: a finalize, hooks keep spooling, another finalize.
        let first = next(home.path(), &["finalize", "--json"]);
        assert!(first.status.success(), "{point}: {}", stderr(&first));
        let first: serde_json::Value = serde_json::from_slice(&first.stdout).unwrap();
        assert!(
            first["completed_epoch_advance"].is_object(),
            "{point}: the finalize completed the advance: {first}"
        );
        append_records(home.path(), staging.path());
        next_ok(home.path(), &["finalize"]);
        let rerun: serde_json::Value =
            serde_json::from_str(&next_ok(home.path(), &["epoch", "advance", "--json"])).unwrap();
        assert_eq!(rerun["already_current"], true, "{point}");

        assert_eq!(
            chain_rows(&the_archive(home.path()).join("ledger.sqlite")),
            want_archive,
            "{point}: archive"
        );
        assert_eq!(
            chain_rows(&home.path().join("ledgers/v2/ledger.sqlite")),
            want_live,
            "{point}: live"
        );
        assert_eq!(undrained_intake(home.path()), 0, "{point}");
        assert!(!home.path().join("ledgers/epoch-advance.json").exists());
        let verdict = next(home.path(), &["epoch", "verify"]);
        assert!(verdict.status.success(), "{point}: {}", stdout(&verdict));
    }
}

#[test]
fn finalize_under_another_digest_names_the_advance_and_drains_nothing() {
    let home = gen1_home();
    let db = home.path().join("ledgers/v2/ledger.sqlite");
    let before = blake3_of(&db);
    let out = next(home.path(), &["finalize"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("harnery epoch advance"),
        "{}",
        stderr(&out)
    );
    assert_eq!(blake3_of(&db), before);
    assert_eq!(undrained_intake(home.path()), 1);
    assert!(!home.path().join("ledgers/v2-candidates").exists());
    assert!(!home.path().join("ledgers/epoch-advance.json").exists());
}

#[test]
fn no_command_starts_a_fresh_epoch_while_an_archive_waits() {
    let home = gen1_home();
    killed_at(home.path(), "epoch-after-archive");
    assert!(!home.path().join("ledgers/v2").exists());
    let status: serde_json::Value =
        serde_json::from_str(&next_ok(home.path(), &["epoch", "status", "--json"])).unwrap();
    assert!(status["live"].is_null());
    assert_eq!(status["advance_in_progress"]["step"], "archived");
    assert_eq!(status["undrained"]["intake_sessions"], 1);
    // The library's own guard: opening the live epoch for writing does not
    // create one.
    let err = harnery::ledger::LedgerWriter::open(&harnery::home::Home::at(home.path()), 1)
        .err()
        .expect("refused");
    assert!(
        err.to_string().contains("epoch advance is in progress"),
        "{err}"
    );
    assert!(!home.path().join("ledgers/v2").exists());
}

#[test]
fn epoch_verify_names_an_altered_added_or_missing_file_and_a_broken_link() {
    use std::os::unix::fs::PermissionsExt;
    let home = gen1_home();
    next_ok(home.path(), &["epoch", "advance"]);
    let archive = the_archive(home.path());
    let id = genesis(&archive)["genesis_id"]
        .as_str()
        .unwrap()
        .to_string();
    let clean = next(home.path(), &["epoch", "verify", &id]);
    assert!(clean.status.success(), "{}", stdout(&clean));

    std::fs::set_permissions(&archive, std::fs::Permissions::from_mode(0o700)).unwrap();
    let db = archive.join("ledger.sqlite");
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o600)).unwrap();
    let mut bytes = std::fs::read(&db).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 0x01;
    std::fs::write(&db, &bytes).unwrap();
    std::fs::write(archive.join("planted.txt"), b"x").unwrap();
    let raw = walk_files(&archive.join("raw")).remove(0);
    std::fs::remove_file(&raw).unwrap_or_else(|_| {
        let parent = raw.parent().unwrap();
        std::fs::set_permissions(parent, std::fs::Permissions::from_mode(0o700)).unwrap();
        std::fs::remove_file(&raw).unwrap();
    });

    let out = next(home.path(), &["epoch", "verify"]);
    assert_eq!(out.status.code(), Some(1));
    let text = stdout(&out);
    assert!(text.contains("ledger.sqlite: altered"), "{text}");
    assert!(text.contains("planted.txt: added"), "{text}");
    let raw_rel = raw.strip_prefix(&archive).unwrap().display().to_string();
    assert!(text.contains(&format!("{raw_rel}: missing")), "{text}");
    assert!(text.contains(": writable"), "{text}");

    // In another home: a live epoch whose anchor no longer says what the
    // archive holds.
    let home = gen1_home();
    next_ok(home.path(), &["epoch", "advance"]);
    let live = home.path().join("ledgers/v2/genesis.json");
    let mut g: serde_json::Value = serde_json::from_slice(&std::fs::read(&live).unwrap()).unwrap();
    g["anchor"]["events"] = serde_json::json!(1);
    std::fs::write(&live, serde_json::to_vec_pretty(&g).unwrap()).unwrap();
    let out = next(home.path(), &["epoch", "verify", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let live_problems = v["epochs"][1]["problems"].to_string();
    assert!(
        live_problems.contains("anchor: says epoch"),
        "{live_problems}"
    );
}

#[test]
fn an_unknown_genesis_id_is_a_clear_error() {
    let home = gen1_home();
    next_ok(home.path(), &["epoch", "advance"]);
    let out = next(home.path(), &["epoch", "verify", "gen_nope"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("no epoch \"gen_nope\""), "{err}");
    assert!(
        err.contains(
            genesis(&the_archive(home.path()))["genesis_id"]
                .as_str()
                .unwrap()
        )
    );
}

#[test]
fn a_damaged_progress_record_stops_the_advance_and_the_disk_says_how_far_it_got() {
    let staging = later_hook_records();
    let (want_archive, want_live) = reference(staging.path());
    let home = gen1_home();
    killed_at(home.path(), "epoch-after-archive");
    let record = home.path().join("ledgers/epoch-advance.json");
    std::fs::write(&record, b"{\"from_genesis_id\": ").unwrap();
    for args in [&["epoch", "advance"][..], &["finalize"][..]] {
        let out = next(home.path(), args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = stderr(&out);
        assert!(err.contains("epoch-advance.json does not parse"), "{err}");
        assert!(err.contains("Remove that file"), "{err}");
    }
    assert!(!home.path().join("ledgers/v2").exists(), "no fresh epoch");
    std::fs::remove_file(&record).unwrap();
    next_ok(home.path(), &["epoch", "advance"]);
    append_records(home.path(), staging.path());
    next_ok(home.path(), &["finalize"]);
    assert_eq!(
        chain_rows(&the_archive(home.path()).join("ledger.sqlite")),
        want_archive
    );
    assert_eq!(
        chain_rows(&home.path().join("ledgers/v2/ledger.sqlite")),
        want_live
    );
}

/// Run `script` with bash in a private user and mount namespace, so it may
/// mount a small tmpfs or a read-only bind without touching the machine.
fn in_private_mounts(script: &str, env: &[(&str, &Path)]) -> Output {
    let mut cmd = std::process::Command::new("unshare");
    cmd.args(["--map-root-user", "--mount", "bash", "-euc", script])
        .env("HARNERY_NOW", NOW)
        .env("HARNERY_RECORDS", "off")
        .env("HARNERY_TEST_SCHEMA_SUFFIX", NEXT_CONTRACT)
        .env_remove("HARNERY_FAILPOINTS")
        .env("BIN", assert_cmd::cargo::cargo_bin("harnery"));
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("unshare (util-linux) runs");
    assert!(
        !stderr(&out).contains("unshare failed"),
        "user namespaces are needed for this test: {}",
        stderr(&out)
    );
    out
}

#[test]
fn a_read_only_ledgers_dir_stops_the_advance_and_nothing_changes() {
    let home = gen1_home();
    let db = home.path().join("ledgers/v2/ledger.sqlite");
    let before = blake3_of(&db);
    let out = in_private_mounts(
        r#"L="$HARNERY_HOME/ledgers"
           mount --bind "$L" "$L"; mount -o remount,bind,ro "$L"
           set +e; "$BIN" epoch advance; echo "rc=$?""#,
        &[("HARNERY_HOME", home.path())],
    );
    let text = format!("{}{}", stdout(&out), stderr(&out));
    assert!(text.contains("rc=2"), "{text}");
    assert!(text.contains("Read-only file system"), "{text}");
    assert!(text.contains("ledgers"), "the path is named: {text}");
    assert_eq!(blake3_of(&db), before);
    assert!(!home.path().join("ledgers/v2-candidates").exists());
    next_ok(home.path(), &["epoch", "advance"]);
    assert!(genesis(&home.path().join("ledgers/v2"))["anchor"].is_object());
}

#[test]
fn a_full_disk_during_the_archive_step_stops_and_resumes_with_nothing_lost() {
    let staging = later_hook_records();
    let (want_archive, want_live) = reference(staging.path());
    let out_dir = tempfile::tempdir().unwrap();
    let mnt = tempfile::tempdir().unwrap();
    let out = in_private_mounts(
        r#"mount -t tmpfs -o size=8m tmpfs "$MNT"
           export HARNERY_HOME="$MNT/home"
           cp -a "$FIXTURE" "$HARNERY_HOME"
           set +e
           HARNERY_FAILPOINTS=epoch-after-quiesce "$BIN" epoch advance; echo "killed=$?"
           dd if=/dev/zero of="$MNT/filler" bs=64k 2>/dev/null; echo full
           "$BIN" epoch advance; echo "rc_full=$?"
           "$BIN" finalize; echo "rc_cron=$?"
           rm "$MNT/filler"
           "$BIN" epoch advance; echo "rc_after=$?"
           cp -a "$HARNERY_HOME/." "$OUT/""#,
        &[
            ("MNT", mnt.path()),
            ("OUT", out_dir.path()),
            ("FIXTURE", &fixture()),
        ],
    );
    let text = format!("{}{}", stdout(&out), stderr(&out));
    assert!(text.contains("killed=137"), "{text}");
    assert!(text.contains("rc_full=2"), "{text}");
    assert!(text.contains("No space left on device"), "{text}");
    assert!(text.contains("rc_cron=2"), "cron says why too: {text}");
    assert!(text.contains("rc_after=0"), "{text}");
    let home = out_dir.path();
    append_records(home, staging.path());
    next_ok(home, &["finalize"]);
    assert_eq!(
        chain_rows(&the_archive(home).join("ledger.sqlite")),
        want_archive
    );
    assert_eq!(
        chain_rows(&home.join("ledgers/v2/ledger.sqlite")),
        want_live
    );
    let verdict = next(home, &["epoch", "verify"]);
    assert!(verdict.status.success(), "{}", stdout(&verdict));
}

#[test]
fn epoch_list_and_status_describe_every_epoch() {
    let home = gen1_home();
    let status: serde_json::Value =
        serde_json::from_str(&next_ok(home.path(), &["epoch", "status", "--json"])).unwrap();
    assert_eq!(status["live"]["schema_digest"], GEN1_DIGEST);
    assert_eq!(status["live"]["current"], false);
    assert!(status["next"].as_str().unwrap().contains("epoch advance"));
    assert_eq!(status["undrained"]["intake_files"], 1);
    next_ok(home.path(), &["epoch", "advance"]);
    let lines: Vec<serde_json::Value> = next_ok(home.path(), &["epoch", "list", "--json"])
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["live"], false);
    assert_eq!(lines[0]["schema_digest"], GEN1_DIGEST);
    assert_eq!(lines[1]["live"], true);
    assert_eq!(lines[1]["anchor"], lines[0]["genesis_id"]);
    let text = next_ok(home.path(), &["epoch", "status"]);
    assert!(text.contains("anchored to"), "{text}");
    assert!(text.contains("next: nothing"), "{text}");
}

#[test]
fn two_advances_chain_three_epochs_and_an_unknown_generation_is_named() {
    let home = gen1_home();
    next_ok(home.path(), &["epoch", "advance"]);
    // A second contract change: the epoch the first advance started is
    // archived under a digest the newer build does not know as a generation.
    let newer = |args: &[&str]| {
        harnery(home.path())
            .env("HARNERY_TEST_SCHEMA_SUFFIX", "newer-contract")
            .args(args)
            .output()
            .unwrap()
    };
    let out = newer(&["epoch", "advance"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = newer(&["epoch", "verify"]);
    assert!(out.status.success(), "{}", stdout(&out));
    assert_eq!(stdout(&out).matches("ok: ").count(), 3, "{}", stdout(&out));
    let status: serde_json::Value =
        serde_json::from_slice(&newer(&["epoch", "status", "--json"]).stdout).unwrap();
    let archives = status["archives"].as_array().unwrap();
    assert_eq!(archives.len(), 2);
    assert_eq!(archives[0]["schema_digest"], GEN1_DIGEST);
    assert_eq!(archives[0]["readable"], true);
    assert_eq!(archives[1]["readable"], false);
    assert!(
        archives[1]["error"]
            .as_str()
            .unwrap()
            .contains("which this build does not know"),
        "{status}"
    );
    let list = stdout(&newer(&["epoch", "list", "--json"]));
    let lines: Vec<serde_json::Value> = list
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[1]["anchor"], lines[0]["genesis_id"]);
    assert_eq!(lines[2]["anchor"], lines[1]["genesis_id"]);
}

#[test]
fn a_progress_record_with_nothing_left_to_advance_is_cleared() {
    let home = gen1_home();
    killed_at(home.path(), "epoch-after-quiesce");
    // Someone removed the ledgers by hand, leaving the record behind.
    std::fs::remove_dir_all(home.path().join("ledgers/v2")).unwrap();
    let out = next(home.path(), &["finalize", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!home.path().join("ledgers/epoch-advance.json").exists());
    assert!(
        home.path().join("ledgers/v2/genesis.json").exists(),
        "a first epoch"
    );
    assert_eq!(undrained_intake(home.path()), 0);
}
