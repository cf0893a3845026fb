//! An import killed (SIGKILL) at a random moment, then run again, leaves
//! each session imported exactly once, and the chain verifies.

use std::time::Duration;

use super::{AgentDirs, events_of, sessions_by_id, verified};
use crate::common;

const SESSIONS: usize = 40;

fn with_many_records() -> AgentDirs {
    let agents = AgentDirs::new();
    let bytes = std::fs::read(super::fixture("claude-code/tool-failure.jsonl")).unwrap();
    let text = String::from_utf8(bytes).unwrap();
    let from = agents.claude_record("tool-failure");
    for i in 0..SESSIONS - 1 {
        let id = format!("{i:08x}-0000-4000-8000-000000000000");
        agents.write_claude(&id, text.replace(&from, &id).as_bytes());
    }
    agents
}

#[test]
fn an_import_killed_at_any_moment_then_rerun_imports_each_session_once() {
    let agents = with_many_records();
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos() as u64;
    for round in 0..4 {
        let home = tempfile::tempdir().unwrap();
        let h = home.path();
        let wait = common::kill_delay(seed, round, Duration::from_millis(600));
        common::kill_after(agents.process(h).arg("import"), wait);
        let out = agents.import(h, &[]);
        let context = format!("seed {seed} round {round}: killed after {wait:?}");
        assert!(out.status.success(), "{context}: {}", common::stderr(&out));
        let out = agents.run(h, &["finalize"]);
        assert!(out.status.success(), "{context}: {}", common::stderr(&out));
        let listed = sessions_by_id(h);
        assert_eq!(
            listed.len(),
            SESSIONS,
            "{context}: {:?}",
            listed.keys().collect::<Vec<_>>()
        );
        assert!(
            listed
                .values()
                .all(|s| s["eligibility"]["class"] == "imported"),
            "{context}"
        );
        let imported = events_of(h, "session.imported");
        assert_eq!(imported.len(), SESSIONS, "{context}: each once");
        verified(h);
        assert_eq!(agents.import_json(h, &[])["sessions"], 0, "{context}");
    }
}
