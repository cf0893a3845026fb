//! Many hook processes at once: nothing lost, nothing damaged, nothing doubled.

use crate::hook::support as hook_support;

use std::collections::BTreeSet;

use hook_support::*;

const PROCS: usize = 16;
const PER_PROC: usize = 200;

/// Each process writes PER_PROC records one after another; `session` picks
/// the session id of process `p`.
fn storm(home: &std::path::Path, session: impl Fn(usize) -> String + Sync) {
    std::thread::scope(|s| {
        for p in 0..PROCS {
            let sid = session(p);
            s.spawn(move || {
                for i in 0..PER_PROC {
                    let payload = format!(
                        r#"{{"session_id":"{sid}","hook_event_name":"PreToolUse","n":"{p}-{i}"}}"#
                    );
                    run_hook(home, &["claude-code"], payload.as_bytes());
                }
            });
        }
    });
}

fn check(home: &std::path::Path, sessions: usize) {
    let (records, damage) = read_all(home);
    assert!(damage.is_empty(), "{damage:?}");
    assert_eq!(records.len(), PROCS * PER_PROC);
    let distinct: BTreeSet<_> = records.iter().map(|r| r.payload.clone()).collect();
    assert_eq!(distinct.len(), PROCS * PER_PROC, "duplicated records");
    let ids: BTreeSet<_> = records
        .iter()
        .map(|r| r.envelope.record_id.clone())
        .collect();
    assert_eq!(ids.len(), PROCS * PER_PROC, "record ids are not unique");
    let ids: BTreeSet<_> = records
        .iter()
        .map(|r| r.envelope.session_id.clone())
        .collect();
    assert_eq!(ids.len(), sessions);
}

#[test]
fn sixteen_processes_into_one_session() {
    let home = tempfile::tempdir().unwrap();
    storm(home.path(), |_| "one-session".to_owned());
    check(home.path(), 1);
}

#[test]
fn sixteen_processes_into_sixteen_sessions() {
    let home = tempfile::tempdir().unwrap();
    storm(home.path(), |p| format!("session-{p}"));
    check(home.path(), PROCS);
}
