//! Contract generation 12 (`tool.batch_result` and every agent's record
//! results, after generation 11's `session.titled`, generation 10's
//! `session.imported`, generation 9's adapter ids of every agent with hooks
//! and `paired_by` on a completion found by order) ships by an epoch
//! advance from the homes generations 6, 7, 8, 9, 10 and 11 wrote (10's in
//! `epoch::titles`, 11's in `epoch::results`), and every epoch is
//! judged by the generation that wrote it: an archived generation-6 or
//! generation-1 epoch validates under its own shape, and a row that only a
//! later generation allows is a problem of its archive even though this
//! build reads it.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{self, ok, run, stderr, stdout};

/// Generation 12's schema digest, as its genesis stores it.
pub(crate) const GEN12: &str = "081a2061e45f712d36111cfebe19bf4e19a1c28c81ac75c0abd959721c187c16";
pub(crate) const GEN11: &str = "53f6521997460c5ecf8d7003236c50eed7e7071d7a818519dee96f7cb45c4444";
pub(crate) const GEN10: &str = "79ce73ff16f48337f3b544607748fc7101bd1cb7aac1bfa641d55456fb6147fb";
const GEN9: &str = "4e1bdb3de36ea40587aba91328ba8213bb86f8ab8b86baaa9f81a253552868d6";
const GEN8: &str = "3e51b41f91f0a4ac0291c1cb3f6e3b2d4fbdaabc5b6356b3ede9b158e69512db";
const GEN7: &str = "946ccbb2424d4f33151a7231bbdddd0709179294b4f7c061078332cd405a4b0d";
const GEN6: &str = "dbb71c8f699a0110309706c91a7be9b3d6eb7378e27294ad92221eb5114890b0";
const GEN1: &str = "1256ec3093dd7e2056634101779618c6a94c7ae34a1b5e4010dd47febaaedcec";
/// A session of the generation-6 home, clean, with checkpoints.
pub(crate) const CLEAN: &str = "82655d0f-45cd-404f-9e4e-e90fea255247";

pub(crate) fn json(home: &Path, args: &[&str]) -> Value {
    serde_json::from_str(&ok(home, args)).unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

/// `epoch list --json`: one line per epoch, oldest first, each with its
/// keys in name order (the bytes the lines have always had).
fn epochs(home: &Path) -> Vec<Value> {
    ok(home, &["epoch", "list", "--json"])
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            assert_eq!(l, v.to_string(), "keys in name order");
            v
        })
        .collect()
}

/// The archive's genesis id (the first epoch listed).
fn archive_id(home: &Path) -> String {
    epochs(home)[0]["genesis_id"].as_str().unwrap().to_string()
}

/// Advance the home generation `from` wrote (`tests/fixtures/epoch/gen<from>`)
/// to this build's, drain what it carried, and read both epochs with every
/// read command; `validate`, `verify` and `epoch verify` pass.
pub(crate) fn ships_from(from: u32, digest: &str) -> tempfile::TempDir {
    let (dir, live) = crate::finalize::records::advanced_from(&format!("gen{from}"));
    let home = dir.path();
    assert_eq!(live["contract_generation"], 12);
    assert_eq!(live["schema_digest"], GEN12);
    let list = epochs(home);
    assert_eq!(list.len(), 2, "{list:?}");
    assert_eq!(list[0]["generation"], from, "{list:?}");
    assert_eq!(list[0]["schema_digest"], digest, "{list:?}");
    assert_eq!(list[1]["generation"], 12, "{list:?}");
    // The intake the advance carried is drained into the new epoch.
    ok(home, &["finalize"]);
    let all = ["--epoch", "all"];
    let reads: [&[&str]; 11] = [
        &["sessions", "--json"],
        &["show", CLEAN],
        &["replay", CLEAN, "--json"],
        &["receipts", CLEAN, "--json"],
        &["audit", "--json"],
        &["usage", "--json"],
        &["checkpoints", CLEAN, "--json"],
        &["export"],
        &["search", "hello", "--json"],
        &["view", CLEAN, "-o", "/dev/null"],
        &["verify", "--json"],
    ];
    for args in reads {
        let args: Vec<&str> = args.iter().chain(all.iter()).copied().collect();
        ok(home, &args);
    }
    let validated = json(home, &["validate", "--epoch", "all", "--json"]);
    assert_eq!(validated["ok"], true, "{validated}");
    ok(home, &["validate"]);
    ok(home, &["verify"]);
    let verdict = json(home, &["epoch", "verify", "--json"]);
    assert_eq!(verdict["ok"], true, "{verdict}");
    assert!(common::both_epochs_stay_readable(home) > 0);
    dir
}

