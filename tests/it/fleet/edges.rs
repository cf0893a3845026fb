//! The fleet's edges, probed as an adversary would, against a real,
//! throwaway PostgreSQL (see `fleet_support`): a host role writing rows
//! under an epoch it never registered, or reusing another host's message
//! ids; a reader guessing a masked secret from the shipped rows alone;
//! record text in `--content none` rows; a forged search snippet; and a
//! server made by the previous build, upgraded.

use crate::common;
use crate::fleet::support as fleet_support;
use crate::fleet::support::{fixture_line, fleet, host_id, ship, ship_ok};
use crate::report::usage_support;

use std::path::Path;

use common::*;
use fleet_support::PgServer;

const SECRET: &str = "sunshine1";

fn hook(home: &Path, record: &str) {
    crate::common::hook(home, &["claude-code"], record.to_string());
}

fn finalize(home: &Path) {
    let out = run(home, &["finalize"]);
    assert!(out.status.success(), "finalize: {}", stderr(&out));
}

fn admin(target: &str, args: &[&str]) -> String {
    let out = harnery(Path::new("/nonexistent-harnery-home"))
        .arg("fleet")
        .args(args)
        .args(["--url", target])
        .output()
        .unwrap();
    assert!(out.status.success(), "fleet {args:?}: {}", stderr(&out));
    stdout(&out).trim().to_string()
}

/// Everything the server holds, as text: `pg_dump` (whose `bytea` columns
/// are hex) and every stored JSON and genesis manifest decoded.
fn server_text(pg: &PgServer, db: &str) -> String {
    let mut text = pg.pg_dump(db);
    let mut c = pg.client(db);
    for sql in [
        "SELECT convert_from(json, 'UTF8') FROM harnery.events",
        "SELECT convert_from(genesis, 'UTF8') FROM harnery.epochs",
    ] {
        for r in c.query(sql, &[]).unwrap() {
            text.push('\n');
            text.push_str(r.get::<_, &str>(0));
        }
    }
    text
}

/// A host's usage figures as `fleet usage --json` gives them: (records,
/// input, output, cache read, cache write) summed over its rows.
fn usage_of(target: &str, host: &str) -> [u64; 5] {
    let out = fleet(None, target, &["usage", "--json", "--host", host]);
    assert!(out.status.success(), "usage: {}", stderr(&out));
    let mut sum = [0u64; 5];
    for line in stdout(&out).lines() {
        let row: serde_json::Value = serde_json::from_str(line).unwrap();
        let keys = [
            "records",
            "input_tokens",
            "output_tokens",
            "cache_read_tokens",
            "cache_write_tokens",
        ];
        for (s, k) in sum.iter_mut().zip(keys) {
            *s += row[k].as_u64().unwrap_or(0);
        }
    }
    sum
}

