//! The ledger store on its own: append, chain, verify, validate, fencing,
//! digest gate. Events are built here; no spool or producer is involved.

use harnery::contract::{
    AdapterId, Event, EventId, Observation, Outcome, Payload, Provenance, SessionRef, TimeSource,
    ToolCompleted, ToolRequested, TurnAttribution, TurnSource,
};
use harnery::home::Home;
use harnery::ledger::{
    AppendBatch, AppendOutcome, LedgerError, LedgerReader, LedgerWriter, ReadyEvent, SpanState,
};

fn session() -> SessionRef {
    SessionRef {
        adapter: AdapterId::ClaudeCode,
        session_id: "sess-1".into(),
    }
}

fn event(offset: u64, payload: Payload) -> Event {
    Event {
        id: EventId::derive("test", &[&offset.to_le_bytes()]),
        session: session(),
        offset,
        time_unix_ns: 1_700_000_000_000_000_000 + offset as i64 * 1_000_000,
        time_source: TimeSource::Received,
        clock: None,
        agent_id: None,
        turn: TurnAttribution {
            source: TurnSource::Native,
            turn_id: Some("t1".into()),
        },
        provenance: Provenance::NATIVE,
        raw: vec![],
        payload,
    }
}

fn pair() -> Vec<Event> {
    let req = event(
        0,
        Payload::ToolRequested(ToolRequested {
            tool_call_id: Some("call-1".into()),
            tool_name: "Bash".into(),
            input_digest: "d".into(),
            input: None,
            recovery: None,
        }),
    );
    let done = event(
        1,
        Payload::ToolCompleted(ToolCompleted {
            tool_call_id: Some("call-1".into()),
            tool_name: "Bash".into(),
            requested_event_id: Some(req.id.clone()),
            outcome: Outcome::Success,
            duration_ms: Observation::Observed(12),
            exit_code: None,
            error: None,
            content: None,
            recovery: None,
            paired_by: None,
        }),
    );
    vec![req, done]
}

fn batch(id: &str, events: Vec<Event>, ledger: &LedgerReader) -> AppendBatch {
    AppendBatch {
        id: id.into(),
        contract_digest: ledger.genesis().schema_digest.clone(),
        sources: vec![],
        signals: vec![],
        events: events.into_iter().map(ReadyEvent::new).collect(),
        states: vec![],
    }
}

fn open(dir: &tempfile::TempDir) -> (Home, LedgerWriter) {
    let home = Home::at(dir.path());
    let ledger = LedgerWriter::open(&home, 1).expect("ledger opens");
    (home, ledger)
}

#[test]
fn append_derives_spans_and_the_chain_verifies() {
    let dir = tempfile::tempdir().unwrap();
    let (home, mut ledger) = open(&dir);
    let inc = ledger.take_incarnation().unwrap();
    let b = batch("b1", pair(), &ledger);
    let out = ledger.append(&b, inc, 1, &|| {}).unwrap();
    assert_eq!(
        out,
        AppendOutcome::Appended {
            events: 2,
            signals: 0
        }
    );
    assert_eq!(
        ledger.append(&b, inc, 1, &|| {}).unwrap(),
        AppendOutcome::AlreadyApplied
    );
    let spans = ledger.spans().list(Some(&session())).unwrap();
    assert_eq!(spans.len(), 1);
    assert_eq!(spans[0].state, SpanState::ClosedNative);
    assert_eq!(spans[0].duration_ms, Some(12));
    let (rows, breaks) = ledger.verify().chain().unwrap();
    assert_eq!((rows, breaks.len()), (2, 0));
    let reader = LedgerReader::open(&home).unwrap();
    assert_eq!(reader.events().session_events(&session()).unwrap(), pair());
    assert_eq!(reader.sessions().resolve("sess").unwrap(), session());
}

#[test]
fn a_stale_incarnation_cannot_write() {
    let dir = tempfile::tempdir().unwrap();
    let (home, mut old) = open(&dir);
    let stale = old.take_incarnation().unwrap();
    let mut newer = LedgerWriter::open(&home, 1).unwrap();
    newer.take_incarnation().unwrap();
    let b = batch("b1", pair(), &old);
    let err = old.append(&b, stale, 1, &|| {}).unwrap_err();
    assert!(matches!(err, LedgerError::Stale { .. }), "{err}");
    assert_eq!(old.events().event_count().unwrap(), 0);
}

#[test]
fn a_gap_in_offsets_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (_home, mut ledger) = open(&dir);
    let inc = ledger.take_incarnation().unwrap();
    let mut events = pair();
    events.remove(0);
    let err = ledger
        .append(&batch("b1", events, &ledger), inc, 1, &|| {})
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("offset 1 breaks the session sequence"),
        "{err}"
    );
}

