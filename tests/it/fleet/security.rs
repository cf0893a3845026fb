//! What a security review asks of the fleet, against a real, throwaway
//! PostgreSQL (see `fleet_support`): secrets masked wherever they stand
//! (the dump of the server holds none of them), metadata only when asked,
//! hostile bytes that never stop shipping, rows no one can change, insert,
//! delete or copy without `fleet verify` (and `--local` on the host)
//! saying where, and reads answered from indexes. The roles are in
//! `roles.rs`.

use crate::common;
use crate::fleet::support as fleet_support;
use crate::fleet::support::{fixture_line, fleet, host_id, ship, ship_ok};

use std::path::Path;

use common::*;
use fleet_support::PgServer;

/// Secret shapes: (text as it would appear, the part that must not
/// leave). At least fifty.
fn shapes() -> Vec<(String, &'static str)> {
    let s = |text: &str, secret: &'static str| (text.to_string(), secret);
    vec![
        s(
            "aws_secret_access_key = wJalrXUtnFEMIzK7MDENGzbPxRfiCYQEXAMPLEKEY1",
            "wJalrXUtnFEMIzK7MDENGzbPxRfiCYQEXAMPLEKEY1",
        ),
        s(
            "aws_access_key_id = AKIAQWERTYUIOPASDF12",
            "AKIAQWERTYUIOPASDF12",
        ),
        s(
            "AWS_SECRET_ACCESS_KEY=Zt9kLmN0pQrStUvWxYz1234567890abcdEFGHijk",
            "Zt9kLmN0pQrStUvWxYz1234567890abcdEFGHijk",
        ),
        s("ASIAZXCVBNMASDFGHJKL", "ASIAZXCVBNMASDFGHJKL"),
        s(
            "ghp_Abcdefghijklmnopqrstuvwxyz0123456789",
            "ghp_Abcdefghijklmnopqrstuvwxyz0123456789",
        ),
        s(
            "gho_Zyxwvutsrqponmlkjihgfedcba9876543210",
            "gho_Zyxwvutsrqponmlkjihgfedcba9876543210",
        ),
        s(
            "github_pat_11AAAAAAA0xyzxyzxyz_abcdefghijklmnopqrstuvwxyz012345",
            "github_pat_11AAAAAAA0xyzxyzxyz_abcdefghijklmnopqrstuvwxyz012345",
        ),
        s("glpat-AbCdEfGhIjKlMnOpQrSt", "glpat-AbCdEfGhIjKlMnOpQrSt"),
        s(
            "xoxb-1234567890-abcdefghijkl",
            "xoxb-1234567890-abcdefghijkl",
        ),
        s(
            "sk-ant-api03-Qw3rTy-uIoPaSdFgHjKlZxCvBnM0987",
            "sk-ant-api03-Qw3rTy-uIoPaSdFgHjKlZxCvBnM0987",
        ),
        s(
            "sk-proj-Lk2Jh3Gf4Ds5Aa6Pp7Oo8Ii9Uu",
            "sk-proj-Lk2Jh3Gf4Ds5Aa6Pp7Oo8Ii9Uu",
        ),
        s(
            "sk_live_4eC39HqLyjWDarjtT1zdp7dcXY",
            "sk_live_4eC39HqLyjWDarjtT1zdp7dcXY",
        ),
        s(
            "rk_live_9fD28GpKxhVCbqiuS0ycm6cbWZ",
            "rk_live_9fD28GpKxhVCbqiuS0ycm6cbWZ",
        ),
        s(
            "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
            "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
        ),
        s(
            "AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY",
            "AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY",
        ),
        s(
            "ya29.a0AfH6SMBx-googleoauthtokenvalue123",
            "ya29.a0AfH6SMBx-googleoauthtokenvalue123",
        ),
        s(
            "npm_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789",
            "npm_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789",
        ),
        s(
            "pypi-AgEIcHlwaS5vcmcCJGI0ZmQ2YjE4LTk3ZjctNGQ3Mi1hZGQ2LTM5",
            "pypi-AgEIcHlwaS5vcmcCJGI0ZmQ2YjE4LTk3ZjctNGQ3Mi1hZGQ2LTM5",
        ),
        s(
            "hf_QwErTyUiOpAsDfGhJkLzXcVbNm12345678",
            "hf_QwErTyUiOpAsDfGhJkLzXcVbNm12345678",
        ),
        s(
            "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",
            "SG.ngeVfQFYQlKU0ufo8x5d1A",
        ),
        s(
            "dop_v1_0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
            "dop_v1_0123456789abcdef",
        ),
        s(
            "shpat_0123456789abcdef0123456789abcdef",
            "shpat_0123456789abcdef0123456789abcdef",
        ),
        s(
            "SK0123456789abcdef0123456789abcdef",
            "SK0123456789abcdef0123456789abcdef",
        ),
        s(
            "key-3ax6xnjp29jd6fds4gc373sgvjxteol0",
            "key-3ax6xnjp29jd6fds4gc373sgvjxteol0",
        ),
        s(
            "AGE-SECRET-KEY-1QQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQ",
            "AGE-SECRET-KEY-1QQQQQQQQQQ",
        ),
        s(
            "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJqd3Qtc3ViamVjdC0xIn0.c2lnbmF0dXJlLW9mLXRoZS1qd3Q",
            "c2lnbmF0dXJlLW9mLXRoZS1qd3Q",
        ),
        s("password=sunshine1", "sunshine1"),
        s("DB_PASSWORD=Db-Pass-7781", "Db-Pass-7781"),
        s("PGPASSWORD=pg-env-pass-5521 psql -h db", "pg-env-pass-5521"),
        s(
            "MY_SERVICE_API_KEY=q8ZrT5vLx2NcW9bYp4Kd",
            "q8ZrT5vLx2NcW9bYp4Kd",
        ),
        s(
            "password: \"correct horse battery staple\"",
            "horse battery staple",
        ),
        s(
            "ADMIN_PASSWORD=tall purple giraffe dances",
            "purple giraffe dances",
        ),
        s(
            "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEArsaPrivKeyBody01\nQmoreRsaBody02==\n-----END RSA PRIVATE KEY-----",
            "MIIEowIBAAKCAQEArsaPrivKeyBody01",
        ),
        s(
            "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAopensshBody\n-----END OPENSSH PRIVATE KEY-----",
            "b3BlbnNzaC1rZXktdjEAAAAopensshBody",
        ),
        s(
            "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQdGBGPgpPrivateBodyXyz\n=abcd\n-----END PGP PRIVATE KEY BLOCK-----",
            "lQdGBGPgpPrivateBodyXyz",
        ),
        s(
            "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIEcPrivateKeyBodyQq\n-----END EC PRIVATE KEY-----",
            "MHcCAQEEIEcPrivateKeyBodyQq",
        ),
        s(
            "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0Pkcs8Body\n-----END PRIVATE KEY-----",
            "MIIEvQIBADANBgkqhkiG9w0Pkcs8Body",
        ),
        s(
            "{\"Credentials\": {\"AccessKeyId\": \"ASIAQQQQWWWWEEEERRRR\", \"SecretAccessKey\": \"stsSecretAccessKeyValue0987654321abcdef\", \"SessionToken\": \"FwoGZXIvYXdzEStsSessionTokenValue\"}}",
            "stsSecretAccessKeyValue0987654321abcdef",
        ),
        s(
            "\"SessionToken\": \"IQoJb3JpZ2luX2VjSessionTok2\"",
            "IQoJb3JpZ2luX2VjSessionTok2",
        ),
        s(
            "git clone https://deploy:Qx7-secretpw@git.example.com/r.git",
            "Qx7-secretpw",
        ),
        s("postgres://app:Pg-s3cret-99@db:5432/app", "Pg-s3cret-99"),
        s(
            "Authorization: Basic dXNlcjpzM2NyZXQtYmFzaWM=",
            "dXNlcjpzM2NyZXQtYmFzaWM",
        ),
        s(
            "Authorization: Bearer abcDEF123ghiJKL456mnoPQR",
            "abcDEF123ghiJKL456mnoPQR",
        ),
        s(
            "{\"client_secret\": \"cs-9f8e7d6c5b4a\"}",
            "cs-9f8e7d6c5b4a",
        ),
        s("{\"token\": \"tk-1a2b3c4d5e6f\"}", "tk-1a2b3c4d5e6f"),
        s(
            "SECRET_KEY = 'django-insecure-^x9!k2m#q'",
            "django-insecure-^x9!k2m#q",
        ),
        s("api_key: yaml-val-ZZ81kq", "yaml-val-ZZ81kq"),
        s(
            "PRIVATE_KEY=0x4c0883a69102937d6231471b5dbb6204fe512961708279f2d4d4c1a2e1c3e5f1",
            "4c0883a69102937d6231471b5dbb6204fe5129",
        ),
        s("credentials = cred-val-771QwZ", "cred-val-771QwZ"),
        s("auth_token: authtok-55Lp0q", "authtok-55Lp0q"),
        s(
            "machine api.example.com login bob password n3trc-pass-77",
            "n3trc-pass-77",
        ),
        s(
            "host=db.internal password=kv-pass-42 user=app",
            "kv-pass-42",
        ),
        s(
            "export CI_TOKEN=ciTok3nQWERTY98765zx",
            "ciTok3nQWERTY98765zx",
        ),
        s("  secret: k8s-secret-value-901", "k8s-secret-value-901"),
        s("{\"passwd\": \"pw-in-json-333\"}", "pw-in-json-333"),
        s("x-api-key: hdr-key-Aq1Sw2De3", "hdr-key-Aq1Sw2De3"),
        s(
            "{\"auths\": {\"registry.example\": {\"auth\": \"ZG9ja2VyOmRvY2tlcnB3ZA==\"}}}",
            "ZG9ja2VyOmRvY2tlcnB3ZA",
        ),
        s(
            "https://hooks.slack.com/services/T0000AAAA/B0000BBBB/XXXXXXXXXXXXXXXXXXXXXXXX",
            "T0000AAAA/B0000BBBB/XXXXXXXXXXXXXXXXXXXXXXXX",
        ),
        s(
            "accessToken: \"camelAccessTok3nValue\"",
            "camelAccessTok3nValue",
        ),
        s(
            "the API key is Xk29LmQp83NvBz71Wc56Hy04",
            "Xk29LmQp83NvBz71Wc56Hy04",
        ),
        s(
            "mysql -u root --password=my-sql-pw-808 app",
            "my-sql-pw-808",
        ),
    ]
}

