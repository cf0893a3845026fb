//! Gemini CLI's records for `harnery import`:
//! `<home>/tmp/<project>/chats/session-<time>-<first 8 of the id>.jsonl`.
//! A name holds only the first 8 characters of its session's id, so the
//! id is read from the record's first line, its header (`sessionId`): at
//! most [`HEAD_CEILING`] bytes of a plain file opened without blocking,
//! kept only when the name's 8 characters are that id's. A subagent's
//! record (`chats/<session>/<agent>.jsonl`, header `kind: "subagent"`) is
//! not a session of its own.

use std::io::Read;
use std::path::Path;

use super::record::{file_id, line_session};
use crate::agents::record::listing::{RecordedFile, entries, modified_ns};
use crate::agents::record::place::is_plain_id;

/// The most bytes of a record's head read for its header (Gemini's is a
/// few hundred bytes).
const HEAD_CEILING: u64 = 64 << 10;

/// Every session record under `<home>/tmp`, with the id its header names.
pub(super) fn files(home: &Path) -> Vec<RecordedFile> {
    let mut out = Vec::new();
    for project in entries(&home.join("tmp")).filter(|p| p.is_dir()) {
        for file in entries(&project.join("chats")) {
            out.extend(session_file(&file));
        }
    }
    out
}

fn session_file(file: &Path) -> Option<RecordedFile> {
    let name = file.file_name()?.to_str()?;
    let short = name.strip_prefix("session-")?.strip_suffix(".jsonl")?;
    let short = &short[short.rfind('-')? + 1..];
    let modified_ns = modified_ns(file)?;
    let session_id = line_session(&first_line(file)?)?;
    (is_plain_id(&session_id) && file_id(&session_id) == short).then(|| RecordedFile {
        session_id,
        path: file.to_path_buf(),
        modified_ns,
        subagents: Vec::new(),
    })
}

/// The first line of a plain file, when it ends within [`HEAD_CEILING`].
fn first_line(file: &Path) -> Option<Vec<u8>> {
    use std::os::unix::fs::OpenOptionsExt;
    let opened = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW)
        .open(file)
        .ok()?;
    if !opened.metadata().ok()?.is_file() {
        return None;
    }
    let mut head = Vec::new();
    opened.take(HEAD_CEILING).read_to_end(&mut head).ok()?;
    let end = memchr::memchr(b'\n', &head)?;
    head.truncate(end);
    Some(head)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_is_listed_under_the_id_its_header_names() {
        let home = tempfile::tempdir().expect("a temp dir");
        let chats = home.path().join("tmp/716c49c3/chats");
        std::fs::create_dir_all(&chats).expect("made");
        let capture = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/gemini-cli/basic/session-2026-12-06T10-08-735e7804.jsonl"
        );
        let record = chats.join("session-2026-12-06T10-08-735e7804.jsonl");
        std::fs::copy(capture, &record).expect("copied");
        // A name whose 8 characters are not its header's id, a subagent's
        // record, and a file that is not a record.
        std::fs::copy(
            capture,
            chats.join("session-2026-12-06T10-08-00000000.jsonl"),
        )
        .expect("copied");
        std::fs::create_dir_all(chats.join("735e7804-a692-4f55-ae13-59a7effd07f2")).expect("made");
        std::fs::write(chats.join("notes.txt"), "x").expect("written");
        let found = files(home.path());
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].session_id, "735e7804-a692-4f55-ae13-59a7effd07f2");
        assert_eq!(found[0].path, record);
    }
}
