//! Damaged and hostile records: a line that is not JSON, a line past the
//! line ceiling, a record reached through a folder that leaves the agent's
//! directory. Each gets its clear answer; the other sessions are imported.

use super::{AgentDirs, sessions_by_id, verified};
use crate::common::{self, stdout};

/// Lines of the `basic` Claude Code record.
fn basic_lines() -> Vec<Vec<u8>> {
    let bytes = std::fs::read(super::fixture("claude-code/basic.jsonl")).unwrap();
    bytes
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .map(<[u8]>::to_vec)
        .collect()
}

/// `lines` as one record, each `sessionId` replaced by `id`.
fn record_of(lines: &[Vec<u8>], from: &str, id: &str) -> Vec<u8> {
    let mut out = Vec::new();
    for l in lines {
        out.extend(String::from_utf8_lossy(l).replace(from, id).as_bytes());
        out.push(b'\n');
    }
    out
}

#[test]
fn damaged_and_hostile_records_are_named_and_the_others_imported() {
    let agents = AgentDirs::new();
    let good = agents.claude_record("tool-failure");
    let lines = basic_lines();
    let from = agents.claude_record("basic");
    std::fs::remove_file(
        agents
            .projects()
            .join(format!("-work-project/{from}.jsonl")),
    )
    .unwrap();

    // A line that is not JSON, between two good ones.
    let broken = "11111111-1111-4111-8111-111111111111";
    let mut with_bad = lines.clone();
    with_bad.insert(2, b"{\"type\": \"assistant\", not json at all".to_vec());
    agents.write_claude(broken, &record_of(&with_bad, &from, broken));

    // A line of 9 MiB, past the 8 MiB ceiling.
    let huge = "22222222-2222-4222-8222-222222222222";
    let mut with_huge = lines.clone();
    let mut long = b"{\"type\":\"user\",\"text\":\"".to_vec();
    long.resize(9 << 20, b'x');
    long.extend(b"\"}");
    with_huge.insert(1, long);
    agents.write_claude(huge, &record_of(&with_huge, &from, huge));

    // A project folder that is a link to a folder outside the agent's.
    let outside = tempfile::tempdir().unwrap();
    let hostile = "33333333-3333-4333-8333-333333333333";
    std::fs::write(
        outside.path().join(format!("{hostile}.jsonl")),
        record_of(&lines, &from, hostile),
    )
    .unwrap();
    std::os::unix::fs::symlink(outside.path(), agents.projects().join("-linked")).unwrap();

    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let out = agents.import(h, &[]);
    assert!(out.status.success(), "{}", common::stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("imported 3 session(s)"), "{text}");
    assert!(
        text.contains(&format!("not imported: {hostile}")) && text.contains("-linked"),
        "the refused record is named with its path: {text}"
    );

    let listed = sessions_by_id(h);
    assert_eq!(listed.len(), 3, "{listed:?}");
    assert!(!listed.contains_key(hostile));
    for id in [&good, broken, huge] {
        assert_eq!(listed[id]["eligibility"]["class"], "imported", "{id}");
    }
    for id in [broken, huge] {
        let reasons = listed[id]["eligibility"]["reasons"].to_string();
        assert!(reasons.contains("unrecognized_signals"), "{id}: {reasons}");
        // The lines after the bad one were read on.
        assert!(listed[id]["events"].as_u64().unwrap() > 5, "{}", listed[id]);
    }
    verified(h);
}
