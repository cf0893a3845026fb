//! Compact raw signal rows: the view gives back every value exactly as the
//! plain table kept it, packed or not; the conversion moves every row; a
//! write through the view keeps the key unique.

use rusqlite::{Connection, params};

use super::*;
use crate::ledger::{eventz, schema};

/// Every column of the view, in the plain table's order, as one text per
/// row (values by SQL type, so a text and a blob of the same bytes differ).
fn rows(conn: &Connection) -> Vec<String> {
    let mut stmt = conn
        .prepare(
            "SELECT quote(record_digest), quote(adapter), quote(session_key), quote(event_name), \
             quote(received_unix_ns), quote(env), quote(archive_at), quote(envelope), quote(payload), \
             quote(event_ids), quote(duplicate_of), quote(batch) FROM raw_signals \
             ORDER BY received_unix_ns, record_digest",
        )
        .unwrap();
    stmt.query_map([], |r| {
        // quote() keeps a text's bytes: one that is not UTF-8 shows lossily.
        Ok((0..12)
            .map(|i| Ok(String::from_utf8_lossy(r.get_ref(i)?.as_bytes()?).into_owned()))
            .collect::<rusqlite::Result<Vec<_>>>()?
            .join("|"))
    })
    .unwrap()
    .collect::<Result<_, _>>()
    .unwrap()
}

/// A ledger as the build before compact signal rows left it: every
/// migration, events compact, the plain `raw_signals` table.
fn plain_ledger() -> Connection {
    let mut conn = Connection::open_in_memory().unwrap();
    eventz::register(&conn).unwrap();
    schema::migrate(&mut conn, 1).unwrap();
    let tx = conn.transaction().unwrap();
    eventz::make_compact(&tx).unwrap();
    tx.commit().unwrap();
    conn
}

/// A ledger whose raw signal rows are compact from the start.
fn compact_ledger() -> Connection {
    let conn = plain_ledger();
    let tx = Connection::unchecked_transaction(&conn).unwrap();
    make_compact(&tx).unwrap();
    tx.commit().unwrap();
    conn
}

const DIGEST: &str = "31d30aff0a1fcfc4464ea5558c405976d9e46a968dd69ce09f7bc683fb70eb4e";

fn ids(n: usize) -> String {
    let list: Vec<String> = (0..n)
        .map(|i| format!("ev_{:032x}", i * 7919 + 1))
        .collect();
    serde_json::to_string(&list).unwrap()
}

