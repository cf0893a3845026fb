//! Tests of the record state a session keeps: its cursor, calls and subagent records.

use super::*;

/// The cursor a stored state holds is read back from the state's text
/// alone, whatever else the state holds; a state without a record part
/// has none, and a state that is not JSON is not read.
#[test]
fn the_cursor_reads_back_from_a_stored_state() {
    let follow = RecordFollow {
        path: Some("/r.jsonl".into()),
        cursor: 42,
        fingerprint: "ab".into(),
        problem: Some("rewritten".into()),
        usage_seen: VecDeque::from(["m1".to_string()]),
        ..RecordFollow::default()
    };
    let text = serde_json::json!({"next_offset": 7, "record": follow}).to_string();
    let read = RecordCursor::of_state(&text).unwrap();
    assert_eq!(read.path.as_deref(), Some("/r.jsonl"));
    assert_eq!((read.cursor, read.fingerprint.as_str()), (42, "ab"));
    assert_eq!(read.problem.as_deref(), Some("rewritten"));
    assert_eq!(
        RecordCursor::of_state(r#"{"next_offset": 7}"#),
        Some(RecordCursor::default())
    );
    assert_eq!(RecordCursor::of_state("not json"), None);
}

/// A state the first generation-2 builds stored, with the record's
/// calls as (id, name) pairs, still loads; the calls come back without
/// agent or turn, so a turn end never sweeps them.
#[test]
fn calls_stored_as_pairs_still_load() {
    let text = r#"{"cursor": 9, "calls": [["c1", "bash"]]}"#;
    let mut follow: RecordFollow = serde_json::from_str(text).unwrap();
    assert_eq!(follow.call_name("c1").as_deref(), Some("bash"));
    assert!(follow.unfinished_in_turn(None, "0").is_empty());
    assert_eq!(follow.calls.len(), 1, "a call of no turn stays");
    let again: RecordFollow =
        serde_json::from_str(&serde_json::to_string(&follow).unwrap()).unwrap();
    assert_eq!(again, follow, "the new form round-trips");
}

/// Subagent records are followed once each, never the session's own,
/// and past the limit the oldest is given up (and returned, to report).
#[test]
fn subagent_records_are_bounded() {
    let mut follow = RecordFollow {
        path: Some("/main.jsonl".into()),
        ..RecordFollow::default()
    };
    assert_eq!(
        follow.follow_subagent("a".into(), "/main.jsonl".into()),
        None
    );
    assert!(follow.subagents.is_empty());
    for n in 0..FOLLOWED_SUBAGENTS {
        assert_eq!(
            follow.follow_subagent(format!("a{n}"), format!("/a{n}")),
            None
        );
    }
    assert_eq!(follow.follow_subagent("again".into(), "/a3".into()), None);
    let given_up = follow.follow_subagent("new".into(), "/new".into()).unwrap();
    assert_eq!(
        (given_up.agent_id.as_str(), given_up.path.as_str()),
        ("a0", "/a0")
    );
    assert_eq!(follow.subagents.len(), FOLLOWED_SUBAGENTS);
    assert_eq!(follow.subagent("/new"), Some(FOLLOWED_SUBAGENTS - 1));
}