#[test]
fn generation_twelve_ships_by_an_epoch_advance_from_the_generation_six_home() {
    ships_from(6, GEN6);
}

/// The home generation 7 wrote (built by main at `caef7b7`, the last build
/// that wrote it): its archive is judged by generation 7's description.
#[test]
fn generation_twelve_ships_by_an_epoch_advance_from_the_generation_seven_home() {
    ships_from(7, GEN7);
}

/// The home generation 8 wrote (built by main at `7c0c15f`, the last build
/// that wrote it): its archive is judged by generation 8's frozen shape,
/// its Copilot completions carry no `paired_by`, and the new epoch's (the
/// same client's session, recorded again after the advance) say `order`.
#[test]
fn generation_twelve_ships_by_an_epoch_advance_from_the_generation_eight_home() {
    let home = ships_from(8, GEN8);
    let home = home.path();
    common::feed_fixture(home, "copilot", "hook-exit1-postToolUse");
    ok(home, &["finalize"]);
    let all = ok(home, &["export", "--epoch", "all"]);
    let completions: Vec<Value> = all
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["type"] == "tool.completed" && e["session"]["adapter"] == "copilot")
        .collect();
    assert!(!completions.is_empty());
    let epoch_of = |e: &Value| e["epoch"].as_str().map(str::to_string);
    let archive = archive_id(home);
    let mut ordered = 0;
    for e in &completions {
        let by = &e["payload"]["paired_by"];
        let archived = epoch_of(e).as_deref() == Some(archive.as_str());
        match archived {
            true => assert!(by.is_null(), "{e}"),
            false
                if e["payload"]["tool_call_id"].is_null()
                    && !e["payload"]["requested_event_id"].is_null() =>
            {
                assert_eq!(by, "order", "{e}");
                ordered += 1;
            }
            false => {}
        }
    }
    assert!(ordered > 0, "a live Copilot completion found by order");
}

/// The home generation 9 wrote (built by main at `4f844e9`, the last build
/// that wrote it): its archive is judged by generation 9's frozen shape,
/// and a session imported after the advance is of class `imported`
/// beside the archive's hooked sessions, whose records the import leaves
/// alone (the clean session's record is on disk too).
#[test]
fn generation_twelve_ships_by_an_epoch_advance_from_the_generation_nine_home() {
    let dir = ships_from(9, GEN9);
    let home = dir.path();
    let agent = crate::import::AgentDirs::new();
    assert_eq!(agent.claude_record("basic"), CLEAN);
    let id = agent.claude_record("tool-failure");
    let done = agent.import_json(home, &[]);
    assert_eq!(done["sessions"], 1, "{done}");
    let listed = crate::import::sessions_by_id(home);
    assert_eq!(
        listed[&id]["eligibility"]["class"], "imported",
        "{listed:?}"
    );
    assert_eq!(
        listed[CLEAN]["eligibility"]["class"], "eligible",
        "{listed:?}"
    );
    ok(home, &["verify"]);
    let validated = json(home, &["validate", "--epoch", "all", "--json"]);
    assert_eq!(validated["ok"], true, "{validated}");
}

#[test]
fn an_archived_generation_one_epoch_validates_under_its_own_rules() {
    let (home, _) = crate::finalize::records::advanced_from("gen1");
    let home = home.path();
    assert_eq!(epochs(home)[0]["schema_digest"], GEN1);
    let validated = json(home, &["validate", "--epoch", "all", "--json"]);
    assert_eq!(validated["ok"], true, "{validated}");
    let verdict = json(home, &["epoch", "verify", "--json"]);
    assert_eq!(verdict["ok"], true, "{verdict}");
}

/// The archive's database, made writable for the edit and read-only again.
fn edit_archive(home: &Path, edit: impl FnOnce(&rusqlite::Connection)) {
    let dir: PathBuf = common::the_archive(home);
    let db = dir.join("ledger.sqlite");
    set_mode(&dir, 0o700);
    set_mode(&db, 0o600);
    let conn = rusqlite::Connection::open(&db).unwrap();
    harnery::ledger::eventz::register(&conn).unwrap();
    edit(&conn);
    drop(conn);
    set_mode(&db, 0o400);
    set_mode(&dir, 0o500);
}

fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// Rewrite the payload of the first row of type `ty` with `change`; the
/// row's event id and new text.
fn rewrite_first(
    conn: &rusqlite::Connection,
    ty: &str,
    change: impl FnOnce(&mut Value),
) -> (String, String) {
    let (seq, id, text): (i64, String, String) = conn
        .query_row(
            "SELECT seq, id, json FROM events WHERE json_extract(json, '$.type') = ?1 ORDER BY seq LIMIT 1",
            [ty],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap_or_else(|e| panic!("no {ty} row: {e}"));
    let mut row: Value = serde_json::from_str(&text).unwrap();
    change(&mut row);
    let text = row.to_string();
    conn.execute("UPDATE events SET json = ?1 WHERE seq = ?2", (&text, seq))
        .unwrap();
    (id, text)
}

/// The `contract-shape` violations `validate --epoch <archive>` reports, by
/// event id; it exits 1.
fn shape_violations(home: &Path, archive: &str) -> Vec<(String, String)> {
    let out = run(home, &["validate", "--epoch", archive, "--json"]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    v["epochs"][0]["violations"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["rule"] == "contract-shape")
        .map(|p| {
            (
                p["event_id"].as_str().unwrap().to_string(),
                p["detail"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// Rows this build reads, written into a generation-6 archive where that
/// generation had no such thing: a `checkpoint.located` (generation 7) and
/// a prompt without `transformed` (a member generation 6 required). Each
/// is judged by generation 6; the live epoch stays valid.
#[test]
fn an_archived_generation_six_row_is_judged_by_generation_six() {
    let (home, _) = crate::finalize::records::advanced_from("gen6");
    let home = home.path();
    let archive = archive_id(home);
    let mut edited = Vec::new();
    edit_archive(home, |conn| {
        edited.push(rewrite_first(conn, "prompt.submitted", |row| {
            row["payload"]
                .as_object_mut()
                .unwrap()
                .remove("transformed");
        }));
        edited.push(rewrite_first(conn, "session.ended", |row| {
            row["type"] = "checkpoint.located".into();
            row["payload"] = serde_json::json!({
                "checkpoint_id": "turn:x",
                "checkpoint_event_id": "ev_x",
                "path": "/r.jsonl",
                "end": 10
            });
        }));
    });
    for (_, text) in &edited {
        serde_json::from_str::<harnery::contract::Event>(text)
            .unwrap_or_else(|e| panic!("this build reads {text}: {e}"));
    }
    let found = shape_violations(home, &archive);
    assert_eq!(found.len(), 2, "{found:#?}");
    let (prompt, located) = (&edited[0].0, &edited[1].0);
    assert_eq!(&found[0].0, prompt, "{found:#?}");
    assert!(
        found[0]
            .1
            .contains("does not fit contract generation 6, which wrote it")
            && found[0]
                .1
                .ends_with("$.payload: missing member `transformed`"),
        "{found:#?}"
    );
    assert_eq!(&found[1].0, located, "{found:#?}");
    assert!(
        found[1]
            .1
            .ends_with("$.type: \"checkpoint.located\" is none of the 37 this contract knows"),
        "{found:#?}"
    );
    // `epoch verify` judges the archive's rows the same way.
    let out = run(home, &["epoch", "verify", &archive]);
    assert_eq!(out.status.code(), Some(1));
    let text = stdout(&out);
    for id in [prompt, located] {
        assert!(text.contains(&format!("contract-shape ({id})")), "{text}");
    }
    ok(home, &["validate"]);
}

/// The same for a generation-1 archive: an attestation generation 2 added.
#[test]
fn an_archived_generation_one_row_is_judged_by_generation_one() {
    let (home, _) = crate::finalize::records::advanced_from("gen1");
    let home = home.path();
    let archive = archive_id(home);
    let mut edited = None;
    edit_archive(home, |conn| {
        edited = Some(rewrite_first(conn, "session.ended", |row| {
            row["provenance"]["attestation"] = "record".into();
        }));
    });
    let (id, text) = edited.unwrap();
    serde_json::from_str::<harnery::contract::Event>(&text).expect("this build reads it");
    let found = shape_violations(home, &archive);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(found[0].0, id);
    assert!(
        found[0].1.contains("contract generation 1")
            && found[0]
                .1
                .ends_with("$.provenance.attestation: \"record\" is not one of native, derived"),
        "{found:#?}"
    );
}
