//! Where an agent writes its record, and how one is opened: the only
//! gate between a path a hook payload names and a byte harnery reads.
//!
//! A payload's paths are the agent's, not ours (a payload can name
//! `/etc/passwd`, a FIFO, `../x`), and a cron `finalize` does not share
//! the agent's environment (`CLAUDE_CONFIG_DIR`, `COPILOT_HOME`), so the
//! test is the shape the agent gives the record of *this very session*,
//! not one fixed directory:
//!
//! - Claude Code: `<config dir>/projects/<project dir>/<session id>.jsonl`,
//!   and a subagent's `<config dir>/projects/<project dir>/<session
//!   id>/subagents/agent-<agent id>.jsonl`;
//! - Copilot CLI: `<copilot home>/session-state/<session id>/events.jsonl`
//!   (its subagents write into the session's own file).
//!
//! The path must be absolute, with no `.` or `..` component; the session
//! id (and agent id) must be a plain name (see [`is_plain_id`]); and the
//! path with every symlink resolved must have the same shape, name a
//! regular file, and is then opened without following a final symlink and
//! without blocking ([`open`]), and checked with `fstat` before a byte is
//! read. FIFOs, sockets, devices and directories are refused without being
//! opened (a FIFO's `open` would block for good).

use std::fs::File;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Component, Path};

use crate::contract::AdapterId;

/// The longest record line read. A longer one is not read into memory: it
/// is one unrecognized line, its first [`OVERSIZED_HEAD`] bytes kept as
/// evidence. Finalize's peak memory grows with the longest line it reads
/// (several copies of it are alive while it becomes an event), so this
/// ceiling is what keeps one line from taking it past 128 MiB
/// (`scripts/bench-record-line.sh`).
pub(crate) const LINE_CEILING: usize = 8 << 20;
/// How much of a line over [`LINE_CEILING`] is kept.
pub(crate) const OVERSIZED_HEAD: usize = 4096;

/// One component of the path an agent gives a session's record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Part {
    /// Exactly this name.
    Is(String),
    /// Any plain directory name (not hidden, not empty): a project folder,
    /// a date.
    AnyDir,
    /// A file name with this start and end and anything plain between
    /// (Codex's `rollout-<time>-<session>.jsonl`).
    Framed(&'static str, String),
}

/// The shape of a session's record path: its last components, and the
/// same in words for a refusal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RecordShape {
    pub tail: Vec<Part>,
    pub text: String,
}

/// Which record of a session a path is said to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RecordRole<'a> {
    /// The session's own record.
    Session,
    /// A subagent's own record (Claude Code), by the subagent's id (empty:
    /// not known).
    Subagent(&'a str),
}

/// Why a record is not followed (a `record.problem` of kind `refused`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refusal(pub String);

/// How opening a record ended, short of a file to read.
#[derive(Debug)]
pub(crate) enum NotOpened {
    /// Nothing is there (yet, or any more).
    Missing,
    Refused(Refusal),
    Unreadable(std::io::Error),
}

/// Whether `id` may stand for a session or agent id in a path: 1 to 128
/// bytes of `[A-Za-z0-9._-]`, starting with a letter or digit (Claude
/// Code's and Copilot's ids are UUIDs; Claude Code's agent ids are hex).
/// The same rule names spool directories.
pub(crate) fn is_plain_id(id: &str) -> bool {
    crate::spool::key::is_plain(id)
}

/// Whether `path` has the shape `adapter` gives `role`'s record of
/// `session_id` (see the module doc), read from the text alone.
pub(crate) fn check_shape(
    adapter: AdapterId,
    session_id: &str,
    role: RecordRole,
    path: &Path,
) -> Result<(), Refusal> {
    if !path.is_absolute() {
        return Err(Refusal("not an absolute path".into()));
    }
    let mut names = Vec::new();
    for c in path.components() {
        match c {
            Component::RootDir => {}
            Component::Normal(n) => names.push(n.to_str().unwrap_or("\u{fffd}")),
            Component::CurDir | Component::ParentDir | Component::Prefix(_) => {
                return Err(Refusal("a `.` or `..` component".into()));
            }
        }
    }
    // `Path::components` drops a `.` inside the path: look at the text.
    if path
        .as_os_str()
        .as_encoded_bytes()
        .split(|b| *b == b'/')
        .any(|s| s == b".")
    {
        return Err(Refusal("a `.` or `..` component".into()));
    }
    if !is_plain_id(session_id) {
        return Err(Refusal(format!(
            "the session id {session_id:?} is not a plain name"
        )));
    }
    let shape = crate::agents::agent(adapter).record_shape(session_id, role)?;
    if matches_tail(&names, &shape.tail) {
        Ok(())
    } else {
        Err(Refusal(format!("not {}", shape.text)))
    }
}

fn matches_tail(names: &[&str], tail: &[Part]) -> bool {
    names.len() >= tail.len()
        && names[names.len() - tail.len()..]
            .iter()
            .zip(tail)
            .all(|(name, part)| match part {
                Part::Is(want) => name == want,
                Part::AnyDir => !name.starts_with('.') && !name.is_empty(),
                Part::Framed(start, end) => name
                    .strip_prefix(start)
                    .and_then(|rest| rest.strip_suffix(end.as_str()))
                    .is_some(),
            })
}

