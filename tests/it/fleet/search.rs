//! `harnery fleet search` against a real, throwaway PostgreSQL (see
//! `fleet_support`): a finalized corpus home shipped through a host role
//! is found by a reader with the same hits as local `harnery search`, a
//! secret masked at ship time is not found by its text, a host that
//! shipped with `--content none` is named as not searchable, rows shipped
//! before the search migration are filled when it is applied, and a query
//! that cannot run is exit 2.

use crate::common;
use crate::fleet::support as fleet_support;
use crate::fleet::support::{host_id, ship_ok};

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Output;

use common::*;
use fleet_support::PgServer;

const SECRET_PASSWORD: &str = "hunter2-correct-horse";

/// A PreToolUse record of the basic fixture whose command holds a password.
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
    v["session_id"] = "5ec2e7-0000-4000-8000-000000000002".into();
    v["tool_input"] = serde_json::json!({
        "command": format!("mysql --password={SECRET_PASSWORD} -e 'select 1'"),
    });
    v.to_string()
}

/// A finalized home of several corpus sessions and a record with a secret.
fn corpus_home() -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    for (agent, scenario) in [
        ("claude-code", "basic"),
        ("claude-code", "file-tools"),
        ("claude-code", "tool-failure"),
        ("copilot", "basic-shell-anthropic"),
    ] {
        feed_fixture(home.path(), agent, scenario);
    }
    assert_cmd::Command::cargo_bin("harnery-hook")
        .unwrap()
        .env("HARNERY_HOME", home.path())
        .arg("claude-code")
        .write_stdin(secret_record())
        .assert()
        .success();
    let out = run(home.path(), &["finalize"]);
    assert!(out.status.success(), "finalize: {}", stderr(&out));
    home
}

fn add_role(admin: &str, kind: &str, name: &str) -> String {
    let out = harnery(Path::new("/nonexistent-harnery-home"))
        .args(["fleet", kind, name, "--url", admin])
        .output()
        .unwrap();
    assert!(out.status.success(), "{kind}: {}", stderr(&out));
    stdout(&out).trim().to_string()
}

fn fleet_search(reader: &str, args: &[&str]) -> Output {
    harnery(Path::new("/nonexistent-harnery-home"))
        .args([
            "fleet", "search", "--from", reader, "--json", "--limit", "1000",
        ])
        .args(args)
        .output()
        .unwrap()
}