/// Rows that take every form: packed and not, archived and inline.
fn fill(conn: &Connection) {
    let insert = "INSERT INTO raw_signals (record_digest, adapter, session_key, event_name, \
                  received_unix_ns, env, archive_at, envelope, payload, event_ids, duplicate_of, batch) \
                  VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)";
    let upper = DIGEST.to_uppercase();
    let cases: Vec<(&str, String, Option<&str>)> = vec![
        (DIGEST, ids(0), None),
        (DIGEST, ids(1), Some("ev_e900b77db1ae17865ccbccb5a81588b3")),
        (&DIGEST[..63], ids(99), None),
        (&upper, "[\"ev_1\"]".into(), None),
        (
            "r0",
            "[ \"ev_00000000000000000000000000000001\"]".into(),
            None,
        ),
        (
            DIGEST,
            "[\"EV_00000000000000000000000000000001\"]".into(),
            None,
        ),
        (
            DIGEST,
            "[\"ev_0000000000000000000000000000000g\"]".into(),
            None,
        ),
        (DIGEST, "".into(), None),
    ];
    for (i, (digest, ids, dup)) in cases.into_iter().enumerate() {
        let inline = i % 3 == 2;
        conn.execute(
            insert,
            params![
                digest,
                ["claude-code", "copilot"][i % 2],
                format!("s{}", i / 3),
                (i % 4 != 1).then(|| format!("E{i}")),
                1_000 + i as i64,
                (i % 2 == 0).then_some(r#"{"V":"1"}"#),
                (!inline).then_some(i as i64 * 100),
                inline.then(|| format!("envelope {i}")),
                inline.then(|| vec![i as u8; i]),
                ids,
                dup,
                format!("b{}", i / 4),
            ],
        )
        .unwrap();
    }
}

#[test]
fn the_conversion_keeps_every_value_and_packs_what_it_can() {
    let mut conn = plain_ledger();
    fill(&conn);
    let before = rows(&conn);
    let tx = conn.transaction().unwrap();
    assert_eq!(make_compact(&tx).unwrap(), 8);
    tx.commit().unwrap();
    assert!(is_compact(&conn).unwrap());
    assert_eq!(rows(&conn), before);
    // Packed: the canonical digests and id lists, 32 and 16 bytes each.
    let forms: Vec<(String, i64, String, i64)> = conn
        .prepare(
            "SELECT typeof(digest), length(digest), typeof(event_ids), length(event_ids) \
             FROM raw_signal_store ORDER BY received_unix_ns",
        )
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let forms: Vec<(&str, i64, &str, i64)> = forms
        .iter()
        .map(|(a, b, c, d)| (a.as_str(), *b, c.as_str(), *d))
        .collect();
    assert_eq!(
        forms,
        [
            ("blob", 32, "blob", 0),
            ("blob", 32, "blob", 16),
            ("text", 63, "blob", 99 * 16),
            ("text", 64, "text", 8),
            ("text", 2, "text", 40),
            ("blob", 32, "text", 39),
            ("blob", 32, "text", 39),
            ("blob", 32, "text", 0),
        ]
    );
    // A second run finds nothing to move.
    let tx = conn.transaction().unwrap();
    assert_eq!(make_compact(&tx).unwrap(), 0);
}

#[test]
fn the_view_spells_a_packed_id_list_as_serde_json_does() {
    let conn = compact_ledger();
    let mut put = Inserter::new(&conn).unwrap();
    for n in [0usize, 1, 2, 16, 17, 99] {
        let list: Vec<String> = (0..n)
            .map(|i| format!("ev_{:032x}", u128::MAX - i as u128))
            .collect();
        let digest = format!("{:064x}", n + 1);
        let row = Row {
            record_digest: &digest,
            adapter: "claude-code",
            session_key: "8d62d777-8090-44bd-96a7-4dbe3e572e0f",
            event_name: Some("Stop"),
            received_unix_ns: n as i64,
            env: None,
            archive_at: Some(0),
            envelope: None,
            payload: None,
            event_ids: Ids::List(&list),
            duplicate_of: None,
            batch: "01796590173784290088-00000002-a5feed96487a4571955f7001da90bf9f",
        };
        put.row(&row).unwrap();
        let (text, stored): (String, i64) = conn
            .query_row(
                "SELECT event_ids, (SELECT length(event_ids) FROM raw_signal_store WHERE received_unix_ns = ?1) \
                 FROM raw_signals WHERE received_unix_ns = ?1",
                [n as i64],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        assert_eq!(text, serde_json::to_string(&list).unwrap());
        assert_eq!(stored, 16 * n as i64);
    }
}

#[test]
fn a_write_through_the_view_keeps_the_key_and_reaches_the_row() {
    let conn = compact_ledger();
    fill(&conn);
    let before = rows(&conn);
    // The same digest and time again: the packed key refuses it.
    let again = "INSERT INTO raw_signals (record_digest, adapter, session_key, received_unix_ns, \
                 archive_at, event_ids, batch) VALUES (?1, 'copilot', 's9', 1000, 0, '[]', 'b9')";
    assert!(conn.execute(again, [DIGEST]).is_err());
    // A row keeps its bytes in exactly one place, as in the table.
    let both = "INSERT INTO raw_signals (record_digest, adapter, session_key, received_unix_ns, \
                archive_at, envelope, payload, event_ids, batch) VALUES ('d4', 'copilot', 's', 4, 0, '{}', x'00', '[]', 'b')";
    assert!(conn.execute(both, []).is_err());
    assert_eq!(rows(&conn), before);
    conn.execute(
        "UPDATE raw_signals SET archive_at = 7, session_key = 'moved' WHERE received_unix_ns = 1001",
        [],
    )
    .unwrap();
    let row: (i64, String, String) = conn
        .query_row(
            "SELECT archive_at, session_key, event_ids FROM raw_signals WHERE received_unix_ns = 1001",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    assert_eq!(row, (7, "moved".into(), ids(1)));
    conn.execute("DELETE FROM raw_signals WHERE received_unix_ns = 1001", [])
        .unwrap();
    assert_eq!(rows(&conn).len(), before.len() - 1);
}

#[test]
fn only_lowercase_hex_of_the_right_length_packs() {
    let mut out = Vec::new();
    assert!(pack_ids_text("[]", &mut out) && out.is_empty());
    assert!(pack_ids_text(&ids(2), &mut out) && out.len() == 32);
    for text in [
        "",
        "[",
        "[\"ev_1\"]",
        "[\"ev_00000000000000000000000000000001\",]",
        "[\"ev_00000000000000000000000000000001\" ]",
        "[\"xx_00000000000000000000000000000001\"]",
        "[\"ev_000000000000000000000000000000010\"]",
    ] {
        assert!(!pack_ids_text(text, &mut out), "{text}");
    }
    let mut bytes = Vec::new();
    assert!(packed_digest(DIGEST, &mut bytes));
    assert_eq!(bytes.len(), DIGEST_LEN);
    assert_eq!(bytes[..2], [0x31, 0xd3], "{DIGEST}");
    for digest in [&DIGEST[1..], &DIGEST.to_uppercase(), "", "zz"] {
        assert!(!packed_digest(digest, &mut bytes), "{digest}");
    }
}

#[test]
fn every_pair_of_bytes_unhexes_exactly_when_both_are_lowercase_digits() {
    let digit = |b: u8| matches!(b, b'0'..=b'9' | b'a'..=b'f');
    let mut out = Vec::new();
    for hi in 0..=255u8 {
        for lo in 0..=255u8 {
            out.clear();
            let pair = [hi, lo];
            let packed = unhex_lower(&pair, &mut out);
            assert_eq!(packed, digit(hi) && digit(lo), "{pair:?}");
            if packed {
                let text = std::str::from_utf8(&pair).unwrap();
                assert_eq!(out, [u8::from_str_radix(text, 16).unwrap()], "{text}");
            }
        }
    }
    assert!(!unhex_lower(b"abc", &mut out), "an odd length");
}

#[test]
fn a_row_that_cannot_move_is_named_and_nothing_is_converted() {
    let mut conn = plain_ledger();
    fill(&conn);
    conn.execute(
        "INSERT INTO raw_signals (record_digest, adapter, session_key, received_unix_ns, archive_at, \
         event_ids, batch) VALUES (?1, 'copilot', CAST(x'ff' AS TEXT), 4242, 0, '[]', 'b')",
        [DIGEST],
    )
    .unwrap();
    let before = rows(&conn);
    let tx = conn.transaction().unwrap();
    let err = make_compact(&tx).unwrap_err().to_string();
    drop(tx);
    assert!(err.contains("received at 4242 ns"), "{err}");
    assert!(!is_compact(&conn).unwrap());
    assert_eq!(rows(&conn), before);
}

/// What `explain query plan` says of `sql`, one line per step.
fn plan(conn: &Connection, sql: &str) -> String {
    let mut stmt = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
    let steps: Vec<String> = stmt
        .query_map([], |r| r.get(3))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    steps.join("\n")
}

/// The writer's two lookups through the view seek the store's key, as
/// they sought the table's: the newest receive time, and whether a
/// record is kept.
#[test]
fn the_writers_lookups_through_the_view_seek_the_key() {
    let conn = compact_ledger();
    let newest = plan(&conn, "SELECT max(received_unix_ns) FROM raw_signals");
    assert_eq!(newest, "SEARCH raw_signal_store USING PRIMARY KEY");
    let known = plan(
        &conn,
        "SELECT EXISTS (SELECT 1 FROM raw_signals WHERE received_unix_ns = 1 AND record_digest = 'd')",
    );
    assert!(
        known.contains("SEARCH raw_signal_store USING PRIMARY KEY (received_unix_ns=?)")
            && !known.contains("SCAN raw_signal_store"),
        "{known}"
    );
}