/// Open `role`'s record of `session_id` at `path` for reading, if it is
/// one (see the module doc). Nothing is read; a refused path is never
/// opened.
pub(crate) fn open(
    adapter: AdapterId,
    session_id: &str,
    role: RecordRole,
    path: &Path,
) -> Result<File, NotOpened> {
    let refuse = |why: String| NotOpened::Refused(Refusal(why));
    check_shape(adapter, session_id, role, path).map_err(NotOpened::Refused)?;
    let real = match std::fs::canonicalize(path) {
        Ok(real) => real,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(NotOpened::Missing),
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            return Err(refuse("a symlink loop".into()));
        }
        Err(e) => return Err(NotOpened::Unreadable(e)),
    };
    if real != path
        && let Err(Refusal(why)) = check_shape(adapter, session_id, role, &real)
    {
        return Err(refuse(format!("resolves to {}, {why}", real.display())));
    }
    let seen = std::fs::symlink_metadata(&real).map_err(NotOpened::Unreadable)?;
    if let Some(kind) = not_regular(&seen.file_type()) {
        return Err(refuse(format!("{kind}, not a regular file")));
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW | libc::O_NOCTTY)
        .open(&real)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) => refuse("replaced by a symlink while it was opened".into()),
            _ => NotOpened::Unreadable(e),
        })?;
    let opened = file.metadata().map_err(NotOpened::Unreadable)?;
    if let Some(kind) = not_regular(&opened.file_type()) {
        return Err(refuse(format!("{kind}, not a regular file")));
    }
    if (opened.dev(), opened.ino()) != (seen.dev(), seen.ino()) {
        return Err(refuse("replaced while it was opened".into()));
    }
    Ok(file)
}

/// Open `path` to read without blocking, and only if it is a regular file
/// (for a path the user gave, such as `harnery recover`'s stream: no shape
/// test, but a FIFO or device never blocks the reader).
pub(crate) fn open_regular(path: &Path) -> std::io::Result<File> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)?;
    match not_regular(&file.metadata()?.file_type()) {
        None => Ok(file),
        Some(kind) => Err(std::io::Error::other(format!(
            "{} is {kind}, not a regular file",
            path.display()
        ))),
    }
}

/// What a file that is not a regular file is, in words.
fn not_regular(t: &std::fs::FileType) -> Option<&'static str> {
    Some(if t.is_file() {
        return None;
    } else if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_symlink() {
        "a symlink"
    } else {
        "a special file"
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SID: &str = "82655d0f-45cd-404f-9e4e-e90fea255247";

    fn claude(path: &str) -> Result<(), Refusal> {
        check_shape(
            AdapterId::ClaudeCode,
            SID,
            RecordRole::Session,
            Path::new(path),
        )
    }

    #[test]
    fn claude_code_transcripts_have_their_shape() {
        let real = format!("/home/u/.claude/projects/-home-u-proj/{SID}.jsonl");
        assert_eq!(claude(&real), Ok(()));
        for bad in [
            "/etc/passwd".to_string(),
            format!("relative/projects/p/{SID}.jsonl"),
            format!("/h/.claude/projects/p/../../../etc/{SID}.jsonl"),
            format!("/h/.claude/projects/./p/{SID}.jsonl"),
            "/h/.claude/projects/p/other.jsonl".to_string(),
            format!("/h/.claude/notprojects/p/{SID}.jsonl"),
            format!("/h/.claude/projects/{SID}.jsonl"),
        ] {
            assert!(claude(&bad).is_err(), "{bad} passed");
        }
        let sub = format!("/h/.claude/projects/p/{SID}/subagents/agent-a6ade36a38f2eaf92.jsonl");
        let role = RecordRole::Subagent("a6ade36a38f2eaf92");
        assert_eq!(
            check_shape(AdapterId::ClaudeCode, SID, role, Path::new(&sub)),
            Ok(())
        );
        let other = RecordRole::Subagent("a1");
        assert!(check_shape(AdapterId::ClaudeCode, SID, other, Path::new(&sub)).is_err());
        assert!(
            check_shape(AdapterId::ClaudeCode, "x", role, Path::new(&sub)).is_err(),
            "another session's subagent"
        );
    }

    /// A config dir or home moved by `CLAUDE_CONFIG_DIR` / `COPILOT_HOME`
    /// (any name, anywhere) holds records of the same shape: accepted.
    #[test]
    fn records_under_a_moved_config_dir_or_home_are_accepted() {
        assert_eq!(
            claude(&format!("/srv/claude-work/projects/-w/{SID}.jsonl")),
            Ok(())
        );
        let path = format!("/opt/cp-home/session-state/{SID}/events.jsonl");
        let ok = check_shape(
            AdapterId::Copilot,
            SID,
            RecordRole::Session,
            Path::new(&path),
        );
        assert_eq!(ok, Ok(()));
    }

    #[test]
    fn copilot_records_have_their_shape() {
        let path = Path::new("/t/home/.copilot/session-state/3390a855/events.jsonl");
        let ok = check_shape(AdapterId::Copilot, "3390a855", RecordRole::Session, path);
        assert_eq!(ok, Ok(()));
        let other = check_shape(AdapterId::Copilot, "b818", RecordRole::Session, path);
        assert!(other.is_err(), "another session's events.jsonl");
    }
}