/// Each hit as (session id, offset, kind), from JSON lines.
fn keys(text: &str) -> Keys {
    text.lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            (
                v["session"]["session_id"].as_str().unwrap().to_string(),
                v["offset"].as_u64().unwrap(),
                v["kind"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

type Keys = BTreeSet<(String, u64, String)>;

fn local_keys(home: &Path, query: &str, filters: &[&str]) -> Keys {
    let mut args = vec!["search", "--json", "--limit", "1000"];
    args.extend_from_slice(filters);
    args.extend(["--", query]);
    let out = run(home, &args);
    assert!(out.status.success(), "search {query}: {}", stderr(&out));
    keys(&stdout(&out))
}

fn fleet_keys(reader: &str, host: &str, query: &str, filters: &[&str]) -> Keys {
    let mut args = vec!["--host", host];
    args.extend_from_slice(filters);
    args.extend(["--", query]);
    let out = fleet_search(reader, &args);
    assert!(
        out.status.success(),
        "fleet search {query}: {}",
        stderr(&out)
    );
    keys(&stdout(&out))
}

#[test]
fn fleet_search_finds_what_local_search_finds_and_no_masked_secret() {
    let pg = PgServer::start();
    let admin = pg.database("fleet");
    let out = harnery(Path::new("/nonexistent-harnery-home"))
        .args(["fleet", "init", "--url", &admin])
        .output()
        .unwrap();
    assert!(out.status.success(), "init: {}", stderr(&out));
    let a_url = add_role(&admin, "add-host", "searchable");
    let b_url = add_role(&admin, "add-host", "metadata-only");
    let reader = add_role(&admin, "add-reader", "finder");

    let a = corpus_home();
    let b = tempfile::tempdir().unwrap();
    copy_tree(a.path(), b.path());
    std::fs::remove_file(b.path().join("host-id")).ok();
    ship_ok(a.path(), &a_url, &[]);
    ship_ok(b.path(), &b_url, &["--content", "none"]);
    let (ha, hb) = (host_id(a.path()), host_id(b.path()));

    // A word, a phrase, a path substring: the same hits as local search.
    for query in ["echo", "\"echo hi\"", "cc-capture/runs", "ech*"] {
        let local = local_keys(a.path(), query, &[]);
        assert!(!local.is_empty(), "local search finds {query}");
        assert_eq!(fleet_keys(&reader, &ha, query, &[]), local, "{query}");
    }
    // The filters narrow as they do locally.
    let filters: [&[&str]; 3] = [
        &["--kind", "tool-input"],
        &["--tool", "BASH"],
        &["--failed"],
    ];
    for f in filters {
        let local = local_keys(a.path(), "echo", f);
        assert!(!local.is_empty(), "local search finds echo {f:?}");
        assert!(
            local.len() < local_keys(a.path(), "echo", &[]).len(),
            "{f:?} narrows"
        );
        assert_eq!(fleet_keys(&reader, &ha, "echo", f), local, "{f:?}");
    }

    // The secret is in the local ledger and search, but masked when shipped.
    assert!(!local_keys(a.path(), SECRET_PASSWORD, &[]).is_empty());
    assert!(fleet_keys(&reader, &ha, SECRET_PASSWORD, &[]).is_empty());
    assert_eq!(fleet_keys(&reader, &ha, "mysql", &[]).len(), 1);

    // Every hit names its host; the metadata-only host has none and is named.
    let out = fleet_search(&reader, &["echo"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out)
            .lines()
            .all(|l| l.contains(&format!("\"host\":\"{ha}\"")))
    );
    assert!(
        stderr(&out).contains("not searchable") && stderr(&out).contains(&hb),
        "{}",
        stderr(&out)
    );
    assert!(!stderr(&out).contains(&ha), "{}", stderr(&out));

    // Without --json: two lines a hit, the first led by its host.
    let out = harnery(Path::new("/nonexistent-harnery-home"))
        .args([
            "fleet", "search", "--from", &reader, "--kind", "prompt", "echo",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert!(!lines.is_empty() && lines.len().is_multiple_of(2), "{text}");
    for pair in lines.chunks(2) {
        assert!(pair[0].starts_with(&format!("{ha}  ")), "{text}");
        assert!(
            pair[0].contains("prompt") && pair[1].contains("[echo]"),
            "{text}"
        );
    }

    // Words and substrings are answered from their indexes.
    let mut c = pg.client("fleet");
    c.batch_execute("ANALYZE; SET enable_seqscan = off")
        .unwrap();
    for (cond, index) in [
        (
            "words @@ plainto_tsquery('simple', 'echo')",
            "search_text_words",
        ),
        ("text ILIKE '%cc-capture/runs%'", "search_text_grams"),
    ] {
        let plan: Vec<String> = c
            .query(
                &format!("EXPLAIN SELECT seq FROM harnery.search_text WHERE {cond}"),
                &[],
            )
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect();
        assert!(plan.iter().any(|l| l.contains(index)), "{cond}: {plan:?}");
    }

    // A query that cannot run is exit 2, named.
    let out = fleet_search(&reader, &["\"unclosed"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("never closed"), "{}", stderr(&out));

    // Rows on the server before migration 4 are filled from their shipped
    // bytes when it is applied: the same text as `ship` sent, masked text
    // still masked. (A server at version 4 is made of this one: migration
    // 5 would set the rows aside, so 4 is applied alone here.)
    let texts = |c: &mut postgres::Client| -> Vec<String> {
        c.query(
            "SELECT concat_ws('|', host_id, genesis_id, seq, kind, tool, turn_id, text) \
             FROM harnery.search_text ORDER BY host_id, genesis_id, seq",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect()
    };
    let shipped = texts(&mut c);
    assert!(!shipped.is_empty());
    c.batch_execute(
        "RESET enable_seqscan; DROP TABLE harnery.search_text; \
         DELETE FROM harnery.schema_migrations WHERE version >= 4",
    )
    .unwrap();
    harnery::fleet::schema::migrate_to(&mut c, 4).unwrap();
    assert_eq!(texts(&mut c), shipped);
    assert!(!shipped.iter().any(|t| t.contains(SECRET_PASSWORD)));
}
