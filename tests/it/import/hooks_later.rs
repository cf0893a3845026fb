//! A session is one session whoever saw it first: hooks that arrive for
//! an imported session (the agent resumed it) add to it, and a session
//! hooks already recorded is left alone by an import.

use serde_json::json;

use super::{AgentDirs, events_of, sessions_by_id, verified};
use crate::common;

/// A Claude Code hook payload for session `id` whose record is `path`.
fn hook(id: &str, path: &std::path::Path, event: &str, extra: serde_json::Value) -> String {
    let mut v = json!({"hook_event_name": event, "session_id": id,
        "transcript_path": path.display().to_string(), "cwd": "/work/project"});
    v.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    v.to_string()
}

#[test]
fn hooks_for_an_imported_session_add_to_it() {
    let agents = AgentDirs::new();
    let id = agents.claude_record("basic");
    let path = agents.projects().join(format!("-work-project/{id}.jsonl"));
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    agents.import_json(h, &[]);
    let before = sessions_by_id(h)[&id]["events"].as_u64().unwrap();

    // The agent resumes the session: its hooks name the same record.
    let prompt = json!({"prompt": "and again", "prompt_id": "p-resumed"});
    for line in [
        hook(&id, &path, "SessionStart", json!({"source": "resume"})),
        hook(&id, &path, "UserPromptSubmit", prompt),
        hook(&id, &path, "Stop", json!({"prompt_id": "p-resumed"})),
    ] {
        common::deliver(h, "claude-code", &line);
    }
    let out = agents.run(h, &["finalize"]);
    assert!(out.status.success(), "{}", common::stderr(&out));

    let listed = sessions_by_id(h);
    assert_eq!(listed.len(), 1, "one session: {listed:?}");
    let session = &listed[&id];
    assert!(session["events"].as_u64().unwrap() > before, "{session}");
    assert_eq!(session["turns"], 1, "the hooked prompt's turn: {session}");
    assert_eq!(
        session["eligibility"]["class"], "imported",
        "the start of its history was seen by no hook: {session}"
    );
    assert_eq!(events_of(h, "session.imported").len(), 1);
    verified(h);
    // A rerun of the import leaves it alone.
    assert_eq!(agents.import_json(h, &[])["sessions"], 0);
}

#[test]
fn a_session_hooks_recorded_is_not_imported() {
    let agents = AgentDirs::new();
    let hooked = agents.claude_record("basic");
    let unhooked = agents.claude_record("tool-failure");
    let path = agents
        .projects()
        .join(format!("-work-project/{hooked}.jsonl"));
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let start = hook(&hooked, &path, "SessionStart", json!({"source": "startup"}));
    common::deliver(h, "claude-code", &start);
    // Still in the spool, not yet finalized: known all the same.
    let planned = agents.import_json(h, &["--dry-run"]);
    assert_eq!(planned["sessions"], 1, "{planned}");
    assert_eq!(planned["agents"][0]["known"], 1, "{planned}");
    agents.import_json(h, &[]);
    let listed = sessions_by_id(h);
    assert_eq!(listed.len(), 2, "{listed:?}");
    assert_ne!(listed[&hooked]["eligibility"]["class"], "imported");
    assert_eq!(listed[&unhooked]["eligibility"]["class"], "imported");
    assert_eq!(events_of(h, "session.imported").len(), 1);
}
