//! A stuck lease holder delays nothing and loses nothing.

use crate::hook::support as hook_support;

use std::time::{Duration, Instant};

use harnery::home::Home;
use harnery::spool::{IntakeSpool, SegmentKind, WritePath, read_segment};
use hook_support::*;

#[test]
fn held_lease_sends_the_record_to_a_fallback_file_in_bounded_time() {
    let home = tempfile::tempdir().unwrap();
    let payload = br#"{"session_id":"held","hook_event_name":"PreToolUse"}"#;
    run_hook(home.path(), &["claude-code"], payload);
    let lease = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(home.path().join("spool/intake/claude-code/held/lease"))
        .unwrap();
    lease.lock().unwrap();
    let start = Instant::now();
    run_hook(home.path(), &["claude-code"], payload);
    assert!(start.elapsed() < Duration::from_secs(10));
    let spool = IntakeSpool::open(&Home::at(home.path()));
    let session = spool.session("claude-code", Some("held")).unwrap().unwrap();
    let files = session.files().unwrap();
    let fallback: Vec<_> = files
        .iter()
        .filter(|f| f.kind == SegmentKind::Fallback)
        .collect();
    assert_eq!(fallback.len(), 1);
    let read = read_segment(&fallback[0].path).unwrap();
    assert_eq!(read.records.len(), 1);
    assert_eq!(read.records[0].payload, payload);
    assert_eq!(read.records[0].envelope.write_path, WritePath::Fallback);
    drop(lease);
    // After release the next hook appends to the segment again; sealing
    // returns the sealed segment and the fallback file, oldest first.
    run_hook(home.path(), &["claude-code"], payload);
    let pending = session.seal().unwrap();
    assert_eq!(pending.len(), 2);
    let total: usize = pending
        .iter()
        .map(|p| read_segment(&p.path).unwrap().records.len())
        .sum();
    assert_eq!(total, 3);
    assert_eq!(
        session.seal().unwrap(),
        pending,
        "sealing twice changes nothing"
    );
}