/// One session whose prompt, tool inputs and outputs, a written file and
/// the assistant's messages carry every shape: at line starts, after
/// tabs, after `_`, inside JSON strings.
fn secret_session(home: &Path, session: &str) {
    let all = shapes();
    let texts: Vec<&str> = all.iter().map(|s| s.0.as_str()).collect();
    let lines = texts.join("\n");
    let tabbed = texts.join("\n\t");
    let underscored: Vec<String> = texts.iter().map(|t| format!("x_{t}")).collect();
    let json_file = serde_json::to_string_pretty(
        &texts
            .iter()
            .enumerate()
            .map(|(i, t)| (format!("k{i}"), serde_json::Value::from(*t)))
            .collect::<serde_json::Map<_, _>>(),
    )
    .unwrap();
    let mut records = Vec::new();
    let mut start = fixture_line("SessionStart");
    start["session_id"] = session.into();
    records.push(start);
    let mut prompt = fixture_line("UserPromptSubmit");
    prompt["session_id"] = session.into();
    prompt["prompt"] = format!("please use these:\n{lines}\n{}", underscored.join(" ")).into();
    records.push(prompt);
    for (i, (input, output)) in [
        (
            serde_json::json!({"command": format!("cat ~/.aws/credentials .env\t{tabbed}"), "description": "show"}),
            serde_json::json!({"stdout": lines.clone(), "stderr": tabbed.clone(), "interrupted": false}),
        ),
        (
            serde_json::json!({"file_path": "/tmp/project/config.json", "content": json_file.clone()}),
            serde_json::json!({"type": "create", "filePath": "/tmp/project/config.json", "content": json_file.clone()}),
        ),
    ]
    .into_iter()
    .enumerate()
    {
        let mut pre = fixture_line("PreToolUse");
        pre["session_id"] = session.into();
        pre["tool_use_id"] = format!("toolu_secret_{i}").into();
        pre["tool_input"] = input.clone();
        records.push(pre);
        let mut post = fixture_line("PostToolUse");
        post["session_id"] = session.into();
        post["tool_use_id"] = format!("toolu_secret_{i}").into();
        post["tool_input"] = input;
        post["tool_response"] = output;
        records.push(post);
    }
    let mut message = fixture_line("MessageDisplay");
    message["session_id"] = session.into();
    message["delta"] = format!("Here they are:\n{tabbed}").into();
    records.push(message);
    let mut stop = fixture_line("Stop");
    stop["session_id"] = session.into();
    stop["last_assistant_message"] = format!("done:\n{lines}").into();
    records.push(stop);
    for r in records {
        crate::common::hook(home, &["claude-code"], r.to_string());
    }
}

