//! Gemini CLI's records in `harnery import`: a record's name holds only the
//! first 8 characters of its session's id, so the import reads the id from
//! the record's header; the session is imported once, with its messages
//! and usage, and a rerun adds nothing.

use std::path::Path;

use super::{AgentDirs, events_of, sessions_by_id, verified};

const SESSION: &str = "735e7804-a692-4f55-ae13-59a7effd07f2";
const RECORD: &str = "session-2026-12-06T10-08-735e7804.jsonl";

#[test]
fn a_gemini_record_is_imported_under_the_id_its_header_names() {
    let agents = AgentDirs::new();
    let chats = agents.user.path().join(".gemini/tmp/716c49c3/chats");
    std::fs::create_dir_all(&chats).unwrap();
    let capture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/gemini-cli/basic")
        .join(RECORD);
    std::fs::copy(capture, chats.join(RECORD)).unwrap();
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    let done = agents.import_json(home, &["gemini-cli"]);
    assert_eq!(done["sessions"], 1, "{done}");
    let listed = sessions_by_id(home);
    let session = &listed[SESSION];
    assert_eq!(session["session"]["adapter"], "gemini-cli", "{session}");
    assert_eq!(session["eligibility"]["class"], "imported", "{session}");
    assert!(!events_of(home, "usage.reported").is_empty());
    assert!(!events_of(home, "message.user").is_empty());
    let again = agents.import_json(home, &["gemini-cli"]);
    assert_eq!(again["sessions"], 0, "{again}");
    assert_eq!(events_of(home, "session.imported").len(), 1);
    verified(home);
}
