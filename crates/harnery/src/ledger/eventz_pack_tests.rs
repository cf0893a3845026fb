//! Tests of `ledger::eventz_pack`.

use rusqlite::Connection;

use super::*;
use crate::ledger::eventz::{self, make_compact, register};

/// A compact ledger of `n` events over 7 sessions, rows interleaved as
/// batches interleave them.
fn ledger(n: i64) -> Connection {
    ledger_at(":memory:", n)
}

fn ledger_at(path: &str, n: i64) -> Connection {
    let mut conn = Connection::open(path).unwrap();
    register(&conn).unwrap();
    conn.execute_batch(
        "CREATE TABLE events (seq INTEGER PRIMARY KEY, id TEXT NOT NULL, adapter TEXT NOT NULL, \
         session_id TEXT NOT NULL, offset INTEGER NOT NULL, type TEXT NOT NULL, time_unix_ns INTEGER NOT NULL, \
         json TEXT NOT NULL, prev_hash BLOB NOT NULL, hash BLOB NOT NULL, batch TEXT NOT NULL) STRICT; \
         CREATE TABLE trace_chunks (adapter TEXT NOT NULL, session_id TEXT NOT NULL, first_offset INTEGER NOT NULL, \
         events INTEGER NOT NULL, notes INTEGER NOT NULL, wholes TEXT, entries TEXT NOT NULL, \
         PRIMARY KEY (adapter, session_id, first_offset)) STRICT, WITHOUT ROWID; \
         CREATE TABLE producer_state (adapter TEXT NOT NULL, session_id TEXT NOT NULL, state TEXT NOT NULL, \
         batch TEXT NOT NULL, PRIMARY KEY (adapter, session_id)) STRICT;",
    )
    .unwrap();
    fill(&conn, 1, n + 1);
    let tx = conn.transaction().unwrap();
    make_compact(&tx).unwrap();
    tx.commit().unwrap();
    conn
}

fn text(i: i64) -> String {
    format!(
        r#"{{"id":"ev_{i:032x}","session":{{"adapter":"claude-code","session_id":"s-{}"}},"offset":{i},"type":"tool.completed","payload":{{"output":"line {i} of the output — ünïcode {}"}}}}"#,
        i % 7,
        "x".repeat((i % 13) as usize * 40)
    )
}

/// Rows `from..to`, into the plain table before the conversion and
/// through the writer's own statement after it.
fn fill(conn: &Connection, from: i64, to: i64) {
    let compact = eventz::is_compact(conn).unwrap();
    let mut enc = compact.then(|| eventz::Encoder::load(conn).unwrap());
    let mut body = Vec::new();
    for i in from..to {
        let session = format!("s-{}", i % 7);
        match &mut enc {
            None => conn.execute(
                "INSERT INTO events (seq, id, adapter, session_id, offset, type, time_unix_ns, json, prev_hash, hash, batch) \
                 VALUES (?1, 'ev', 'claude-code', ?2, ?1, 'tool.completed', ?1, ?3, x'00', x'01', 'b')",
                params![i, session, text(i)],
            ),
            Some(enc) => {
                enc.encode(text(i).as_bytes(), &mut body).unwrap();
                conn.execute(
                    "INSERT INTO event_store (seq, id, adapter, session_id, offset, type, time_unix_ns, body, prev_hash, hash, batch_k) \
                     VALUES (?1, 'ev', 'claude-code', ?2, ?1, 'tool.completed', ?1, ?3, x'00', x'01', 1)",
                    params![i, session, body],
                )
            }
        }
        .unwrap();
    }
}

