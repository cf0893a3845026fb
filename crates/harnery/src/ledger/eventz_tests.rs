//! Tests of `ledger::eventz`.

use super::*;

fn ledger() -> Connection {
    let conn = Connection::open_in_memory().unwrap();
    register(&conn).unwrap();
    conn.execute_batch(
        "CREATE TABLE events (seq INTEGER PRIMARY KEY, id TEXT NOT NULL, adapter TEXT NOT NULL, \
         session_id TEXT NOT NULL, offset INTEGER NOT NULL, type TEXT NOT NULL, time_unix_ns INTEGER NOT NULL, \
         json TEXT NOT NULL, prev_hash BLOB NOT NULL, hash BLOB NOT NULL, batch TEXT NOT NULL) STRICT; \
         CREATE TABLE trace_chunks (adapter TEXT NOT NULL, session_id TEXT NOT NULL, first_offset INTEGER NOT NULL, \
         events INTEGER NOT NULL, notes INTEGER NOT NULL, wholes TEXT, entries TEXT NOT NULL, \
         PRIMARY KEY (adapter, session_id, first_offset)) STRICT, WITHOUT ROWID; \
         CREATE TABLE producer_state (adapter TEXT NOT NULL, session_id TEXT NOT NULL, state TEXT NOT NULL, \
         batch TEXT NOT NULL, PRIMARY KEY (adapter, session_id)) STRICT; \
         INSERT INTO trace_chunks VALUES ('claude-code', 's', 0, 1, 0, NULL, '[[0,1]]'); \
         INSERT INTO producer_state VALUES ('claude-code', 's', '{\"next_offset\":1}', 'b');",
    )
    .unwrap();
    conn
}

fn text(i: i64) -> String {
    format!(
        r#"{{"id":"ev_{i:032x}","session":{{"adapter":"claude-code","session_id":"s-{}"}},"offset":{i},"type":"message.user","payload":{{"text":"prompt number {i} — ünïcode"}}}}"#,
        i % 7
    )
}