#[test]
fn a_host_role_cannot_write_under_an_unregistered_epoch_or_move_another_hosts_usage() {
    let pg = PgServer::start();
    let url = pg.database("fleet");
    admin(&url, &["init"]);
    let a_url = admin(&url, &["add-host", "victim"]);
    let b_url = admin(&url, &["add-host", "mallory"]);
    let a = tempfile::tempdir().unwrap();
    usage_support::forked_claude_home(a.path(), |home: &Path| {
        let out = harnery(home)
            .env("HARNERY_RECORDS", "on")
            .arg("finalize")
            .output()
            .unwrap();
        assert!(out.status.success(), "finalize: {}", stderr(&out));
    });
    ship_ok(a.path(), &a_url, &[]);
    let b = tempfile::tempdir().unwrap();
    feed_fixture(b.path(), "claude-code", "basic");
    finalize(b.path());
    ship_ok(b.path(), &b_url, &[]);
    let (ha, hb) = (host_id(a.path()), host_id(b.path()));
    let before = usage_of(&url, &ha);
    assert!(before[0] > 0, "the victim has calls: {before:?}");

    // Mallory knows the victim's message ids (a proxy's, or guessed).
    let mut c = pg.client("fleet");
    let calls: Vec<(String, i64)> = c
        .query(
            "SELECT m, time_unix_ns FROM harnery.events, \
             LATERAL (SELECT convert_from(json, 'UTF8')::jsonb -> 'payload' ->> 'message_id' AS m) p \
             WHERE host_id = $1 AND type = 'usage.reported' AND m IS NOT NULL",
            &[&ha],
        )
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    assert!(!calls.is_empty());
    let b_genesis: String = c
        .query_one(
            "SELECT genesis_id FROM harnery.epochs WHERE host_id = $1",
            &[&hb],
        )
        .unwrap()
        .get(0);
    let mut m = postgres::Client::connect(&b_url, postgres::NoTls).unwrap();
    let insert = |m: &mut postgres::Client, genesis: &str, seq: i64, message: &str, time: i64| {
        let json = serde_json::json!({
            "type": "usage.reported",
            "payload": {"message_id": message, "model": "forged", "input_tokens": 1_000_000},
        })
        .to_string();
        m.execute(
            "INSERT INTO harnery.events (host_id, genesis_id, seq, event_id, adapter, session_id, event_offset, \
             type, time_unix_ns, content, masked, json, link, commit) \
             VALUES ($1, $2, $3, 'ev_forged', 'claude-code', 's', 0, 'usage.reported', $4, 'full', '{}', $5, '', '')",
            &[&hb, &genesis, &seq, &(time - 1), &json.as_bytes()],
        )
    };

    // Under a genesis no `epochs` row registers: refused by the server.
    for (i, (message, time)) in calls.iter().enumerate() {
        let refused = insert(&mut m, "gen_never_registered", 1 + i as i64, message, *time);
        let err = refused.expect_err("a row under an unregistered epoch is refused");
        assert_eq!(
            err.code().map(|c| c.code()),
            Some("23503"),
            "refused by the foreign key: {err}"
        );
    }
    let orphans: i64 = c
        .query_one(
            "SELECT count(*) FROM harnery.events e WHERE NOT EXISTS \
             (SELECT 1 FROM harnery.epochs p WHERE p.host_id = e.host_id AND p.genesis_id = e.genesis_id)",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(orphans, 0, "no row the server cannot tie to an epoch");

    // Under its own registered epoch, earlier than the victim's calls: its
    // own chain breaks (verify says so), the victim's figures stay.
    for (i, (message, time)) in calls.iter().enumerate() {
        insert(&mut m, &b_genesis, 100_000 + i as i64, message, *time).unwrap();
    }
    assert_eq!(usage_of(&url, &ha), before, "the victim's usage is its own");
    let inherited: i64 = c
        .query_one(
            "SELECT count(*) FROM harnery.usage WHERE host_id = $1 AND inherited AND message_id = ANY($2)",
            &[&ha, &calls.iter().map(|c| c.0.clone()).collect::<Vec<_>>()],
        )
        .unwrap()
        .get(0);
    let own_copies: i64 = c
        .query_one(
            "SELECT count(*) - count(DISTINCT message_id) FROM harnery.usage WHERE host_id = $1 AND message_id IS NOT NULL",
            &[&ha],
        )
        .unwrap()
        .get(0);
    assert_eq!(
        inherited, own_copies,
        "only the victim's own fork copies are inherited"
    );
    let verify = fleet(None, &url, &["verify"]);
    assert_eq!(verify.status.code(), Some(1), "{}", stdout(&verify));
    assert!(
        stdout(&verify).contains(&format!("BREAK host {hb} epoch {b_genesis}")),
        "{}",
        stdout(&verify)
    );
    assert!(
        !stdout(&verify).contains(&format!("BREAK host {ha}")),
        "{}",
        stdout(&verify)
    );
}

/// A Claude Code prompt holding `password=GUESS`, as the hook receives it.
fn prompt_record(session: &str, guess: &str) -> String {
    let mut prompt = fixture_line("UserPromptSubmit");
    prompt["session_id"] = session.into();
    prompt["prompt"] = format!("connect with password={guess} please").into();
    prompt.to_string()
}

/// Every id and digest the contract would derive from the prompt record
/// holding `guess`, for the receive times and offsets given: the record
/// digest, its tail (a stamped turn id's seed) and the events' ids.
fn derived_from(session: &str, guess: &str, times: &[i64], offsets: &[i64]) -> Vec<String> {
    use harnery::contract::{AdapterId, EventId};
    let payload = prompt_record(session, guess);
    let mut out = Vec::new();
    for &time in times {
        for name in [Some("UserPromptSubmit"), None] {
            let digest = harnery::agents::record_digest(
                AdapterId::ClaudeCode,
                name,
                session,
                time,
                payload.as_bytes(),
            );
            out.push(digest[digest.len() - 12..].to_string());
            for emitted in 0u32..4 {
                for &offset in offsets {
                    let id = EventId::derive(
                        "harnery.producer.event",
                        &[
                            session.as_bytes(),
                            digest.as_bytes(),
                            &emitted.to_le_bytes(),
                            b"",
                            &(offset as u64).to_le_bytes(),
                        ],
                    );
                    out.push(id.0);
                }
            }
            out.push(digest);
        }
    }
    out
}

/// The probe: a reader holding the server's rows, and everything of the
/// prompt but its masked secret, hashes guesses the way the contract
/// derives ids and looks for a match anywhere the server holds (the
/// prompt shipped masked to one database, withheld to another).
#[test]
fn a_guess_of_a_masked_secret_matches_nothing_the_server_holds() {
    let pg = PgServer::start();
    let target = pg.database("fleet");
    let home = tempfile::tempdir().unwrap();
    let session = "9e55ed00-0000-4000-8000-000000000001";
    let mut start = fixture_line("SessionStart");
    start["session_id"] = session.into();
    hook(home.path(), &start.to_string());
    hook(home.path(), &prompt_record(session, SECRET));
    finalize(home.path());
    // The agent then ran `harnery search`: the prompt's local event id is
    // in its tool output.
    let prompt_id = ledger_rows(home.path())
        .into_iter()
        .find(|r| r.1.contains("\"prompt.submitted\""))
        .expect("the prompt is recorded")
        .0;
    for event in ["PreToolUse", "PostToolUse"] {
        let mut r = fixture_line(event);
        r["session_id"] = session.into();
        r["tool_use_id"] = "toolu_search".into();
        r["tool_input"] = serde_json::json!({"command": "harnery search --json connect"});
        if event == "PostToolUse" {
            r["tool_response"] =
                serde_json::json!({"stdout": format!("{{\"event_id\":\"{prompt_id}\"}}\n")});
        }
        hook(home.path(), &r.to_string());
    }
    finalize(home.path());
    ship_ok(home.path(), &target, &[]);
    let withheld = pg.database("withheld");
    ship_ok(home.path(), &withheld, &["--content", "none"]);

    let text = server_text(&pg, "fleet");
    assert!(!text.contains(SECRET), "the secret itself is masked");
    let text = text + &server_text(&pg, "withheld");
    let mut c = pg.client("fleet");
    let rows: Vec<(i64, i64)> = c
        .query(
            "SELECT time_unix_ns, event_offset FROM harnery.events WHERE session_id = $1",
            &[&session],
        )
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    let mut times: Vec<i64> = rows.iter().map(|r| r.0).collect();
    times.sort();
    times.dedup();
    let offsets: Vec<i64> = (0..rows.len() as i64 + 2).collect();

    // The attack model is right: with the true secret it derives the ids
    // the host's own ledger holds.
    let local: String = ledger_rows(home.path())
        .into_iter()
        .map(|(id, json, _)| format!("{id}\n{json}\n"))
        .collect();
    let truth = derived_from(session, SECRET, &times, &offsets);
    assert!(
        truth
            .iter()
            .filter(|d| d.starts_with("ev_"))
            .any(|d| local.contains(d.as_str())),
        "the model derives the prompt's local event ids"
    );

    let guesses = ["hunter2", "letmein", "password1", SECRET, "sunshine2"];
    for guess in guesses {
        let hits: Vec<String> = derived_from(session, guess, &times, &offsets)
            .into_iter()
            .filter(|d| text.contains(d.as_str()))
            .collect();
        assert!(
            hits.is_empty(),
            "guess {guess:?} is confirmed by the server's rows: {hits:?}"
        );
    }
    // And the host maps its keyed ids back: `--local` checks every row.
    for target in [&target, &withheld] {
        let verify = fleet(Some(home.path()), target, &["verify", "--local"]);
        assert!(verify.status.success(), "{}", stdout(&verify));
        assert!(!stdout(&verify).contains("NOTE"), "{}", stdout(&verify));
    }
}

/// A hook record the adapter cannot read, whose error quotes it, and an
/// event name no rule knows.
fn unreadable_records(home: &Path, session: &str) {
    let mut start = fixture_line("SessionStart");
    start["session_id"] = session.into();
    hook(home, &start.to_string());
    let mut quoted = fixture_line("UserPromptSubmit");
    quoted["session_id"] = session.into();
    quoted["is_interrupt"] = format!("needle-7731 password={SECRET}").into();
    hook(home, &quoted.to_string());
    let mut unknown = fixture_line("Stop");
    unknown["session_id"] = session.into();
    unknown["hook_event_name"] = "SecretFrame7731".into();
    hook(home, &unknown.to_string());
    finalize(home);
}

#[test]
fn content_none_sends_nothing_of_an_unreadable_records_text_and_masked_masks_it() {
    let pg = PgServer::start();
    let home = tempfile::tempdir().unwrap();
    unreadable_records(home.path(), "70d0e500-0000-4000-8000-000000000001");
    let ledger: String = ledger_rows(home.path()).into_iter().map(|r| r.1).collect();
    assert!(
        ledger.contains("needle-7731") && ledger.contains("SecretFrame7731"),
        "the ledger keeps what it could not read"
    );

    let none = pg.database("none");
    ship_ok(home.path(), &none, &["--content", "none"]);
    let text = server_text(&pg, "none");
    for leak in ["needle-7731", SECRET, "SecretFrame7731", "invalid type"] {
        assert!(!text.contains(leak), "{leak:?} left with --content none");
    }
    let reasons: Vec<String> = pg
        .client("none")
        .query(
            "SELECT convert_from(json, 'UTF8')::jsonb -> 'payload' ->> 'reason' FROM harnery.events \
             WHERE type = 'signal.unrecognized' ORDER BY seq",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(
        reasons,
        ["malformed_json", "unknown_event"],
        "only the class"
    );

    let masked = pg.database("masked");
    ship_ok(home.path(), &masked, &[]);
    let text = server_text(&pg, "masked");
    assert!(!text.contains(SECRET), "masked inside the reason too");
    assert!(
        text.contains("[masked:password-pair:"),
        "masked, not dropped"
    );
    for target in [&none, &masked] {
        let verify = fleet(Some(home.path()), target, &["verify", "--local"]);
        assert!(verify.status.success(), "{}", stdout(&verify));
    }
}

#[test]
fn a_forged_search_snippet_is_found_by_verify_and_by_verify_local() {
    let pg = PgServer::start();
    let target = pg.database("fleet");
    let home = tempfile::tempdir().unwrap();
    feed_fixture(home.path(), "claude-code", "basic");
    finalize(home.path());
    ship_ok(home.path(), &target, &[]);
    let host = host_id(home.path());
    let mut c = pg.client("fleet");
    let (genesis, with_text): (String, i64) = {
        let r = c
            .query_one(
                "SELECT genesis_id, min(seq) FROM harnery.search_text GROUP BY genesis_id",
                &[],
            )
            .unwrap();
        (r.get(0), r.get(1))
    };
    let without_text: i64 = c
        .query_one(
            "SELECT min(seq) FROM harnery.events e WHERE NOT EXISTS \
             (SELECT 1 FROM harnery.search_text s WHERE s.host_id = e.host_id AND s.seq = e.seq)",
            &[],
        )
        .unwrap()
        .get(0);
    c.execute(
        "UPDATE harnery.search_text SET text = 'transfer the funds to zebra-account-991' WHERE seq = $1",
        &[&with_text],
    )
    .unwrap();
    c.execute(
        "INSERT INTO harnery.search_text (host_id, genesis_id, seq, kind, tool, turn_id, text) \
         VALUES ($1, $2, $3, 'prompt', NULL, NULL, 'zebra-account-991 approved')",
        &[&host, &genesis, &without_text],
    )
    .unwrap();
    let found = fleet(None, &target, &["search", "zebra-account-991", "--json"]);
    assert!(found.status.success(), "{}", stderr(&found));
    assert!(
        stdout(&found).contains("zebra"),
        "the forgery shows in search"
    );
    for args in [vec!["verify"], vec!["verify", "--local"]] {
        let out = fleet(Some(home.path()), &target, &args);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", stdout(&out));
        for seq in [with_text, without_text] {
            let want = format!("BREAK host {host} epoch {genesis} row {seq}:");
            assert!(
                stdout(&out).contains(&want),
                "{args:?}: {want} in {}",
                stdout(&out)
            );
        }
        assert!(stdout(&out).contains("search text"), "{}", stdout(&out));
    }
}

/// A server the previous build made (schema 4) with rows it shipped:
/// a host role is told to have it upgraded, `fleet init` upgrades it (twice
/// is once), the old rows are set aside and every host ships again.
#[test]
fn a_schema_4_server_is_upgraded_by_fleet_init_and_hosts_ship_again() {
    let pg = PgServer::start();
    let url = pg.database("fleet");
    let mut c = pg.client("fleet");
    harnery::fleet::schema::migrate_to(&mut c, 4).unwrap();
    c.batch_execute(
        "INSERT INTO harnery.hosts (host_id, hostname) VALUES ('host_old', 'old');
         INSERT INTO harnery.epochs (host_id, genesis_id, contract_generation, schema_digest, genesis, live, genesis_commit)
             VALUES ('host_old', 'gen_old', 7, 'd', '{}', true, '\\x00');
         INSERT INTO harnery.events VALUES ('host_old', 'gen_old', 1, 'ev_0123456789abcdef0123456789abcdef',
             'claude-code', 's', 0, 'prompt.submitted', 0, 'masked', '{}', '{}', '\\x00', '\\x00');
         CREATE ROLE harnery_host_late LOGIN PASSWORD 'late-pw' IN ROLE harnery_host;
         INSERT INTO harnery.host_roles (role_name) VALUES ('harnery_host_late');",
    )
    .unwrap();
    let role_url = format!(
        "host={} user=harnery_host_late password=late-pw dbname=fleet sslmode=disable",
        pg.socket_dir.display()
    );
    let home = tempfile::tempdir().unwrap();
    feed_fixture(home.path(), "claude-code", "basic");
    finalize(home.path());
    let out = ship(home.path(), &role_url, &[]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("fleet init"), "{}", stderr(&out));

    admin(&url, &["init"]);
    admin(&url, &["init"]);
    let version: i32 = c
        .query_one("SELECT max(version) FROM harnery.schema_migrations", &[])
        .unwrap()
        .get(0);
    assert_eq!(version, harnery::fleet::schema::known_version());
    let counts = c
        .query_one(
            "SELECT (SELECT count(*) FROM harnery.events_v4), (SELECT count(*) FROM harnery.events)",
            &[],
        )
        .unwrap();
    let (kept, live): (i64, i64) = (counts.get(0), counts.get(1));
    assert_eq!((kept, live), (1, 0), "the old rows set aside, none live");
    ship_ok(home.path(), &role_url, &[]);
    let rows: i64 = c
        .query_one("SELECT count(*) FROM harnery.events", &[])
        .unwrap()
        .get(0);
    assert_eq!(rows as usize, ledger_rows(home.path()).len());
    let verify = fleet(Some(home.path()), &url, &["verify", "--local"]);
    assert!(verify.status.success(), "{}", stdout(&verify));
}

/// `fleet add-host` with a name that cannot be a role's: exit 2, and the
/// one line that says what a name may hold (no cause appended).
#[test]
fn a_role_name_that_cannot_be_a_role_is_refused_in_one_line() {
    let pg = PgServer::start();
    let url = pg.database("fleet");
    admin(&url, &["init"]);
    let out = harnery(Path::new("/nonexistent-harnery-home"))
        .args(["fleet", "add-host", "Bad Name", "--url", &url])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(
        stderr(&out),
        "harnery: \"Bad Name\" is not a usable name: use 1 to 40 lower-case letters, digits, \
         '_' or '-' (it becomes part of a role name)\n"
    );
    assert_eq!(stdout(&out), "");
}