fn secret_home() -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    feed_fixture(home.path(), "claude-code", "basic");
    secret_session(home.path(), "5ec2e7-0000-4000-8000-0000000000aa");
    secret_session(home.path(), "5ec2e7-0000-4000-8000-0000000000bb");
    let out = run(home.path(), &["finalize"]);
    assert!(out.status.success(), "finalize: {}", stderr(&out));
    home
}

pub(super) fn local_rows(home: &Path) -> i64 {
    chain_rows(&home.join("ledgers/v2/ledger.sqlite")).len() as i64
}

#[test]
fn every_secret_shape_anywhere_is_masked_before_it_leaves() {
    assert!(shapes().len() >= 50);
    let pg = PgServer::start();
    let target = pg.database("fleet");
    let home = secret_home();
    // The ledger itself keeps them (masking is for what leaves): its own
    // export, which reads the stored (compressed) rows, shows them.
    let exported = run(home.path(), &["export", "--format", "jsonl"]);
    assert!(exported.status.success(), "{}", stderr(&exported));
    assert!(stdout(&exported).contains("sunshine1"));

    let dry = run(home.path(), &["ship", "--dry-run", "--json"]);
    assert!(dry.status.success(), "{}", stderr(&dry));
    ship_ok(home.path(), &target, &[]);
    let dump = pg.pg_dump("fleet");
    let dry_text = stdout(&dry);
    let mut leaked = Vec::new();
    for (_, secret) in shapes() {
        if dump.contains(secret) || dry_text.contains(secret) {
            leaked.push(secret);
        }
    }
    assert!(leaked.is_empty(), "leaked to the server: {leaked:?}");
    let mut c = pg.client("fleet");
    let held: i64 = c
        .query_one("SELECT count(*) FROM harnery.events", &[])
        .unwrap()
        .get(0);
    assert_eq!(held, local_rows(home.path()), "every row shipped");

    // The same secret gets the same label within a host (both sessions'
    // prompts), and another host labels it differently.
    let labels = |c: &mut postgres::Client, session: &str| -> Vec<String> {
        let json: Vec<u8> = c
            .query_one(
                "SELECT json FROM harnery.events WHERE session_id = $1 AND type = 'prompt.submitted'",
                &[&session],
            )
            .unwrap()
            .get(0);
        let text = String::from_utf8(json).unwrap();
        regex::Regex::new(r"\[masked:[a-z0-9-]+:[0-9a-f]+\]")
            .unwrap()
            .find_iter(&text)
            .map(|m| m.as_str().to_string())
            .collect()
    };
    let a = labels(&mut c, "5ec2e7-0000-4000-8000-0000000000aa");
    let b = labels(&mut c, "5ec2e7-0000-4000-8000-0000000000bb");
    assert!(a.len() >= 50, "{a:?}");
    assert_eq!(a, b, "the same secrets, the same labels");
    let other = tempfile::tempdir().unwrap();
    secret_session(other.path(), "5ec2e7-0000-4000-8000-0000000000aa");
    assert!(run(other.path(), &["finalize"]).status.success());
    let target2 = pg.database("other");
    ship_ok(other.path(), &target2, &[]);
    let theirs = labels(
        &mut pg.client("other"),
        "5ec2e7-0000-4000-8000-0000000000aa",
    );
    assert_eq!(theirs.len(), a.len());
    assert_ne!(theirs, a, "labels are keyed per host");

    let verify = fleet(None, &target, &["verify"]);
    assert!(verify.status.success(), "{}", stdout(&verify));
}