#[test]
fn a_flipped_byte_is_reported_at_its_event() {
    let dir = tempfile::tempdir().unwrap();
    let (home, mut ledger) = open(&dir);
    let inc = ledger.take_incarnation().unwrap();
    let b = batch("b1", pair(), &ledger);
    ledger.append(&b, inc, 1, &|| {}).unwrap();
    drop(ledger);
    let db = LedgerReader::live_dir(&home).join("ledger.sqlite");
    let conn = rusqlite::Connection::open(&db).unwrap();
    harnery::ledger::eventz::register(&conn).unwrap();
    conn.execute(
        "UPDATE events SET json = replace(json, '\"Bash\"', '\"Bask\"') WHERE offset = 0",
        [],
    )
    .unwrap();
    drop(conn);
    let ledger = LedgerReader::open(&home).unwrap();
    let (_, breaks) = ledger.verify().chain().unwrap();
    assert_eq!(breaks.len(), 1, "{breaks:?}");
    assert_eq!(breaks[0].event_id, pair()[0].id.as_str());
}

/// Ids are unique by derivation, not by an index: `validate` is what
/// finds a repeated one, at every row that carries it.
#[test]
fn a_repeated_event_id_is_a_validation_problem() {
    let dir = tempfile::tempdir().unwrap();
    let (home, mut ledger) = open(&dir);
    let inc = ledger.take_incarnation().unwrap();
    let mut events = pair();
    events[1].id = events[0].id.clone();
    ledger
        .append(&batch("b1", events, &ledger), inc, 1, &|| {})
        .unwrap();
    drop(ledger);
    let ledger = LedgerReader::open(&home).unwrap();
    let (_, problems) = ledger.verify().validate().unwrap();
    let repeated: Vec<_> = problems.iter().filter(|p| p.rule == "unique-id").collect();
    assert_eq!(repeated.len(), 1, "{problems:?}");
    assert_eq!(repeated[0].event_id, pair()[0].id.as_str());
    assert!(repeated[0].detail.contains("rows 1, 2"), "{repeated:?}");
}

/// A ledger an older build wrote, before session rows kept span counts:
/// the read side reads it as it is (its spans are counted, nothing is
/// migrated); only a writer brings it up to this build's schema, with the
/// same counts.
#[test]
fn an_older_ledger_reads_the_same_and_is_brought_up_to_date() {
    let dir = tempfile::tempdir().unwrap();
    let (home, mut ledger) = open(&dir);
    let inc = ledger.take_incarnation().unwrap();
    ledger
        .append(&batch("b1", pair(), &ledger), inc, 1, &|| {})
        .unwrap();
    let want = ledger.sessions().list().unwrap();
    assert_eq!(want[0].spans.closed_native, 1);
    drop(ledger);
    let live = LedgerReader::live_dir(&home);
    let conn = rusqlite::Connection::open(live.join("ledger.sqlite")).unwrap();
    harnery::ledger::eventz::register(&conn).unwrap();
    conn.execute_batch(
        "DELETE FROM migrations WHERE name LIKE '%_session_span_counts';
         ALTER TABLE sessions DROP COLUMN spans_open;
         ALTER TABLE sessions DROP COLUMN spans_closed_native;
         ALTER TABLE sessions DROP COLUMN spans_recovered;",
    )
    .unwrap();
    drop(conn);
    let as_it_is = LedgerReader::open(&home).unwrap();
    assert_eq!(as_it_is.sessions().list().unwrap(), want);
    assert!(as_it_is.schema_behind().unwrap(), "a read migrates nothing");
    drop(as_it_is);
    drop(LedgerWriter::open(&home, 2).unwrap());
    let upgraded = LedgerReader::open(&home).unwrap();
    assert!(!upgraded.schema_behind().unwrap());
    assert_eq!(upgraded.sessions().list().unwrap(), want);
    let (_, problems) = upgraded.verify().validate().unwrap();
    assert!(problems.is_empty(), "{problems:?}");
    let conn = rusqlite::Connection::open(live.join("ledger.sqlite")).unwrap();
    harnery::ledger::eventz::register(&conn).unwrap();
    let counted: i64 = conn
        .query_row("SELECT spans_closed_native FROM sessions", [], |r| r.get(0))
        .unwrap();
    assert_eq!(counted, 1);
}

#[test]
fn a_foreign_digest_is_refused_with_the_advance_hint() {
    let dir = tempfile::tempdir().unwrap();
    let (home, ledger) = open(&dir);
    drop(ledger);
    let path = LedgerReader::live_dir(&home).join("genesis.json");
    let text = std::fs::read_to_string(&path).unwrap();
    let digest = harnery::contract::schema_digest_hex();
    // Both files as a build of another contract writes them.
    let other = "0".repeat(64);
    let edited = text.replace(&digest, &other);
    std::fs::write(&path, &edited).unwrap();
    let conn = rusqlite::Connection::open(path.with_file_name("ledger.sqlite")).unwrap();
    harnery::ledger::eventz::register(&conn).unwrap();
    conn.execute(
        "UPDATE meta SET value = ?1 WHERE key = 'schema_digest'",
        [&other],
    )
    .unwrap();
    let blake3 = blake3::hash(edited.as_bytes()).to_hex().to_string();
    conn.execute(
        "UPDATE meta SET value = ?1 WHERE key = 'genesis_blake3'",
        [&blake3],
    )
    .unwrap();
    drop(conn);
    let err = LedgerReader::open(&home).err().expect("refused");
    assert!(err.to_string().contains("harnery epoch advance"), "{err}");
}
