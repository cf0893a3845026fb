//! Sealing while writers append: every record ends up in exactly one sealed
//! or fallback file; sealing is idempotent; drained files can be removed.

use std::collections::BTreeSet;

use harnery::home::Home;
use harnery::spool::{
    IntakeSpool, SegmentKind, Signal, SpoolWriter, WriterOptions, read_segment, remove_segment,
};

#[test]
fn seal_races_writers_without_loss_or_duplication() {
    let t = tempfile::tempdir().unwrap();
    let home = Home::at(t.path());
    let writer = SpoolWriter::new(home.clone());
    let spool = IntakeSpool::open(&home);
    let mut drained: Vec<Vec<u8>> = Vec::new();
    std::thread::scope(|s| {
        for w in 0..4 {
            let writer = &writer;
            s.spawn(move || {
                for i in 0..100 {
                    let p = format!(r#"{{"sessionId":"race","n":"{w}-{i}"}}"#);
                    writer
                        .append("copilot", Some("postToolUse"), p.as_bytes(), &[])
                        .unwrap();
                }
            });
        }
        for _ in 0..20 {
            if let Some(session) = spool.session("copilot", Some("race")).unwrap() {
                for f in session.seal().unwrap() {
                    let read = read_segment(&f.path).unwrap();
                    assert!(read.damage.is_empty(), "{:?}", read.damage);
                    drained.extend(read.records.into_iter().map(|r| r.payload));
                    remove_segment(&f.path).unwrap();
                }
            }
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
    });
    let session = spool.session("copilot", Some("race")).unwrap().unwrap();
    let last = session.seal().unwrap();
    assert_eq!(session.seal().unwrap(), last, "sealing is idempotent");
    for f in &last {
        assert_ne!(f.kind, SegmentKind::Active);
        drained.extend(
            read_segment(&f.path)
                .unwrap()
                .records
                .into_iter()
                .map(|r| r.payload),
        );
    }
    let distinct: BTreeSet<_> = drained.iter().cloned().collect();
    assert_eq!(drained.len(), 400);
    assert_eq!(distinct.len(), 400);
}

#[test]
fn batch_append_without_sync_is_readable() {
    let t = tempfile::tempdir().unwrap();
    let home = Home::at(t.path());
    let writer = SpoolWriter::with_options(
        home.clone(),
        WriterOptions {
            sync: false,
            ..WriterOptions::default()
        },
    );
    let payloads: Vec<String> = (0..1000).map(|i| format!(r#"{{"n":{i}}}"#)).collect();
    let signals: Vec<Signal> = payloads
        .iter()
        .map(|p| {
            Signal::new(
                "harnery-exec",
                Some("command.completed"),
                Some("bulk"),
                p.as_bytes(),
            )
        })
        .collect();
    let receipts = writer.append_batch(&signals).unwrap();
    assert_eq!(receipts.len(), 1000);
    let session = IntakeSpool::open(&home)
        .session("harnery-exec", Some("bulk"))
        .unwrap()
        .unwrap();
    let files = session.seal().unwrap();
    let read = read_segment(&files[0].path).unwrap();
    assert_eq!(read.records.len(), 1000);
    assert_eq!(read.records[999].at.offset, receipts[999].offset);
    assert_eq!(read.records[5].payload, payloads[5].as_bytes());
}