#[test]
fn content_none_ships_metadata_only_and_a_change_never_reships() {
    let pg = PgServer::start();
    let target = pg.database("fleet");
    let home = secret_home();
    ship_ok(home.path(), &target, &["--content", "none"]);
    let dump = pg.pg_dump("fleet");
    let text_of_the_corpus = [
        "please use these",
        "cat ~/.aws/credentials",
        "/tmp/project/config.json",
        "Here they are",
        "done:",
        "/tmp/cc-capture",
        "transcript",
        "sunshine1",
    ];
    for t in text_of_the_corpus {
        assert!(!dump.contains(t), "{t:?} is on the server");
    }
    let mut c = pg.client("fleet");
    // Metadata stays: tool names, types, token counts' shapes.
    let tools: i64 = c
        .query_one(
            "SELECT count(*) FROM harnery.events WHERE position('\"tool_name\":\"Bash\"' in convert_from(json, 'UTF8')) > 0",
            &[],
        )
        .unwrap()
        .get(0);
    assert!(tools > 0, "tool names are metadata");
    let out = fleet(None, &target, &["sessions", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("\"content\":[\"none\"]"),
        "{}",
        stdout(&out)
    );

    // More rows, shipped in full: the rows already there stay as sent.
    let before: i64 = local_rows(home.path());
    secret_session(home.path(), "5ec2e7-0000-4000-8000-0000000000cc");
    assert!(run(home.path(), &["finalize"]).status.success());
    ship_ok(home.path(), &target, &["--content", "full"]);
    let modes: Vec<(String, i64)> = c
        .query(
            "SELECT content, max(seq) FROM harnery.events GROUP BY content ORDER BY content",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    assert_eq!(modes[0].0, "full");
    assert_eq!(modes[1], ("none".to_string(), before));
    let recorded: Vec<String> = c
        .query_one("SELECT content FROM harnery.epochs", &[])
        .unwrap()
        .get(0);
    assert_eq!(recorded, vec!["none".to_string(), "full".to_string()]);
    let verify = fleet(Some(home.path()), &target, &["verify", "--local"]);
    assert!(verify.status.success(), "{}", stdout(&verify));
}

#[test]
fn a_nul_in_a_session_id_and_a_tool_name_ships_every_row() {
    let pg = PgServer::start();
    let target = pg.database("fleet");
    let home = tempfile::tempdir().unwrap();
    feed_fixture(home.path(), "claude-code", "basic");
    let session = "nul\u{0}session";
    for event in [
        "SessionStart",
        "UserPromptSubmit",
        "PreToolUse",
        "PostToolUse",
    ] {
        let mut r = fixture_line(event);
        r["session_id"] = session.into();
        if r.get("tool_name").is_some() {
            r["tool_name"] = "Ba\u{0}sh\\".into();
            r["tool_use_id"] = "toolu_nul".into();
        }
        assert_cmd::Command::cargo_bin("harnery-hook")
            .unwrap()
            .env("HARNERY_HOME", home.path())
            .arg("claude-code")
            .write_stdin(r.to_string())
            .assert()
            .success();
    }
    assert!(run(home.path(), &["finalize"]).status.success());
    ship_ok(home.path(), &target, &[]);
    let mut c = pg.client("fleet");
    let held: i64 = c
        .query_one("SELECT count(*) FROM harnery.events", &[])
        .unwrap()
        .get(0);
    assert_eq!(held, local_rows(home.path()), "every row shipped");
    let escaped: i64 = c
        .query_one(
            "SELECT count(*) FROM harnery.events WHERE session_id = 'nul\\x00session'",
            &[],
        )
        .unwrap()
        .get(0);
    assert!(escaped >= 4, "the session id arrives escaped: {escaped}");
    // The next run exits 0 too, and the reads show the escape.
    let again = ship(home.path(), &target, &[]);
    assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));
    let out = fleet(None, &target, &["sessions"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("nul\\x00session"), "{}", stdout(&out));
    assert!(!stdout(&out).contains('\0'));
    let verify = fleet(Some(home.path()), &target, &["verify", "--local"]);
    assert!(verify.status.success(), "{}", stdout(&verify));
}

/// A fresh database with `home` shipped into it; its name.
/// Ship once to a scratch database so the host id exists; the id.
pub(super) fn host_id_after_first_ship(pg: &PgServer, home: &Path) -> String {
    shipped(pg, home, "first");
    host_id(home)
}

fn shipped(pg: &PgServer, home: &Path, name: &str) -> String {
    let target = pg.database(name);
    ship_ok(home, &target, &[]);
    target
}

/// Verify must fail (exit 1) naming `host`, the live epoch and `seq`,
/// both from the server alone and with `--local` on the host.
fn found(target: &str, home: &Path, genesis: &str, seq: i64, local_seq: i64) {
    let host = host_id(home);
    for (args, want_seq) in [
        (vec!["verify"], seq),
        (vec!["verify", "--local"], local_seq),
    ] {
        let out = fleet(Some(home), target, &args);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", stdout(&out));
        let want = format!("BREAK host {host} epoch {genesis} row {want_seq}:");
        assert!(
            stdout(&out).contains(&want),
            "{args:?}: {want} in {}",
            stdout(&out)
        );
        assert!(stdout(&out).contains("checked: "), "{}", stdout(&out));
    }
}

/// (seq, event_id, adapter, session_id, offset, type, time, content, masked, json, link)
type Row = (
    i64,
    String,
    String,
    String,
    i64,
    String,
    i64,
    String,
    Vec<String>,
    Vec<u8>,
    Vec<u8>,
);

fn row(c: &mut postgres::Client, host: &str, seq: i64) -> Row {
    let r = c
        .query_one(
            "SELECT seq, event_id, adapter, session_id, event_offset, type, time_unix_ns, content, masked, json, link \
             FROM harnery.events WHERE host_id = $1 AND seq = $2",
            &[&host, &seq],
        )
        .unwrap();
    (
        r.get(0),
        r.get(1),
        r.get(2),
        r.get(3),
        r.get(4),
        r.get(5),
        r.get(6),
        r.get(7),
        r.get(8),
        r.get(9),
        r.get(10),
    )
}

fn relink(prev: &[u8], r: &Row) -> [u8; 32] {
    harnery::fleet::link::link(
        prev,
        &harnery::fleet::link::ShippedRow {
            seq: r.0,
            event_id: &r.1,
            adapter: &r.2,
            session_id: &r.3,
            offset: r.4,
            ty: &r.5,
            time_unix_ns: r.6,
            content: &r.7,
            masked: &r.8,
            json: &r.9,
        },
    )
}

#[test]
fn forged_rows_are_found_by_verify_and_by_verify_local() {
    let pg = PgServer::start();
    let home = secret_home();
    let host = host_id_after_first_ship(&pg, home.path());
    let other = tempfile::tempdir().unwrap();
    feed_fixture(other.path(), "claude-code", "basic");
    assert!(run(other.path(), &["finalize"]).status.success());
    let n = local_rows(home.path());

    // A masked row rewritten, its link recomputed: the next row's link no
    // longer follows (the server cannot tell which of the two changed);
    // the host's commitment names the row itself.
    let target = shipped(&pg, home.path(), "masked");
    let mut c = pg.client("masked");
    let genesis: String = c
        .query_one("SELECT genesis_id FROM harnery.epochs", &[])
        .unwrap()
        .get(0);
    let seq: i64 = c
        .query_one(
            "SELECT min(seq) FROM harnery.events WHERE cardinality(masked) > 0 AND seq < $1",
            &[&n],
        )
        .unwrap()
        .get(0);
    let mut r = row(&mut c, &host, seq);
    let prev = row(&mut c, &host, seq - 1).10;
    r.9 = String::from_utf8(r.9)
        .unwrap()
        .replace("[masked:", "[gone:")
        .into_bytes();
    let l = relink(&prev, &r);
    c.execute(
        "UPDATE harnery.events SET json = $3, link = $4 WHERE host_id = $1 AND seq = $2",
        &[&host, &seq, &r.9, &&l[..]],
    )
    .unwrap();
    found(&target, home.path(), &genesis, seq + 1, seq);

    // An unmasked row edited.
    let target = shipped(&pg, home.path(), "edited");
    let mut c = pg.client("edited");
    c.execute(
        "UPDATE harnery.events SET json = set_byte(json, 12, get_byte(json, 12) # 1) WHERE host_id = $1 AND seq = 3",
        &[&host],
    )
    .unwrap();
    found(&target, home.path(), &genesis, 3, 3);

    // A row deleted.
    let target = shipped(&pg, home.path(), "deleted");
    let mut c = pg.client("deleted");
    c.execute(
        "DELETE FROM harnery.events WHERE host_id = $1 AND seq = 5",
        &[&host],
    )
    .unwrap();
    found(&target, home.path(), &genesis, 6, 5);

    // A row inserted after the head, chained properly and counted: the
    // signed head says otherwise.
    let target = shipped(&pg, home.path(), "inserted");
    let mut c = pg.client("inserted");
    let mut r = row(&mut c, &host, n);
    let prev = r.10.clone();
    r.0 = n + 1;
    r.1 = "ev_forged".into();
    let l = relink(&prev, &r);
    c.execute(
        "INSERT INTO harnery.events (host_id, genesis_id, seq, event_id, adapter, session_id, event_offset, type, time_unix_ns, content, masked, json, link, commit) \
         SELECT host_id, genesis_id, $2, $3, adapter, session_id, event_offset, type, time_unix_ns, content, masked, json, $4, commit \
         FROM harnery.events WHERE host_id = $1 AND seq = $5",
        &[&host, &(n + 1), &"ev_forged", &&l[..], &n],
    )
    .unwrap();
    c.execute(
        "UPDATE harnery.epochs SET events = events + 1, head_link = $2 WHERE host_id = $1",
        &[&host, &&l[..]],
    )
    .unwrap();
    found(&target, home.path(), &genesis, n + 1, n + 1);

    // A row copied from another host in place of one of this host's.
    let target = shipped(&pg, home.path(), "copied");
    let other_host = {
        ship_ok(other.path(), &target, &[]);
        host_id(other.path())
    };
    let mut c = pg.client("copied");
    c.execute(
        "DELETE FROM harnery.events WHERE host_id = $1 AND seq = 4",
        &[&host],
    )
    .unwrap();
    c.execute(
        "INSERT INTO harnery.events SELECT $1, $2, seq, event_id, adapter, session_id, event_offset, type, time_unix_ns, content, masked, json, link, commit \
         FROM harnery.events WHERE host_id = $3 AND seq = 4",
        &[&host, &genesis, &other_host],
    )
    .unwrap();
    found(&target, home.path(), &genesis, 4, 4);

    // The whole chain recomputed from a changed row on: the head's
    // signature does not follow.
    let target = shipped(&pg, home.path(), "rechained");
    let mut c = pg.client("rechained");
    let mut prev = row(&mut c, &host, 9).10;
    for s in 10..=n {
        let mut r = row(&mut c, &host, s);
        if s == 10 {
            r.9 = br#"{"forged":true}"#.to_vec();
        }
        let l = relink(&prev, &r);
        c.execute(
            "UPDATE harnery.events SET json = $3, link = $4 WHERE host_id = $1 AND seq = $2",
            &[&host, &s, &r.9, &&l[..]],
        )
        .unwrap();
        prev = l.to_vec();
    }
    c.execute(
        "UPDATE harnery.epochs SET head_link = $2 WHERE host_id = $1",
        &[&host, &prev],
    )
    .unwrap();
    found(&target, home.path(), &genesis, n, 10);

    // And the next ship from the host refuses to build on a changed head.
    let out = ship(home.path(), &target, &[]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!("row {n}")),
        "{}",
        stderr(&out)
    );
}