fn texts(conn: &Connection) -> Vec<String> {
    let mut stmt = conn
        .prepare("SELECT json FROM events ORDER BY seq")
        .unwrap();
    stmt.query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

fn formats(conn: &Connection) -> Vec<u8> {
    let mut stmt = conn
        .prepare("SELECT substr(body, 1, 1) FROM event_store ORDER BY seq")
        .unwrap();
    stmt.query_map([], |r| r.get::<_, Vec<u8>>(0).map(|b| b[0]))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

#[test]
fn packing_keeps_every_text_byte_for_byte_and_goes_on_from_where_it_stopped() {
    let mut conn = ledger(5_000);
    let want: Vec<String> = (1..=5_000).map(text).collect();
    assert_eq!(texts(&conn), want);
    let done = pack(&mut conn, &|| false).unwrap();
    assert_eq!(done.events, 5_000);
    assert!(!done.unfinished && done.freed > 0, "{done:?}");
    // A session's rows in blocks of at most BLOCK_EVENTS: 7 sessions,
    // cut again where a step of STEP_ROWS rows ends.
    let blocks: i64 = conn
        .query_row("SELECT count(*) FROM event_blocks", [], |r| r.get(0))
        .unwrap();
    assert_eq!(done.blocks, blocks as u64);
    assert!(
        blocks >= 5_000 / BLOCK_EVENTS as i64 && blocks <= 5_000 / 32,
        "{blocks}"
    );
    assert!(formats(&conn).iter().all(|&f| f == REF_FORMAT));
    assert_eq!(texts(&conn), want);
    // Nothing new: nothing to do. New rows are packed by the next pass.
    assert_eq!(pack(&mut conn, &|| false).unwrap().events, 0);
    fill(&conn, 5_001, 5_101);
    assert_eq!(formats(&conn)[5_000..], [1u8; 100]);
    assert_eq!(pack(&mut conn, &|| false).unwrap().events, 100);
    let want: Vec<String> = (1..=5_100).map(text).collect();
    assert_eq!(texts(&conn), want);
    // Read out of order, a connection's few decompressed blocks are
    // dropped and read again.
    let mut stmt = conn
        .prepare("SELECT json FROM events WHERE seq = ?1")
        .unwrap();
    for seq in (1..=5_100).rev().step_by(37).chain((1..=5_100).step_by(41)) {
        let got: String = stmt.query_row([seq], |r| r.get(0)).unwrap();
        assert_eq!(got, want[seq as usize - 1]);
    }
}

#[test]
fn packing_stops_between_steps_when_asked() {
    let mut conn = ledger(STEP_ROWS * 2 + 10);
    let calls = std::cell::Cell::new(0);
    let stop = || {
        calls.set(calls.get() + 1);
        calls.get() > 1
    };
    let done = pack(&mut conn, &stop).unwrap();
    assert!(done.unfinished);
    assert_eq!(done.events, STEP_ROWS as u64);
    let f = formats(&conn);
    assert!(f[..STEP_ROWS as usize].iter().all(|&x| x == REF_FORMAT));
    assert!(f[STEP_ROWS as usize..].iter().all(|&x| x == 1));
    let rest = pack(&mut conn, &|| false).unwrap();
    assert_eq!(rest.events, STEP_ROWS as u64 + 10);
    // What is left to give back adds up over passes.
    assert!(rest.freed > done.freed, "{rest:?} after {done:?}");
    let want: Vec<String> = (1..=STEP_ROWS * 2 + 10).map(text).collect();
    assert_eq!(texts(&conn), want);
}

#[test]
fn a_ledger_without_blocks_is_not_packed_and_a_damaged_row_is_left_as_it_is() {
    let mut conn = ledger(300);
    conn.execute_batch("DROP TABLE event_blocks; DROP TABLE event_packed;")
        .unwrap();
    assert_eq!(pack(&mut conn, &|| false).unwrap().events, 0);
    conn.execute_batch(SCHEMA).unwrap();
    let mut body: Vec<u8> = conn
        .query_row("SELECT body FROM event_store WHERE seq = 150", [], |r| {
            r.get(0)
        })
        .unwrap();
    body[20] ^= 0x10;
    conn.execute("UPDATE event_store SET body = ?1 WHERE seq = 150", [&body])
        .unwrap();
    assert_eq!(pack(&mut conn, &|| false).unwrap().events, 299);
    let kept: Vec<u8> = conn
        .query_row("SELECT body FROM event_store WHERE seq = 150", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(kept, body);
    assert!(texts(&conn)[149].starts_with(UNDECODABLE));
}

#[test]
fn a_flipped_byte_in_a_block_or_a_reference_reads_as_undecodable_or_as_other_text() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ledger.sqlite");
    let path = path.to_str().unwrap();
    let mut conn = ledger_at(path, 200);
    pack(&mut conn, &|| false).unwrap();
    // Read as a new reader (`verify`) does: a connection keeps the blocks
    // it decompressed, so each look is through a new one.
    let texts = |_: &Connection| {
        let fresh = Connection::open(path).unwrap();
        register(&fresh).unwrap();
        texts(&fresh)
    };
    let before = texts(&conn);
    let (block, reference): (i64, Vec<u8>) = conn
        .query_row(
            "SELECT (SELECT id FROM event_blocks ORDER BY length(body) LIMIT 1), body \
             FROM event_store WHERE seq = 100",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    let stored: Vec<u8> = conn
        .query_row(
            "SELECT body FROM event_blocks WHERE id = ?1",
            [block],
            |r| r.get(0),
        )
        .unwrap();
    // The rows the block holds: every one of them must read otherwise.
    let held: Vec<usize> = {
        let mut stmt = conn
            .prepare("SELECT seq FROM event_store WHERE substr(body, 2, 8) = ?1")
            .unwrap();
        stmt.query_map([&block.to_le_bytes()[..]], |r| r.get::<_, i64>(0))
            .unwrap()
            .map(|s| s.unwrap() as usize - 1)
            .collect()
    };
    assert!(!held.is_empty());
    for at in 0..stored.len() {
        let mut bad = stored.clone();
        bad[at] ^= 0x01;
        conn.execute(
            "UPDATE event_blocks SET body = ?1 WHERE id = ?2",
            params![bad, block],
        )
        .unwrap();
        let got = texts(&conn);
        for &i in &held {
            assert_ne!(got[i], before[i], "a flip at block byte {at} went unseen");
        }
        conn.execute(
            "UPDATE event_blocks SET body = ?1 WHERE id = ?2",
            params![stored, block],
        )
        .unwrap();
    }
    for at in 0..reference.len() {
        let mut bad = reference.clone();
        bad[at] ^= 0x01;
        conn.execute("UPDATE event_store SET body = ?1 WHERE seq = 100", [&bad])
            .unwrap();
        assert_ne!(
            texts(&conn)[99],
            before[99],
            "a flip at reference byte {at} went unseen"
        );
    }
    conn.execute(
        "UPDATE event_store SET body = ?1 WHERE seq = 100",
        [&reference],
    )
    .unwrap();
    assert_eq!(texts(&conn), before);
}

#[test]
fn the_writer_cuts_a_batch_at_each_new_session_at_64_events_and_at_256_kib() {
    let (a, b) = (
        crate::contract::SessionRef {
            adapter: crate::contract::AdapterId::ClaudeCode,
            session_id: "a".into(),
        },
        crate::contract::SessionRef {
            adapter: crate::contract::AdapterId::Copilot,
            session_id: "a".into(),
        },
    );
    let small = [b'x'; 10];
    let big = vec![b'y'; BLOCK_TEXT / 2 + 1];
    let mut events: Vec<eventz::Text> = Vec::new();
    events.extend((0..3).map(|_| (&a, &small[..])));
    // The same id under another adapter is another session.
    events.extend((0..130).map(|_| (&b, &small[..])));
    events.extend((0..3).map(|_| (&a, &big[..])));
    assert_eq!(cuts(&events), [3, 67, 131, 133, 134, 135, 136]);
    assert!(cuts(&[]).is_empty());
    // One text longer than a block holds is a block of its own.
    let huge = vec![b'z'; BLOCK_TEXT + 1];
    assert_eq!(cuts(&[(&a, &huge[..]), (&a, &small[..])]), [1, 2]);
}

#[test]
fn rows_the_writer_packs_read_back_as_their_texts_and_the_pass_leaves_them() {
    let mut conn = ledger(0);
    let mut enc = eventz::Encoder::load(&conn).unwrap();
    // Runs of a session as a batch has them, one run longer than a block.
    let sessions: Vec<crate::contract::SessionRef> = (0..3)
        .map(|s| crate::contract::SessionRef {
            adapter: crate::contract::AdapterId::ClaudeCode,
            session_id: format!("s-{s}"),
        })
        .collect();
    let want: Vec<String> = (1..=200).map(text).collect();
    let events: Vec<eventz::Text> = want
        .iter()
        .enumerate()
        .map(|(i, t)| (&sessions[(i / 90).min(2)], t.as_bytes()))
        .collect();
    let bodies = enc.events(&events).unwrap();
    let mut refs = RefWriter::of(&bodies).expect("a ledger with blocks packs");
    let tx = conn.transaction().unwrap();
    for (i, (session, _)) in events.iter().enumerate() {
        let body = refs.next(&tx).unwrap().to_vec();
        tx.execute(
            "INSERT INTO event_store (seq, id, adapter, session_id, offset, type, time_unix_ns, body, prev_hash, hash, batch_k) \
             VALUES (?1, 'ev', 'claude-code', ?2, ?1, 'tool.completed', ?1, ?3, x'00', x'01', 1)",
            params![i as i64 + 1, session.session_id, body],
        )
        .unwrap();
    }
    tx.commit().unwrap();
    // 90 + 90 + 20 events: blocks of 64 + 26, 64 + 26, 20.
    let blocks: i64 = conn
        .query_row("SELECT count(*) FROM event_blocks", [], |r| r.get(0))
        .unwrap();
    assert_eq!(blocks, 5);
    assert!(formats(&conn).iter().all(|&f| f == REF_FORMAT));
    assert_eq!(texts(&conn), want);
    // Already in blocks: the pass has nothing to pack.
    assert_eq!(pack(&mut conn, &|| false).unwrap().events, 0);
    assert_eq!(texts(&conn), want);
}
