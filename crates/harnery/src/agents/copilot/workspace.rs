//! Copilot's `workspace.yaml`, the file it keeps beside a session's
//! `events.jsonl`: the session's name (`name`, which Copilot sets from the
//! first prompt and `/rename` changes) and whether the user gave it
//! (`user_named`). Only those two top-level keys are read, from a file of
//! at most [`WORKSPACE_CEILING`] bytes that is a plain file (not a link,
//! not a FIFO); the rest of the file is not harnery's.

use std::io::Read;
use std::path::Path;

use crate::contract::SessionTitled;

/// The largest `workspace.yaml` read (Copilot's are a few hundred bytes).
pub(crate) const WORKSPACE_CEILING: u64 = 64 << 10;

/// The session's name as the `workspace.yaml` beside `record` says it, as
/// written (the session cleans it).
pub(crate) fn title_beside(record: &Path) -> Option<SessionTitled> {
    let path = record.parent()?.join("workspace.yaml");
    let text = read_small(&path)?;
    let (name, user_named) = name_in(&text)?;
    Some(SessionTitled {
        title: name,
        field: "name".to_string(),
        user_named,
        path: path.display().to_string(),
        offset: None,
    })
}

/// A plain file's text, when it is small; without blocking on a FIFO.
fn read_small(path: &Path) -> Option<String> {
    use std::os::unix::fs::OpenOptionsExt;
    let meta = std::fs::symlink_metadata(path).ok()?;
    if !meta.is_file() || meta.len() > WORKSPACE_CEILING {
        return None;
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW)
        .open(path)
        .ok()?;
    let mut bytes = Vec::new();
    file.take(WORKSPACE_CEILING).read_to_end(&mut bytes).ok()?;
    String::from_utf8(bytes).ok()
}

/// `name` and `user_named` among the file's top-level keys.
fn name_in(text: &str) -> Option<(String, Option<bool>)> {
    let mut name = None;
    let mut user_named = None;
    for line in text.lines() {
        if let Some(value) = line.strip_prefix("name:") {
            name = scalar(value);
        } else if let Some(value) = line.strip_prefix("user_named:") {
            user_named = match value.trim() {
                "true" => Some(true),
                "false" => Some(false),
                _ => None,
            };
        }
    }
    Some((name?, user_named))
}

/// A YAML scalar on one line: double-quoted (JSON's escapes, which YAML's
/// include), single-quoted (`''` is a quote), or plain (up to a comment).
/// A block scalar or anything else is not read.
fn scalar(value: &str) -> Option<String> {
    let value = value.trim();
    if value.starts_with('"') {
        return serde_json::from_str(value).ok();
    }
    if let Some(inner) = value.strip_prefix('\'') {
        return Some(inner.strip_suffix('\'')?.replace("''", "'"));
    }
    if value.is_empty() || value.starts_with(['|', '>', '&', '*', '!', '{', '[']) {
        return None;
    }
    let plain = match value.find(" #") {
        Some(at) => &value[..at],
        None => value,
    };
    Some(plain.trim_end().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_name_and_who_gave_it_are_read() {
        // As Copilot 1.0 writes it (corpus: sdk-create-resume).
        let text = "id: 0a9af379-2103-4817-b8ed-722e7c4eaed6\ncwd: /tmp/p\nclient_name: sdk\n\
                    name: Run the probe command.\nuser_named: false\nsummary_count: 0\n";
        assert_eq!(
            name_in(text),
            Some(("Run the probe command.".into(), Some(false)))
        );
        let quoted = "name: \"Fix: the \\\"build\\\"\\n\"\nuser_named: true\n";
        assert_eq!(
            name_in(quoted),
            Some(("Fix: the \"build\"\n".into(), Some(true)))
        );
        assert_eq!(
            name_in("name: 'it''s done' \n").map(|n| n.0),
            Some("it's done".into())
        );
        assert_eq!(
            name_in("name: plain # a comment\n").map(|n| n.0),
            Some("plain".into())
        );
        assert_eq!(name_in("name: |\n  block\n"), None);
        assert_eq!(name_in("cwd: /x\n"), None);
        // A nested key is not the session's.
        assert_eq!(name_in("git:\n  name: nested\n"), None);
    }

    #[test]
    fn only_a_small_plain_file_is_read() {
        let dir = tempfile::tempdir().expect("a temp dir");
        let record = dir.path().join("events.jsonl");
        assert_eq!(title_beside(&record), None);
        let yaml = dir.path().join("workspace.yaml");
        std::fs::write(&yaml, "name: Hello\n").expect("written");
        let titled = title_beside(&record).expect("read");
        assert_eq!(titled.title, "Hello");
        assert_eq!(titled.path, yaml.display().to_string());
        std::fs::write(&yaml, format!("name: {}\n", "x".repeat(70_000))).expect("written");
        assert_eq!(title_beside(&record), None, "too large");
        std::fs::remove_file(&yaml).expect("removed");
        let elsewhere = dir.path().join("elsewhere.yaml");
        std::fs::write(&elsewhere, "name: Elsewhere\n").expect("written");
        std::os::unix::fs::symlink(&elsewhere, &yaml).expect("linked");
        assert_eq!(title_beside(&record), None, "a link is not followed");
    }
}
