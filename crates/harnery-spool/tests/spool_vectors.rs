//! The spool reader against the committed test vectors in
//! `spool-format/vectors/`. Each `<name>.bin` has a `<name>.expected.json`
//! with the records and damage ranges a conforming reader must return.
//! `HARNERY_REGEN_VECTORS=1 cargo test --test spool_vectors` rewrites them
//! (only do that for a deliberate format change, with a version bump).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use base64::Engine;
use harnery_spool::spool::frame::encode_record;
use harnery_spool::spool::{Envelope, WritePath, read_segment};

fn vectors_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../spool-format/vectors")
}

fn envelope(n: u32, path: WritePath, payload: &[u8]) -> Envelope {
    Envelope {
        v: 1,
        record_id: format!("0195f0c0-0000-7000-8000-{n:012}"),
        adapter: "claude-code".into(),
        event: Some("PreToolUse".into()),
        session_id: Some("vector-session".into()),
        session_key: "vector-session".into(),
        received_ns: 1_796_000_000_000_000_000 + i64::from(n),
        boot_id: Some("00000000-0000-4000-8000-000000000000".into()),
        boottime_ns: Some(1_000_000 + u64::from(n)),
        pid: 4242,
        writer: "harnery-hook 0.1.0".into(),
        payload_len: payload.len() as u64,
        payload_blake3: blake3::hash(payload).to_hex().to_string(),
        truncated: false,
        incomplete: false,
        write_path: path,
        fallback_reason: match path {
            WritePath::Segment => None,
            WritePath::Fallback => Some("session lease not acquired within 100ms".into()),
            WritePath::DeadLetter => {
                Some("session directory: Too many levels of symbolic links (os error 40)".into())
            }
        },
        env: BTreeMap::from([("CLAUDE_PROJECT_DIR".to_owned(), "/work/proj".to_owned())]),
    }
}

fn record(n: u32, path: WritePath) -> Vec<u8> {
    let payload =
        format!(r#"{{"session_id":"vector-session","hook_event_name":"PreToolUse","n":{n}}}"#);
    let env = serde_json::to_vec(&envelope(n, path, payload.as_bytes())).unwrap();
    encode_record(1, &env, payload.as_bytes())
}

/// Every vector, built from first principles.
fn vectors() -> Vec<(&'static str, Vec<u8>)> {
    let (r0, r1, r2) = (
        record(0, WritePath::Segment),
        record(1, WritePath::Segment),
        record(2, WritePath::Segment),
    );
    let cat = |parts: &[&[u8]]| parts.concat();
    let mut bad_sum = r1.clone();
    let mid = bad_sum.len() / 2;
    bad_sum[mid] ^= 0x01;
    let mut v2 = r1.clone();
    v2[8] = 2; // version 2 with a stale header check: rejected
    let mut future = r1.clone();
    future[8..10].copy_from_slice(&2u16.to_le_bytes());
    let check = blake3::hash(&future[0..24]);
    future[24..28].copy_from_slice(&check.as_bytes()[0..4]);
    vec![
        ("valid", cat(&[&r0, &r1, &r2])),
        ("torn-tail", cat(&[&r0, &r1, &r2[..r2.len() - 7]])),
        ("torn-header", cat(&[&r0, &r1[..11]])),
        (
            "torn-record-then-valid",
            cat(&[&r0, &r1[..r1.len() / 2], &r2]),
        ),
        (
            "garbage-middle",
            cat(&[&r0, b"\x00garbage\xff\xfe in the middle\n", &r1]),
        ),
        ("nul-run", cat(&[&r0, &[0u8; 4096], &r1])),
        ("nul-tail", cat(&[&r0, &[0u8; 512]])),
        ("bad-checksum", cat(&[&r0, &bad_sum, &r2])),
        ("bad-header-check", cat(&[&r0, &v2, &r2])),
        ("unsupported-version", cat(&[&r0, &future, &r2])),
        ("fallback", record(3, WritePath::Fallback)),
        ("dead-letter", record(4, WritePath::DeadLetter)),
        ("empty", Vec::new()),
    ]
}

fn decoded(path: &Path) -> serde_json::Value {
    let read = read_segment(path).unwrap();
    let b64 = base64::engine::general_purpose::STANDARD;
    serde_json::json!({
        "records": read.records.iter().map(|r| serde_json::json!({
            "offset": r.at.offset,
            "envelope": r.envelope,
            "payload_base64": b64.encode(&r.payload),
        })).collect::<Vec<_>>(),
        "damage": read.damage.iter().map(|d| serde_json::json!({
            "start": d.start, "end": d.end, "kind": d.kind,
        })).collect::<Vec<_>>(),
    })
}

#[test]
fn reader_matches_every_committed_vector() {
    let dir = vectors_dir();
    let regen = std::env::var_os("HARNERY_REGEN_VECTORS").is_some();
    for (name, bytes) in vectors() {
        let bin = dir.join(format!("{name}.bin"));
        let expected = dir.join(format!("{name}.expected.json"));
        if regen {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(&bin, &bytes).unwrap();
            let json = serde_json::to_string_pretty(&decoded(&bin)).unwrap();
            std::fs::write(&expected, json + "\n").unwrap();
        }
        assert_eq!(
            std::fs::read(&bin).unwrap(),
            bytes,
            "{name}.bin no longer matches the v1 encoder"
        );
        let want: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&expected).unwrap()).unwrap();
        assert_eq!(decoded(&bin), want, "{name}: reader output changed");
    }
}
