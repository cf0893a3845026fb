//! Tests of the ready file (`ready.rs`): every format written and read
//! back, older formats still read, malformed frames refused.

use super::*;
use crate::ledger::{AppendOutcome, LedgerWriter};

const ENVELOPE: &str = r#"{"v":1,"env":{"COPILOT_CLI_BINARY_VERSION":"1.0.102"}}"#;
const PAYLOAD: &[u8] = b"{\"a\":\"\\u0000\xff\"}\n";

fn batch(bytes: RawBytes) -> AppendBatch {
    AppendBatch {
        id: "00000000000000000001-00000000-x".into(),
        contract_digest: "d".into(),
        sources: vec!["spool/intake/a".into()],
        signals: vec![BatchSignal {
            record_digest: "r".into(),
            adapter: "claude-code".into(),
            session_key: "s".into(),
            event_name: Some("Stop".into()),
            received_unix_ns: 7,
            env: Some(r#"{"COPILOT_CLI_BINARY_VERSION":"1.0.102"}"#.into()),
            bytes,
            event_ids: vec!["ev_1".into()],
            duplicate_of: None,
        }],
        events: Vec::new(),
        states: vec![BatchState {
            session: SessionRef {
                adapter: AdapterId::ClaudeCode,
                session_id: "s".into(),
            },
            state: "{}".into(),
        }],
    }
}

/// A session.started event as a ledger stores it.
const EVENT: &str = r#"{"id":"ev_62aa87cc2cbe603d5f6e36028d66caeb","session":{"adapter":"claude-code","session_id":"bench-000000-0000-4000-8000-000000000000"},"offset":0,"time_unix_ns":1796000000000000000,"time_source":"received","clock":{"boot_id":null,"boottime_ns":null},"turn":{"source":"none"},"provenance":{"attestation":"native","confidence":"high"},"raw":[{"record_digest":"a658bbd6b0d190d34aa344cca540822202034dcba76ceee229b3342631607eeb","event_name":"SessionStart"}],"type":"session.started","payload":{"source":"startup","cwd":"/tmp/cc-capture/runs/basic/proj","model":null,"transcript_path":"/tmp/cc-capture/runs/basic/home/.claude/projects/-tmp-cc-capture-runs-basic-proj/bench-000000-0000-4000-8000-000000000000.jsonl"}}"#;

/// A batch whose fields hold what a writer must not mangle: quotes,
/// backslashes, control characters, non-ASCII text, absent and empty
/// values, several event ids, extreme numbers.
fn awkward_batch() -> AppendBatch {
    let signal = |digest: &str, at: u64| BatchSignal {
        record_digest: digest.into(),
        adapter: "claude-code".into(),
        session_key: "bench-000000-0000-4000-8000-000000000000".into(),
        event_name: Some("SessionStart".into()),
        received_unix_ns: 1_796_000_000_000_000_000,
        env: None,
        bytes: RawBytes::Archived { at },
        event_ids: vec!["ev_62aa87cc2cbe603d5f6e36028d66caeb".into()],
        duplicate_of: None,
    };
    let odd = BatchSignal {
        adapter: "copilot".into(),
        session_key: "k \"q\" \\ \u{1}\t\n é ✓".into(),
        event_name: None,
        received_unix_ns: i64::MIN,
        env: Some(r#"{"COPILOT_CLI_BINARY_VERSION":"1.0.102","X":"a\"b\\c"}"#.into()),
        event_ids: vec![String::new(), "ev_\"1".into(), "ev_2".into()],
        duplicate_of: Some("dup \u{7f}\u{1f}".into()),
        ..signal("odd", u64::MAX)
    };
    let none = BatchSignal {
        event_ids: Vec::new(),
        ..signal("none", 0)
    };
    AppendBatch {
        id: "01796083200000000000-00000000-fixture".into(),
        // The contract digest of the build that wrote the v3 fixture.
        contract_digest: "1256ec3093dd7e2056634101779618c6a94c7ae34a1b5e4010dd47febaaedcec".into(),
        sources: vec!["spool/intake/a".into(), "spool/intake/b \"c\"".into()],
        signals: vec![
            signal(
                "a658bbd6b0d190d34aa344cca540822202034dcba76ceee229b3342631607eeb",
                842,
            ),
            odd,
            none,
        ],
        events: vec![ReadyEvent::parse(EVENT).unwrap()],
        states: vec![
            BatchState {
                session: SessionRef {
                    adapter: AdapterId::ClaudeCode,
                    session_id: "bench-000000-0000-4000-8000-000000000000".into(),
                },
                state: r#"{"next_offset":1,"text":"a\"b\\c\n\u0001é"}"#.into(),
            },
            BatchState {
                session: SessionRef {
                    adapter: AdapterId::Copilot,
                    session_id: "s \"x\"".into(),
                },
                state: "".into(),
            },
        ],
    }
}

fn inline() -> RawBytes {
    RawBytes::Inline {
        envelope: ENVELOPE.into(),
        payload: PAYLOAD.to_vec(),
    }
}

fn same(a: &AppendBatch, b: &AppendBatch) {
    assert_eq!((&a.id, &a.contract_digest), (&b.id, &b.contract_digest));
    assert_eq!((&a.sources, &a.signals), (&b.sources, &b.signals));
    assert_eq!(a.states, b.states);
    let texts = |x: &AppendBatch| x.events.iter().map(|e| e.json.clone()).collect::<Vec<_>>();
    assert_eq!(texts(a), texts(b));
}

#[test]
fn v4_round_trips_signals_with_their_archive_offsets() {
    let dir = tempfile::tempdir().unwrap();
    for b in [batch(RawBytes::Archived { at: 4096 }), awkward_batch()] {
        let path = write(&Home::at(dir.path()), &b).unwrap();
        assert!(std::fs::read(&path).unwrap().starts_with(V4_MAGIC));
        same(&read(&path).unwrap(), &b);
    }
}

#[test]
fn a_v3_file_written_by_the_previous_build_is_still_applied() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/ready/v3.ready");
    let mut b = read(&fixture).unwrap();
    same(&b, &awkward_batch());
    let dir = tempfile::tempdir().unwrap();
    let mut ledger = LedgerWriter::open(&Home::at(dir.path()), 1).unwrap();
    let incarnation = ledger.take_incarnation().unwrap();
    // The ledger refuses a batch of another contract by design; what is
    // tested here is the format, so the batch speaks this build's.
    b.contract_digest = ledger.genesis().schema_digest.clone();
    let outcome = ledger.append(&b, incarnation, 1, &|| {}).unwrap();
    let (events, signals) = (1, 3);
    assert_eq!(outcome, AppendOutcome::Appended { events, signals });
    for s in &b.signals {
        assert!(
            ledger
                .bookkeeping()
                .signal_known(s.received_unix_ns, &s.record_digest)
                .unwrap()
        );
    }
    for s in &b.states {
        let stored = ledger.bookkeeping().producer_state(&s.session).unwrap();
        assert_eq!(stored.as_deref(), Some(&*s.state));
    }
}

#[test]
fn a_malformed_v4_field_is_refused_with_its_frame() {
    let b = awkward_batch();
    let mut fields = Vec::new();
    signal_fields(&mut fields, &b.signals[0]).unwrap();
    let header = Header {
        format: READY_FORMAT.into(),
        batch: b.id.clone(),
        contract_digest: b.contract_digest.clone(),
        sources: b.sources.clone(),
    };
    let with_signal = |body: &[u8]| {
        let mut bytes = V4_MAGIC.to_vec();
        frame(&mut bytes, b'H', &serde_json::to_vec(&header).unwrap()).unwrap();
        frame(&mut bytes, b'S', body).unwrap();
        bytes
    };
    let mut trailing = fields.clone();
    trailing.push(0);
    let mut bad_tag = fields.clone();
    *bad_tag.last_mut().unwrap() = 2;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.ready");
    for (body, why) in [
        (
            &fields[..fields.len() - 1],
            "frame 2: signal field runs past the end of its frame",
        ),
        (
            &trailing[..],
            "frame 2: signal has 1 bytes after its last field",
        ),
        (&bad_tag[..], "frame 2: signal optional field tagged 2"),
    ] {
        std::fs::write(&path, with_signal(body)).unwrap();
        let err = read(&path).unwrap_err().to_string();
        assert!(err.contains(why), "{err}");
    }
    std::fs::write(&path, with_signal(&fields)).unwrap();
    assert_eq!(read(&path).unwrap().signals, b.signals[..1]);
}

#[test]
fn a_signal_without_a_place_in_the_archive_is_not_written() {
    let dir = tempfile::tempdir().unwrap();
    let err = write(&Home::at(dir.path()), &batch(inline())).unwrap_err();
    assert!(
        err.to_string().contains("no place in the raw archive"),
        "{err}"
    );
    assert!(pending(&Home::at(dir.path())).unwrap().is_empty());
}

#[test]
fn a_v2_file_left_by_an_older_run_keeps_its_bytes_inline() {
    let b = batch(inline());
    let mut bytes = V2_MAGIC.to_vec();
    let header = Header {
        format: Framed::V2.name().into(),
        batch: b.id.clone(),
        contract_digest: b.contract_digest.clone(),
        sources: b.sources.clone(),
    };
    frame(&mut bytes, b'H', &serde_json::to_vec(&header).unwrap()).unwrap();
    let head = r#"{"record_digest":"r","adapter":"claude-code","session_key":"s","event_name":"Stop","received_unix_ns":7,"event_ids":["ev_1"],"duplicate_of":null}"#;
    frame(&mut bytes, b'S', head.as_bytes()).unwrap();
    frame(&mut bytes, b'V', ENVELOPE.as_bytes()).unwrap();
    frame(&mut bytes, b'P', PAYLOAD).unwrap();
    frame(&mut bytes, b'T', &serde_json::to_vec(&b.states[0]).unwrap()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.ready");
    std::fs::write(&path, &bytes).unwrap();
    same(&read(&path).unwrap(), &b);
    std::fs::write(&path, &bytes[..bytes.len() - 3]).unwrap();
    let err = read(&path).unwrap_err().to_string();
    assert!(err.contains("frame 5: cut short"), "{err}");
}

#[test]
fn a_v1_file_left_by_an_older_run_is_still_read() {
    let b = batch(inline());
    let mut text = serde_json::to_string(&Line::Header(Header {
        format: READY_V1.into(),
        batch: b.id.clone(),
        contract_digest: b.contract_digest.clone(),
        sources: b.sources.clone(),
    }))
    .unwrap();
    text.push('\n');
    text += &serde_json::to_string(&Line::Signal(SignalV1 {
        record_digest: "r".into(),
        adapter: "claude-code".into(),
        session_key: "s".into(),
        event_name: Some("Stop".into()),
        received_unix_ns: 7,
        envelope: ENVELOPE.into(),
        payload: PAYLOAD.to_vec(),
        event_ids: vec!["ev_1".into()],
        duplicate_of: None,
    }))
    .unwrap();
    text.push('\n');
    text += &serde_json::to_string(&Line::State(b.states[0].clone())).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.ready");
    std::fs::write(&path, text).unwrap();
    same(&read(&path).unwrap(), &b);
}

#[test]
fn a_cut_v4_file_is_refused_with_its_frame() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(&Home::at(dir.path()), &batch(RawBytes::Archived { at: 0 })).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() - 3]).unwrap();
    let err = read(&path).unwrap_err().to_string();
    assert!(err.contains("frame 3: cut short"), "{err}");
}

#[test]
fn orphans_are_half_written_files_and_older_builds_spares_only() {
    let root = tempfile::tempdir().unwrap();
    let home = Home::at(root.path());
    let dir = ready_dir(&home);
    std::fs::create_dir_all(&dir).unwrap();
    let names = [
        ".b1.tmp",
        ".spare-0",
        ".spare-7",
        ".spare-x",
        ".spare-10",
        "b2.ready",
        "notes",
    ];
    for name in names {
        std::fs::write(dir.join(name), name).unwrap();
    }
    remove_orphans(&home).unwrap();
    let mut left: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, [".spare-10", ".spare-x", "b2.ready", "notes"]);
}