#[test]
fn init_upgrades_an_earlier_schema_and_reads_use_indexes() {
    let pg = PgServer::start();
    let admin = pg.database("fleet");
    let mut c = pg.client("fleet");
    harnery::fleet::schema::migrate_to(&mut c, 1).unwrap();
    c.batch_execute(
        "INSERT INTO harnery.hosts VALUES ('host_old', 'old', now(), now());
         INSERT INTO harnery.epochs VALUES ('host_old', 'g', 1, 'd', NULL, '{}', true, 1, 0);
         INSERT INTO harnery.events VALUES ('host_old', 'g', 1, 'e', 'a', 's', 0, 't', 0, '{}', '\\x00', '\\x01', NULL, NULL);",
    )
    .unwrap();
    let out = harnery(Path::new("/nonexistent-harnery-home"))
        .args(["fleet", "init", "--url", &admin])
        .output()
        .unwrap();
    assert!(out.status.success(), "init: {}", stderr(&out));
    let columns: Vec<String> = c
        .query(
            "SELECT column_name::text FROM information_schema.columns WHERE table_schema = 'harnery' AND table_name = 'events_v1'",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert!(columns.contains(&"json".to_string()));
    assert!(
        !columns.contains(&"hash".to_string()),
        "the old chain hashes are gone: {columns:?}"
    );

    let home = secret_home();
    ship_ok(home.path(), &admin, &[]);
    let host = host_id(home.path());
    c.batch_execute("ANALYZE; SET enable_seqscan = off")
        .unwrap();
    let plan = |c: &mut postgres::Client, sql: &str| -> String {
        c.query(&format!("EXPLAIN {sql}"), &[])
            .unwrap()
            .iter()
            .map(|r| r.get::<_, String>(0))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let one_session = plan(
        &mut c,
        &format!(
            "SELECT * FROM harnery.events WHERE host_id = '{host}' AND session_id = '5ec2e7-0000-4000-8000-0000000000aa'"
        ),
    );
    let one_day = plan(
        &mut c,
        "SELECT type, count(*) FROM harnery.events WHERE time_unix_ns >= 1796083200000000000 AND time_unix_ns < 1796169600000000000 GROUP BY type",
    );
    let sessions_day = plan(
        &mut c,
        "SELECT * FROM harnery.fleet_sessions WHERE last_unix_ns >= 1796083200000000000",
    );
    for (what, p) in [
        ("one session", &one_session),
        ("one day", &one_day),
        ("sessions of a day", &sessions_day),
    ] {
        assert!(!p.contains("Seq Scan on events"), "{what}: {p}");
        assert!(!p.contains("Seq Scan on sessions"), "{what}: {p}");
        assert!(p.contains("Index"), "{what}: {p}");
    }
}