fn fill(conn: &Connection, from: i64, to: i64) {
    for i in from..to {
        conn.execute(
            "INSERT INTO events (seq, id, adapter, session_id, offset, type, time_unix_ns, json, prev_hash, hash, batch) \
             VALUES (?1, 'ev', 'claude-code', 's', ?1, 'message.user', ?1, ?2, x'00', x'01', 'b')",
            params![i, text(i)],
        )
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

#[test]
fn event_body_reads_back_through_event_json() {
    let conn = ledger();
    for text in ["", "{}", &text(7), &"é".repeat(10_000)] {
        let back: String = conn
            .query_row("SELECT event_json(event_body(?1))", [text], |r| r.get(0))
            .unwrap();
        assert_eq!(back, text);
    }
}

#[test]
fn conversion_keeps_every_text_byte_for_byte_and_trains_a_dictionary() {
    let mut conn = ledger();
    fill(&conn, 1, 1_500);
    let before = texts(&conn);
    let tx = conn.transaction().unwrap();
    assert_eq!(make_compact(&tx).unwrap(), 1_499);
    assert_eq!(
        make_compact(&tx).unwrap(),
        0,
        "a second run changes nothing"
    );
    tx.commit().unwrap();
    assert!(is_compact(&conn).unwrap());
    assert_eq!(texts(&conn), before);
    let (chunk, state): (String, String) = conn
        .query_row(
            "SELECT (SELECT entries FROM trace_chunks), (SELECT state FROM producer_state)",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(
        (chunk.as_str(), state.as_str()),
        ("[[0,1]]", r#"{"next_offset":1}"#)
    );
    conn.execute(
        "INSERT OR REPLACE INTO producer_state VALUES ('claude-code', 's', '{}', 'c')",
        [],
    )
    .unwrap();
    let states: Vec<(String, String)> = conn
        .prepare("SELECT state, batch FROM producer_state")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(
        states,
        [("{}".to_string(), "c".to_string())],
        "replaced, not added"
    );
    let (dicts, stored, plain): (i64, i64, i64) = conn
        .query_row(
            "SELECT (SELECT count(*) FROM event_dicts), (SELECT sum(length(body)) FROM event_store), \
             (SELECT sum(length(CAST(json AS BLOB))) FROM events)",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    assert_eq!(dicts, 1);
    assert!(stored * 4 < plain, "{stored} stored for {plain}");
}

#[test]
fn new_rows_use_the_newest_dictionary_and_old_ones_keep_theirs() {
    let mut conn = ledger();
    fill(&conn, 1, 20);
    let tx = conn.transaction().unwrap();
    make_compact(&tx).unwrap();
    let mut enc = Encoder::load(&tx).unwrap();
    let mut body = Vec::new();
    for i in 20..2_100 {
        enc.encode(text(i).as_bytes(), &mut body).unwrap();
        tx.execute(
            "INSERT INTO event_store (seq, id, adapter, session_id, offset, type, time_unix_ns, body, prev_hash, hash, batch_k) \
             VALUES (?1, 'ev', 'claude-code', 's', ?1, 'message.user', ?1, ?2, x'00', x'01', 1)",
            params![i, body],
        )
        .unwrap();
        if i % 100 == 0 {
            enc.train_if_due(&tx).unwrap();
        }
    }
    tx.commit().unwrap();
    let ids: Vec<String> = conn
        .prepare("SELECT DISTINCT hex(substr(body, 2, 2)) FROM event_store ORDER BY 1")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(
        ids,
        ["0000", "0100"],
        "rows before the first dictionary and after"
    );
    let all = texts(&conn);
    assert_eq!(all.len(), 2_099);
    assert!(all.iter().zip(1..).all(|(t, i)| *t == text(i)));
}

#[test]
fn bodies_written_at_level_3_read_back_beside_new_ones() {
    let mut conn = ledger();
    fill(&conn, 1, 1_200);
    let tx = conn.transaction().unwrap();
    make_compact(&tx).unwrap();
    let dict: Vec<u8> = tx
        .query_row("SELECT dict FROM event_dicts WHERE id = 1", [], |r| {
            r.get(0)
        })
        .unwrap();
    // As the first build of this format wrote them: level 3, with the
    // dictionary and without.
    let mut cctx = CCtx::create();
    let at_3 = CDict::create(&dict, 3);
    for (seq, id) in [(1_300_i64, 1_u16), (1_301, 0)] {
        let t = text(seq);
        let mut frame = Vec::with_capacity(zstd::zstd_safe::compress_bound(t.len()));
        match id {
            0 => cctx.compress(&mut frame, t.as_bytes(), 3),
            _ => cctx.compress_using_cdict(&mut frame, t.as_bytes(), &at_3),
        }
        .unwrap();
        let mut body = Vec::new();
        seal_onto(id, &frame, &mut body);
        tx.execute(
            "INSERT INTO event_store (seq, id, adapter, session_id, offset, type, time_unix_ns, body, prev_hash, hash, batch_k) \
             VALUES (?1, 'ev', 'claude-code', 's', ?1, 'message.user', ?1, ?2, x'00', x'01', 1)",
            params![seq, body],
        )
        .unwrap();
    }
    let mut enc = Encoder::load(&tx).unwrap();
    let mut body = Vec::new();
    enc.encode(text(1_302).as_bytes(), &mut body).unwrap();
    tx.execute(
        "INSERT INTO event_store (seq, id, adapter, session_id, offset, type, time_unix_ns, body, prev_hash, hash, batch_k) \
         VALUES (1302, 'ev', 'claude-code', 's', 1302, 'message.user', 1302, ?1, x'00', x'01', 1)",
        [&body],
    )
    .unwrap();
    tx.commit().unwrap();
    let all = texts(&conn);
    assert_eq!(&all[1_199..], [text(1_300), text(1_301), text(1_302)]);
}

#[test]
fn a_flipped_byte_in_a_body_reads_as_undecodable_or_as_other_text() {
    let mut conn = ledger();
    fill(&conn, 1, 1_200);
    let before = texts(&conn);
    let tx = conn.transaction().unwrap();
    make_compact(&tx).unwrap();
    tx.commit().unwrap();
    let len: i64 = conn
        .query_row(
            "SELECT length(body) FROM event_store WHERE seq = 600",
            [],
            |r| r.get(0),
        )
        .unwrap();
    for at in 0..len {
        let mut body: Vec<u8> = conn
            .query_row("SELECT body FROM event_store WHERE seq = 600", [], |r| {
                r.get(0)
            })
            .unwrap();
        body[at as usize] ^= 0x01;
        conn.execute("UPDATE event_store SET body = ?1 WHERE seq = 600", [&body])
            .unwrap();
        let got = &texts(&conn)[599];
        assert_ne!(got, &before[599], "a flip at byte {at} went unseen");
        body[at as usize] ^= 0x01;
        conn.execute("UPDATE event_store SET body = ?1 WHERE seq = 600", [&body])
            .unwrap();
    }
    assert_eq!(texts(&conn), before);
}

#[test]
fn bodies_made_ahead_are_the_writers_own_byte_for_byte() {
    let mut conn = ledger();
    fill(&conn, 1, 20);
    let tx = conn.transaction().unwrap();
    make_compact(&tx).unwrap();
    let mut enc = Encoder::load(&tx).unwrap();
    let mut ahead = enc.ahead();
    let chunk = |k: i64| -> Vec<String> { (20 + k * 100..20 + (k + 1) * 100).map(text).collect() };
    let session = SessionRef {
        adapter: crate::contract::AdapterId::ClaudeCode,
        session_id: "s".into(),
    };
    let made = |ahead: &mut Ahead, k: i64| {
        let chunk = chunk(k);
        let texts: Vec<Text> = chunk.iter().map(|t| (&session, t.as_bytes())).collect();
        ahead.events(&texts).unwrap()
    };
    let (mut taken, mut made_again) = (0, 0);
    let mut next = made(&mut ahead, 0);
    let mut body = Vec::new();
    for k in 0..20_i64 {
        let pre = std::mem::take(&mut next);
        // As in the drain: the next batch is compressed while this one is
        // appended, so a dictionary this append trains is not in it.
        next = made(&mut ahead, k + 1);
        let pre = enc.takes(Some(&pre), 100);
        match pre {
            Some(_) => taken += 1,
            None => made_again += 1,
        }
        // A ledger with blocks: the writer packs the batch's run of one
        // session, in blocks of at most 64 events.
        let chunk_k = chunk(k);
        let texts: Vec<Text> = chunk_k.iter().map(|t| (&session, t.as_bytes())).collect();
        let mine = enc.events(&texts).unwrap();
        assert_eq!(mine.cuts.as_deref(), Some(&[64, 100][..]));
        if let Some(pre) = pre {
            assert_eq!(pre, &mine, "chunk {k}");
        }
        for (i, t) in chunk_k.iter().enumerate() {
            enc.encode(t.as_bytes(), &mut body).unwrap();
            let seq = 20 + k * 100 + i as i64;
            tx.execute(
                "INSERT INTO event_store (seq, id, adapter, session_id, offset, type, time_unix_ns, body, prev_hash, hash, batch_k) \
                 VALUES (?1, 'ev', 'claude-code', 's', ?1, 'message.user', ?1, ?2, x'00', x'01', 1)",
                params![seq, body],
            )
            .unwrap();
        }
        enc.train_if_due(&tx).unwrap();
    }
    // The first dictionary (trained at 1,000 events) was not yet in the
    // batch compressed beside its append: that one was made again.
    assert_eq!((taken, made_again), (19, 1));
    // Without a dictionary, as `event_body` makes them.
    let plain = ahead.plain(chunk(0).iter().map(|t| t.as_bytes())).unwrap();
    for (i, t) in chunk(0).iter().enumerate() {
        let b: Vec<u8> = tx
            .query_row("SELECT event_body(?1)", [t], |r| r.get(0))
            .unwrap();
        assert_eq!(plain.get(i), &b[..]);
    }
}

#[test]
fn a_bodys_declared_length_is_its_texts() {
    let conn = ledger();
    for text in ["", "{}", &text(7), &"é".repeat(10_000)] {
        let body: Vec<u8> = conn
            .query_row("SELECT event_body(?1)", [text], |r| r.get(0))
            .unwrap();
        assert_eq!(declared_len(&body), Some(text.len() as u64));
    }
    assert_eq!(declared_len(b""), None);
    assert_eq!(declared_len(br#"{"a":1}"#), None);
    assert_eq!(declared_len(&[FORMAT, 0, 0]), None);
}
