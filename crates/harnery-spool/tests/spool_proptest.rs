//! Properties of the spool framing: round trip, torn-tail recovery, and
//! resynchronisation after garbage. Regressions, if proptest finds any, are
//! committed under `tests/spool_proptest.proptest-regressions`.

use std::path::Path;

use harnery_spool::spool::frame::encode_record;
use harnery_spool::spool::reader::{SegmentItem, SegmentReader};
use harnery_spool::spool::{DamageKind, Envelope, WritePath, read_bytes};
use proptest::prelude::*;

fn envelope(payload: &[u8]) -> Vec<u8> {
    let env = Envelope {
        v: 1,
        record_id: "0195f0c0-0000-7000-8000-000000000000".into(),
        adapter: "copilot".into(),
        event: Some("preToolUse".into()),
        session_id: Some("p".into()),
        session_key: "p".into(),
        received_ns: 1,
        boot_id: None,
        boottime_ns: None,
        pid: 1,
        writer: "prop".into(),
        payload_len: payload.len() as u64,
        payload_blake3: blake3::hash(payload).to_hex().to_string(),
        truncated: false,
        incomplete: false,
        write_path: WritePath::Segment,
        fallback_reason: None,
        env: Default::default(),
    };
    serde_json::to_vec(&env).unwrap()
}

fn encode_all(payloads: &[Vec<u8>]) -> (Vec<u8>, Vec<u64>) {
    let mut bytes = Vec::new();
    let mut ends = Vec::new();
    for p in payloads {
        bytes.extend(encode_record(1, &envelope(p), p));
        ends.push(bytes.len() as u64);
    }
    (bytes, ends)
}

fn payloads() -> impl Strategy<Value = Vec<Vec<u8>>> {
    prop::collection::vec(prop::collection::vec(any::<u8>(), 0..600), 0..8)
}

proptest! {
    #[test]
    fn round_trip(ps in payloads()) {
        let (bytes, _) = encode_all(&ps);
        let read = read_bytes(&bytes, Path::new("mem"));
        prop_assert!(read.damage.is_empty());
        let got: Vec<_> = read.records.into_iter().map(|r| r.payload).collect();
        prop_assert_eq!(got, ps);
    }

    #[test]
    fn torn_tail_keeps_every_complete_record(ps in payloads(), cut in any::<prop::sample::Index>()) {
        let (bytes, ends) = encode_all(&ps);
        let cut = if bytes.is_empty() { 0 } else { cut.index(bytes.len() + 1) };
        let read = read_bytes(&bytes[..cut], Path::new("mem"));
        let complete = ends.iter().filter(|&&e| e <= cut as u64).count();
        let got: Vec<_> = read.records.iter().map(|r| r.payload.clone()).collect();
        prop_assert_eq!(&got[..], &ps[..complete]);
        let clean_cut = complete == 0 && cut == 0 || ends.get(complete.wrapping_sub(1)).copied() == Some(cut as u64);
        if clean_cut {
            prop_assert!(read.damage.is_empty());
        } else {
            prop_assert_eq!(read.damage.len(), 1);
            prop_assert_eq!(read.damage[0].end, cut as u64);
            prop_assert_eq!(read.damage[0].kind, DamageKind::TornTail);
        }
    }

    #[test]
    fn garbage_between_records_is_skipped_and_reported(
        ps in payloads(), at in any::<prop::sample::Index>(), junk in prop::collection::vec(1u8..=255, 1..300)
    ) {
        let (bytes, ends) = encode_all(&ps);
        let mut bounds = vec![0u64];
        bounds.extend(ends);
        let b = bounds[at.index(bounds.len())] as usize;
        let mut damaged = bytes[..b].to_vec();
        damaged.extend(&junk);
        damaged.extend(&bytes[b..]);
        let read = read_bytes(&damaged, Path::new("mem"));
        let got: Vec<_> = read.records.iter().map(|r| r.payload.clone()).collect();
        prop_assert_eq!(got, ps);
        prop_assert_eq!(read.damage.len(), 1);
        prop_assert_eq!((read.damage[0].start, read.damage[0].end), (b as u64, (b + junk.len()) as u64));
    }

    /// The in-memory reader checks a file's record digests many at a time
    /// and goes on one record at a time from the first that fails: with a
    /// byte flipped anywhere (or none), it reports exactly what the
    /// streaming reader, which checks each record as it goes, reports.
    #[test]
    fn a_flipped_byte_is_found_as_one_record_at_a_time_finds_it(
        ps in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..1500), 0..20),
        flip in any::<Option<(prop::sample::Index, u8)>>(),
    ) {
        let (mut bytes, _) = encode_all(&ps);
        if let Some((at, bit)) = flip.filter(|_| !bytes.is_empty()) {
            let at = at.index(bytes.len());
            bytes[at] ^= 1 << (bit % 8);
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("active.seg");
        std::fs::write(&path, &bytes).unwrap();
        let read = read_bytes(&bytes, &path);
        let (mut records, mut damage) = (Vec::new(), Vec::new());
        for item in SegmentReader::open(&path).unwrap() {
            match item.unwrap() {
                SegmentItem::Record(r) => records.push(*r),
                SegmentItem::Damage(d) => damage.push(d),
            }
        }
        prop_assert_eq!(read.records, records);
        prop_assert_eq!(read.damage, damage);
    }
}
