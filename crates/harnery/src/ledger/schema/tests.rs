//! The migrations' tests: each keeps the rows it finds and the query
//! plans the writer relies on.

use super::*;

/// A ledger from before the raw archive: its raw signals keep their
/// bytes inline after the migration, and the captured environment is
/// lifted out of the envelope for the read side.
#[test]
fn raw_rows_from_before_the_archive_keep_their_bytes_inline() {
    let mut conn = Connection::open_in_memory().unwrap();
    apply(&mut conn, &MIGRATIONS[..2], 1).unwrap();
    let insert = "INSERT INTO raw_signals (record_digest, adapter, session_key, event_name, received_unix_ns, envelope, payload, event_ids, batch) \
                  VALUES (?1, 'copilot', 's', 'preToolUse', ?2, ?3, x'7b7d', '[]', 'b')";
    let with_env = r#"{"v":1,"env":{"COPILOT_CLI_BINARY_VERSION":"1.0.102"}}"#;
    conn.execute(insert, params!["d1", 1, with_env]).unwrap();
    conn.execute(insert, params!["d2", 2, r#"{"v":1,"env":{}}"#])
        .unwrap();
    conn.execute(insert, params!["d3", 3, r#"{"v":1}"#])
        .unwrap();
    migrate(&mut conn, 2).unwrap();
    type Row = (Option<String>, Option<i64>, Option<String>, Vec<u8>);
    let rows: Vec<Row> = conn
        .prepare(
            "SELECT env, archive_at, envelope, payload FROM raw_signals ORDER BY received_unix_ns",
        )
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(
        rows[0],
        (
            Some(r#"{"COPILOT_CLI_BINARY_VERSION":"1.0.102"}"#.into()),
            None,
            Some(with_env.into()),
            b"{}".to_vec()
        )
    );
    assert_eq!((&rows[1].0, &rows[2].0), (&None, &None));
    // A row keeps its bytes in exactly one place.
    let both = "INSERT INTO raw_signals (record_digest, adapter, session_key, received_unix_ns, archive_at, envelope, payload, event_ids, batch) \
                VALUES ('d4', 'copilot', 's', 4, 0, '{}', x'00', '[]', 'b')";
    assert!(conn.execute(both, []).is_err());
    let neither = "INSERT INTO raw_signals (record_digest, adapter, session_key, received_unix_ns, event_ids, batch) \
                   VALUES ('d5', 'copilot', 's', 5, '[]', 'b')";
    assert!(conn.execute(neither, []).is_err());
}

const SPAN: &str = "INSERT INTO spans (request_event_id, adapter, session_id, kind, name, state) \
                    VALUES (?1, 'claude-code', 's', 'tool', 'Bash', ?2)";

fn opcodes(conn: &Connection, sql: &str) -> Vec<String> {
    let mut stmt = conn.prepare(&format!("EXPLAIN {sql}")).unwrap();
    let mut rows = stmt.raw_query();
    let mut out = Vec::new();
    while let Some(row) = rows.next().unwrap() {
        out.push(row.get(1).unwrap());
    }
    out
}

#[test]
fn the_span_state_check_keeps_rows_and_refuses_what_it_refused() {
    let mut conn = Connection::open_in_memory().unwrap();
    conn.execute_batch(
        "CREATE TABLE migrations (name TEXT PRIMARY KEY, applied_unix_ns INTEGER NOT NULL) STRICT;",
    )
    .unwrap();
    for (name, sql) in &MIGRATIONS[..2] {
        conn.execute_batch(sql).unwrap();
        conn.execute("INSERT INTO migrations VALUES (?1, 0)", [name])
            .unwrap();
    }
    for (id, state) in [("r1", "closed_native"), ("r2", "open"), ("r3", "recovered")] {
        conn.execute(SPAN, [id, state]).unwrap();
    }
    conn.execute("DELETE FROM spans WHERE request_event_id = 'r2'", [])
        .unwrap();
    let dump = |conn: &Connection| -> Vec<(i64, String, String)> {
        let mut stmt = conn
            .prepare("SELECT seq, request_event_id, state FROM spans ORDER BY seq")
            .unwrap();
        let rows = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap();
        rows.map(Result::unwrap).collect()
    };
    let before = dump(&conn);
    migrate(&mut conn, 1).unwrap();
    assert_eq!(dump(&conn), before);
    assert!(conn.execute(SPAN, ["r4", "closed"]).is_err());
    assert!(conn.execute(SPAN, ["r4", "open"]).is_ok());
    assert!(
        conn.execute(
            "UPDATE spans SET state = 'done' WHERE request_event_id = 'r4'",
            []
        )
        .is_err()
    );
}

#[test]
fn event_rows_keep_their_seq_and_only_the_offset_stays_unique() {
    let mut conn = Connection::open_in_memory().unwrap();
    apply(&mut conn, &MIGRATIONS[..4], 1).unwrap();
    let insert = "INSERT INTO events (seq, id, adapter, session_id, offset, type, time_unix_ns, json, prev_hash, hash, batch) \
                  VALUES (?1, ?2, 'copilot', 's', ?3, 'tool.requested', 1, '{}', x'00', x'01', 'b')";
    conn.execute(insert, params![4, "ev_a", 0]).unwrap();
    conn.execute(insert, params![9, "ev_b", 1]).unwrap();
    migrate(&mut conn, 2).unwrap();
    let rows: Vec<(i64, String, i64)> = conn
        .prepare("SELECT seq, id, offset FROM events ORDER BY seq")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(rows, vec![(4, "ev_a".into(), 0), (9, "ev_b".into(), 1)]);
    assert!(conn.execute(insert, params![10, "ev_c", 1]).is_err());
    assert!(conn.execute(insert, params![10, "ev_a", 2]).is_ok());
}

/// Sessions written before their rows kept span counts get them counted
/// from their span rows.
#[test]
fn session_rows_get_the_counts_of_their_spans() {
    let mut conn = Connection::open_in_memory().unwrap();
    let before = MIGRATIONS
        .iter()
        .position(|(name, _)| name.ends_with("_session_span_counts"))
        .unwrap();
    apply(&mut conn, &MIGRATIONS[..before], 1).unwrap();
    for id in ["a", "b"] {
        conn.execute(
            "INSERT INTO sessions (adapter, session_id, first_unix_ns, last_unix_ns, events, turns) VALUES ('claude-code', ?1, 0, 0, 0, 0)",
            [id],
        )
        .unwrap();
    }
    let span = "INSERT INTO spans (request_event_id, adapter, session_id, kind, name, state) \
                VALUES (?1, 'claude-code', ?2, 'tool', 'Bash', ?3)";
    for (id, session, state) in [
        ("r1", "a", "open"),
        ("r2", "a", "closed_native"),
        ("r3", "a", "closed_native"),
        ("r4", "b", "recovered"),
    ] {
        conn.execute(span, [id, session, state]).unwrap();
    }
    migrate(&mut conn, 2).unwrap();
    let counts: Vec<(String, i64, i64, i64)> = conn
        .prepare("SELECT session_id, spans_open, spans_closed_native, spans_recovered FROM sessions ORDER BY session_id")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(counts, vec![("a".into(), 1, 2, 0), ("b".into(), 0, 0, 1)]);
}

#[test]
fn a_database_is_behind_until_every_migration_is_applied() {
    let mut conn = Connection::open_in_memory().unwrap();
    assert!(behind(&conn).unwrap());
    apply(&mut conn, &MIGRATIONS[..MIGRATIONS.len() - 1], 1).unwrap();
    assert!(behind(&conn).unwrap());
    migrate(&mut conn, 2).unwrap();
    assert!(!behind(&conn).unwrap());
    // Applying again changes nothing.
    migrate(&mut conn, 3).unwrap();
    let applied: i64 = conn
        .query_row("SELECT count(*) FROM migrations", [], |r| r.get(0))
        .unwrap();
    assert_eq!(applied, MIGRATIONS.len() as i64);
}

/// Writing a span row builds no throwaway b-tree per statement.
#[test]
fn span_writes_need_no_ephemeral_table() {
    let mut conn = Connection::open_in_memory().unwrap();
    migrate(&mut conn, 1).unwrap();
    let update = "UPDATE spans SET state = ?2 WHERE adapter = 'claude-code' AND session_id = 's' AND request_event_id = ?1";
    for sql in [SPAN, update] {
        let ops = opcodes(&conn, sql);
        assert!(
            !ops.iter().any(|op| op == "OpenEphemeral"),
            "{sql}: {ops:?}"
        );
    }
}

/// The oldest open span of a call comes from the partial index, in
/// order, without a sort; closed spans are not in that index.
#[test]
fn the_open_span_of_a_call_is_found_in_order_without_a_sort() {
    let mut conn = Connection::open_in_memory().unwrap();
    migrate(&mut conn, 1).unwrap();
    let sql = crate::ledger::write::STORED_OPEN_SPAN_OF_CALL;
    let plan: Vec<String> = conn
        .prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
        .unwrap()
        .query_map(params!["claude-code", "s", "c"], |r| r.get(3))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert!(
        plan.iter().any(|p| p.contains("spans_open_calls")),
        "{plan:?}"
    );
    assert!(!plan.iter().any(|p| p.contains("TEMP B-TREE")), "{plan:?}");
    let with_call = "INSERT INTO spans (request_event_id, adapter, session_id, kind, name, tool_call_id, state) \
                     VALUES (?1, 'claude-code', 's', 'tool', 'Bash', 'c', ?2)";
    for (id, state) in [("r1", "closed_native"), ("r2", "open"), ("r3", "open")] {
        conn.execute(with_call, [id, state]).unwrap();
    }
    let oldest: String = conn
        .query_row(sql, params!["claude-code", "s", "c"], |r| r.get(0))
        .unwrap();
    assert_eq!(oldest, "r2");
    let indexed: i64 = conn
        .query_row(
            "SELECT count(*) FROM spans INDEXED BY spans_open_calls WHERE adapter = 'claude-code' AND session_id = 's' AND tool_call_id = 'c' AND state = 'open'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(indexed, 2);
}

/// A ledger from before titles: the migration marks its sessions
/// `pending`, and the fill gives each the title and project its events
/// name (once: a second fill finds nothing pending).
#[test]
fn sessions_from_before_titles_get_theirs_from_their_events() {
    use crate::contract::{
        AdapterId, Event, EventId, Payload, PromptSubmitted, Provenance, SessionRef,
        SessionStarted, TimeSource, TurnAttribution, TurnSource,
    };
    let repo = tempfile::tempdir().unwrap();
    std::fs::create_dir(repo.path().join(".git")).unwrap();
    let cwd = repo.path().join("sub");
    let mut conn = Connection::open_in_memory().unwrap();
    let before = MIGRATIONS
        .iter()
        .position(|(name, _)| name.ends_with("_session_titles"))
        .unwrap();
    apply(&mut conn, &MIGRATIONS[..before], 1).unwrap();
    let event = |session: &str, offset: u64, payload: Payload| Event {
        id: EventId::derive("t", &[session.as_bytes(), &offset.to_le_bytes()]),
        session: SessionRef {
            adapter: AdapterId::ClaudeCode,
            session_id: session.into(),
        },
        offset,
        time_unix_ns: 1,
        time_source: TimeSource::Received,
        clock: None,
        agent_id: None,
        turn: TurnAttribution {
            source: TurnSource::None,
            turn_id: None,
        },
        provenance: Provenance::NATIVE,
        raw: vec![],
        payload,
    };
    let events = [
        event(
            "a",
            0,
            Payload::SessionStarted(SessionStarted {
                source: None,
                cwd: Some(cwd.to_string_lossy().into_owned()),
                model: None,
                transcript_path: None,
            }),
        ),
        event(
            "a",
            1,
            Payload::PromptSubmitted(PromptSubmitted {
                prompt: Some("<system-reminder>x</system-reminder>Fix it".into()),
                transformed: false,
            }),
        ),
    ];
    for (seq, e) in events.iter().enumerate() {
        conn.execute(
            "INSERT INTO events (seq, id, adapter, session_id, offset, type, time_unix_ns, json, prev_hash, hash, batch) \
             VALUES (?1, ?2, 'claude-code', 'a', ?3, ?4, 1, ?5, x'00', x'01', 'b')",
            params![
                seq as i64,
                e.id.as_str(),
                e.offset as i64,
                e.payload.event_type().as_str(),
                serde_json::to_string(e).unwrap()
            ],
        )
        .unwrap();
    }
    for id in ["a", "b"] {
        conn.execute(
            "INSERT INTO sessions (adapter, session_id, first_unix_ns, last_unix_ns, events, turns) VALUES ('claude-code', ?1, 0, 0, 0, 0)",
            [id],
        )
        .unwrap();
    }
    migrate(&mut conn, 2).unwrap();
    let rows = |conn: &Connection| -> Vec<[Option<String>; 4]> {
        conn.prepare("SELECT title, title_source, cwd, project FROM sessions ORDER BY session_id")
            .unwrap()
            .query_map([], |r| Ok([r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?]))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    };
    let pending = [None, Some("pending".to_string()), None, None];
    assert_eq!(rows(&conn), [pending.clone(), pending]);
    crate::ledger::write::titles::fill_pending(&conn).unwrap();
    let filled = [
        Some("Fix it".to_string()),
        Some("prompt".into()),
        Some(cwd.to_string_lossy().into_owned()),
        Some(repo.path().to_string_lossy().into_owned()),
    ];
    assert_eq!(rows(&conn), [filled.clone(), [None, None, None, None]]);
    crate::ledger::write::titles::fill_pending(&conn).unwrap();
    assert_eq!(rows(&conn)[0], filled);
}
